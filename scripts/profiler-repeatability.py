#!/usr/bin/env python3
"""How repeatable each profiler is, against how far CUPTI is from ncu (issue 31's third target):
two `gpu-lab profile --profiler both` passes of the same jobs on the same GPU.

Usage:
  scripts/profiler-repeatability.py SET_A SET_B
      For counters and metrics, durations apart from the rest: how many values are equal and
      within 1% between CUPTI and ncu in each set, ncu against ncu, and CUPTI against CUPTI.
  scripts/profiler-repeatability.py --durations SET...
      Per job, CUPTI's gpu__time_duration over ncu's less 1 in each set, and the same for the
      SM clock (sm__cycles_elapsed.avg.per_second) where the sets collected it.

A SET is a directory of run directories (one per suite), or one run directory; the values come
from each run's `profile-N.crosscheck.json` (or `.json.gz`), which holds both profilers' numbers.
"""
import glob
import gzip
import json
import os
import sys

DURATION = "gpu__time_duration.sum"
CLOCK = "sm__cycles_elapsed.avg.per_second"


def runs_of(path):
    return [path] if os.path.exists(os.path.join(path, "run.json")) else sorted(glob.glob(os.path.join(path, "*")))


def load(path):
    """(suite, kind, job, name) -> (cupti, ncu) over every run of the set."""
    out = {}
    for run in runs_of(path):
        if not os.path.exists(os.path.join(run, "run.json")):
            continue
        with open(os.path.join(run, "run.json")) as f:
            suite = json.load(f)["suite"]
        for cc in glob.glob(os.path.join(run, "profile-*.crosscheck.json*")):
            with (gzip.open(cc, "rt") if cc.endswith(".gz") else open(cc)) as f:
                for d in json.load(f)["differences"]:
                    out[(suite, d["kind"], d["job"], d["name"])] = (d["cupti"], d["ncu"])
    return out


def rel(a, b):
    if a is None or b is None:
        return 0.0 if a is None and b is None else 1.0
    scale = max(abs(a), abs(b))
    return 0.0 if scale == 0 else abs(a - b) / scale


def is_duration(name):
    return name.startswith("gpu__time_duration") or name == "duration"


def repeatability(a, b):
    keys = [k for k in a if k in b]
    print("| values | compared | n | equal | within 1% | largest |")
    print("| --- | --- | --- | --- | --- | --- |")
    for kind in ("counter", "metric"):
        for dur in (True, False):
            ks = [k for k in keys if k[1] == kind and is_duration(k[3]) == dur]
            if not ks:
                continue
            for label, f in (
                ("CUPTI vs ncu, set A", lambda k: rel(*a[k])),
                ("CUPTI vs ncu, set B", lambda k: rel(*b[k])),
                ("ncu A vs ncu B", lambda k: rel(a[k][1], b[k][1])),
                ("CUPTI A vs CUPTI B", lambda k: rel(a[k][0], b[k][0])),
            ):
                r = [f(k) for k in ks]
                what = f"{kind}s, {'durations' if dur else 'the rest'}"
                print(f"| {what} | {label} | {len(r)} | {sum(x == 0 for x in r)} | {sum(x <= 0.01 for x in r)} | {100 * max(r):.1f}% |")


def durations(sets):
    loaded = [load(s) for s in sets]
    jobs = sorted({(k[0], k[2]) for s in loaded for k in s if k[1] == "counter" and k[3] == DURATION})
    print("| job | " + " | ".join(f"{os.path.basename(s.rstrip('/'))}: duration, SM clock" for s in sets) + " |")
    print("| --- |" + " --- |" * len(sets))
    for suite, job in jobs:
        cells = []
        for s in loaded:
            d, c = s.get((suite, "counter", job, DURATION)), s.get((suite, "counter", job, CLOCK))
            ratio = lambda p: "–" if not p or not p[0] or not p[1] else f"{p[0] / p[1] - 1:+.3f}"
            cells.append(f"{ratio(d)}, {ratio(c)}")
        print(f"| {job} | " + " | ".join(cells) + " |")
    for name, s in zip(sets, loaded):
        r = [rel(*v) for k, v in s.items() if k[1] == "counter" and k[3] == DURATION]
        print(f"\n{name}: {sum(x <= 0.01 for x in r)} of {len(r)} durations within 1% of ncu's", end="")
    print()


if __name__ == "__main__":
    args = sys.argv[1:]
    if args[:1] == ["--durations"] and len(args) > 1:
        durations(args[1:])
    elif len(args) == 2:
        repeatability(load(args[0]), load(args[1]))
    else:
        sys.exit(__doc__)
