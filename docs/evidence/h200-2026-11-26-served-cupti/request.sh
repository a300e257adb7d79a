#!/bin/bash
# R1 lead (session 41): issue 30's missing H100 whole-suite runs (tensor-gemm with the stream-K and 4-stage rungs,
# scan), then issue 31's like-for-like profile / run on shared-memory with the CUPTI passes served by the timing child
# (run and profile alternated twice after a smoke run that fills the build cache; then profile --child-per-job, the
# old way: a __cupti child of its own). Cold L2 (the default), clocks as found.
set -u
H=/tmp/hs; mkdir -p $H; START=$(date +%s); BUDGET=${LEAD_BUDGET:-330}
{ date -u +%FT%TZ; nvidia-smi --query-gpu=name,uuid,driver_version,clocks.sm,clocks.max.sm,clocks.mem,power.limit,temperature.gpu --format=csv; sha256sum $B; } > $H/gpu.txt 2>&1
settle() { for p in $(pgrep -f -- "$B"); do kill -9 $p 2>/dev/null; done; sleep 1; }
t() { local name=$1 lim=$2; shift 2
  local left=$(( START + BUDGET - $(date +%s) ))
  if [ $left -lt 10 ]; then echo "$name skipped: $left s left" | tee -a $H/walls.txt; return; fi
  [ $lim -gt $left ] && lim=$left
  local s=$(date +%s.%N)
  timeout $lim "$@" > $H/$name.log 2>&1; local rc=$?
  echo "$name rc=$rc wall=$(awk "BEGIN{print $(date +%s.%N) - $s}") s end $(date -u +%T) UTC: $*" | tee -a $H/walls.txt
  [ $rc -eq 124 ] && settle; }
Q="--color never --quiet"
if grep -q H100 $H/gpu.txt; then
  t tensor-gemm 170 $B run --suite tensor-gemm --max-seconds 0.2 --timeout 25 $Q --out $H/tg
  t scan 60 $B run --suite scan $Q --out $H/scan
fi
t smoke 45 $B run --suite shared-memory $Q --out $H/smoke
t run1 40 $B run --suite shared-memory $Q --out $H/run1
t profile1 40 $B profile --suite shared-memory $Q --out $H/profile1
t run2 40 $B run --suite shared-memory $Q --out $H/run2
t profile2 40 $B profile --suite shared-memory $Q --out $H/profile2
t profile-own-child 45 $B profile --suite shared-memory --child-per-job $Q --out $H/profile-own
# Where a job's checks go (verified runs split into inputs, GPU, checks; the matmul check rewritten since R0).
t rowwise-vec 50 $B run --suite rowwise --variant softmax_vec,layernorm_vec,rmsnorm_vec,softmax_vec_bf16 $Q --out $H/rowwise
grep -q H100 $H/gpu.txt || t tgemm-two 40 $B run --suite tensor-gemm --variant persistent_s4_bf16_out,mma_sync --max-seconds 0.2 $Q --out $H/tg2
find $H -type d -name work -prune -exec rm -rf {} +
find $H -name '*.ncu-rep' -delete
