#!/usr/bin/env bash
# cupti2 round 1b (issue 31). Round 1 (H200) showed: a pass costs ~55 ms whatever it holds
# (enable 8 us, session 0.2 s, child 0.75 s), and a kept range profiler killed the child. Now
# consecutive jobs sharing buffers share their passes. 1) the full shared-memory profile (CUPTI,
# batched; phases in profile-*.cupti.json); 2) three variants batched against one job a pass
# (GPU_LAB_CUPTI_JOBS_PER_PASS=1); 3) --profiler both on the same three. Budget 60 s.
set -u
O=/tmp/hs; mkdir -p $O
nvidia-smi --query-gpu=name,uuid,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader > $O/gpu.txt 2>&1
date -u +%FT%TZ >> $O/gpu.txt
t() { local name=$1 lim=$2; shift 2; local s=$(date +%s%N); timeout $lim "$@" > $O/$name.log 2>&1; local rc=$?; echo "$name rc=$rc $(( ($(date +%s%N) - s) / 1000000 )) ms: $*" >> $O/timings.txt; }
V=copy_row,row_write_col_read,transpose_fast
t sm-profile 32 $B profile --suite shared-memory --suite-dir kernels --color never --out $O/sm-profile
t three-batched 7 $B profile --suite shared-memory --suite-dir kernels --variant $V --max-seconds 0.05 --color never --out $O/three-batched
t three-alone 7 env GPU_LAB_CUPTI_JOBS_PER_PASS=1 $B profile --suite shared-memory --suite-dir kernels --variant $V --max-seconds 0.05 --color never --out $O/three-alone
t both 12 $B profile --suite shared-memory --suite-dir kernels --variant $V --max-seconds 0.05 --profiler both --color never --out $O/both
find $O -name '*.ncu-rep' -delete
