//! Kernels that must not pass the checks (state kept between launches, work skipped after the first call, wrong arguments), beside a correct template copy.
// Kernels that must not pass: one right only on its first launch (state in a __device__ global),
// one that skips work after the first call by keeping its result, and one the manifest calls with
// the wrong arguments. A C++ template copy (correct) runs beside them.
__device__ int launches;

extern "C" __global__ void copy_first_time_only(const float* in, float* out, long long n) {
  // Every launch after the first finds `launches` > 0 and writes nothing.
  __shared__ int seen;
  if (threadIdx.x == 0) seen = atomicAdd(&launches, 0);
  __syncthreads();
  long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (seen == 0 && i < n) out[i] = in[i];
  __syncthreads();
  // The last block to finish marks the kernel as run.
  if (threadIdx.x == 0 && blockIdx.x == gridDim.x - 1) atomicAdd(&launches, 1);
}

namespace good {
template <typename T, int UNROLL>
__global__ void copy(const T* in, T* out, long long n) {
  long long base = (blockIdx.x * (long long)blockDim.x + threadIdx.x) * UNROLL;
#pragma unroll
  for (int k = 0; k < UNROLL; ++k)
    if (base + k < n) out[base + k] = in[base + k];
}
}  // namespace good

extern "C" __global__ void copy_n64(const float* in, float* out, long long n) {
  long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (i < n) out[i] = in[i];
}

// Wrong on every third launch (a stand-in for a race that shows under back-to-back launches):
// right before timing, and right after it two times in three; `--verify-every` catches it.
__device__ unsigned int calls;
extern "C" __global__ void copy_wrong_every_third(const float* in, float* out, long long n) {
  __shared__ unsigned int call;
  if (threadIdx.x == 0) call = atomicAdd(&calls, 0);
  __syncthreads();
  long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (i < n) out[i] = (call % 3 == 2 && i == 0) ? in[i] + 1.0f : in[i];
  __syncthreads();
  if (threadIdx.x == 0 && blockIdx.x == gridDim.x - 1) atomicAdd(&calls, 1);
}
