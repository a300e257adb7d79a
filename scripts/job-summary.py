#!/usr/bin/env python3
"""One line per job of each run directory named: id, status, median ms, timing method, error (the device scripts' logs)."""
import os
import sys

from run_records import records

for run in sys.argv[1:]:
    if not os.path.isfile(os.path.join(run, "results.jsonl")):
        continue
    print(f"== {os.path.basename(os.path.normpath(run))}")
    for v in records(run, "job"):
        s = v.get("summary") or {}
        c = v.get("check") or {}
        method = "graph" if v.get("timing_method", "").startswith("CUDA graph") else "events"
        err = " | ".join((v.get("error") or "").splitlines()[:8])
        extra = f' rel_err {c["rel_error"]:.2e}' if "rel_error" in c else ""
        print(f'{v["id"][:64]:64} {v["status"]:9} {s.get("median", float("nan")):9.4f} ms {method}{extra} {v.get("compilers", [])} {err}'.rstrip())
