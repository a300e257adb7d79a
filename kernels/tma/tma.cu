//! Tile copies and a transpose through the Tensor Memory Accelerator (TMA), next to plain versions of the same work.
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

// 1-D bulk copy (no tensor map) of `bytes` (a multiple of 16, both addresses 16-byte aligned)
// from global into shared memory, completing on the mbarrier like a tensor load.
__device__ __forceinline__ void bulk_load_1d(void* dst, const void* src, unsigned bytes, unsigned long long* bar) {
  asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];\n" ::"r"(
                   smem_u32(dst)),
               "l"(reinterpret_cast<unsigned long long>(src)), "r"(bytes), "r"(smem_u32(bar))
               : "memory");
}

// 1-D bulk store of `bytes` from shared to global memory, in this thread's bulk group.
__device__ __forceinline__ void bulk_store_1d(void* dst, const void* src, unsigned bytes) {
  asm volatile("cp.async.bulk.global.shared::cta.bulk_group [%0], [%1], %2;\n" ::"l"(
                   reinterpret_cast<unsigned long long>(dst)),
               "r"(smem_u32(src)), "r"(bytes)
               : "memory");
  asm volatile("cp.async.bulk.commit_group;\n" ::: "memory");
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

// 1-D bulk copy without a tensor map: one thread of a 32-thread block moves a 16 KiB chunk of
// the flat array into shared memory (cp.async.bulk, completing on the mbarrier) and back out
// (cp.async.bulk to global, a bulk group). n % 4 == 0, so every chunk is a multiple of 16 bytes.
constexpr int BULK_CHUNK_FLOATS = 4096;
__global__ void __launch_bounds__(32) bulk_copy(const float* __restrict__ in, float* __restrict__ out, long long n) {
  __shared__ __align__(128) float chunk[BULK_CHUNK_FLOATS];
  __shared__ __align__(8) unsigned long long bar;
  const long long first = (long long)blockIdx.x * BULK_CHUNK_FLOATS;
  if (threadIdx.x == 0 && first < n) {
    const long long left = n - first;
    const unsigned bytes = 4u * (unsigned)(left < BULK_CHUNK_FLOATS ? left : BULK_CHUNK_FLOATS);
    mbarrier_init(&bar, 1);
    mbarrier_arrive_expect_tx(&bar, bytes);
    bulk_load_1d(chunk, in + first, bytes, &bar);
    mbarrier_wait(&bar, 0);
    asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
    bulk_store_1d(out + first, chunk, bytes);
    tma_store_wait_all();
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

// Byte offset `o` of a box in shared memory as the TMA unit stores it with
// CU_TENSOR_MAP_SWIZZLE_{32,64,128}B (CUTLASS's Swizzle<B, 4, 3>): the 16-byte chunk bits [4, 4+B)
// xor the 128-byte line bits [7, 7+B), B = 1, 2, 3; SWIZZLE_BYTES = 0 is no swizzle. The box
// must start on a multiple of the pattern's period (8 x SWIZZLE_BYTES: 256, 512, 1024 bytes).
template <int SWIZZLE_BYTES>
__device__ __forceinline__ int swizzled_offset(int o) {
  constexpr int line_bits = SWIZZLE_BYTES == 128 ? 7 : SWIZZLE_BYTES == 64 ? 3 : SWIZZLE_BYTES == 32 ? 1 : 0;
  return o ^ (((o >> 7) & line_bits) << 4);
}

// The swizzle ladder: a 32 x 32 tile arrives as 32/W boxes of W columns x 32 rows, a box row
// W x 4 bytes = the swizzle's span (W = 8: 32B, 16: 64B, 32: 128B or none). The 32 x 8 threads
// read it with 16-byte loads, the swizzle's unit: thread (r, k) reads columns 4k..4k+3 of row r
// (lanes = 32 rows of one chunk column) and writes them to 4 output rows, coalesced. Unswizzled,
// the 8 lanes of a 16-byte load phase read the same chunk of 8 lines; swizzled, 8 different chunks.
template <int W, int SWIZZLE_BYTES>
__global__ void __launch_bounds__(256) tma_transpose_vec4(const __grid_constant__ CUtensorMap in_map,
                                                           float* __restrict__ out, int NX, int NY) {
  constexpr int BOXES = T_TILE / W;
  constexpr int BOX_BYTES = W * T_TILE * 4;
  __shared__ __align__(1024) float tile[T_TILE * T_TILE];
  __shared__ __align__(8) unsigned long long bar;
  const int x = blockIdx.x * T_TILE;
  const int y = blockIdx.y * T_TILE;
  const int tid = threadIdx.y * blockDim.x + threadIdx.x;
  if (tid == 0) mbarrier_init(&bar, 1);
  __syncthreads();
  if (tid == 0) {
    // One barrier counts all the boxes' bytes (4 KiB; zeros past an edge are counted too).
    mbarrier_arrive_expect_tx(&bar, sizeof(tile));
    for (int b = 0; b < BOXES; ++b) tma_load_2d(tile + b * W * T_TILE, &in_map, &bar, x + b * W, y);
  }
  mbarrier_wait(&bar, 0);
  const int r = threadIdx.x;  // row of the tile = column of the output
  const int k = threadIdx.y;  // 16-byte chunk: columns 4k .. 4k + 3 of the tile
  const int box = 4 * k / W;
  const int chunk_in_box = k % (W / 4);
  const int offset = box * BOX_BYTES + swizzled_offset<SWIZZLE_BYTES>(r * W * 4 + chunk_in_box * 16);
  const float4 v = *reinterpret_cast<const float4*>(reinterpret_cast<const char*>(tile) + offset);
  if (y + r >= NY) return;
  const int c = x + 4 * k;
  const float vals[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
  for (int j = 0; j < 4; ++j)
    if (c + j < NX) out[(size_t)(c + j) * NY + y + r] = vals[j];
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
