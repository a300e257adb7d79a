//! The persistent stmatrix GEMM with a stream-K tail: the last partial wave of tiles split along K over every cluster, partial f32 tiles added by the tile's first piece (sm_90a).
// The persistent rungs of wgmma.cu give each 2-block cluster whole 256 x 256 tiles in turn. At
// 4096^3 that is 256 cluster tiles on 66 clusters: 3.88 waves that take as long as 4, the last
// wave's 58 tiles leaving 8 clusters idle (at 8192^3, 1024 tiles: 15.5 waves run as 16). Here
// the tiles of the whole waves (tiles / clusters of them per cluster) run as before, data-
// parallel; the k-iterations of the leftover tiles (58 x 64 at 4096^3) are cut into one
// contiguous range a cluster (56.24 of them), CUTLASS's "data-parallel + stream-K" hybrid.
// A range that starts inside a tile computes that tile's later k-tiles and leaves its f32
// partial sums in a workspace (one slot a block: each range starts inside at most one tile),
// then raises a flag. The range holding the tile's first k-tile (k = 0) is the tile's
// finisher: after its own k-tiles it waits for the flags of the ranges after it that start
// inside the tile (they compute those pieces first, so the wait is short), adds their partials
// in its registers, resets the flags for the next launch and stores the tile (stmatrix + TMA).
// Waiting on another block needs every block resident at once: one block an SM, the grid
// `SMS - SMS % 2`, as the other persistent rungs. A flag that never comes traps after ~2^24
// polls (a launch error) rather than hanging.

#include "wgmma.cu"

namespace tgh {

// The workspace holds the partial tiles of this many blocks (32768 floats each); a larger grid
// traps. The flags are one i32 per consumer per block, zero before the first launch.
constexpr int SK_MAX_BLOCKS = 256;
constexpr int SK_PARTIAL_FLOATS = S_CONSUMERS * 128 * (S_BN / 16) * 8;
// A stream-K range is at least this many k-tiles (fewer clusters take part when the leftover is
// small): a finisher then waits for a handful of partials, not one a k-tile.
constexpr int SK_MIN_ITERS = 8;

// One stretch of work: k-tiles [kb, ke) of tile `tile` (in the grouped order).
struct SkPiece {
  int tile, kb, ke;
};

// Which pieces each cluster computes: whole tiles cluster, cluster + clusters, ... of the
// data-parallel waves, then its range of the leftover tiles' k-iterations.
struct SkSchedule {
  // sk_iters < clusters * k_tiles: an int while K < 2^31 * 64 / SK_MAX_BLOCKS.
  int dp_tiles, k_tiles, clusters, sk_clusters, sk_iters;
  // stream_k false: every tile data-parallel (the persistent schedule of wgmma.cu).
  __device__ __forceinline__ SkSchedule(int tiles, int k_tiles_, int clusters_, bool stream_k) {
    k_tiles = k_tiles_;
    clusters = clusters_;
    dp_tiles = stream_k ? tiles - tiles % clusters : tiles;
    sk_iters = (tiles - dp_tiles) * k_tiles;
    // No range longer than a tile (at least one cluster a leftover tile), none shorter than
    // SK_MIN_ITERS where the tiles allow it.
    sk_clusters = max(tiles - dp_tiles, min(sk_iters / SK_MIN_ITERS, clusters));
    if (sk_clusters < 1) sk_clusters = 1;
  }
  // The first leftover k-iteration of stream-K cluster c (c == sk_clusters: the end).
  __device__ __forceinline__ int begin(int c) const { return (int)((long long)c * sk_iters / sk_clusters); }
};

struct SkCursor {
  int dp_tile, it, end;
  __device__ __forceinline__ SkCursor(const SkSchedule& s, int cluster) {
    dp_tile = cluster;
    const bool streams = cluster < s.sk_clusters && s.sk_iters > 0;
    it = streams ? s.begin(cluster) : 0;
    end = streams ? s.begin(cluster + 1) : 0;
  }
  __device__ __forceinline__ bool next(const SkSchedule& s, SkPiece& p) {
    if (dp_tile < s.dp_tiles) {
      p = SkPiece{dp_tile, 0, s.k_tiles};
      dp_tile += s.clusters;
      return true;
    }
    if (it >= end) return false;
    const int kb = it % s.k_tiles;
    const int ke = min(s.k_tiles, kb + (end - it));
    p = SkPiece{s.dp_tiles + it / s.k_tiles, kb, ke};
    it += ke - kb;
    return true;
  }
};

__device__ __forceinline__ int flag_load_acquire(const int* p) {
  int v;
  asm volatile("ld.acquire.gpu.global.b32 %0, [%1];\n" : "=r"(v) : "l"(p) : "memory");
  return v;
}
__device__ __forceinline__ void flag_store_release(int* p, int v) {
  asm volatile("st.release.gpu.global.b32 [%0], %1;\n" ::"l"(p), "r"(v) : "memory");
}

// A consumer's 64 x 256 f32 accumulators as 32 float4 a thread, laid out [i4][thread] so that a
// warp's accesses are contiguous.
__device__ __forceinline__ float4* partial_slot(float* work, int block, int c) {
  return reinterpret_cast<float4*>(work + (long long)block * SK_PARTIAL_FLOATS) + c * 32 * 128;
}

__device__ __forceinline__ void save_partial(const float (&d)[S_BN / 16][8], float* work, int* flags, int c, int t) {
  float4* slot = partial_slot(work, blockIdx.x, c);
#pragma unroll
  for (int i4 = 0; i4 < 32; ++i4) {
    const float* v = &d[i4 / 2][(i4 % 2) * 4];
    __stcg(slot + i4 * 128 + t, make_float4(v[0], v[1], v[2], v[3]));
  }
  __threadfence();
  asm volatile("bar.sync %0, 128;\n" ::"r"(2 + c) : "memory");
  if (t == 0) flag_store_release(&flags[blockIdx.x * S_CONSUMERS + c], 1);
}

// The finisher of tile `p.tile` (its k = 0 piece): adds the partials of the stream-K clusters
// after `cluster` whose ranges start inside the tile, then resets their flags.
__device__ __forceinline__ void add_partials(float (&d)[S_BN / 16][8], const SkSchedule& s, const SkPiece& p,
                                             int cluster, int rank, const float* work, int* flags, int c, int t) {
  const int tile_end = (p.tile - s.dp_tiles + 1) * s.k_tiles;
  constexpr int CLUSTER = 2;
  int last = cluster;
  for (int j = cluster + 1; j < s.sk_clusters && s.begin(j) < tile_end; ++j) {
    const int block = j * CLUSTER + rank;
    const int* flag = &flags[block * S_CONSUMERS + c];
    unsigned polls = 0;
    while (flag_load_acquire(flag) == 0) {
      if (++polls == (1u << 24)) __trap();
    }
    const float4* slot = partial_slot(const_cast<float*>(work), block, c);
#pragma unroll
    for (int i4 = 0; i4 < 32; ++i4) {
      const float4 v = __ldcg(slot + i4 * 128 + t);
      float* o = &d[i4 / 2][(i4 % 2) * 4];
      o[0] += v.x;
      o[1] += v.y;
      o[2] += v.z;
      o[3] += v.w;
    }
    last = j;
  }
  // Every thread has seen the flags before they go back to zero for the next launch.
  asm volatile("bar.sync %0, 128;\n" ::"r"(2 + c) : "memory");
  if (t == 0) {
    for (int j = cluster + 1; j <= last; ++j) flags[(j * CLUSTER + rank) * S_CONSUMERS + c] = 0;
  }
}

// The stmatrix epilogue through half the shared memory (4-stage rungs): the 64 x 256 tile in two
// passes of 64 x 128 (two 64 x 64 swizzled boxes each, 16 KiB a consumer); before the second
// pass one thread waits for the first pass's TMA stores to have read the buffer.
template <typename OutT>
__device__ __forceinline__ void store_tile_halves(const float (&d)[S_BN / 16][8], OutT* sC, const CUtensorMap* mapC,
                                                  int row0, int col0, int named_barrier) {
  const int t = threadIdx.x % 128;
  unsigned char* base = reinterpret_cast<unsigned char*>(sC);
  const int lane = t % 32, j = lane / 8, i = lane % 8;
  const unsigned row_addr = smem_addr(base) + (16 * (t / 32) + 8 * (j % 2) + i) * 128;
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    if (t == 0) asm volatile("cp.async.bulk.wait_group.read 0;\n" ::: "memory");
    asm volatile("bar.sync %0, 128;\n" ::"r"(named_barrier) : "memory");
#pragma unroll
    for (int c = 0; c < S_BN / 32; ++c) {
      const int c16 = (S_BN / 32) * h + c, chunk = (c16 % 4) * 2 + j / 2;
      const unsigned addr = row_addr + (c / 4) * (64 * 128) + ((chunk ^ i) * 16);
      asm volatile("stmatrix.sync.aligned.m8n8.x4.shared.b16 [%0], {%1, %2, %3, %4};\n" ::"r"(addr),
                   "r"(pack_pair<OutT>(d[c16][0], d[c16][1])), "r"(pack_pair<OutT>(d[c16][2], d[c16][3])),
                   "r"(pack_pair<OutT>(d[c16][4], d[c16][5])), "r"(pack_pair<OutT>(d[c16][6], d[c16][7]))
                   : "memory");
    }
    asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
    asm volatile("bar.sync %0, 128;\n" ::"r"(named_barrier) : "memory");
    if (t == 0) {
#pragma unroll
      for (int b = 0; b < 2; ++b) {
        asm volatile("cp.async.bulk.tensor.2d.global.shared::cta.bulk_group [%0, {%1, %2}], [%3];\n" ::"l"(
                         reinterpret_cast<unsigned long long>(mapC)),
                     "r"(col0 + (S_BN / 2) * h + 64 * b), "r"(row0), "r"(smem_addr(base + b * 64 * 128))
                     : "memory");
      }
      asm volatile("cp.async.bulk.commit_group;\n" ::: "memory");
    }
  }
}

// The producer thread: the same pieces as its consumers, a ring of STAGES. B's 256-row k-tile is
// multicast into both blocks of the cluster: by rank 0 as one box, or (SPLIT_B) as two 128-row
// boxes, one issued by each rank (mapB then has 64 x 128 boxes), so both SMs issue and request
// the same bytes from L2, as CUTLASS splits a multicast among a cluster's blocks. The two boxes
// land where the one would: 128 rows of 128 bytes is a whole number of 1024-byte swizzle spans.
template <typename T, bool SPLIT_B, int STAGES>
__device__ __forceinline__ void sk_produce(const SkSchedule& s, const TileOrder& order, int cluster, int rm, T* sA,
                                           T* sB, unsigned long long* full, unsigned long long* empty,
                                           const CUtensorMap* mapA, const CUtensorMap* mapB) {
  int slot = 0;
  unsigned phase = 0;
  SkCursor cursor(s, cluster);
  SkPiece p;
  while (cursor.next(s, p)) {
    int super_row, col;
    order.at(p.tile, super_row, col);
    const int row0 = (super_row * 2 + rm) * S_BM, col0 = col * S_BN;
    for (int kt = p.kb; kt < p.ke; ++kt) {
      bar_wait(&empty[slot], phase);
      bar_expect_bytes(&full[slot], (S_BM + S_BN) * BK * sizeof(T));
      tma_load(sA + slot * S_BM * BK, mapA, &full[slot], kt * BK, row0);
      if (SPLIT_B) {
        tma_load_multicast(sB + slot * S_BN * BK + rm * (S_BN / 2) * BK, mapB, &full[slot], kt * BK,
                           col0 + rm * (S_BN / 2), 0x3);
      } else if (rm == 0) {
        tma_load_multicast(sB + slot * S_BN * BK, mapB, &full[slot], kt * BK, col0, 0x3);
      }
      if (++slot == STAGES) {
        slot = 0;
        phase ^= 1;
      }
    }
  }
}

// Consumer warpgroup c: the keep-one mainloop over each piece's k-tiles, then either the tile's
// epilogue (a whole tile, or a finisher after adding the partials) or a saved partial.
template <typename T, typename OutT, int STAGES>
__device__ __forceinline__ void sk_consume(const SkSchedule& s, const TileOrder& order, int cluster, int rm, T* sA,
                                           T* sB, OutT* sC, unsigned long long* full, unsigned long long* empty,
                                           const CUtensorMap* mapC, float* work, int* flags, int c, int t) {
  constexpr int CLUSTER = 2;
  for (int st = 0; st < STAGES; ++st) free_slot<CLUSTER>(&empty[st], t);
  int slot = 0;
  unsigned phase = 0;
  float d[S_BN / 16][8];
  SkCursor cursor(s, cluster);
  SkPiece p;
  while (cursor.next(s, p)) {
    int super_row, col;
    order.at(p.tile, super_row, col);
    const int row0 = (super_row * 2 + rm) * S_BM, col0 = col * S_BN;
    zero(d);
    for (int kt = p.kb; kt < p.ke; ++kt) {
      bar_wait(&full[slot], phase);
      wgmma_fence();
#pragma unroll
      for (int k16 = 0; k16 < BK / 16; ++k16) {
        wgmma_n256<1>(d, sA + slot * S_BM * BK + c * 64 * BK + k16 * 16, sB + slot * S_BN * BK + k16 * 16);
      }
      wgmma_commit();
      asm volatile("wgmma.wait_group.sync.aligned 1;\n" ::: "memory");
      if (kt > p.kb) free_slot<CLUSTER>(&empty[slot == 0 ? STAGES - 1 : slot - 1], t);
      if (++slot == STAGES) {
        slot = 0;
        phase ^= 1;
      }
    }
    wgmma_wait_all();
    free_slot<CLUSTER>(&empty[slot == 0 ? STAGES - 1 : slot - 1], t);
    if (p.kb > 0) {
      save_partial(d, work, flags, c, t);
      continue;
    }
    if (p.ke < s.k_tiles) add_partials(d, s, p, cluster, rm, work, flags, c, t);
    if constexpr (STAGES == 3) {
      store_tile_tma<OutT, true>(d, sC + c * 64 * S_BN, mapC, row0 + 64 * c, col0, 2 + c);
    } else {
      store_tile_halves(d, sC + c * 64 * (S_BN / 2), mapC, row0 + 64 * c, col0, 2 + c);
    }
  }
  // Shared memory must outlive the stores' reads of it.
  if (t == 0) asm volatile("cp.async.bulk.wait_group 0;\n" ::: "memory");
}

// The persistent keep-one stmatrix kernel's body (2-block clusters, B multicast) with the
// stream-K tail (STREAM_K) or without; SPLIT_B: B's multicast issued half by each block (mapB
// with 64 x 128 boxes); STAGES 3 (a 32 KiB output tile a consumer) or 4 (16 KiB, two passes).
// `work`: SK_MAX_BLOCKS * SK_PARTIAL_FLOATS floats; `flags`: SK_MAX_BLOCKS * S_CONSUMERS ints,
// zero at the first launch (the kernel leaves them zero); unused without STREAM_K.
template <typename T, typename OutT, bool SPLIT_B, bool STREAM_K, int STAGES>
__device__ __forceinline__ void sk_body(int M, int N, int K, const CUtensorMap* mapA, const CUtensorMap* mapB,
                                        const CUtensorMap* mapC, float* work, int* flags) {
  constexpr int CLUSTER = 2;
  static_assert(STAGES == 3 || STAGES == 4, "3 stages with a whole output tile, 4 with half");
  require_multiples_of_8(N, K);
  if (gridDim.x > SK_MAX_BLOCKS || gridDim.x % CLUSTER != 0) __trap();
  extern __shared__ __align__(1024) unsigned char smem_raw[];
  unsigned char* smem = reinterpret_cast<unsigned char*>((reinterpret_cast<unsigned long long>(smem_raw) + 1023) & ~1023ull);
  T* sA = reinterpret_cast<T*>(smem);
  T* sB = sA + STAGES * S_BM * BK;
  OutT* sC = reinterpret_cast<OutT*>(sB + STAGES * S_BN * BK);
  constexpr int C_BYTES = S_CONSUMERS * 64 * (STAGES == 3 ? S_BN : S_BN / 2) * sizeof(OutT);
  unsigned long long* full = reinterpret_cast<unsigned long long*>(reinterpret_cast<unsigned char*>(sC) + C_BYTES);
  unsigned long long* empty = full + STAGES;

  unsigned rank;
  asm volatile("mov.u32 %0, %%cluster_ctarank;\n" : "=r"(rank));
  const int cluster = blockIdx.x / CLUSTER;
  const TileOrder order{(M + S_BM * CLUSTER - 1) / (S_BM * CLUSTER), (N + S_BN - 1) / S_BN};
  const SkSchedule sched(order.super_rows * order.cols, (K + BK - 1) / BK, gridDim.x / CLUSTER, STREAM_K);

  if (threadIdx.x == 0) {
    for (int st = 0; st < STAGES; ++st) {
      bar_init(&full[st], 1);
      bar_init(&empty[st], S_CONSUMERS * CLUSTER);
    }
    asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
  }
  cluster_sync();

  const int wg = threadIdx.x / 128, t = threadIdx.x % 128;
  if (wg == 0) {
    regs_dealloc<24>();
    if (t == 0) sk_produce<T, SPLIT_B, STAGES>(sched, order, cluster, rank, sA, sB, full, empty, mapA, mapB);
  } else {
    regs_alloc<240>();
    sk_consume<T, OutT, STAGES>(sched, order, cluster, rank, sA, sB, sC, full, empty, mapC, work, flags, wg - 1, t);
  }
  // No block leaves while another of its cluster may still arrive on its barriers.
  cluster_sync();
}

// The stream-K rungs: 3 stages and the whole-tile epilogue.
template <typename T, typename OutT, bool SPLIT_B = false>
__global__ void __launch_bounds__(128 * (S_CONSUMERS + 1), 1)
    ws_gemm_streamk(int M, int N, int K, const __grid_constant__ CUtensorMap mapA,
                    const __grid_constant__ CUtensorMap mapB, const __grid_constant__ CUtensorMap mapC, float* work,
                    int* flags) {
  sk_body<T, OutT, SPLIT_B, true, 3>(M, N, K, &mapA, &mapB, &mapC, work, flags);
}

// 4 stages, the output tile stored in two halves; STREAM_K: with the stream-K tail.
template <typename T, typename OutT, bool STREAM_K>
__global__ void __launch_bounds__(128 * (S_CONSUMERS + 1), 1)
    ws_gemm_stages4(int M, int N, int K, const __grid_constant__ CUtensorMap mapA,
                    const __grid_constant__ CUtensorMap mapB, const __grid_constant__ CUtensorMap mapC, float* work,
                    int* flags) {
  sk_body<T, OutT, false, STREAM_K, 4>(M, N, K, &mapA, &mapB, &mapC, work, flags);
}

}  // namespace tgh
