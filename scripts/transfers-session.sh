#!/usr/bin/env bash
# Issue 14's GPU run: the transfers and streams suites profiled cold, logs and run directories to $OUT.
set -uo pipefail
OUT=${OUT:-/tmp/gpu-lab-out}; BIN=$(realpath target/release/gpu-lab); WORK=/tmp/hp-runs
mkdir -p "$OUT" "$WORK"
{
  echo "== $(date -u +%FT%TZ) $(hostname)"
  nvidia-smi --query-gpu=name,uuid,driver_version,clocks.sm,clocks.mem,temperature.gpu,pcie.link.gen.current,pcie.link.width.current --format=csv,noheader
  for suite in ${SUITES:-transfers streams}; do
    echo "== gpu-lab ${MODE:-profile} --suite $suite"
    start=$(date +%s)
    "$BIN" ${MODE:-profile} --suite "$suite" --out "$WORK" --timeout 120
    echo "== exit $? after $(( $(date +%s) - start )) s"
  done
} > "$OUT/session.log" 2>&1
python3 scripts/job-summary.py "$WORK"/*/ > "$OUT/jobs.txt" 2>&1 || true
tar -C "$WORK" --exclude='*.ncu-rep' -czf "$OUT/runs.tar.gz" .
tail -5 "$OUT/session.log"; cat "$OUT/jobs.txt" | head -60
