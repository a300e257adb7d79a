//! Parallel reduction (sum) kernels of seed 002 §26-31, §52, §58 and seed 000's ladder, fixed for any n; each block writes one partial sum.

// Element type: int by default, float with -DFLOAT=1 (variants `*_f32`).
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

// Threads per block, for the kernels that size shared memory or unroll by it (power of two, 64..1024).
#ifndef BLOCK
#define BLOCK 128
#endif
// Blocks of data each block sums before the tree (seed 002 §28 "unrolling 2/4/8 blocks").
#ifndef UNROLL
#define UNROLL 1
#endif

#define FULL_MASK 0xffffffffu

// The last 64 elements of a segment, one warp, no __syncthreads (seed 002 §29 "warp unrolling").
// The seed relied on `volatile` alone; since Volta the threads of a warp are not in lockstep,
// so each step reads, then __syncwarp, then writes. `valid` counts the in-range elements.
__device__ __forceinline__ void warp_tail(volatile T* v, unsigned tid, unsigned valid)
{
    T s = tid < valid ? v[tid] : (T)0;
#pragma unroll
    for (unsigned o = 32; o > 0; o >>= 1) {
        if (tid + o < valid)
            s += v[tid + o];
        __syncwarp();
        if (tid < valid)
            v[tid] = s;
        __syncwarp();
    }
}

__device__ __forceinline__ T warp_sum(T s)
{
#pragma unroll
    for (int o = 16; o > 0; o >>= 1)
        s += __shfl_down_sync(FULL_MASK, s, o);
    return s;
}

// Sums UNROLL blockDim-long slices of x starting at `base` into the first slice, in place (seed 002 §28).
__device__ __forceinline__ void unroll_into_first(T* x, unsigned long long base, unsigned tid, int n)
{
    unsigned long long i = base + tid;
    if (i < (unsigned long long)n) {
        T s = x[i];
#pragma unroll
        for (int k = 1; k < UNROLL; ++k)
            if (i + (unsigned long long)k * blockDim.x < (unsigned long long)n)
                s += x[i + (unsigned long long)k * blockDim.x];
        x[i] = s;
    }
}

// In-range elements of the blockDim-long slice at `base` (0 for a block wholly past the end, so a
// grid larger than needed reads nothing).
__device__ __forceinline__ unsigned valid_in(unsigned long long base, int n)
{
    if (base >= (unsigned long long)n)
        return 0;
    unsigned long long left = (unsigned long long)n - base;
    return left < blockDim.x ? (unsigned)left : blockDim.x;
}

// seed 002 §26, seed 000 rung 1 "naive": neighbored pairs in place; tid % (2*offset) idles half
// the threads of every warp at the first step, and the warps stay busy until the end.
extern "C" __global__ void reduce_neighbored(T* x, T* partials, int n)
{
    unsigned tid = threadIdx.x;
    unsigned long long base = (unsigned long long)blockIdx.x * blockDim.x;
    unsigned valid = valid_in(base, n);
    T* data = x + base;
    for (unsigned offset = 1; offset < blockDim.x; offset *= 2) {
        if (tid % (2 * offset) == 0 && tid + offset < valid)
            data[tid] += data[tid + offset];
        __syncthreads();
    }
    if (tid == 0)
        partials[blockIdx.x] = valid ? data[0] : (T)0;
}

// seed 002 §27, seed 000 rung 2 "stride": the active threads are packed into the first warps
// (index = 2*offset*tid), so whole warps drop out; the accesses are strided.
extern "C" __global__ void reduce_neighbored_less(T* x, T* partials, int n)
{
    unsigned tid = threadIdx.x;
    unsigned long long base = (unsigned long long)blockIdx.x * blockDim.x;
    unsigned valid = valid_in(base, n);
    T* data = x + base;
    for (unsigned offset = 1; offset < blockDim.x; offset *= 2) {
        unsigned index = 2 * offset * tid;
        if (index + offset < valid)
            data[index] += data[index + offset];
        __syncthreads();
    }
    if (tid == 0)
        partials[blockIdx.x] = valid ? data[0] : (T)0;
}

// seed 002 §27, seed 000 rung 3 "sequential": interleaved pairs, offset halving from blockDim/2;
// active threads contiguous and accesses coalesced.
extern "C" __global__ void reduce_interleaved(T* x, T* partials, int n)
{
    unsigned tid = threadIdx.x;
    unsigned long long base = (unsigned long long)blockIdx.x * blockDim.x;
    unsigned valid = valid_in(base, n);
    T* data = x + base;
    for (unsigned offset = blockDim.x / 2; offset > 0; offset >>= 1) {
        if (tid < offset && tid + offset < valid)
            data[tid] += data[tid + offset];
        __syncthreads();
    }
    if (tid == 0)
        partials[blockIdx.x] = valid ? data[0] : (T)0;
}

// seed 002 §28, seed 000 rung 4 "first add then reduce": each block first adds UNROLL slices,
// then reduces the first one with interleaved pairs; UNROLL times fewer blocks.
extern "C" __global__ void reduce_unrolled(T* x, T* partials, int n)
{
    unsigned tid = threadIdx.x;
    unsigned long long base = (unsigned long long)blockIdx.x * blockDim.x * UNROLL;
    unroll_into_first(x, base, tid, n);
    __syncthreads();
    unsigned valid = valid_in(base, n);
    T* data = x + base;
    for (unsigned offset = blockDim.x / 2; offset > 0; offset >>= 1) {
        if (tid < offset && tid + offset < valid)
            data[tid] += data[tid + offset];
        __syncthreads();
    }
    if (tid == 0)
        partials[blockIdx.x] = valid ? data[0] : (T)0;
}

// seed 002 §29, seed 000 rung 5 "unroll": as reduce_unrolled, but the last 64 elements are
// summed by one warp without block barriers.
extern "C" __global__ void reduce_warp_unrolled(T* x, T* partials, int n)
{
    unsigned tid = threadIdx.x;
    unsigned long long base = (unsigned long long)blockIdx.x * blockDim.x * UNROLL;
    unroll_into_first(x, base, tid, n);
    __syncthreads();
    unsigned valid = valid_in(base, n);
    T* data = x + base;
    for (unsigned offset = blockDim.x / 2; offset >= 64; offset >>= 1) {
        if (tid < offset && tid + offset < valid)
            data[tid] += data[tid + offset];
        __syncthreads();
    }
    if (tid < 32)
        warp_tail(data, tid, valid < 64 ? valid : 64);
    if (tid == 0)
        partials[blockIdx.x] = valid ? data[0] : (T)0;
}

// seed 002 §30, seed 000 rung 6: the block's tree completely unrolled for the block size known at
// compile time (the seed's template parameter; BLOCK here, which NVRTC folds the same way).
template <unsigned B>
__device__ __forceinline__ void complete_unrolled(T* data, unsigned tid, unsigned valid)
{
    if (B >= 1024 && tid < 512 && tid + 512 < valid) data[tid] += data[tid + 512];
    __syncthreads();
    if (B >= 512 && tid < 256 && tid + 256 < valid) data[tid] += data[tid + 256];
    __syncthreads();
    if (B >= 256 && tid < 128 && tid + 128 < valid) data[tid] += data[tid + 128];
    __syncthreads();
    if (B >= 128 && tid < 64 && tid + 64 < valid) data[tid] += data[tid + 64];
    __syncthreads();
    if (tid < 32)
        warp_tail(data, tid, valid < 64 ? valid : 64);
}

extern "C" __global__ void reduce_complete_unrolled(T* x, T* partials, int n)
{
    unsigned tid = threadIdx.x;
    unsigned long long base = (unsigned long long)blockIdx.x * BLOCK * UNROLL;
    unroll_into_first(x, base, tid, n);
    __syncthreads();
    unsigned valid = valid_in(base, n);
    complete_unrolled<BLOCK>(x + base, tid, valid);
    if (tid == 0)
        partials[blockIdx.x] = valid ? x[base] : (T)0;
}

// Loads UNROLL slices without touching x: the shared-memory and shuffle versions leave the input intact.
__device__ __forceinline__ T load_unrolled(const T* __restrict__ x, unsigned long long base, unsigned tid, int n)
{
    T s = 0;
#pragma unroll
    for (int k = 0; k < UNROLL; ++k) {
        unsigned long long i = base + tid + (unsigned long long)k * BLOCK;
        if (i < (unsigned long long)n)
            s += x[i];
    }
    return s;
}

// seed 002 §52: the tree in shared memory instead of in place in global memory, completely unrolled.
extern "C" __global__ void reduce_smem(const T* __restrict__ x, T* partials, int n)
{
    __shared__ T smem[BLOCK];
    unsigned tid = threadIdx.x;
    unsigned long long base = (unsigned long long)blockIdx.x * BLOCK * UNROLL;
    smem[tid] = load_unrolled(x, base, tid, n);
    __syncthreads();
    // Every slot was written (0 past the end), so the whole block is valid.
    complete_unrolled<BLOCK>(smem, tid, BLOCK);
    if (tid == 0)
        partials[blockIdx.x] = smem[0];
}

// seed 002 §58: shared-memory tree down to 32 values, then the last warp with __shfl_down_sync.
extern "C" __global__ void reduce_smem_shuffle(const T* __restrict__ x, T* partials, int n)
{
    __shared__ T smem[BLOCK];
    unsigned tid = threadIdx.x;
    unsigned long long base = (unsigned long long)blockIdx.x * BLOCK * UNROLL;
    smem[tid] = load_unrolled(x, base, tid, n);
    __syncthreads();
#pragma unroll
    for (unsigned offset = BLOCK / 2; offset >= 32; offset >>= 1) {
        if (tid < offset)
            smem[tid] += smem[tid + offset];
        __syncthreads();
    }
    if (tid < 32) {
        T s = warp_sum(smem[tid]);
        if (tid == 0)
            partials[blockIdx.x] = s;
    }
}

// Past the seeds: a fixed grid strides over x with 16-byte loads (VEC independent ones in flight
// per thread), sums in registers, then shuffles within each warp and once more across the warps.
#ifndef VEC
#define VEC 4
#endif
extern "C" __global__ void reduce_best(const T* __restrict__ x, T* partials, int n)
{
    __shared__ T warp_sums[BLOCK / 32];
    unsigned tid = threadIdx.x;
    const T4* __restrict__ x4 = reinterpret_cast<const T4*>(x);
    long long n4 = n / 4;
    long long stride = (long long)gridDim.x * BLOCK;
    T acc[VEC];
#pragma unroll
    for (int k = 0; k < VEC; ++k)
        acc[k] = 0;
    long long i = (long long)blockIdx.x * BLOCK + tid;
    for (; i + (VEC - 1) * stride < n4; i += VEC * stride) {
        T4 v[VEC];
#pragma unroll
        for (int k = 0; k < VEC; ++k)
            v[k] = x4[i + k * stride];
#pragma unroll
        for (int k = 0; k < VEC; ++k)
            acc[k] += (v[k].x + v[k].y) + (v[k].z + v[k].w);
    }
    for (; i < n4; i += stride) {
        T4 v = x4[i];
        acc[0] += (v.x + v.y) + (v.z + v.w);
    }
    // The n % 4 elements past the last full vector.
    if (blockIdx.x == 0 && tid < (unsigned)(n - n4 * 4))
        acc[0] += x[n4 * 4 + tid];
    T s = acc[0];
#pragma unroll
    for (int k = 1; k < VEC; ++k)
        s += acc[k];
    s = warp_sum(s);
    if (tid % 32 == 0)
        warp_sums[tid / 32] = s;
    __syncthreads();
    if (tid < 32) {
        s = tid < BLOCK / 32 ? warp_sums[tid] : (T)0;
        s = warp_sum(s);
        if (tid == 0)
            partials[blockIdx.x] = s;
    }
}
