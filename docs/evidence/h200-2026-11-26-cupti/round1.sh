#!/usr/bin/env bash
# cuptirun round 1 (issue 31 parts 3-4 and the --suite all target), budget 600 s, one GPU.
# 1) the counters of the whole catalogue, CUPTI, every shape (`profile --counters-only`): what
#    `profile --suite all` spends beyond `run --suite all` (each pass's phases in
#    profile-N.cupti.json); 2) `--profiler both` over every suite at its smallest shape, in
#    three parts so that a cut loses one part only; 3) batching: the 8192^2 shared-memory group
#    with its 15 jobs in one configuration against one job a pass; 4) run and profile of
#    shared-memory (profile / run), only if time is left. Cold L2 (the default) throughout.
set -u
O=/tmp/hs; mkdir -p $O
START=$(date +%s)
nvidia-smi --query-gpu=name,uuid,driver_version,clocks.sm,clocks.max.sm,power.limit --format=csv,noheader > $O/gpu.txt 2>&1
date -u +%FT%TZ >> $O/gpu.txt
sha256sum $B >> $O/gpu.txt
# t NAME LIMIT CMD...: runs CMD under min(LIMIT, what is left of 585 s), logs wall and exit code.
t() {
  local name=$1 lim=$2; shift 2
  local left=$(( START + 585 - $(date +%s) ))
  if [ $left -lt 10 ]; then echo "$name skipped: ${left} s left" >> $O/timings.txt; return; fi
  [ $lim -gt $left ] && lim=$left
  local s=$(date +%s%N)
  timeout $lim "$@" > $O/$name.log 2>&1
  local rc=$?
  echo "$name rc=$rc $(( ($(date +%s%N) - s) / 1000000 )) ms (limit ${lim} s, $(date -u +%T) UTC): $*" >> $O/timings.txt
}
K="--suite-dir kernels --color never"
t all-counters 170 $B profile --suite all $K --counters-only --duration-runs 0 --timeout 60 --out $O/all-counters
t both-a 130 $B profile --suite atomics,cluster,compact,constant-memory,dynamic-parallelism,gemv,global-memory,half-precision $K --shape smallest --counters-only --profiler both --duration-runs 0 --timeout 60 --out $O/both
t both-b 130 $B profile --suite intrinsics,matmul,nvprof-probes,occupancy,reduction,scan,search-sort,sgemm-tutorial,shared-memory $K --shape smallest --counters-only --profiler both --duration-runs 0 --timeout 60 --out $O/both
t both-c 130 $B profile --suite streams,tensor-gemm,tma,transfers,transpose,warp-divergence,warp-shuffle,rowwise $K --shape smallest --counters-only --profiler both --duration-runs 0 --timeout 60 --out $O/both
t batch-15 30 $B profile --suite shared-memory $K --shape NX=8192,NY=8192 --counters-only --duration-runs 0 --out $O/batch-15
t batch-1 40 env GPU_LAB_CUPTI_JOBS_PER_PASS=1 $B profile --suite shared-memory $K --shape NX=8192,NY=8192 --counters-only --duration-runs 0 --out $O/batch-1
t sm-run 45 $B run --suite shared-memory $K --out $O/sm-run
t sm-profile 50 $B profile --suite shared-memory $K --out $O/sm-profile
find $O -name '*.ncu-rep' -delete
find $O -type d -name work -prune -exec rm -rf {} +
find $O -name 'results.jsonl' -size +200k -exec gzip -9 -n {} \;
du -sh $O >> $O/timings.txt
