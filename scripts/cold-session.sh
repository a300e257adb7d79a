#!/usr/bin/env bash
# Cold against warm on a GPU host, in one call: the suite (SUITE, default transpose) profiled cold, its event medians
# set against ncu's gpu__time_duration of the same run (both cold: ncu flushes the caches before each profiled
# launch), then timed warm; the two runs side by side. Everything lands in $OUT: cold.log, agreement.txt,
# frame-cold.csv, compare.md, runs.tar.gz (without .ncu-rep).
set -uo pipefail
OUT=${OUT:-/tmp/gpu-lab-out}
BIN=$(realpath "${GPU_LAB:-target/release/gpu-lab}")
SUITE=${SUITE:-transpose}
WORK=$(mktemp -d /tmp/gpu-lab-cold.XXXXXX)
mkdir -p "$OUT"
{
  echo "== $(date -u +%FT%TZ) $(hostname)"
  nvidia-smi --query-gpu=name,uuid,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv
  for cache in cold warm; do
    mode=profile; [ "$cache" = warm ] && mode=run
    echo "== gpu-lab $mode --suite $SUITE --cache $cache"
    start=$(date +%s)
    "$BIN" "$mode" --suite "$SUITE" --cache "$cache" --out "$WORK/runs" --quiet > "$WORK/$cache.path"
    echo "exit $? after $(( $(date +%s) - start )) s: $(tail -n 1 "$WORK/$cache.path")"
  done
} > "$OUT/cold.log" 2>&1
cold=$(tail -n 1 "$WORK/cold.path"); warm=$(tail -n 1 "$WORK/warm.path")
"$BIN" report "$cold" --format frame > "$OUT/frame-cold.csv"
"$BIN" compare "$cold" "$warm" > "$OUT/compare.md" 2>&1
python3 - "$OUT/frame-cold.csv" > "$OUT/agreement.txt" <<'PY'
import csv, statistics, sys
rows = [r for r in csv.DictReader(open(sys.argv[1])) if r["median_ms"] and r.get("metric.duration")]
print(f"event median / ncu gpu__time_duration (ns), cold, per job: {len(rows)} jobs")
buckets = {"< 20 us": [], ">= 20 us": []}
for r in rows:
    event_ns = float(r["median_ms"]) * 1e6
    ratio = event_ns / float(r["metric.duration"])
    buckets["< 20 us" if event_ns < 20e3 else ">= 20 us"].append((ratio, r["job_id"]))
for name, xs in buckets.items():
    if not xs:
        continue
    rs = sorted(x[0] for x in xs)
    q = lambda p: rs[min(len(rs) - 1, int(p * len(rs)))]
    print(f"{name}: n={len(rs)} min={rs[0]:.3f} p10={q(0.1):.3f} median={statistics.median(rs):.3f} p90={q(0.9):.3f} max={rs[-1]:.3f}; within 3%: {sum(abs(r-1)<=0.03 for r in rs)}, within 10%: {sum(abs(r-1)<=0.10 for r in rs)}")
    for ratio, job in sorted(xs)[:3] + sorted(xs)[-3:]:
        print(f"   {ratio:.3f}  {job}")
PY
tar -C "$WORK/runs" --exclude='*.ncu-rep' -czf "$OUT/runs.tar.gz" .
cat "$OUT/cold.log" "$OUT/agreement.txt"; head -n 12 "$OUT/compare.md"
