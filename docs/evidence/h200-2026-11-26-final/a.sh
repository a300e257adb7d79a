#!/bin/bash
# Final H200 session A (2026-11-26): the merged binary; tensor-gemm (run), tma + cluster (profile), planted sanitize,
# shared-memory run vs profile. Everything under /tmp/o, packed into $OUT/a.tgz after each step.
set -u
bash scripts/unpack-binary.sh >/dev/null 2>&1 || { mkdir -p target/release; xz -dc .carry/final/gpu-lab.xz > target/release/gpu-lab; chmod +x target/release/gpu-lab; }
B=$PWD/target/release/gpu-lab; O=/tmp/o; mkdir -p $O
{ date -u +%FT%TZ; nvidia-smi --query-gpu=name,uuid,driver_version,clocks.sm,clocks.mem,power.limit,temperature.gpu --format=csv; sha256sum $B; } > $O/gpu.txt 2>&1
pack() { tar -C $O --exclude='*.ncu-rep' -czf $OUT/a.tgz .; }
t() { local name=$1 lim=$2; shift 2; local s=$(date +%s); timeout -k 5 $lim "$@" > $O/$name.log 2>&1; echo "$name rc=$? $(( $(date +%s)-s )) s $(date -u +%T): $*" >> $O/timings.txt; pack; }
t tg 185 $B run --suite tensor-gemm --max-seconds 0.2 --timeout 25 --color never --out $O/tg
t tma 60 $B profile --suite tma --max-seconds 0.5 --duration-runs 0 --color never --out $O/tma
t cluster 115 $B profile --suite cluster --max-seconds 0.5 --duration-runs 0 --color never --out $O/cluster
t planted 40 $B run --suite sanitize-planted --suite-dir tests/gpu --sanitize memcheck,initcheck,synccheck,racecheck --sanitize-only --color never --out $O/planted
t sm-run 60 $B run --suite shared-memory --color never --out $O/sm-run
t sm-profile 80 $B profile --suite shared-memory --color never --out $O/sm-profile
cat $O/timings.txt
