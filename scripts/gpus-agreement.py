#!/usr/bin/env python3
# Each job's median in two runs of the same suites (a one-GPU run and a --gpus run, each a folder of
# run directories): how many jobs both have, which GPU ran each in the second, and |ratio - 1| of the
# medians (p50, p90, max) with the 95% intervals' overlap, for device-only jobs and for jobs that
# cross the host link apart; jobs more than 5% apart are listed. Usage: gpus-agreement.py ONE ALL
import os, sys

from run_records import info, records

def jobs(root):
    out = {}
    for d in sorted(os.listdir(root)):
        suite = info(os.path.join(root, d))["suite"]
        for v in records(os.path.join(root, d), "job"):
            if v.get("summary"):
                out[(suite, v["id"])] = v
    return out

one, both = jobs(sys.argv[1]), jobs(sys.argv[2])
common = sorted(set(one) & set(both))
per_gpu = {}
for k in both:
    per_gpu[both[k].get("gpu")] = per_gpu.get(both[k].get("gpu"), 0) + 1
print(f"jobs in both: {len(common)} (one GPU {len(one)}, --gpus {len(both)}); per GPU in --gpus: "
      + ", ".join(f"{g}: {n}" for g, n in sorted(per_gpu.items(), key=str)))
for linked in (False, True):
    keys = [k for k in common if bool(one[k].get("host_link")) == linked]
    if not keys:
        continue
    d = sorted(abs(both[k]["summary"]["median"] / one[k]["summary"]["median"] - 1) * 100 for k in keys)
    a, b = lambda k: one[k]["summary"], lambda k: both[k]["summary"]
    overlap = sum(1 for k in keys if a(k)["ci_low"] <= b(k)["ci_high"] and b(k)["ci_low"] <= a(k)["ci_high"])
    print(f"{'host-link' if linked else 'device-only'} jobs ({len(keys)}): |median(--gpus) / median(one GPU) - 1| "
          f"p50 {d[len(d) // 2]:.2f}%  p90 {d[int(len(d) * 0.9)]:.2f}%  max {d[-1]:.2f}%; 95% intervals overlap for {overlap}")
for k in common:
    r = both[k]["summary"]["median"] / one[k]["summary"]["median"] - 1
    if abs(r) > 0.05:
        print(f"   {r * 100:+.1f}%  {k[0]} {k[1]}  ({one[k]['summary']['median']:.4f} -> {both[k]['summary']['median']:.4f} ms, "
              f"{both[k].get('gpu')}{', host link' if one[k].get('host_link') else ''})")
