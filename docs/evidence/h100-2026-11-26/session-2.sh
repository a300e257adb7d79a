#!/bin/bash
# Second evidence session (lead): sanitize (fixed), a complete rowwise run. Packed into $OUT/fin2.tgz.
set -u
cp .carry/fin/gpu-lab.xz .carry/gpu-lab.xz; scripts/unpack-binary.sh >/dev/null || exit 1
export GPU_LAB_DATA=/tmp/fin2/data PATH=$PATH:/usr/local/cuda/bin
B=target/release/gpu-lab; O=/tmp/fin2; mkdir -p $O/runs $O/logs
pack() { tar -C /tmp --exclude='*.ncu-rep' -czf $OUT/fin2.tgz fin2; }
trap pack EXIT
{ date -u +%FT%TZ; nvidia-smi --query-gpu=name,uuid,driver_version,clocks.sm,clocks.mem,power.draw,power.limit,temperature.gpu --format=csv; compute-sanitizer --version | tail -1; } > $O/gpu.txt 2>&1
n=0
t() { n=$((n+1)); local s=$(date +%s%N); "$@" > $O/logs/$n.out 2> $O/logs/$n.err; local rc=$?; echo "$(( ($(date +%s%N)-s)/1000000 )) ms rc=$rc [$n]: $*" | tee -a $O/timings.txt; }
t $B run --suite sanitize-planted --suite-dir tests/gpu --sanitize memcheck,initcheck,synccheck,racecheck --sanitize-only --out $O/runs/sanitize
t timeout 300 $B run --suite rowwise --max-seconds 0.2 --out $O/runs/rowwise
t timeout 170 $B run --suite all --sanitize memcheck,initcheck,synccheck --sanitize-only --out $O/runs/sanitize-all
t timeout 60 $B run --suite shared-memory,reduction,transpose --sanitize racecheck --sanitize-only --out $O/runs/racecheck
date -u +%FT%TZ >> $O/gpu.txt
