//! GEMV, y = alpha * A x + beta * y and its transposed form, the memory-bound half of seed 003: a thread per row, a warp per row, and two transposed kernels.
// GEMV y = alpha * A x + beta * y (A is M x K, row-major) and its transposed form y = alpha * A^T x + beta * y
// (A stored K x M): the memory-bound half of seed 003. Every kernel handles any M and K.

extern "C" __global__ void gemv_naive(int M, int K, float alpha, const float* A, const float* x, float beta, float* y) {
  // A thread per row: the 32 lanes of a warp read 32 rows K floats apart (uncoalesced).
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < M) {
    float acc = 0.0f;
    for (int k = 0; k < K; ++k) acc += A[(size_t)i * K + k] * x[k];
    y[i] = alpha * acc + beta * y[i];
  }
}

extern "C" __global__ void gemv_warp(int M, int K, float alpha, const float* A, const float* x, float beta, float* y) {
  // A warp per row: consecutive lanes read consecutive float4s of the row, a shuffle adds them up.
  const int row = (blockIdx.x * blockDim.x + threadIdx.x) / 32, lane = threadIdx.x % 32;
  if (row >= M) return;
  const float* a = A + (size_t)row * K;
  float acc = 0.0f;
  if ((K & 3) == 0) {
    const float4* a4 = reinterpret_cast<const float4*>(a);
    const float4* x4 = reinterpret_cast<const float4*>(x);
    for (int k = lane; k < K / 4; k += 32) {
      const float4 p = __ldcs(&a4[k]), q = x4[k];
      acc += p.x * q.x + p.y * q.y + p.z * q.z + p.w * q.w;
    }
  } else {
    for (int k = lane; k < K; k += 32) acc += a[k] * x[k];
  }
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) acc += __shfl_down_sync(0xffffffffu, acc, o);
  if (lane == 0) y[row] = alpha * acc + beta * y[row];
}

extern "C" __global__ void gemv_t(int M, int K, float alpha, const float* A, const float* x, float beta, float* y) {
  // Transposed: y[i] = sum_p A[p][i] x[p]; a warp reads 32 consecutive floats of a row of A (coalesced).
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < M) {
    float acc = 0.0f;
    for (int p = 0; p < K; ++p) acc += A[(size_t)p * M + i] * x[p];
    y[i] = alpha * acc + beta * y[i];
  }
}

#ifndef SPLIT
#define SPLIT 16
#endif

extern "C" __global__ void gemv_t_split(int M, int K, float alpha, const float* A, const float* x, float beta, float* y) {
  // Transposed, with K split over SPLIT warps of a block (blockDim = 32 x SPLIT): enough blocks to
  // fill every SM when M alone gives too few; the partial sums meet in shared memory.
  __shared__ float part[SPLIT][32];
  const int i = blockIdx.x * 32 + threadIdx.x;
  float acc = 0.0f;
  if (i < M)
    for (int p = threadIdx.y; p < K; p += SPLIT) acc += A[(size_t)p * M + i] * x[p];
  part[threadIdx.y][threadIdx.x] = acc;
  __syncthreads();
  if (threadIdx.y == 0 && i < M) {
    float sum = 0.0f;
#pragma unroll
    for (int s = 0; s < SPLIT; ++s) sum += part[s][threadIdx.x];
    y[i] = alpha * sum + beta * y[i];
  }
}
