#!/usr/bin/env bash
# Checks the register-staged SIMT kernels of kernels/matmul/simt.cu on the CPU, without a GPU:
# every thread_tile_16x8, warptiled_8w, warptiled_8w_lean and multistage configuration of the suite, at shapes with tails in
# M, N and K (K not a multiple of 4 or of BK, N odd). Needs g++ with C++20 (std::barrier).
# multistage and warptiled_8w_lean's cp.async copies run as plain copies (simt.cu without
# __CUDA_ARCH__). Usage: scripts/matmul-host-check/run.sh
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
suite="$here/../../kernels/matmul"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
status=0
shapes=("300 260 72" "257 253 37" "128 128 16" "513 129 9")
check() { # kernel BM BN threads defines... (the shapes in $shapes)
  local kernel=$1 bm=$2 bn=$3 threads=$4
  shift 4
  g++ -std=c++20 -O1 -fno-strict-aliasing -w -pthread -I"$suite" -DKERNEL="$kernel" "$@" -o "$tmp/check" "$here/main.cpp"
  for shape in "${shapes[@]}"; do
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
# warptiled_8w_lean: the lean loop where K % BK == 0 and N % 4 == 0 (edge blocks clamped: the
# 300 x 260 and 200 x 132 shapes, K 96 and 48), the checked loop elsewhere.
shapes+=("300 260 96" "200 132 48")
for cfg in "8 2 0 0 0 0" "8 2 0 1 0 0" "8 2 4 0 0 0" "8 2 0 1 1 0" "8 2 0 0 1 0" "8 2 0 1 0 1" "16 2 0 1 0 0" "16 1 0 1 0 0" \
  "16 2 4 1 0 0" "16 2 0 1 1 0" "16 1 0 1 1 0" "16 1 0 0 1 0" "16 1 0 1 0 1" "16 2 0 1 0 1" "16 1 4 1 2 0" "16 1 4 1 2 1" \
  "16 2 4 1 2 1" "16 1 4 0 2 0" "8 2 4 0 0 1" "8 2 4 1 2 0" "16 1 0 1 0 2" "8 2 0 0 0 2"; do
  read -r bk frags pad b_async a_across serp <<<"$cfg"
  check mm_warptiled_8w_lean 128 128 256 -DBUILD_ONLY=12 -DBK="$bk" -DFRAGS="$frags" -DPAD="$pad" -DB_ASYNC="$b_async" -DA_ACROSS="$a_across" -DSERP="$serp"
done
for cfg in "8 3" "16 2" "16 3"; do
  read -r bk stages <<<"$cfg"
  check mm_multistage 128 128 256 -DBUILD_ONLY=11 -DBK="$bk" -DSTAGES="$stages"
done
exit $status
