#!/usr/bin/env bash
# Issue 12's measurements in one call: the suite (SUITE, default transpose) profiled cold, each job's event median
# over ncu's gpu__time_duration of the same run (agreement.txt, by timing method), then timed cold again right after
# (RUN_ARGS, e.g. "--rounds 3"), and the two runs' medians and intervals set side by side (noise.txt).
# Writes $OUT/noise.log, agreement.txt, noise.txt, frame-a.csv, frame-b.csv and runs.tar.gz (without .ncu-rep).
set -uo pipefail
OUT=${OUT:-/tmp/gpu-lab-out}
BIN=$(realpath "${GPU_LAB:-target/release/gpu-lab}")
SUITE=${SUITE:-transpose}
RUN_ARGS=${RUN_ARGS:-}
# The first run: profiled (for the agreement with ncu), or A="run --rounds 3" to compare two multi-round runs.
A=${A:-profile}
WORK=$(mktemp -d /tmp/gpu-lab-noise.XXXXXX)
mkdir -p "$OUT"
{
  echo "== $(date -u +%FT%TZ) $(hostname)"
  nvidia-smi --query-gpu=name,uuid,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv,noheader
  for step in "a $A" "b run $RUN_ARGS"; do
    set -- $step
    tag=$1; shift
    echo "== gpu-lab $* --suite $SUITE"
    start=$(date +%s)
    "$BIN" "$@" --suite "$SUITE" --out "$WORK/runs" --quiet > "$WORK/$tag.path"
    echo "exit $? after $(( $(date +%s) - start )) s: $(tail -n 1 "$WORK/$tag.path")"
    "$BIN" report "$(tail -n 1 "$WORK/$tag.path")" --format frame > "$OUT/frame-$tag.csv"
  done
} > "$OUT/noise.log" 2>&1
python3 - "$OUT/frame-a.csv" "$OUT/frame-b.csv" "$WORK/runs" > "$OUT/agreement.txt" 2> "$OUT/noise.txt" <<'PY'
import csv, glob, json, statistics, sys
def frame(p):
    return {r["job_id"]: r for r in csv.DictReader(open(p)) if r.get("median_ms")}
a, b = frame(sys.argv[1]), frame(sys.argv[2])
# Timing method per job, from run a's records.
method = {}
for path in glob.glob(sys.argv[3] + "/*/results.jsonl"):
    for line in open(path, errors="replace"):
        try:
            v = json.loads(line)
        except ValueError:
            continue
        if v.get("kind") == "job" and v["id"] in a and v.get("timing_method"):
            method.setdefault(v["id"], "graph" if v["timing_method"].startswith("CUDA graph") else "events")
def q(xs, p):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(p * len(xs)))]
rows = [(float(r["median_ms"]) * 1e6 / float(r["metric.duration"]), float(r["metric.duration"]) / 1e3, j) for j, r in a.items() if r.get("metric.duration")]
print(f"cold event median / ncu gpu__time_duration, per job ({len(rows)} jobs)")
for name, keep in [("ncu >= 20 us", lambda us: us >= 20), ("ncu < 20 us", lambda us: us < 20)]:
    xs = [(r, us, j) for r, us, j in rows if keep(us)]
    if not xs:
        continue
    rs = [x[0] for x in xs]
    print(f"{name}: n={len(rs)} min={min(rs):.3f} p10={q(rs,.1):.3f} median={statistics.median(rs):.3f} p90={q(rs,.9):.3f} max={max(rs):.3f}; within 3%: {sum(abs(r-1)<=.03 for r in rs)}, within 10%: {sum(abs(r-1)<=.10 for r in rs)}")
    for m in ("graph", "events"):
        ms = [r for r, us, j in xs if method.get(j) == m]
        if ms:
            print(f"   timed by {m}: n={len(ms)} median={statistics.median(ms):.3f} min={min(ms):.3f} max={max(ms):.3f}")
    for r, us, j in sorted(xs)[:3] + sorted(xs)[-3:]:
        print(f"   {r:.3f}  ncu {us:.1f} us  {method.get(j, '?')}  {j}")
common = sorted(set(a) & set(b))
d = [abs(float(b[j]["median_ms"]) / float(a[j]["median_ms"]) - 1) * 100 for j in common]
overlap = sum(float(a[j]["ci_low_ms"]) <= float(b[j]["ci_high_ms"]) and float(b[j]["ci_low_ms"]) <= float(a[j]["ci_high_ms"]) for j in common)
print(f"two back-to-back cold runs, {len(common)} jobs: |Δ median| p50 {q(d,.5):.2f}% p90 {q(d,.9):.2f}% max {max(d):.2f}%; intervals overlap for {overlap} of {len(common)} ({100*overlap/len(common):.0f}%)", file=sys.stderr)
for x, j in sorted(zip(d, common))[-5:]:
    print(f"   {x:.2f}%  {j}", file=sys.stderr)
PY
tar -C "$WORK/runs" --exclude='*.ncu-rep' -czf "$OUT/runs.tar.gz" .
cat "$OUT/noise.log" "$OUT/agreement.txt" "$OUT/noise.txt"
