//! Sorting N unsigned keys (seed 003, "sort!"): bitonic sort (tiles in shared memory, then a global merge network), counting merge sort (each element's final position by binary search), and LSD radix sort (per-block digit histograms, one scan, stable scatter).

#define FULL_MASK 0xffffffffu

// ---------------------------------------------------------------------------------------------
// Bitonic sort and the tile sort of the merge sort. A block of TILE / 2 threads sorts TILE keys
// in shared memory, one compare-and-exchange per thread per step (seed 003: "1 element: compare
// and exchange", "a thread block -> 1024 threads").
// ---------------------------------------------------------------------------------------------

#ifndef TILE
#define TILE 2048
#endif

__device__ __forceinline__ void compare_exchange(unsigned* s, unsigned i, unsigned l, bool ascending)
{
    unsigned a = s[i], b = s[l];
    if ((a > b) == ascending) {
        s[i] = b;
        s[l] = a;
    }
}

// Element i of step (k, j) pairs with i + j, where i is the p-th index whose bit j is clear.
__device__ __forceinline__ unsigned pair_index(unsigned p, unsigned j)
{
    return ((p & ~(j - 1)) << 1) | (p & (j - 1));
}

// Sorts each TILE-key tile of x into y. The full bitonic network up to k = TILE; at k = TILE the
// direction is the tile's bit TILE of the global index (alternate != 0: tiles alternately
// ascending and descending, the bitonic sequences the global merge steps start from) or
// ascending (alternate == 0: sorted runs for the merge sort). Keys past n are padded with the
// largest key and never written back.
extern "C" __global__ void bitonic_sort_tiles(const unsigned* __restrict__ x, unsigned* __restrict__ y, int n, int alternate)
{
    __shared__ unsigned s[TILE];
    const unsigned base = blockIdx.x * TILE;
    for (unsigned e = threadIdx.x; e < TILE; e += blockDim.x)
        s[e] = base + e < (unsigned)n ? x[base + e] : 0xffffffffu;
    __syncthreads();
    for (unsigned k = 2; k <= TILE; k <<= 1) {
        for (unsigned j = k >> 1; j > 0; j >>= 1) {
            for (unsigned p = threadIdx.x; p < TILE / 2; p += blockDim.x) {
                unsigned i = pair_index(p, j);
                bool ascending = (k == TILE && !alternate) || (((base + i) & k) == 0);
                compare_exchange(s, i, i + j, ascending);
            }
            __syncthreads();
        }
    }
    for (unsigned e = threadIdx.x; e < TILE; e += blockDim.x)
        if (base + e < (unsigned)n)
            y[base + e] = s[e];
}

// One global step (k, j) of the bitonic merge network, j >= TILE: one thread per pair, in place.
// n must be a power of two.
extern "C" __global__ void bitonic_merge_global(unsigned* y, int n, int k, int j)
{
    unsigned p = blockIdx.x * blockDim.x + threadIdx.x;
    if (p >= (unsigned)n / 2)
        return;
    unsigned i = pair_index(p, (unsigned)j);
    unsigned l = i + (unsigned)j;
    bool ascending = (i & (unsigned)k) == 0;
    unsigned a = y[i], b = y[l];
    if ((a > b) == ascending) {
        y[i] = b;
        y[l] = a;
    }
}

// The steps j = TILE/2 .. 1 of stage k (k > TILE) in shared memory, one tile per block: the
// pairs of those steps never leave a tile. The direction is bit k of the tile's global index.
extern "C" __global__ void bitonic_merge_shared(unsigned* y, int n, int k)
{
    __shared__ unsigned s[TILE];
    const unsigned base = blockIdx.x * TILE;
    for (unsigned e = threadIdx.x; e < TILE; e += blockDim.x)
        s[e] = base + e < (unsigned)n ? y[base + e] : 0xffffffffu;
    __syncthreads();
    const bool ascending = (base & (unsigned)k) == 0;
    for (unsigned j = TILE / 2; j > 0; j >>= 1) {
        for (unsigned p = threadIdx.x; p < TILE / 2; p += blockDim.x) {
            unsigned i = pair_index(p, j);
            compare_exchange(s, i, i + j, ascending);
        }
        __syncthreads();
    }
    for (unsigned e = threadIdx.x; e < TILE; e += blockDim.x)
        if (base + e < (unsigned)n)
            y[base + e] = s[e];
}

// ---------------------------------------------------------------------------------------------
// Counting merge sort (seed 003 "Counting Merge Sort": each thread computes where its element
// lands in the merged result and writes it there). One pass merges sorted runs of `width` keys
// pairwise: a key's position is its index in its own run plus the number of keys of the sibling
// run that go before it (binary search: < for a left-run key, <= for a right-run key, so equal
// keys keep their order and every position is taken exactly once).
// ---------------------------------------------------------------------------------------------

extern "C" __global__ void merge_pass(const unsigned* __restrict__ in, unsigned* __restrict__ out, int n, int width)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n)
        return;
    const unsigned v = in[i];
    const int run_start = (i / width) * width;
    const bool left = ((i / width) & 1) == 0;
    const int other_start = left ? run_start + width : run_start - width;
    const int other_end = left ? min(other_start + width, n) : run_start;
    int lo = other_start, hi = max(other_start, other_end);
    while (lo < hi) {
        int mid = lo + (hi - lo) / 2;
        unsigned m = in[mid];
        if (left ? (m < v) : (m <= v))
            lo = mid + 1;
        else
            hi = mid;
    }
    const int pair_start = left ? run_start : other_start;
    out[pair_start + (i - run_start) + (lo - other_start)] = v;
}

// ---------------------------------------------------------------------------------------------
// LSD radix sort (seed 003: "non-comparison based sort ... radix sort"): RADIX_BITS bits a pass,
// from the least significant digit up; each pass stable, so the order of earlier passes survives
// among equal digits. A block handles a tile of RBLOCK * ITEMS keys (ITEMS rounds of RBLOCK).
// ---------------------------------------------------------------------------------------------

#ifndef RADIX_BITS
#define RADIX_BITS 4
#endif
#ifndef RBLOCK
#define RBLOCK 256
#endif
#ifndef ITEMS
#define ITEMS 8
#endif
#define RADIX (1u << RADIX_BITS)
#define WARPS (RBLOCK / 32)

// Pass 1: the tile's digit counts, written digit-major (hist[d * blocks + block]) so that one
// exclusive scan of hist gives every (digit, block) its first output position. Lanes with the
// same digit are counted together (__match_any_sync), one shared atomic per group.
extern "C" __global__ void radix_histogram(const unsigned* __restrict__ in, unsigned* __restrict__ hist, int n, int shift)
{
    __shared__ unsigned count[RADIX];
    for (unsigned d = threadIdx.x; d < RADIX; d += blockDim.x)
        count[d] = 0;
    __syncthreads();
    const unsigned lane = threadIdx.x & 31;
    const unsigned base = blockIdx.x * (RBLOCK * ITEMS);
    for (int r = 0; r < ITEMS; ++r) {
        unsigned idx = base + r * RBLOCK + threadIdx.x;
        bool valid = idx < (unsigned)n;
        unsigned d = valid ? (in[idx] >> shift) & (RADIX - 1) : RADIX;
        unsigned peers = __match_any_sync(FULL_MASK, d);
        if (valid && lane == (unsigned)(__ffs(peers) - 1))
            atomicAdd(&count[d], (unsigned)__popc(peers));
    }
    __syncthreads();
    for (unsigned d = threadIdx.x; d < RADIX; d += blockDim.x)
        hist[d * gridDim.x + blockIdx.x] = count[d];
}

// Pass 2: exclusive scan of the m counts in place, one block (each thread a contiguous chunk,
// then a warp-shuffle scan of the chunk sums).
extern "C" __global__ void radix_scan(unsigned* hist, int m)
{
    __shared__ unsigned warp_sums[32];
    const unsigned lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const int per = (m + (int)blockDim.x - 1) / (int)blockDim.x;
    const int begin = threadIdx.x * per;
    const int end = min(begin + per, m);
    unsigned sum = 0;
    for (int i = begin; i < end; ++i)
        sum += hist[i];
    unsigned incl = sum;
    for (unsigned o = 1; o < 32; o <<= 1) {
        unsigned v = __shfl_up_sync(FULL_MASK, incl, o);
        if (lane >= o)
            incl += v;
    }
    if (lane == 31)
        warp_sums[warp] = incl;
    __syncthreads();
    if (warp == 0) {
        unsigned v = lane < blockDim.x / 32 ? warp_sums[lane] : 0;
        for (unsigned o = 1; o < 32; o <<= 1) {
            unsigned u = __shfl_up_sync(FULL_MASK, v, o);
            if (lane >= o)
                v += u;
        }
        warp_sums[lane] = v;
    }
    __syncthreads();
    unsigned offset = (warp > 0 ? warp_sums[warp - 1] : 0) + incl - sum;
    for (int i = begin; i < end; ++i) {
        unsigned c = hist[i];
        hist[i] = offset;
        offset += c;
    }
}

// Pass 3: stable scatter. Round by round (RBLOCK keys, in index order), a key's place among the
// tile's keys of its digit is: the keys of that digit in earlier rounds, plus those of earlier
// warps in this round, plus the lanes below it in its own warp with the same digit.
extern "C" __global__ void radix_scatter(const unsigned* __restrict__ in, unsigned* __restrict__ out, const unsigned* __restrict__ hist, int n, int shift)
{
    __shared__ unsigned warp_count[WARPS][RADIX];
    __shared__ unsigned running[RADIX];
    __shared__ unsigned block_start[RADIX];
    for (unsigned d = threadIdx.x; d < RADIX; d += blockDim.x) {
        running[d] = 0;
        block_start[d] = hist[d * gridDim.x + blockIdx.x];
        for (int w = 0; w < WARPS; ++w)
            warp_count[w][d] = 0;
    }
    __syncthreads();
    const unsigned lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const unsigned lanes_below = (1u << lane) - 1;
    const unsigned base = blockIdx.x * (RBLOCK * ITEMS);
    for (int r = 0; r < ITEMS; ++r) {
        unsigned idx = base + r * RBLOCK + threadIdx.x;
        bool valid = idx < (unsigned)n;
        unsigned v = valid ? in[idx] : 0;
        unsigned d = valid ? (v >> shift) & (RADIX - 1) : RADIX;
        unsigned peers = __match_any_sync(FULL_MASK, d);
        if (valid && lane == (unsigned)(__ffs(peers) - 1))
            warp_count[warp][d] = __popc(peers);
        __syncthreads();
        if (valid) {
            unsigned pos = running[d] + __popc(peers & lanes_below);
            for (unsigned w = 0; w < warp; ++w)
                pos += warp_count[w][d];
            out[block_start[d] + pos] = v;
        }
        __syncthreads();
        for (unsigned dd = threadIdx.x; dd < RADIX; dd += blockDim.x) {
            unsigned s = 0;
            for (int w = 0; w < WARPS; ++w) {
                s += warp_count[w][dd];
                warp_count[w][dd] = 0;
            }
            running[dd] += s;
        }
        __syncthreads();
    }
}
