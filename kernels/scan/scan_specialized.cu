//! The look-back scan as a persistent, warp-specialised kernel (variant lookback_specialized): a producer warp keeps STAGES tiles' bulk copies in flight, an aggregator warp publishes each tile's sum the moment its copy lands and does its look-back, and BLOCK consumer threads scan, offset and store. Builds on scan.cu's staged tiles and look-back and scan_bulk.cuh's bulk copies and barriers.

#include "scan.cu"
#include "scan_bulk.cuh"

// Round 2 of lookback_pipelined on an H100 (README) left DRAM 58% busy at 2^27: a tile's
// aggregate was published only when its block reached the tile, a tile or two after its ticket,
// and every successor's look-back waited for it. Here the roles are split between warps, each
// with its own loop over the block's tiles, joined by mbarriers per stage:
//   producer (warp BLOCK / 32): takes a ticket, waits until the stage is free, copies the tile
//     into it (cp.async.bulk; the partial last tile's tail by the warp's lanes), STAGES tiles
//     ahead of the consumers;
//   aggregator (warp BLOCK / 32 + 1): waits for the copy, sums the tile from shared memory,
//     publishes the sum (flag A) at once, looks back, publishes the inclusive prefix (flag P),
//     and hands the tile's exclusive prefix to the consumers;
//   consumers (warps 0 .. BLOCK / 32 - 1, named barrier 1): scan the tile, wait for the prefix,
//     write the result back into the stage and store it (warp-striped int4, or one bulk store),
//     then free the stage.
// A tile's sum is thus published about one copy latency after its ticket whatever the consumers
// are doing, and its look-back runs while the consumers scan. No deadlock: tickets are taken in
// order and each is copied as soon as its stage is free (the producer holds at most one ticket
// it has not copied). Let m be the smallest tile with no sum published. Every tile before m in
// m's block is earlier, so its look-back finds every predecessor's sum and ends (at tile 0 at the
// latest); its consumers then free its stage, so m's copy starts, lands, and m's sum is published.

// Tiles a block holds in shared memory (dynamic: STAGES * TILE * 4 bytes).
#ifndef STAGES
#define STAGES 3
#endif
// 1: the consumers write each whole tile back with one bulk store (cp.async.bulk) from the stage;
// 0: with warp-striped int4 stores.
#ifndef BULK_STORE
#define BULK_STORE 0
#endif

// 0: the aggregator looks back as every other look-back does (lookback(): 32 predecessors a round
// trip, until one holds an inclusive prefix). W > 0: it reads W windows of 32 at once and counts
// its block's previous tile as an inclusive prefix it already holds (see lookback_from()).
#ifndef WIDE
#define WIDE 0
#endif

#define CONSUMER_WARPS (BLOCK / 32)
#define PRODUCER_WARP CONSUMER_WARPS
#define AGGREGATOR_WARP (CONSUMER_WARPS + 1)
#define CONSUMER_BARRIER 1

struct Pipeline {
    unsigned long long full[STAGES];  // the tile has landed (its number in tile_of)
    unsigned long long ready[STAGES]; // the tile's exclusive prefix is in prefix_of
    unsigned long long empty[STAGES]; // every consumer warp is done with the stage
    unsigned tile_of[STAGES];
    T prefix_of[STAGES];
};

// Use k of a block's stages: stage k % STAGES, in its (k / STAGES)-th phase.
__device__ __forceinline__ int stage_of(unsigned k)
{
    return (int)(k % STAGES);
}

__device__ __forceinline__ unsigned phase_of(unsigned k)
{
    return (k / STAGES) & 1u;
}

// The producer warp. Lane 0 takes each ticket while the previous copy is being issued, so the
// atomic's round trip overlaps the wait for a free stage. The bulk copy moves the tile's whole
// 16-byte vectors; the lanes write the rest of a partial tile (its last 1-3 elements, zeros after).
__device__ __forceinline__ void produce(const T* __restrict__ x, int n, unsigned tiles, T4* stages, Pipeline& p,
                                        unsigned* counter)
{
    const int lane = threadIdx.x & 31;
    unsigned ticket = 0;
    if (lane == 0)
        ticket = atomicAdd(counter, 1u);
    for (unsigned k = 0;; ++k) {
        const int s = stage_of(k);
        if (k >= STAGES)
            barrier_wait(&p.empty[s], phase_of(k) ^ 1u);
        const unsigned tile = __shfl_sync(FULL_MASK, ticket, 0);
        T4* stage = stages + s * (TILE / 4);
        unsigned bulk_bytes = 0;
        if (tile < tiles) {
            const long long first = (long long)tile * TILE;
            const int count = (int)min((long long)TILE, (long long)n - first);
            bulk_bytes = (unsigned)(count / 4) * 16u;
            T* tail = reinterpret_cast<T*>(stage);
            for (int e = (count & ~3) + lane; e < TILE; e += 32) // nothing to do for a whole tile
                tail[e] = e < count ? x[first + e] : (T)0;
            __syncwarp();
        }
        if (lane == 0) {
            p.tile_of[s] = tile;
            if (bulk_bytes > 0)
                bulk_load(stage, x + (long long)tile * TILE, bulk_bytes, &p.full[s]);
            else
                barrier_arrive(&p.full[s]); // past the last tile: tells the other warps to stop
            if (tile < tiles)
                ticket = atomicAdd(counter, 1u);
        }
        if (tile >= tiles)
            return;
    }
}

// Round 1 on an H100 (README): with the look-back of lookback(), DRAM was 45-53% busy at 2^27.
// The persistent blocks advance in step, so when a tile looks back its 32, 64, ... predecessors are
// the same round's tiles of the other blocks, all looking back at once: the nearest inclusive
// prefix is a whole round (about GRID tiles) back, GRID / 32 windows of one L2 round trip each.
// But the block's own previous tile `prev` is about GRID tiles back, and the aggregator holds its
// inclusive prefix. So: read W windows of 32 at once (lane l, window j: tile end - l - 32 j),
// count tile prev as (P, prev_inclusive) and anything before it as (P, 0), wait until the tiles
// read have published, and add back to the nearest inclusive prefix: one round trip while
// prev is within 32 W tiles. Publishes flag A first and flag P last, as lookback() does.
__device__ __forceinline__ T lookback_from(unsigned long long* status, unsigned tile, T aggregate, long long prev, T prev_inclusive)
{
    const int lane = threadIdx.x & 31;
    volatile unsigned long long* vs = status;
    if (tile == 0) {
        if (lane == 0)
            vs[0] = pack(FLAG_P, aggregate);
        return (T)0;
    }
    if (lane == 0)
        vs[tile] = pack(FLAG_A, aggregate);
    T prefix = (T)0;
    long long end = (long long)tile - 1;
    while (true) {
        unsigned long long s[WIDE > 0 ? WIDE : 1];
        bool missing;
        do {
            missing = false;
#pragma unroll
            for (int j = 0; j < WIDE; ++j) {
                const long long idx = end - lane - 32 * j;
                s[j] = idx > prev ? vs[idx] : pack(FLAG_P, idx == prev ? prev_inclusive : (T)0);
            }
#pragma unroll
            for (int j = 0; j < WIDE; ++j)
                missing |= (s[j] >> 32) == 0ull;
        } while (__any_sync(FULL_MASK, missing));
        bool found = false;
#pragma unroll
        for (int j = 0; j < WIDE; ++j) { // windows nearest first; lanes nearest first within one
            const unsigned pmask = __ballot_sync(FULL_MASK, (s[j] >> 32) == FLAG_P);
            if (!found) { // uniform
                const int stop = pmask ? __ffs(pmask) - 1 : 31;
                prefix += warp_sum(lane <= stop ? from_bits((unsigned)(s[j] & 0xffffffffull)) : (T)0);
                found = pmask != 0u;
            }
        }
        if (found)
            break;
        end -= 32 * WIDE;
    }
    if (lane == 0)
        vs[tile] = pack(FLAG_P, prefix + aggregate);
    return prefix;
}

// The aggregator warp: the tile's sum from shared memory (lane l adds vectors l, l + 32, ...: no
// bank conflicts), published with the look-back (lookback() publishes flag A before it reads).
__device__ __forceinline__ void aggregate(unsigned tiles, const T4* stages, Pipeline& p, unsigned long long* status)
{
    const int lane = threadIdx.x & 31;
    long long prev = -1; // the block's previous tile and its inclusive prefix (none yet: tile -1, 0)
    T prev_inclusive = (T)0;
    for (unsigned k = 0;; ++k) {
        const int s = stage_of(k);
        barrier_wait(&p.full[s], phase_of(k));
        const unsigned tile = p.tile_of[s];
        if (tile >= tiles)
            return;
        const T4* stage = stages + s * (TILE / 4);
        T sum[4] = { (T)0, (T)0, (T)0, (T)0 };
#pragma unroll 8
        for (int c = lane; c < TILE / 4; c += 32) {
            const T4 q = stage[c];
            sum[0] += q.x;
            sum[1] += q.y;
            sum[2] += q.z;
            sum[3] += q.w;
        }
        const T total = warp_sum((sum[0] + sum[1]) + (sum[2] + sum[3]));
        const T prefix = WIDE > 0 ? lookback_from(status, tile, total, prev, prev_inclusive) : lookback(status, tile, total);
        prev = tile;
        prev_inclusive = prefix + total;
        if (lane == 0) {
            p.prefix_of[s] = prefix;
            barrier_arrive(&p.ready[s]);
        }
    }
}

// The consumer warps: the staged scan of scan_lookback_smem, with the prefix from the aggregator.
__device__ __forceinline__ void consume(T* y, int n, unsigned tiles, T4* stages, Pipeline& p, T* warp_sh)
{
    const int lane = threadIdx.x & 31;
    const unsigned full_tiles = (unsigned)(n / TILE);
    for (unsigned k = 0;; ++k) {
        const int s = stage_of(k);
        barrier_wait(&p.full[s], phase_of(k));
        const unsigned tile = p.tile_of[s];
        if (tile >= tiles)
            return;
        T4* stage = stages + s * (TILE / 4);
        T v[ITEMS];
        stage_read_blocked<false>(stage, v);
        T run = thread_scan<EXCLUSIVE != 0>(v);
        T total;
        // Its barriers order every consumer's reads of the stage above before the writes below.
        T excl = block_exclusive_scan<BLOCK, CONSUMER_BARRIER>(run, warp_sh, &total);
        barrier_wait(&p.ready[s], phase_of(k)); // the aggregator has also finished reading the stage
        stage_write_blocked<false>(stage, v, p.prefix_of[s] + excl);
        const long long tile_first = (long long)tile * TILE;
        if (BULK_STORE && tile < full_tiles) {
            fence_proxy_async(); // this thread's writes of the stage before the bulk store reads it
            block_sync<CONSUMER_BARRIER, BLOCK>();
            if (threadIdx.x == 0)
                bulk_store_and_wait(y + tile_first, stage, TILE * sizeof(T));
        } else {
            block_sync<CONSUMER_BARRIER, BLOCK>();
            stage_store_striped<false>(y, tile_first, n, stage);
            fence_proxy_async(); // this thread's accesses of the stage before the copy that will refill it
        }
        __syncwarp();
        if (lane == 0)
            barrier_arrive(&p.empty[s]);
    }
}

extern "C" __global__ void __launch_bounds__(BLOCK + 64) scan_lookback_specialized(const T* __restrict__ x, T* y,
                                                                                  unsigned long long* status,
                                                                                  unsigned int* counter, int n)
{
    extern __shared__ __align__(128) T4 stages[]; // STAGES * TILE / 4 vectors
    __shared__ __align__(8) Pipeline p;
    __shared__ T warp_sh[BLOCK / 32 + 1];
    const unsigned tiles = (unsigned)(((long long)n + TILE - 1) / TILE);
    if (threadIdx.x == 0) {
        for (int s = 0; s < STAGES; ++s) {
            barrier_init(&p.full[s], 1);
            barrier_init(&p.ready[s], 1);
            barrier_init(&p.empty[s], CONSUMER_WARPS);
        }
        asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory"); // the barriers visible to the copy engine
        fence_proxy_async();
    }
    __syncthreads(); // the only block-wide barrier: the warps part here
    const int warp = threadIdx.x >> 5;
    if (warp == PRODUCER_WARP)
        produce(x, n, tiles, stages, p, counter);
    else if (warp == AGGREGATOR_WARP)
        aggregate(tiles, stages, p, status);
    else
        consume(y, n, tiles, stages, p, warp_sh);
}
