#!/usr/bin/env bash
# Runs placement.cu (does a column-strided transpose's cold time move with where its buffers land,
# and does ncu read the same launches alike?) at 8192², plainly and under ncu, then gpu-lab's own
# profile of the same kernels on the same card. Writes $OUT/placement-probe.txt and
# $OUT/placement-run.tar.gz (gpu-lab's run directory without .ncu-rep).
set -uo pipefail
OUT=${OUT:-/tmp/gpu-lab-out}
BIN=$(realpath "${GPU_LAB:-target/release/gpu-lab}")
HERE=$(dirname "$0")
PLACES=${PLACES:-b0,f0,b2,b64,b1024,b0}
KERNELS=copy_row,copy_column,naive_row,unroll4_row
W=$(mktemp -d)
{
  date -u +%FT%TZ; nvidia-smi --query-gpu=name,uuid,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv,noheader
  nvcc -O3 -arch=sm_90 -cubin -o "$W/transpose.cubin" kernels/transpose/transpose.cu || exit 1
  nvcc -O3 -arch=sm_90 -o "$W/placement" "$HERE/placement.cu" -lcuda || exit 1
  echo "== events, plain"
  "$W/placement" "$W/transpose.cubin" 8192 8192 30 "$PLACES" "$KERNELS"
  echo "== ncu gpu__time_duration of the same program (5 samples a placement; --cache-control all --clock-control none)"
  ncu --metrics gpu__time_duration.sum --cache-control all --clock-control none -k "regex:^(${KERNELS//,/|})\$" \
    -o "$W/placement" -f "$W/placement" "$W/transpose.cubin" 8192 8192 5 "$PLACES" "$KERNELS" > "$W/ncu-stdout.txt" 2>&1 || { tail -20 "$W/ncu-stdout.txt"; }
  ncu --import "$W/placement.ncu-rep" --csv --page raw > "$W/ncu.csv"
  PYTHONPATH="$HERE/../gap-probe" python3 - "$W/ncu.csv" "$PLACES" "$KERNELS" <<'PY'
import statistics, sys
from durations import durations  # scripts/gap-probe: each launch's duration, in us, from either ncu page
ms = [us / 1e3 for _, us in durations(open(sys.argv[1]))]
places, kernels = sys.argv[2].split(","), sys.argv[3].split(",")
per = (3 + 5) * len(kernels)
if len(ms) != per * len(places):
    sys.exit(f"expected {per * len(places)} profiled launches, ncu has {len(ms)}")
for p, place in enumerate(places):
    chunk = ms[p * per + 3 * len(kernels):(p + 1) * per]
    for k, name in enumerate(kernels):
        v = sorted(chunk[k::len(kernels)])
        print(f"{place:6s} {name:12s} ncu median {statistics.median(v):.4f} ms  min {v[0]:.4f}  max {v[-1]:.4f}")
PY
  echo "== gpu-lab profile --suite transpose --variant $KERNELS"
  "$BIN" profile --suite transpose --variant "$KERNELS" --out "$W/runs" --quiet > "$W/path"
  echo "exit $?"
  d=$(tail -n 1 "$W/path")
  "$BIN" report "$d" --format frame > "$W/frame.csv"
  python3 - "$W/frame.csv" <<'PY'
import csv, sys
for r in csv.DictReader(open(sys.argv[1])):
    if r.get("median_ms") and r.get("metric.duration") and "NX=8192" in r["job_id"]:
        ncu = float(r["metric.duration"]) / 1e6
        print(f"{r['job_id']:50s} events {float(r['median_ms']):.4f} ms  ncu {ncu:.4f} ms  ratio {float(r['median_ms']) / ncu:.3f}")
PY
  tar -C "$W" --exclude='*.ncu-rep' -czf "$OUT/placement-run.tar.gz" runs
} 2>&1 | tee "$OUT/placement-probe.txt"
