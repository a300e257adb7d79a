#!/usr/bin/env bash
# cuptirun round 2 (issue 31 parts 3-4), on an H100, budget 540 s. 1) batching: the 8192^2
# shared-memory group, its 15 jobs in one CUPTI configuration against one job a pass
# (`--counters-only`); 2) `--profiler both` at each suite's smallest shape, counters only, over
# the 19 suites whose metric set CUPTI collects (gemv, intrinsics, matmul, occupancy,
# sgemm-tutorial and tensor-gemm ask for ncu's launch statistics: their passes are ncu's alone,
# nothing to compare; H200 round 1), in parts so that a cut loses one part; 3) run and profile
# of shared-memory if time is left. Cold L2 (the default). gpu-lab starts its children in process
# groups of their own, so after a step cut by `timeout` its CUPTI child or ncu may live on and
# hold the counters (CUPTI_ERROR_HARDWARE_BUSY in round 1): `settle` ends them first.
set -u
O=/tmp/hs; mkdir -p $O
START=$(date +%s)
nvidia-smi --query-gpu=name,uuid,driver_version,clocks.sm,clocks.max.sm,power.limit --format=csv,noheader > $O/gpu.txt 2>&1
date -u +%FT%TZ >> $O/gpu.txt
sha256sum $B >> $O/gpu.txt
settle() {
  for p in $(pgrep -f -- "$B"); do kill -9 $p 2>/dev/null; done
  sleep 1
}
t() {
  local name=$1 lim=$2; shift 2
  local left=$(( START + 525 - $(date +%s) ))
  if [ $left -lt 10 ]; then echo "$name skipped: ${left} s left" >> $O/timings.txt; return; fi
  [ $lim -gt $left ] && lim=$left
  local s=$(date +%s%N)
  timeout $lim "$@" > $O/$name.log 2>&1
  local rc=$?
  echo "$name rc=$rc $(( ($(date +%s%N) - s) / 1000000 )) ms (limit ${lim} s, $(date -u +%T) UTC): $*" >> $O/timings.txt
  [ $rc -eq 124 ] && settle
}
K="--suite-dir kernels --color never"
C="--shape smallest --counters-only --profiler both --duration-runs 0 --timeout 60 --out $O/both"
t batch-15 30 $B profile --suite shared-memory $K --shape NX=8192,NY=8192 --counters-only --duration-runs 0 --out $O/batch-15
t batch-1 40 env GPU_LAB_CUPTI_JOBS_PER_PASS=1 $B profile --suite shared-memory $K --shape NX=8192,NY=8192 --counters-only --duration-runs 0 --out $O/batch-1
t both-a 100 $B profile --suite atomics,cluster,compact,constant-memory,dynamic-parallelism,global-memory,half-precision $K $C
t both-b 110 $B profile --suite nvprof-probes,reduction,scan,search-sort,shared-memory $K $C
t both-c 100 $B profile --suite streams,tma,transfers,transpose,warp-divergence,warp-shuffle $K $C
t both-d 90 $B profile --suite rowwise $K $C
t sm-run 45 $B run --suite shared-memory $K --out $O/sm-run
t sm-profile 50 $B profile --suite shared-memory $K --out $O/sm-profile
find $O -name '*.ncu-rep' -delete
find $O -type d -name work -prune -exec rm -rf {} +
find $O -name 'results.jsonl' -size +200k -exec gzip -9 -n {} \;
du -sh $O >> $O/timings.txt
