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
        | python3 scripts/gap-probe/durations.py "ncu --cache-control $cache n=$n"
    done
  done
  # The suite's metric set (several replay passes, as gpu-lab's profile pass) over the same launches.
  "$BIN" ncu --set reduction -k 'reduce_best|copy_ints' --export "$W/set" -- "$W/gap" ncu 20000003 > /dev/null \
    && ncu --import "$W/set.ncu-rep" --csv --page raw --print-units base | python3 scripts/gap-probe/durations.py "gpu-lab ncu --set reduction n=20000003"
  # gpu-lab's own profile: the event median and its pass's ncu duration (one launch a job).
  "$BIN" profile --suite reduction --variant best --out "$W/runs" --quiet > "$W/path" && "$BIN" report "$(tail -n 1 "$W/path")" --format frame | python3 -c "
import csv, sys
for r in csv.DictReader(sys.stdin):
    m, d = r['median_ms'], r.get('metric.duration', '')
    print(f\"gpu-lab {r['job_id']:45s} \" + (f'median {float(m) * 1e3:8.2f} us' if m else 'no median (see the run report)') + (f', profile pass duration {float(d) / 1e3:8.2f} us' if d else ', no ncu duration'))"
} 2>&1 | tee "$OUT/gap-probe.txt"
rm -rf "$W"
