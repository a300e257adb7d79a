//! Inclusive (and exclusive) prefix-sum kernels of seed 002 §72-76, fixed for any n: block-level Hillis-Steele, Blelloch and bank-conflict-free Blelloch in a three-pass multi-block scan, warp-shuffle tile scans, reduce-then-scan, and single-pass decoupled look-back scans (two launches, and one with epoch-tagged status words).

// Element type: int by default, float with -DFLOAT=1 (variant `lookback_f32`).
#ifndef FLOAT
#define FLOAT 0
#endif
#if FLOAT
typedef float T;
typedef float4 T4;
#else
typedef int T;
typedef int4 T4;
#endif

// Threads per block of the tile kernels (a power of two, 64..1024; Hillis-Steele and Blelloch
// size their shared arrays by it).
#ifndef BLOCK
#define BLOCK 256
#endif
// Consecutive elements per thread in the shuffle, reduce-then-scan and look-back kernels
// (a multiple of 4: they are loaded as int4/float4). A tile is BLOCK * ITEMS elements.
#ifndef ITEMS
#define ITEMS 8
#endif
#define TILE (BLOCK * ITEMS)
// 1: the look-back kernel writes the exclusive scan (y[0] = 0) instead of the inclusive one.
#ifndef EXCLUSIVE
#define EXCLUSIVE 0
#endif

#if ITEMS % 4 != 0
#error ITEMS must be a multiple of 4 (vector loads)
#endif

// The single-block scan of the tile sums (pass 2 of the multi-block scans): its own block size.
#define SUMS_THREADS 1024
#define SUMS_ITEMS 8

#define FULL_MASK 0xffffffffu

// ---------------------------------------------------------------------------------------------
// Building blocks
// ---------------------------------------------------------------------------------------------

// Inclusive scan within a warp (Hillis-Steele on registers, __shfl_up_sync). Every lane calls it.
__device__ __forceinline__ T warp_inclusive_scan(T v)
{
    const int lane = threadIdx.x & 31;
#pragma unroll
    for (int o = 1; o < 32; o <<= 1) {
        T u = __shfl_up_sync(FULL_MASK, v, o);
        if (lane >= o)
            v += u;
    }
    return v;
}

// The barrier of a block scan: __syncthreads (BAR 0), or named barrier BAR over the NT threads
// of warps 0 .. NT/32 - 1 only (a warp-specialised kernel's consumer warps).
template <int BAR, int NT>
__device__ __forceinline__ void block_sync()
{
    if (BAR == 0)
        __syncthreads();
    else
        asm volatile("bar.sync %0, %1;\n" ::"n"(BAR), "n"(NT) : "memory");
}

// Exclusive scan of one value per thread over a block of NT threads; *total gets the block's sum.
// Every thread of the block (of the NT with BAR) must call it (it holds barriers). warp_sh: NT/32 + 1 elements.
template <int NT, int BAR = 0>
__device__ __forceinline__ T block_exclusive_scan(T val, T* warp_sh, T* total)
{
    const int lane = threadIdx.x & 31;
    const int warp = threadIdx.x >> 5;
    T inc = warp_inclusive_scan(val);
    T exc = __shfl_up_sync(FULL_MASK, inc, 1);
    if (lane == 0)
        exc = (T)0;
    if (lane == 31)
        warp_sh[warp] = inc;
    block_sync<BAR, NT>();
    if (warp == 0) {
        T w = lane < NT / 32 ? warp_sh[lane] : (T)0;
        T wi = warp_inclusive_scan(w);
        T we = __shfl_up_sync(FULL_MASK, wi, 1);
        if (lane == 0)
            we = (T)0;
        if (lane < NT / 32)
            warp_sh[lane] = we;
        if (lane == 31)
            warp_sh[NT / 32] = wi; // lanes past the last warp added 0: wi is the block's sum
    }
    block_sync<BAR, NT>();
    T result = warp_sh[warp] + exc;
    *total = warp_sh[NT / 32];
    block_sync<BAR, NT>(); // warp_sh may be reused by the caller
    return result;
}

// The ITEMS consecutive elements from `first` (a multiple of 4): vector loads when all are in
// range, else one by one with 0 past the end.
__device__ __forceinline__ void load_items(const T* __restrict__ x, long long first, int n, T v[ITEMS])
{
    if (first + ITEMS <= (long long)n) {
        const T4* p = reinterpret_cast<const T4*>(x + first);
#pragma unroll
        for (int k = 0; k < ITEMS / 4; ++k) {
            T4 q = p[k];
            v[4 * k] = q.x;
            v[4 * k + 1] = q.y;
            v[4 * k + 2] = q.z;
            v[4 * k + 3] = q.w;
        }
    } else {
#pragma unroll
        for (int k = 0; k < ITEMS; ++k)
            v[k] = first + k < (long long)n ? x[first + k] : (T)0;
    }
}

__device__ __forceinline__ void store_items(T* __restrict__ y, long long first, int n, const T v[ITEMS])
{
    if (first + ITEMS <= (long long)n) {
        T4* p = reinterpret_cast<T4*>(y + first);
#pragma unroll
        for (int k = 0; k < ITEMS / 4; ++k) {
            T4 q;
            q.x = v[4 * k];
            q.y = v[4 * k + 1];
            q.z = v[4 * k + 2];
            q.w = v[4 * k + 3];
            p[k] = q;
        }
    } else {
#pragma unroll
        for (int k = 0; k < ITEMS; ++k)
            if (first + k < (long long)n)
                y[first + k] = v[k];
    }
}

// Four elements from `e` (a multiple of 4), 0 past the end; and the matching store.
__device__ __forceinline__ void load_vec4(const T* __restrict__ x, long long e, int n, T q[4])
{
    if (e + 4 <= (long long)n) {
        const T4 t = *reinterpret_cast<const T4*>(x + e);
        q[0] = t.x;
        q[1] = t.y;
        q[2] = t.z;
        q[3] = t.w;
    } else {
#pragma unroll
        for (int j = 0; j < 4; ++j)
            q[j] = e + j < (long long)n ? x[e + j] : (T)0;
    }
}

__device__ __forceinline__ T4 make_vec4(const T q[4])
{
    T4 t;
    t.x = q[0];
    t.y = q[1];
    t.z = q[2];
    t.w = q[3];
    return t;
}

__device__ __forceinline__ void store_vec4(T* __restrict__ y, long long e, int n, T4 t)
{
    if (e + 4 <= (long long)n) {
        *reinterpret_cast<T4*>(y + e) = t;
    } else {
        if (e < n)
            y[e] = t.x;
        if (e + 1 < n)
            y[e + 1] = t.y;
        if (e + 2 < n)
            y[e + 2] = t.z;
    }
}

// Scans the thread's ITEMS values in place (inclusive, or exclusive with EXCLUSIVE_SCAN) and
// returns their sum.
template <bool EXCLUSIVE_SCAN>
__device__ __forceinline__ T thread_scan(T v[ITEMS])
{
    T run = (T)0;
#pragma unroll
    for (int k = 0; k < ITEMS; ++k) {
        const T before = run;
        run += v[k];
        v[k] = EXCLUSIVE_SCAN ? before : run;
    }
    return run;
}

// A tile staged in shared memory as TILE / 4 vectors, unpadded or (PAD) with one vector of padding
// in every nine, which keeps both access patterns below free of bank conflicts when a thread's
// ITEMS / 4 vectors are an even count (an odd count is conflict-free unpadded).
template <bool PAD>
__device__ __forceinline__ int stage_at(int i)
{
    return PAD ? i + (i >> 3) : i;
}

// Warp-striped loads into the stage (vector k * BLOCK + threadIdx.x: a warp reads 512 contiguous
// bytes), 0 past n; and the matching stores of the stage to y.
template <bool PAD>
__device__ __forceinline__ void stage_load_striped(const T* __restrict__ x, long long tile_first, int n, T4* stage)
{
#pragma unroll
    for (int k = 0; k < ITEMS / 4; ++k) {
        const int c = k * BLOCK + threadIdx.x;
        T q[4];
        load_vec4(x, tile_first + 4 * c, n, q);
        stage[stage_at<PAD>(c)] = make_vec4(q);
    }
}

template <bool PAD>
__device__ __forceinline__ void stage_store_striped(T* __restrict__ y, long long tile_first, int n, const T4* stage)
{
#pragma unroll
    for (int k = 0; k < ITEMS / 4; ++k) {
        const int c = k * BLOCK + threadIdx.x;
        store_vec4(y, tile_first + 4 * c, n, stage[stage_at<PAD>(c)]);
    }
}

// The thread's ITEMS consecutive elements of the stage (blocked), and writing them back plus `add`.
template <bool PAD>
__device__ __forceinline__ void stage_read_blocked(const T4* stage, T v[ITEMS])
{
#pragma unroll
    for (int k = 0; k < ITEMS / 4; ++k) {
        const T4 q = stage[stage_at<PAD>(threadIdx.x * (ITEMS / 4) + k)];
        v[4 * k] = q.x;
        v[4 * k + 1] = q.y;
        v[4 * k + 2] = q.z;
        v[4 * k + 3] = q.w;
    }
}

template <bool PAD>
__device__ __forceinline__ void stage_write_blocked(T4* stage, const T v[ITEMS], T add)
{
#pragma unroll
    for (int k = 0; k < ITEMS / 4; ++k) {
        T q[4] = { v[4 * k] + add, v[4 * k + 1] + add, v[4 * k + 2] + add, v[4 * k + 3] + add };
        stage[stage_at<PAD>(threadIdx.x * (ITEMS / 4) + k)] = make_vec4(q);
    }
}

// ---------------------------------------------------------------------------------------------
// Pass 2 and 3 of the multi-block scans (seed 002 §76, "parallel scan for large data sets")
// ---------------------------------------------------------------------------------------------

// Pass 2: the tile sums in place become their exclusive scan (each tile's offset), by one block
// of SUMS_THREADS threads, SUMS_THREADS * SUMS_ITEMS sums at a time with a running carry.
extern "C" __global__ void scan_block_sums(T* sums, int count)
{
    __shared__ T warp_sh[SUMS_THREADS / 32 + 1];
    T carry = (T)0;
    for (int chunk = 0; chunk < count; chunk += SUMS_THREADS * SUMS_ITEMS) { // uniform trip count
        const int first = chunk + threadIdx.x * SUMS_ITEMS;
        T v[SUMS_ITEMS];
        T run = (T)0;
#pragma unroll
        for (int k = 0; k < SUMS_ITEMS; ++k) {
            T t = first + k < count ? sums[first + k] : (T)0;
            v[k] = run;
            run += t;
        }
        T total;
        T excl = block_exclusive_scan<SUMS_THREADS>(run, warp_sh, &total);
#pragma unroll
        for (int k = 0; k < SUMS_ITEMS; ++k)
            if (first + k < count)
                sums[first + k] = carry + excl + v[k];
        carry += total;
    }
}

// Pass 3 of scan-then-add: y[i] += offsets[i / tile]. Four elements per thread (tile is a
// multiple of 4, so they share a tile); no barriers, so out-of-range threads may return.
extern "C" __global__ void add_tile_offsets(T* y, const T* __restrict__ offsets, int n, int tile)
{
    const long long i = 4 * ((long long)blockIdx.x * blockDim.x + threadIdx.x);
    if (i >= n)
        return;
    const T off = offsets[i / tile];
    if (i + 4 <= n) {
        T4* p = reinterpret_cast<T4*>(y + i);
        T4 q = *p;
        q.x += off;
        q.y += off;
        q.z += off;
        q.w += off;
        *p = q;
    } else {
        for (long long k = i; k < n; ++k)
            y[k] += off;
    }
}

// ---------------------------------------------------------------------------------------------
// Pass 1: block-level scans of one tile each; the tile's sum goes to sums[blockIdx.x]
// ---------------------------------------------------------------------------------------------

// seed 002 §73/§75 "naive" (Hillis-Steele) scan, one element per thread, tile = BLOCK.
// N log N adds. The seed updated `input` in place (a thread could read a neighbour already
// updated in the same step) and put __syncthreads inside `if (gid < size)` and inside a loop
// whose trip count depends on tid; here two shared buffers alternate and every thread runs
// every step.
extern "C" __global__ void scan_hillis_steele(const T* __restrict__ x, T* y, T* sums, int n)
{
    __shared__ T buf[2][BLOCK];
    const int tid = threadIdx.x;
    const long long i = (long long)blockIdx.x * BLOCK + tid;
    buf[0][tid] = i < n ? x[i] : (T)0;
    __syncthreads();
    int in = 0;
    for (int off = 1; off < BLOCK; off <<= 1) {
        T v = buf[in][tid];
        if (tid >= off)
            v += buf[in][tid - off];
        buf[1 - in][tid] = v;
        __syncthreads();
        in = 1 - in;
    }
    if (i < n)
        y[i] = buf[in][tid];
    if (tid == BLOCK - 1)
        sums[blockIdx.x] = buf[in][tid];
}

// seed 002 §74/§75 work-efficient (Blelloch) scan: up-sweep (reduction) then down-sweep,
// 2*(n-1) adds; two elements per thread, tile = 2 * BLOCK. The down-sweep gives the exclusive
// scan; adding the element makes it inclusive. PAD: the shared index i becomes i + i/32, so the
// strided accesses of the deeper levels fall in different banks (GPU Gems 3, ch. 39).
template <bool PAD>
__device__ __forceinline__ int bank_index(int i)
{
    return PAD ? i + (i >> 5) : i;
}

template <bool PAD>
__device__ __forceinline__ void blelloch_tile(const T* __restrict__ x, T* y, T* sums, int n)
{
    __shared__ T s[2 * BLOCK + (2 * BLOCK) / 32];
    const int tid = threadIdx.x;
    const long long base = (long long)blockIdx.x * (2 * BLOCK);
    const int ai = tid, bi = tid + BLOCK;
    const T xa = base + ai < n ? x[base + ai] : (T)0;
    const T xb = base + bi < n ? x[base + bi] : (T)0;
    s[bank_index<PAD>(ai)] = xa;
    s[bank_index<PAD>(bi)] = xb;

    int offset = 1;
    for (int d = BLOCK; d > 0; d >>= 1) { // up-sweep
        __syncthreads();
        if (tid < d) {
            int a = offset * (2 * tid + 1) - 1;
            int b = offset * (2 * tid + 2) - 1;
            s[bank_index<PAD>(b)] += s[bank_index<PAD>(a)];
        }
        offset <<= 1;
    }
    __syncthreads();
    if (tid == 0) { // the tile's sum, then clear the root (seed §77 stored the root after the down-sweep: the sum minus the last element)
        const int last = bank_index<PAD>(2 * BLOCK - 1);
        sums[blockIdx.x] = s[last];
        s[last] = (T)0;
    }
    for (int d = 1; d < 2 * BLOCK; d <<= 1) { // down-sweep
        offset >>= 1;
        __syncthreads();
        if (tid < d) {
            int a = bank_index<PAD>(offset * (2 * tid + 1) - 1);
            int b = bank_index<PAD>(offset * (2 * tid + 2) - 1);
            T t = s[a];
            s[a] = s[b];
            s[b] += t;
        }
    }
    __syncthreads();
    if (base + ai < n)
        y[base + ai] = s[bank_index<PAD>(ai)] + xa;
    if (base + bi < n)
        y[base + bi] = s[bank_index<PAD>(bi)] + xb;
}

extern "C" __global__ void scan_blelloch(const T* __restrict__ x, T* y, T* sums, int n)
{
    blelloch_tile<false>(x, y, sums, n);
}

extern "C" __global__ void scan_blelloch_cf(const T* __restrict__ x, T* y, T* sums, int n)
{
    blelloch_tile<true>(x, y, sums, n);
}

// Warp-shuffle tile scan: ITEMS consecutive elements per thread (vector loads), a sequential
// scan in registers, then a block scan of the thread sums with __shfl_up_sync. tile = BLOCK*ITEMS.
extern "C" __global__ void scan_tiles(const T* __restrict__ x, T* y, T* sums, int n)
{
    __shared__ T warp_sh[BLOCK / 32 + 1];
    const long long first = (long long)blockIdx.x * TILE + (long long)threadIdx.x * ITEMS;
    T v[ITEMS];
    load_items(x, first, n, v);
    T run = thread_scan<false>(v);
    T total;
    T excl = block_exclusive_scan<BLOCK>(run, warp_sh, &total);
#pragma unroll
    for (int k = 0; k < ITEMS; ++k)
        v[k] += excl;
    store_items(y, first, n, v);
    if (threadIdx.x == 0)
        sums[blockIdx.x] = total;
}

// ---------------------------------------------------------------------------------------------
// Reduce-then-scan: pass 1 only sums each tile, pass 3 scans it with its offset (reads x twice,
// writes y once: 12 bytes an element instead of scan-then-add's 16)
// ---------------------------------------------------------------------------------------------

extern "C" __global__ void reduce_tiles(const T* __restrict__ x, T* sums, int n)
{
    __shared__ T warp_sh[BLOCK / 32 + 1];
    const long long first = (long long)blockIdx.x * TILE + (long long)threadIdx.x * ITEMS;
    T v[ITEMS];
    load_items(x, first, n, v);
    T run = (T)0;
#pragma unroll
    for (int k = 0; k < ITEMS; ++k)
        run += v[k];
    T total;
    block_exclusive_scan<BLOCK>(run, warp_sh, &total);
    if (threadIdx.x == 0)
        sums[blockIdx.x] = total;
}

extern "C" __global__ void scan_tiles_offset(const T* __restrict__ x, T* y, const T* __restrict__ offsets, int n)
{
    __shared__ T warp_sh[BLOCK / 32 + 1];
    const long long first = (long long)blockIdx.x * TILE + (long long)threadIdx.x * ITEMS;
    T v[ITEMS];
    load_items(x, first, n, v);
    T run = thread_scan<false>(v);
    T total;
    T excl = block_exclusive_scan<BLOCK>(run, warp_sh, &total);
    const T add = offsets[blockIdx.x] + excl;
#pragma unroll
    for (int k = 0; k < ITEMS; ++k)
        v[k] += add;
    store_items(y, first, n, v);
}

// ---------------------------------------------------------------------------------------------
// Single pass: decoupled look-back (Merrill & Garland 2016). Each tile publishes its sum (flag A)
// as soon as it has it, then walks back over its predecessors' published values until one that
// holds an inclusive prefix (flag P); it then publishes its own inclusive prefix. Flag and value
// share one 64-bit word, so a reader sees both or neither. Tiles are numbered in the order the
// blocks start (an atomic counter), so every tile a block waits for belongs to a block already
// running: no deadlock whatever order the hardware schedules blocks in.
// ---------------------------------------------------------------------------------------------

#define FLAG_A 1ull
#define FLAG_P 2ull

__device__ __forceinline__ unsigned to_bits(T v)
{
#if FLOAT
    return __float_as_uint(v);
#else
    return (unsigned)v;
#endif
}

__device__ __forceinline__ T from_bits(unsigned b)
{
#if FLOAT
    return __uint_as_float(b);
#else
    return (T)b;
#endif
}

__device__ __forceinline__ unsigned long long pack(unsigned long long flag, T v)
{
    return (flag << 32) | (unsigned long long)to_bits(v);
}

__device__ __forceinline__ T warp_sum(T v)
{
#pragma unroll
    for (int o = 16; o > 0; o >>= 1)
        v += __shfl_xor_sync(FULL_MASK, v, o);
    return v;
}

// Launch 1: the tile status words and the tile counter start at 0 on every run (the harness
// does not clear scratch buffers between timed runs).
extern "C" __global__ void lookback_init(unsigned long long* status, unsigned int* counter, int tiles)
{
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < tiles)
        status[i] = 0ull;
    if (i == 0)
        *counter = 0u;
}

// Called by the 32 lanes of warp 0: publishes `aggregate` for `tile`, returns the sum of all
// earlier tiles, publishes the inclusive prefix. A window of 32 predecessors is read at once.
__device__ __forceinline__ T lookback(unsigned long long* status, unsigned tile, T aggregate)
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
    long long end = (long long)tile - 1; // lane l reads tile end - l
    while (true) {
        const long long idx = end - lane;
        unsigned long long s;
        do { // wait until the whole window has published (tiles before 0 read as P, 0)
            s = idx >= 0 ? vs[idx] : pack(FLAG_P, (T)0);
        } while (__any_sync(FULL_MASK, (s >> 32) == 0ull));
        const unsigned pmask = __ballot_sync(FULL_MASK, (s >> 32) == FLAG_P);
        const int stop = pmask ? __ffs(pmask) - 1 : 31; // the nearest inclusive prefix, or the whole window
        T val = lane <= stop ? from_bits((unsigned)(s & 0xffffffffull)) : (T)0;
        prefix += warp_sum(val);
        if (pmask) // uniform: a ballot
            break;
        end -= 32;
    }
    if (lane == 0)
        vs[tile] = pack(FLAG_P, prefix + aggregate);
    return prefix;
}

// Launch 2: the whole scan in one pass, 8 bytes an element (read x, write y).
extern "C" __global__ void scan_lookback(const T* __restrict__ x, T* y, unsigned long long* status, unsigned int* counter, int n)
{
    __shared__ T warp_sh[BLOCK / 32 + 1];
    __shared__ unsigned tile_sh;
    __shared__ T prefix_sh;
    if (threadIdx.x == 0)
        tile_sh = atomicAdd(counter, 1u);
    __syncthreads();
    const unsigned tile = tile_sh;
    const long long first = (long long)tile * TILE + (long long)threadIdx.x * ITEMS;
    T v[ITEMS];
    load_items(x, first, n, v);
    T run = thread_scan<EXCLUSIVE != 0>(v);
    T total;
    T excl = block_exclusive_scan<BLOCK>(run, warp_sh, &total);
    if (threadIdx.x < 32) { // all of warp 0, no barrier inside
        T prefix = lookback(status, tile, total);
        if (threadIdx.x == 0)
            prefix_sh = prefix;
    }
    __syncthreads();
    const T add = prefix_sh + excl;
#pragma unroll
    for (int k = 0; k < ITEMS; ++k)
        v[k] += add;
    store_items(y, first, n, v);
}

// The same single pass with coalesced global accesses: the tile goes through shared memory
// (int4 c = k * BLOCK + threadIdx.x is loaded by thread threadIdx.x, a warp reading 512
// contiguous bytes), then each thread takes its ITEMS consecutive elements from shared memory;
// the results go back the same way. The blocked int4 accesses of scan_lookback have a warp's
// 16-byte loads ITEMS * 4 bytes apart instead.
extern "C" __global__ void scan_lookback_smem(const T* __restrict__ x, T* y, unsigned long long* status, unsigned int* counter, int n)
{
    __shared__ T4 stage[TILE / 4];
    __shared__ T warp_sh[BLOCK / 32 + 1];
    __shared__ unsigned tile_sh;
    __shared__ T prefix_sh;
    if (threadIdx.x == 0)
        tile_sh = atomicAdd(counter, 1u);
    __syncthreads();
    const unsigned tile = tile_sh;
    const long long tile_first = (long long)tile * TILE;
    stage_load_striped<false>(x, tile_first, n, stage);
    __syncthreads();
    T v[ITEMS];
    stage_read_blocked<false>(stage, v);
    T run = thread_scan<EXCLUSIVE != 0>(v);
    T total;
    T excl = block_exclusive_scan<BLOCK>(run, warp_sh, &total); // its barriers also order the reads of stage above before the writes below
    if (threadIdx.x < 32) { // all of warp 0, no barrier inside
        T prefix = lookback(status, tile, total);
        if (threadIdx.x == 0)
            prefix_sh = prefix;
    }
    __syncthreads();
    stage_write_blocked<false>(stage, v, prefix_sh + excl);
    __syncthreads();
    stage_store_striped<false>(y, tile_first, n, stage);
}

// ---------------------------------------------------------------------------------------------
// The same single pass in ONE launch (variant lookback_onepass): no zeroing kernel before it.
// Each run takes its tiles from a 64-bit ticket counter that is never reset: ticket / tiles names
// the run (its epoch, 1 .. 2^30 - 1, kept in the top 30 bits of every status word it publishes)
// and ticket % tiles its tile. A status word of another epoch reads as "not yet published", so the
// previous run's words need no clearing; runs on one stream never overlap, so every block of a
// run holds the same epoch, and tickets still follow block start order (no deadlock, as above).
// The staging buffer is padded by one 16-byte vector in nine where a thread's ITEMS / 4 vectors
// are an even count, which keeps both the warp-striped and the blocked accesses free of bank
// conflicts (an odd count is conflict-free unpadded).
// ---------------------------------------------------------------------------------------------

#define EPOCH_SHIFT 34
#define EPOCHS ((1ull << 30) - 1)
#define STAGE_PAD ((ITEMS / 4) % 2 == 0)
#define STAGE_LEN (STAGE_PAD ? TILE / 4 + TILE / 32 : TILE / 4)

__device__ __forceinline__ unsigned long long pack_epoch(unsigned long long epoch, unsigned long long flag, T v)
{
    return (epoch << EPOCH_SHIFT) | (flag << 32) | (unsigned long long)to_bits(v);
}

// lookback() with epoch tags: a predecessor has published when its word carries this run's epoch.
// SLEEP_FIRST, SLEEP_POLL > 0 (lookback_decoupled, as CUB's fixed delay): the warp sleeps that many
// ns after publishing its sum, before its first read, and before reading a window again; 0: never.
template <int SLEEP_FIRST = 0, int SLEEP_POLL = 0>
__device__ __forceinline__ T lookback_epoch(unsigned long long* status, unsigned tile, unsigned long long epoch, T aggregate)
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
    if (SLEEP_FIRST > 0)
        __nanosleep(SLEEP_FIRST);
    T prefix = (T)0;
    long long end = (long long)tile - 1; // lane l reads tile end - l
    while (true) {
        const long long idx = end - lane;
        unsigned long long s;
        bool again = false;
        do { // wait until the whole window has published in this run (tiles before 0 read as P, 0)
            if (SLEEP_POLL > 0 && again)
                __nanosleep(SLEEP_POLL);
            again = true;
            s = idx >= 0 ? vs[idx] : pack_epoch(epoch, FLAG_P, (T)0);
        } while (__any_sync(FULL_MASK, (s >> EPOCH_SHIFT) != epoch));
        const unsigned pmask = __ballot_sync(FULL_MASK, ((s >> 32) & 3ull) == FLAG_P);
        const int stop = pmask ? __ffs(pmask) - 1 : 31;
        T val = lane <= stop ? from_bits((unsigned)(s & 0xffffffffull)) : (T)0;
        prefix += warp_sum(val);
        if (pmask) // uniform: a ballot
            break;
        end -= 32;
    }
    if (lane == 0)
        vs[tile] = pack_epoch(epoch, FLAG_P, prefix + aggregate);
    return prefix;
}

extern "C" __global__ void scan_lookback_onepass(const T* __restrict__ x, T* y, unsigned long long* status, unsigned long long* ticket, int n)
{
    __shared__ T4 stage[STAGE_LEN];
    __shared__ T warp_sh[BLOCK / 32 + 1];
    __shared__ unsigned tile_sh, epoch_sh;
    __shared__ T prefix_sh;
    if (threadIdx.x == 0) { // one 64-bit division a block, in one thread
        const unsigned long long t = atomicAdd(ticket, 1ull);
        const unsigned long long tiles = ((unsigned long long)n + TILE - 1) / TILE;
        tile_sh = (unsigned)(t % tiles);
        epoch_sh = (unsigned)((t / tiles) % EPOCHS + 1);
    }
    __syncthreads();
    const unsigned tile = tile_sh;
    const long long tile_first = (long long)tile * TILE;
    stage_load_striped<STAGE_PAD>(x, tile_first, n, stage);
    __syncthreads();
    T v[ITEMS];
    stage_read_blocked<STAGE_PAD>(stage, v);
    T run = thread_scan<EXCLUSIVE != 0>(v);
    T total;
    T excl = block_exclusive_scan<BLOCK>(run, warp_sh, &total); // its barriers order the reads of stage above before the writes below
    if (threadIdx.x < 32) { // all of warp 0, no barrier inside
        T prefix = lookback_epoch(status, tile, epoch_sh, total);
        if (threadIdx.x == 0)
            prefix_sh = prefix;
    }
    __syncthreads();
    stage_write_blocked<STAGE_PAD>(stage, v, prefix_sh + excl);
    __syncthreads();
    stage_store_striped<STAGE_PAD>(y, tile_first, n, stage);
}
