//! GPU smoke kernels for gpu-lab's launch features (sm_90): a TMA tile copy, a 16-block cluster sum and a programmatic-dependent-launch pair.
// GPU smoke kernels for gpu-lab's launch features (sm_90): a TMA 2D tile copy taking a tensor
// map by value, a 16-block cluster sum over distributed shared memory (compiled and runtime
// cluster shapes), and a programmatic-dependent-launch pair.
#include <cooperative_groups.h>
namespace cg = cooperative_groups;

// The 128 opaque bytes of a CUtensorMap (cuda.h's type is host-header territory for NVRTC).
struct alignas(64) TensorMap {
    unsigned long long opaque[16];
};

// One 32 x 32 f32 tile per block: TMA copies it into shared memory (completion counted on an
// mbarrier), then the block writes it out row-major.
extern "C" __global__ void __launch_bounds__(128)
    tma_tile_copy(const __grid_constant__ TensorMap in_map, float* out, int cols, int rows) {
    __shared__ alignas(128) float tile[32 * 32];
    __shared__ alignas(8) unsigned long long bar;
    const int x0 = blockIdx.x * 32, y0 = blockIdx.y * 32;
    const unsigned bar_addr = (unsigned)__cvta_generic_to_shared(&bar);
    const unsigned tile_addr = (unsigned)__cvta_generic_to_shared(tile);
    if (threadIdx.x == 0) {
        asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" ::"r"(bar_addr) : "memory");
        asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
    }
    __syncthreads();
    if (threadIdx.x == 0) {
        asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(bar_addr),
                     "r"(32 * 32 * 4)
                     : "memory");
        asm volatile(
            "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
            " [%0], [%1, {%2, %3}], [%4];" ::"r"(tile_addr),
            "l"(reinterpret_cast<unsigned long long>(&in_map)), "r"(x0), "r"(y0), "r"(bar_addr)
            : "memory");
    }
    unsigned done = 0;
    while (!done) {
        asm volatile(
            "{\n .reg .pred p;\n mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n"
            " selp.u32 %0, 1, 0, p;\n}" : "=r"(done) : "r"(bar_addr), "r"(0) : "memory");
    }
    for (int i = threadIdx.x; i < 32 * 32; i += blockDim.x) {
        const int gy = y0 + i / 32, gx = x0 + i % 32;
        if (gy < rows && gx < cols) out[(size_t)gy * cols + gx] = tile[i];
    }
}

// Each block sums its share into shared memory; block 0 of each cluster adds its cluster's
// block totals through distributed shared memory and writes one partial per cluster.
__device__ void cluster_body(const float* in, float* out, int n) {
    __shared__ float partial[256];
    __shared__ float block_total;
    cg::cluster_group cluster = cg::this_cluster();
    float s = 0.f;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
        s += in[i];
    partial[threadIdx.x] = s;
    __syncthreads();
    for (int step = blockDim.x / 2; step > 0; step >>= 1) {
        if (threadIdx.x < step) partial[threadIdx.x] += partial[threadIdx.x + step];
        __syncthreads();
    }
    if (threadIdx.x == 0) block_total = partial[0];
    cluster.sync();
    if (cluster.block_rank() == 0 && threadIdx.x == 0) {
        float t = 0.f;
        for (unsigned r = 0; r < cluster.num_blocks(); ++r) t += *cluster.map_shared_rank(&block_total, r);
        out[blockIdx.x / cluster.num_blocks()] = t;
    }
    // Keep every block's shared memory alive until rank 0 has read it.
    cluster.sync();
}

extern "C" __global__ void __cluster_dims__(16, 1, 1) __launch_bounds__(256)
    cluster_sum_compiled16(const float* in, float* out, int n) {
    cluster_body(in, out, n);
}

extern "C" __global__ void __launch_bounds__(256) cluster_sum(const float* in, float* out, int n) {
    cluster_body(in, out, n);
}

// PDL pair: the producer lets the consumer start early; the consumer waits for the producer's
// memory before reading it (griddepcontrol, PTX 7.8, sm_90).
extern "C" __global__ void pdl_produce(const float* a, float* mid, int n) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) mid[i] = a[i];
    asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
}

extern "C" __global__ void pdl_consume(const float* mid, const float* b, float* out, int n) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    const float bi = i < n ? b[i] : 0.f;  // independent work before the wait
    asm volatile("griddepcontrol.wait;" ::: "memory");
    if (i < n) out[i] = mid[i] + bi;
}
