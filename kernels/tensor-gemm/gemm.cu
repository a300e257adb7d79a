//! Tensor-core GEMMs of f16 or bf16 row-major inputs (naive, WMMA, and mma.sync with ldmatrix and cp.async stages) into f32, f16 or bf16; the Hopper rungs are in wgmma.cu.
// Tensor-core GEMMs, C = A * B with A (M x K) and B (K x N) row-major in f16 or bf16 and C
// (M x N) row-major in f32 (or f16/bf16, rounded once from the f32 accumulators).
//
// Four rungs (the Hopper ones, wgmma and TMA, are in wgmma.cu):
// - tg::naive_gemm<T>: one thread per element of C, f32 dot products from global memory.
// - tg::wmma_gemm<T>: the CUDA C++ WMMA API (nvcuda::wmma, 16x16x16 fragments), a 64 x 64 block
//   tile staged in shared memory with plain 16-byte loads, one buffer, two barriers a k-step.
// - tg::mma_gemm<T, OutT, STAGES>: raw PTX mma.sync.aligned.m16n8k16 (f32 accumulate), fragments
//   loaded with ldmatrix (.trans for the row-major B), tiles copied by cp.async (16 B, zero-filled
//   past the matrix edge) into STAGES shared buffers: 2 (double buffering, static shared memory)
//   or 3-4 (the sm_80 multistage pipeline in dynamic shared memory), so the next tiles' copies
//   overlap this tile's math.
//
// Contract of both: K and N multiples of 8 (every 16-byte chunk of a row is wholly inside or
// outside the matrix, and rows stay 16-byte aligned); M is free. A call that breaks it traps
// rather than compute a wrong answer. Tiles at the edges (M, N not multiples of the block tile,
// K not a multiple of the k-step) are handled: out-of-range chunks read as zeros and
// out-of-range results are not stored.
//
// Built by NVRTC for sm_90 (nothing here needs sm_90a): mma.sync m16n8k16 and ldmatrix need
// sm_80+, cp.async sm_80+.

#include <cuda_fp16.h>
#include <cuda_bf16.h>
#include <mma.h>

namespace tg {

// ---------------------------------------------------------------------------------------------
// Output stores: two neighbouring columns at once (a float2 or a pair of halves), rounded once.

__device__ __forceinline__ void store_pair(float* p, float x, float y) {
  *reinterpret_cast<float2*>(p) = make_float2(x, y);
}
__device__ __forceinline__ void store_pair(__half* p, float x, float y) {
  *reinterpret_cast<__half2*>(p) = __floats2half2_rn(x, y);
}
__device__ __forceinline__ void store_pair(__nv_bfloat16* p, float x, float y) {
  *reinterpret_cast<__nv_bfloat162*>(p) = __floats2bfloat162_rn(x, y);
}

// Traps when K or N is not a multiple of 8 (see the contract above).
__device__ __forceinline__ void require_multiples_of_8(int N, int K) {
  if (((N | K) & 7) != 0) {
    __trap();
  }
}

// ---------------------------------------------------------------------------------------------
// Rung 0: naive. One thread per element of C: a dot product of length K in f32 from global
// memory (a warp walks 32 columns of one row: B's reads coalesce, A's are one broadcast). No
// tensor cores, no reuse through shared memory: the floor the other rungs are measured from.
// Blocks of 32 x 8 threads are numbered down columns of NAIVE_GROUP block rows (512 rows) before
// moving right, so the blocks resident at once read about 8 MiB of A and of B, which stay in L2:
// in plain row order they read all of B per 8 rows, and at 8192^3 (B 128 MiB, over the L2) a run
// took over 12 s on an H200 instead of under a second.

constexpr int NAIVE_GROUP = 64;

template <typename T>
__global__ void naive_gemm(int M, int N, int K, const T* __restrict__ A, const T* __restrict__ B, float* __restrict__ C) {
  const int blocks_x = (N + 31) / 32, blocks_y = (M + 7) / 8;
  const int per_group = NAIVE_GROUP * blocks_x;
  const int group = blockIdx.x / per_group, in_group = blockIdx.x % per_group;
  const int rows_here = min(NAIVE_GROUP, blocks_y - group * NAIVE_GROUP);
  const int by = group * NAIVE_GROUP + in_group % rows_here, bx = in_group / rows_here;
  const int col = bx * 32 + threadIdx.x;
  const int row = by * 8 + threadIdx.y;
  if (row >= M || col >= N) return;
  float acc = 0.0f;
  for (int k = 0; k < K; ++k) {
    acc += static_cast<float>(A[(long long)row * K + k]) * static_cast<float>(B[(long long)k * N + col]);
  }
  C[(long long)row * N + col] = acc;
}

// ---------------------------------------------------------------------------------------------
// Rung 1: WMMA, 64 x 64 x 32 block tile, 4 warps of 32 x 32 (2 x 2 fragments of 16 x 16).

constexpr int WM_BM = 64;
constexpr int WM_BN = 64;
constexpr int WM_BK = 32;
constexpr int WM_THREADS = 128;
// 8 halves (16 bytes) of padding a row: rows stay 16-byte aligned for the vector stores and
// 32-byte aligned at every fragment origin, and consecutive rows start on different banks.
constexpr int WM_PAD = 8;

template <typename T>
__global__ void __launch_bounds__(WM_THREADS)
    wmma_gemm(int M, int N, int K, const T* __restrict__ A, const T* __restrict__ B, float* __restrict__ C) {
  using namespace nvcuda;
  require_multiples_of_8(N, K);

  __shared__ __align__(128) T As[WM_BM][WM_BK + WM_PAD];
  __shared__ __align__(128) T Bs[WM_BK][WM_BN + WM_PAD];
  // Per-warp staging of one 16 x 16 result, for tiles that cross the matrix's edge.
  __shared__ __align__(128) float Cs[WM_THREADS / 32][16 * 16];

  const int tid = threadIdx.x;
  const int warp = tid / 32;
  const int lane = tid % 32;
  const int warp_m = warp / 2;  // 0..1: rows warp_m*32 .. +31 of the block tile
  const int warp_n = warp % 2;  // 0..1: columns warp_n*32 .. +31
  const int block_m = blockIdx.y * WM_BM;
  const int block_n = blockIdx.x * WM_BN;

  wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc[2][2];
#pragma unroll
  for (int i = 0; i < 2; ++i)
#pragma unroll
    for (int j = 0; j < 2; ++j) wmma::fill_fragment(acc[i][j], 0.0f);

  for (int k0 = 0; k0 < K; k0 += WM_BK) {
    // A tile: 64 rows x 32 halves = 256 chunks of 8; B tile: 32 rows x 64 halves = 256 chunks.
#pragma unroll
    for (int c = tid; c < WM_BM * WM_BK / 8; c += WM_THREADS) {
      const int row = c / (WM_BK / 8);
      const int col = (c % (WM_BK / 8)) * 8;
      const int gm = block_m + row;
      const int gk = k0 + col;
      uint4 v = make_uint4(0, 0, 0, 0);
      if (gm < M && gk < K) v = *reinterpret_cast<const uint4*>(A + (size_t)gm * K + gk);
      *reinterpret_cast<uint4*>(&As[row][col]) = v;
    }
#pragma unroll
    for (int c = tid; c < WM_BK * WM_BN / 8; c += WM_THREADS) {
      const int row = c / (WM_BN / 8);
      const int col = (c % (WM_BN / 8)) * 8;
      const int gk = k0 + row;
      const int gn = block_n + col;
      uint4 v = make_uint4(0, 0, 0, 0);
      if (gk < K && gn < N) v = *reinterpret_cast<const uint4*>(B + (size_t)gk * N + gn);
      *reinterpret_cast<uint4*>(&Bs[row][col]) = v;
    }
    __syncthreads();

#pragma unroll
    for (int kk = 0; kk < WM_BK; kk += 16) {
      wmma::fragment<wmma::matrix_a, 16, 16, 16, T, wmma::row_major> a[2];
      wmma::fragment<wmma::matrix_b, 16, 16, 16, T, wmma::row_major> b[2];
#pragma unroll
      for (int i = 0; i < 2; ++i) wmma::load_matrix_sync(a[i], &As[warp_m * 32 + i * 16][kk], WM_BK + WM_PAD);
#pragma unroll
      for (int j = 0; j < 2; ++j) wmma::load_matrix_sync(b[j], &Bs[kk][warp_n * 32 + j * 16], WM_BN + WM_PAD);
#pragma unroll
      for (int i = 0; i < 2; ++i)
#pragma unroll
        for (int j = 0; j < 2; ++j) wmma::mma_sync(acc[i][j], a[i], b[j], acc[i][j]);
    }
    __syncthreads();
  }

#pragma unroll
  for (int i = 0; i < 2; ++i) {
#pragma unroll
    for (int j = 0; j < 2; ++j) {
      const int row = block_m + warp_m * 32 + i * 16;
      const int col = block_n + warp_n * 32 + j * 16;
      if (row + 16 <= M && col + 16 <= N) {
        // N % 8 == 0 and col % 16 == 0: the pointer is 32-byte aligned as store_matrix_sync needs.
        wmma::store_matrix_sync(C + (size_t)row * N + col, acc[i][j], N, wmma::mem_row_major);
      } else {
        wmma::store_matrix_sync(Cs[warp], acc[i][j], 16, wmma::mem_row_major);
        __syncwarp();
        for (int e = lane; e < 16 * 16; e += 32) {
          const int r = row + e / 16;
          const int c = col + e % 16;
          if (r < M && c < N) C[(size_t)r * N + c] = Cs[warp][e];
        }
        __syncwarp();
      }
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Rung 2: mma.sync m16n8k16 with ldmatrix and cp.async double buffering.
// 128 x 128 x 32 block tile, 8 warps as 2 (rows) x 4 (columns), a warp tile of 64 x 32 =
// 4 x 4 mma tiles of 16 x 8, 64 f32 accumulators a thread.

constexpr int MM_BM = 128;
constexpr int MM_BN = 128;
constexpr int MM_BK = 32;
constexpr int MM_THREADS = 256;
constexpr int MM_PAD = 8;  // halves: A rows of 80 bytes, B rows of 272 bytes: ldmatrix conflict-free
constexpr int MM_WARP_M = 64;
constexpr int MM_WARP_N = 32;
constexpr int MM_MI = MM_WARP_M / 16;  // 4 mma tiles down
constexpr int MM_NI = MM_WARP_N / 8;   // 4 mma tiles across

__device__ __forceinline__ unsigned smem_u32(const void* p) {
  return static_cast<unsigned>(__cvta_generic_to_shared(p));
}

// 16 bytes global -> shared, bypassing L1; src_bytes = 0 writes 16 zero bytes and reads nothing.
__device__ __forceinline__ void cp_async_16(void* smem, const void* gmem, bool in_range) {
  const int src_bytes = in_range ? 16 : 0;
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(smem_u32(smem)), "l"(gmem), "r"(src_bytes)
               : "memory");
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }
template <int PENDING>
__device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(PENDING) : "memory");
}

// Four 8 x 8 b16 matrices; lanes 8i..8i+7 give the row addresses of matrix i, register i holds
// matrix i (lane t: row t/4, elements 2(t%4), 2(t%4)+1; .trans: the transposed matrix).
__device__ __forceinline__ void ldmatrix_x4(unsigned (&r)[4], const void* smem) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(smem_u32(smem)));
}
__device__ __forceinline__ void ldmatrix_x4_trans(unsigned (&r)[4], const void* smem) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(smem_u32(smem)));
}

// d = a * b + d, one m16n8k16 tile, f32 accumulate.
template <typename T>
struct Mma;
template <>
struct Mma<__half> {
  static __device__ __forceinline__ void run(float (&d)[4], const unsigned (&a)[4], unsigned b0, unsigned b1) {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
        "{%0, %1, %2, %3};\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
  }
};
template <>
struct Mma<__nv_bfloat16> {
  static __device__ __forceinline__ void run(float (&d)[4], const unsigned (&a)[4], unsigned b0, unsigned b1) {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
        "{%0, %1, %2, %3};\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
  }
};

template <typename T, int STAGES>
struct MmaTiles {
  T a[STAGES][MM_BM][MM_BK + MM_PAD];
  T b[STAGES][MM_BK][MM_BN + MM_PAD];
};

// The tiles of one block: two stages in static shared memory (37 888 bytes, under the 48 KB a
// block gets without opting in); more in dynamic shared memory (the variant's shared_bytes,
// STAGES x 18 944 bytes).
template <typename T, int STAGES>
__device__ __forceinline__ MmaTiles<T, STAGES>& mma_tiles() {
  if constexpr (STAGES == 2) {
    __shared__ __align__(128) MmaTiles<T, 2> s;
    return s;
  } else {
    extern __shared__ __align__(128) unsigned char mma_dynamic_smem[];
    return *reinterpret_cast<MmaTiles<T, STAGES>*>(mma_dynamic_smem);
  }
}

// Issues the cp.async copies of the k-tile starting at k0 into buffer `stage` (2 chunks of
// A and 2 of B a thread).
template <typename T, int STAGES>
__device__ __forceinline__ void mma_load_tile(MmaTiles<T, STAGES>& s, int stage, int M, int N, int K, const T* A,
                                              const T* B, int block_m, int block_n, int k0) {
  const int tid = threadIdx.x;
#pragma unroll
  for (int c = tid; c < MM_BM * MM_BK / 8; c += MM_THREADS) {
    const int row = c / (MM_BK / 8);
    const int col = (c % (MM_BK / 8)) * 8;
    const int gm = block_m + row;
    const int gk = k0 + col;
    const bool in_range = gm < M && gk < K;
    cp_async_16(&s.a[stage][row][col], in_range ? A + (size_t)gm * K + gk : A, in_range);
  }
#pragma unroll
  for (int c = tid; c < MM_BK * MM_BN / 8; c += MM_THREADS) {
    const int row = c / (MM_BN / 8);
    const int col = (c % (MM_BN / 8)) * 8;
    const int gk = k0 + row;
    const int gn = block_n + col;
    const bool in_range = gk < K && gn < N;
    cp_async_16(&s.b[stage][row][col], in_range ? B + (size_t)gk * N + gn : B, in_range);
  }
}

// STAGES k-tiles in flight (2: double buffering; 3-4: the sm_80 multistage pipeline, copies of
// the next STAGES - 1 tiles overlapping this tile's math).
template <typename T, typename OutT, int STAGES = 2>
__global__ void __launch_bounds__(MM_THREADS)
    mma_gemm(int M, int N, int K, const T* __restrict__ A, const T* __restrict__ B, OutT* __restrict__ C) {
  static_assert(STAGES >= 2, "at least double buffering");
  require_multiples_of_8(N, K);
  MmaTiles<T, STAGES>& s = mma_tiles<T, STAGES>();

  const int lane = threadIdx.x % 32;
  const int warp = threadIdx.x / 32;
  const int warp_m = warp / 4;  // 0..1
  const int warp_n = warp % 4;  // 0..3
  const int block_m = blockIdx.y * MM_BM;
  const int block_n = blockIdx.x * MM_BN;

  float acc[MM_MI][MM_NI][4];
#pragma unroll
  for (int i = 0; i < MM_MI; ++i)
#pragma unroll
    for (int j = 0; j < MM_NI; ++j)
#pragma unroll
      for (int e = 0; e < 4; ++e) acc[i][j][e] = 0.0f;

  const int k_tiles = (K + MM_BK - 1) / MM_BK;
  // Prologue: tiles 0 .. STAGES - 2 in flight, one commit group each (possibly empty).
#pragma unroll
  for (int t = 0; t < STAGES - 1; ++t) {
    if (t < k_tiles) mma_load_tile(s, t, M, N, K, A, B, block_m, block_n, t * MM_BK);
    cp_async_commit();
  }

  for (int kt = 0; kt < k_tiles; ++kt) {
    const int stage = kt % STAGES;
    // Groups committed: STAGES - 1 + kt, tile kt's is the (kt + 1)-th: at most STAGES - 2 newer
    // ones may still be pending. The barrier also tells every warp that iteration kt - 1's
    // reads of the stage refilled next are done.
    cp_async_wait<STAGES - 2>();
    __syncthreads();
    const int next = kt + STAGES - 1;
    if (next < k_tiles) mma_load_tile(s, next % STAGES, M, N, K, A, B, block_m, block_n, next * MM_BK);
    cp_async_commit();  // possibly empty: keeps the group count per iteration at one

#pragma unroll
    for (int kk = 0; kk < MM_BK; kk += 16) {
      unsigned a[MM_MI][4];
      unsigned b[MM_NI][2];
      // A: matrices (rows 0-7, k 0-7), (rows 8-15, k 0-7), (rows 0-7, k 8-15), (rows 8-15, k 8-15)
      // = a0..a3 of m16n8k16: lane l addresses row l % 16, k (l / 16) * 8.
#pragma unroll
      for (int i = 0; i < MM_MI; ++i)
        ldmatrix_x4(a[i], &s.a[stage][warp_m * MM_WARP_M + i * 16 + (lane % 16)][kk + (lane / 16) * 8]);
      // B (k x n, row-major): transposed matrices (k 0-7, n 0-7), (k 8-15, n 0-7), (k 0-7, n 8-15),
      // (k 8-15, n 8-15) = b0, b1 of two n8 tiles: lane l addresses k row l % 16, n (l / 16) * 8.
#pragma unroll
      for (int j = 0; j < MM_NI; j += 2) {
        unsigned r[4];
        ldmatrix_x4_trans(r, &s.b[stage][kk + (lane % 16)][warp_n * MM_WARP_N + j * 8 + (lane / 16) * 8]);
        b[j][0] = r[0];
        b[j][1] = r[1];
        b[j + 1][0] = r[2];
        b[j + 1][1] = r[3];
      }
#pragma unroll
      for (int i = 0; i < MM_MI; ++i)
#pragma unroll
        for (int j = 0; j < MM_NI; ++j) Mma<T>::run(acc[i][j], a[i], b[j][0], b[j][1]);
    }
  }
  cp_async_wait<0>();

  // Accumulator layout of m16n8k16: d0, d1 at (row l/4, columns 2(l%4), +1), d2, d3 eight rows below.
  const int group = lane / 4;
  const int pair = (lane % 4) * 2;
#pragma unroll
  for (int i = 0; i < MM_MI; ++i) {
#pragma unroll
    for (int j = 0; j < MM_NI; ++j) {
      const int row = block_m + warp_m * MM_WARP_M + i * 16 + group;
      const int col = block_n + warp_n * MM_WARP_N + j * 8 + pair;
      // N is even and col is even: col < N means col + 1 < N too.
      if (col < N) {
        if (row < M) store_pair(C + (size_t)row * N + col, acc[i][j][0], acc[i][j][1]);
        if (row + 8 < M) store_pair(C + (size_t)(row + 8) * N + col, acc[i][j][2], acc[i][j][3]);
      }
    }
  }
}

}  // namespace tg
