#!/usr/bin/env bash
# What the GPU host's CUDA toolkit offers a kernel build: nvcc, its headers (CCCL layout), and whether nvcc instantiates a template kernel named only by its address.
set -u
OUT=${OUT:-/tmp/probe}; mkdir -p "$OUT"
exec > >(tee "$OUT/toolkit-probe.log") 2>&1
date -u; nvidia-smi -L
command -v nvcc cu++filt cuobjdump ncu
nvcc --version
echo "CUDA_HOME=${CUDA_HOME:-} CUDA_PATH=${CUDA_PATH:-}"
NVCC_DIR=$(dirname "$(readlink -f "$(command -v nvcc)")")
INC="$NVCC_DIR/../include"; echo "include: $(readlink -f "$INC")"
ls "$INC" | head -80
ls -d "$INC"/cccl "$INC"/cccl/* "$INC"/cub "$INC"/cuda/std 2>&1 | head
ldconfig -p | grep -E 'nvrtc|libcuda\.so'
ls "$(readlink -f "$INC/..")"/lib64 2>/dev/null | grep -i nvrtc
cd "$(mktemp -d)"
cat > t.cu <<'CU'
#include <cassert>
#include <cstdio>
#include <cuda_fp16.h>
namespace wt { template <int BM, typename T> __global__ void __launch_bounds__(128) gemm(int n, T* x) { int i = blockIdx.x * BM + threadIdx.x; if (i < n) x[i] = x[i] * (T)2; } }
template <int BM, typename T> __global__ void scale(int n, T* x) { int i = blockIdx.x * BM + threadIdx.x; if (i < n) x[i] = x[i] * (T)2; }
static void* gpu_lab_kernel_0 = (void*)&wt::gemm<64, float>;
static void* gpu_lab_kernel_1 = (void*)&scale<128, __half>;
CU
nvcc -cubin -arch=sm_90 -o t.cubin t.cu && cuobjdump -elf t.cubin | grep -E 'FUNC|\.text' | head -20
cuobjdump -symbols t.cubin 2>&1 | head -20
cu++filt _ZN2wt4gemmILi64EfEEviPT0_ _Z5scaleILi128E6__halfEviPT0_
