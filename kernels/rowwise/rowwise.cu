//! Row-wise softmax, layernorm and rmsnorm of a row-major matrix in f32 or bf16, as a ladder of rungs (README.md says what each changes).
// Row-wise kernels: softmax, layernorm and rmsnorm of a rows x cols row-major matrix, in f32 or
// bf16 (bf16 in and out, f32 math), as a ladder of rungs (README.md says what each changes):
//
// - rw::*_rowwise_scalar<T, RT, ONLINE>: the teaching rungs, scalar loads re-read from global
//   memory on every pass over the row; RT threads per row: 1 (one thread per row), 32 (a warp
//   per row, 8 rows per 256-thread block) or the block's size (a block per row). Softmax reads
//   its row 3 times (max, sum, write), or twice with ONLINE (the running max and sum of
//   Milakov & Gimelshein's online softmax in one pass, then the write). Layernorm reads 3 times
//   (mean, variance, write), rmsnorm twice (mean square, write).
// - rw::*_vec<T, RT, VPT, CL>: 16-byte loads, and the row held in registers (VPT 16-byte
//   vectors a thread) when it fits: one read and one write per element, the copy's traffic.
//   A row that does not fit is streamed twice with 16-byte loads (online softmax; layernorm from
//   sums shifted by the row's first element; rmsnorm's sum of squares), then written. CL > 1
//   splits each row over a thread-block cluster of CL blocks (cluster = [CL, 1, 1], blocks
//   c*CL .. c*CL + CL - 1 on row c): each block holds its slice in registers and the blocks
//   combine their partial statistics through distributed shared memory, so a row too long for
//   one block's registers (131072 f32 values are 512 KB; a block has 256 KB of registers) is
//   still read once.
// - rw::*_persistent<T, RT, VPT, CL, MINB, S, RB>: with CL > 1 the persistent cluster rung: a grid
//   of as many clusters as the GPU holds at once walks the rows, each block keeping its slice of
//   S rows in registers so that the loads of the next S - 1 rows are in flight while one row is
//   reduced and written (RB rows at a time); one block barrier a row and the blocks' statistics
//   sent into each other's shared memory by st.async (no cluster barrier). With CL = 1 the vec
//   kernel (the suite uses it at the shapes whose rows fit one block).
//
// Contract of the vec kernels: cols a multiple of CL x (16 / sizeof(T)) (rows stay 16-byte
// aligned, every 16-byte vector lies in one block's slice); a call that breaks it traps rather
// than compute a wrong answer. The scalar kernels take any cols.
//
// Softmax computes softmax(scale * x) (scale > 0: attention's 1/sqrt(d), or a large scale that
// makes exp overflow unless the row's maximum is subtracted first). exp is ex2.approx of
// (x - max) * scale * log2(e), as fast softmax kernels do. Layernorm: (x - mean) * rsqrt(var +
// eps) * gamma + beta (biased variance); rmsnorm: x * rsqrt(mean(x^2) + eps) * gamma.
//
// Built by NVRTC for sm_90 (clusters and distributed shared memory need sm_90).

#include <cuda_bf16.h>
#include <cooperative_groups.h>

namespace cg = cooperative_groups;

namespace rw {

constexpr int SOFTMAX = 0;
constexpr int LAYERNORM = 1;
constexpr int RMSNORM = 2;
constexpr float LOG2E = 1.4426950408889634f;
#define RW_NEG_INF __int_as_float(0xff800000)

// ---------------------------------------------------------------------------------------------
// Element access: one value as f32, and 16-byte vectors of 4 f32 or 8 bf16 values.

__device__ __forceinline__ float to_f(float v) { return v; }
__device__ __forceinline__ float to_f(__nv_bfloat16 v) { return __bfloat162float(v); }
template <typename T> __device__ __forceinline__ T from_f(float v);
template <> __device__ __forceinline__ float from_f<float>(float v) { return v; }
template <> __device__ __forceinline__ __nv_bfloat16 from_f<__nv_bfloat16>(float v) { return __float2bfloat16_rn(v); }

template <typename T> struct Pack;
template <> struct Pack<float> {
  static constexpr int N = 4;
  __device__ static __forceinline__ float get(const uint4& q, int k) { return __uint_as_float((&q.x)[k]); }
  __device__ static __forceinline__ float get_fresh(const uint4& q, int k) { return get(q, k); }
  __device__ static __forceinline__ uint4 pack(const float (&r)[N]) {
    return make_uint4(__float_as_uint(r[0]), __float_as_uint(r[1]), __float_as_uint(r[2]), __float_as_uint(r[3]));
  }
};
template <> struct Pack<__nv_bfloat16> {
  static constexpr int N = 8;
  // A bf16 is the upper half of an f32: widening is exact.
  __device__ static __forceinline__ float get(const uint4& q, int k) {
    const unsigned w = (&q.x)[k >> 1];
    return __uint_as_float((k & 1) ? (w & 0xffff0000u) : (w << 16));
  }
  // The same, but opaque to the compiler, so it is recomputed at each use rather than kept:
  // the persistent rung cannot afford 32 widened values next to two rows of packed ones.
  __device__ static __forceinline__ float get_fresh(const uint4& q, int k) {
    const unsigned w = (&q.x)[k >> 1];
    unsigned r;
    if (k & 1) asm volatile("and.b32 %0, %1, 0xffff0000;" : "=r"(r) : "r"(w));
    else asm volatile("shl.b32 %0, %1, 16;" : "=r"(r) : "r"(w));
    return __uint_as_float(r);
  }
  // Rounded to nearest even, two values an instruction (cvt.rn.bf16x2.f32).
  __device__ static __forceinline__ uint4 pack(const float (&r)[N]) {
    uint4 q;
#pragma unroll
    for (int w = 0; w < 4; ++w) {
      const __nv_bfloat162 h = __floats2bfloat162_rn(r[2 * w], r[2 * w + 1]);
      (&q.x)[w] = *reinterpret_cast<const unsigned*>(&h);
    }
    return q;
  }
};

// 2^x, the MUFU instruction (relative error about 2^-22; subnormal results flush to zero).
__device__ __forceinline__ float ex2(float x) {
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
}

// 16-byte loads as the persistent rung wants them, volatile so the compiler neither moves them
// out of its row loop (gamma and beta would then sit in registers for the whole kernel) nor
// past the barriers: the row's vectors read once and kept out of L1 (left to gamma and beta),
// and gamma's and beta's, read again every row, from L1.
__device__ __forceinline__ uint4 load_stream(const uint4* p) {
  uint4 r;
  asm volatile("ld.global.nc.L1::no_allocate.v4.u32 {%0, %1, %2, %3}, [%4];"
               : "=r"(r.x), "=r"(r.y), "=r"(r.z), "=r"(r.w)
               : "l"(p));
  return r;
}
__device__ __forceinline__ uint4 load_param(const uint4* p) {
  uint4 r;
  asm volatile("ld.global.nc.v4.u32 {%0, %1, %2, %3}, [%4];" : "=r"(r.x), "=r"(r.y), "=r"(r.z), "=r"(r.w) : "l"(p));
  return r;
}

// ---------------------------------------------------------------------------------------------
// Reductions over the threads of a row: a warp (RT = 32), a block (RT = blockDim.x), and with
// CL > 1 the blocks of a cluster through distributed shared memory. Every thread of the row's
// group gets the same result (the cluster's blocks add the same values in the same order).

template <bool MAX> __device__ __forceinline__ float combine(float a, float b) { return MAX ? fmaxf(a, b) : a + b; }
template <bool MAX> __device__ __forceinline__ float identity() { return MAX ? RW_NEG_INF : 0.f; }

template <bool MAX> __device__ __forceinline__ float warp_reduce(float v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v = combine<MAX>(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}

// `red`: 32 floats of shared memory; `slot`: this reduction's own float of shared memory, read
// by the cluster's other blocks (one slot per reduction of a kernel, so none is overwritten
// while another block may still read it; the kernel ends with a cluster barrier).
template <bool MAX, int RT, int CL>
__device__ __forceinline__ float group_reduce(float v, float* red, float* slot) {
  if constexpr (RT == 1) return v;
  v = warp_reduce<MAX>(v);
  if constexpr (RT > 32) {
    const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    if (lane == 0) red[warp] = v;
    __syncthreads();
    v = warp_reduce<MAX>(lane < RT / 32 ? red[lane] : identity<MAX>());
    __syncthreads();  // `red` is free again for the next reduction
  }
  if constexpr (CL > 1) {
    cg::cluster_group cluster = cg::this_cluster();
    if (threadIdx.x == 0) *slot = v;
    cluster.sync();  // every block's slot written and visible to the cluster
    float t = identity<MAX>();
#pragma unroll
    for (int r = 0; r < CL; ++r) t = combine<MAX>(t, *cluster.map_shared_rank(slot, r));
    v = t;
  }
  return v;
}

// The row a thread works on and its index among the row's RT threads (CL blocks a row).
template <int RT, int CL> __device__ __forceinline__ int row_of() {
  if constexpr (RT == 1) return blockIdx.x * blockDim.x + threadIdx.x;
  if constexpr (RT == 32) return blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32;
  return blockIdx.x / CL;
}
template <int RT> __device__ __forceinline__ int lane_of() {
  if constexpr (RT == 1) return 0;
  if constexpr (RT == 32) return threadIdx.x % 32;
  return threadIdx.x;
}

// The resident rows' cluster exchange: each block publishes one pair of block statistics in
// distributed shared memory and reads every block's pair, behind a single cluster barrier. The
// barrier that keeps a block's shared memory alive until the others have read it is split:
// arrive here, wait at the kernel's end (cluster_exit_wait), so it hides behind the writes.
// publish_pair writes this block's pair and waits for every block's; pair_of(slot, r) reads block
// r's (read each as often as needed: no array of CL pairs in registers); done_reading arrives.
__device__ __forceinline__ void publish_pair(float2 mine, float2* slot) {
  if (threadIdx.x == 0) *slot = mine;
  cg::this_cluster().sync();
}
__device__ __forceinline__ float2 pair_of(float2* slot, int r) { return *cg::this_cluster().map_shared_rank(slot, r); }
__device__ __forceinline__ void done_reading() { asm volatile("barrier.cluster.arrive.release.aligned;" ::: "memory"); }
__device__ __forceinline__ void cluster_exit_wait() { asm volatile("barrier.cluster.wait.acquire.aligned;" ::: "memory"); }

// ---------------------------------------------------------------------------------------------
// The teaching rungs: scalar loads, every pass re-reads the row from global memory.

template <typename T, int OP, int RT, bool ONLINE>
__device__ __forceinline__ void scalar_body(const T* __restrict__ x, T* __restrict__ y, const T* __restrict__ g,
                                            const T* __restrict__ b, int rows, int cols, float arg) {
  __shared__ float red[32];
  const int row = row_of<RT, 1>();
  const int lane = lane_of<RT>();
  if (row >= rows) return;  // RT = 1 or 32 only (no block barrier follows); a block per row has its row
  const T* xr = x + (size_t)row * cols;
  T* yr = y + (size_t)row * cols;
  if constexpr (OP == SOFTMAX) {
    const float k = arg * LOG2E;
    float m = RW_NEG_INF, d = 0.f;
    if constexpr (ONLINE) {
      // One pass: the running maximum m and the sum d of exp(scale * (x - m)), rescaled
      // whenever m grows.
      for (int c = lane; c < cols; c += RT) {
        const float v = to_f(xr[c]);
        if (v > m) {
          d = d * ex2((m - v) * k) + 1.f;
          m = v;
        } else {
          d += ex2((v - m) * k);
        }
      }
      const float mx = group_reduce<true, RT, 1>(m, red, nullptr);
      d = d == 0.f ? 0.f : d * ex2((m - mx) * k);  // a thread without elements has m = -inf
      m = mx;
    } else {
      for (int c = lane; c < cols; c += RT) m = fmaxf(m, to_f(xr[c]));
      m = group_reduce<true, RT, 1>(m, red, nullptr);
      for (int c = lane; c < cols; c += RT) d += ex2((to_f(xr[c]) - m) * k);
    }
    const float inv = 1.f / group_reduce<false, RT, 1>(d, red, nullptr);
    for (int c = lane; c < cols; c += RT) yr[c] = from_f<T>(ex2((to_f(xr[c]) - m) * k) * inv);
  } else if constexpr (OP == LAYERNORM) {
    float s = 0.f;
    for (int c = lane; c < cols; c += RT) s += to_f(xr[c]);
    const float mean = group_reduce<false, RT, 1>(s, red, nullptr) / cols;
    float q = 0.f;
    for (int c = lane; c < cols; c += RT) {
      const float t = to_f(xr[c]) - mean;
      q += t * t;
    }
    const float rstd = rsqrtf(group_reduce<false, RT, 1>(q, red, nullptr) / cols + arg);
    for (int c = lane; c < cols; c += RT)
      yr[c] = from_f<T>((to_f(xr[c]) - mean) * rstd * to_f(g[c]) + to_f(b[c]));
  } else {
    float q = 0.f;
    for (int c = lane; c < cols; c += RT) {
      const float v = to_f(xr[c]);
      q += v * v;
    }
    const float rstd = rsqrtf(group_reduce<false, RT, 1>(q, red, nullptr) / cols + arg);
    for (int c = lane; c < cols; c += RT) yr[c] = from_f<T>(to_f(xr[c]) * rstd * to_f(g[c]));
  }
}

// ---------------------------------------------------------------------------------------------
// Vectorised rungs: 16-byte loads; the row (or the block's slice of it) kept in registers.

// Statistics of a row: softmax's max and sum of exponentials, a norm's mean and 1/rms.
struct Stats {
  float a, b;
};

// The writing pass for one 16-byte vector j of the block's slice (`col`: its first column).
template <typename T, int OP, bool FRESH = false>
__device__ __forceinline__ uint4 transform(const uint4& in, Stats st, float k, const T* __restrict__ g,
                                           const T* __restrict__ b, int col) {
  using P = Pack<T>;
  uint4 gv = in, bv = in;
  float r[P::N];
  const auto param = [](const T* p) {
    return FRESH ? load_param(reinterpret_cast<const uint4*>(p)) : *reinterpret_cast<const uint4*>(p);
  };
  if constexpr (OP != SOFTMAX) gv = param(g + col);
  if constexpr (OP == LAYERNORM) bv = param(b + col);
#pragma unroll
  for (int e = 0; e < P::N; ++e) {
    const auto get = [](const uint4& q, int i) { return FRESH ? P::get_fresh(q, i) : P::get(q, i); };
    const float v = get(in, e);
    if constexpr (OP == SOFTMAX) r[e] = ex2((v - st.a) * k) * st.b;
    else if constexpr (OP == LAYERNORM) r[e] = (v - st.a) * st.b * get(gv, e) + get(bv, e);
    else r[e] = v * st.b * get(gv, e);
  }
  return P::pack(r);
}

// The row held in registers: each thread's VPT vectors, read once. The block's statistics
// first (over its slice); with CL > 1 the blocks then combine one pair each (publish_pair, pair_of, done_reading):
// softmax's (max, sum of exp) rescaled to the common max, layernorm's (mean, squared
// deviations) by Chan's parallel formula, rmsnorm's sums of squares.
template <typename T, int OP, int RT, int VPT, int CL>
__device__ __forceinline__ Stats resident_stats(const uint4 (&v)[VPT], int lane, int nvec, int cols, float arg,
                                                float* red, float2* pair) {
  using P = Pack<T>;
// Every value this thread holds, as `x`, in `body`.
#define RW_EACH(body)                                    \
  _Pragma("unroll") for (int i = 0; i < VPT; ++i)        \
    if (i * RT + lane < nvec)                            \
      _Pragma("unroll") for (int e = 0; e < P::N; ++e) { \
        const float x = P::get(v[i], e);                 \
        body;                                            \
      }
  if constexpr (OP == SOFTMAX) {
    const float k = arg * LOG2E;
    float m = RW_NEG_INF, d = 0.f;
    RW_EACH(m = fmaxf(m, x));
    m = group_reduce<true, RT, 1>(m, red, nullptr);
    RW_EACH(d += ex2((x - m) * k));
    d = group_reduce<false, RT, 1>(d, red, nullptr);
    if constexpr (CL > 1) {
      publish_pair(make_float2(m, d), pair);
      m = RW_NEG_INF;
      for (int r = 0; r < CL; ++r) m = fmaxf(m, pair_of(pair, r).x);
      d = 0.f;
      for (int r = 0; r < CL; ++r) {
        const float2 p = pair_of(pair, r);
        d += p.y * ex2((p.x - m) * k);
      }
      done_reading();
    }
    return {m, 1.f / d};
  } else if constexpr (OP == LAYERNORM) {
    // Two reductions over registers: the exact two-pass variance at no extra memory traffic.
    const float n = (float)(nvec * P::N);  // the block's slice
    float s = 0.f, q = 0.f;
    RW_EACH(s += x);
    float mean = group_reduce<false, RT, 1>(s, red, nullptr) / n;
    RW_EACH(q += (x - mean) * (x - mean));
    q = group_reduce<false, RT, 1>(q, red, nullptr);
    if constexpr (CL > 1) {
      publish_pair(make_float2(mean, q), pair);
      mean = 0.f;
      for (int r = 0; r < CL; ++r) mean += pair_of(pair, r).x;
      mean /= CL;
      q = 0.f;
      for (int r = 0; r < CL; ++r) {
        const float2 p = pair_of(pair, r);
        q += p.y + n * (p.x - mean) * (p.x - mean);
      }
      done_reading();
    }
    return {mean, rsqrtf(q / cols + arg)};
  } else {
    float q = 0.f;
    RW_EACH(q += x * x);
    q = group_reduce<false, RT, 1>(q, red, nullptr);
    if constexpr (CL > 1) {
      publish_pair(make_float2(q, 0.f), pair);
      q = 0.f;
      for (int r = 0; r < CL; ++r) q += pair_of(pair, r).x;
      done_reading();
    }
    return {0.f, rsqrtf(q / cols + arg)};
  }
#undef RW_EACH
}

// A row too long for the registers: one streaming pass for the statistics (the write re-reads).
template <typename T, int OP, int RT, int CL>
__device__ __forceinline__ Stats streamed_stats(const uint4* __restrict__ xv, float first, int lane, int nvec,
                                                int cols, float arg, float* red, float* slots) {
  using P = Pack<T>;
  if constexpr (OP == SOFTMAX) {
    const float k = arg * LOG2E;
    float m = RW_NEG_INF, d = 0.f;
    for (int j = lane; j < nvec; j += RT) {
      const uint4 q = xv[j];
      float lm = P::get(q, 0);
#pragma unroll
      for (int e = 1; e < P::N; ++e) lm = fmaxf(lm, P::get(q, e));
      if (lm > m) {
        d = d == 0.f ? 0.f : d * ex2((m - lm) * k);
        m = lm;
      }
#pragma unroll
      for (int e = 0; e < P::N; ++e) d += ex2((P::get(q, e) - m) * k);
    }
    const float mx = group_reduce<true, RT, CL>(m, red, &slots[0]);
    d = d == 0.f ? 0.f : d * ex2((m - mx) * k);
    return {mx, 1.f / group_reduce<false, RT, CL>(d, red, &slots[1])};
  } else if constexpr (OP == LAYERNORM) {
    // Sums of x - x[0] (the row's first element): one pass without the cancellation of
    // E[x^2] - E[x]^2 when the mean is far from zero.
    float s = 0.f, q = 0.f;
    for (int j = lane; j < nvec; j += RT) {
      const uint4 v = xv[j];
#pragma unroll
      for (int e = 0; e < P::N; ++e) {
        const float t = P::get(v, e) - first;
        s += t;
        q += t * t;
      }
    }
    const float s1 = group_reduce<false, RT, CL>(s, red, &slots[0]) / cols;
    const float s2 = group_reduce<false, RT, CL>(q, red, &slots[1]) / cols;
    return {first + s1, rsqrtf(fmaxf(s2 - s1 * s1, 0.f) + arg)};
  } else {
    float q = 0.f;
    for (int j = lane; j < nvec; j += RT) {
      const uint4 v = xv[j];
#pragma unroll
      for (int e = 0; e < P::N; ++e) q += P::get(v, e) * P::get(v, e);
    }
    return {0.f, rsqrtf(group_reduce<false, RT, CL>(q, red, &slots[0]) / cols + arg)};
  }
}

template <typename T, int OP, int RT, int VPT, int CL>
__device__ __forceinline__ void vec_body(const T* __restrict__ x, T* __restrict__ y, const T* __restrict__ g,
                                         const T* __restrict__ b, int rows, int cols, float arg) {
  static_assert(RT == 32 || (RT >= 64 && RT % 32 == 0), "a warp or a whole block per row");
  static_assert(RT > 32 || CL == 1, "a cluster splits rows handled by whole blocks");
  using P = Pack<T>;
  __shared__ float red[32];
  __shared__ float slots[2];
  __shared__ float2 pair;
  if (cols % (CL * P::N) != 0) __trap();  // the contract: see the top of the file
  const int row = row_of<RT, CL>();
  const int lane = lane_of<RT>();
  if (row >= rows) return;  // RT = 32 only: whole blocks always have their row
  const int slice = cols / CL;
  const int rank = CL > 1 ? (int)(blockIdx.x % CL) : 0;
  const size_t start = (size_t)row * cols + (size_t)rank * slice;
  const uint4* xv = reinterpret_cast<const uint4*>(x + start);
  uint4* yv = reinterpret_cast<uint4*>(y + start);
  const int nvec = slice / P::N;
  const float k = OP == SOFTMAX ? arg * LOG2E : 0.f;
  const int col0 = rank * slice;
  if (nvec <= RT * VPT) {
    uint4 v[VPT];
#pragma unroll
    for (int i = 0; i < VPT; ++i)
      if (i * RT + lane < nvec) v[i] = xv[i * RT + lane];
    const Stats st = resident_stats<T, OP, RT, VPT, CL>(v, lane, nvec, cols, arg, red, &pair);
#pragma unroll
    for (int i = 0; i < VPT; ++i) {
      const int j = i * RT + lane;
      if (j < nvec) yv[j] = transform<T, OP>(v[i], st, k, g, b, col0 + j * P::N);
    }
    // No block may exit (releasing its shared memory) before every block has read its pair.
    if constexpr (CL > 1) cluster_exit_wait();
  } else {
    const float first = to_f(x[(size_t)row * cols]);
    const Stats st = streamed_stats<T, OP, RT, CL>(xv, first, lane, nvec, cols, arg, red, slots);
    for (int j = lane; j < nvec; j += RT) yv[j] = transform<T, OP>(xv[j], st, k, g, b, col0 + j * P::N);
    // No block may exit (releasing its shared memory) while another block of its cluster reads it.
    if constexpr (CL > 1) cg::this_cluster().sync();
  }
}

// ---------------------------------------------------------------------------------------------
// The persistent cluster rung: a grid of as many clusters as the GPU holds at once (the suite's
// grid), each cluster walking rows c, c + G, c + 2G, ... (G clusters). A block holds its slice
// of two rows in registers: while it reduces and writes one row, the loads of its next row are
// already in flight, so DRAM never waits on a barrier, and no block is launched per row.
// Statistics are pairs merged across equal-sized parts (a butterfly over a warp, over the
// block's warps, over the cluster's blocks): one block barrier a row and, between the blocks,
// pairs sent by st.async into each other's shared memory (no cluster barrier: see below).

// Merges the statistics of two norm parts of n values each: layernorm's (mean, squared
// deviations: Chan's formula), rmsnorm's (sum of squares, -). Commutative bit for bit, so every
// lane of a butterfly ends with the same pair.
template <int OP> __device__ __forceinline__ float2 merge_equal(float2 p, float2 q, float n) {
  if constexpr (OP == LAYERNORM) {
    const float delta = p.x - q.x;
    return make_float2(0.5f * (p.x + q.x), (p.y + q.y) + delta * delta * (0.5f * n));
  } else {
    return make_float2(p.x + q.x, 0.f);
  }
}

// Merges the pairs of WIDTH adjacent lanes (n values behind each lane's pair) into every one of
// them; returns the count behind the result. Softmax's (max, sum of exp relative to it): the
// common maximum first, then one exp a lane to rescale its sum to it, then the sums.
template <int OP, int WIDTH> __device__ __forceinline__ float butterfly(float2& p, float n, float k) {
  if constexpr (OP == SOFTMAX) {
    float m = p.x;
#pragma unroll
    for (int o = WIDTH / 2; o > 0; o >>= 1) m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, o));
    float d = p.y * ex2((p.x - m) * k);
#pragma unroll
    for (int o = WIDTH / 2; o > 0; o >>= 1) d += __shfl_xor_sync(0xffffffffu, d, o);
    p = make_float2(m, d);
  } else {
    float part = n;
#pragma unroll
    for (int o = WIDTH / 2; o > 0; o >>= 1) {
      const float2 q = make_float2(__shfl_xor_sync(0xffffffffu, p.x, o), __shfl_xor_sync(0xffffffffu, p.y, o));
      p = merge_equal<OP>(p, q, part);
      part *= 2.f;
    }
  }
  return n * WIDTH;
}

// One thread's pair over the VPT vectors it holds.
template <typename T, int OP, int VPT> __device__ __forceinline__ float2 thread_pair(const uint4 (&v)[VPT], float k) {
  using P = Pack<T>;
  float a = OP == SOFTMAX ? RW_NEG_INF : 0.f, c = 0.f;
#pragma unroll
  for (int i = 0; i < VPT; ++i)
#pragma unroll
    for (int e = 0; e < P::N; ++e) {
      const float x = P::get_fresh(v[i], e);
      if constexpr (OP == SOFTMAX) a = fmaxf(a, x);
      else if constexpr (OP == LAYERNORM) a += x;
      else a += x * x;
    }
  if constexpr (OP == LAYERNORM) a *= 1.f / (VPT * P::N);
  if constexpr (OP != RMSNORM) {
#pragma unroll
    for (int i = 0; i < VPT; ++i)
#pragma unroll
      for (int e = 0; e < P::N; ++e) {
        const float x = P::get_fresh(v[i], e);
        if constexpr (OP == SOFTMAX) c += ex2((x - a) * k);
        else c += (x - a) * (x - a);
      }
  }
  return make_float2(a, c);
}

template <int RT, int VPT> __device__ __forceinline__ void load_slice(uint4 (&v)[VPT], const uint4* src, int lane) {
#pragma unroll
  for (int i = 0; i < VPT; ++i) v[i] = load_stream(src + i * RT + lane);
}

// The cluster exchange of the persistent rung, without a cluster barrier: a cluster barrier's
// arrive has release semantics, which the compiler implements as a GPU-wide memory barrier
// (MEMBAR.ALL.GPU) that waits for every load in flight, the next rows' prefetch included. So
// each block sends its pair straight into every block's `inbox` with st.async, whose bytes
// complete a transaction count on the receiver's mbarrier; a block waits on its own mbarrier.
// Two inboxes and two mbarriers, used in turn: a block sends the pairs of rows i + 2 into an
// inbox only after it has received every block's pairs of rows i + 1, which each block sends
// only after all its threads are past reading rows i's inbox (a block barrier lies between).
__device__ __forceinline__ unsigned smem_addr(const void* p) { return (unsigned)__cvta_generic_to_shared(p); }
__device__ __forceinline__ unsigned cluster_addr(unsigned local, unsigned rank) {
  unsigned r;
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(r) : "r"(local), "r"(rank));
  return r;
}
__device__ __forceinline__ void mbar_init(unsigned long long* bar) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" ::"r"(smem_addr(bar)) : "memory");
}
__device__ __forceinline__ void mbar_expect(unsigned long long* bar, unsigned bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(smem_addr(bar)), "r"(bytes) : "memory");
}
__device__ __forceinline__ void mbar_wait(unsigned long long* bar, unsigned parity) {
  asm volatile(
      "{\n"
      ".reg .pred done;\n"
      "wait_%=:\n"
      "mbarrier.try_wait.parity.shared::cta.b64 done, [%0], %1;\n"
      "@!done bra wait_%=;\n"
      "}\n" ::"r"(smem_addr(bar)),
      "r"(parity)
      : "memory");
}
// Stores `v` at `inbox` (a local shared address) in block `rank`, counted on that block's `bar`.
__device__ __forceinline__ void send_pair(float2 v, unsigned inbox, unsigned long long* bar, unsigned rank) {
  asm volatile("st.async.shared::cluster.mbarrier::complete_tx::bytes.v2.f32 [%0], {%1, %2}, [%3];" ::"r"(
                   cluster_addr(inbox, rank)),
               "f"(v.x), "f"(v.y), "r"(cluster_addr(smem_addr(bar), rank))
               : "memory");
}

// Shared memory of the persistent rung: RB rows' pairs per warp (two sets: the block barrier of
// the next rows separates a set's reads from its next writes), the inboxes and their mbarriers.
template <int RT, int CL, int RB> struct Exchange {
  float2 red[2][RB][RT / 32];
  float2 inbox[2][RB][CL];
  unsigned long long bar[2];
};

// RB rows' statistics from this block's slices (register sets set0 .. set0 + RB - 1; rows row0,
// row0 + stride, ...; those at or past `rows` take part in the exchange and are not written),
// then their writes. `use`: how many row groups this block has done (picks the buffers and the
// mbarrier's phase).
template <typename T, int OP, int RT, int VPT, int CL, int S, int RB>
__device__ __forceinline__ void persistent_rows(const uint4 (&v)[S][VPT], int set0, int row0, int stride, int rows,
                                                T* __restrict__ y, const T* __restrict__ g, const T* __restrict__ b,
                                                int col0, int cols, float arg, Exchange<RT, CL, RB>& ex, int use) {
  using P = Pack<T>;
  constexpr int NW = RT / 32;
  const float k = OP == SOFTMAX ? arg * LOG2E : 0.f;
  const int lane = threadIdx.x % 32;
  const int buf = use & 1;
  float2 p[RB];
  float n = 0.f;
#pragma unroll
  for (int r = 0; r < RB; ++r) {
    p[r] = thread_pair<T, OP, VPT>(v[set0 + r], k);
    n = butterfly<OP, 32>(p[r], (float)(VPT * P::N), k);
    if (lane == 0) ex.red[buf][r][threadIdx.x / 32] = p[r];
  }
  __syncthreads();
  float nb = 0.f;
#pragma unroll
  for (int r = 0; r < RB; ++r) {
    p[r] = ex.red[buf][r][lane % NW];
    nb = butterfly<OP, NW>(p[r], n, k);
  }
  if (threadIdx.x < CL) {
    const unsigned rank = (unsigned)(blockIdx.x % CL);
    if (threadIdx.x == 0) mbar_expect(&ex.bar[buf], RB * CL * sizeof(float2));
#pragma unroll
    for (int r = 0; r < RB; ++r) send_pair(p[r], smem_addr(&ex.inbox[buf][r][rank]), &ex.bar[buf], threadIdx.x);
  }
  mbar_wait(&ex.bar[buf], (unsigned)(use >> 1) & 1u);
#pragma unroll
  for (int r = 0; r < RB; ++r) {
    p[r] = ex.inbox[buf][r][lane % CL];
    butterfly<OP, CL>(p[r], nb, k);
  }
#pragma unroll
  for (int r = 0; r < RB; ++r) {
    const int row = row0 + r * stride;
    if (row >= rows) break;
    Stats st;
    if constexpr (OP == SOFTMAX) st = {p[r].x, 1.f / p[r].y};
    else if constexpr (OP == LAYERNORM) st = {p[r].x, rsqrtf(p[r].y / cols + arg)};
    else st = {0.f, rsqrtf(p[r].x / cols + arg)};
    uint4* yv = reinterpret_cast<uint4*>(y + (size_t)row * cols + col0);
#pragma unroll
    for (int i = 0; i < VPT; ++i) {
      const int j = i * RT + threadIdx.x;
      yv[j] = transform<T, OP, true>(v[set0 + r][i], st, k, g, b, col0 + j * P::N);
    }
  }
}

// Contract: cols == CL x RT x VPT x (16 / sizeof(T)) (each block's slice exactly its registers).
// S register sets of VPT vectors, in S / RB groups of RB rows used in turn: while one group is
// reduced (RB rows behind one block barrier and one exchange) and written, the loads of the next
// S / RB - 1 groups are in flight.
template <typename T, int OP, int RT, int VPT, int CL, int S, int RB>
__device__ __forceinline__ void persistent_body(const T* __restrict__ x, T* __restrict__ y, const T* __restrict__ g,
                                                const T* __restrict__ b, int rows, int cols, float arg) {
  static_assert(RT >= 64 && RT <= 1024 && (RT & (RT - 1)) == 0, "a power-of-two block");
  static_assert(CL >= 2 && CL <= 32 && (CL & (CL - 1)) == 0, "a power-of-two cluster");
  static_assert(RB >= 1 && S % RB == 0 && S / RB >= 2, "at least one group in flight while another is written");
  constexpr int NG = S / RB;
  using P = Pack<T>;
  __shared__ Exchange<RT, CL, RB> ex;
  if (cols != CL * RT * VPT * P::N) __trap();  // the contract above
  if (threadIdx.x == 0) {
    mbar_init(&ex.bar[0]);
    mbar_init(&ex.bar[1]);
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
  }
  // Every block's mbarriers initialised before any block sends to them.
  cg::this_cluster().sync();
  const int clusters = gridDim.x / CL;
  const int col0 = (int)(blockIdx.x % CL) * (cols / CL);
  const int lane = threadIdx.x;
  const int first = blockIdx.x / CL;
  // Group gi of this cluster: rows first + (gi * RB + r) * clusters, r < RB.
  const auto group_row = [&](int gi) { return first + gi * RB * clusters; };
  uint4 v[S][VPT];
  const auto load_group = [&](int set0, int gi) {
#pragma unroll
    for (int r = 0; r < RB; ++r) {
      const int row = group_row(gi) + r * clusters;
      if (row < rows)
        load_slice<RT, VPT>(v[set0 + r], reinterpret_cast<const uint4*>(x + (size_t)row * cols + col0), lane);
    }
  };
  int use = 0;
#pragma unroll
  for (int q = 0; q + 1 < NG; ++q) load_group(q * RB, q);
  // NG groups a turn, unrolled, so every register set keeps its place (no copies that would
  // wait on loads in flight).
  for (int base = 0; group_row(base) < rows; base += NG) {
#pragma unroll
    for (int q = 0; q < NG; ++q) {
      const int gi = base + q;
      if (group_row(gi) >= rows) break;
      load_group(((q + NG - 1) % NG) * RB, gi + NG - 1);
      persistent_rows<T, OP, RT, VPT, CL, S, RB>(v, q * RB, group_row(gi), clusters, rows, y, g, b, col0, cols, arg,
                                                  ex, use);
      ++use;
    }
  }
  // No block exits while a block of its cluster may still send to it (it has received all it
  // waits for, but keep the rule simple: everyone leaves together).
  cg::this_cluster().sync();
}

// ---------------------------------------------------------------------------------------------
// The kernels the suite launches. Blocks: 256 threads for RT = 1 and RT = 32, RT threads else.
// With 16-block clusters the vec kernels ask for 4 blocks an SM (at most 64 registers a thread).

template <typename T, int RT, bool ONLINE>
__global__ void __launch_bounds__(RT <= 32 ? 256 : RT) softmax_rowwise_scalar(const T* __restrict__ x, T* __restrict__ y, int rows, int cols, float scale) {
  scalar_body<T, SOFTMAX, RT, ONLINE>(x, y, nullptr, nullptr, rows, cols, scale);
}
template <typename T, int RT>
__global__ void __launch_bounds__(RT <= 32 ? 256 : RT) layernorm_rowwise_scalar(const T* __restrict__ x, T* __restrict__ y, const T* __restrict__ gamma,
                                                       const T* __restrict__ beta, int rows, int cols, float eps) {
  scalar_body<T, LAYERNORM, RT, false>(x, y, gamma, beta, rows, cols, eps);
}
template <typename T, int RT>
__global__ void __launch_bounds__(RT <= 32 ? 256 : RT) rmsnorm_rowwise_scalar(const T* __restrict__ x, T* __restrict__ y, const T* __restrict__ gamma,
                                                     int rows, int cols, float eps) {
  scalar_body<T, RMSNORM, RT, false>(x, y, gamma, nullptr, rows, cols, eps);
}

template <typename T, int RT, int VPT, int CL>
__global__ void __launch_bounds__(RT <= 32 ? 256 : RT, CL >= 16 ? 4 : 1) softmax_vec(const T* __restrict__ x, T* __restrict__ y, int rows, int cols, float scale) {
  vec_body<T, SOFTMAX, RT, VPT, CL>(x, y, nullptr, nullptr, rows, cols, scale);
}
template <typename T, int RT, int VPT, int CL>
__global__ void __launch_bounds__(RT <= 32 ? 256 : RT, CL >= 16 ? 4 : 1) layernorm_vec(const T* __restrict__ x, T* __restrict__ y, const T* __restrict__ gamma,
                                            const T* __restrict__ beta, int rows, int cols, float eps) {
  vec_body<T, LAYERNORM, RT, VPT, CL>(x, y, gamma, beta, rows, cols, eps);
}
template <typename T, int RT, int VPT, int CL>
__global__ void __launch_bounds__(RT <= 32 ? 256 : RT, CL >= 16 ? 4 : 1) rmsnorm_vec(const T* __restrict__ x, T* __restrict__ y, const T* __restrict__ gamma, int rows,
                                          int cols, float eps) {
  vec_body<T, RMSNORM, RT, VPT, CL>(x, y, gamma, nullptr, rows, cols, eps);
}

// The persistent cluster rung where CL > 1 (its grid: the clusters the GPU holds at once, times
// CL; S register sets, RB rows reduced together); with CL = 1 (rows short enough for one block)
// the vec kernel. MINB: blocks an SM.
template <typename T, int RT, int VPT, int CL, int MINB, int S, int RB>
__global__ void __launch_bounds__(RT <= 32 ? 256 : RT, MINB) softmax_persistent(const T* __restrict__ x, T* __restrict__ y, int rows, int cols, float scale) {
  if constexpr (CL > 1) persistent_body<T, SOFTMAX, RT, VPT, CL, S, RB>(x, y, nullptr, nullptr, rows, cols, scale);
  else vec_body<T, SOFTMAX, RT, VPT, 1>(x, y, nullptr, nullptr, rows, cols, scale);
}
template <typename T, int RT, int VPT, int CL, int MINB, int S, int RB>
__global__ void __launch_bounds__(RT <= 32 ? 256 : RT, MINB) layernorm_persistent(const T* __restrict__ x, T* __restrict__ y, const T* __restrict__ gamma,
                                            const T* __restrict__ beta, int rows, int cols, float eps) {
  if constexpr (CL > 1) persistent_body<T, LAYERNORM, RT, VPT, CL, S, RB>(x, y, gamma, beta, rows, cols, eps);
  else vec_body<T, LAYERNORM, RT, VPT, 1>(x, y, gamma, beta, rows, cols, eps);
}
template <typename T, int RT, int VPT, int CL, int MINB, int S, int RB>
__global__ void __launch_bounds__(RT <= 32 ? 256 : RT, MINB) rmsnorm_persistent(const T* __restrict__ x, T* __restrict__ y, const T* __restrict__ gamma, int rows,
                                          int cols, float eps) {
  if constexpr (CL > 1) persistent_body<T, RMSNORM, RT, VPT, CL, S, RB>(x, y, gamma, nullptr, rows, cols, eps);
  else vec_body<T, RMSNORM, RT, VPT, 1>(x, y, gamma, nullptr, rows, cols, eps);
}

}  // namespace rw
