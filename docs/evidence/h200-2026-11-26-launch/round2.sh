#!/usr/bin/env bash
# launch round 2 on an H200 (issue 31 item 3: launch statistics computed in the __cupti child),
# budget 160 s. Round 1 (H100) compared occupancy, gemv and tensor-gemm; its ncu side of
# sgemm-tutorial, intrinsics and matmul did not end in time (ncu: 11 replay passes a kernel for the
# compute set). So here, most important first: 1) `--profiler both` over sgemm-tutorial and
# intrinsics (the compute set, every counter); 2) matmul's 32 jobs with the launch-statistics
# metrics only (one ncu pass a kernel); 3) occupancy, tensor-gemm and gemv as on the H100.
# Smallest shape, counters only, cold L2. `settle` ends this script's own gpu-lab processes ($B)
# after a step cut by `timeout` (its CUPTI child or ncu would hold the counters).
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
  local left=$(( START + 152 - $(date +%s) ))
  if [ $left -lt 8 ]; then echo "$name skipped: ${left} s left" >> $O/timings.txt; return; fi
  [ $lim -gt $left ] && lim=$left
  local s=$(date +%s%N)
  timeout $lim "$@" > $O/$name.log 2>&1
  local rc=$?
  echo "$name rc=$rc $(( ($(date +%s%N) - s) / 1000000 )) ms (limit ${lim} s, $(date -u +%T) UTC): $*" >> $O/timings.txt
  [ $rc -eq 124 ] && settle
}
K="--suite-dir kernels --color never"
C="--shape smallest --counters-only --profiler both --duration-runs 0 --timeout 40 --out $O/both"
L="registers_per_thread,occupancy_limit_registers,occupancy_limit_shared_mem,occupancy_limit_block_size,occupancy_limit_blocks,theoretical_occupancy"
t both-sgemm 45 $B profile --suite sgemm-tutorial $K $C
t both-intrinsics 30 $B profile --suite intrinsics $K $C
t launch-matmul 35 $B profile --suite matmul $K $C --metrics $L
t both-occupancy 20 $B profile --suite occupancy $K $C
t both-tensor 28 $B profile --suite tensor-gemm $K $C
t both-gemv 12 $B profile --suite gemv $K $C
for f in $O/both/*/results.jsonl; do
  echo "== $f"; grep -o '"profiler":"[^"]*"' "$f" | sort | uniq -c
done > $O/profilers.txt 2>&1
find $O -name '*.ncu-rep' -delete
find $O -type d -name work -prune -exec rm -rf {} +
find $O -name 'results.jsonl' -size +200k -exec gzip -9 -n {} \;
du -sh $O >> $O/timings.txt
