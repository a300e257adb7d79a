#!/usr/bin/env bash
# The compute suites on a GPU host in one call (SUITES, default "matmul gemv"): profile each (correctness, timing,
# cuBLAS in the same run, the compute metric set), then pack the run directories (without .ncu-rep) and the log into $OUT.
set -uo pipefail
OUT=${OUT:-/tmp/gpu-lab-out}
BIN=$(realpath "${GPU_LAB:-target/release/gpu-lab}")
WORK=$(mktemp -d /tmp/gpu-lab-matmul.XXXXXX)
mkdir -p "$OUT"
{
  echo "== $(date -u +%FT%TZ) $(hostname)"
  nvidia-smi --query-gpu=name,uuid,driver_version,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv
  for suite in ${SUITES:-matmul gemv}; do
    echo "== gpu-lab profile --suite $suite ${*}"
    start=$(date +%s)
    "$BIN" profile --suite "$suite" --out "$WORK/runs" --timeout 120 --quiet "$@"
    echo "== exit code $? after $(( $(date +%s) - start )) s"
  done
} > "$OUT/matmul.log" 2>&1
tar -C "$WORK/runs" --exclude='*.ncu-rep' -czf "$OUT/runs.tar.gz" .
cat "$OUT/matmul.log"; for r in "$WORK"/runs/*/report.md; do sed -n '/^## /,/^Readings/p' "$r" | cut -c1-170; done
