#!/usr/bin/env bash
# Issue 12's noise measurement and then every built-in suite profiled cold on one GPU, in one background run
# (scripts/background.sh): RES (results folder, default /tmp/gpu-lab-res) gets noise/ (scripts/noise-session.sh
# with two back-to-back `run --rounds 3` of transpose), all.log (the suite run's wall time) and all-runs.tar.gz
# (its run directories without .ncu-rep). NOISE=0 skips the noise runs.
set -uo pipefail
RES=${RES:-/tmp/gpu-lab-res}
BIN=$(realpath "${GPU_LAB:-target/release/gpu-lab}")
export GPU_LAB=$BIN
mkdir -p "$RES"
# Suites are read from a private copy: a device call copies the working tree onto the host again,
# and a kernel source read at that moment was once missing (reports/cold-all-h200).
TREE=$(mktemp -d /tmp/gpu-lab-tree.XXXXXX)
cp -a kernels scripts "$TREE"/ && cd "$TREE" || exit 1
if [ "${NOISE:-1}" != 0 ]; then
  OUT=$RES/noise SUITE=transpose A="run --rounds 3" RUN_ARGS="--rounds 3" bash scripts/noise-session.sh > /dev/null 2>&1
fi
WORK=$(mktemp -d /tmp/gpu-lab-all.XXXXXX)
{
  echo "== $(date -u +%FT%TZ) $(hostname)"
  nvidia-smi --query-gpu=index,name,uuid,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv,noheader
  echo "== gpu-lab profile --suite all --gpu 0"
  start=$(date +%s.%N)
  "$BIN" profile --suite all --gpu 0 --out "$WORK/runs" --quiet
  echo "exit $? after $(python3 -c "print(round($(date +%s.%N) - $start, 1))") s"
} > "$RES/all.log" 2>&1
tar -C "$WORK" --exclude='*.ncu-rep' -czf "$RES/all-runs.tar.gz" runs
