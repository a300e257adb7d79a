// Shared by the probes of scripts/tlb-probe: the transpose suite's copy_row, copy_column and
// naive_row (and a table of them), gpu-lab's L2 eviction kernel and flush buffer, the two shapes,
// and a kernel that loads one word per page.
#pragma once
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>
#include <algorithm>
#include <cuda_runtime.h>
#define CK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { fprintf(stderr, "%s: %s\n", #x, cudaGetErrorString(e)); exit(1); } } while (0)

extern "C" __global__ void copy_row(const float* __restrict__ in, float* __restrict__ out, int nx, int ny) {
  int ix = blockIdx.x * blockDim.x + threadIdx.x, iy = blockIdx.y * blockDim.y + threadIdx.y;
  if (ix < nx && iy < ny) { size_t i = (size_t)iy * nx + ix; out[i] = in[i]; }
}
extern "C" __global__ void copy_column(const float* __restrict__ in, float* __restrict__ out, int nx, int ny) {
  int ix = blockIdx.x * blockDim.x + threadIdx.x, iy = blockIdx.y * blockDim.y + threadIdx.y;
  if (ix < nx && iy < ny) { size_t i = (size_t)ix * ny + iy; out[i] = in[i]; }
}
extern "C" __global__ void naive_row(const float* __restrict__ in, float* __restrict__ out, int nx, int ny) {
  int ix = blockIdx.x * blockDim.x + threadIdx.x, iy = blockIdx.y * blockDim.y + threadIdx.y;
  if (ix < nx && iy < ny) out[(size_t)ix * ny + iy] = in[(size_t)iy * nx + ix];
}
__global__ void evict(const float4* __restrict__ b, unsigned long long n4, float* sink) {
  float acc = 0.f;
  for (unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x; i < n4; i += (unsigned long long)gridDim.x * blockDim.x) { float4 v = b[i]; acc += v.x + v.y + v.z + v.w; }
  if (acc == -1.f) *sink = acc;
}
// One load per `stride` bytes: a page's translation, one sector of L2.
__global__ void touch(const char* __restrict__ b, unsigned long long bytes, unsigned long long stride, float* sink) {
  float acc = 0.f;
  for (unsigned long long i = (blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x) * stride; i < bytes; i += (unsigned long long)gridDim.x * blockDim.x * stride) acc += b[i];
  if (acc == -1.f) *sink = acc;
}

typedef void (*Kernel)(const float*, float*, int, int);
struct NamedKernel { const char* name; Kernel k; };
static const NamedKernel kKernels[] = {{"copy_row", copy_row}, {"copy_column", copy_column}, {"naive_row", naive_row}};
struct Shape { int nx, ny; };
// The two transpose shapes where gpu-lab's cold event time exceeded ncu's on H100s.
static const Shape kShapes[] = {{16384, 16384}, {1024, 2048}};

// gpu-lab's cold-timing flush: a zeroed buffer of twice the L2 size with 16 bytes of sink after it.
struct Flush {
  char* buf;
  size_t bytes;
  float* sink() const { return (float*)(buf + bytes); }
  // gpu-lab's read eviction: the whole buffer read through L2, on the default stream.
  void evict() const { ::evict<<<132 * 8, 256>>>((const float4*)buf, bytes / 16, sink()); }
};
static size_t flush_bytes() {
  int l2; CK(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, 0));
  return 2 * (size_t)l2;
}
// The flush buffer from cudaMalloc, zeroed.
static Flush make_flush() {
  Flush f{nullptr, flush_bytes()};
  CK(cudaMalloc(&f.buf, f.bytes + 16)); CK(cudaMemset(f.buf, 0, f.bytes + 16));
  return f;
}
