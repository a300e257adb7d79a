//! Warp shuffle kernels of seed 002 §57-58: the seed's five shuffles (and its commented-out shift-around) over an N-element array, each beside the same permutation through shared memory, and warp-shuffle sum reductions beside the shared-memory tree.

// Threads per block: a multiple of 32 (every warp full, so every shuffle may name all 32 lanes),
// a power of two from 64 to 1024 for the reductions. Sizes the shared arrays.
#ifndef BLOCK
#define BLOCK 128
#endif
// Blocks of data each block of the reductions sums before its tree (1: the seed's one element per thread).
#ifndef UNROLL
#define UNROLL 1
#endif

#define FULL_MASK 0xffffffffu

// The seed's shuffle arguments (§57): source lane 3, shifts of 3, xor with 1; the rotation
// (§57's commented-out test_shfl_shift_around) by 2.
#define SRC_LANE 3
#define DELTA 3
#define LANE_MASK 1
#define ROTATE 2

// ---- permutations within each warp (seed 002 §57) ----
//
// Every thread loads its element (0 past the end of the array), every lane of every warp
// reaches the shuffle (the grid has whole warps only: no thread returns early), and only the
// threads inside the array store. So out[i] = the value of lane src(lane) of the same warp, a
// lane past the end counting as 0.

__device__ __forceinline__ long long global_index()
{
    return (long long)blockIdx.x * blockDim.x + threadIdx.x;
}

__device__ __forceinline__ int load_or_zero(const int* in, long long i, int n)
{
    return i < n ? in[i] : 0;
}

// seed §57 test_shfl_broadcast_32: every lane takes lane 3's value.
extern "C" __global__ void shfl_broadcast(const int* in, int* out, int n)
{
    long long i = global_index();
    int x = load_or_zero(in, i, n);
    int y = __shfl_sync(FULL_MASK, x, SRC_LANE, 32);
    if (i < n)
        out[i] = y;
}

// seed §57 test_shfl_broadcast_16: width 16, so lanes 0-15 take lane 3 and lanes 16-31 take lane 19.
extern "C" __global__ void shfl_broadcast16(const int* in, int* out, int n)
{
    long long i = global_index();
    int x = load_or_zero(in, i, n);
    int y = __shfl_sync(FULL_MASK, x, SRC_LANE, 16);
    if (i < n)
        out[i] = y;
}

// seed §57 test_shfl_up: lane l takes lane l-3; lanes 0-2 keep their own value.
extern "C" __global__ void shfl_up(const int* in, int* out, int n)
{
    long long i = global_index();
    int x = load_or_zero(in, i, n);
    int y = __shfl_up_sync(FULL_MASK, x, DELTA);
    if (i < n)
        out[i] = y;
}

// seed §57 test_shfl_down: lane l takes lane l+3; lanes 29-31 keep their own value.
extern "C" __global__ void shfl_down(const int* in, int* out, int n)
{
    long long i = global_index();
    int x = load_or_zero(in, i, n);
    int y = __shfl_down_sync(FULL_MASK, x, DELTA);
    if (i < n)
        out[i] = y;
}

// seed §57 test_shfl_xor_butterfly: lane l takes lane l^1 (neighbouring pairs swap).
extern "C" __global__ void shfl_xor(const int* in, int* out, int n)
{
    long long i = global_index();
    int x = load_or_zero(in, i, n);
    int y = __shfl_xor_sync(FULL_MASK, x, LANE_MASK, 32);
    if (i < n)
        out[i] = y;
}

// seed §57 test_shfl_shift_around (commented out in the seed): lane l takes lane (l+2) mod 32;
// __shfl_sync takes the source lane modulo the width, so the last lanes wrap to the first.
extern "C" __global__ void shfl_rotate(const int* in, int* out, int n)
{
    long long i = global_index();
    int x = load_or_zero(in, i, n);
    int lane = threadIdx.x % 32;
    int y = __shfl_sync(FULL_MASK, x, lane + ROTATE, 32);
    if (i < n)
        out[i] = y;
}

// The same permutations through shared memory: each thread stores its value, the warp
// synchronises, and each thread loads its source lane's slot. `op` is a constant in every caller,
// so the switch folds away.
enum { OP_BROADCAST, OP_BROADCAST16, OP_UP, OP_DOWN, OP_XOR, OP_ROTATE };

__device__ __forceinline__ int src_lane(int op, int lane)
{
    switch (op) {
    case OP_BROADCAST:   return SRC_LANE;
    case OP_BROADCAST16: return (lane & ~15) + SRC_LANE;
    case OP_UP:          return lane >= DELTA ? lane - DELTA : lane;
    case OP_DOWN:        return lane + DELTA < 32 ? lane + DELTA : lane;
    case OP_XOR:         return lane ^ LANE_MASK;
    default:             return (lane + ROTATE) % 32;
    }
}

__device__ __forceinline__ void smem_permute(const int* in, int* out, int n, int op)
{
    __shared__ int slot[BLOCK];
    long long i = global_index();
    int t = threadIdx.x;
    int lane = t % 32;
    slot[t] = load_or_zero(in, i, n);
    __syncwarp();
    int y = slot[(t - lane) + src_lane(op, lane)];
    if (i < n)
        out[i] = y;
}

extern "C" __global__ void smem_broadcast(const int* in, int* out, int n)   { smem_permute(in, out, n, OP_BROADCAST); }
extern "C" __global__ void smem_broadcast16(const int* in, int* out, int n) { smem_permute(in, out, n, OP_BROADCAST16); }
extern "C" __global__ void smem_up(const int* in, int* out, int n)          { smem_permute(in, out, n, OP_UP); }
extern "C" __global__ void smem_down(const int* in, int* out, int n)        { smem_permute(in, out, n, OP_DOWN); }
extern "C" __global__ void smem_xor(const int* in, int* out, int n)         { smem_permute(in, out, n, OP_XOR); }
extern "C" __global__ void smem_rotate(const int* in, int* out, int n)      { smem_permute(in, out, n, OP_ROTATE); }

// ---- sum reductions (seed 002 §58): one partial sum per block ----

// The sum of UNROLL BLOCK-long slices starting at `base`, for thread `tid` (0 past the end).
__device__ __forceinline__ int load_unrolled(const int* x, long long base, int tid, int n)
{
    int s = 0;
#pragma unroll
    for (int k = 0; k < UNROLL; ++k) {
        long long i = base + tid + (long long)k * BLOCK;
        if (i < n)
            s += x[i];
    }
    return s;
}

__device__ __forceinline__ int warp_sum_down(int s)
{
#pragma unroll
    for (int o = 16; o > 0; o >>= 1)
        s += __shfl_down_sync(FULL_MASK, s, o);
    return s;          // lane 0 holds the warp's sum
}

__device__ __forceinline__ int warp_sum_xor(int s)
{
#pragma unroll
    for (int o = 16; o > 0; o >>= 1)
        s += __shfl_xor_sync(FULL_MASK, s, o);
    return s;          // every lane holds the warp's sum
}

// seed §58 reduction_smem_benchmark: the whole tree in shared memory, the last warp without block
// barriers. Fixed: the seed's warp tail adds 4 before 8, and its volatile warp-synchronous code
// has no __syncwarp (a race since Volta); here each step reads, synchronises, then writes.
extern "C" __global__ void reduce_smem_tree(const int* x, int* partials, int n)
{
    __shared__ int smem[BLOCK];
    int tid = threadIdx.x;
    long long base = (long long)blockIdx.x * BLOCK * UNROLL;
    smem[tid] = load_unrolled(x, base, tid, n);
    __syncthreads();
#pragma unroll
    for (int offset = BLOCK / 2; offset > 32; offset >>= 1) {
        if (tid < offset)
            smem[tid] += smem[tid + offset];
        __syncthreads();
    }
    if (tid < 32) {                              // all of warp 0: the __syncwarp()s see full warps
        volatile int* v = smem;
#pragma unroll
        for (int o = 32; o > 0; o >>= 1) {
            int s = v[tid] + v[tid + o];
            __syncwarp();
            v[tid] = s;
            __syncwarp();
        }
        if (tid == 0)
            partials[blockIdx.x] = v[0];
    }
}

// seed §58 reduction_smem_warp_shfl: the shared-memory tree down to 32 values, then the last warp
// with __shfl_down_sync (five shuffles replace the tail's shared loads and stores).
extern "C" __global__ void reduce_smem_shuffle(const int* x, int* partials, int n)
{
    __shared__ int smem[BLOCK];
    int tid = threadIdx.x;
    long long base = (long long)blockIdx.x * BLOCK * UNROLL;
    smem[tid] = load_unrolled(x, base, tid, n);
    __syncthreads();
#pragma unroll
    for (int offset = BLOCK / 2; offset >= 32; offset >>= 1) {
        if (tid < offset)
            smem[tid] += smem[tid + offset];
        __syncthreads();
    }
    if (tid < 32) {                              // all of warp 0: a full-mask shuffle
        int s = warp_sum_down(smem[tid]);
        if (tid == 0)
            partials[blockIdx.x] = s;
    }
}

// Past the seed (the "block of warps" reduction): every warp reduces its own 32 values with
// __shfl_down_sync, writes one value to shared memory, and the first warp reduces those
// BLOCK/32 values with shuffles again. Shared memory holds BLOCK/32 ints, written once and read once.
extern "C" __global__ void reduce_warp_shuffle(const int* x, int* partials, int n)
{
    __shared__ int warp_sums[BLOCK / 32];
    int tid = threadIdx.x;
    int lane = tid % 32, warp = tid / 32;
    long long base = (long long)blockIdx.x * BLOCK * UNROLL;
    int s = warp_sum_down(load_unrolled(x, base, tid, n));
    if (lane == 0)
        warp_sums[warp] = s;
    __syncthreads();
    if (warp == 0) {
        s = warp_sum_down(lane < BLOCK / 32 ? warp_sums[lane] : 0);
        if (lane == 0)
            partials[blockIdx.x] = s;
    }
}

// As reduce_warp_shuffle with the xor butterfly (§57's __shfl_xor_sync): every lane ends with the
// warp's sum, not only lane 0.
extern "C" __global__ void reduce_warp_shuffle_xor(const int* x, int* partials, int n)
{
    __shared__ int warp_sums[BLOCK / 32];
    int tid = threadIdx.x;
    int lane = tid % 32, warp = tid / 32;
    long long base = (long long)blockIdx.x * BLOCK * UNROLL;
    int s = warp_sum_xor(load_unrolled(x, base, tid, n));
    if (lane == 0)
        warp_sums[warp] = s;
    __syncthreads();
    if (warp == 0) {
        s = warp_sum_xor(lane < BLOCK / 32 ? warp_sums[lane] : 0);
        if (lane == 0)
            partials[blockIdx.x] = s;
    }
}

// Past the seed: as reduce_warp_shuffle with __reduce_add_sync (one redux.sync instruction per
// warp on sm_80 and later instead of five shuffles and adds); shuffles on older GPUs.
__device__ __forceinline__ int warp_sum_redux(int s)
{
#if __CUDA_ARCH__ >= 800
    return __reduce_add_sync(FULL_MASK, s);
#else
    return warp_sum_xor(s);
#endif
}

extern "C" __global__ void reduce_warp_redux(const int* x, int* partials, int n)
{
    __shared__ int warp_sums[BLOCK / 32];
    int tid = threadIdx.x;
    int lane = tid % 32, warp = tid / 32;
    long long base = (long long)blockIdx.x * BLOCK * UNROLL;
    int s = warp_sum_redux(load_unrolled(x, base, tid, n));
    if (lane == 0)
        warp_sums[warp] = s;
    __syncthreads();
    if (warp == 0) {
        s = warp_sum_redux(lane < BLOCK / 32 ? warp_sums[lane] : 0);
        if (lane == 0)
            partials[blockIdx.x] = s;
    }
}
