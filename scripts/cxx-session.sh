#!/usr/bin/env bash
# One GPU session for "bring your own kernel": doctor (toolkit headers, nvcc), the half-precision suite (NVRTC,
# templates, CUB, cooperative_groups, f16/bf16 checked against float32), the unmodified SGEMM tutorial (nvcc), and
# the cheats suite (a kernel right only once, a wrong argument list). Writes $OUT/cxx.log and $OUT/runs.tar.gz.
set -uo pipefail
OUT=${OUT:-/tmp/gpu-lab-out}
BIN=$(realpath "${GPU_LAB:-target/release/gpu-lab}")
SUITES=${SUITES:-"half-precision sgemm-tutorial"}
WORK=$(mktemp -d /tmp/gpu-lab-cxx.XXXXXX)
mkdir -p "$OUT" "$WORK/runs"
{
  echo "== $(date -u +%FT%TZ) $(hostname)"
  nvidia-smi --query-gpu=name,uuid,driver_version,clocks.sm,clocks.mem --format=csv,noheader
  echo "== gpu-lab doctor"; $BIN doctor; echo "exit $?"
  for s in $SUITES; do
    echo "== gpu-lab profile --suite $s"
    $BIN profile --suite "$s" --out "$WORK/runs" --quiet
    echo "exit $?"
  done
  echo "== gpu-lab run --suite cheats --suite-dir tests/gpu"
  $BIN run --suite cheats --suite-dir tests/gpu --out "$WORK/runs" --quiet
  echo "exit $?"
} > "$OUT/cxx.log" 2>&1
python3 "$(dirname "$0")/job-summary.py" "$WORK"/runs/*/ >> "$OUT/cxx.log"
# One archive: the device tool brings back a limited number of files.
tar -C "$WORK/runs" -czf "$OUT/runs.tar.gz" .
cat "$OUT/cxx.log"
