#!/usr/bin/env python3
"""CUPTI against ncu over many suites (issue 31, item 3): one summary of the runs of
`gpu-lab profile --suite all --shape smallest --counters-only --profiler both`.

Usage: scripts/crosscheck-catalogue.py RUN_DIR... [--top N] [--json OUT.json]

Reads each run's passes' comparisons (`profile-N.crosscheck.json`, as `gpu-lab` writes them) and
prints markdown: per suite, the values compared, equal, equal to ncu's printed rounding, and within
1% or that rounding, the launches whose durations agree within 1%, and the largest difference;
per counter or metric name, over every suite, its largest difference; then the N largest
differences of all (default 40). Jobs either profiler could not do are listed (`unmatched`).
With --json, writes the per-suite and per-name summaries there too (small, for committing).
"""
import csv
import glob
import gzip
import json
import os
import re
import sys

WITHIN = 0.01
UNIT = {"ns": 1.0, "us": 1e3, "ms": 1e6, "s": 1e9, "Kbyte": 1e3, "Mbyte": 1e6, "Gbyte": 1e9, "Tbyte": 1e12}


def printed_resolution(csv_path):
    """For passes written before gpu-lab recorded `ncu_resolution`: the same rule as
    src/parse/resolution.rs, from the pass's ncu page (the finest half last digit of a column's
    plain numbers, a bare 0 left out, times its unit; units other than UNIT's count as 1)."""
    opened = open(csv_path) if os.path.exists(csv_path) else gzip.open(csv_path + ".gz", "rt")
    with opened as f:
        rows = [r for r in csv.reader(f)]
    start = next(i for i, r in enumerate(rows) if r and r[0] == "ID")
    header, units = rows[start], rows[start + 1] if rows[start + 1][0] == "" else None
    out = {}
    for c, name in enumerate(header):
        best = None
        for r in rows[start + 1 + (units is not None):]:
            v = r[c].replace(",", "").strip() if c < len(r) else ""
            if not re.fullmatch(r"-?\d+(\.\d+)?", v) or v.lstrip("-") == "0":
                continue
            h = 0.5 * 10 ** -len(v.split(".")[1]) if "." in v else 0.5
            best = h if best is None else min(best, h)
        if best is not None:
            out[name] = best * (UNIT.get(units[c].strip(), 1.0) if units else 1.0)
    return out


def as_printed(d):
    if d["relative"] == 0:
        return True
    r = d.get("ncu_resolution")
    return r is not None and d["cupti"] is not None and d["ncu"] is not None and abs(d["cupti"] - d["ncu"]) <= r * (1 + 1e-12)


def suite_of(run):
    with open(os.path.join(run, "run.json")) as f:
        return json.load(f).get("suite", os.path.basename(run))


def load(run):
    diffs, unmatched = [], []
    paths = glob.glob(os.path.join(run, "*.crosscheck.json")) + glob.glob(os.path.join(run, "*.crosscheck.json.gz"))
    for path in sorted(paths):
        with (gzip.open(path, "rt") if path.endswith(".gz") else open(path)) as f:
            d = json.load(f)
        page = path.split(".crosscheck.json")[0] + "-ncu.csv"
        if os.path.exists(page) or os.path.exists(page + ".gz"):
            resolution = printed_resolution(page)
            for x in d.get("differences", []):
                if x["kind"] == "counter" and "ncu_resolution" not in x:
                    x["ncu_resolution"] = resolution.get(x["name"])
        diffs += d.get("differences", [])
        unmatched += d.get("unmatched", [])
    return diffs, unmatched


def counts(diffs, kind):
    these = [d for d in diffs if d["kind"] == kind]
    return (
        len(these),
        sum(1 for d in these if d["relative"] == 0),
        sum(1 for d in these if as_printed(d)),
        sum(1 for d in these if as_printed(d) or d["relative"] <= WITHIN),
    )


def durations(diffs):
    """Launches whose `gpu__time_duration.sum` both profilers read, and how many agree within 1%."""
    these = [d for d in diffs if d["kind"] == "counter" and d["name"] == "gpu__time_duration.sum"]
    return len(these), sum(1 for d in these if d["relative"] <= WITHIN)


def pct(x):
    return f"{100 * x:.2f}%"


def value(v):
    return "–" if v is None else f"{v:.6g}"


def main(argv):
    top, out_json, runs = 40, None, []
    it = iter(argv)
    for a in it:
        if a == "--top":
            top = int(next(it))
        elif a == "--json":
            out_json = next(it)
        else:
            runs.append(a)
    if not runs:
        sys.exit(__doc__)
    suites, everything, names = [], [], {}
    for run in sorted(runs, key=suite_of):
        suite = suite_of(run)
        diffs, unmatched = load(run)
        for d in diffs:
            d["suite"] = suite
            if as_printed(d):
                continue  # no difference as ncu printed it: not a candidate for "largest"
            key = (d["kind"], d["name"])
            if key not in names or d["relative"] > names[key]["relative"]:
                names[key] = d
        everything += diffs
        c, m = counts(diffs, "counter"), counts(diffs, "metric")
        largest = max((d for d in diffs if not as_printed(d)), key=lambda d: d["relative"], default=None)
        suites.append(
            {
                "suite": suite,
                "jobs": len({d["job"].split(" #")[0] for d in diffs}),
                "counters": c,
                "metrics": m,
                "durations": durations(diffs),
                "largest": largest,
                "unmatched": unmatched,
            }
        )
    c = [sum(s["counters"][i] for s in suites) for i in range(4)]
    m = [sum(s["metrics"][i] for s in suites) for i in range(4)]
    print("# CUPTI against ncu over the catalogue, one shape a suite\n")
    print(f"- suites: {len(suites)}; jobs compared: {sum(s['jobs'] for s in suites)}")
    print(f"- counters: {c[0]} values compared, {c[1]} equal, {c[2]} equal to ncu's printed rounding, {c[3]} within 1% or that rounding")
    print(f"- metrics: {m[0]} values compared, {m[1]} equal, {m[2]} equal to ncu's printed rounding, {m[3]} within 1% or that rounding")
    dur = [sum(s["durations"][i] for s in suites) for i in range(2)]
    print(f"- durations (`gpu__time_duration.sum`, launch by launch): {dur[1]} of {dur[0]} within 1%\n")
    print("| suite | jobs | counters: compared, equal, as printed, within 1% | metrics: compared, equal, as printed, within 1% | durations within 1% | largest difference | not compared |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for s in suites:
        l = s["largest"]
        largest = "–" if l is None else f"{pct(l['relative'])} `{l['name']}` ({l['job']})"
        print(
            f"| {s['suite']} | {s['jobs']} | {', '.join(map(str, s['counters']))} | "
            f"{', '.join(map(str, s['metrics']))} | {s['durations'][1]} of {s['durations'][0]} | {largest} | {len(s['unmatched'])} |"
        )
    print("\n## The largest difference of each counter and metric\n")
    print("| difference | kind | name | suite | job | CUPTI | ncu |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for d in sorted(names.values(), key=lambda d: -d["relative"]):
        print(
            f"| {pct(d['relative'])} | {d['kind']} | `{d['name']}` | {d['suite']} | {d['job']} | "
            f"{value(d['cupti'])} | {value(d['ncu'])} |"
        )
    print(f"\n## The {top} largest differences\n")
    print("| difference | kind | suite | job | name | CUPTI | ncu |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for d in sorted((d for d in everything if not as_printed(d)), key=lambda d: -d["relative"])[:top]:
        print(
            f"| {pct(d['relative'])} | {d['kind']} | {d['suite']} | {d['job']} | `{d['name']}` | "
            f"{value(d['cupti'])} | {value(d['ncu'])} |"
        )
    not_compared = [(s["suite"], u) for s in suites for u in s["unmatched"]]
    if not_compared:
        print("\n## Not compared (one profiler could not do the job)\n")
        for suite, u in not_compared:
            print(f"- {suite}: {json.dumps(u)}")
    if out_json:
        with open(out_json, "w") as f:
            json.dump(
                {
                    "suites": suites,
                    "largest_by_name": sorted(names.values(), key=lambda d: -d["relative"]),
                },
                f,
                indent=1,
            )


if __name__ == "__main__":
    main(sys.argv[1:])
