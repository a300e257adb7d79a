#!/usr/bin/env bash
# habits.cu on the device, then gpu-lab's own cold timing of the same kernels on the same card
# (with-gpu-lab.sh without the first probe). Writes $OUT/habits.txt and with-gpu-lab.sh's files.
set -uo pipefail
OUT=${OUT:-/tmp/gpu-lab-out}
cd "$(dirname "$0")"
W=$(mktemp -d)
{
  date -u +%FT%TZ; nvidia-smi --query-gpu=name,uuid,driver_version,clocks.sm,clocks.mem --format=csv,noheader
  nvcc -O3 -arch=sm_90 -o "$W/habits" habits.cu -L/usr/local/cuda/lib64/stubs -lnvidia-ml && "$W/habits"
} 2>&1 | tee "$OUT/habits.txt"
cd ../.. && PROBE=0 bash scripts/tlb-probe/with-gpu-lab.sh > /dev/null 2>&1
