#!/usr/bin/env bash
# The built-in suites, cold (their default), profiled on a GPU host in one call: SUITES (space-separated), then
# EXTRA (a whole gpu-lab command line, optional). Writes $OUT/suites.log (exit codes and each job's status and
# median) and $OUT/runs.tar.gz (the run directories without .ncu-rep: the device tool returns few files).
set -uo pipefail
OUT=${OUT:-/tmp/gpu-lab-out}
BIN=$(realpath "${GPU_LAB:-target/release/gpu-lab}")
SUITES=${SUITES:-"shared-memory reduction"}
MODE=${MODE:-profile}          # or run: no ncu, for a quick first look at new suites
ARGS=${ARGS:-}                 # more options for every suite, e.g. "--max-seconds 0.3"
EXTRA=${EXTRA:-}
WORK=$(mktemp -d /tmp/gpu-lab-suites.XXXXXX)
mkdir -p "$OUT" "$WORK/runs"
{
  echo "== $(date -u +%FT%TZ) $(hostname)"
  nvidia-smi --query-gpu=name,uuid,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv,noheader
  for s in $SUITES; do
    start=$(date +%s)
    echo "== gpu-lab $MODE --suite $s $ARGS"
    "$BIN" "$MODE" --suite "$s" $ARGS --out "$WORK/runs" --quiet
    echo "exit $? after $(( $(date +%s) - start )) s"
  done
  if [ -n "$EXTRA" ]; then
    echo "== gpu-lab $EXTRA"
    "$BIN" $EXTRA --out "$WORK/runs" --quiet
    echo "exit $?"
  fi
} > "$OUT/suites.log" 2>&1
for r in "$WORK"/runs/*/; do
  echo "== $(basename "$r")" >> "$OUT/suites.log"
  python3 - "$r/results.jsonl" >> "$OUT/suites.log" <<'PY'
import json, sys
for l in open(sys.argv[1], errors="replace"):
    try:
        v = json.loads(l)
    except ValueError:
        continue
    if v.get("kind") == "job":
        s = v.get("summary") or {}
        m = "graph" if v.get("timing_method", "").startswith("CUDA graph") else "events"
        err = " | ".join((v.get("error") or "").splitlines()[:8])
        print(f'{v["id"][:60]:60} {v["status"]:7} {s.get("median", float("nan")):9.4f} ms {m} {err}')
PY
done
tar -C "$WORK/runs" --exclude='*.ncu-rep' -czf "$OUT/runs.tar.gz" .
grep -E "^== gpu|^exit" "$OUT/suites.log"
