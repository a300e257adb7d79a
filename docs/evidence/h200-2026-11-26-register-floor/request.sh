#!/bin/bash
# R0 (2026-11-26 session 41): the whole tensor-gemm suite (24 variants x 3 shapes, s4 and stream-K rungs included),
# the whole scan suite where this is an H100, and the register floor of the computed launch statistics (intrinsics,
# --profiler both). Cold L2 (the default), clocks as found.
set -u
H=/tmp/hs; mkdir -p $H
{ date -u +%FT%TZ; nvidia-smi --query-gpu=name,uuid,driver_version,clocks.sm,clocks.max.sm,clocks.mem,power.limit,temperature.gpu --format=csv; sha256sum $B; } > $H/gpu.txt 2>&1
settle() { for p in $(pgrep -f -- "$B"); do kill -9 $p 2>/dev/null; done; sleep 1; }
t() { local name=$1 lim=$2; shift 2; local s=$(date +%s.%N)
  timeout $lim "$@" > $H/$name.log 2>&1; local rc=$?
  echo "$name rc=$rc wall=$(awk "BEGIN{print $(date +%s.%N) - $s}") s end $(date -u +%T) UTC: $*" | tee -a $H/walls.txt
  [ $rc -eq 124 ] && settle; }
t tensor-gemm 270 $B run --suite tensor-gemm --max-seconds 0.2 --timeout 25 --color never --quiet --out $H/tg
grep -q H100 $H/gpu.txt && t scan 70 $B run --suite scan --color never --quiet --out $H/scan
t both-intrinsics 40 $B profile --suite intrinsics --shape smallest --counters-only --profiler both --duration-runs 0 --timeout 30 --color never --out $H/both
find $H -type d -name work -prune -exec rm -rf {} +
find $H -name '*.ncu-rep' -delete
