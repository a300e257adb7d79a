//! A kernel that does not compile: NVRTC's log must reach the report and fail only this variant.

extern "C" __global__ void copy_does_not_compile(const float* in, float* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = in[i] + undeclared_name;
}
