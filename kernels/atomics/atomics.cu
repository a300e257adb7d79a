//! Atomic functions (seed 002 §71): the sum of N ints with atomicAdd from every thread on one address, warp-aggregated, or through shared-memory atomics; and histograms of N keys into few or many bins with global or shared-memory (privatised) atomics.

#ifndef BLOCK
#define BLOCK 256
#endif
// Bins of the histograms (a power of two keeps key % NBINS an AND; up to 4096 fits the shared array).
#ifndef NBINS
#define NBINS 16
#endif

#define FULL_MASK 0xffffffffu

// ---- zeroing: the first launch of every variant (timed runs do not reset the output) ----

extern "C" __global__ void zero_i32(int* p, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        p[i] = 0;
}

extern "C" __global__ void zero_u32(unsigned* p, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        p[i] = 0u;
}

// ---- the sum of x into total[0] ----

__device__ __forceinline__ long long global_index()
{
    return (long long)blockIdx.x * blockDim.x + threadIdx.x;
}

// seed §71 incr: every thread adds its element to the one address; N atomics serialised at the
// L2 slice that holds it.
extern "C" __global__ void sum_atomic_global(const int* x, int* total, int n)
{
    long long i = global_index();
    if (i < n)
        atomicAdd(total, x[i]);
}

// Warp-aggregated: each warp sums its 32 elements with __shfl_down_sync, then lane 0 adds the
// warp's sum: N/32 atomics. Every lane loads (0 past the end) and reaches the shuffles.
extern "C" __global__ void sum_atomic_warp(const int* x, int* total, int n)
{
    long long i = global_index();
    int s = i < n ? x[i] : 0;
#pragma unroll
    for (int o = 16; o > 0; o >>= 1)
        s += __shfl_down_sync(FULL_MASK, s, o);
    if (threadIdx.x % 32 == 0)
        atomicAdd(total, s);
}

// Shared-memory atomics: every thread adds to one shared counter of its block, then thread 0
// adds the block's sum to the global total: N shared atomics, N/BLOCK global ones.
extern "C" __global__ void sum_atomic_shared(const int* x, int* total, int n)
{
    __shared__ int block_sum;
    long long i = global_index();
    if (threadIdx.x == 0)
        block_sum = 0;
    __syncthreads();
    if (i < n)
        atomicAdd(&block_sum, x[i]);
    __syncthreads();
    if (threadIdx.x == 0)
        atomicAdd(total, block_sum);
}

// Past the seed: a fixed grid strides over x, each thread summing in a register; then the block
// reduces with shuffles (within each warp, then across the BLOCK/32 warp sums) and adds once:
// one atomic per block.
extern "C" __global__ void sum_atomic_block(const int* x, int* total, int n)
{
    __shared__ int warp_sums[BLOCK / 32];
    int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    int s = 0;
    for (long long i = global_index(); i < n; i += (long long)gridDim.x * BLOCK)
        s += x[i];
#pragma unroll
    for (int o = 16; o > 0; o >>= 1)
        s += __shfl_down_sync(FULL_MASK, s, o);
    if (lane == 0)
        warp_sums[warp] = s;
    __syncthreads();
    if (warp == 0) {
        s = lane < BLOCK / 32 ? warp_sums[lane] : 0;
#pragma unroll
        for (int o = 16; o > 0; o >>= 1)
            s += __shfl_down_sync(FULL_MASK, s, o);
        if (lane == 0)
            atomicAdd(total, s);
    }
}

// ---- histogram: bins[b] counts the keys with key % NBINS == b ----
// Both kernels take the same grid-stride loop over the keys with the same grid, so only where the
// counters live differs.

// Global atomics: one atomicAdd on bins[key % NBINS] per key. Few bins: the whole grid contends for
// NBINS addresses; many bins: fewer collisions.
extern "C" __global__ void hist_global(const unsigned* keys, unsigned* bins, int n)
{
    for (long long i = global_index(); i < n; i += (long long)gridDim.x * blockDim.x)
        atomicAdd(&bins[keys[i] % NBINS], 1u);
}

// Privatised: each block counts into its own NBINS counters in shared memory, then adds its non-zero
// counts to the global bins (at most NBINS global atomics per block).
extern "C" __global__ void hist_shared(const unsigned* keys, unsigned* bins, int n)
{
    __shared__ unsigned local[NBINS];
    for (int b = threadIdx.x; b < NBINS; b += blockDim.x)
        local[b] = 0u;
    __syncthreads();
    for (long long i = global_index(); i < n; i += (long long)gridDim.x * blockDim.x)
        atomicAdd(&local[keys[i] % NBINS], 1u);
    __syncthreads();
    for (int b = threadIdx.x; b < NBINS; b += blockDim.x)
        if (local[b] != 0u)
            atomicAdd(&bins[b], local[b]);
}
