//! synccheck probe: the two patterns compute-sanitizer flagged in siboehm's SGEMM kernels 11 and 12, each beside a control.
// Build: nvcc -O3 -lineinfo -arch=sm_90 -o synccheck_probe synccheck_probe.cu
// Run:   compute-sanitizer --tool synccheck ./synccheck_probe KERNEL   (KERNEL: split, joined, async, plain, group)
#include <cooperative_groups.h>
#include <cuda/barrier>
#include <cstdio>
#include <cstring>
namespace cg = cooperative_groups;
constexpr int T = 128, TILES = 8;

// Kernel 11's shape: the two halves of the block reach __syncthreads() at different lines, the
// same number of times (two a step in each branch, one after).
__global__ void split(const float* in, float* out) {
  __shared__ float s[T];
  float acc = 0.f;
  for (int t = 0; t < TILES; ++t) {
    if (threadIdx.x < T / 2) {
      s[threadIdx.x] = in[t * T + threadIdx.x];
      __syncthreads();
      acc += s[(threadIdx.x + 1) % T];
      __syncthreads();
    } else {
      s[threadIdx.x] = in[t * T + threadIdx.x];
      __syncthreads();
      acc += s[(threadIdx.x + 1) % T];
      __syncthreads();
    }
  }
  out[blockIdx.x * T + threadIdx.x] = acc;
}

// Control: the same work, each barrier once, outside the branch.
__global__ void joined(const float* in, float* out) {
  __shared__ float s[T];
  float acc = 0.f;
  for (int t = 0; t < TILES; ++t) {
    s[threadIdx.x] = in[t * T + threadIdx.x];
    __syncthreads();
    acc += s[(threadIdx.x + 1) % T];
    __syncthreads();
  }
  out[blockIdx.x * T + threadIdx.x] = acc;
}

// Kernel 12's pattern: per-thread cuda::memcpy_async into a cuda::barrier, then arrive_and_wait.
__global__ void async(const float* in, float* out) {
  __shared__ float s[T];
  __shared__ cuda::barrier<cuda::thread_scope_block> bar;
  if (threadIdx.x == 0) init(&bar, blockDim.x);
  __syncthreads();
  float acc = 0.f;
  for (int t = 0; t < TILES; ++t) {
    cuda::memcpy_async(&s[threadIdx.x], &in[t * T + threadIdx.x], cuda::aligned_size_t<4>(4), bar);
    bar.arrive_and_wait();
    acc += s[(threadIdx.x + 1) % T];
    bar.arrive_and_wait();
  }
  out[blockIdx.x * T + threadIdx.x] = acc;
}

// Control: the same barrier, plain stores instead of memcpy_async.
__global__ void plain(const float* in, float* out) {
  __shared__ float s[T];
  __shared__ cuda::barrier<cuda::thread_scope_block> bar;
  if (threadIdx.x == 0) init(&bar, blockDim.x);
  __syncthreads();
  float acc = 0.f;
  for (int t = 0; t < TILES; ++t) {
    s[threadIdx.x] = in[t * T + threadIdx.x];
    bar.arrive_and_wait();
    acc += s[(threadIdx.x + 1) % T];
    bar.arrive_and_wait();
  }
  out[blockIdx.x * T + threadIdx.x] = acc;
}

// The CUDA Programming Guide's form: the whole block's memcpy_async of a tile, then arrive_and_wait.
__global__ void group(const float* in, float* out) {
  __shared__ float s[T];
  __shared__ cuda::barrier<cuda::thread_scope_block> bar;
  auto block = cg::this_thread_block();
  if (block.thread_rank() == 0) init(&bar, block.size());
  block.sync();
  float acc = 0.f;
  for (int t = 0; t < TILES; ++t) {
    cuda::memcpy_async(block, s, in + t * T, sizeof(float) * T, bar);
    bar.arrive_and_wait();
    acc += s[(threadIdx.x + 1) % T];
    bar.arrive_and_wait();
  }
  out[blockIdx.x * T + threadIdx.x] = acc;
}

int main(int argc, char** argv) {
  const char* which = argc > 1 ? argv[1] : "joined";
  float *in, *out;
  cudaMalloc(&in, TILES * T * sizeof(float));
  cudaMalloc(&out, 4 * T * sizeof(float));
  cudaMemset(in, 0, TILES * T * sizeof(float));
  void (*k)(const float*, float*) = !strcmp(which, "split") ? split : !strcmp(which, "async") ? async
                                    : !strcmp(which, "plain") ? plain : !strcmp(which, "group") ? group : joined;
  k<<<4, T>>>(in, out);
  cudaError_t e = cudaDeviceSynchronize();
  printf("synccheck_probe %s: %s\n", which, cudaGetErrorString(e));
  return e == cudaSuccess ? 0 : 1;
}
