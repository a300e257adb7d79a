#!/usr/bin/env bash
# Builds probe.cu on the device and, for each allocation (cudaMalloc, or the stream-ordered pool
# that cudarc uses) and each kind of data (zeros, random), times the kernels with events after an
# L2 eviction and then under ncu (cache flushed, clocks as found). Writes $OUT/tlb-probe.txt.
set -uo pipefail
OUT=${OUT:-/tmp/gpu-lab-out}
cd "$(dirname "$0")"
W=$(mktemp -d)
{
  date -u +%FT%TZ; nvidia-smi --query-gpu=name,uuid,driver_version,clocks.sm,clocks.mem --format=csv,noheader
  nvcc -O3 -arch=sm_90 -o "$W/probe" probe.cu || exit 1
  for alloc in malloc pool; do for data in zero random; do
    "$W/probe" time $alloc $data
    ncu --clock-control none --cache-control all --metrics gpu__time_duration.sum --csv -k regex:'copy_row|copy_column|naive_row' "$W/probe" ncu $alloc $data \
      | python3 -c "
import csv, sys, statistics, collections
rows = [r for r in csv.DictReader(l for l in sys.stdin if l.startswith('\"'))]
by = collections.defaultdict(list)
for i, r in enumerate(rows):
    by[(i // 15, r['Kernel Name'].split('(')[0])].append(float(r['Metric Value'].replace(',', '')) / 1e6)
for (shape, k), v in by.items():
    print(f'ncu    {k:12s} shape {shape} $alloc $data: median {statistics.median(v):.4f} ms')
"
  done; done
} 2>&1 | tee "$OUT/tlb-probe.txt"
