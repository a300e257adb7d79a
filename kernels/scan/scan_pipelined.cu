//! The look-back scan as a persistent, software-pipelined kernel (variant lookback_pipelined): each block takes tile after tile and has the next tile's 1D bulk copy (TMA) in flight while it scans, looks back and stores the current one. Builds on scan.cu's blocks.

#include "scan.cu"
#include "scan_bulk.cuh"

// A scan.cu tile at a time through two shared buffers. Thread 0 takes the next tile's ticket and
// starts its copy (cp.async.bulk, one instruction for TILE * 4 bytes, completion counted in bytes
// by an mbarrier) before the block works on the current tile, so the load of tile i + 1 overlaps
// the scan, look-back and stores of tile i; the threads issue no loads. The stores stay
// warp-striped int4 from shared memory. Tickets come from the counter in order, as in
// scan_lookback_smem, and a block finishes (publishes) its current tile before it waits on
// anything for its later ones (it holds up to two: the one being copied and the one taken ahead),
// so the smallest unpublished tile always belongs to a running block that is working on it: no
// deadlock. ITEMS / 4 should be odd (12, 20, 28): the blocked reads of a
// contiguous stage are then free of bank conflicts, and a bulk copy cannot pad the stage.

// 1: thread 0 takes each ticket a tile before its copy starts (the atomic's latency hidden); 0: when
// the copy starts (a tile's predecessors are then held for less time before they are loaded).
#ifndef TAKE_AHEAD
#define TAKE_AHEAD 1
#endif

// Thread 0: publishes `ticket` as the tile of the buffer `stage` and starts its bulk copy when it
// is a whole tile (the partial last tile is loaded by the threads when its turn comes).
__device__ __forceinline__ void prefetch(const T* __restrict__ x, unsigned ticket, unsigned full_tiles, T4* stage, unsigned* tile_sh,
                                         unsigned long long* bar)
{
    *tile_sh = ticket;
    if (ticket < full_tiles)
        bulk_load(stage, x + (long long)ticket * TILE, TILE * sizeof(T), bar);
}

extern "C" __global__ void __launch_bounds__(BLOCK) scan_lookback_pipelined(const T* __restrict__ x, T* y, unsigned long long* status,
                                                                           unsigned int* counter, int n)
{
    __shared__ __align__(128) T4 stage[2][TILE / 4];
    __shared__ __align__(8) unsigned long long full[2];
    __shared__ T warp_sh[BLOCK / 32 + 1];
    __shared__ unsigned tile_sh[2];
    __shared__ T prefix_sh;
    const unsigned tiles = (unsigned)(((long long)n + TILE - 1) / TILE);
    const unsigned full_tiles = (unsigned)(n / TILE);
    // Thread 0 takes each ticket one tile before its copy starts, so the atomic's round trip to L2
    // is hidden behind a whole tile of work instead of delaying the copy and warp 0.
    unsigned ticket = 0;
    if (threadIdx.x == 0) {
        barrier_init(&full[0], 1);
        barrier_init(&full[1], 1);
        asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory"); // as kernels/tma: the initialised
        fence_proxy_async();                                                // barriers visible to the copy engine
        prefetch(x, atomicAdd(counter, 1u), full_tiles, stage[0], &tile_sh[0], &full[0]);
        if (TAKE_AHEAD)
            ticket = atomicAdd(counter, 1u);
    }
    unsigned parity = 0; // bit b: the phase the next wait on full[b] waits for
    for (int buf = 0;; buf ^= 1) {
        __syncthreads(); // tile_sh[buf] written; every thread done with stage[buf ^ 1] (fenced below)
        const unsigned tile = tile_sh[buf];
        if (tile >= tiles) // uniform: every thread read the same ticket
            break;
        if (threadIdx.x == 0) {
            if (!TAKE_AHEAD)
                ticket = atomicAdd(counter, 1u);
            prefetch(x, ticket, full_tiles, stage[buf ^ 1], &tile_sh[buf ^ 1], &full[buf ^ 1]);
            if (TAKE_AHEAD && ticket < tiles) // past the last tile the block stops at its next turn: no more tickets
                ticket = atomicAdd(counter, 1u);
        }
        const long long tile_first = (long long)tile * TILE;
        if (tile < full_tiles) {
            barrier_wait(&full[buf], (parity >> buf) & 1u);
            parity ^= 1u << buf;
        } else {
            stage_load_striped<false>(x, tile_first, n, stage[buf]);
            __syncthreads();
        }
        T v[ITEMS];
        stage_read_blocked<false>(stage[buf], v);
        T run = thread_scan<EXCLUSIVE != 0>(v);
        T total;
        T excl = block_exclusive_scan<BLOCK>(run, warp_sh, &total); // its barriers order the reads of stage above before the writes below
        if (threadIdx.x < 32) { // all of warp 0, no barrier inside
            T prefix = lookback(status, tile, total);
            if (threadIdx.x == 0)
                prefix_sh = prefix;
        }
        __syncthreads();
        stage_write_blocked<false>(stage[buf], v, prefix_sh + excl);
        __syncthreads();
        stage_store_striped<false>(y, tile_first, n, stage[buf]);
        fence_proxy_async(); // this thread's accesses of stage[buf] before the copy that will refill it
    }
}

// ---------------------------------------------------------------------------------------------
// Early aggregates (variant lookback_early). Round 1 of scan_lookback_pipelined on an H200 showed
// the cost of holding tickets: a tile's aggregate is published only when its block reaches it, a
// tile or two after the ticket, and every successor's look-back waits that long. Here each block
// scans a tile as soon as its copy lands and publishes the aggregate at once; the tile's look-back,
// offsets and stores come in the next step, while the copy of the following tile is in flight:
//   take t0, copy, scan, publish A(t0);
//   loop: take t1 and start its copy; look back for t0, add, store t0; wait for t1, scan it,
//         publish A(t1); t0 = t1.
// A tile's predecessors thus publish about one load after their tickets, as in the one-launch
// kernels, while each block keeps a copy in flight behind its look-back and stores.
// ---------------------------------------------------------------------------------------------

// Waits for `tile` in stage (or loads the partial last tile with the threads), reads each
// thread's ITEMS values (blocked), scans them and the block's thread sums; returns the tile's sum.
__device__ __forceinline__ T scan_staged_tile(const T* __restrict__ x, int n, unsigned tile, unsigned full_tiles, T4* stage,
                                              unsigned long long* bar, unsigned& parity, int buf, T v[ITEMS], T* warp_sh, T& excl)
{
    if (tile < full_tiles) {
        barrier_wait(bar, (parity >> buf) & 1u);
        parity ^= 1u << buf;
    } else {
        stage_load_striped<false>(x, (long long)tile * TILE, n, stage);
        __syncthreads();
    }
    stage_read_blocked<false>(stage, v);
    T run = thread_scan<EXCLUSIVE != 0>(v);
    T total;
    excl = block_exclusive_scan<BLOCK>(run, warp_sh, &total); // its barriers order the reads of stage before later writes
    return total;
}

// Thread 0 publishes the tile's aggregate (tile 0: its inclusive prefix) as soon as it is known;
// lookback() publishes it again (the same word) before the inclusive prefix.
__device__ __forceinline__ void publish_aggregate(unsigned long long* status, unsigned tile, T total)
{
    if (threadIdx.x == 0) {
        volatile unsigned long long* vs = status;
        vs[tile] = pack(tile == 0 ? FLAG_P : FLAG_A, total);
    }
}

extern "C" __global__ void __launch_bounds__(BLOCK) scan_lookback_early(const T* __restrict__ x, T* y, unsigned long long* status,
                                                                       unsigned int* counter, int n)
{
    __shared__ __align__(128) T4 stage[2][TILE / 4];
    __shared__ __align__(8) unsigned long long full[2];
    __shared__ T warp_sh[BLOCK / 32 + 1];
    __shared__ unsigned tile_sh[2];
    __shared__ T prefix_sh;
    const unsigned tiles = (unsigned)(((long long)n + TILE - 1) / TILE);
    const unsigned full_tiles = (unsigned)(n / TILE);
    if (threadIdx.x == 0) {
        barrier_init(&full[0], 1);
        barrier_init(&full[1], 1);
        asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
        fence_proxy_async();
        prefetch(x, atomicAdd(counter, 1u), full_tiles, stage[0], &tile_sh[0], &full[0]);
    }
    __syncthreads();
    unsigned tile = tile_sh[0];
    if (tile >= tiles) // uniform
        return;
    unsigned parity = 0; // bit b: the phase the next wait on full[b] waits for
    int buf = 0;
    T v[ITEMS];
    T excl;
    T total = scan_staged_tile(x, n, tile, full_tiles, stage[0], &full[0], parity, 0, v, warp_sh, excl);
    publish_aggregate(status, tile, total);
    while (true) {
        if (threadIdx.x == 0) // the next tile's ticket and copy, in flight during this tile's look-back and stores
            prefetch(x, atomicAdd(counter, 1u), full_tiles, stage[buf ^ 1], &tile_sh[buf ^ 1], &full[buf ^ 1]);
        if (threadIdx.x < 32) { // all of warp 0, no barrier inside
            T prefix = lookback(status, tile, total);
            if (threadIdx.x == 0)
                prefix_sh = prefix;
        }
        __syncthreads(); // prefix_sh and tile_sh[buf ^ 1] written
        stage_write_blocked<false>(stage[buf], v, prefix_sh + excl);
        __syncthreads();
        stage_store_striped<false>(y, (long long)tile * TILE, n, stage[buf]);
        fence_proxy_async(); // this thread's accesses of stage[buf] before the copy that will refill it
        const unsigned next = tile_sh[buf ^ 1];
        if (next >= tiles) // uniform: no copy was started
            break;
        __syncthreads(); // every thread done with stage[buf] and prefix_sh
        buf ^= 1;
        tile = next;
        total = scan_staged_tile(x, n, tile, full_tiles, stage[buf], &full[buf], parity, buf, v, warp_sh, excl);
        publish_aggregate(status, tile, total);
    }
}
