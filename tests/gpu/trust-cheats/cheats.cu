//! Transposes that cheat the way leaderboard submissions do (issue 32), beside two honest ones.
// Each cheat keeps state between launches in __device__ globals of its own: a fingerprint of the
// input it last saw, a launch counter, a stash of its last output. `in` is NY rows x NX columns,
// `out` its NX x NY transpose; every kernel takes the same launch (32 x 8 threads, one 32 x 32
// tile a block, grid NX/32 x NY/32).
#define TILE 32
#define ROWS 8
#define STASH_N (2048 * 2048)

// What a cheat remembers between launches.
struct Memory {
  unsigned int fingerprint;
  unsigned int valid;
  unsigned int launches;
  unsigned int finished;
};

// Honest: a shared-memory tile, coalesced reads and writes.
__device__ void tiled(const float* in, float* out, int nx, int ny) {
  __shared__ float tile[TILE][TILE + 1];
  int x = blockIdx.x * TILE + threadIdx.x, y = blockIdx.y * TILE + threadIdx.y;
  for (int j = 0; j < TILE; j += ROWS)
    if (x < nx && y + j < ny) tile[threadIdx.y + j][threadIdx.x] = in[(size_t)(y + j) * nx + x];
  __syncthreads();
  x = blockIdx.y * TILE + threadIdx.x;
  y = blockIdx.x * TILE + threadIdx.y;
  for (int j = 0; j < TILE; j += ROWS)
    if (x < ny && y + j < nx) out[(size_t)(y + j) * ny + x] = tile[threadIdx.x][threadIdx.y + j];
}

// Honest and slow: strided writes; optionally a second copy of the result into `stash`.
__device__ void naive(const float* in, float* out, float* stash, int nx, int ny) {
  int x = blockIdx.x * TILE + threadIdx.x;
  for (int j = 0; j < TILE; j += ROWS) {
    int y = blockIdx.y * TILE + threadIdx.y + j;
    if (x < nx && y < ny) {
      float v = in[(size_t)y * nx + x];
      out[(size_t)x * ny + y] = v;
      if (stash) stash[(size_t)x * ny + y] = v;
    }
  }
}

// The block's output tile copied from `stash` (coalesced: as fast as a copy).
__device__ void from_stash(const float* stash, float* out, int nx, int ny) {
  int r = blockIdx.y * TILE + threadIdx.x;
  for (int j = 0; j < TILE; j += ROWS) {
    int c = blockIdx.x * TILE + threadIdx.y + j;
    if (r < ny && c < nx) out[(size_t)c * ny + r] = stash[(size_t)c * ny + r];
  }
}

// 32 elements spread over the input, hashed: cheap, and it changes with any new input.
__device__ unsigned int fingerprint(const float* in, size_t n) {
  unsigned int h = 2166136261u;
  for (int k = 0; k < 32; ++k) h = (h ^ __float_as_uint(in[(n / 32) * k + 7])) * 16777619u;
  return h;
}

// Whether this block is the launch's last to finish (every other block has read `m`).
__device__ bool last_block(Memory* m) {
  __threadfence();
  unsigned int total = gridDim.x * gridDim.y;
  if (atomicAdd(&m->finished, 1) == total - 1) {
    m->finished = 0;
    return true;
  }
  return false;
}

// Whether the input's fingerprint is the one remembered (read by thread 0, shared with the block).
__device__ bool seen_before(Memory* m, const float* in, size_t n, unsigned int* fp) {
  __shared__ bool seen;
  if (threadIdx.x == 0 && threadIdx.y == 0) {
    *fp = fingerprint(in, n);
    seen = ((volatile Memory*)m)->valid && ((volatile Memory*)m)->fingerprint == *fp;
  }
  __syncthreads();
  return seen;
}

// Thread 0 of the last block remembers the input and counts the launch.
__device__ void remember(Memory* m, unsigned int fp) {
  __syncthreads();
  if (threadIdx.x == 0 && threadIdx.y == 0 && last_block(m)) {
    m->fingerprint = fp;
    m->valid = 1;
    m->launches += 1;
  }
}

// Whether this block's own first output element still holds the poison (all bits set).
__device__ bool own_tile_poisoned(const float* out, int ny) {
  __shared__ bool poisoned;
  if (threadIdx.x == 0 && threadIdx.y == 0)
    poisoned = __float_as_uint(out[(size_t)(blockIdx.x * TILE) * ny + blockIdx.y * TILE]) == 0xFFFFFFFFu;
  __syncthreads();
  return poisoned;
}

extern "C" __global__ void honest_tiled(const float* in, float* out, int nx, int ny) {
  tiled(in, out, nx, ny);
}

extern "C" __global__ void honest_naive(const float* in, float* out, int nx, int ny) {
  naive(in, out, nullptr, nx, ny);
}

// The issue's cheat: launched again on the input it remembers, it rewrites only a quarter of
// its output (the rest is still right from the last launch).
__device__ Memory fingerprint_memory;
extern "C" __global__ void fingerprint_quarter(const float* in, float* out, int nx, int ny) {
  __shared__ unsigned int fp;
  bool seen = seen_before(&fingerprint_memory, in, (size_t)nx * ny, &fp);
  if (!seen || blockIdx.y % 4 == 0) tiled(in, out, nx, ny);
  remember(&fingerprint_memory, fp);
}

// Right on even launches only (the first, the check before timing, is right); odd ones do nothing.
__device__ Memory every_other_memory;
extern "C" __global__ void every_other_launch(const float* in, float* out, int nx, int ny) {
  __shared__ unsigned int call;
  if (threadIdx.x == 0 && threadIdx.y == 0) call = ((volatile Memory*)&every_other_memory)->launches;
  __syncthreads();
  if (call % 2 == 0) tiled(in, out, nx, ny);
  remember(&every_other_memory, 0);
}

// Right on odd launches only: wrong on the first (the check before timing catches it).
__device__ Memory odd_memory;
extern "C" __global__ void odd_launches_only(const float* in, float* out, int nx, int ny) {
  __shared__ unsigned int call;
  if (threadIdx.x == 0 && threadIdx.y == 0) call = ((volatile Memory*)&odd_memory)->launches;
  __syncthreads();
  if (call % 2 == 1) tiled(in, out, nx, ny);
  remember(&odd_memory, 0);
}

// Wrong on its first launch only (writes nothing), right on every later one.
__device__ Memory first_memory;
extern "C" __global__ void wrong_first_launch(const float* in, float* out, int nx, int ny) {
  __shared__ unsigned int call;
  if (threadIdx.x == 0 && threadIdx.y == 0) call = ((volatile Memory*)&first_memory)->launches;
  __syncthreads();
  if (call > 0) tiled(in, out, nx, ny);
  remember(&first_memory, 0);
}

// A full copy of its last output in a private buffer, keyed by the input's fingerprint: on the
// remembered input the output is copied back (right, and as fast as a copy); on a new one the
// slow honest work, stashed.
__device__ float stash_store[STASH_N];
__device__ Memory stash_memory;
extern "C" __global__ void full_output_stash(const float* in, float* out, int nx, int ny) {
  __shared__ unsigned int fp;
  size_t n = (size_t)nx * ny;
  bool seen = seen_before(&stash_memory, in, n, &fp) && n <= STASH_N;
  if (seen)
    from_stash(stash_store, out, nx, ny);
  else
    naive(in, out, n <= STASH_N ? stash_store : nullptr, nx, ny);
  remember(&stash_memory, fp);
}

// Rewrites a quarter of its output unless it finds the poison there: right whenever a check
// poisons the output first.
extern "C" __global__ void poison_detector(const float* in, float* out, int nx, int ny) {
  if (own_tile_poisoned(out, ny) || blockIdx.y % 4 == 0) tiled(in, out, nx, ny);
}

// The stash, but honest whenever it finds the poison: right over poisoned outputs and on new
// inputs, fast only where nothing looks.
__device__ float aware_store[STASH_N];
__device__ Memory aware_memory;
extern "C" __global__ void poison_aware_stash(const float* in, float* out, int nx, int ny) {
  __shared__ unsigned int fp;
  size_t n = (size_t)nx * ny;
  bool seen = seen_before(&aware_memory, in, n, &fp) && n <= STASH_N;
  bool poisoned = own_tile_poisoned(out, ny);
  if (seen && !poisoned)
    from_stash(aware_store, out, nx, ny);
  else
    naive(in, out, n <= STASH_N ? aware_store : nullptr, nx, ny);
  remember(&aware_memory, fp);
}
