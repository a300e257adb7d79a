//! Occupancy is not performance: one memory-latency-bound kernel (chains of dependent loads) for gpu-lab's occupancy suite, swept over block size, register limits, dynamic shared memory and loads in flight per thread.

// Dependent loads per element: each hop's address is the value the previous hop returned, so a
// chain has one load in flight at a time. Only other warps (occupancy) or other chains of the
// same thread (CHAINS, instruction-level parallelism) can hide the DRAM latency.
#ifndef HOPS
#define HOPS 8
#endif

// Independent chains per thread, interleaved hop by hop (1: the plain kernel).
#ifndef CHAINS
#define CHAINS 1
#endif

namespace occ {

// `idx` holds 0, 1, 2, ... (init = "iota"), so idx[k] == k and a chain that starts at element e
// ends, after HOPS hops of j = idx[(j + step) & mask], at (e + HOPS * step) & mask. Reading
// x[(j - HOPS * step) & mask] then reads x[e]: `out` is a copy of `x` exactly when every hop
// loaded the address it was meant to (the suite's copy check). `mask` + 1 is the length of
// `idx`, a power of two no smaller than n; `step` moves each hop far from the last (a new DRAM
// line for every warp and hop), a multiple of 32 so that a warp's 32 lanes read one 128-byte line.
__device__ __forceinline__ void chase(const unsigned* __restrict__ idx, const float* __restrict__ x, float* __restrict__ out,
                                      long long n, unsigned mask, unsigned step)
{
    const long long tile = (long long)blockDim.x * CHAINS;
    for (long long base = (long long)blockIdx.x * tile + threadIdx.x; base < n; base += (long long)gridDim.x * tile) {
        unsigned j[CHAINS];
#pragma unroll
        for (int c = 0; c < CHAINS; ++c)
            j[c] = (unsigned)(base + (long long)c * blockDim.x) & mask;
#pragma unroll
        for (int h = 0; h < HOPS; ++h) {
#pragma unroll
            for (int c = 0; c < CHAINS; ++c)
                j[c] = idx[(j[c] + step) & mask];
        }
#pragma unroll
        for (int c = 0; c < CHAINS; ++c) {
            const long long e = base + (long long)c * blockDim.x;
            if (e < n)
                out[e] = x[(j[c] - (unsigned)HOPS * step) & mask];
        }
    }
}

// The kernel as the compiler likes it: no launch bounds (registers as it chooses, or capped by
// --maxrregcount). Dynamic shared memory, when a variant asks for it, is reserved by the launch
// and never touched: the reservation alone limits how many blocks fit on an SM.
__global__ void chase_free(const unsigned* idx, const float* x, float* out, long long n, unsigned mask, unsigned step)
{
    chase(idx, x, out, n, mask, step);
}

// The same kernel under __launch_bounds__(THREADS, MIN_BLOCKS): the compiler must fit MIN_BLOCKS
// blocks of THREADS threads on an SM, so it caps the registers at what the register file allows
// for them (65536 / (THREADS * MIN_BLOCKS) on Hopper), spilling to local memory if it must.
template <int THREADS, int MIN_BLOCKS>
__global__ void __launch_bounds__(THREADS, MIN_BLOCKS) chase_bounded(const unsigned* idx, const float* x, float* out, long long n, unsigned mask, unsigned step)
{
    chase(idx, x, out, n, mask, step);
}

}  // namespace occ
