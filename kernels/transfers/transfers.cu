//! Vector add c = a + b for gpu-lab's transfers suite (seed 002 §12, §37-39): one kernel, given device, mapped (zero-copy) or managed pointers; the variants differ only in where the data lives and how it crosses the host link.

// One element per thread. The index and the length are 64-bit: N reaches 2^26 here, and a user
// suite may go past 2^31 elements. Every variant launches ceil_div(N, 256) blocks of 256.
//
// On device buffers the loads and the store go to DRAM. On mapped host buffers (zero-copy,
// seed 002 §38) each load and each store crosses the host link as the warp issues it. On managed
// buffers (unified memory, §39) the first touch of a page that lives on the host faults and the
// driver migrates it to the device, unless a prefetch moved it before the launch.
extern "C" __global__ void sum_arrays(const float* __restrict__ a, const float* __restrict__ b, float* __restrict__ c, long long n)
{
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        c[i] = a[i] + b[i];
}
