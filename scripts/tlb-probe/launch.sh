#!/usr/bin/env bash
# Runs launch.cu (is the H100 excess of copy_column and naive_row in how gpu-lab launches?) and
# then gpu-lab's own cold timing of the same kernels on the same card. Writes $OUT/launch-probe.txt.
set -uo pipefail
OUT=${OUT:-/tmp/gpu-lab-out}
ROOT=$(pwd)
BIN=$(realpath "${GPU_LAB:-target/release/gpu-lab}")
W=$(mktemp -d)
{
  date -u +%FT%TZ; nvidia-smi --query-gpu=name,uuid,driver_version,clocks.sm,clocks.mem --format=csv,noheader
  nvcc -O3 -arch=sm_90 -cubin -o "$W/transpose.cubin" kernels/transpose/transpose.cu || exit 1
  nvcc -O3 -arch=sm_90 -o "$W/launch" scripts/tlb-probe/launch.cu -lcuda || exit 1
  "$W/launch" "$W/transpose.cubin" 30
  "$BIN" run --suite-dir scripts/tlb-probe --suite strided-bisect --out "$W/runs" --quiet > "$W/path" && "$BIN" report "$(tail -n 1 "$W/path")" --format frame | python3 -c "
import csv, sys
for r in csv.DictReader(sys.stdin):
    if '16384' in r['job_id']: print(f\"gpu-lab {r['job_id']:55s} median {float(r['median_ms']):.4f} ms\")"
  "$W/launch" "$W/transpose.cubin" 30
  for order in flush-first buffers-first; do for alloc in malloc pool; do "$W/launch" "$W/transpose.cubin" 20 $order $alloc | grep -v "this file"; done; done
} 2>&1 | tee "$OUT/launch-probe.txt"
