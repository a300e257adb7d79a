#!/usr/bin/env python3
"""The launch statistics gpu-lab computes against ncu's (issue 31 item 3): from the runs of
`gpu-lab profile --profiler both`, every comparison of a computed name (launch__*,
sm__maximum_warps_*) and of the metrics made of them, per suite and per name.

Usage: scripts/launch-crosscheck.py RUN_DIR...

Prints markdown: per suite and per name, the values compared, equal and within 1%, then every
computed value that is not equal. Reads each run's `profile-N.crosscheck.json`.
"""
import glob
import json
import os
import sys

METRICS = {
    "registers_per_thread", "occupancy_limit_registers", "occupancy_limit_shared_mem",
    "occupancy_limit_block_size", "occupancy_limit_blocks", "theoretical_occupancy",
    "cluster_size", "cluster_max_active", "cluster_residency",
}


def computed(name):
    return name.startswith("launch__") or name.startswith("sm__maximum_warps_") or name in METRICS


def tally(diffs):
    return (len(diffs), sum(d["relative"] == 0 for d in diffs), sum(d["relative"] <= 0.01 for d in diffs))


def main(runs):
    by_suite, by_name, unequal = {}, {}, []
    for run in runs:
        with open(os.path.join(run, "run.json")) as f:
            suite = json.load(f).get("suite", os.path.basename(run))
        for path in sorted(glob.glob(os.path.join(run, "*.crosscheck.json"))):
            with open(path) as f:
                for d in json.load(f)["differences"]:
                    if not computed(d["name"]):
                        continue
                    by_suite.setdefault(suite, []).append(d)
                    by_name.setdefault((d["kind"], d["name"]), []).append(d)
                    if d["relative"] != 0:
                        unequal.append((suite, d))
    every = [d for ds in by_suite.values() for d in ds]
    n, eq, within = tally(every)
    print("# Computed launch statistics against ncu's\n")
    print(f"- {len(by_suite)} suites; {n} values compared, {eq} equal, {within} within 1%\n")
    print("| suite | compared | equal | within 1% |\n| --- | --- | --- | --- |")
    for suite, ds in sorted(by_suite.items()):
        print("| {} | {} | {} | {} |".format(suite, *tally(ds)))
    print("\n| kind | name | compared | equal | within 1% |\n| --- | --- | --- | --- | --- |")
    for (kind, name), ds in sorted(by_name.items()):
        print("| {} | `{}` | {} | {} | {} |".format(kind, name, *tally(ds)))
    print(f"\n## Not equal ({len(unequal)})\n")
    if unequal:
        print("| suite | job | name | gpu-lab | ncu | difference |\n| --- | --- | --- | --- | --- | --- |")
        for suite, d in sorted(unequal, key=lambda x: -x[1]["relative"]):
            print(f"| {suite} | {d['job']} | `{d['name']}` | {d['cupti']} | {d['ncu']} | {100 * d['relative']:.3f}% |")
    else:
        print("None.")


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    main(sys.argv[1:])
