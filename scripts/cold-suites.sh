#!/usr/bin/env bash
# The built-in suites, cold (their default), profiled on a GPU host in one call: SUITES (space-separated), then
# EXTRA (a whole gpu-lab command line, optional). Writes $OUT/suites.log (exit codes and each job's status and
# median) and $OUT/runs.tar.gz (the run directories without .ncu-rep: the device tool returns few files).
set -uo pipefail
OUT=${OUT:-/tmp/gpu-lab-out}
BIN=$(realpath "${GPU_LAB:-target/release/gpu-lab}")
SUITES=${SUITES:-"shared-memory reduction"}
MODE=${MODE:-profile}          # or run: no ncu, for a quick first look at new suites
ARGS=${ARGS:-}                 # more options for every suite, e.g. "--max-seconds 0.3"
EXTRA=${EXTRA:-}
WORK=$(mktemp -d /tmp/gpu-lab-suites.XXXXXX)
mkdir -p "$OUT" "$WORK/runs"
{
  echo "== $(date -u +%FT%TZ) $(hostname)"
  nvidia-smi --query-gpu=name,uuid,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv,noheader
  for s in $SUITES; do
    start=$(date +%s)
    echo "== gpu-lab $MODE --suite $s $ARGS"
    "$BIN" "$MODE" --suite "$s" $ARGS --out "$WORK/runs" --quiet
    echo "exit $? after $(( $(date +%s) - start )) s"
  done
  if [ -n "$EXTRA" ]; then
    echo "== gpu-lab $EXTRA"
    "$BIN" $EXTRA --out "$WORK/runs" --quiet
    echo "exit $?"
  fi
} > "$OUT/suites.log" 2>&1
python3 "$(dirname "$0")/job-summary.py" "$WORK"/runs/*/ >> "$OUT/suites.log"
tar -C "$WORK/runs" --exclude='*.ncu-rep' -czf "$OUT/runs.tar.gz" .
grep -E "^== gpu|^exit" "$OUT/suites.log"
