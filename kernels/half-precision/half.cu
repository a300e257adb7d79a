//! Half-precision kernels (fp16, bf16) against their float32 originals, as C++ templates the manifest names and instantiates.
// Half-precision kernels (fp16, bf16) against their float32 originals: C++ templates named by the
// manifest (`axpy<__half>`), the toolkit's headers (cuda_fp16.h, cuda_bf16.h, CUB,
// cooperative_groups) found by NVRTC without paths, and template arguments from parameters.
#include <cuda_fp16.h>
#include <cuda_bf16.h>
#include <cub/block/block_reduce.cuh>
#include <cooperative_groups.h>
#include <cooperative_groups/reduce.h>

namespace cg = cooperative_groups;

namespace conv {
template <typename T> __device__ __forceinline__ float to_float(T x) { return static_cast<float>(x); }
template <> __device__ __forceinline__ float to_float<__half>(__half x) { return __half2float(x); }
template <> __device__ __forceinline__ float to_float<__nv_bfloat16>(__nv_bfloat16 x) { return __bfloat162float(x); }
template <typename T> __device__ __forceinline__ T from_float(float x) { return static_cast<T>(x); }
template <> __device__ __forceinline__ __half from_float<__half>(float x) { return __float2half_rn(x); }
template <> __device__ __forceinline__ __nv_bfloat16 from_float<__nv_bfloat16>(float x) { return __float2bfloat16_rn(x); }
}  // namespace conv

// out = a * x + y, one element per thread, computed in float and rounded once.
template <typename T>
__global__ void axpy(const T* __restrict__ x, const T* __restrict__ y, T* __restrict__ out, float a, long long n) {
  long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (i < n) out[i] = conv::from_float<T>(fmaf(a, conv::to_float(x[i]), conv::to_float(y[i])));
}

// The same with packed pairs in native half arithmetic (__hfma2): 4-byte accesses, two lanes of math.
__global__ void axpy_half2(const __half2* __restrict__ x, const __half2* __restrict__ y, __half2* __restrict__ out, __half a, long long n2) {
  long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (i < n2) out[i] = __hfma2(__half2half2(a), x[i], y[i]);
}

// VEC elements per 16-byte access (8 halves, 4 floats), grid-stride; n must be a multiple of VEC.
template <typename T, int VEC>
__global__ void __launch_bounds__(256) axpy_vec(const T* __restrict__ x, const T* __restrict__ y, T* __restrict__ out, float a, long long n) {
  static_assert(sizeof(T) * VEC == 16, "one uint4 per access");
  union Pack { uint4 raw; T v[VEC]; };
  const uint4* xv = reinterpret_cast<const uint4*>(x);
  const uint4* yv = reinterpret_cast<const uint4*>(y);
  uint4* ov = reinterpret_cast<uint4*>(out);
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n / VEC; i += (long long)gridDim.x * blockDim.x) {
    Pack px, py, po;
    px.raw = xv[i];
    py.raw = yv[i];
#pragma unroll
    for (int k = 0; k < VEC; ++k) po.v[k] = conv::from_float<T>(fmaf(a, conv::to_float(px.v[k]), conv::to_float(py.v[k])));
    ov[i] = po.raw;
  }
}

namespace red {
// One partial sum per block of BLOCK threads × ITEMS elements, accumulated in float with CUB's
// block reduction, written in the input's type.
template <typename T, int BLOCK, int ITEMS>
__global__ void __launch_bounds__(BLOCK) block_sum(const T* __restrict__ x, T* __restrict__ partials, long long n) {
  using Reduce = cub::BlockReduce<float, BLOCK>;
  __shared__ typename Reduce::TempStorage temp;
  long long base = blockIdx.x * (long long)BLOCK * ITEMS + threadIdx.x;
  float acc = 0.f;
#pragma unroll
  for (int k = 0; k < ITEMS; ++k) {
    long long i = base + (long long)k * BLOCK;
    if (i < n) acc += conv::to_float(x[i]);
  }
  float total = Reduce(temp).Sum(acc);
  if (threadIdx.x == 0) partials[blockIdx.x] = conv::from_float<T>(total);
}

// Packed halves, two at a time, reduced by cooperative_groups (warp tiles, then the block's warps).
template <int BLOCK, int ITEMS>
__global__ void __launch_bounds__(BLOCK) block_sum_half2(const __half2* __restrict__ x, __half* __restrict__ partials, long long n2) {
  __shared__ float warp_sums[BLOCK / 32];
  cg::thread_block block = cg::this_thread_block();
  cg::thread_block_tile<32> warp = cg::tiled_partition<32>(block);
  long long base = blockIdx.x * (long long)BLOCK * ITEMS + threadIdx.x;
  float acc = 0.f;
#pragma unroll
  for (int k = 0; k < ITEMS; ++k) {
    long long i = base + (long long)k * BLOCK;
    if (i < n2) {
      float2 f = __half22float2(x[i]);
      acc += f.x + f.y;
    }
  }
  float w = cg::reduce(warp, acc, cg::plus<float>());
  if (warp.thread_rank() == 0) warp_sums[warp.meta_group_rank()] = w;
  block.sync();
  if (warp.meta_group_rank() == 0) {
    float v = warp.thread_rank() < BLOCK / 32 ? warp_sums[warp.thread_rank()] : 0.f;
    v = cg::reduce(warp, v, cg::plus<float>());
    if (warp.thread_rank() == 0) partials[blockIdx.x] = __float2half_rn(v);
  }
}
}  // namespace red
