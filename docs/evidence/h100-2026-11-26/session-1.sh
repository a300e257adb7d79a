#!/bin/bash
# Final evidence session (lead): merged binary; everything under /tmp/fin, packed into $OUT/fin.tgz.
set -u
scripts/unpack-binary.sh >/dev/null || exit 1
export GPU_LAB_DATA=/tmp/fin/data PATH=$PATH:/usr/local/cuda/bin
B=target/release/gpu-lab; O=/tmp/fin; mkdir -p $O/runs $O/logs
pack() { tar -C /tmp --exclude='*.ncu-rep' -czf $OUT/fin.tgz fin; }
trap pack EXIT
{ date -u +%FT%TZ; nvidia-smi --query-gpu=name,uuid,driver_version,clocks.sm,clocks.mem,power.draw,power.limit,temperature.gpu --format=csv; $B --version; } > $O/gpu.txt 2>&1
n=0
t() { n=$((n+1)); local s=$(date +%s%N); "$@" > $O/logs/$n.out 2> $O/logs/$n.err; local rc=$?; echo "$(( ($(date +%s%N)-s)/1000000 )) ms rc=$rc [$n]: $*" | tee -a $O/timings.txt; }
t $B run --suite trust-cheats --suite-dir tests/gpu --out $O/runs/trust
t $B run --suite cheats --suite-dir tests/gpu --out $O/runs/cheats
t $B run --suite sanitize-planted --suite-dir tests/gpu --sanitize memcheck,initcheck,synccheck,racecheck --sanitize-only --out $O/runs/sanitize
t $B run --suite shared-memory --out $O/runs/sm-run
t $B profile --suite shared-memory --profiler cupti --out $O/runs/sm-cupti
t $B profile --suite shared-memory --profiler ncu --out $O/runs/sm-ncu
t $B profile --suite shared-memory --profiler ncu --duration-runs 0 --out $O/runs/sm-ncu0
python3 scripts/cupti-crosscheck.py $O/runs/sm-cupti/*/ $O/runs/sm-ncu0/*/ --top 40 > $O/crosscheck-shared-memory.md 2>&1
t timeout 230 $B run --suite rowwise --max-seconds 0.3 --out $O/runs/rowwise
t timeout 90 $B run --suite all --sanitize memcheck --sanitize-only --out $O/runs/sanitize-all
t $B history --suite shared-memory --format md
date -u +%FT%TZ >> $O/gpu.txt
