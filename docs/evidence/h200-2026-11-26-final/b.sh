#!/bin/bash
# Final session B: rowwise (profile, cold) and the sanitize-only catalogue (memcheck, initcheck, synccheck), batched.
set -u
bash scripts/unpack-binary.sh >/dev/null 2>&1 || { mkdir -p target/release; xz -dc .carry/final/gpu-lab.xz > target/release/gpu-lab; chmod +x target/release/gpu-lab; }
B=$PWD/target/release/gpu-lab; O=/tmp/o; mkdir -p $O
{ date -u +%FT%TZ; nvidia-smi --query-gpu=name,uuid,driver_version,clocks.sm,clocks.mem,power.limit,temperature.gpu --format=csv; sha256sum $B; } > $O/gpu.txt 2>&1
pack() { tar -C $O --exclude='*.ncu-rep' -czf $OUT/b.tgz .; }
t() { local name=$1 lim=$2; shift 2; local s=$(date +%s); timeout -k 5 $lim "$@" > $O/$name.log 2>&1; echo "$name rc=$? $(( $(date +%s)-s )) s $(date -u +%T): $*" >> $O/timings.txt; pack; }
t rowwise ${RW_LIMIT:-330} $B ${RW_CMD:-profile} --suite rowwise --color never --out $O/rowwise
t sanitize ${SAN_LIMIT:-200} $B run --suite all --sanitize memcheck,initcheck,synccheck --sanitize-only --color never --out $O/sanitize
t both 40 $B profile --suite warp-divergence --max-seconds 0.05 --profiler both --color never --out $O/both
cat $O/timings.txt
