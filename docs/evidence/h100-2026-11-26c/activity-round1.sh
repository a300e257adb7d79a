#!/usr/bin/env bash
# Issue 31 part 2 (CUPTI Activity kernel durations in the timing child), round 1 on an H100.
# Run from an unpacked tree with the binary in $B; writes under /tmp/hs. Budget 150 s, most important first.
# Each step under its own timeout; cold cache (the default) throughout; --max-seconds 0.3 everywhere
# so that activity-on and activity-off sample alike.
set -u
O=/tmp/hs; mkdir -p $O
t() { local s=$(date +%s%N); local to=$1; shift; timeout -k 3 $to "$@" > $O/last.log 2>&1; local rc=$?;
      echo "$(( ($(date +%s%N)-s)/1000000 )) ms rc=$rc: $*" | tee -a $O/timings.txt; tail -3 $O/last.log >> $O/tails.txt; }
nvidia-smi --query-gpu=name,uuid,driver_version,power.limit --format=csv > $O/gpu.txt 2>&1
# 1. Activity on (the default) and ncu's gpu__time_duration in the same profile run (ncu's own duration session, 5 runs, asked for).
t 55 $B profile --suite shared-memory --suite-dir kernels --profiler ncu --duration-runs 5 --max-seconds 0.3 --out $O/sm-ncu
# 2. Overhead: the same suite with activity off, then on (raw records dumped as fixtures).
t 25 $B run --suite shared-memory --suite-dir kernels --max-seconds 0.3 --no-activity --out $O/sm-off
t 25 $B run --suite shared-memory --suite-dir kernels --max-seconds 0.3 --activity-dump $O/fixtures --out $O/sm-on
# 3. The default profile (CUPTI counters; duration from the activity records, no ncu session).
t 30 $B profile --suite shared-memory --suite-dir kernels --max-seconds 0.3 --out $O/sm-cupti
# 4. Reduction (many short kernels: graph timing) the same way, if time is left.
t 25 $B run --suite reduction --suite-dir kernels --max-seconds 0.3 --no-activity --out $O/red-off
t 25 $B run --suite reduction --suite-dir kernels --max-seconds 0.3 --out $O/red-on
# Keep what comes back small: the run directories' results and run.json only.
find $O -name '*.ncu-rep' -delete; find $O -path '*/work/*' -delete 2>/dev/null
du -sh $O; cat $O/timings.txt
for f in $O/*/*/results.jsonl; do echo "== $f"; grep -o '"activity":{"samples_ms":\[[^]]\{0,40\}\|"activity":{"kernels[^}]*}' $f | head -4; done > $O/activity-peek.txt 2>&1
