//! Sum of N int32 values with thread-block clusters (Hopper, sm_90), against a two-pass kernel pair without clusters.
// Each block sums a grid-stride share of the input, then the blocks of a cluster add their totals
// through distributed shared memory (cooperative_groups::this_cluster(), map_shared_rank) and the
// cluster's first block writes one partial sum per cluster.
//
// The cluster shape comes from the launch (the manifest's `cluster = [...]`: 16 blocks, which is
// non-portable and needs CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED, or the portable 8),
// or from the kernel itself (`__cluster_dims__(8, 1, 1)` on cluster_sum_static8). The code reads
// the cluster's size at run time, so one kernel serves every shape; clusters must lie along x
// (cluster = [S, 1, 1] on a 1-D grid), so cluster c is blocks c*S .. c*S + S - 1.
//
// int32 sums are exact (wrapping as the check's do), so the check compares exactly.

#include <cooperative_groups.h>

namespace cg = cooperative_groups;

namespace cl {

// The block's sum of `v`, valid in thread 0. Uses 32 ints of shared memory; every thread calls it.
__device__ __forceinline__ int block_sum(int v, int* warp_sums) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(0xffffffffu, v, o);
  const int lane = threadIdx.x % 32;
  const int warp = threadIdx.x / 32;
  if (lane == 0) warp_sums[warp] = v;
  __syncthreads();
  int total = 0;
  if (warp == 0) {
    total = lane < (int)(blockDim.x / 32) ? warp_sums[lane] : 0;
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) total += __shfl_down_sync(0xffffffffu, total, o);
  }
  return total;
}

// This thread's grid-stride share of x: 16-byte loads over the whole int4s, then the last N % 4.
__device__ __forceinline__ int thread_share(const int* __restrict__ x, long long n) {
  const long long first = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  const long long stride = (long long)gridDim.x * blockDim.x;
  const long long n4 = n / 4;
  const int4* x4 = reinterpret_cast<const int4*>(x);
  int v = 0;
  for (long long i = first; i < n4; i += stride) {
    const int4 q = x4[i];
    v += q.x + q.y + q.z + q.w;
  }
  const long long tail = n4 * 4 + first;
  if (tail < n) v += x[tail];
  return v;
}

// The body of every cluster variant: block sums, then rank 0 of each cluster adds the other
// blocks' totals straight from their shared memory.
__device__ __forceinline__ void cluster_sum_body(const int* __restrict__ x, int* __restrict__ partials, long long n) {
  __shared__ int warp_sums[32];
  __shared__ int block_total;
  cg::cluster_group cluster = cg::this_cluster();

  const int t = block_sum(thread_share(x, n), warp_sums);
  if (threadIdx.x == 0) block_total = t;
  // Every block's total is written and visible to the whole cluster.
  cluster.sync();

  const unsigned size = cluster.num_blocks();
  if (cluster.block_rank() == 0 && threadIdx.x < 32) {
    // Warp 0 of rank 0 reads up to 32 remote totals at once (distributed shared memory).
    int s = 0;
    for (unsigned r = threadIdx.x; r < size; r += 32) s += *cluster.map_shared_rank(&block_total, r);
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) s += __shfl_down_sync(0xffffffffu, s, o);
    if (threadIdx.x == 0) partials[blockIdx.x / size] = s;
  }
  // No block may exit (releasing its shared memory) before rank 0 has read it.
  cluster.sync();
}

// Cluster shape from the launch (cluster = ["16", "1", "1"] or ["8", "1", "1"]).
__global__ void __launch_bounds__(256) cluster_sum(const int* __restrict__ x, int* __restrict__ partials, long long n) {
  cluster_sum_body(x, partials, n);
}

// Cluster shape compiled in: launched with no `cluster` in the manifest.
__global__ void __cluster_dims__(8, 1, 1) __launch_bounds__(256)
    cluster_sum_static8(const int* __restrict__ x, int* __restrict__ partials, long long n) {
  cluster_sum_body(x, partials, n);
}

// Two passes without clusters: one partial per block to global memory, then one block adds them.
__global__ void __launch_bounds__(256) block_sums(const int* __restrict__ x, int* __restrict__ block_partials, long long n) {
  __shared__ int warp_sums[32];
  const int t = block_sum(thread_share(x, n), warp_sums);
  if (threadIdx.x == 0) block_partials[blockIdx.x] = t;
}

__global__ void __launch_bounds__(1024) final_sum(const int* __restrict__ block_partials, int* __restrict__ total, int count) {
  __shared__ int warp_sums[32];
  int v = 0;
  for (int i = threadIdx.x; i < count; i += blockDim.x) v += block_partials[i];
  const int t = block_sum(v, warp_sums);
  if (threadIdx.x == 0) total[0] = t;
}

// ---------------------------------------------------------------------------------------------
// Histogram of N int32 values into NBINS bins (bin = value mod NBINS, taken non-negative), three
// ways. Every variant zeroes the bins first (zero_bins: a launch of its own), because the
// kernels add into them with global atomics.

__global__ void zero_bins(int* __restrict__ bins, int nbins) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < nbins; i += gridDim.x * blockDim.x) bins[i] = 0;
}

__device__ __forceinline__ int bin_of(int v, int nbins) {
  const int b = v % nbins;
  return b < 0 ? b + nbins : b;
}

// Calls add(bin) for each element of this thread's grid-stride share of x (16-byte loads, then
// the last N % 4 elements).
template <typename Add>
__device__ __forceinline__ void for_each_bin(const int* __restrict__ x, long long n, int nbins, Add add) {
  const long long first = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  const long long stride = (long long)gridDim.x * blockDim.x;
  const long long n4 = n / 4;
  const int4* x4 = reinterpret_cast<const int4*>(x);
  for (long long i = first; i < n4; i += stride) {
    const int4 q = x4[i];
    add(bin_of(q.x, nbins));
    add(bin_of(q.y, nbins));
    add(bin_of(q.z, nbins));
    add(bin_of(q.w, nbins));
  }
  const long long tail = n4 * 4 + first;
  if (tail < n) add(bin_of(x[tail], nbins));
}

// No shared memory: every element is an atomic add on a global bin (L2 atomics, contended).
__global__ void __launch_bounds__(256) hist_global(const int* __restrict__ x, int* __restrict__ bins, long long n,
                                                   int nbins) {
  for_each_bin(x, n, nbins, [&](int b) { atomicAdd(&bins[b], 1); });
}

// Per block: a private histogram of all NBINS bins in shared memory (shared atomics), then one
// global atomic a non-zero bin a block: up to GRID x NBINS global atomics.
__global__ void __launch_bounds__(256) hist_block(const int* __restrict__ x, int* __restrict__ bins, long long n,
                                                  int nbins) {
  extern __shared__ int local[];
  for (int i = threadIdx.x; i < nbins; i += blockDim.x) local[i] = 0;
  __syncthreads();
  for_each_bin(x, n, nbins, [&](int b) { atomicAdd(&local[b], 1); });
  __syncthreads();
  for (int i = threadIdx.x; i < nbins; i += blockDim.x)
    if (local[i] != 0) atomicAdd(&bins[i], local[i]);
}

// Per cluster, through distributed shared memory (the CUDA programming guide's pattern): the
// cluster's S blocks share one histogram, block rank j holding bins [j*NBINS/S, (j+1)*NBINS/S)
// in its shared memory (NBINS/S ints: shared_bytes). Each element's atomic add goes to the block
// that owns its bin, on this SM or over the SM-to-SM network; then every block adds its slice to
// the global bins: GRID x NBINS / S global atomics, S times fewer than hist_block.
__global__ void __launch_bounds__(256) hist_cluster(const int* __restrict__ x, int* __restrict__ bins, long long n,
                                                    int nbins) {
  extern __shared__ int slice[];
  cg::cluster_group cluster = cg::this_cluster();
  const int blocks = (int)cluster.num_blocks();
  const int per_block = nbins / blocks;  // the manifest's NBINS is a multiple of every cluster size
  for (int i = threadIdx.x; i < per_block; i += blockDim.x) slice[i] = 0;
  // Every slice of the cluster is zeroed before any block adds into it.
  cluster.sync();
  for_each_bin(x, n, nbins, [&](int b) {
    int* owner = cluster.map_shared_rank(slice, b / per_block);
    atomicAdd(owner + b % per_block, 1);
  });
  // Every remote add has landed before the slices are read (and before any block exits).
  cluster.sync();
  const int first_bin = (int)cluster.block_rank() * per_block;
  for (int i = threadIdx.x; i < per_block; i += blockDim.x)
    if (slice[i] != 0) atomicAdd(&bins[first_bin + i], slice[i]);
}

}  // namespace cl
