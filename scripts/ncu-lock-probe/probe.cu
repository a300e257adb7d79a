//! A program for the ncu lock probe (scripts/ncu-lock-probe/run.sh): LAUNCHES launches of a small memory-bound kernel, so that ncu's
// per-kernel replay (save, passes, restore) dominates its wall time.
#include <cstdio>
#include <cstdlib>
#include <cuda_runtime.h>

__global__ void scale(const float* in, float* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = 2.0f * in[i];
}

int main(int argc, char** argv) {
  int launches = argc > 1 ? atoi(argv[1]) : 100;
  int n = 1 << 22;
  float *in, *out;
  if (cudaMalloc(&in, n * sizeof(float)) != cudaSuccess || cudaMalloc(&out, n * sizeof(float)) != cudaSuccess) return 1;
  cudaMemset(in, 0, n * sizeof(float));
  for (int k = 0; k < launches; ++k) scale<<<(n + 255) / 256, 256>>>(in, out, n);
  cudaError_t e = cudaDeviceSynchronize();
  printf("%d launches: %s\n", launches, cudaGetErrorString(e));
  return e == cudaSuccess ? 0 : 1;
}
