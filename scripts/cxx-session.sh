#!/usr/bin/env bash
# One GPU session for "bring your own kernel": doctor (toolkit headers, nvcc), the half-precision suite (NVRTC,
# templates, CUB, cooperative_groups, f16/bf16 checked against float32), the unmodified SGEMM tutorial (nvcc), and
# the cheats suite (a kernel right only once, a wrong argument list). Writes $OUT/cxx.log and $OUT/runs.tar.gz.
set -uo pipefail
OUT=${OUT:-/tmp/gpu-lab-out}
BIN=$(realpath "${GPU_LAB:-target/release/gpu-lab}")
SUITES=${SUITES:-"half-precision sgemm-tutorial"}
WORK=$(mktemp -d /tmp/gpu-lab-cxx.XXXXXX)
mkdir -p "$OUT" "$WORK/runs"
{
  echo "== $(date -u +%FT%TZ) $(hostname)"
  nvidia-smi --query-gpu=name,uuid,driver_version,clocks.sm,clocks.mem --format=csv,noheader
  echo "== gpu-lab doctor"; $BIN doctor; echo "exit $?"
  for s in $SUITES; do
    echo "== gpu-lab profile --suite $s"
    $BIN profile --suite "$s" --out "$WORK/runs" --quiet
    echo "exit $?"
  done
  echo "== gpu-lab run --suite cheats --suite-dir tests/gpu"
  $BIN run --suite cheats --suite-dir tests/gpu --out "$WORK/runs" --quiet
  echo "exit $?"
} > "$OUT/cxx.log" 2>&1
for r in "$WORK"/runs/*/; do
  echo "== $r" >> "$OUT/cxx.log"
  python3 - "$r/results.jsonl" >> "$OUT/cxx.log" <<'PY'
import json, sys
for l in open(sys.argv[1], errors="replace"):
    try:
        v = json.loads(l)
    except ValueError:
        continue
    if v.get("kind") == "job":
        c = v.get("check") or {}
        s = v.get("summary") or {}
        err = (v.get("error") or "").splitlines()[:6]
        print(f'{v["id"]:50} {v["status"]:7} median {s.get("median", float("nan")):.4f} ms rel_err {c.get("rel_error", 0):.2e} {v.get("compilers", [])} {" | ".join(err)}')
PY
done
# One archive: the device tool brings back a limited number of files.
tar -C "$WORK/runs" -czf "$OUT/runs.tar.gz" .
cat "$OUT/cxx.log"
