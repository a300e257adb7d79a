#!/usr/bin/env bash
# cupti2 round 1 (issue 31): where the profile's extra time goes. The CUPTI pass now records its
# phases (child wall, CUPTI load, session, per job: module, buffers, first run, enable, configure,
# prepare, passes, decode, evaluate) in each run dir's *.cupti.json; the range profiler is kept
# enabled from job to job. Then several ranges a pass against one (scan, 3 launches a job; the
# suite copied with its 2^27 size removed). `--profiler both` on 3 variants. Budget 60 s:
# shared-memory profile ~30 s first.
set -u
O=/tmp/hs; mkdir -p $O /tmp/k
cp -r kernels/scan /tmp/k/
sed -i 's/^N = \[16777216, 10000019, 134217728\]/N = [16777216, 10000019]/' /tmp/k/scan/suite.toml
grep '^N = ' /tmp/k/scan/suite.toml > $O/scan-axis.txt
nvidia-smi --query-gpu=name,uuid,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader > $O/gpu.txt 2>&1
date -u +%FT%TZ >> $O/gpu.txt
t() { local name=$1 lim=$2; shift 2; local s=$(date +%s%N); timeout $lim "$@" > $O/$name.log 2>&1; local rc=$?; echo "$name rc=$rc $(( ($(date +%s%N) - s) / 1000000 )) ms: $*" >> $O/timings.txt; }
t sm-profile 34 $B profile --suite shared-memory --suite-dir kernels --color never --out $O/sm-profile
t both 9 $B profile --suite shared-memory --suite-dir kernels --variant copy_row,row_write_col_read,transpose_fast --max-seconds 0.05 --profiler both --color never --out $O/both
t scan-all 8 $B profile --suite scan --suite-dir /tmp/k --variant blelloch --max-seconds 0.05 --color never --out $O/scan-all
t scan-one 8 env GPU_LAB_CUPTI_MAX_RANGES_PER_PASS=1 $B profile --suite scan --suite-dir /tmp/k --variant blelloch --max-seconds 0.05 --color never --out $O/scan-one
find $O -name '*.ncu-rep' -delete
