//! Dynamic parallelism (seed 002 §32-33): parent kernels that launch child grids, the seed's recursive reductions rewritten for CUDA 12+'s device runtime, and the rungs past them; built as relocatable device code (rdc = true) and linked with the device runtime.

// What CUDA 12 (CDP2) changed, and what every kernel here follows:
// - cudaDeviceSynchronize() no longer exists in device code (the seed's §32-33 kernels call it
//   after every child launch). A parent cannot wait for its child; work that needs the child's
//   result is launched into cudaStreamTailLaunch (it starts once the launching grid and all its
//   other work have finished), or the recursion is written so that nothing waits: each level does
//   its work before it launches the next.
// - cudaStreamFireAndForget: a child that nothing in the parent depends on, started as soon as
//   the hardware allows. The host still sees the whole tree: a grid is complete only when every
//   grid it launched is, so the harness's events (and its synchronize) cover all the children.
// - The child sees every global write its launching thread made before the launch; a
//   __syncthreads() before the launch extends that to the writes of the whole block.
// - A device-side launch that fails (the pending-launch buffer full, a bad configuration) only
//   sets the launching thread's error: LAUNCH_CHECK() traps, so the job faults instead of
//   computing a wrong sum that a check could miss or blame on the kernel's arithmetic.

// The streams of CDP2, in case a compiler's headers do not name them (NVRTC: its own builtins);
// the values are those of cuda_device_runtime_api.h.
#ifndef cudaStreamTailLaunch
#define cudaStreamTailLaunch ((cudaStream_t)0x3)
#endif
#ifndef cudaStreamFireAndForget
#define cudaStreamFireAndForget ((cudaStream_t)0x4)
#endif

#define LAUNCH_CHECK()                           \
    do {                                         \
        if (cudaGetLastError() != cudaSuccess)   \
            __trap();                            \
    } while (0)

#define FULL_MASK 0xffffffffu

// Threads per block of each child grid of the copy variants.
#ifndef CHILD_BLOCK
#define CHILD_BLOCK 256
#endif
// Threads per block of reduce_grid (a multiple of 32, at most 1024).
#ifndef BLOCK
#define BLOCK 512
#endif

__device__ __forceinline__ int warp_sum(int s)
{
#pragma unroll
    for (int o = 16; o > 0; o >>= 1)
        s += __shfl_down_sync(FULL_MASK, s, o);
    return s;
}

// ---------------------------------------------------------------------------------------------
// (1) A vector operation (a copy) as one flat grid, and as a parent that launches a child grid
//     per block (seed 002 §32's pattern: "first thread in the thread block launches a child grid")
// ---------------------------------------------------------------------------------------------

// y[i] = x[i] for i < n, one element per thread. The flat variant launches it from the host over
// the whole vector; copy_parent launches it from the device over one slice per child.
extern "C" __global__ void copy_slice(const int* __restrict__ x, int* __restrict__ y, long long n)
{
    const long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
    if (i < n)
        y[i] = x[i];
}

// Block b's thread 0 launches a child grid copying elements [b * chunk, (b + 1) * chunk), into
// the fire-and-forget stream (the parent needs nothing back; the seed's parent waited with
// cudaDeviceSynchronize, which CUDA 12 removed). The other threads of the block do nothing: the
// parent grid is pure launch overhead, which is the point of the comparison.
extern "C" __global__ void copy_parent(const int* x, int* y, long long n, long long chunk)
{
    if (threadIdx.x != 0)
        return;
    const long long first = blockIdx.x * chunk;
    if (first >= n)
        return;
    const long long count = chunk < n - first ? chunk : n - first;
    copy_slice<<<(unsigned)((count + CHILD_BLOCK - 1) / CHILD_BLOCK), CHILD_BLOCK, 0, cudaStreamFireAndForget>>>(x + first, y + first, count);
    LAUNCH_CHECK();
}

// ---------------------------------------------------------------------------------------------
// (2) The seed's recursive reductions (seed 002 §33), int32 in place, n a multiple of blockDim
// ---------------------------------------------------------------------------------------------

// seed 002 §33 gpuRecursiveReduce: each block of the host's grid owns the blockDim-long slice of
// g_idata at blockIdx.x * blockDim.x. A level adds the slice's second half onto its first, then
// thread 0 launches a one-block child grid of isize/2 threads on the first half, which does the
// same, down to two elements, which the last child adds into g_odata[parent block] (a child's
// blockIdx.x is 0, and it is given the parent's slice and output slot). Every block of the host's
// grid thus starts a chain of log2(blockDim) - 1 nested launches, one after another.
// Changed for CUDA 12: the seed's cudaDeviceSynchronize() after the launch, and the
// __syncthreads() after it, are gone. They only made each parent wait for its whole chain, and
// nothing in the parent reads the child's result: the level's adds are done (and made visible to
// the child by the __syncthreads before the launch) when the child starts. The child goes into the
// fire-and-forget stream.
extern "C" __global__ void reduce_recursive_seed(int* g_idata, int* g_odata, unsigned int isize)
{
    unsigned int tid = threadIdx.x;
    int* idata = g_idata + blockIdx.x * blockDim.x;
    int* odata = &g_odata[blockIdx.x];
    // stop condition
    if (isize == 2 && tid == 0) {
        g_odata[blockIdx.x] = idata[0] + idata[1];
        return;
    }
    // in-place reduction of this level
    unsigned int istride = isize >> 1;
    if (istride > 1 && tid < istride)
        idata[tid] += idata[tid + istride];
    // sync at block level: the child must see every thread's add
    __syncthreads();
    // nested invocation of the next level (seed: followed by cudaDeviceSynchronize())
    if (tid == 0) {
        reduce_recursive_seed<<<1, istride, 0, cudaStreamFireAndForget>>>(idata, odata, istride);
        LAUNCH_CHECK();
    }
}

// seed 002 §33 gpuRecursiveReduce2, corrected: one launch per level for the whole grid instead of
// one per block. The host launches gridDim blocks of idim/2 threads with istride = idim/2; each
// thread adds idata[tid + istride] onto idata[tid] of its block's slice, and thread 0 of block 0
// launches the next level (the same grid, half the threads) into the tail-launch stream, which
// starts it only once this whole grid has finished: every block's adds are done. At istride 1 the
// one thread left per block writes the slice's sum.
// The seed's own version adds four strided elements per thread with a comment "This is wrong" (it
// sums the wrong elements), and has no barrier or stream order between a level and the next, so
// the child could start while other blocks of the parent were still adding; the tail launch is
// CUDA 12's way to say "after this grid".
extern "C" __global__ void reduce_recursive_nested(int* g_idata, int* g_odata, int istride, int idim)
{
    int* idata = g_idata + blockIdx.x * (long long)idim;
    if (istride == 1) { // launched with one thread per block
        g_odata[blockIdx.x] = idata[0] + idata[1];
        return;
    }
    idata[threadIdx.x] += idata[threadIdx.x + istride];
    if (threadIdx.x == 0 && blockIdx.x == 0) {
        reduce_recursive_nested<<<gridDim.x, istride / 2, 0, cudaStreamTailLaunch>>>(g_idata, g_odata, istride / 2, idim);
        LAUNCH_CHECK();
    }
}

// ---------------------------------------------------------------------------------------------
// (3) Past the seed: fewer device launches, then none
// ---------------------------------------------------------------------------------------------

// reduce_recursive_nested with the recursion stopped at a cutoff: once a slice's live front is
// at most 64 elements, one warp per block adds them with shuffles instead of five more levels of
// launches. isize is the live front of every slice; the grid has isize/2 threads per block above
// the cutoff and 32 at it. From idim = 512: levels of 512, 256, 128 live elements, then the warp:
// three device launches instead of eight.
extern "C" __global__ void reduce_recursive_cutoff(int* g_idata, int* g_odata, int isize, int idim)
{
    int* idata = g_idata + blockIdx.x * (long long)idim;
    if (isize <= 64) { // launched with 32 threads: the tail in one warp
        const unsigned lane = threadIdx.x;
        int s = lane < (unsigned)isize ? idata[lane] : 0;
        if (lane + 32 < (unsigned)isize)
            s += idata[lane + 32];
        s = warp_sum(s);
        if (lane == 0)
            g_odata[blockIdx.x] = s;
        return;
    }
    const int istride = isize / 2;
    idata[threadIdx.x] += idata[threadIdx.x + istride];
    if (threadIdx.x == 0 && blockIdx.x == 0) {
        const int next_threads = istride <= 64 ? 32 : istride / 2;
        reduce_recursive_cutoff<<<gridDim.x, next_threads, 0, cudaStreamTailLaunch>>>(g_idata, g_odata, istride, idim);
        LAUNCH_CHECK();
    }
}

// One block sums `count` partials into total[0].
extern "C" __global__ void sum_partials(const int* __restrict__ partials, int* total, int count)
{
    __shared__ int warp_sums[32];
    int s = 0;
    for (int i = threadIdx.x; i < count; i += blockDim.x)
        s += partials[i];
    s = warp_sum(s);
    if ((threadIdx.x & 31) == 0)
        warp_sums[threadIdx.x >> 5] = s;
    __syncthreads();
    if (threadIdx.x < 32) {
        s = threadIdx.x < (blockDim.x + 31) / 32 ? warp_sums[threadIdx.x] : 0;
        s = warp_sum(s);
        if (threadIdx.x == 0)
            total[0] = s;
    }
}

// A whole-grid reduction (kernels/reduction's best rung: a fixed grid striding over int4 loads,
// four in flight per thread, shuffles within and across warps) into one partial per block; with
// tail != 0, thread 0 of block 0 then launches sum_partials into the tail-launch stream, which runs
// once every block has written its partial: the second pass of a two-pass reduction launched by
// the GPU instead of the host. With tail == 0 the host launches sum_partials itself.
extern "C" __global__ void reduce_grid(const int* __restrict__ x, int* partials, int* total, int n, int tail)
{
    __shared__ int warp_sums[BLOCK / 32];
    const unsigned tid = threadIdx.x;
    const int4* __restrict__ x4 = reinterpret_cast<const int4*>(x);
    const long long n4 = n / 4;
    const long long stride = (long long)gridDim.x * BLOCK;
    int acc[4] = { 0, 0, 0, 0 };
    long long i = (long long)blockIdx.x * BLOCK + tid;
    for (; i + 3 * stride < n4; i += 4 * stride) {
        int4 v[4];
#pragma unroll
        for (int k = 0; k < 4; ++k)
            v[k] = x4[i + k * stride];
#pragma unroll
        for (int k = 0; k < 4; ++k)
            acc[k] += (v[k].x + v[k].y) + (v[k].z + v[k].w);
    }
    for (; i < n4; i += stride) {
        const int4 v = x4[i];
        acc[0] += (v.x + v.y) + (v.z + v.w);
    }
    if (blockIdx.x == 0 && tid < (unsigned)(n - n4 * 4)) // the n % 4 elements past the last vector
        acc[0] += x[n4 * 4 + tid];
    int s = warp_sum((acc[0] + acc[1]) + (acc[2] + acc[3]));
    if (tid % 32 == 0)
        warp_sums[tid / 32] = s;
    __syncthreads();
    if (tid < 32) {
        s = tid < BLOCK / 32 ? warp_sums[tid] : 0;
        s = warp_sum(s);
        if (tid == 0)
            partials[blockIdx.x] = s;
    }
    if (tail && blockIdx.x == 0 && tid == 0) {
        sum_partials<<<1, 1024, 0, cudaStreamTailLaunch>>>(partials, total, gridDim.x);
        LAUNCH_CHECK();
    }
}
