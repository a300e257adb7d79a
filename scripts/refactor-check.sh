#!/usr/bin/env bash
# One device call that exercises every GPU path of gpu-lab after a change of its structure: devices and doctor
# (counter probe), the regression demo on the headline suite (two profiles, baseline, check exit 0, slowed check
# exit 3), fault isolation (tests/gpu/faults), and `gpu-lab ncu`/`import` on an nvcc-built program.
# Usage on the GPU host, from the repository root, after carrying target/release/gpu-lab: scripts/refactor-check.sh
# Everything lands in $OUT: summary.log and all.tar.gz (every log, verdict file and run directory).
set -uo pipefail
OUT=${OUT:-/tmp/gpu-lab-out}
WORK=$(mktemp -d /tmp/gpu-lab-refactor.XXXXXX)
mkdir -p "$OUT" "$WORK/regression" "$WORK/session" "$WORK/ncu"
{
  echo "== $(date -u +%FT%TZ) $(hostname)"
  echo "== regression demo on shared-memory"
  OUT="$WORK/regression" SUITE=shared-memory scripts/regression-demo.sh | grep -E '^(==|exit|\| )' | head -60
  echo "== device session: devices, doctor, faults"
  OUT="$WORK/session" WAIT=300 scripts/device-session.sh start profile:faults | tail -n 40
  echo "== ncu demo"
  OUT="$WORK/ncu" scripts/ncu-demo.sh
  echo "== done $(date -u +%FT%TZ)"
} > "$OUT/summary.log" 2>&1
tar -C "$WORK" -czf "$OUT/all.tar.gz" --exclude='*.ncu-rep' .
tail -n 80 "$OUT/summary.log"
