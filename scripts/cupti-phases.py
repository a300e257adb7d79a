#!/usr/bin/env python3
"""Where a profile's CUPTI time goes, over many runs (issue 31): the phases every `__cupti` child
wrote into `profile-N.cupti.json`, summed per run and over all.

Usage: scripts/cupti-phases.py RUN_DIR...

Per run (suite): the run's wall time (run.json), the number of CUPTI children (passes), their
wall time from start to exit as the parent saw it (`child_wall_s`), of which the CUPTI session
(`session_s`: host object, context, counter availability) and the jobs (`jobs_s`); within the
jobs, the modules, buffers, first runs and the collections' replay passes (`passes_s`) and the
rest (configure, decode, evaluate, enable, disable); the child's start (process, CUDA context,
loading libcupti) is child_wall_s - session_s - jobs_s. Also how many profile records were not
CUPTI's (a pass that went to ncu, with why) and how many jobs shared a pass.
"""
import glob
import json
import os
import sys

COLUMNS = [
    "wall", "children", "child_wall", "start", "session", "jobs", "load", "buffers",
    "first_run", "passes", "collect_rest", "jobs_n", "ncu_records",
]


def run_phases(run):
    row = dict.fromkeys(COLUMNS, 0.0)
    with open(os.path.join(run, "run.json")) as f:
        info = json.load(f)
    row["suite"] = info.get("suite", os.path.basename(run))
    row["wall"] = info.get("wall_seconds") or 0.0
    for path in sorted(glob.glob(os.path.join(run, "profile-*.cupti.json"))):
        with open(path) as f:
            d = json.load(f)
        p = d.get("phases") or {}
        row["children"] += 1
        row["child_wall"] += p.get("child_wall_s") or 0.0
        row["session"] += p.get("session_s") or 0.0
        row["jobs"] += p.get("jobs_s") or 0.0
        row["start"] += (p.get("child_wall_s") or 0.0) - (p.get("session_s") or 0.0) - (
            p.get("jobs_s") or 0.0
        )
        for job in d.get("jobs", []):
            row["jobs_n"] += 1
            jp = job.get("phases") or {}
            row["load"] += jp.get("load_s") or 0.0
            row["buffers"] += jp.get("buffers_s") or 0.0
            row["first_run"] += jp.get("first_run_s") or 0.0
            ok = (job.get("collected") or {}).get("Ok") or {}
            cp = ok.get("phases") or {}
            # Jobs sharing a pass each carry the same collection's phases: count them once.
            share = 1.0 / max(1, cp.get("jobs_in_pass") or 1)
            row["passes"] += share * (cp.get("passes_s") or 0.0)
            row["collect_rest"] += share * sum(
                cp.get(k) or 0.0
                for k in ("enable_s", "configure_s", "prepare_s", "decode_s", "evaluate_s", "disable_s")
            )
    results = os.path.join(run, "results.jsonl")
    if os.path.exists(results):
        with open(results) as f:
            for line in f:
                r = json.loads(line)
                if r.get("kind") == "profile" and not str(r.get("profiler") or "").startswith("cupti"):
                    row["ncu_records"] += 1
    return row


def main(runs):
    if not runs:
        sys.exit(__doc__)
    rows = [run_phases(r) for r in runs]
    total = {c: sum(r[c] for r in rows) for c in COLUMNS}
    total["suite"] = "**all**"
    print("| suite | " + " | ".join(COLUMNS) + " |")
    print("| --- " * (len(COLUMNS) + 1) + "|")
    for r in sorted(rows, key=lambda r: r["suite"]) + [total]:
        cells = [f"{int(r[c])}" if c in ("children", "jobs_n", "ncu_records") else f"{r[c]:.2f}" for c in COLUMNS]
        print(f"| {r['suite']} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main(sys.argv[1:])
