#!/usr/bin/env bash
# On the GPU host: unpacks the carried release binary (.carry/gpu-lab.xz, made here with
# `xz -9 -T0 -c target/release/gpu-lab > .carry/gpu-lab.xz`, or .carry/gpu-lab.gz) to
# target/release/gpu-lab, with xz or, where the host has none, Python's lzma module.
set -euo pipefail
mkdir -p target/release
out=target/release/gpu-lab
if [ -f .carry/gpu-lab.xz ]; then
  if command -v xz > /dev/null; then
    xz -dc .carry/gpu-lab.xz > "$out"
  else
    python3 -c 'import lzma, shutil, sys; shutil.copyfileobj(lzma.open(sys.argv[1]), open(sys.argv[2], "wb"))' .carry/gpu-lab.xz "$out"
  fi
elif [ -f .carry/gpu-lab.gz ]; then
  gunzip -c .carry/gpu-lab.gz > "$out"
else
  echo "no .carry/gpu-lab.xz or .carry/gpu-lab.gz: build and compress the binary first (README, 'Working on gpu-lab without a GPU')" >&2
  exit 2
fi
chmod +x "$out"
"$out" --version
