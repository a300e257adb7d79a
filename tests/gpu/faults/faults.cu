//! Kernels that go wrong on purpose: gpu-lab must fail only their jobs and keep the others (run on a GPU host).

extern "C" __global__ void copy_ok(const float* in, float* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = in[i];
}

// Writes far outside its buffer: an illegal address, a sticky error for the whole context.
extern "C" __global__ void copy_out_of_bounds(const float* in, float* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i + (1 << 30)] = in[i];
}

// Never returns: the parent must kill the child at --timeout. The loop reads memory through a
// volatile pointer so the compiler must keep it (an empty side-effect-free loop may be deleted);
// random inputs are never NaN, so v[0] == v[0] holds forever.
extern "C" __global__ void copy_hangs(const float* in, float* out, int n) {
  volatile const float* v = in;
  while (v[0] == v[0]) { }
  out[0] = in[0];
}

// Leaves the last element unwritten: the check must see the poison.
extern "C" __global__ void copy_misses_one(const float* in, float* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n - 1) out[i] = in[i];
}
