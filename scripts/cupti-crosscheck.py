#!/usr/bin/env python3
"""CUPTI against ncu, counter by counter and metric by metric (issue 31, item 3).

Usage: scripts/cupti-crosscheck.py CUPTI_RUN NCU_RUN [--top N]

CUPTI_RUN is a run directory of `gpu-lab profile --profiler cupti`, NCU_RUN one of the same
suites with `--profiler ncu --duration-runs 0` (so that both durations are read under the metric
set's replay). Every raw counter comes from CUPTI_RUN's `*.cupti.json` and NCU_RUN's `*.csv` raw
pages (matched by job id and launch order); every metric from both runs' `results.jsonl`. Prints
the largest relative differences first, and how many values agree exactly. Exit 1 when a job of
one run is missing in the other.
"""
import csv
import glob
import json
import os
import sys


def profiles(run):
    out = {}
    with open(os.path.join(run, "results.jsonl")) as f:
        for line in f:
            r = json.loads(line)
            if r.get("kind") == "profile":
                out[r["job_id"]] = r
    return out


def cupti_counters(run):
    """(job id, launch index) -> {counter: value}, from every pass's __cupti output."""
    out = {}
    for path in sorted(glob.glob(os.path.join(run, "*.cupti.json"))):
        p = json.load(open(path))
        for job in p["jobs"]:
            c = job["collected"].get("Ok")
            for i, r in enumerate(c["ranges"] if c else []):
                out[(job["job_id"], i)] = dict(zip(p["counters"], r["values"]))
    return out


def ncu_counters(run, jobs_by_pass):
    """The same keys from ncu's raw pages: each pass's rows are its jobs' launches in order."""
    out = {}
    for path in sorted(glob.glob(os.path.join(run, "profile-*.csv"))):
        if path.endswith("-duration.csv"):
            continue
        rows = list(csv.reader(open(path)))
        head = next(i for i, r in enumerate(rows) if r and r[0] == "ID")
        names, data = rows[head], rows[head + 2 :]
        tag = os.path.basename(path)[: -len(".csv")]
        launches = jobs_by_pass.get(tag, [])
        for (job, i), row in zip(launches, data):
            vals = {}
            for n, v in zip(names, row):
                try:
                    vals[n] = float(v.replace(",", ""))
                except ValueError:
                    pass
            out[(job, i)] = vals
    return out


def launches_by_pass(run):
    """Each pass's (job id, launch index) in launch order, from the CUPTI run's outputs."""
    out = {}
    for path in sorted(glob.glob(os.path.join(run, "*.cupti.json"))):
        tag = os.path.basename(path)[: -len(".cupti.json")]
        p = json.load(open(path))
        keys = []
        for job in p["jobs"]:
            c = job["collected"].get("Ok")
            keys += [(job["job_id"], i) for i in range(len(c["ranges"]) if c else 1)]
        out[tag] = keys
    return out


def rel(a, b):
    if a == b:
        return 0.0
    return abs(a - b) / max(abs(a), abs(b))


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("--top")]
    top = 25
    if "--top" in sys.argv:
        top = int(sys.argv[sys.argv.index("--top") + 1])
        args = [a for a in args if a != str(top)]
    if len(args) != 2:
        sys.exit(__doc__)
    cupti_run, ncu_run = args
    diffs, exact, total = [], 0, 0
    a, b = profiles(cupti_run), profiles(ncu_run)
    missing = sorted(set(a) ^ set(b))
    for job in sorted(set(a) & set(b)):
        for m, v in a[job]["metrics"].items():
            w = b[job]["metrics"].get(m)
            if v is None or w is None:
                continue
            total += 1
            exact += v == w
            diffs.append((rel(v, w), "metric", job, m, v, w))
    c = cupti_counters(cupti_run)
    n = ncu_counters(ncu_run, launches_by_pass(cupti_run))
    for key in sorted(set(c) & set(n)):
        for counter, v in c[key].items():
            w = n[key].get(counter)
            if w is None:
                continue
            total += 1
            exact += v == w
            diffs.append((rel(v, w), "counter", f"{key[0]} #{key[1]}", counter, v, w))
    diffs.sort(reverse=True)
    print(f"{total} values compared, {exact} equal; largest relative differences:")
    print("| difference | kind | job | name | CUPTI | ncu |\n| --- | --- | --- | --- | --- | --- |")
    for d, kind, job, name, v, w in diffs[:top]:
        print(f"| {d * 100:.3f}% | {kind} | {job} | `{name}` | {v:.6g} | {w:.6g} |")
    if missing:
        print(f"\njobs profiled in one run only: {', '.join(missing)}")
        sys.exit(1)


if __name__ == "__main__":
    main()
