#!/usr/bin/env bash
# A short GPU check of the last changes: the matmul check's sampler and the verification after timing (cold, two
# rungs), the gemv suite, and the shared-memory suite's manifest with allow_outside. Writes $OUT/final.log and runs.tar.gz.
set -uo pipefail
OUT=${OUT:-/tmp/gpu-lab-out}
BIN=$(realpath "${GPU_LAB:-target/release/gpu-lab}")
WORK=$(mktemp -d /tmp/gpu-lab-final.XXXXXX)
mkdir -p "$OUT"
{
  echo "== $(date -u +%FT%TZ) $(hostname)"
  nvidia-smi --query-gpu=name,uuid,driver_version,clocks.sm,clocks.mem --format=csv,noheader
  for args in "run --suite matmul --variant vectorized,double_buffered --cache cold" "run --suite gemv" "run --suite shared-memory --variant transpose_fast"; do
    echo "== gpu-lab $args"
    $BIN $args --out "$WORK/runs" --quiet
    echo "exit $?"
  done
} > "$OUT/final.log" 2>&1
for r in "$WORK"/runs/*/; do
  python3 - "$r/results.jsonl" >> "$OUT/final.log" <<'PY'
import json, sys
for l in open(sys.argv[1]):
    v = json.loads(l)
    if v.get("kind") == "job":
        c, a = v.get("check") or {}, v.get("correctness_after") or {}
        print(f'{v["id"]:45} {v["status"]:7} checked {c.get("checked")} before, {a.get("checked")} after; worst error {max(c.get("rel_error", 0), a.get("rel_error", 0)):.2e}; median {v["summary"]["median"]:.4f} ms')
PY
done
tar -C "$WORK/runs" -czf "$OUT/runs.tar.gz" .
cat "$OUT/final.log"
