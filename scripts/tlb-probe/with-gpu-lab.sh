#!/usr/bin/env bash
# The probe (run.sh) and then gpu-lab on the same card: `gpu-lab profile --suite transpose --variant
# copy_row,copy_column,naive_row`, each job's cold event median beside ncu's gpu__time_duration.
# Writes $OUT/tlb-probe.txt, $OUT/gpu-lab-strided.txt and $OUT/strided-run.tar.gz. PROBE=0 skips the
# probe; ARGS replaces the suite selection (e.g. "--suite-dir scripts/tlb-probe --suite strided-probe",
# the same kernels built by NVRTC and by nvcc).
set -uo pipefail
OUT=${OUT:-/tmp/gpu-lab-out}
BIN=$(realpath "${GPU_LAB:-target/release/gpu-lab}")
ARGS=${ARGS:---suite transpose --variant copy_row,copy_column,naive_row}
[ "${PROBE:-1}" = 0 ] || bash "$(dirname "$0")/run.sh" > /dev/null
W=$(mktemp -d)
{
  date -u +%FT%TZ
  echo "== gpu-lab profile $ARGS"
  "$BIN" profile $ARGS --out "$W" --quiet > "$W/path"
  echo "exit $?"
  d=$(tail -n 1 "$W/path")
  "$BIN" report "$d" --format frame > "$W/frame.csv"
  python3 - "$W/frame.csv" <<'PY'
import csv, sys
for r in csv.DictReader(open(sys.argv[1])):
    if r.get("median_ms") and r.get("metric.duration"):
        ncu = float(r["metric.duration"]) / 1e6
        print(f"{r['job_id']:50s} events {float(r['median_ms']):.4f} ms  ncu {ncu:.4f} ms  ratio {float(r['median_ms']) / ncu:.3f}")
PY
  tar -C "$W" --exclude='*.ncu-rep' -czf "$OUT/strided-run.tar.gz" .
} 2>&1 | tee "$OUT/gpu-lab-strided.txt"
