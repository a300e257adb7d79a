//! The persistent cooperative GEMM (128 x 256 tiles, 2-block clusters) with each tile's epilogue deferred under the next tile's first wgmmas, so the tensor pipe does not stop for the stores (sm_90a).
// In the cooperative persistent rungs (wgmma.cu, streamk.cu) both consumer warpgroups finish a
// tile together, then both store it (stmatrix into shared memory, TMA store; with 4 stages in two
// 64 x 128 passes, the second waiting for the first's TMA store to have read the buffer) before
// either issues a wgmma of the next tile: the tensor pipe idles for the whole epilogue, the
// largest stall left at 4096^3 (barrier stalls of 8.7-8.8 warps an issue, README.md).
//
// Here a consumer keeps the 128 x 256 cooperative tile (its bytes a flop, which the ping-pong
// rungs' 128 x 128 tiles lost) and moves its epilogue under the next tile's mainloop, which
// wgmma's asynchrony allows within one warpgroup: at the end of a tile it rounds its 128 f32
// accumulators to 64 registers of bf16 pairs (the output as stored), zeroes the accumulators,
// issues the next tile's first k-tile of wgmmas and, while the tensor pipe runs them, writes the
// first pass of the rounded tile by stmatrix and starts its TMA store; the second pass follows
// the second k-tile's wgmmas. The accumulators are never touched while wgmmas are in flight: the
// stores read only the packed registers. The last tile's epilogue runs after the loop.
//
// STAGES 4 with PASSES 2 (16 KiB of output buffer a consumer, the 4-stage rung's layout:
// 230 528 bytes of shared memory), or STAGES 3 with PASSES 1 (the whole 64 x 256 tile through
// 32 KiB, after the first k-tile). Clusters of 2 blocks on vertically neighbouring tiles, B's
// k-tile multicast into both by rank 0, the grouped tile order and keep-one mainloop of the other
// persistent rungs.

#include "wgmma.cu"

namespace tgh {

constexpr int OV_CLUSTER = 2;

// A consumer's 64 x 256 tile rounded once to OutT, two outputs a register: packed[c16][q] holds
// d[c16][2q] and d[c16][2q + 1] (the pairs stmatrix stores).
template <typename OutT>
__device__ __forceinline__ void pack_tile(const float (&d)[S_BN / 16][8], unsigned (&packed)[S_BN / 16][4]) {
#pragma unroll
  for (int c16 = 0; c16 < S_BN / 16; ++c16) {
#pragma unroll
    for (int q = 0; q < 4; ++q) packed[c16][q] = pack_pair<OutT>(d[c16][2 * q], d[c16][2 * q + 1]);
  }
}

// Pass H of PASSES of a consumer's epilogue from the packed registers: columns (256 / PASSES) * H
// onward of the tile at (row0, col0), by stmatrix into the consumer's 128B-swizzled buffer (64 x 64
// boxes of 128-byte rows, the layout of store_tile_tma in wgmma.cu), then one thread stores the
// boxes with TMA (clipped at C's edges). Before writing the buffer that thread waits for the
// previous pass's stores to have read it.
template <int H, int PASSES>
__device__ __forceinline__ void store_packed_pass(const unsigned (&packed)[S_BN / 16][4], unsigned char* buffer,
                                                  const CUtensorMap* mapC, int row0, int col0, int named_barrier) {
  constexpr int C16S = (S_BN / 16) / PASSES, BOXES = (S_BN / 64) / PASSES;
  const int t = threadIdx.x % 128;
  // Lane l gives the address of row l % 8 of matrix l / 8: matrices 0 and 1 are rows 0-7 and
  // 8-15 of the warp's 16 at the first 8 columns, 2 and 3 the same at the next 8.
  const int lane = t % 32, j = lane / 8, i = lane % 8;
  const unsigned row_addr = smem_addr(buffer) + (16 * (t / 32) + 8 * (j % 2) + i) * 128;
  if (t == 0) asm volatile("cp.async.bulk.wait_group.read 0;\n" ::: "memory");
  asm volatile("bar.sync %0, 128;\n" ::"r"(named_barrier) : "memory");
#pragma unroll
  for (int c = 0; c < C16S; ++c) {
    const int c16 = C16S * H + c, chunk = (c16 % 4) * 2 + j / 2;
    const unsigned addr = row_addr + (c / 4) * (64 * 128) + ((chunk ^ i) * 16);
    asm volatile("stmatrix.sync.aligned.m8n8.x4.shared.b16 [%0], {%1, %2, %3, %4};\n" ::"r"(addr),
                 "r"(packed[c16][0]), "r"(packed[c16][1]), "r"(packed[c16][2]), "r"(packed[c16][3])
                 : "memory");
  }
  // The generic-proxy writes must be visible to the TMA engine (async proxy) before it reads them.
  asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
  asm volatile("bar.sync %0, 128;\n" ::"r"(named_barrier) : "memory");
  if (t == 0) {
#pragma unroll
    for (int b = 0; b < BOXES; ++b) {
      asm volatile("cp.async.bulk.tensor.2d.global.shared::cta.bulk_group [%0, {%1, %2}], [%3];\n" ::"l"(
                       reinterpret_cast<unsigned long long>(mapC)),
                   "r"(col0 + (S_BN / PASSES) * H + 64 * b), "r"(row0), "r"(smem_addr(buffer + b * 64 * 128))
                   : "memory");
    }
    asm volatile("cp.async.bulk.commit_group;\n" ::: "memory");
  }
}

// Pass `pass` (a run-time index below PASSES) of the pending epilogue.
template <int PASSES>
__device__ __forceinline__ void store_pending_pass(int pass, const unsigned (&packed)[S_BN / 16][4],
                                                   unsigned char* buffer, const CUtensorMap* mapC, int row0,
                                                   int col0, int named_barrier) {
  static_assert(PASSES == 1 || PASSES == 2, "the tile in one pass or two");
  if (PASSES == 1 || pass == 0) {
    store_packed_pass<0, PASSES>(packed, buffer, mapC, row0, col0, named_barrier);
  } else {
    store_packed_pass<PASSES - 1, PASSES>(packed, buffer, mapC, row0, col0, named_barrier);
  }
}

// The producer thread: this cluster's tiles in the grouped order, k-tile by k-tile into a ring of
// STAGES; A's 128 rows are this block's, B's 256 multicast into both blocks by rank 0.
template <typename T, int STAGES>
__device__ __forceinline__ void ov_produce(const TileOrder& order, int tiles, int k_tiles, int cluster, int clusters,
                                           int rm, T* sA, T* sB, unsigned long long* full,
                                           unsigned long long* empty, const CUtensorMap* mapA,
                                           const CUtensorMap* mapB) {
  int slot = 0;
  unsigned phase = 0;
  for (int tile = cluster; tile < tiles; tile += clusters) {
    int super_row, col;
    order.at(tile, super_row, col);
    const int row0 = (super_row * OV_CLUSTER + rm) * S_BM, col0 = col * S_BN;
    for (int kt = 0; kt < k_tiles; ++kt) {
      bar_wait(&empty[slot], phase);
      bar_expect_bytes(&full[slot], (S_BM + S_BN) * BK * sizeof(T));
      tma_load(sA + slot * S_BM * BK, mapA, &full[slot], kt * BK, row0);
      if (rm == 0) tma_load_multicast(sB + slot * S_BN * BK, mapB, &full[slot], kt * BK, col0, 0x3);
      if (++slot == STAGES) {
        slot = 0;
        phase ^= 1;
      }
    }
  }
}

// A consumer's row and column origin of tile `tile` (rows 64c .. 64c + 63 of the block's 128).
__device__ __forceinline__ void ov_origin(const TileOrder& order, int tile, int rm, int c, int& row0, int& col0) {
  int super_row, col;
  order.at(tile, super_row, col);
  row0 = (super_row * OV_CLUSTER + rm) * S_BM + 64 * c;
  col0 = col * S_BN;
}

// Consumer warpgroup c: rows 64c .. 64c + 63 of each tile, the keep-one mainloop (the previous
// k-tile's slot freed once this one's wgmmas are issued), the previous tile's epilogue passes
// after the first PASSES k-tiles' wgmmas are issued. `buffer`: this consumer's output buffer.
// LEAN: less work between a tile's last wgmma and the next tile's first, where the tensor pipe
// waits: the first wgmma of a tile overwrites the accumulators (scale-d 0) instead of adding to
// zeroed ones (128 register moves a thread), and the next tile's origin is computed under the
// first k-tile's wgmmas instead of after the last's. The first k-tile is its own copy of the
// loop body, so that each copy's four wgmmas form one straight run (where the two forms of the
// issue met inside one body, ptxas added a dummy HGMMA.64x8x16 to every k-tile).
template <typename T, typename OutT, int STAGES, int PASSES, bool LEAN>
struct OvConsumer {
  const TileOrder& order;
  int tiles, k_tiles, clusters, rm, c, t;
  const T* sA;
  const T* sB;
  unsigned char* buffer;
  unsigned long long* full;
  unsigned long long* empty;
  const CUtensorMap* mapC;
  int slot = 0;
  unsigned phase = 0;
  float d[S_BN / 16][8];
  unsigned packed[S_BN / 16][4];
  // The tile whose epilogue is pending (packed), and how many of its passes are stored.
  bool pending = false;
  int pending_row0 = 0, pending_col0 = 0, passes_done = 0;
  // The origin of the tile being computed and of the next one.
  int row0 = 0, col0 = 0, next_row0 = 0, next_col0 = 0;

  // k-tile kt of tile `tile`: its wgmmas (FIRST_OVERWRITES: the first with scale-d 0), the slot
  // before it freed, and under its wgmmas a pass of the pending epilogue (and, LEAN, the origin
  // of the next tile).
  template <bool FIRST_OVERWRITES>
  __device__ __forceinline__ void k_tile(int tile, int kt) {
    bar_wait(&full[slot], phase);
    wgmma_fence();
    const T* a = sA + slot * S_BM * BK + c * 64 * BK;
    const T* b = sB + slot * S_BN * BK;
    if constexpr (FIRST_OVERWRITES) {
      wgmma_n256<0>(d, a, b);
    } else {
      wgmma_n256<1>(d, a, b);
    }
#pragma unroll
    for (int k16 = 1; k16 < BK / 16; ++k16) wgmma_n256<1>(d, a + k16 * 16, b + k16 * 16);
    wgmma_commit();
    asm volatile("wgmma.wait_group.sync.aligned 1;\n" ::: "memory");
    if (kt > 0) free_slot<OV_CLUSTER>(&empty[slot == 0 ? STAGES - 1 : slot - 1], t);
    if (++slot == STAGES) {
      slot = 0;
      phase ^= 1;
    }
    // This k-tile's wgmmas are in flight: store a pass of the previous tile meanwhile.
    if (pending && kt < PASSES) {
      store_pending_pass<PASSES>(kt, packed, buffer, mapC, pending_row0, pending_col0, 2 + c);
      passes_done = kt + 1;
    }
    if (LEAN && kt == 0 && tile + clusters < tiles) ov_origin(order, tile + clusters, rm, c, next_row0, next_col0);
  }

  __device__ __forceinline__ void run(int cluster) {
    for (int st = 0; st < STAGES; ++st) free_slot<OV_CLUSTER>(&empty[st], t);
    if (cluster < tiles) ov_origin(order, cluster, rm, c, row0, col0);
    for (int tile = cluster; tile < tiles; tile += clusters) {
      // (LEAN with no k-tile at all, K = 0: C is zero, as without LEAN.)
      if (!LEAN || k_tiles == 0) zero(d);
      if (k_tiles > 0) k_tile<LEAN>(tile, 0);
#pragma unroll 1
      for (int kt = 1; kt < k_tiles; ++kt) k_tile<false>(tile, kt);
      wgmma_wait_all();
      free_slot<OV_CLUSTER>(&empty[slot == 0 ? STAGES - 1 : slot - 1], t);
      // Fewer k-tiles than passes: the rest of the previous tile's epilogue before its registers go.
      if (pending) {
        for (int pass = passes_done; pass < PASSES; ++pass) {
          store_pending_pass<PASSES>(pass, packed, buffer, mapC, pending_row0, pending_col0, 2 + c);
        }
      }
      pack_tile<OutT>(d, packed);
      pending = true;
      pending_row0 = row0;
      pending_col0 = col0;
      passes_done = 0;
      if ((!LEAN || k_tiles == 0) && tile + clusters < tiles) {
        ov_origin(order, tile + clusters, rm, c, next_row0, next_col0);
      }
      row0 = next_row0;
      col0 = next_col0;
    }
    if (pending) {
      for (int pass = 0; pass < PASSES; ++pass) {
        store_pending_pass<PASSES>(pass, packed, buffer, mapC, pending_row0, pending_col0, 2 + c);
      }
    }
    // Shared memory must outlive the stores' reads of it.
    if (t == 0) asm volatile("cp.async.bulk.wait_group 0;\n" ::: "memory");
  }
};

// The kernel: 384 threads (a producer warpgroup and two consumers), a persistent grid of 2-block
// clusters (`SMS - SMS % 2` blocks), f16/bf16 C through mapC (64 x 64 boxes, 128B swizzle).
// Dynamic shared memory: STAGES * 48 KiB + 2 * 32 KiB / PASSES + 1024 + 128 bytes.
// LEAN: the consumers' LEAN form, and the producer warpgroup's three warps that issue nothing
// exit at once (barrier.cluster.wait waits for the cluster's non-exited threads only) instead of
// waiting out the kernel at the final cluster barrier.
template <typename T, typename OutT, int STAGES, int PASSES, bool LEAN = false>
__global__ void __launch_bounds__(128 * (S_CONSUMERS + 1), 1)
    ws_gemm_epilogue_overlap(int M, int N, int K, const __grid_constant__ CUtensorMap mapA,
                             const __grid_constant__ CUtensorMap mapB, const __grid_constant__ CUtensorMap mapC) {
  static_assert(sizeof(OutT) == 2, "the TMA epilogue is for f16/bf16 outputs");
  static_assert((STAGES == 4 && PASSES == 2) || (STAGES == 3 && PASSES == 1), "what fits 227 KiB");
  require_multiples_of_8(N, K);
  if (gridDim.x % OV_CLUSTER != 0) __trap();
  constexpr int BUFFER_BYTES = 64 * S_BN * sizeof(OutT) / PASSES;  // a consumer's
  extern __shared__ __align__(1024) unsigned char smem_raw[];
  unsigned char* smem = reinterpret_cast<unsigned char*>((reinterpret_cast<unsigned long long>(smem_raw) + 1023) & ~1023ull);
  T* sA = reinterpret_cast<T*>(smem);
  T* sB = sA + STAGES * S_BM * BK;
  unsigned char* sC = reinterpret_cast<unsigned char*>(sB + STAGES * S_BN * BK);
  unsigned long long* full = reinterpret_cast<unsigned long long*>(sC + S_CONSUMERS * BUFFER_BYTES);
  unsigned long long* empty = full + STAGES;

  unsigned rank;
  asm volatile("mov.u32 %0, %%cluster_ctarank;\n" : "=r"(rank));
  const int cluster = blockIdx.x / OV_CLUSTER, clusters = gridDim.x / OV_CLUSTER;
  const TileOrder order{(M + S_BM * OV_CLUSTER - 1) / (S_BM * OV_CLUSTER), (N + S_BN - 1) / S_BN};
  const int tiles = order.super_rows * order.cols;
  const int k_tiles = (K + BK - 1) / BK;

  if (threadIdx.x == 0) {
    for (int st = 0; st < STAGES; ++st) {
      bar_init(&full[st], 1);
      // Every consumer of every block of the cluster frees a slot: the multicasts write it in all.
      bar_init(&empty[st], S_CONSUMERS * OV_CLUSTER);
    }
    asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
  }
  cluster_sync();

  const int wg = threadIdx.x / 128, t = threadIdx.x % 128;
  if (wg == 0) {
    regs_dealloc<24>();
    if (LEAN && t >= 32) return;
    if (t == 0) ov_produce<T, STAGES>(order, tiles, k_tiles, cluster, clusters, rank, sA, sB, full, empty, &mapA, &mapB);
  } else {
    regs_alloc<240>();
    const int c = wg - 1;
    OvConsumer<T, OutT, STAGES, PASSES, LEAN> consumer{order, tiles, k_tiles, clusters, (int)rank, c, t, sA, sB,
                                                       sC + c * BUFFER_BYTES, full, empty, &mapC};
    consumer.run(cluster);
  }
  // No block leaves while another of its cluster may still arrive on its barriers.
  cluster_sync();
}

}  // namespace tgh
