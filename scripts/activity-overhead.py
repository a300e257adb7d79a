#!/usr/bin/env python3
# Whether collecting CUPTI Activity kernel records in the timing child (issue 31) moves the event
# timing: each job's event median with activity on against the same job's with it off
# (`gpu-lab run ... --no-activity`), same suites, same GPU, one run after the other. Prints the
# distribution of on/off, how many jobs' 95% intervals overlap, and the jobs beyond 2%.
# Usage: activity-overhead.py RUN_ON_DIR RUN_OFF_DIR [more ON OFF pairs...]
import statistics, sys

import run_records

if len(sys.argv) < 3 or len(sys.argv) % 2 == 0:
    sys.exit("usage: activity-overhead.py RUN_ON_DIR RUN_OFF_DIR [ON OFF ...]")
rows = []
for on_dir, off_dir in zip(sys.argv[1::2], sys.argv[2::2]):
    ok = lambda run: {v["id"]: v for v in run_records.records(run, "job") if v.get("status") == "ok" and v.get("summary")}
    on, off = ok(on_dir), ok(off_dir)
    for job_id in sorted(on.keys() & off.keys()):
        a, b = on[job_id]["summary"], off[job_id]["summary"]
        overlap = a["ci_low"] <= b["ci_high"] and b["ci_low"] <= a["ci_high"]
        graph = "graph" if on[job_id].get("timing_method", "").startswith("CUDA graph") else "events"
        rows.append((a["median"] / b["median"], b["median"], overlap, graph, job_id))
    info = run_records.info(on_dir)
    print(f"{info.get('suite', '?')}: {(info.get('device') or {}).get('name', '?')}, on {info.get('started', '?')}: `gpu-lab {info.get('command', '?')}`")
if not rows:
    sys.exit("no job ran ok in both runs")
rs = sorted(r[0] for r in rows)
print(f"event median with activity / without, {len(rs)} jobs: min={rs[0]:.4f} median={statistics.median(rs):.4f} max={rs[-1]:.4f}; "
      f"95% intervals overlapping: {sum(r[2] for r in rows)}; within 1%: {sum(abs(r - 1) <= 0.01 for r in rs)}; within 2%: {sum(abs(r - 1) <= 0.02 for r in rs)}")
for method in ("events", "graph"):
    part = sorted(r[0] for r in rows if r[3] == method)
    if part:
        print(f"  timed {method}: n={len(part)} median on/off={statistics.median(part):.4f}")
for ratio, off_ms, overlap, method, job_id in sorted(rows):
    if abs(ratio - 1) > 0.02:
        print(f"   {ratio:.4f}  off {off_ms * 1e3:.1f} us  {method}  {'overlap' if overlap else 'apart'}  {job_id}")
