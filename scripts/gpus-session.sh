#!/usr/bin/env bash
# One suite list profiled on one GPU of a multi-GPU host and then with --gpus all, back to back: the wall
# times, their ratio, and each job's median in both (agreement within noise). SUITES (comma-separated),
# ARGS (more options for both runs). Writes $OUT/gpus.log and $OUT/runs.tar.gz (run directories, no .ncu-rep).
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
  python3 - "$WORK/one" "$WORK/all" <<'PY'
import json, os, sys, statistics
def medians(root):
    out, gpus = {}, {}
    for d in sorted(os.listdir(root)):
        suite = json.load(open(os.path.join(root, d, "run.json")))["suite"]
        for l in open(os.path.join(root, d, "results.jsonl"), errors="replace"):
            v = json.loads(l)
            if v.get("kind") == "job" and v.get("summary"):
                out[(suite, v["id"])] = v["summary"]["median"]
                gpus[(suite, v["id"])] = v.get("gpu")
    return out, gpus
one, _ = medians(sys.argv[1])
both, gpus = medians(sys.argv[2])
common = sorted(set(one) & set(both))
d = sorted(abs(both[k] / one[k] - 1) * 100 for k in common)
print(f"jobs in both: {len(common)} (one GPU {len(one)}, --gpus all {len(both)}); per GPU in --gpus all: " + ", ".join(f"{g}: {n}" for g, n in sorted({g: sum(1 for x in gpus.values() if x == g) for g in set(gpus.values())}.items(), key=str)))
if d:
    print(f"|median(--gpus all) / median(one GPU) - 1|: p50 {d[len(d)//2]:.2f}%  p90 {d[int(len(d)*0.9)]:.2f}%  max {d[-1]:.2f}%")
    for k in common:
        r = both[k] / one[k] - 1
        if abs(r) > 0.05:
            print(f"   {r*100:+.1f}%  {k[0]} {k[1]}  ({one[k]:.4f} -> {both[k]:.4f} ms, {gpus[k]})")
PY
} > "$OUT/gpus.log" 2>&1
# One comparison per suite that both runs have (SUITES=all names none itself).
for a in "$WORK"/one/*/; do
  s=$(python3 -c "import json, sys; print(json.load(open(sys.argv[1]))['suite'])" "$a/run.json" 2>/dev/null) || continue
  b=$(ls -d "$WORK"/all/*-"$s"-* 2>/dev/null | head -1)
  [ -n "$b" ] && "$BIN" compare "$a" "$b" > "$OUT/compare-$s.md" 2>&1
done
tar -C "$WORK" --exclude='*.ncu-rep' -czf "$OUT/runs.tar.gz" one all
cat "$OUT/gpus.log"
