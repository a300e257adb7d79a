//! Global-memory access patterns of seed 002 §40-42: misaligned reads and writes, strided reads, AoS vs SoA, and L1-cached vs L2-only loads.
//
// Every kernel is a copy (checked bit for bit through the check's offset and stride), so the
// only thing that changes between variants is how a warp's addresses fall on 32-byte sectors.

// Loads go through L1 (ld.global.ca, the seeds' -Xptxas -dlcm=ca) unless L2_ONLY=1, which uses
// ld.global.cg (-dlcm=cg). NVRTC hands PTX to the driver's JIT, where ptxas options do not
// reach, so the cache operator is chosen per load: the same instruction -dlcm would select.
#ifndef L2_ONLY
#define L2_ONLY 0
#endif
#if L2_ONLY
#define LOAD(p) __ldcg(p)
#else
#define LOAD(p) __ldca(p)
#endif

// seed 002 §40 misaligned_read_test: out[i] = in[i + offset]. A warp's 128 bytes start `offset`
// floats past a sector boundary: 5 sectors instead of 4 unless offset * 4 is a multiple of 32.
extern "C" __global__ void misaligned_read(const float* __restrict__ in, float* __restrict__ out, int n, int offset)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    int k = i + offset;
    if (k < n)
        out[i] = LOAD(&in[k]);
}

// seed 002 §41 misaligned_write_test: out[i + offset] = in[i]; the stores straddle sectors.
extern "C" __global__ void misaligned_write(const float* __restrict__ in, float* __restrict__ out, int n, int offset)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    int k = i + offset;
    if (k < n)
        out[k] = LOAD(&in[i]);
}

// Coalesced (stride 1) vs strided reads: out[i] = in[i * stride]; a warp touches 32 * stride * 4
// bytes to use 128 of them.
extern "C" __global__ void strided_read(const float* __restrict__ in, float* __restrict__ out, int n, int stride)
{
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i * stride < n)
        out[i] = LOAD(&in[i * stride]);
}

// seed 002 §42: an array of structures of two floats. 4-byte alignment keeps the compiler from
// fusing x and y into one 8-byte load, as the seeds' compiler did not either.
struct Pair {
    float x;
    float y;
};

// AoS, both fields: each load of .x uses every other word of its sectors (50% efficiency);
// the load of .y finds the same sectors in L1.
extern "C" __global__ void aos_copy(const Pair* __restrict__ in, Pair* __restrict__ out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        out[i].x = LOAD(&in[i].x);
        out[i].y = LOAD(&in[i].y);
    }
}

// SoA (the seed's struct { float x[N]; float y[N]; }): x then y, each field contiguous.
extern "C" __global__ void soa_copy(const float* __restrict__ in, float* __restrict__ out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        out[i] = LOAD(&in[i]);
        out[n + i] = LOAD(&in[n + i]);
    }
}

// Only the x field, the case where the layout decides the DRAM traffic: a sum of the x fields.
// AoS fetches every unused y too (twice the bytes), SoA only the x array. A copy of one float per
// thread is limited by the loads a GPU keeps in flight, not by DRAM, and would hide that
// difference; so each thread keeps ELEMS independent loads in flight over a grid-stride loop,
// then the block sums with warp shuffles and writes one partial.
#ifndef ELEMS
#define ELEMS 4
#endif
// Threads per block of the sums; the manifest binds it and the launch's block from one name.
#ifndef SUM_BLOCK
#define SUM_BLOCK 256
#endif

__device__ __forceinline__ float block_sum(float s)
{
    __shared__ float warp_sums[SUM_BLOCK / 32];
    for (int o = 16; o > 0; o >>= 1)
        s += __shfl_down_sync(0xffffffffu, s, o);
    if (threadIdx.x % 32 == 0)
        warp_sums[threadIdx.x / 32] = s;
    __syncthreads();
    s = 0;
    if (threadIdx.x < 32) {
        s = threadIdx.x < SUM_BLOCK / 32 ? warp_sums[threadIdx.x] : 0.0f;
        for (int o = 16; o > 0; o >>= 1)
            s += __shfl_down_sync(0xffffffffu, s, o);
    }
    return s;
}

extern "C" __global__ void aos_sum_x(const Pair* __restrict__ in, float* __restrict__ partials, int n)
{
    float acc[ELEMS] = {};
    long long stride = (long long)gridDim.x * SUM_BLOCK;
    long long i = (long long)blockIdx.x * SUM_BLOCK + threadIdx.x;
    for (; i + (ELEMS - 1) * stride < n; i += ELEMS * stride) {
#pragma unroll
        for (int k = 0; k < ELEMS; ++k)
            acc[k] += LOAD(&in[i + k * stride].x);
    }
    for (; i < n; i += stride)
        acc[0] += LOAD(&in[i].x);
    float s = 0;
#pragma unroll
    for (int k = 0; k < ELEMS; ++k)
        s += acc[k];
    s = block_sum(s);
    if (threadIdx.x == 0)
        partials[blockIdx.x] = s;
}

extern "C" __global__ void soa_sum_x(const float* __restrict__ x, float* __restrict__ partials, int n)
{
    float acc[ELEMS] = {};
    long long stride = (long long)gridDim.x * SUM_BLOCK;
    long long i = (long long)blockIdx.x * SUM_BLOCK + threadIdx.x;
    for (; i + (ELEMS - 1) * stride < n; i += ELEMS * stride) {
#pragma unroll
        for (int k = 0; k < ELEMS; ++k)
            acc[k] += LOAD(&x[i + k * stride]);
    }
    for (; i < n; i += stride)
        acc[0] += LOAD(&x[i]);
    float s = 0;
#pragma unroll
    for (int k = 0; k < ELEMS; ++k)
        s += acc[k];
    s = block_sum(s);
    if (threadIdx.x == 0)
        partials[blockIdx.x] = s;
}
