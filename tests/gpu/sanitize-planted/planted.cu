//! Planted bugs that every check passes: only compute-sanitizer (`--sanitize`) finds them.
extern "C" __global__ void copy_clean(const float* in, float* out, long long n) {
  long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = in[i];
}

// Copies, then writes one element past the end of `out`: the check reads only [0, n).
extern "C" __global__ void copy_oob_write(const float* in, float* out, long long n) {
  long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = in[i];
  if (i == n) out[i] = 1.0f;  // one past the end (the grid has a spare block)
}

// Stages through shared memory without a barrier, and reads a neighbour's slot: the read races
// with the neighbour's write. The value read is used only on a path no launch takes (n < 0).
extern "C" __global__ void copy_smem_race(const float* in, float* out, long long n) {
  __shared__ float s[256];
  long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  int t = threadIdx.x;
  s[t] = i < n ? in[i] : 0.0f;
  volatile float* vs = s;
  float other = vs[(t + 37) % blockDim.x];  // missing __syncthreads before this
  if (i < n) out[i] = s[t];
  if (n < 0) out[0] = other;
}

// A barrier in divergent code: half of each warp waits at one __syncthreads, half at another.
// Every thread of the block arrives at barrier 0, so it does not hang, but synccheck reports it.
extern "C" __global__ void copy_divergent_barrier(const float* in, float* out, long long n) {
  __shared__ float s[256];
  long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  int t = threadIdx.x;
  s[t] = i < n ? in[i] : 0.0f;
  if ((t & 31) < 16) {
    __syncthreads();
  } else {
    __syncthreads();
  }
  if (i < n) out[i] = s[t];
}
