#!/usr/bin/env bash
# One suite list profiled on one GPU of a multi-GPU host and then with --gpus all, back to back: the wall
# times, their ratio, and each job's median in both (agreement within noise). SUITES (comma-separated),
# ARGS (more options for both runs). Writes $OUT/gpus.log, one compare-SUITE.md per suite,
# ncu-agreement-{one,all}.txt and $OUT/runs.tar.gz (run directories, no .ncu-rep).
set -uo pipefail
OUT=${OUT:-/tmp/gpu-lab-out}
BIN=$(realpath "${GPU_LAB:-target/release/gpu-lab}")
SUITES=${SUITES:-transpose,reduction,shared-memory}
ARGS=${ARGS:-}
WORK=$(mktemp -d /tmp/gpu-lab-gpus.XXXXXX)
# Suites are read from a private copy: a device call copies the working tree onto the host again,
# and a kernel source read at that moment was once missing (reports/cold-all-h200).
TREE=$(mktemp -d /tmp/gpu-lab-tree.XXXXXX)
cp -a kernels scripts "$TREE"/ && cd "$TREE" || exit 1
mkdir -p "$OUT" "$WORK/one" "$WORK/all"
{
  echo "== $(date -u +%FT%TZ) $(hostname)"
  nvidia-smi --query-gpu=index,name,uuid,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv,noheader
  start=$(date +%s.%N)
  echo "== gpu-lab profile --suite $SUITES --gpu 0 $ARGS"
  "$BIN" profile --suite "$SUITES" --gpu 0 $ARGS --out "$WORK/one" --quiet
  echo "exit $?"
  one=$(python3 -c "print(round($(date +%s.%N) - $start, 1))")
  start=$(date +%s.%N)
  echo "== gpu-lab profile --suite $SUITES --gpus all $ARGS"
  "$BIN" profile --suite "$SUITES" --gpus all $ARGS --out "$WORK/all" --quiet
  echo "exit $?"
  all=$(python3 -c "print(round($(date +%s.%N) - $start, 1))")
  echo "wall one GPU: $one s; --gpus all: $all s; ratio $(python3 -c "print(round($all / $one, 3))")"
  python3 "$TREE/scripts/gpus-agreement.py" "$WORK/one" "$WORK/all"
} > "$OUT/gpus.log" 2>&1
# One comparison per suite that both runs have (SUITES=all names none itself).
for a in "$WORK"/one/*/; do
  s=$(python3 -c "import json, sys; print(json.load(open(sys.argv[1]))['suite'])" "$a/run.json" 2>/dev/null) || continue
  b=$(ls -d "$WORK"/all/*-"$s"-* 2>/dev/null | head -1)
  [ -n "$b" ] && "$BIN" compare "$a" "$b" > "$OUT/compare-$s.md" 2>&1
done
# Each run's event time against ncu (issue 12), from the same data.
for r in one all; do python3 "$TREE/scripts/ncu-agreement.py" "$WORK/$r"/*/ > "$OUT/ncu-agreement-$r.txt" 2>&1; done
tar -C "$WORK" --exclude='*.ncu-rep' -czf "$OUT/runs.tar.gz" one all
cat "$OUT/gpus.log"
