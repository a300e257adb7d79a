"""The records of a gpu-lab run directory, for the scripts beside this file: `run.json` and each
line of `results.jsonl` (or `results.jsonl.gz`) that parses (a line cut short by a killed run is skipped, as gpu-lab does)."""
import gzip
import json
import os


def info(run):
    """The run's `run.json`."""
    with open(os.path.join(run, "run.json")) as f:
        return json.load(f)


def records(run, kind=None):
    """Each record of the run's `results.jsonl`, in order; only those of `kind` when given."""
    path = os.path.join(run, "results.jsonl")
    # Committed evidence keeps its results gzipped.
    opened = open(path, errors="replace") if os.path.exists(path) else gzip.open(path + ".gz", "rt", errors="replace")
    with opened as f:
        for line in f:
            try:
                v = json.loads(line)
            except ValueError:
                continue
            if kind is None or v.get("kind") == kind:
                yield v
