#!/bin/bash
# The 21 suites of the 2026-11-23 catalogue runs (all but cluster, rowwise, tensor-gemm, tma), one `gpu-lab profile` on one GPU, cold (issue 31's second target), in the background
# past one call's 10 minutes: `go.sh start`, then `go.sh wait SECONDS` until DONE, then `go.sh pack` (into $OUT).
set -u
C=$(cd "$(dirname "$0")" && pwd); H=/tmp/hs; B=/tmp/cat/gpu-lab
case "$1" in
  start)
    mkdir -p /tmp/cat $H; xz -dc $C/main.xz > $B; chmod +x $B
    { date -u +%FT%TZ; nvidia-smi --query-gpu=name,uuid,driver_version,clocks.sm,clocks.max.sm,clocks.mem,power.limit,temperature.gpu --format=csv; sha256sum $B; } > $H/gpu.txt 2>&1
    bash scripts/background.sh start all bash -c "s=\$(date +%s.%N); $B profile --suite atomics,compact,constant-memory,dynamic-parallelism,gemv,global-memory,half-precision,intrinsics,matmul,nvprof-probes,occupancy,reduction,scan,search-sort,sgemm-tutorial,shared-memory,streams,transfers,transpose,warp-divergence,warp-shuffle --gpu 0 --color never ${MOCK:-} --out $H/all; rc=\$?; echo \"profile (21 suites) rc=\$rc wall=\$(awk \"BEGIN{print \$(date +%s.%N) - \$s}\") s end \$(date -u +%T)\" >> $H/walls.txt; exit \$rc"
    cat $H/gpu.txt ;;
  wait) bash scripts/background.sh wait all "$2"; ls $H/all 2>/dev/null | wc -l; bash "$0" pack ;;
  pack)
    cp /tmp/gpu-lab-bg/all/log $H/all.log 2>/dev/null
    cd $H && tar --exclude='*.ncu-rep' --exclude='work' --exclude='profile-*.csv' --exclude='profile-*.log' --exclude='*.cupti.log' -czf $OUT/all.tgz . ; ls -la $OUT ;;
esac
