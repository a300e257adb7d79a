#!/usr/bin/env bash
# Builds gap.cu on the GPU host, prints its timings (see its header) at two sizes, then each
# kernel's gpu__time_duration under ncu with the caches flushed (--cache-control all, as gpu-lab's
# passes) and not (none), its first launch apart from the median of the other 19; the same 20
# launches under the reduction suite's metric set (several replay passes, as gpu-lab's profile
# pass collects them); then gpu-lab's own profile of the suite's `best` jobs, event median beside
# its pass's ncu duration. Clocks as found. Writes $OUT/gap-probe.txt.
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
    rest = f'median of the other {len(v) - 1} {statistics.median(v[1:]):8.2f} us' if len(v) > 1 else ''
    print(f'ncu --cache-control $cache  {k:34s} n=$n: median {statistics.median(v):8.2f} us ({len(v)} launches); first {v[0]:8.2f} us, {rest}')
"
    done
  done
  # The suite's metric set over the same 20 launches a kernel: min / mean / max of their durations.
  "$BIN" ncu --set reduction -k 'reduce_best|copy_ints' --format csv -- "$W/gap" ncu 20000003 | python3 -c "
import csv, sys
for r in csv.DictReader(l for l in sys.stdin if not l.startswith('note:')):
    if r['metric'] == 'duration':
        us = lambda k: float(r[k]) / (1e3 if r['unit'] == 'ns' else 1.0)
        unit = 'us' if r['unit'] == 'ns' else r['unit']
        print(f\"gpu-lab ncu --set reduction  {r['kernel']:24s} n=20000003: {r['invocations']} launches, duration min {us('min'):8.2f} mean {us('avg'):8.2f} max {us('max'):8.2f} {unit}\")"
  # gpu-lab's own profile: the event median and its pass's ncu duration (one launch a job).
  "$BIN" profile --suite reduction --variant best --out "$W/runs" --quiet > "$W/path" && "$BIN" report "$(tail -n 1 "$W/path")" --format frame | python3 -c "
import csv, sys
for r in csv.DictReader(sys.stdin):
    m, d = r['median_ms'], r.get('metric.duration', '')
    print(f\"gpu-lab {r['job_id']:45s} \" + (f'median {float(m) * 1e3:8.2f} us' if m else 'no median (see the run report)') + (f', profile pass duration {float(d) / 1e3:8.2f} us' if d else ', no ncu duration'))"
} 2>&1 | tee "$OUT/gap-probe.txt"
rm -rf "$W"
