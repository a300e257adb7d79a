//! Constant memory (seed 002 §55): the seed's 9-point 1D stencil with its coefficients in __constant__ memory, in global memory, or read through the read-only path (__ldg, const __restrict__), and a per-lane coefficient table where the 32 lanes of a warp read 32 different addresses.

// Threads per block (the seed's BDIM 128); sizes the shared tile.
#ifndef BDIM
#define BDIM 128
#endif
#define RADIUS 4                       // the seed's RADIUS
#define TAPS (2 * RADIUS + 1)
#define LANES 32

// The seed's coefficients c0..c4 = 1..5, symmetric: {c0, c1, c2, c3, c4, c3, c2, c1, c0}.
#define COEF_INIT { 1.f, 2.f, 3.f, 4.f, 5.f, 4.f, 3.f, 2.f, 1.f }

// A coefficient per tap and lane: lane l of tap k uses LANE_COEF[k * 32 + l] = 1 + (k + l) mod 9.
// Whole numbers, as COEF_INIT: with whole-number inputs every sum below is exact in float32.
#define LANE_COEF_INIT { \
    /* tap 0 */ 1.f, 2.f, 3.f, 4.f, 5.f, 6.f, 7.f, 8.f, 9.f, 1.f, 2.f, 3.f, 4.f, 5.f, 6.f, 7.f, 8.f, 9.f, 1.f, 2.f, 3.f, 4.f, 5.f, 6.f, 7.f, 8.f, 9.f, 1.f, 2.f, 3.f, 4.f, 5.f,\
    /* tap 1 */ 2.f, 3.f, 4.f, 5.f, 6.f, 7.f, 8.f, 9.f, 1.f, 2.f, 3.f, 4.f, 5.f, 6.f, 7.f, 8.f, 9.f, 1.f, 2.f, 3.f, 4.f, 5.f, 6.f, 7.f, 8.f, 9.f, 1.f, 2.f, 3.f, 4.f, 5.f, 6.f,\
    /* tap 2 */ 3.f, 4.f, 5.f, 6.f, 7.f, 8.f, 9.f, 1.f, 2.f, 3.f, 4.f, 5.f, 6.f, 7.f, 8.f, 9.f, 1.f, 2.f, 3.f, 4.f, 5.f, 6.f, 7.f, 8.f, 9.f, 1.f, 2.f, 3.f, 4.f, 5.f, 6.f, 7.f,\
    /* tap 3 */ 4.f, 5.f, 6.f, 7.f, 8.f, 9.f, 1.f, 2.f, 3.f, 4.f, 5.f, 6.f, 7.f, 8.f, 9.f, 1.f, 2.f, 3.f, 4.f, 5.f, 6.f, 7.f, 8.f, 9.f, 1.f, 2.f, 3.f, 4.f, 5.f, 6.f, 7.f, 8.f,\
    /* tap 4 */ 5.f, 6.f, 7.f, 8.f, 9.f, 1.f, 2.f, 3.f, 4.f, 5.f, 6.f, 7.f, 8.f, 9.f, 1.f, 2.f, 3.f, 4.f, 5.f, 6.f, 7.f, 8.f, 9.f, 1.f, 2.f, 3.f, 4.f, 5.f, 6.f, 7.f, 8.f, 9.f,\
    /* tap 5 */ 6.f, 7.f, 8.f, 9.f, 1.f, 2.f, 3.f, 4.f, 5.f, 6.f, 7.f, 8.f, 9.f, 1.f, 2.f, 3.f, 4.f, 5.f, 6.f, 7.f, 8.f, 9.f, 1.f, 2.f, 3.f, 4.f, 5.f, 6.f, 7.f, 8.f, 9.f, 1.f,\
    /* tap 6 */ 7.f, 8.f, 9.f, 1.f, 2.f, 3.f, 4.f, 5.f, 6.f, 7.f, 8.f, 9.f, 1.f, 2.f, 3.f, 4.f, 5.f, 6.f, 7.f, 8.f, 9.f, 1.f, 2.f, 3.f, 4.f, 5.f, 6.f, 7.f, 8.f, 9.f, 1.f, 2.f,\
    /* tap 7 */ 8.f, 9.f, 1.f, 2.f, 3.f, 4.f, 5.f, 6.f, 7.f, 8.f, 9.f, 1.f, 2.f, 3.f, 4.f, 5.f, 6.f, 7.f, 8.f, 9.f, 1.f, 2.f, 3.f, 4.f, 5.f, 6.f, 7.f, 8.f, 9.f, 1.f, 2.f, 3.f,\
    /* tap 8 */ 9.f, 1.f, 2.f, 3.f, 4.f, 5.f, 6.f, 7.f, 8.f, 9.f, 1.f, 2.f, 3.f, 4.f, 5.f, 6.f, 7.f, 8.f, 9.f, 1.f, 2.f, 3.f, 4.f, 5.f, 6.f, 7.f, 8.f, 9.f, 1.f, 2.f, 3.f, 4.f }

// The tables in constant memory. The harness cannot copy into a __constant__ symbol
// (the seed's cudaMemcpyToSymbol), so they are initialised statically.
__constant__ float c_coef[TAPS] = COEF_INIT;
__constant__ float c_lane_coef[TAPS * LANES] = LANE_COEF_INIT;

// The same numbers in global memory, copied into the buffers `coef` and `lane_coef` by init_coef,
// the first launch of every variant (so every variant times the same two launches).
__device__ const float g_coef_table[TAPS] = COEF_INIT;
__device__ const float g_lane_coef_table[TAPS * LANES] = LANE_COEF_INIT;

// One block of TAPS * LANES (288) threads.
extern "C" __global__ void init_coef(float* coef, float* lane_coef)
{
    int t = threadIdx.x;
    if (t < TAPS)
        coef[t] = g_coef_table[t];
    if (t < TAPS * LANES)
        lane_coef[t] = g_lane_coef_table[t];
}

// The block's tile of `in` in shared memory, as the seed's constant_stencil_smem_test: BDIM values
// and RADIUS halo values on each side, 0 outside [0, n) (the seed's zero padding at both ends).
// Every thread of the block runs it and reaches the barrier (the seed's __syncthreads() was inside
// `if (gid < size)`, and its grid dropped the tail of an n not a multiple of the block).
__device__ __forceinline__ void load_tile(float* tile, const float* in, int n)
{
    int t = threadIdx.x;
    long long base = (long long)blockIdx.x * BDIM;
    long long g = base + t;
    tile[RADIUS + t] = g < n ? in[g] : 0.f;
    if (t < RADIUS) {
        long long left = base - RADIUS + t;            // < base < n
        long long right = base + BDIM + t;
        tile[t] = left >= 0 ? in[left] : 0.f;
        tile[RADIUS + BDIM + t] = right < n ? in[right] : 0.f;
    }
    __syncthreads();
}

// out[g] = sum over k of in[g + k - RADIUS] * coefficient k, k = 0..8 in order, in every variant
// (only where the coefficient comes from differs), so all of them agree bit for bit.

// ---- one coefficient per tap, the same for every thread (uniform: the case constant memory is for) ----

// Reference: coefficients in global memory through a plain pointer (ordinary global loads, L1-cached).
extern "C" __global__ void stencil_global(const float* in, float* out, const float* coef, int n)
{
    __shared__ float tile[BDIM + 2 * RADIUS];
    load_tile(tile, in, n);
    long long g = (long long)blockIdx.x * BDIM + threadIdx.x;
    if (g < n) {
        float v = 0.f;
#pragma unroll
        for (int k = 0; k < TAPS; ++k)
            v += tile[threadIdx.x + k] * coef[k];
        out[g] = v;
    }
}

// Coefficients through const __restrict__: the compiler may use the read-only (non-coherent) path.
extern "C" __global__ void stencil_restrict(const float* in, float* out, const float* __restrict__ coef, int n)
{
    __shared__ float tile[BDIM + 2 * RADIUS];
    load_tile(tile, in, n);
    long long g = (long long)blockIdx.x * BDIM + threadIdx.x;
    if (g < n) {
        float v = 0.f;
#pragma unroll
        for (int k = 0; k < TAPS; ++k)
            v += tile[threadIdx.x + k] * coef[k];
        out[g] = v;
    }
}

// Coefficients through __ldg: the read-only path, explicitly.
extern "C" __global__ void stencil_ldg(const float* in, float* out, const float* coef, int n)
{
    __shared__ float tile[BDIM + 2 * RADIUS];
    load_tile(tile, in, n);
    long long g = (long long)blockIdx.x * BDIM + threadIdx.x;
    if (g < n) {
        float v = 0.f;
#pragma unroll
        for (int k = 0; k < TAPS; ++k)
            v += tile[threadIdx.x + k] * __ldg(&coef[k]);
        out[g] = v;
    }
}

// seed §55 constant_stencil_smem_test: coefficients in __constant__ memory (the unrolled loop's
// constant indices let the compiler use them as constant-bank operands of the multiply-adds).
// `coef` is unused: the same parameters as the other variants.
extern "C" __global__ void stencil_constant(const float* in, float* out, const float* coef, int n)
{
    __shared__ float tile[BDIM + 2 * RADIUS];
    load_tile(tile, in, n);
    long long g = (long long)blockIdx.x * BDIM + threadIdx.x;
    if (g < n) {
        float v = 0.f;
#pragma unroll
        for (int k = 0; k < TAPS; ++k)
            v += tile[threadIdx.x + k] * c_coef[k];
        out[g] = v;
    }
}

// ---- a coefficient per tap and lane: the 32 lanes of a warp read 32 different addresses ----

// Reference: the per-lane table in global memory (one coalesced 128-byte load per tap and warp).
extern "C" __global__ void stencil_divergent_global(const float* in, float* out, const float* lane_coef, int n)
{
    __shared__ float tile[BDIM + 2 * RADIUS];
    load_tile(tile, in, n);
    long long g = (long long)blockIdx.x * BDIM + threadIdx.x;
    int lane = threadIdx.x % LANES;
    if (g < n) {
        float v = 0.f;
#pragma unroll
        for (int k = 0; k < TAPS; ++k)
            v += tile[threadIdx.x + k] * lane_coef[k * LANES + lane];
        out[g] = v;
    }
}

// The per-lane table through __ldg.
extern "C" __global__ void stencil_divergent_ldg(const float* in, float* out, const float* lane_coef, int n)
{
    __shared__ float tile[BDIM + 2 * RADIUS];
    load_tile(tile, in, n);
    long long g = (long long)blockIdx.x * BDIM + threadIdx.x;
    int lane = threadIdx.x % LANES;
    if (g < n) {
        float v = 0.f;
#pragma unroll
        for (int k = 0; k < TAPS; ++k)
            v += tile[threadIdx.x + k] * __ldg(&lane_coef[k * LANES + lane]);
        out[g] = v;
    }
}

// The per-lane table in __constant__ memory: 32 addresses per warp-wide load, which the constant
// cache serves one address at a time (§55: constant memory is for data "accessed uniformly by
// threads in a warp"). `lane_coef` is unused.
extern "C" __global__ void stencil_divergent_constant(const float* in, float* out, const float* lane_coef, int n)
{
    __shared__ float tile[BDIM + 2 * RADIUS];
    load_tile(tile, in, n);
    long long g = (long long)blockIdx.x * BDIM + threadIdx.x;
    int lane = threadIdx.x % LANES;
    if (g < n) {
        float v = 0.f;
#pragma unroll
        for (int k = 0; k < TAPS; ++k)
            v += tile[threadIdx.x + k] * c_lane_coef[k * LANES + lane];
        out[g] = v;
    }
}
