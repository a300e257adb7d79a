#!/usr/bin/env bash
# rowwise round 2 (issue 30 part 2): the persistent cluster rung at the long rows (1024 x 131072;
# the suite copied with its other two shapes removed), cold: bf16 (with the previous best bf16
# softmax rung, the 8-block cluster, in the same run), then f32 (with the previous best, the
# 16-block cluster), then ncu counters (metric set memory) of the persistent softmax, bf16 and f32.
# Budget 100 s: each long-row job ~5-6 s.
set -u
O=/tmp/hs; mkdir -p $O /tmp/k
cp -r kernels/rowwise /tmp/k/
sed -i '/{ R = 4096, C = 8192 },/d; /{ R = 32768, C = 1024 },/d' /tmp/k/rowwise/suite.toml
nvidia-smi --query-gpu=name,uuid,driver_version --format=csv,noheader > $O/gpu.txt 2>&1
date -u +%FT%TZ >> $O/gpu.txt
s=$(date +%s)
timeout 36 $B run --suite rowwise --suite-dir /tmp/k --variant softmax_cluster_bf16,softmax_persistent_bf16,softmax_persistent_rb2_bf16,layernorm_persistent_bf16,rmsnorm_persistent_bf16 --max-seconds 0.1 --timeout 12 --color never --out $O/r2a > $O/r2a.log 2>&1
echo "rc=$? $(( $(date +%s) - s )) s r2a (bf16)" >> $O/timings.txt
s=$(date +%s)
timeout 27 $B run --suite rowwise --suite-dir /tmp/k --variant softmax_cluster16,softmax_persistent,layernorm_persistent,rmsnorm_persistent --max-seconds 0.1 --timeout 12 --color never --out $O/r2b > $O/r2b.log 2>&1
echo "rc=$? $(( $(date +%s) - s )) s r2b (f32)" >> $O/timings.txt
s=$(date +%s)
timeout 28 $B profile --suite rowwise --suite-dir /tmp/k --variant softmax_persistent,softmax_persistent_bf16 --max-seconds 0.1 --timeout 15 --color never --out $O/r2c > $O/r2c.log 2>&1
echo "rc=$? $(( $(date +%s) - s )) s r2c (profile)" >> $O/timings.txt
find $O -name '*.ncu-rep' -delete
find $O -name 'profile-*.csv' -size +2M -exec gzip -9 {} \;
