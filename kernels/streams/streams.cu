//! Kernels of gpu-lab's streams suite (seed 002 §60-67): the seed's sum-array kernel run on chunks of the arrays over several streams, and a vector add that first holds its SM for a fixed number of cycles, to show which launches of several streams run at once.

// Seed 002 §63's sum_array_overlap, given a chunk: a, b and c point at the chunk's first element
// (`d_a[chunk * M]` in the manifest) and n is the chunk's length. The seed passed the whole
// array's size with a grid of ELEMENTS_PER_STREAM / block + 1 blocks, so the last block of the
// last chunk read and wrote past the end of the arrays; here every thread past n does nothing.
// n is at most 2^25 here, so int indices suffice.
extern "C" __global__ void sum_array_overlap(const int* __restrict__ a, const int* __restrict__ b, int* __restrict__ c, int n)
{
    int gid = blockIdx.x * blockDim.x + threadIdx.x;
    if (gid < n)
        c[gid] = a[gid] + b[gid];
}

// A kernel that takes a known time whatever else runs: every thread waits `cycles` SM clock
// cycles (clock64, the CUDA samples' clock_block), then the block adds n elements of a and b into
// c, grid-stride. Launched with one block it holds one SM, so three of them on three streams can
// all run at once: the time of the program says how many ran together (seed 002 §64's
// blocking_nonblocking_test1 and §67's k1, k2, k3, which print instead of adding).
extern "C" __global__ void spin_add(const int* __restrict__ a, const int* __restrict__ b, int* __restrict__ c, int n, long long cycles)
{
    long long start = clock64();
    while (clock64() - start < cycles) {
    }
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
        c[i] = a[i] + b[i];
}
