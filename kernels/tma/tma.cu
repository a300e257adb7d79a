// Tile copies and a transpose through the Tensor Memory Accelerator (TMA), next to plain
// versions of the same work. `in` is NY rows x NX columns of float32, row-major (NX innermost).
//
// TMA kernels take the tensor map gpu-lab encodes on the host (cuTensorMapEncodeTiled, from the
// manifest's [[tensor_maps]]) as a `const __grid_constant__ CUtensorMap` parameter: 128 bytes
// passed by value, whose address in the parameter space is what cp.async.bulk.tensor takes.
// One thread issues the copy; an mbarrier in shared memory counts its bytes
// (mbarrier.arrive.expect_tx) and the threads wait on its phase (mbarrier.try_wait.parity).
//
// PTX used (all sm_90, PTX ISA 8.0; nothing here needs sm_90a):
//   cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes  (TMA load)
//   cp.async.bulk.tensor.2d.global.shared::cta.bulk_group                         (TMA store)
//   mbarrier.init / arrive.expect_tx / try_wait.parity, fence.proxy.async, cp.async.bulk.commit_group / wait_group
//
// Rows must be 16-byte aligned for the tensor map (NX % 4 == 0; for the transpose's output, NY % 4
// too): the manifest's sizes are. Edges need no code in the TMA paths: a box that crosses the
// matrix's edge is loaded with zeros past it, and a TMA store writes only the part inside.

#if defined(__CUDACC_RTC__)
// NVRTC has no <cuda.h>; the driver's CUtensorMap is 128 opaque bytes aligned to 64.
struct __align__(64) CUtensorMap {
  unsigned long long opaque[16];
};
#else
#include <cuda.h>
#endif

namespace tma {

constexpr int COPY_TILE_X = 64;  // 64 x 64 floats = 16 KiB a box (the manifest's box = ["64", "64"])
constexpr int COPY_TILE_Y = 64;
constexpr int T_TILE = 32;       // transpose: 32 x 32 floats, one 128-byte row a line (box ["32", "32"], swizzle 128B)

__device__ __forceinline__ unsigned smem_u32(const void* p) {
  return static_cast<unsigned>(__cvta_generic_to_shared(p));
}

// The barrier counts one arrival (the issuing thread's) and the bytes the TMA load delivers.
__device__ __forceinline__ void mbarrier_init(unsigned long long* bar, unsigned arrivals) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(smem_u32(bar)), "r"(arrivals) : "memory");
  // Make the initialised barrier visible to the async proxy (the TMA unit) and the cluster.
  asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
  asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
}

__device__ __forceinline__ void mbarrier_arrive_expect_tx(unsigned long long* bar, unsigned bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(smem_u32(bar)), "r"(bytes)
               : "memory");
}

// Spins until the barrier's phase `parity` has completed (all arrivals and all bytes).
__device__ __forceinline__ void mbarrier_wait(unsigned long long* bar, unsigned parity) {
  unsigned done = 0;
  do {
    asm volatile(
        "{\n"
        ".reg .pred p;\n"
        "mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n"
        "selp.u32 %0, 1, 0, p;\n"
        "}\n"
        : "=r"(done)
        : "r"(smem_u32(bar)), "r"(parity)
        : "memory");
  } while (!done);
}

// TMA load of the box whose first element is (x, y) (x innermost) into shared memory.
__device__ __forceinline__ void tma_load_2d(void* dst, const CUtensorMap* map, unsigned long long* bar, int x, int y) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%3, %4}], [%2];\n" ::"r"(
          smem_u32(dst)),
      "l"(reinterpret_cast<unsigned long long>(map)), "r"(smem_u32(bar)), "r"(x), "r"(y)
      : "memory");
}

// TMA store of a box from shared memory to (x, y); elements outside the tensor are not written.
__device__ __forceinline__ void tma_store_2d(const CUtensorMap* map, const void* src, int x, int y) {
  asm volatile("cp.async.bulk.tensor.2d.global.shared::cta.bulk_group [%0, {%2, %3}], [%1];\n" ::"l"(
                   reinterpret_cast<unsigned long long>(map)),
               "r"(smem_u32(src)), "r"(x), "r"(y)
               : "memory");
  asm volatile("cp.async.bulk.commit_group;\n" ::: "memory");
}

// Waits until this thread's bulk stores have completed (so shared memory may be released).
__device__ __forceinline__ void tma_store_wait_all() { asm volatile("cp.async.bulk.wait_group 0;\n" ::: "memory"); }

// ---------------------------------------------------------------------------------------------
// Plain copy: 16-byte loads and stores, grid-stride; the comparison for the TMA copies.
__global__ void copy_vec4(const float4* __restrict__ in, float4* __restrict__ out, long long n4) {
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n4; i += (long long)gridDim.x * blockDim.x)
    out[i] = in[i];
}

// TMA load and TMA store: one thread of a 32-thread block moves one 64 x 64 box in and out.
__global__ void __launch_bounds__(32) tma_copy(const __grid_constant__ CUtensorMap in_map,
                                               const __grid_constant__ CUtensorMap out_map) {
  __shared__ __align__(128) float tile[COPY_TILE_Y * COPY_TILE_X];
  __shared__ __align__(8) unsigned long long bar;
  const int x = blockIdx.x * COPY_TILE_X;
  const int y = blockIdx.y * COPY_TILE_Y;
  if (threadIdx.x == 0) {
    mbarrier_init(&bar, 1);
    // The full box is counted even where it crosses the edge (those elements arrive as zeros).
    mbarrier_arrive_expect_tx(&bar, sizeof(tile));
    tma_load_2d(tile, &in_map, &bar, x, y);
    mbarrier_wait(&bar, 0);
    // Order the box's shared memory (now visible to this thread) before the async proxy reads it
    // for the store; cheap, and the pattern any kernel that writes the box itself needs.
    asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
    tma_store_2d(&out_map, tile, x, y);
    tma_store_wait_all();
  }
}

// TMA load, then every thread stores part of the box with 16-byte stores (bounds-checked).
__global__ void __launch_bounds__(256) tma_load_vec4_store(const __grid_constant__ CUtensorMap in_map,
                                                            float* __restrict__ out, int NX, int NY) {
  __shared__ __align__(128) float tile[COPY_TILE_Y * COPY_TILE_X];
  __shared__ __align__(8) unsigned long long bar;
  const int x = blockIdx.x * COPY_TILE_X;
  const int y = blockIdx.y * COPY_TILE_Y;
  if (threadIdx.x == 0) mbarrier_init(&bar, 1);
  __syncthreads();  // the barrier is initialised before anyone waits on it
  if (threadIdx.x == 0) {
    mbarrier_arrive_expect_tx(&bar, sizeof(tile));
    tma_load_2d(tile, &in_map, &bar, x, y);
  }
  mbarrier_wait(&bar, 0);
  const float4* tile4 = reinterpret_cast<const float4*>(tile);
  for (int f = threadIdx.x; f < COPY_TILE_Y * COPY_TILE_X / 4; f += blockDim.x) {
    const int row = f / (COPY_TILE_X / 4);
    const int col = (f % (COPY_TILE_X / 4)) * 4;
    // NX % 4 == 0 (the tensor map needs 16-byte rows): col < NX - x means all four are inside.
    if (y + row < NY && x + col < NX)
      *reinterpret_cast<float4*>(out + (size_t)(y + row) * NX + x + col) = tile4[f];
  }
}

// Offset of element (r, c) of a 32 x 32 float box loaded with CU_TENSOR_MAP_SWIZZLE_128B into a
// 1024-byte-aligned buffer: each 128-byte line r has its 16-byte chunks permuted, chunk c/4
// stored at chunk (c/4) ^ (r % 8).
__device__ __forceinline__ int swizzle128(int r, int c) { return r * T_TILE + ((((c >> 2) ^ (r & 7)) << 2) | (c & 3)); }

// TMA load of a 32 x 32 box (128-byte swizzle), then a 32 x 8 block writes its transpose:
// out (NX rows x NY columns) [x + c][y + r] = in[y + r][x + c]. A warp reads a column of the box;
// the swizzle spreads it over 8 bank groups (4-way conflicts instead of 32-way).
__global__ void __launch_bounds__(256) tma_transpose(const __grid_constant__ CUtensorMap in_map,
                                                      float* __restrict__ out, int NX, int NY) {
  __shared__ __align__(1024) float tile[T_TILE * T_TILE];
  __shared__ __align__(8) unsigned long long bar;
  const int x = blockIdx.x * T_TILE;
  const int y = blockIdx.y * T_TILE;
  const int tid = threadIdx.y * blockDim.x + threadIdx.x;
  if (tid == 0) mbarrier_init(&bar, 1);
  __syncthreads();
  if (tid == 0) {
    mbarrier_arrive_expect_tx(&bar, sizeof(tile));
    tma_load_2d(tile, &in_map, &bar, x, y);
  }
  mbarrier_wait(&bar, 0);
  const int r = threadIdx.x;  // row of the box = column of the output
  for (int c = threadIdx.y; c < T_TILE; c += blockDim.y) {
    if (x + c < NX && y + r < NY) out[(size_t)(x + c) * NY + y + r] = tile[swizzle128(r, c)];
  }
}

// Plain shared-memory transpose, 32 x 33 padded tile, 32 x 8 threads: the comparison.
__global__ void __launch_bounds__(256) smem_transpose(const float* __restrict__ in, float* __restrict__ out, int NX,
                                                       int NY) {
  __shared__ float tile[T_TILE][T_TILE + 1];
  const int x = blockIdx.x * T_TILE + threadIdx.x;
  const int y0 = blockIdx.y * T_TILE;
  for (int j = threadIdx.y; j < T_TILE; j += blockDim.y)
    if (x < NX && y0 + j < NY) tile[j][threadIdx.x] = in[(size_t)(y0 + j) * NX + x];
  __syncthreads();
  const int ox = blockIdx.y * T_TILE + threadIdx.x;  // output column = input row
  const int oy0 = blockIdx.x * T_TILE;               // output row = input column
  for (int j = threadIdx.y; j < T_TILE; j += blockDim.y)
    if (ox < NY && oy0 + j < NX) out[(size_t)(oy0 + j) * NY + ox] = tile[threadIdx.x][j];
}

}  // namespace tma
