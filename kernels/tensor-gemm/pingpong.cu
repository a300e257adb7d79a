//! The persistent GEMM with ping-pong consumers: each consumer warpgroup owns a whole output tile, the two take turns at the tensor pipe, one's epilogue overlapping the other's mainloop (sm_90a).
// In the persistent rungs of wgmma.cu and streamk.cu both consumer warpgroups work on the same
// 128 x 256 tile (64 rows each), so both reach the epilogue together and the tensor pipe idles
// while they store it: at 4096^3 that idle share is most of the ~6% the counters show. Here, as
// CUTLASS's KernelTmaWarpSpecializedPingpong (include/cutlass/gemm/kernel/
// sm90_gemm_tma_warpspecialized_pingpong.hpp), each consumer warpgroup computes a whole tile of
// its own (PP_BM x PP_BN: 128 x 128, or 64 x 256) and the block's tiles go to the two in turn
// (local tile j to warpgroup j % 2). The producer loads the tiles' k-tiles in that order into
// one ring; a warpgroup starts its mainloop only once the other has issued its last wgmma of the
// tile before (a named barrier, as CUTLASS's math-warpgroup OrderedSequenceBarrier), so the
// mainloops follow one another back to back on the tensor pipe and each warpgroup's epilogue
// (stmatrix + TMA store) runs while the other computes.
//
// That order barrier is also what makes the ring's parity waits sound: a warpgroup jumps over the
// other's k-tiles (its ring position advances by the other's k-tile count), and it must not wait
// on a slot's full barrier before the slot's previous fill has completed, or the parity test
// would pass one phase early. The other warpgroup has waited on every k-tile of the tiles before
// this one when it arrives, so every earlier fill has completed.
//
// Clusters of 2 blocks on vertically neighbouring tiles (256 x PP_BN of C), B's k-tile multicast
// into both by rank 0, as the other persistent rungs; each consumer frees a slot in both blocks.
// Each consumer stores its tile through its own 16 KiB of shared memory in passes of 64 x 128
// (two 64 x 64 boxes, 128B swizzle), as store_tile_halves in streamk.cu.

#include "wgmma.cu"

namespace tgh {

constexpr int PP_CLUSTER = 2;
// Named barriers: 0 is __syncthreads; 2 + c the epilogue of consumer c (as the other rungs);
// PP_ORDER_BAR + c "consumer c may start its mainloop".
constexpr int PP_ORDER_BAR = 4;
// A consumer's epilogue buffer: one 64 x 128 pass (two 64 x 64 boxes of 128-byte rows).
constexpr int PP_EPI_BYTES = 64 * 128 * 2;

__device__ __forceinline__ void named_sync(int id, int threads) {
  asm volatile("bar.sync %0, %1;\n" ::"r"(id), "r"(threads) : "memory");
}
__device__ __forceinline__ void named_arrive(int id, int threads) {
  asm volatile("bar.arrive %0, %1;\n" ::"r"(id), "r"(threads) : "memory");
}

// One k16 step of a 64-row block of the tile: wgmma m64n128k16 or m64n256k16.
template <typename T, int N16>
__device__ __forceinline__ void wgmma_rows64(float (&d)[N16][8], const T* sA, const T* sB) {
  static_assert(N16 == 8 || N16 == 16, "tiles 128 or 256 columns wide");
  if constexpr (N16 == 8) {
    wgmma_n128<1>(d, sA, sB);
  } else {
    wgmma_n256<1>(d, sA, sB);
  }
}

// A ring position: slot and parity of the k-tile's fill, moved on by n k-tiles.
struct RingPos {
  int slot;
  unsigned phase;
  template <int STAGES>
  __device__ __forceinline__ void advance(int n) {
    slot += n;
    phase ^= (unsigned)((slot / STAGES) & 1);
    slot %= STAGES;
  }
};

// One 64 x 128 pass of the epilogue: columns 16 * C16_BEGIN .. + 127 of the 64-row block d, by
// stmatrix into the consumer's swizzled buffer, then two TMA stores at (row0, col0) once the
// buffer is written; before writing it one thread waits for the previous pass's stores to have
// read it.
template <typename OutT, int N16, int C16_BEGIN>
__device__ __forceinline__ void store_pass(const float (&d)[N16][8], OutT* sC, const CUtensorMap* mapC, int row0,
                                           int col0, int named_barrier) {
  static_assert(sizeof(OutT) == 2, "the TMA epilogue is for f16/bf16 outputs");
  const int t = threadIdx.x % 128;
  unsigned char* base = reinterpret_cast<unsigned char*>(sC);
  const int lane = t % 32, j = lane / 8, i = lane % 8;
  const unsigned row_addr = smem_addr(base) + (16 * (t / 32) + 8 * (j % 2) + i) * 128;
  if (t == 0) asm volatile("cp.async.bulk.wait_group.read 0;\n" ::: "memory");
  named_sync(named_barrier, 128);
#pragma unroll
  for (int c = 0; c < 8; ++c) {
    const int c16 = C16_BEGIN + c, chunk = (c % 4) * 2 + j / 2;
    const unsigned addr = row_addr + (c / 4) * (64 * 128) + ((chunk ^ i) * 16);
    asm volatile("stmatrix.sync.aligned.m8n8.x4.shared.b16 [%0], {%1, %2, %3, %4};\n" ::"r"(addr),
                 "r"(pack_pair<OutT>(d[c16][0], d[c16][1])), "r"(pack_pair<OutT>(d[c16][2], d[c16][3])),
                 "r"(pack_pair<OutT>(d[c16][4], d[c16][5])), "r"(pack_pair<OutT>(d[c16][6], d[c16][7]))
                 : "memory");
  }
  // The generic-proxy writes must be visible to the TMA engine (async proxy) before it reads them.
  asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
  named_sync(named_barrier, 128);
  if (t == 0) {
#pragma unroll
    for (int b = 0; b < 2; ++b) {
      asm volatile("cp.async.bulk.tensor.2d.global.shared::cta.bulk_group [%0, {%1, %2}], [%3];\n" ::"l"(
                       reinterpret_cast<unsigned long long>(mapC)),
                   "r"(col0 + 64 * b), "r"(row0), "r"(smem_addr(base + b * 64 * 128))
                   : "memory");
    }
    asm volatile("cp.async.bulk.commit_group;\n" ::: "memory");
  }
}

// The producer thread: every tile of this cluster in turn (both consumers' tiles), k-tile by
// k-tile into the ring. A's BM rows are this block's; B's BN rows are multicast into both blocks
// by rank 0, or (SPLIT_B) half by each rank (mapB then has BN / 2-row boxes; a half of 64 rows of
// 128 bytes is a whole number of 1024-byte swizzle spans, so the halves land where the whole would).
template <typename T, int BM, int BN, int STAGES, bool SPLIT_B>
__device__ __forceinline__ void pp_produce(const TileOrder& order, int tiles, int k_tiles, int cluster, int clusters,
                                           int rm, T* sA, T* sB, unsigned long long* full,
                                           unsigned long long* empty, const CUtensorMap* mapA,
                                           const CUtensorMap* mapB) {
  RingPos pos{0, 0};
  for (int tile = cluster; tile < tiles; tile += clusters) {
    int super_row, col;
    order.at(tile, super_row, col);
    const int row0 = (super_row * PP_CLUSTER + rm) * BM, col0 = col * BN;
    for (int kt = 0; kt < k_tiles; ++kt) {
      bar_wait(&empty[pos.slot], pos.phase);
      bar_expect_bytes(&full[pos.slot], (BM + BN) * BK * sizeof(T));
      tma_load(sA + pos.slot * BM * BK, mapA, &full[pos.slot], kt * BK, row0);
      if constexpr (SPLIT_B) {
        tma_load_multicast(sB + pos.slot * BN * BK + rm * (BN / 2) * BK, mapB, &full[pos.slot], kt * BK,
                           col0 + rm * (BN / 2), 0x3);
      } else if (rm == 0) {
        tma_load_multicast(sB + pos.slot * BN * BK, mapB, &full[pos.slot], kt * BK, col0, 0x3);
      }
      pos.advance<STAGES>(1);
    }
  }
}

// Consumer warpgroup c: the block's tiles c, c + 2, ... (its j-th tile is cluster + j * clusters
// in the grouped order). The keep-one mainloop of CUTLASS (wgmma.wait_group 1, the previous
// k-tile's slot freed once this one's wgmmas are issued), bracketed by the order barrier.
template <typename T, typename OutT, int BM, int BN, int STAGES>
__device__ __forceinline__ void pp_consume(const TileOrder& order, int tiles, int k_tiles, int cluster, int clusters,
                                           int rm, T* sA, T* sB, OutT* sC, unsigned long long* full,
                                           unsigned long long* empty, const CUtensorMap* mapC, int c, int t) {
  constexpr int MB = BM / 64, N16 = BN / 16;
  // Every slot starts empty: consumer 0 makes the first phase of each complete, one arrival
  // from this block on each block of the cluster.
  if (c == 0) {
    for (int st = 0; st < STAGES; ++st) free_slot<PP_CLUSTER>(&empty[st], t);
  }
  RingPos pos{0, 0};
  pos.advance<STAGES>(c * k_tiles);
  float d[MB][N16][8];
  for (int j = c; cluster + j * clusters < tiles; j += 2) {
    const int tile = cluster + j * clusters;
    const bool next_exists = tile + clusters < tiles;
    int super_row, col;
    order.at(tile, super_row, col);
    const int row0 = (super_row * PP_CLUSTER + rm) * BM, col0 = col * BN;
#pragma unroll
    for (int mb = 0; mb < MB; ++mb) zero(d[mb]);
    // The other consumer has issued the whole mainloop of tile j - 1.
    if (j > 0) named_sync(PP_ORDER_BAR + c, 256);
    for (int kt = 0; kt < k_tiles; ++kt) {
      bar_wait(&full[pos.slot], pos.phase);
      wgmma_fence();
#pragma unroll
      for (int k16 = 0; k16 < BK / 16; ++k16) {
#pragma unroll
        for (int mb = 0; mb < MB; ++mb) {
          wgmma_rows64<T, N16>(d[mb], sA + pos.slot * BM * BK + mb * 64 * BK + k16 * 16,
                               sB + pos.slot * BN * BK + k16 * 16);
        }
      }
      wgmma_commit();
      asm volatile("wgmma.wait_group.sync.aligned 1;\n" ::: "memory");
      if (kt > 0) free_slot<PP_CLUSTER>(&empty[pos.slot == 0 ? STAGES - 1 : pos.slot - 1], t);
      pos.advance<STAGES>(1);
    }
    // The other consumer may start tile j + 1 (if there is one: arrivals match waits).
    if (next_exists) named_arrive(PP_ORDER_BAR + (1 - c), 256);
    wgmma_wait_all();
    free_slot<PP_CLUSTER>(&empty[pos.slot == 0 ? STAGES - 1 : pos.slot - 1], t);
    // Skip the other consumer's tile j + 1 in the ring.
    pos.advance<STAGES>(k_tiles);
    // The epilogue, while the other consumer computes: 2 passes of 64 x 128.
    if constexpr (MB == 2) {
      store_pass<OutT, N16, 0>(d[0], sC, mapC, row0, col0, 2 + c);
      store_pass<OutT, N16, 0>(d[1], sC, mapC, row0 + 64, col0, 2 + c);
    } else {
      store_pass<OutT, N16, 0>(d[0], sC, mapC, row0, col0, 2 + c);
      store_pass<OutT, N16, 8>(d[0], sC, mapC, row0, col0 + 128, 2 + c);
    }
  }
  // Shared memory must outlive the stores' reads of it.
  if (t == 0) asm volatile("cp.async.bulk.wait_group 0;\n" ::: "memory");
}

// The ping-pong kernel: 384 threads (a producer warpgroup and two consumers), a persistent grid
// of 2-block clusters. BM x BN: a consumer's tile (128 x 128 with A's 64 x 128 boxes and B's
// 64 x 128, or 64 x 256 with A's 64 x 64 and B's 64 x 256); STAGES k-tiles of (BM + BN) x 64.
// Dynamic shared memory: STAGES * (BM + BN) * 128 + 2 * 16384 + 1024 + 128 bytes. SPLIT_B: B's
// multicast issued half by each block of the cluster.
template <typename T, typename OutT, int BM, int BN, int STAGES, bool SPLIT_B = false>
__global__ void __launch_bounds__(384, 1)
    ws_gemm_pingpong(int M, int N, int K, const __grid_constant__ CUtensorMap mapA,
                     const __grid_constant__ CUtensorMap mapB, const __grid_constant__ CUtensorMap mapC) {
  static_assert((BM == 128 && BN == 128) || (BM == 64 && BN == 256), "tiles of 128 x 128 or 64 x 256");
  require_multiples_of_8(N, K);
  if (gridDim.x % PP_CLUSTER != 0) __trap();
  extern __shared__ __align__(1024) unsigned char smem_raw[];
  unsigned char* smem = reinterpret_cast<unsigned char*>((reinterpret_cast<unsigned long long>(smem_raw) + 1023) & ~1023ull);
  T* sA = reinterpret_cast<T*>(smem);
  T* sB = sA + STAGES * BM * BK;
  OutT* sC = reinterpret_cast<OutT*>(sB + STAGES * BN * BK);
  unsigned long long* full = reinterpret_cast<unsigned long long*>(reinterpret_cast<unsigned char*>(sC) + 2 * PP_EPI_BYTES);
  unsigned long long* empty = full + STAGES;

  unsigned rank;
  asm volatile("mov.u32 %0, %%cluster_ctarank;\n" : "=r"(rank));
  const int cluster = blockIdx.x / PP_CLUSTER, clusters = gridDim.x / PP_CLUSTER;
  const TileOrder order{(M + BM * PP_CLUSTER - 1) / (BM * PP_CLUSTER), (N + BN - 1) / BN};
  const int tiles = order.super_rows * order.cols;
  const int k_tiles = (K + BK - 1) / BK;

  if (threadIdx.x == 0) {
    for (int st = 0; st < STAGES; ++st) {
      bar_init(&full[st], 1);
      // One consumer of every block of the cluster frees a slot (the multicast wrote it in all).
      bar_init(&empty[st], PP_CLUSTER);
    }
    asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
  }
  cluster_sync();

  const int wg = threadIdx.x / 128, t = threadIdx.x % 128;
  if (wg == 0) {
    regs_dealloc<24>();
    if (t == 0) {
      pp_produce<T, BM, BN, STAGES, SPLIT_B>(order, tiles, k_tiles, cluster, clusters, rank, sA, sB, full, empty, &mapA,
                                    &mapB);
    }
  } else {
    regs_alloc<240>();
    const int c = wg - 1;
    pp_consume<T, OutT, BM, BN, STAGES>(order, tiles, k_tiles, cluster, clusters, rank, sA, sB,
                                        sC + c * (PP_EPI_BYTES / sizeof(OutT)), full, empty, &mapC, c, t);
  }
  // No block leaves while another of its cluster may still arrive on its barriers.
  cluster_sync();
}

}  // namespace tgh
