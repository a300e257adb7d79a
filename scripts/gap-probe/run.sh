#!/usr/bin/env bash
# Builds gap.cu on the GPU host, prints its timings (see its header) at two sizes, then each
# kernel's gpu__time_duration under ncu with the caches flushed (--cache-control all, as gpu-lab's
# passes) and not (none); clocks as found. Then gpu-lab's own cold timing of the reduction suite's
# `best` jobs on the same card. Writes $OUT/gap-probe.txt.
set -uo pipefail
OUT=${OUT:-/tmp/gpu-lab-out}
BIN=$(realpath "${GPU_LAB:-target/release/gpu-lab}")
ROOT=$(pwd)
W=$(mktemp -d)
mkdir -p "$OUT"
{
  date -u +%FT%TZ; nvidia-smi --query-gpu=name,uuid,driver_version,clocks.sm,clocks.mem --format=csv,noheader
  nvcc -O3 -arch=sm_90 -o "$W/gap" scripts/gap-probe/gap.cu || exit 1
  for n in 20000003 67108864; do
    "$W/gap" time $n
    for cache in all none; do
      ncu --clock-control none --cache-control $cache --print-units base --metrics gpu__time_duration.sum --csv -k regex:'reduce_best|copy_ints' "$W/gap" ncu $n \
        | python3 -c "
import csv, sys, statistics, collections
rows = [r for r in csv.DictReader(l for l in sys.stdin if l.startswith('\"'))]
by = collections.defaultdict(list)
for i, r in enumerate(rows):
    grid = r['Grid Size'].strip('()').split(',')[0]
    name = r['Kernel Name'].split('(')[0] + (f'[GRID={grid}]' if 'reduce' in r['Kernel Name'] else '')
    scale = {'nsecond': 1e-3, 'ns': 1e-3, 'usecond': 1.0, 'us': 1.0, 'msecond': 1e3, 'ms': 1e3}.get(r['Metric Unit'])
    if scale is None:
        print(f'ncu: unit {r[\"Metric Unit\"]!r} not known, row skipped'); continue
    by[name].append(float(r['Metric Value'].replace(',', '')) * scale)
for k, v in by.items():
    print(f'ncu --cache-control $cache  {k:34s} n=$n: median {statistics.median(v):8.2f} us ({len(v)} launches)')
"
    done
  done
  "$BIN" run --suite reduction --variant best --out "$W/runs" --quiet > "$W/path" && "$BIN" report "$(tail -n 1 "$W/path")" --format frame | python3 -c "
import csv, sys
for r in csv.DictReader(sys.stdin):
    m = r['median_ms']
    print(f\"gpu-lab {r['job_id']:45s} \" + (f'median {float(m) * 1e3:8.2f} us' if m else 'no median (see the run report)'))"
} 2>&1 | tee "$OUT/gap-probe.txt"
rm -rf "$W"
