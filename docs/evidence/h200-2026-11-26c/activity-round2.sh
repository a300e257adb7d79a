#!/usr/bin/env bash
# Issue 31 part 2, round 2 on an H200 (budget 120 s): the agreement of CUPTI Activity kernel durations
# with ncu's gpu__time_duration, and what collecting them costs the event times. Round 1 (H100) found
# CUPTI's activity (software instrumentation before Blackwell) slows kernels by ~4%, so activity is now
# taken in extra samples after the event samples (the default); --activity-during is the old way.
# Run from an unpacked tree with the binary in $B; writes under /tmp/hs. Cold cache (the default).
set -u
O=/tmp/hs; mkdir -p $O
t() { local s=$(date +%s%N); local to=$1; shift; timeout -k 3 $to "$@" > $O/last.log 2>&1; local rc=$?;
      echo "$(( ($(date +%s%N)-s)/1000000 )) ms rc=$rc: $*" | tee -a $O/timings.txt; tail -3 $O/last.log >> $O/tails.txt; }
nvidia-smi --query-gpu=name,uuid,driver_version,power.limit --format=csv > $O/gpu.txt 2>&1
# 1. ncu's duration (own session, 5 runs) and the activity durations (after the event samples) of the same jobs.
t 52 $B profile --suite shared-memory --suite-dir kernels --profiler ncu --duration-runs 5 --max-seconds 0.3 --out $O/sm-ncu
# 2. The event times with no activity at all (does activity-after leave them alone?).
t 30 $B run --suite shared-memory --suite-dir kernels --max-seconds 0.3 --no-activity --out $O/sm-off
# 3. Activity during the event samples (the H100's perturbation, on the H200).
t 30 $B run --suite shared-memory --suite-dir kernels --max-seconds 0.3 --activity-during --out $O/sm-during
find $O -name '*.ncu-rep' -delete
du -sh $O; cat $O/timings.txt
