//! SGEMM C = alpha * A * B + beta * C, row-major: A is M x K, B is K x N, C is M x N.
// The ladder of seed 003 (naive, tiled with TILE_WIDTH 8/16/32 and the `remaining` tail) and the
// classic register-blocking rungs past it. Every kernel handles any M, N, K (bounds are checked).

// BUILD_ONLY (set by every variant in suite.toml) compiles one kernel of this file and simt.cu
// (which includes it) instead of all eleven: NVRTC builds every extern "C" kernel of a source, and
// a job that built this file took 6-10 s on an H100 against ~1 s for the next shape's job, which
// reuses the build. 0 or unset (a plain nvcc or NVRTC build) builds them all.
// 1 naive, 2 coalesced, 3 tiled, 4 blocktile_1d, 5 blocktile_2d, 6 vectorized, 7 double_buffered,
// 8 warptiled, 9 warptiled_8w, 10 thread_tile_16x8, 11 multistage, 12 warptiled_8w_lean.
#ifndef BUILD_ONLY
#define BUILD_ONLY 0
#endif
#define BUILD(id) (BUILD_ONLY == 0 || BUILD_ONLY == (id))

#if BUILD(1)
extern "C" __global__ void mm_naive(int M, int N, int K, float alpha, const float* A, const float* B, float beta, float* C) {
  // x walks rows: the 32 threads of a warp read 32 rows of A and write 32 rows of C (strided).
  const int row = blockIdx.x * blockDim.x + threadIdx.x;
  const int col = blockIdx.y * blockDim.y + threadIdx.y;
  if (row < M && col < N) {
    float acc = 0.0f;
    for (int k = 0; k < K; ++k) acc += A[row * K + k] * B[k * N + col];
    C[row * N + col] = alpha * acc + beta * C[row * N + col];
  }
}
#endif

#if BUILD(2)
extern "C" __global__ void mm_coalesced(int M, int N, int K, float alpha, const float* A, const float* B, float beta, float* C) {
  // x walks columns: a warp reads one row of A (broadcast) and 32 consecutive columns of B.
  const int col = blockIdx.x * blockDim.x + threadIdx.x;
  const int row = blockIdx.y * blockDim.y + threadIdx.y;
  if (row < M && col < N) {
    float acc = 0.0f;
    for (int k = 0; k < K; ++k) acc += A[row * K + k] * B[k * N + col];
    C[row * N + col] = alpha * acc + beta * C[row * N + col];
  }
}
#endif

#ifndef TILE_WIDTH
#define TILE_WIDTH 32
#endif

// Seed 003: shared-memory tiles of TILE_WIDTH x TILE_WIDTH; the last, partial tile (`remaining`)
// is loaded with zeros past the matrix, so any size works.
#if BUILD(3)
extern "C" __global__ void mm_tiled(int M, int N, int K, float alpha, const float* A, const float* B, float beta, float* C) {
  __shared__ float As[TILE_WIDTH][TILE_WIDTH];
  __shared__ float Bs[TILE_WIDTH][TILE_WIDTH];
  const int tx = threadIdx.x, ty = threadIdx.y;
  const int row = blockIdx.y * TILE_WIDTH + ty, col = blockIdx.x * TILE_WIDTH + tx;
  float acc = 0.0f;
  for (int t = 0; t < K; t += TILE_WIDTH) {
    As[ty][tx] = (row < M && t + tx < K) ? A[row * K + t + tx] : 0.0f;
    Bs[ty][tx] = (t + ty < K && col < N) ? B[(t + ty) * N + col] : 0.0f;
    __syncthreads();
    const int remaining = min(TILE_WIDTH, K - t);
    for (int k = 0; k < remaining; ++k) acc += As[ty][k] * Bs[k][tx];
    __syncthreads();
  }
  if (row < M && col < N) C[row * N + col] = alpha * acc + beta * C[row * N + col];
}
#endif

#ifndef BM
#define BM 64
#endif
#ifndef BN
#define BN 64
#endif
#ifndef BK
#define BK 8
#endif
#ifndef TM
#define TM 8
#endif
#ifndef TN
#define TN 8
#endif

// 1D register blocking: each thread computes TM results of one column; BM*BN/TM threads per block.
#if BUILD(4)
extern "C" __global__ void mm_blocktile_1d(int M, int N, int K, float alpha, const float* A, const float* B, float beta, float* C) {
  __shared__ float As[BM * BK];
  __shared__ __align__(16) float Bs[BK * BN];
  const int c_row = blockIdx.y, c_col = blockIdx.x;
  const int thread_col = threadIdx.x % BN, thread_row = threadIdx.x / BN;
  const int a_col = threadIdx.x % BK, a_row = threadIdx.x / BK;
  const int b_col = threadIdx.x % BN, b_row = threadIdx.x / BN;
  float acc[TM] = {0.0f};
  for (int t = 0; t < K; t += BK) {
    const int ar = c_row * BM + a_row, ac = t + a_col;
    As[a_row * BK + a_col] = (ar < M && ac < K) ? A[ar * K + ac] : 0.0f;
    const int br = t + b_row, bc = c_col * BN + b_col;
    Bs[b_row * BN + b_col] = (br < K && bc < N) ? B[br * N + bc] : 0.0f;
    __syncthreads();
    for (int k = 0; k < BK; ++k) {
      const float b = Bs[k * BN + thread_col];
#pragma unroll
      for (int r = 0; r < TM; ++r) acc[r] += As[(thread_row * TM + r) * BK + k] * b;
    }
    __syncthreads();
  }
  const int col = c_col * BN + thread_col;
#pragma unroll
  for (int r = 0; r < TM; ++r) {
    const int row = c_row * BM + thread_row * TM + r;
    if (row < M && col < N) C[row * N + col] = alpha * acc[r] + beta * C[row * N + col];
  }
}
#endif

// 2D register blocking: each thread computes a TM x TN block; (BM/TM)*(BN/TN) threads per block,
// each loading several elements of the A and B tiles. At most 128 registers a thread, so that two
// blocks share an SM (140 without the bound: one block, 12.5% occupancy on an H100).
#if BUILD(5)
extern "C" __global__ void __launch_bounds__((BM / TM) * (BN / TN), 2) mm_blocktile_2d(int M, int N, int K, float alpha, const float* A, const float* B, float beta, float* C) {
  __shared__ float As[BM * BK];
  __shared__ __align__(16) float Bs[BK * BN];
  constexpr int THREADS = (BM / TM) * (BN / TN);
  const int c_row = blockIdx.y, c_col = blockIdx.x;
  const int thread_col = threadIdx.x % (BN / TN), thread_row = threadIdx.x / (BN / TN);
  float acc[TM * TN] = {0.0f};
  __align__(16) float reg_m[TM];
  __align__(16) float reg_n[TN];
  for (int t = 0; t < K; t += BK) {
    for (int i = threadIdx.x; i < BM * BK; i += THREADS) {
      const int r = i / BK, c = i % BK, ar = c_row * BM + r, ac = t + c;
      As[r * BK + c] = (ar < M && ac < K) ? A[ar * K + ac] : 0.0f;
    }
    for (int i = threadIdx.x; i < BK * BN; i += THREADS) {
      const int r = i / BN, c = i % BN, br = t + r, bc = c_col * BN + c;
      Bs[r * BN + c] = (br < K && bc < N) ? B[br * N + bc] : 0.0f;
    }
    __syncthreads();
#pragma unroll
    for (int k = 0; k < BK; ++k) {
#pragma unroll
      for (int i = 0; i < TM; ++i) reg_m[i] = As[(thread_row * TM + i) * BK + k];
#pragma unroll
      for (int j = 0; j < TN; ++j) reg_n[j] = Bs[k * BN + thread_col * TN + j];
#pragma unroll
      for (int i = 0; i < TM; ++i)
#pragma unroll
        for (int j = 0; j < TN; ++j) acc[i * TN + j] += reg_m[i] * reg_n[j];
    }
    __syncthreads();
  }
#pragma unroll
  for (int i = 0; i < TM; ++i) {
    const int row = c_row * BM + thread_row * TM + i;
#pragma unroll
    for (int j = 0; j < TN; ++j) {
      const int col = c_col * BN + thread_col * TN + j;
      if (row < M && col < N) C[row * N + col] = alpha * acc[i * TN + j] + beta * C[row * N + col];
    }
  }
}
#endif

// The tile traffic of the vectorized kernels: the A and B tiles at depth t loaded into registers as
// float4s (zeros past the matrices; scalar loads where a float4 would cross an edge), then stored
// to a shared buffer, A transposed (As[k][m]) and B as it is.
template <int THREADS, int TBM, int TBN, int TBK>
__device__ __forceinline__ void fetch_tiles(int M, int N, int K, const float* A, const float* B, int c_row, int c_col, int t, float4* next_a, float4* next_b) {
  constexpr int A_LOADS = (TBM * TBK / 4 + THREADS - 1) / THREADS;
  constexpr int B_LOADS = (TBK * TBN / 4 + THREADS - 1) / THREADS;
  const bool vec_a = (K % 4) == 0, vec_b = (N % 4) == 0;
#pragma unroll
  for (int l = 0; l < A_LOADS; ++l) {
    const int i = threadIdx.x + l * THREADS;
    float4 v = make_float4(0.f, 0.f, 0.f, 0.f);
    if (i < TBM * TBK / 4) {
      const int r = i / (TBK / 4), c = (i % (TBK / 4)) * 4, ar = c_row * TBM + r, ac = t + c;
      if (ar < M) {
        if (vec_a && ac + 3 < K) v = *reinterpret_cast<const float4*>(&A[ar * K + ac]);
        else {
          if (ac < K) v.x = A[ar * K + ac];
          if (ac + 1 < K) v.y = A[ar * K + ac + 1];
          if (ac + 2 < K) v.z = A[ar * K + ac + 2];
          if (ac + 3 < K) v.w = A[ar * K + ac + 3];
        }
      }
    }
    next_a[l] = v;
  }
#pragma unroll
  for (int l = 0; l < B_LOADS; ++l) {
    const int i = threadIdx.x + l * THREADS;
    float4 v = make_float4(0.f, 0.f, 0.f, 0.f);
    if (i < TBK * TBN / 4) {
      const int r = i / (TBN / 4), c = (i % (TBN / 4)) * 4, br = t + r, bc = c_col * TBN + c;
      if (br < K) {
        if (vec_b && bc + 3 < N) v = *reinterpret_cast<const float4*>(&B[br * N + bc]);
        else {
          if (bc < N) v.x = B[br * N + bc];
          if (bc + 1 < N) v.y = B[br * N + bc + 1];
          if (bc + 2 < N) v.z = B[br * N + bc + 2];
          if (bc + 3 < N) v.w = B[br * N + bc + 3];
        }
      }
    }
    next_b[l] = v;
  }
}

// A_LD: the leading dimension of the transposed A tile (TBM plus any padding).
template <int THREADS, int TBM, int TBN, int TBK, int A_LD = TBM>
__device__ __forceinline__ void store_tiles(float* As, float* Bs, const float4* next_a, const float4* next_b) {
  constexpr int A_LOADS = (TBM * TBK / 4 + THREADS - 1) / THREADS;
  constexpr int B_LOADS = (TBK * TBN / 4 + THREADS - 1) / THREADS;
#pragma unroll
  for (int l = 0; l < A_LOADS; ++l) {
    const int i = threadIdx.x + l * THREADS;
    if (i < TBM * TBK / 4) {
      const int r = i / (TBK / 4), c = (i % (TBK / 4)) * 4;
      As[(c + 0) * A_LD + r] = next_a[l].x;
      As[(c + 1) * A_LD + r] = next_a[l].y;
      As[(c + 2) * A_LD + r] = next_a[l].z;
      As[(c + 3) * A_LD + r] = next_a[l].w;
    }
  }
#pragma unroll
  for (int l = 0; l < B_LOADS; ++l) {
    const int i = threadIdx.x + l * THREADS;
    if (i < TBK * TBN / 4) {
      const int r = i / (TBN / 4), c = (i % (TBN / 4)) * 4;
      *reinterpret_cast<float4*>(&Bs[r * TBN + c]) = next_b[l];
    }
  }
}

// 2D blocking with the A tile stored transposed (As[k][m]: conflict-free, float4 reads of the
// register column) and float4 global loads where a whole float4 lies inside the matrix.
#if BUILD(6)
extern "C" __global__ void __launch_bounds__((BM / TM) * (BN / TN), 2) mm_vectorized(int M, int N, int K, float alpha, const float* A, const float* B, float beta, float* C) {
  __shared__ __align__(16) float As[BK * BM];
  __shared__ __align__(16) float Bs[BK * BN];
  constexpr int THREADS = (BM / TM) * (BN / TN);
  const int c_row = blockIdx.y, c_col = blockIdx.x;
  const int thread_col = threadIdx.x % (BN / TN), thread_row = threadIdx.x / (BN / TN);
  float acc[TM * TN] = {0.0f};
  float4 next_a[(BM * BK / 4 + THREADS - 1) / THREADS], next_b[(BK * BN / 4 + THREADS - 1) / THREADS];
  __align__(16) float reg_m[TM];
  __align__(16) float reg_n[TN];
  for (int t = 0; t < K; t += BK) {
    fetch_tiles<THREADS, BM, BN, BK>(M, N, K, A, B, c_row, c_col, t, next_a, next_b);
    store_tiles<THREADS, BM, BN, BK>(As, Bs, next_a, next_b);
    __syncthreads();
#pragma unroll
    for (int k = 0; k < BK; ++k) {
#pragma unroll
      for (int i = 0; i < TM; i += 4) *reinterpret_cast<float4*>(&reg_m[i]) = *reinterpret_cast<const float4*>(&As[k * BM + thread_row * TM + i]);
#pragma unroll
      for (int j = 0; j < TN; j += 4) *reinterpret_cast<float4*>(&reg_n[j]) = *reinterpret_cast<const float4*>(&Bs[k * BN + thread_col * TN + j]);
#pragma unroll
      for (int i = 0; i < TM; ++i)
#pragma unroll
        for (int j = 0; j < TN; ++j) acc[i * TN + j] += reg_m[i] * reg_n[j];
    }
    __syncthreads();
  }
#pragma unroll
  for (int i = 0; i < TM; ++i) {
    const int row = c_row * BM + thread_row * TM + i;
#pragma unroll
    for (int j = 0; j < TN; ++j) {
      const int col = c_col * BN + thread_col * TN + j;
      if (row < M && col < N) C[row * N + col] = alpha * acc[i * TN + j] + beta * C[row * N + col];
    }
  }
}
#endif

// The vectorized kernel with the next tiles' global loads issued before this tile's math (staged
// in registers) and two shared buffers: one __syncthreads per tile, and the loads' latency hidden
// behind 8 x 8 x BK multiply-adds.
#if BUILD(7)
extern "C" __global__ void __launch_bounds__((BM / TM) * (BN / TN), 2) mm_double_buffered(int M, int N, int K, float alpha, const float* A, const float* B, float beta, float* C) {
  __shared__ __align__(16) float As[2][BK * BM];
  __shared__ __align__(16) float Bs[2][BK * BN];
  constexpr int THREADS = (BM / TM) * (BN / TN);
  constexpr int A_LOADS = (BM * BK / 4 + THREADS - 1) / THREADS;
  constexpr int B_LOADS = (BK * BN / 4 + THREADS - 1) / THREADS;
  const int c_row = blockIdx.y, c_col = blockIdx.x;
  const int thread_col = threadIdx.x % (BN / TN), thread_row = threadIdx.x / (BN / TN);
  const bool vec_b = (N % 4) == 0;
  float acc[TM * TN] = {0.0f};
  __align__(16) float reg_m[TM];
  __align__(16) float reg_n[TN];
  float4 next_a[A_LOADS], next_b[B_LOADS];

  auto fetch = [&](int t) { fetch_tiles<THREADS, BM, BN, BK>(M, N, K, A, B, c_row, c_col, t, next_a, next_b); };
  auto store = [&](int buf) { store_tiles<THREADS, BM, BN, BK>(As[buf], Bs[buf], next_a, next_b); };

  fetch(0);
  store(0);
  __syncthreads();
  int buf = 0;
  for (int t = 0; t < K; t += BK) {
    const bool more = t + BK < K;
    if (more) fetch(t + BK);
#pragma unroll
    for (int k = 0; k < BK; ++k) {
#pragma unroll
      for (int i = 0; i < TM; i += 4) *reinterpret_cast<float4*>(&reg_m[i]) = *reinterpret_cast<const float4*>(&As[buf][k * BM + thread_row * TM + i]);
#pragma unroll
      for (int j = 0; j < TN; j += 4) *reinterpret_cast<float4*>(&reg_n[j]) = *reinterpret_cast<const float4*>(&Bs[buf][k * BN + thread_col * TN + j]);
#pragma unroll
      for (int i = 0; i < TM; ++i)
#pragma unroll
        for (int j = 0; j < TN; ++j) acc[i * TN + j] += reg_m[i] * reg_n[j];
    }
    if (more) store(buf ^ 1);
    __syncthreads();
    buf ^= 1;
  }
#pragma unroll
  for (int i = 0; i < TM; ++i) {
    const int row = c_row * BM + thread_row * TM + i;
    const int col0 = c_col * BN + thread_col * TN;
    if (row >= M) continue;
    if (vec_b && col0 + TN <= N) {
#pragma unroll
      for (int j = 0; j < TN; j += 4) {
        float4* p = reinterpret_cast<float4*>(&C[row * N + col0 + j]);
        float4 c = *p;
        c.x = alpha * acc[i * TN + j + 0] + beta * c.x;
        c.y = alpha * acc[i * TN + j + 1] + beta * c.y;
        c.z = alpha * acc[i * TN + j + 2] + beta * c.z;
        c.w = alpha * acc[i * TN + j + 3] + beta * c.w;
        *p = c;
      }
    } else {
#pragma unroll
      for (int j = 0; j < TN; ++j)
        if (col0 + j < N) C[row * N + col0 + j] = alpha * acc[i * TN + j] + beta * C[row * N + col0 + j];
    }
  }
}
#endif

#ifndef WM
#define WM 64
#endif
#ifndef WN
#define WN 64
#endif
#ifndef WNITER
#define WNITER 4
#endif
#ifndef WTHREADS
#define WTHREADS 128
#endif

// Warp tiling on top of double buffering: each warp owns a WM x WN sub-tile of the block tile and
// walks it in WMITER x WNITER steps of (8 rows x 4 lanes of TM) x (4 lanes x TN), so a warp's shared
// reads of one k are 8 distinct float4s of A and 4 of B (broadcast within the warp), and each thread
// holds (WMITER*TM) x (WNITER*TN) results.
#if BUILD(8)
extern "C" __global__ void __launch_bounds__(WTHREADS) mm_warptiled(int M, int N, int K, float alpha, const float* A, const float* B, float beta, float* C) {
  constexpr int THREADS = WTHREADS;
  // At least 1: other kernels of this file compile with TM/TN that do not fit a warp tile.
  constexpr int WMITER = (WM * WN) / (32 * TM * TN * WNITER) > 0 ? (WM * WN) / (32 * TM * TN * WNITER) : 1;
  constexpr int WSUBM = WM / WMITER, WSUBN = WN / WNITER;
  constexpr int A_LOADS = (BM * BK / 4 + THREADS - 1) / THREADS;
  constexpr int B_LOADS = (BK * BN / 4 + THREADS - 1) / THREADS;
  // The manifest's block must hold (BM / WM) * (BN / WN) warps; no static_assert here: the other
  // kernels of this file compile with other tile sizes.
  __shared__ __align__(16) float As[2][BK * BM];
  __shared__ __align__(16) float Bs[2][BK * BN];
  const int c_row = blockIdx.y, c_col = blockIdx.x;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int warp_col = warp % (BN / WN), warp_row = warp / (BN / WN);
  const int t_col = lane % (WSUBN / TN), t_row = lane / (WSUBN / TN);
  float acc[WMITER * TM * WNITER * TN] = {0.0f};
  __align__(16) float reg_m[WMITER * TM];
  __align__(16) float reg_n[WNITER * TN];
  float4 next_a[A_LOADS], next_b[B_LOADS];

  auto fetch = [&](int t) { fetch_tiles<THREADS, BM, BN, BK>(M, N, K, A, B, c_row, c_col, t, next_a, next_b); };
  auto store = [&](int buf) { store_tiles<THREADS, BM, BN, BK>(As[buf], Bs[buf], next_a, next_b); };

  fetch(0);
  store(0);
  __syncthreads();
  int buf = 0;
  for (int t = 0; t < K; t += BK) {
    const bool more = t + BK < K;
    if (more) fetch(t + BK);
#pragma unroll
    for (int k = 0; k < BK; ++k) {
#pragma unroll
      for (int wm = 0; wm < WMITER; ++wm)
#pragma unroll
        for (int i = 0; i < TM; i += 4)
          *reinterpret_cast<float4*>(&reg_m[wm * TM + i]) = *reinterpret_cast<const float4*>(&As[buf][k * BM + warp_row * WM + wm * WSUBM + t_row * TM + i]);
#pragma unroll
      for (int wn = 0; wn < WNITER; ++wn)
#pragma unroll
        for (int j = 0; j < TN; j += 4)
          *reinterpret_cast<float4*>(&reg_n[wn * TN + j]) = *reinterpret_cast<const float4*>(&Bs[buf][k * BN + warp_col * WN + wn * WSUBN + t_col * TN + j]);
#pragma unroll
      for (int i = 0; i < WMITER * TM; ++i)
#pragma unroll
        for (int j = 0; j < WNITER * TN; ++j) acc[i * (WNITER * TN) + j] += reg_m[i] * reg_n[j];
    }
    if (more) store(buf ^ 1);
    __syncthreads();
    buf ^= 1;
  }
#pragma unroll
  for (int wm = 0; wm < WMITER; ++wm)
#pragma unroll
    for (int i = 0; i < TM; ++i) {
      const int row = c_row * BM + warp_row * WM + wm * WSUBM + t_row * TM + i;
      if (row >= M) continue;
#pragma unroll
      for (int wn = 0; wn < WNITER; ++wn)
#pragma unroll
        for (int j = 0; j < TN; ++j) {
          const int col = c_col * BN + warp_col * WN + wn * WSUBN + t_col * TN + j;
          if (col < N) C[row * N + col] = alpha * acc[(wm * TM + i) * (WNITER * TN) + wn * TN + j] + beta * C[row * N + col];
        }
    }
}
#endif
