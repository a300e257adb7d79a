#!/usr/bin/env bash
# launch round 1 (issue 31 item 3: launch statistics computed in the __cupti child), budget 200 s.
# 1) `--profiler both` at the smallest shape, counters only, over the six suites whose metric sets
# ask for ncu's launch statistics (they went to ncu whole before), in parts so that a cut loses one
# part; 2) which profiler made each record; 3) matmul profiled by CUPTI alone if time is left.
# Cold L2 (the default). gpu-lab starts its children in process groups of their own, so after a
# step cut by `timeout` its CUPTI child or ncu may live on and hold the counters: `settle` ends
# this script's own gpu-lab processes ($B) first.
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
  local left=$(( START + 190 - $(date +%s) ))
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
t both-occupancy 45 $B profile --suite occupancy $K $C
t both-small 45 $B profile --suite gemv,sgemm-tutorial,intrinsics $K $C
t both-matmul 50 $B profile --suite matmul $K $C
t both-tensor 40 $B profile --suite tensor-gemm $K $C
# Which profiler made each record (cupti, cupti with computed launch statistics, or ncu and why).
for f in $O/both/*/results.jsonl; do
  echo "== $f"; grep -o '"profiler":"[^"]*"' "$f" | sort | uniq -c
done > $O/profilers.txt 2>&1
t cupti-matmul 30 $B profile --suite matmul $K --shape smallest --counters-only --duration-runs 0 --timeout 40 --out $O/cupti-matmul
find $O -name '*.ncu-rep' -delete
find $O -type d -name work -prune -exec rm -rf {} +
find $O -name 'results.jsonl' -size +200k -exec gzip -9 -n {} \;
du -sh $O >> $O/timings.txt
