#!/usr/bin/env python3
"""Per kernel, ncu's gpu__time_duration of each launch, from an `ncu --csv` export on stdin: the
details page (`--metrics gpu__time_duration.sum`) or the raw page (`--page raw`). Prints the median,
the first launch and the median of the others, in us, each line prefixed by LABEL.
Usage: durations.py LABEL < export.csv"""
import collections
import csv
import statistics
import sys

SCALE = {"nsecond": 1e-3, "ns": 1e-3, "usecond": 1.0, "us": 1.0, "msecond": 1e3, "ms": 1e3}
METRIC = "gpu__time_duration.sum"


def name_of(row):
    grid = row["Grid Size"].strip("()").split(",")[0]
    kernel = row["Kernel Name"]
    return kernel.split("(")[0] + (f"[GRID={grid}]" if "reduce" in kernel else "")


def durations(lines):
    """(kernel name, us) for every launch, in launch order; unknown units are reported and skipped."""
    rows = list(csv.DictReader(l for l in lines if l.startswith('"')))
    if rows and "Metric Value" in rows[0]:  # details page: one row per launch and metric
        for r in rows:
            if r.get("Metric Name") not in (None, METRIC):
                continue
            scale = SCALE.get(r["Metric Unit"])
            if scale is None:
                print(f"ncu: unit {r['Metric Unit']!r} not known, row skipped")
                continue
            yield name_of(r), float(r["Metric Value"].replace(",", "")) * scale
    elif rows and METRIC in rows[0]:  # raw page: a row of units, then one row per launch
        scale = SCALE.get(rows[0][METRIC])
        if scale is None:
            print(f"ncu: unit {rows[0][METRIC]!r} not known, export skipped")
            return
        for r in rows[1:]:
            yield name_of(r), float(r[METRIC].replace(",", "")) * scale
    else:
        print(f"ncu: no {METRIC} in the export")


def main():
    label = sys.argv[1] if len(sys.argv) > 1 else "ncu"
    by = collections.defaultdict(list)
    for name, us in durations(sys.stdin):
        by[name].append(us)
    for name, v in by.items():
        rest = f", median of the other {len(v) - 1} {statistics.median(v[1:]):8.2f} us" if len(v) > 1 else ""
        print(f"{label}  {name:24s}: median {statistics.median(v):8.2f} us ({len(v)} launches); first {v[0]:8.2f} us{rest}")


if __name__ == "__main__":
    main()
