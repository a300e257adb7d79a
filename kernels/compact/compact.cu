//! Stream compaction (keep x > 0, stable) kernels of seed 002 §77, fixed for any n: flags + scan + scatter (the seed's Blelloch and a warp-shuffle version), warp-ballot ranks with per-tile counts and ordered offsets, and a single pass with decoupled look-back.

// The elements are int32; KEEP is the predicate (the check's keep = "positive").
typedef int T;
typedef int4 T4;
#ifndef KEEP
#define KEEP(v) ((v) > 0)
#endif

// Threads per block of the tile kernels (a power of two, 64..1024).
#ifndef BLOCK
#define BLOCK 256
#endif
// Elements per thread in the vectorised kernels, a multiple of 4 (loaded as int4). A tile is
// BLOCK * ITEMS elements. The ballot kernels hold them as VECS int4 per thread, BLOCK int4 apart.
#ifndef ITEMS
#define ITEMS 8
#endif
#define TILE (BLOCK * ITEMS)
#define VECS (ITEMS / 4)
#define WARPS (BLOCK / 32)

#if ITEMS % 4 != 0
#error ITEMS must be a multiple of 4 (vector loads)
#endif

// The single-block scan of the tile counts: its own block size.
#define SUMS_THREADS 1024
#define SUMS_ITEMS 8

#define FULL_MASK 0xffffffffu

// ---------------------------------------------------------------------------------------------
// Building blocks (as in kernels/scan/scan.cu, on int)
// ---------------------------------------------------------------------------------------------

__device__ __forceinline__ int warp_inclusive_scan(int v)
{
    const int lane = threadIdx.x & 31;
#pragma unroll
    for (int o = 1; o < 32; o <<= 1) {
        int u = __shfl_up_sync(FULL_MASK, v, o);
        if (lane >= o)
            v += u;
    }
    return v;
}

// Exclusive scan of one value per thread over a block of NT threads; *total gets the block's sum.
// Every thread of the block must call it (it holds __syncthreads). warp_sh: NT/32 + 1 ints.
template <int NT>
__device__ __forceinline__ int block_exclusive_scan(int val, int* warp_sh, int* total)
{
    const int lane = threadIdx.x & 31;
    const int warp = threadIdx.x >> 5;
    int inc = warp_inclusive_scan(val);
    if (lane == 31)
        warp_sh[warp] = inc;
    __syncthreads();
    if (warp == 0) {
        int w = lane < NT / 32 ? warp_sh[lane] : 0;
        int wi = warp_inclusive_scan(w);
        if (lane < NT / 32)
            warp_sh[lane] = wi - w;
        if (lane == 31)
            warp_sh[NT / 32] = wi;
    }
    __syncthreads();
    int result = warp_sh[warp] + inc - val;
    *total = warp_sh[NT / 32];
    __syncthreads(); // warp_sh may be reused by the caller
    return result;
}

// Four elements from `e` (a multiple of 4): one int4 load when all are in range, else one by one
// with 0 past the end.
__device__ __forceinline__ void load4(const T* __restrict__ x, long long e, int n, T* v)
{
    if (e + 4 <= (long long)n) {
        T4 q = *reinterpret_cast<const T4*>(x + e);
        v[0] = q.x;
        v[1] = q.y;
        v[2] = q.z;
        v[3] = q.w;
    } else {
#pragma unroll
        for (int j = 0; j < 4; ++j)
            v[j] = e + j < (long long)n ? x[e + j] : 0;
    }
}

// Pass 2 of the multi-pass versions: the tile counts in place become their exclusive scan (each
// tile's first output position), by one block, SUMS_THREADS * SUMS_ITEMS counts at a time.
extern "C" __global__ void scan_block_sums(int* sums, int count)
{
    __shared__ int warp_sh[SUMS_THREADS / 32 + 1];
    int carry = 0;
    for (int chunk = 0; chunk < count; chunk += SUMS_THREADS * SUMS_ITEMS) { // uniform trip count
        const int first = chunk + threadIdx.x * SUMS_ITEMS;
        int v[SUMS_ITEMS];
        int run = 0;
#pragma unroll
        for (int k = 0; k < SUMS_ITEMS; ++k) {
            int t = first + k < count ? sums[first + k] : 0;
            v[k] = run;
            run += t;
        }
        int total;
        int excl = block_exclusive_scan<SUMS_THREADS>(run, warp_sh, &total);
#pragma unroll
        for (int k = 0; k < SUMS_ITEMS; ++k)
            if (first + k < count)
                sums[first + k] = carry + excl + v[k];
        carry += total;
    }
}

// ---------------------------------------------------------------------------------------------
// Flags, scan, scatter (seed 002 §77): pass 1 writes each element's rank among the kept elements
// of its tile (idx) and the tile's count (sums); pass 2 scans the counts; pass 3 scatters.
// ---------------------------------------------------------------------------------------------

// Pass 1 as the seed wrote it: one element per thread, tile = BLOCK, the flags scanned by the
// work-efficient (Blelloch) up-sweep and down-sweep in shared memory. Fixed: the seed read
// input[gid] without a bounds check, and stored the root after the down-sweep as the tile's
// count (that is the exclusive prefix of the last element: the count minus its flag); here the
// count is taken before the root is cleared.
extern "C" __global__ void compact_flags_blelloch(const T* __restrict__ x, int* idx, int* sums, int n)
{
    __shared__ int s[BLOCK];
    const int tid = threadIdx.x;
    const long long i = (long long)blockIdx.x * BLOCK + tid;
    s[tid] = (i < n && KEEP(x[i])) ? 1 : 0;
    int offset = 1;
    for (int d = BLOCK >> 1; d > 0; d >>= 1) { // up-sweep
        __syncthreads();
        if (tid < d) {
            int a = offset * (2 * tid + 1) - 1;
            int b = offset * (2 * tid + 2) - 1;
            s[b] += s[a];
        }
        offset <<= 1;
    }
    __syncthreads();
    if (tid == 0) {
        sums[blockIdx.x] = s[BLOCK - 1];
        s[BLOCK - 1] = 0;
    }
    for (int d = 1; d < BLOCK; d <<= 1) { // down-sweep
        offset >>= 1;
        __syncthreads();
        if (tid < d) {
            int a = offset * (2 * tid + 1) - 1;
            int b = offset * (2 * tid + 2) - 1;
            int t = s[a];
            s[a] = s[b];
            s[b] += t;
        }
    }
    __syncthreads();
    if (i < n)
        idx[i] = s[tid];
}

// Pass 1 vectorised: ITEMS consecutive elements per thread (int4 loads and stores), their flags
// scanned in registers, the thread counts scanned with __shfl_up_sync. tile = BLOCK * ITEMS.
extern "C" __global__ void compact_flags_scan(const T* __restrict__ x, int* idx, int* sums, int n)
{
    __shared__ int warp_sh[BLOCK / 32 + 1];
    const long long first = (long long)blockIdx.x * TILE + (long long)threadIdx.x * ITEMS;
    int r[ITEMS];
    int run = 0;
#pragma unroll
    for (int k = 0; k < ITEMS; k += 4) {
        T v[4];
        load4(x, first + k, n, v);
#pragma unroll
        for (int j = 0; j < 4; ++j) {
            r[k + j] = run;
            run += (first + k + j < (long long)n && KEEP(v[j])) ? 1 : 0;
        }
    }
    int total;
    const int excl = block_exclusive_scan<BLOCK>(run, warp_sh, &total);
#pragma unroll
    for (int k = 0; k < ITEMS; k += 4) {
        const long long e = first + k;
        if (e + 4 <= (long long)n) {
            int4 q;
            q.x = r[k] + excl;
            q.y = r[k + 1] + excl;
            q.z = r[k + 2] + excl;
            q.w = r[k + 3] + excl;
            *reinterpret_cast<int4*>(idx + e) = q;
        } else {
#pragma unroll
            for (int j = 0; j < 4; ++j)
                if (e + j < (long long)n)
                    idx[e + j] = r[k + j] + excl;
        }
    }
    if (threadIdx.x == 0)
        sums[blockIdx.x] = total;
}

// Pass 3: y[offsets[tile] + idx[i]] = x[i] for every kept x[i]. Four elements per thread (tile is
// a multiple of 4, so they share a tile); no barriers, so out-of-range threads may return. The
// seed compared neighbouring scan values instead (idx[gid] != idx[gid-1]) and wrote input[gid-1]
// one place too far, never handling element 0 or the last element.
extern "C" __global__ void compact_scatter(const T* __restrict__ x, T* y, const int* __restrict__ idx, const int* __restrict__ offsets, int n, int tile)
{
    const long long i = 4 * ((long long)blockIdx.x * blockDim.x + threadIdx.x);
    if (i >= n)
        return;
    const int off = offsets[i / tile];
    if (i + 4 <= n) {
        const T4 xv = *reinterpret_cast<const T4*>(x + i);
        const int4 iv = *reinterpret_cast<const int4*>(idx + i);
        if (KEEP(xv.x))
            y[off + iv.x] = xv.x;
        if (KEEP(xv.y))
            y[off + iv.y] = xv.y;
        if (KEEP(xv.z))
            y[off + iv.z] = xv.z;
        if (KEEP(xv.w))
            y[off + iv.w] = xv.w;
    } else {
        for (long long k = i; k < n; ++k)
            if (KEEP(x[k]))
                y[off + idx[k]] = x[k];
    }
}

// ---------------------------------------------------------------------------------------------
// Warp ballots: no rank array. Within a tile, int4 number c = k * BLOCK + threadIdx.x (k < VECS)
// holds elements 4c..4c+3, so the elements are in (k, warp, lane, j) order. A lane's rank
// within its warp's 128 elements of round k is the popcount of the four ballots (one per j)
// over the lower lanes, plus its own kept elements before j; the (k, warp) segment counts are
// scanned by one warp in shared memory. The order of the input is kept.
// ---------------------------------------------------------------------------------------------

// Loads the tile from `tile_first`, fills the kept bits, the lane's rank within its segment and
// seg[k * WARPS + warp] = the segment's count. Every thread must call it (full-warp ballots).
__device__ __forceinline__ void ballot_tile(const T* __restrict__ x, long long tile_first, int n, T v[ITEMS], unsigned kb[VECS], int before[VECS], int* seg)
{
    const int lane = threadIdx.x & 31;
    const int warp = threadIdx.x >> 5;
    const unsigned lower = (1u << lane) - 1u;
#pragma unroll
    for (int k = 0; k < VECS; ++k) {
        const long long e = tile_first + 4 * ((long long)k * BLOCK + threadIdx.x);
        load4(x, e, n, &v[4 * k]);
        unsigned bits = 0;
#pragma unroll
        for (int j = 0; j < 4; ++j)
            if (e + j < (long long)n && KEEP(v[4 * k + j]))
                bits |= 1u << j;
        const unsigned b0 = __ballot_sync(FULL_MASK, bits & 1u);
        const unsigned b1 = __ballot_sync(FULL_MASK, bits & 2u);
        const unsigned b2 = __ballot_sync(FULL_MASK, bits & 4u);
        const unsigned b3 = __ballot_sync(FULL_MASK, bits & 8u);
        before[k] = __popc(b0 & lower) + __popc(b1 & lower) + __popc(b2 & lower) + __popc(b3 & lower);
        if (lane == 0)
            seg[k * WARPS + warp] = __popc(b0) + __popc(b1) + __popc(b2) + __popc(b3);
        kb[k] = bits;
    }
}

// Called by the 32 lanes of warp 0: seg[0 .. VECS*WARPS) becomes its exclusive scan; returns the
// tile's count.
__device__ __forceinline__ int scan_segments(int* seg)
{
    const int lane = threadIdx.x & 31;
    int carry = 0;
    for (int b = 0; b < VECS * WARPS; b += 32) { // uniform
        const int i = b + lane;
        const int c = i < VECS * WARPS ? seg[i] : 0;
        const int inc = warp_inclusive_scan(c);
        if (i < VECS * WARPS)
            seg[i] = carry + inc - c;
        carry += __shfl_sync(FULL_MASK, inc, 31);
    }
    return carry;
}

// Writes the thread's kept elements from `tile_offset` (after seg holds the scanned segments).
__device__ __forceinline__ void ballot_scatter(T* y, int tile_offset, const T v[ITEMS], const unsigned kb[VECS], const int before[VECS], const int* seg)
{
    const int warp = threadIdx.x >> 5;
#pragma unroll
    for (int k = 0; k < VECS; ++k) {
        int pos = tile_offset + seg[k * WARPS + warp] + before[k];
#pragma unroll
        for (int j = 0; j < 4; ++j)
            if (kb[k] & (1u << j))
                y[pos++] = v[4 * k + j];
    }
}

// Two passes over x: pass 1 counts each tile's kept elements with ballots...
extern "C" __global__ void compact_count(const T* __restrict__ x, int* counts, int n)
{
    __shared__ int seg[VECS * WARPS + 1];
    T v[ITEMS];
    unsigned kb[VECS];
    int before[VECS];
    ballot_tile(x, (long long)blockIdx.x * TILE, n, v, kb, before, seg);
    __syncthreads();
    if (threadIdx.x < 32) { // all of warp 0, no barrier inside
        const int total = scan_segments(seg);
        if (threadIdx.x == 0)
            counts[blockIdx.x] = total;
    }
}

// ... pass 2 (scan_block_sums) turns the counts into ordered offsets, pass 3 ranks again and writes.
extern "C" __global__ void compact_ballot_scatter(const T* __restrict__ x, T* y, const int* __restrict__ offsets, int n)
{
    __shared__ int seg[VECS * WARPS + 1];
    T v[ITEMS];
    unsigned kb[VECS];
    int before[VECS];
    ballot_tile(x, (long long)blockIdx.x * TILE, n, v, kb, before, seg);
    __syncthreads();
    if (threadIdx.x < 32)
        scan_segments(seg);
    __syncthreads();
    ballot_scatter(y, offsets[blockIdx.x], v, kb, before, seg);
}

// ---------------------------------------------------------------------------------------------
// Single pass: the tile offsets come from a decoupled look-back over the tile counts (as
// scan_lookback in kernels/scan/scan.cu), so the output stays in input order. An atomicAdd on a
// global output counter instead would be one pass too, but tiles would claim their output
// ranges in the order they finish: not stable.
// ---------------------------------------------------------------------------------------------

#define FLAG_A 1ull
#define FLAG_P 2ull

__device__ __forceinline__ unsigned long long pack(unsigned long long flag, int v)
{
    return (flag << 32) | (unsigned long long)(unsigned)v;
}

__device__ __forceinline__ int warp_sum(int v)
{
#pragma unroll
    for (int o = 16; o > 0; o >>= 1)
        v += __shfl_xor_sync(FULL_MASK, v, o);
    return v;
}

// Launch 1: the tile status words and the tile counter start at 0 on every run.
extern "C" __global__ void lookback_init(unsigned long long* status, unsigned int* counter, int tiles)
{
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < tiles)
        status[i] = 0ull;
    if (i == 0)
        *counter = 0u;
}

// Called by the 32 lanes of warp 0: publishes `aggregate` for `tile`, returns the sum over all
// earlier tiles, publishes the inclusive prefix. Reads a window of 32 predecessors at once.
__device__ __forceinline__ int lookback(unsigned long long* status, unsigned tile, int aggregate)
{
    const int lane = threadIdx.x & 31;
    volatile unsigned long long* vs = status;
    if (tile == 0) {
        if (lane == 0)
            vs[0] = pack(FLAG_P, aggregate);
        return 0;
    }
    if (lane == 0)
        vs[tile] = pack(FLAG_A, aggregate);
    int prefix = 0;
    long long end = (long long)tile - 1; // lane l reads tile end - l
    while (true) {
        const long long idx = end - lane;
        unsigned long long s;
        do { // wait until the whole window has published (tiles before 0 read as P, 0)
            s = idx >= 0 ? vs[idx] : pack(FLAG_P, 0);
        } while (__any_sync(FULL_MASK, (s >> 32) == 0ull));
        const unsigned pmask = __ballot_sync(FULL_MASK, (s >> 32) == FLAG_P);
        const int stop = pmask ? __ffs(pmask) - 1 : 31;
        const int val = lane <= stop ? (int)(unsigned)(s & 0xffffffffull) : 0;
        prefix += warp_sum(val);
        if (pmask) // uniform: a ballot
            break;
        end -= 32;
    }
    if (lane == 0)
        vs[tile] = pack(FLAG_P, prefix + aggregate);
    return prefix;
}

// Launch 2: read x once, write the kept elements once.
extern "C" __global__ void compact_lookback(const T* __restrict__ x, T* y, unsigned long long* status, unsigned int* counter, int n)
{
    __shared__ int seg[VECS * WARPS + 1];
    __shared__ unsigned tile_sh;
    __shared__ int offset_sh;
    if (threadIdx.x == 0)
        tile_sh = atomicAdd(counter, 1u);
    __syncthreads();
    const unsigned tile = tile_sh;
    T v[ITEMS];
    unsigned kb[VECS];
    int before[VECS];
    ballot_tile(x, (long long)tile * TILE, n, v, kb, before, seg);
    __syncthreads();
    if (threadIdx.x < 32) { // all of warp 0, no barrier inside
        const int total = scan_segments(seg);
        const int prefix = lookback(status, tile, total);
        if (threadIdx.x == 0)
            offset_sh = prefix;
    }
    __syncthreads();
    ballot_scatter(y, offset_sh, v, kb, before, seg);
}
