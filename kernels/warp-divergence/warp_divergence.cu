//! Warp divergence (seed 002 §21): branches that split a warp vs branches uniform per warp, built optimised and with -G.

// seed 002 §21 (3_warp_divergence.cu), as the seed wrote them: nothing is stored, so an
// optimised build removes the branch (100% branch efficiency either way); with -G it stays,
// and the even/odd branch splits every warp (the seed's GT 1030 read 83.33%).
extern "C" __global__ void code_without_divergence()
{
    int gid = blockIdx.x * blockDim.x + threadIdx.x;
    float a, b;
    a = b = 0;
    int warp_id = gid / 32;
    if (warp_id % 2 == 0) {
        a = 100.0;
        b = 50.0;
    } else {
        a = 200;
        b = 75;
    }
}

extern "C" __global__ void divergence_code()
{
    int gid = blockIdx.x * blockDim.x + threadIdx.x;
    float a, b;
    a = b = 0;
    if (gid % 2 == 0) {
        a = 100.0;
        b = 50.0;
    } else {
        a = 200;
        b = 75;
    }
}

// The same lesson with work that is kept, checked and long enough to time: element e is
// transformed by one of two integer recurrences chosen by its parity, ITER steps each.
#ifndef ITER
#define ITER 32
#endif

__device__ __forceinline__ unsigned even_work(unsigned v)
{
#pragma unroll 1
    for (int k = 0; k < ITER; ++k)
        v = v * 1664525u + 1013904223u;
    return v;
}

__device__ __forceinline__ unsigned odd_work(unsigned v)
{
#pragma unroll 1
    for (int k = 0; k < ITER; ++k)
        v = (v ^ (v >> 7)) * 2654435761u;
    return v;
}

// Thread i takes element i: even and odd lanes of every warp take different branches, so each
// warp runs both loops one after the other with half its threads idle.
extern "C" __global__ void parity_divergent(const unsigned* __restrict__ in, unsigned* __restrict__ out, int n)
{
    int e = blockIdx.x * blockDim.x + threadIdx.x;
    if (e >= n)
        return;
    unsigned v = in[e];
    if (e % 2 == 0)
        v = even_work(v);
    else
        v = odd_work(v);
    out[e] = v;
}

// The same elements regrouped so the branch is decided per warp: in each pair of warps the first
// takes the 32 even elements of its 64, the second the 32 odd ones. No warp diverges; the
// price is that each warp's loads and stores are 2 elements apart (two warps share the sectors).
extern "C" __global__ void parity_warp_aligned(const unsigned* __restrict__ in, unsigned* __restrict__ out, int n)
{
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    int warp = t / 32, lane = t % 32;
    int e = 2 * (lane + 32 * (warp / 2)) + warp % 2;
    if (e >= n)
        return;
    unsigned v = in[e];
    if (warp % 2 == 0)
        v = even_work(v);
    else
        v = odd_work(v);
    out[e] = v;
}
