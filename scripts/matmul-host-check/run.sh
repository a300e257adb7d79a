#!/usr/bin/env bash
# Checks the register-staged SIMT kernels of kernels/matmul/simt.cu on the CPU, without a GPU:
# every thread_tile_16x8 and warptiled_8w configuration of the suite, at shapes with tails in
# M, N and K (K not a multiple of 4 or of BK, N odd). Needs g++ with C++20 (std::barrier).
# multistage is not covered (cp.async is inline PTX). Usage: scripts/matmul-host-check/run.sh
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
suite="$here/../../kernels/matmul"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
status=0
check() { # kernel BM BN threads defines...
  local kernel=$1 bm=$2 bn=$3 threads=$4
  shift 4
  g++ -std=c++20 -O1 -fno-strict-aliasing -w -pthread -I"$suite" -DKERNEL="$kernel" "$@" -o "$tmp/check" "$here/main.cpp"
  for shape in "300 260 72" "257 253 37" "128 128 16" "513 129 9"; do
    read -r m n k <<<"$shape"
    printf '%s %s: ' "$kernel" "$*"
    "$tmp/check" "$m" "$n" "$k" $(((n + bn - 1) / bn)) $(((m + bm - 1) / bm)) "$threads" || status=1
  done
}
for cfg in "256 128 8 2 0" "256 128 8 2 4" "128 256 8 2 4" "128 128 8 2 4" "256 128 16 1 0" "128 128 16 1 4"; do
  read -r bm bn bk frags pad <<<"$cfg"
  check mm_thread_tile_16x8 "$bm" "$bn" $((bm * bn / 128)) -DBUILD_ONLY=10 -DBM="$bm" -DBN="$bn" -DBK="$bk" -DFRAGS="$frags" -DPAD="$pad"
done
check mm_thread_tile_16x8 256 128 256 -DBUILD_ONLY=10 -DBM=256 -DBN=128 -DBK=16 -DFRAGS=1 -DPAD=0 -DK_UNROLL=4
for cfg in "16 1 1" "8 1 2" "8 8 2"; do
  read -r bk group frags <<<"$cfg"
  check mm_warptiled_8w 128 128 256 -DBUILD_ONLY=9 -DBK="$bk" -DGROUP="$group" -DFRAGS="$frags"
done
exit $status
