#!/usr/bin/env python3
# Whether collecting CUPTI Activity kernel records in the timing child (issue 31) moves the event
# timing: each job's event median with activity on against the same job's with it off
# (`gpu-lab run ... --no-activity`), same suites, same GPU, one run after the other. Prints the
# distribution of on/off, how many jobs' 95% intervals overlap, and the jobs beyond 2%.
# With --ncu RUN (a `profile --profiler ncu --duration-runs 5` of the same jobs), also the event
# median without activity and the activity median, each over ncu's gpu__time_duration.
# Usage: activity-overhead.py [--ncu NCU_RUN_DIR] RUN_ON_DIR RUN_OFF_DIR [more ON OFF pairs...]
import statistics, sys

import run_records

args = sys.argv[1:]
ncu_dir = None
if args[:1] == ["--ncu"] and len(args) > 1:
    ncu_dir, args = args[1], args[2:]
if len(args) < 2 or len(args) % 2:
    sys.exit("usage: activity-overhead.py [--ncu NCU_RUN_DIR] RUN_ON_DIR RUN_OFF_DIR [ON OFF ...]")
ncu = {}
if ncu_dir:
    ncu = {v["job_id"]: v["metrics"]["duration"] for v in run_records.records(ncu_dir, "profile")
           if (v.get("metrics") or {}).get("duration") and (v.get("duration_from") or "").startswith("own session")}
rows, vs_ncu = [], {"events without activity": [], "activity": []}
for on_dir, off_dir in zip(args[0::2], args[1::2]):
    ok = lambda run: {v["id"]: v for v in run_records.records(run, "job") if v.get("status") == "ok" and v.get("summary")}
    on, off = ok(on_dir), ok(off_dir)
    for job_id in sorted(on.keys() & off.keys()):
        a, b = on[job_id]["summary"], off[job_id]["summary"]
        overlap = a["ci_low"] <= b["ci_high"] and b["ci_low"] <= a["ci_high"]
        graph = "graph" if on[job_id].get("timing_method", "").startswith("CUDA graph") else "events"
        rows.append((a["median"] / b["median"], b["median"], overlap, graph, job_id))
        if job_id in ncu:
            vs_ncu["events without activity"].append(b["median"] * 1e6 / ncu[job_id])
            act = ((on[job_id].get("activity") or {}).get("summary") or {}).get("median")
            if act:
                vs_ncu["activity"].append(act * 1e6 / ncu[job_id])
    for run in (on_dir, off_dir):
        info = run_records.info(run)
        command = " ".join(w for w in info.get("command", "?").split()[1:])
        print(f"{info.get('suite', '?')}: {(info.get('device') or {}).get('name', '?')}, {info.get('started', '?')}: `gpu-lab {command}`")
if not rows:
    sys.exit("no job ran ok in both runs")
rs = sorted(r[0] for r in rows)
print(f"event median with activity / without, {len(rs)} jobs: min={rs[0]:.4f} median={statistics.median(rs):.4f} max={rs[-1]:.4f}; "
      f"95% intervals overlapping: {sum(r[2] for r in rows)}; within 1%: {sum(abs(r - 1) <= 0.01 for r in rs)}; within 2%: {sum(abs(r - 1) <= 0.02 for r in rs)}")
for method in ("events", "graph"):
    part = sorted(r[0] for r in rows if r[3] == method)
    if part:
        print(f"  timed {method}: n={len(part)} median on/off={statistics.median(part):.4f}")
for what, rs_ in vs_ncu.items():
    if rs_:
        rs_ = sorted(rs_)
        print(f"{what} / ncu's own-session gpu__time_duration, {len(rs_)} jobs: min={rs_[0]:.3f} median={statistics.median(rs_):.3f} "
              f"max={rs_[-1]:.3f}; within 1%: {sum(abs(r - 1) <= 0.01 for r in rs_)}; within 3%: {sum(abs(r - 1) <= 0.03 for r in rs_)}")
for ratio, off_ms, overlap, method, job_id in sorted(rows):
    if abs(ratio - 1) > 0.02:
        print(f"   {ratio:.4f}  off {off_ms * 1e3:.1f} us  {method}  {'overlap' if overlap else 'apart'}  {job_id}")
