#!/usr/bin/env bash
# cupti2 round 2 (issue 31), final evidence. 1) `run` then `profile` (CUPTI, consecutive jobs
# sharing passes) of shared-memory on the same GPU, one after the other, cold L2 (the default);
# the run goes first and pays the kernel builds, so the profile's own cost is also read from its
# passes' phases (profile-*.cupti.json: child wall times). 2) `profile --profiler both` (CUPTI
# against ncu, every counter and metric) over two small suites (warp-divergence: branch set; compact: memory set). Budget 120 s.
set -u
O=/tmp/hs; mkdir -p $O
nvidia-smi --query-gpu=name,uuid,driver_version,clocks.sm,clocks.max.sm,power.limit --format=csv,noheader > $O/gpu.txt 2>&1
date -u +%FT%TZ >> $O/gpu.txt
t() { local name=$1 lim=$2; shift 2; local s=$(date +%s%N); timeout $lim "$@" > $O/$name.log 2>&1; local rc=$?; echo "$name rc=$rc $(( ($(date +%s%N) - s) / 1000000 )) ms: $*" >> $O/timings.txt; }
t sm-run 42 $B run --suite shared-memory --suite-dir kernels --color never --out $O/sm-run
t sm-profile 46 $B profile --suite shared-memory --suite-dir kernels --color never --out $O/sm-profile
t both-warp-divergence 14 $B profile --suite warp-divergence --suite-dir kernels --max-seconds 0.05 --profiler both --color never --out $O/both
t both-compact 14 $B profile --suite compact --suite-dir kernels --max-seconds 0.05 --profiler both --color never --out $O/both
find $O -name '*.ncu-rep' -delete
find $O -type d -name work -prune -exec rm -rf {} +
