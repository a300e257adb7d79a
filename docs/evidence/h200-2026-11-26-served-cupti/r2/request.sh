#!/bin/bash
# R2 lead (session 41): the binary with bounds, GEMM bounds and roofs served by the timing child, checked end to end
# (shared-memory run and profile; two tensor-gemm variants, whose cuBLASLt bounds and roofs are served too), then
# issue 30's missing H100 whole-suite runs where this is an H100 (tensor-gemm with the stream-K and 4-stage rungs, scan).
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
t run1 40 $B run --suite shared-memory $Q --out $H/run1
t profile1 40 $B profile --suite shared-memory $Q --out $H/profile1
t tgemm-two 40 $B run --suite tensor-gemm --variant persistent_s4_bf16_out,mma_sync --max-seconds 0.2 $Q --out $H/tg2
if grep -q H100 $H/gpu.txt; then
  t tensor-gemm 170 $B run --suite tensor-gemm --max-seconds 0.2 --timeout 25 $Q --out $H/tg
  t scan 60 $B run --suite scan $Q --out $H/scan
fi
find $H -type d -name work -prune -exec rm -rf {} +
find $H -name '*.ncu-rep' -delete
