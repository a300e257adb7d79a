#!/bin/bash
# One device session past a call's 10 minutes (scripts/background.sh): on an H200, issue 30's current suites whole and
# the scan's counters first; then, on any GPU, CUPTI against ncu over every built-in suite at its smallest shape
# (issue 31, item 3). `go.sh start`, then `go.sh wait SECONDS` until DONE, then `go.sh pack` (into $OUT).
set -u
C=$(cd "$(dirname "$0")" && pwd); H=/tmp/hs; B=/tmp/cat/gpu-lab
case "$1" in
  start)
    mkdir -p /tmp/cat $H; xz -dc $C/main.xz > $B; chmod +x $B
    { date -u +%FT%TZ; nvidia-smi --query-gpu=name,uuid,driver_version,clocks.sm,clocks.max.sm,clocks.mem,power.limit,temperature.gpu --format=csv; sha256sum $B; } > $H/gpu.txt 2>&1
    cat > /tmp/cat/steps.sh <<STEPS
t() { local n=\$1; shift; local s=\$(date +%s.%N); "\$@" > $H/\$n.log 2>&1; echo "\$n rc=\$? wall=\$(awk "BEGIN{print \$(date +%s.%N) - \$s}") s end \$(date -u +%T): \$*" >> $H/walls.txt; }
if false; then
  t scan-whole $B run --suite scan --color never --quiet --out $H/scan-whole
  t tgemm-whole $B run --suite tensor-gemm --color never --quiet --out $H/tgemm-whole
  t matmul-whole $B run --suite matmul --color never --quiet --out $H/matmul-whole
  t scan-counters $B profile --suite scan --variant lookback_decoupled,lookback_onepass --metrics stall_barrier,stall_long_scoreboard,stall_sync,achieved_occupancy,sm_efficiency,dram_pct_of_peak,dram_read_throughput,dram_write_throughput,duration --counters-only --color never --out $H/scan-counters
  t scan-hot timeout 90 $B profile --suite scan --variant lookback_decoupled --shape N=16777216 --counters-only --hotspots --timeout 60 --color never --out $H/scan-hot
fi
t cat $B profile --suite all --shape smallest --counters-only --profiler both --duration-runs 0 --timeout 60 --color never --quiet --out $H/cat
STEPS
    bash scripts/background.sh start all bash /tmp/cat/steps.sh
    cat $H/gpu.txt ;;
  wait) bash scripts/background.sh wait all "$2"; cat $H/walls.txt 2>/dev/null; ls $H/cat 2>/dev/null | wc -l ;;
  pack)
    cp /tmp/gpu-lab-bg/all/log $H/all.log 2>/dev/null
    cd $H && tar --exclude='*.ncu-rep' --exclude='work' --exclude='profile-*.log' --exclude='*.cupti.log' --exclude='report.html' -czf $OUT/all.tgz . ; ls -la $OUT ;;
esac
