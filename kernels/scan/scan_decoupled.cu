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
// MIN_BLOCKS: __launch_bounds__'s minimum blocks an SM (1: ptxas chooses the registers).

#ifndef FIRST_NS
#define FIRST_NS 0
#endif
#ifndef POLL_NS
#define POLL_NS 0
#endif
#ifndef MIN_BLOCKS
#define MIN_BLOCKS 1
#endif

// The warp-striped stores of the stage plus `add` (stage_store_striped with the tile's prefix).
__device__ __forceinline__ void stage_store_striped_plus(T* __restrict__ y, long long tile_first, int n, const T4* stage, T add)
{
#pragma unroll
    for (int k = 0; k < ITEMS / 4; ++k) {
        const int c = k * BLOCK + threadIdx.x;
        T4 q = stage[stage_at<STAGE_PAD>(c)];
        q.x += add;
        q.y += add;
        q.z += add;
        q.w += add;
        store_vec4(y, tile_first + 4 * c, n, q);
    }
}

extern "C" __global__ void __launch_bounds__(BLOCK, MIN_BLOCKS)
    scan_lookback_decoupled(const T* __restrict__ x, T* y, unsigned long long* status, unsigned long long* ticket, int n)
{
    __shared__ T4 stage[STAGE_LEN];
    __shared__ T warp_sh[BLOCK / 32 + 1];
    __shared__ T prefix_sh;
    const unsigned tile = blockIdx.x;
    unsigned long long my_ticket = 0;
    if (threadIdx.x == 0) // its value is first used by the look-back: the atomic overlaps the loads
        my_ticket = atomicAdd(ticket, 1ull);
    const long long tile_first = (long long)tile * TILE;
    stage_load_striped<STAGE_PAD>(x, tile_first, n, stage);
    __syncthreads();
    T v[ITEMS];
    stage_read_blocked<STAGE_PAD>(stage, v);
    T run = thread_scan<EXCLUSIVE != 0>(v);
    T total;
    T excl = block_exclusive_scan<BLOCK>(run, warp_sh, &total); // its barriers order the reads of stage above before the writes below
    stage_write_blocked<STAGE_PAD>(stage, v, excl);                // the tile's own scan, before the look-back
    if (threadIdx.x < 32) { // all of warp 0, no barrier inside
        unsigned long long epoch = 0;
        if (threadIdx.x == 0) // one 64-bit division a block, in one thread; a run adds gridDim.x tickets
            epoch = (my_ticket / gridDim.x) % EPOCHS + 1;
        epoch = __shfl_sync(FULL_MASK, epoch, 0);
        const T prefix = lookback_epoch<FIRST_NS, POLL_NS>(status, tile, epoch, total);
        if (threadIdx.x == 0)
            prefix_sh = prefix;
    }
    __syncthreads(); // prefix_sh and every thread's write-back of the stage
    stage_store_striped_plus(y, tile_first, n, stage, prefix_sh);
}
