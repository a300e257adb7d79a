#!/usr/bin/env bash
# Round 1 of 2026-11-26 (second session): issue 30's whole suites on this GPU (scan, tensor-gemm, matmul as they
# now are), the scan's counters at three sizes, issue 31's cross-check of the suites this GPU lacks, and the
# profilers' repeatability (two `--profiler both` passes of the same jobs). Cold L2, clocks as found.
set -u
O=$OUT/hs; mkdir -p $O /tmp/b
B=/tmp/b/gpu-lab; xz -dc .carry/r5/gpu-lab.xz > $B; chmod +x $B
CLK=gpu__time_duration.sum,sm__cycles_elapsed.avg.per_second,gpc__cycles_elapsed.max,dram__bytes_write.sum
START=$(date +%s); BUDGET=${BUDGET:-560}
{ date -u +%FT%TZ; nvidia-smi --query-gpu=name,uuid,driver_version,clocks.sm,clocks.max.sm,clocks.mem,power.draw,power.limit,temperature.gpu --format=csv; sha256sum $B; } > $O/gpu.txt 2>&1
settle() { for p in $(pgrep -f -- "$B"); do kill -9 $p 2>/dev/null; done; sleep 1; }
t() {
  local name=$1 lim=$2; shift 2
  local left=$(( START + BUDGET - $(date +%s) ))
  if [ $left -lt 8 ]; then echo "$name skipped: ${left} s left" >> $O/timings.txt; return; fi
  [ $lim -gt $left ] && lim=$left
  local s=$(date +%s%N)
  timeout $lim "$@" > $O/$name.log 2>&1
  local rc=$?
  echo "$name rc=$rc $(( ($(date +%s%N) - s) / 1000000 )) ms (limit ${lim} s, $(date -u +%T) UTC): $*" >> $O/timings.txt
  [ $rc -eq 124 ] && settle
}
STEPS="base1 base2"
nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200 && STEPS="scan tgemm matmul both-a scan-counters scan-hot rep1 rep2 $STEPS"
echo "steps: $STEPS" >> $O/timings.txt
for step in $STEPS; do
  case $step in
    scan) t scan-whole 90 $B run --suite scan --color never --quiet --out $O/scan-whole ;;
    tgemm) t tgemm-whole 200 $B run --suite tensor-gemm --color never --quiet --out $O/tgemm-whole ;;
    matmul) t matmul-whole 150 $B run --suite matmul --color never --quiet --out $O/matmul-whole ;;
    both-a) t both-a 150 $B profile --suite ${BOTH_A} --color never --shape smallest --counters-only --profiler both --duration-runs 0 --timeout 60 --out $O/both-a ;;
    scan-counters) t scan-counters 60 $B profile --suite scan --variant lookback_decoupled,lookback_onepass --metrics stall_barrier,stall_long_scoreboard,stall_sync,achieved_occupancy,sm_efficiency,dram_pct_of_peak,dram_read_throughput,dram_write_throughput,duration --counters-only --color never --out $O/scan-counters ;;
    scan-hot) t scan-hot 90 $B profile --suite scan --variant lookback_decoupled --shape N=16777216 --counters-only --hotspots --timeout 60 --color never --out $O/scan-hot ;;
    cv1|cv2) GPU_LAB_FLUSH_CARVEOUT=100 t $step 60 $B profile --suite tensor-gemm,intrinsics --color never --shape smallest --counters-only --profiler both --duration-runs 0 --metrics $CLK --timeout 30 --out $O/$step ;;
    base1|base2) t $step 60 $B profile --suite tensor-gemm,intrinsics --color never --shape smallest --counters-only --profiler both --duration-runs 0 --metrics $CLK --timeout 30 --out $O/$step ;;
    tcv) GPU_LAB_FLUSH_CARVEOUT=100 t $step 60 $B run --suite tensor-gemm --shape smallest --no-activity --color never --quiet --out $O/$step ;;
    tbase) t $step 60 $B run --suite tensor-gemm --shape smallest --no-activity --color never --quiet --out $O/$step ;;
    clk1|clk3) t $step 60 $B profile --suite tensor-gemm,intrinsics --color never --shape smallest --counters-only --profiler both --duration-runs 0 --metrics $CLK --timeout 30 --out $O/$step ;;
    clk2|clk4) GPU_LAB_CUPTI_JOBS_PER_PASS=1 t $step 60 $B profile --suite tensor-gemm,intrinsics --color never --shape smallest --counters-only --profiler both --duration-runs 0 --metrics $CLK --timeout 30 --out $O/$step ;;
    rep1) t rep1 90 $B profile --suite tensor-gemm,intrinsics --color never --shape smallest --counters-only --profiler both --duration-runs 0 --timeout 60 --out $O/rep1 ;;
    rep2) t rep2 90 $B profile --suite tensor-gemm,intrinsics --color never --shape smallest --counters-only --profiler both --duration-runs 0 --timeout 60 --out $O/rep2 ;;
  esac
  du -sh $O | tail -1 >> $O/timings.txt
done
find $O -name '*.ncu-rep' -delete; find $O -name work -type d -prune -exec rm -rf {} +
cd $OUT && tar -czf hs.tgz hs && rm -rf hs; ls -la $OUT
