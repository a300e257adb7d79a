#!/usr/bin/env python3
# Each job's cold event median against ncu's gpu__time_duration from the same profiled run (summed
# over the job's kernels; both cold: ncu flushes the caches before each launch it profiles), for the
# run directories named: the distribution for one-launch jobs at ncu >= 20 us (target: within 3%) and
# below (within 10%), and for jobs of several launches; each job outside its band is listed. Host
# programs and kernels that launch kernels are left out: their event time is not their kernels' time;
# so are jobs of a --gpus run timed on one GPU and profiled on another.
# Where the jobs have kernel durations from CUPTI's Activity API (the timing child's `activity`,
# issue 31), the same is printed for the activity median against ncu (target: within 1%) and
# against the event median. ncu's duration must come from its own session (`profile --profiler ncu
# --duration-runs 5`): a duration the profile took from the activity records is not ncu's.
# Usage: ncu-agreement.py RUN_DIR...   (issue 12's "agreement with ncu, measured")
import statistics, sys

import run_records

rows, left_out, first = [], {"host": 0, "nested": 0, "cards": 0, "fallback": 0}, None
for run in sys.argv[1:]:
    info = run_records.info(run)
    first = first or info
    jobs, durations = {}, {}
    for v in run_records.records(run):
        if v.get("kind") == "job" and v.get("status") == "ok" and v.get("summary"):
            jobs[v["id"]] = v
        elif v.get("kind") == "profile" and (v.get("metrics") or {}).get("duration"):
            durations[v["job_id"]] = (v["metrics"]["duration"], v.get("gpu"), v.get("duration_from"))
    # A suite whose kernels launch kernels is built with relocatable device code and timed with
    # events even where a variant launches none: all of it is left out.
    nested = any("launch kernels" in j.get("timing_method", "") for j in jobs.values())
    for job_id, job in jobs.items():
        if job_id not in durations:
            continue
        method = job.get("timing_method", "")
        ncu_ns, profiled_on, duration_from = durations[job_id]
        if "host program" in method:
            left_out["host"] += 1
        elif nested:
            left_out["nested"] += 1
        elif profiled_on and job.get("gpu") and profiled_on != job["gpu"]:
            # Under --gpus a group's jobs are timed on whichever GPU is free, and its ncu pass runs
            # on one of them: a job timed on one card and profiled on another compares two cards.
            left_out["cards"] += 1
        elif duration_from and not duration_from.startswith("own session"):
            # The duration's own session failed for the job, or the run asked for none
            # (--duration-runs 0, or the duration came from the activity records): ncu's reading
            # under the metric set's replay is not the quantity the others are compared with. (Runs
            # made before the duration had a session of its own say nothing, and are read as they are.)
            left_out["fallback"] += 1
        else:
            activity = ((job.get("activity") or {}).get("summary") or {}).get("median")
            rows.append((job["summary"]["median"] * 1e6 / ncu_ns, ncu_ns / 1e3, "graph" if method.startswith("CUDA graph") else "events",
                         info["suite"], job_id, job.get("launches", 1) == 1,
                         activity * 1e6 / ncu_ns if activity else None,
                         activity / job["summary"]["median"] if activity else None))
if first is None:
    sys.exit("no run directory named: ncu-agreement.py RUN_DIR...")
words = first.get("command", "?").split()[1:]
command = " ".join(w for i, w in enumerate(words) if w not in ("--out", "--quiet") and (i == 0 or words[i - 1] != "--out"))
print(f"cold event median / ncu gpu__time_duration (summed over a job's kernels), {(first.get('device') or {}).get('name', '?')}, "
      f"`gpu-lab {command}`, {first.get('started', '?')}")
print(f"{len(rows) + sum(left_out.values())} jobs with both; left out as not the same quantity: host programs (transfers, streams: "
      f"the program's time against its kernels') {left_out['host']}, suites whose kernels launch kernels (dynamic-parallelism) {left_out['nested']}, "
      f"jobs timed on one GPU and profiled on another (--gpus) {left_out['cards']}, "
      f"jobs whose duration is the metric set's reading (its own session failed, --duration-runs 0, or CUPTI's replay under --profiler cupti) {left_out['fallback']}")


def distribution(label, part, ratio_of, bands):
    """The distribution of one ratio over `part`, long and short kernels apart; jobs outside their band listed."""
    print(f"-- {label}")
    for long_, band in ((True, bands[0]), (False, bands[1])):
        xs = sorted((ratio_of(r),) + r[1:6] for r in part if (r[1] >= 20) == long_ and ratio_of(r) is not None)
        if not xs:
            continue
        rs = [x[0] for x in xs]
        q = lambda p: rs[min(len(rs) - 1, int(p * len(rs)))]
        print(f"ncu {'>=' if long_ else '<'} 20 us: n={len(rs)} min={rs[0]:.3f} p10={q(0.1):.3f} median={statistics.median(rs):.3f} "
              f"p90={q(0.9):.3f} max={rs[-1]:.3f}; within {band:.0%}: {sum(abs(r - 1) <= band for r in rs)}")
        for ratio, us, method, suite, job_id, _ in xs:
            if abs(ratio - 1) > band:
                print(f"   {ratio:.3f}  ncu {us:.1f} us  {method}  {suite}  {job_id}")


for single, title in ((True, "one launch a job"), (False, "several launches a job (each profiled cold by ncu, only the first cold when timed)")):
    part = [r for r in rows if r[5] == single]
    print(f"== {title}: {len(part)} jobs")
    distribution("cold event median / ncu", part, lambda r: r[0], (0.03, 0.10))
    if any(r[6] is not None for r in part):
        distribution("activity median (CUPTI Activity API: its samples, during or after the event samples) / ncu", part, lambda r: r[6], (0.01, 0.01))
        distribution("activity median / cold event median", part, lambda r: r[7], (0.01, 0.03))
