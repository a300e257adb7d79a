//! The look-back scan as CUB's DeviceScan runs it on Hopper (variant lookback_decoupled): one tile a block numbered by blockIdx.x (no ticket before the loads), small blocks so that many tiles are resident on an SM while look-backs resolve, a sleep before the look-back's first read and between polls, and the block's local scan written back before the look-back so that only the prefix's add and the stores wait for it. Builds on scan.cu's staged tiles and epoch-tagged look-back.

#include "scan.cu"

// Part 5b's hotspots (docs/evidence/h100-2026-11-26-scan-hotspots): three quarters of the
// persistent rung's warp samples wait at the block barrier for the tile's prefix. Persistence and
// warp specialisation did not hide that wait; CUB's answer on Hopper (cub/device/dispatch/tuning/
// tuning_scan.cuh, sm90 4-byte sum: 128 threads x 24 items, fixed delays 648 and 1245 ns) is many
// small one-tile blocks an SM, so that while one block waits for its prefix the others load,
// scan and store. What this kernel takes from it, each a define so a round can separate them:
//   - the tile is blockIdx.x, as in CUB (AgentScan: tile_idx = start_tile + blockIdx.x): the loads
//     start at once instead of after a ticket's round trip. This relies, as CUB does, on blocks of
//     a 1D grid being dispatched in index order, so every tile a block waits for has started. The
//     one-launch epoch still comes from the never-reset 64-bit ticket (as lookback_onepass): thread
//     0's atomicAdd is issued first and its value is first needed by the look-back, so it is in
//     flight during the load and the local scan. Every block of a run adds 1 once, so a run's
//     tickets are epoch * tiles .. epoch * tiles + tiles - 1 whatever order they come in.
//   - FIRST_NS, POLL_NS: warp 0 sleeps FIRST_NS after publishing its sum (the predecessors' sums
//     are then more likely to have reached L2) and POLL_NS before reading a window again, which
//     spares L2 the spinning reads of every waiting block (CUB's fixed_delay_constructor_t).
//   - the tile's local inclusive scan goes back into the stage before the look-back (while warp 0
//     looks back, the other warps have already done it), so after the prefix arrives each thread
//     only reads its warp-striped vectors, adds the prefix and stores: one barrier on the critical
//     path instead of two, and the ITEMS values are not held in registers across the wait.
// BULK_LOAD 1: the tile comes in by one bulk copy (cp.async.bulk, TMA's 1D form, counted by an
// mbarrier) that thread 0 issues first, so the whole tile is in flight at once and no registers
// stage it; BULK_STORE 1: the threads add the prefix into the stage and thread 0 stores the tile
// with one bulk copy. Either needs the stage unpadded: ITEMS / 4 odd (20, 28) keeps its blocked
// reads free of bank conflicts. The partial last tile goes through the threads either way.
// WINDOWS > 1: the look-back reads WINDOWS windows of 32 predecessors a round trip instead of one
// (lookback_windows below), so a tile far from the nearest inclusive prefix walks back faster.
// MIN_BLOCKS: __launch_bounds__'s minimum blocks an SM (1: ptxas chooses the registers).
// REREAD 1: the thread's ITEMS values are read from the stage twice (once to sum them, once to
// scan them in place after the block's scan) instead of held in ITEMS registers, so that tiles of
// 28 or 36 items fit 32 or 40 registers without spilling (local memory would go to L2: with
// 200 KB of shared memory an SM, L1 keeps little). Inclusive scans only.

#ifndef FIRST_NS
#define FIRST_NS 0
#endif
#ifndef POLL_NS
#define POLL_NS 0
#endif
#ifndef MIN_BLOCKS
#define MIN_BLOCKS 1
#endif
#ifndef WINDOWS
#define WINDOWS 1
#endif
#ifndef REREAD
#define REREAD 0
#endif
#if REREAD && EXCLUSIVE
#error REREAD writes the inclusive scan only
#endif
#ifndef BULK_LOAD
#define BULK_LOAD 0
#endif
#ifndef BULK_STORE
#define BULK_STORE 0
#endif
#define DEC_PAD (STAGE_PAD && !BULK_LOAD && !BULK_STORE)
#define DEC_STAGE_LEN (DEC_PAD ? TILE / 4 + TILE / 32 : TILE / 4)

#if (BULK_LOAD || BULK_STORE) && (ITEMS / 4) % 2 == 0
#warning bulk copies need an unpadded stage: with ITEMS / 4 even its blocked reads have bank conflicts
#endif

#include "scan_bulk.cuh"

// The warp-striped stores of the stage plus `add` (stage_store_striped with the tile's prefix).
__device__ __forceinline__ void stage_store_striped_plus(T* __restrict__ y, long long tile_first, int n, const T4* stage, T add)
{
#pragma unroll
    for (int k = 0; k < ITEMS / 4; ++k) {
        const int c = k * BLOCK + threadIdx.x;
        T4 q = stage[stage_at<DEC_PAD>(c)];
        q.x += add;
        q.y += add;
        q.z += add;
        q.w += add;
        store_vec4(y, tile_first + 4 * c, n, q);
    }
}

// lookback_epoch (scan.cu) over WINDOWS windows at once: lane l reads tiles end - l - 32 w for
// w < WINDOWS, waits until all of them have published in this run, and adds every value up to the
// nearest inclusive prefix (the smallest w holding one, then its lowest lane), or all of them.
__device__ __forceinline__ T lookback_windows(unsigned long long* status, unsigned tile, unsigned long long epoch, T aggregate)
{
    const int lane = threadIdx.x & 31;
    volatile unsigned long long* vs = status;
    if (tile == 0) {
        if (lane == 0)
            vs[0] = pack_epoch(epoch, FLAG_P, aggregate);
        return (T)0;
    }
    if (lane == 0)
        vs[tile] = pack_epoch(epoch, FLAG_A, aggregate);
    if (FIRST_NS > 0)
        __nanosleep(FIRST_NS);
    T prefix = (T)0;
    long long end = (long long)tile - 1;
    while (true) {
        unsigned long long s[WINDOWS];
        bool again = false;
        bool pending;
        do { // tiles before 0 read as P, 0
            if (POLL_NS > 0 && again)
                __nanosleep(POLL_NS);
            again = true;
            pending = false;
#pragma unroll
            for (int w = 0; w < WINDOWS; ++w) {
                const long long idx = end - lane - 32 * w;
                s[w] = idx >= 0 ? vs[idx] : pack_epoch(epoch, FLAG_P, (T)0);
                pending |= (s[w] >> EPOCH_SHIFT) != epoch;
            }
        } while (__any_sync(FULL_MASK, pending));
        int stop_w = WINDOWS, stop_lane = 31; // the nearest inclusive prefix; none: every value counts
#pragma unroll
        for (int w = WINDOWS - 1; w >= 0; --w) { // far to near, so the nearest window with one wins
            const unsigned pmask = __ballot_sync(FULL_MASK, ((s[w] >> 32) & 3ull) == FLAG_P);
            if (pmask) {
                stop_w = w;
                stop_lane = __ffs(pmask) - 1;
            }
        }
        T val = (T)0;
#pragma unroll
        for (int w = 0; w < WINDOWS; ++w)
            if (w < stop_w || (w == stop_w && lane <= stop_lane))
                val += from_bits((unsigned)(s[w] & 0xffffffffull));
        prefix += warp_sum(val);
        if (stop_w < WINDOWS) // uniform: ballots
            break;
        end -= 32 * WINDOWS;
    }
    if (lane == 0)
        vs[tile] = pack_epoch(epoch, FLAG_P, prefix + aggregate);
    return prefix;
}

// REREAD: the sum of the thread's ITEMS consecutive elements of the stage (blocked), and their
// inclusive scan plus `add` written in place. A thread touches only its own vectors, so the block
// scan between the two needs no further barrier.
__device__ __forceinline__ T stage_sum_blocked(const T4* stage)
{
    T sum = (T)0;
#pragma unroll
    for (int k = 0; k < ITEMS / 4; ++k) {
        const T4 q = stage[stage_at<DEC_PAD>(threadIdx.x * (ITEMS / 4) + k)];
        sum += q.x + q.y + q.z + q.w;
    }
    return sum;
}

__device__ __forceinline__ void stage_scan_blocked(T4* stage, T add)
{
#pragma unroll
    for (int k = 0; k < ITEMS / 4; ++k) {
        T4& at = stage[stage_at<DEC_PAD>(threadIdx.x * (ITEMS / 4) + k)];
        T4 q = at;
        q.x += add;
        q.y += q.x;
        q.z += q.y;
        q.w += q.z;
        at = q;
        add = q.w;
    }
}

// The tile into the stage: one bulk copy issued by thread 0 (BULK_LOAD, whole tiles), else
// warp-striped int4 loads. Thread 0 takes the run's ticket right after starting the copy.
__device__ __forceinline__ void load_tile(const T* __restrict__ x, long long tile_first, int n, T4* stage, unsigned long long* full,
                                          unsigned long long* ticket, unsigned long long& my_ticket)
{
    const bool whole = tile_first + TILE <= (long long)n; // uniform
    if (BULK_LOAD) {
        if (threadIdx.x == 0) {
            barrier_init(full, 1);
            asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory"); // the barrier visible to the copy
            fence_proxy_async();
            if (whole)
                bulk_load(stage, x + tile_first, TILE * sizeof(T), full);
            my_ticket = atomicAdd(ticket, 1ull);
        }
        __syncthreads(); // the barrier initialised before any thread waits on it
        if (whole) {
            barrier_wait(full, 0);
            return;
        }
    } else if (threadIdx.x == 0) {
        my_ticket = atomicAdd(ticket, 1ull);
    }
    stage_load_striped<DEC_PAD>(x, tile_first, n, stage);
    __syncthreads();
}

// The stage plus `add` to y: one bulk copy by thread 0 (BULK_STORE, whole tiles), after the
// threads add it in place; else warp-striped int4 stores.
__device__ __forceinline__ void store_tile(T* __restrict__ y, long long tile_first, int n, T4* stage, T add)
{
    if (BULK_STORE && tile_first + TILE <= (long long)n) { // uniform
#pragma unroll
        for (int k = 0; k < ITEMS / 4; ++k) {
            T4& q = stage[k * BLOCK + threadIdx.x];
            q.x += add;
            q.y += add;
            q.z += add;
            q.w += add;
        }
        fence_proxy_async(); // this thread's writes of the stage before the bulk store reads it
        __syncthreads();
        if (threadIdx.x == 0)
            bulk_store_and_wait(y + tile_first, stage, TILE * sizeof(T)); // the stage is read before the block exits
    } else {
        stage_store_striped_plus(y, tile_first, n, stage, add);
    }
}

extern "C" __global__ void __launch_bounds__(BLOCK, MIN_BLOCKS)
    scan_lookback_decoupled(const T* __restrict__ x, T* y, unsigned long long* status, unsigned long long* ticket, int n)
{
    __shared__ __align__(128) T4 stage[DEC_STAGE_LEN];
    __shared__ __align__(8) unsigned long long full;
    __shared__ T warp_sh[BLOCK / 32 + 1];
    __shared__ T prefix_sh;
    const unsigned tile = blockIdx.x;
    const long long tile_first = (long long)tile * TILE;
    unsigned long long my_ticket = 0; // its value is first used by the look-back: the atomic overlaps the load
    load_tile(x, tile_first, n, stage, &full, ticket, my_ticket);
    T total;
    if (REREAD) {
        const T excl = block_exclusive_scan<BLOCK>(stage_sum_blocked(stage), warp_sh, &total);
        stage_scan_blocked(stage, excl); // the tile's own scan, before the look-back
    } else {
        T v[ITEMS];
        stage_read_blocked<DEC_PAD>(stage, v);
        T run = thread_scan<EXCLUSIVE != 0>(v);
        T excl = block_exclusive_scan<BLOCK>(run, warp_sh, &total); // its barriers order the reads of stage above before the writes below
        stage_write_blocked<DEC_PAD>(stage, v, excl);                  // the tile's own scan, before the look-back
    }
    if (threadIdx.x < 32) { // all of warp 0, no barrier inside
        unsigned long long epoch = 0;
        if (threadIdx.x == 0) // one 64-bit division a block, in one thread; a run adds gridDim.x tickets
            epoch = (my_ticket / gridDim.x) % EPOCHS + 1;
        epoch = __shfl_sync(FULL_MASK, epoch, 0);
        const T prefix = WINDOWS > 1 ? lookback_windows(status, tile, epoch, total) : lookback_epoch<FIRST_NS, POLL_NS>(status, tile, epoch, total);
        if (threadIdx.x == 0)
            prefix_sh = prefix;
    }
    __syncthreads(); // prefix_sh and every thread's write-back of the stage
    store_tile(y, tile_first, n, stage, prefix_sh);
}
