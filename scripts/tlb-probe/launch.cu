// Issue 12 probe: is it how gpu-lab launches? Times copy_row, copy_column and naive_row at 16384²,
// cold (gpu-lab's read eviction before every sample), interleaved, by three paths in one process:
// the runtime's <<<>>> on this file's kernels; cuLaunchKernel on the same kernels
// (cudaGetFuncBySymbol); cuLaunchKernel on kernels/transpose/transpose.cu built by nvcc -cubin and
// loaded with cuModuleLoad, as gpu-lab loads a module. Usage: launch CUBIN [samples [ORDER [ALLOC]]]:
// ORDER `flush-first` (the default) or `buffers-first` (gpu-lab's order: the job's buffers, then the
// flush buffer at the first cold sample); ALLOC `malloc` (default) or `pool` (cudaMallocAsync, as cudarc).
// Build: nvcc -O3 -arch=sm_90 -o launch launch.cu -lcuda
#include "strided.cuh"
#include <cuda.h>
#define CU(x) do { CUresult r = (x); if (r != CUDA_SUCCESS) { const char* s; cuGetErrorString(r, &s); fprintf(stderr, "%s: %s\n", #x, s); exit(1); } } while (0)

int main(int argc, char** argv) {
  if (argc < 2) { fprintf(stderr, "usage: launch CUBIN [samples]\n"); return 2; }
  int samples = argc > 2 ? atoi(argv[2]) : 30;
  CK(cudaSetDevice(0)); CK(cudaFree(0));
  bool buffers_first = argc > 3 && !strcmp(argv[3], "buffers-first"), pool = argc > 4 && !strcmp(argv[4], "pool");
  auto alloc = [&](void** p, size_t n) { if (pool) CK(cudaMallocAsync(p, n, 0)); else CK(cudaMalloc(p, n)); CK(cudaMemset(*p, 0, n)); };
  int nx = 16384, ny = 16384; size_t bytes = (size_t)nx * ny * 4;
  Flush flush{nullptr, flush_bytes()};
  float *in, *out;
  if (!buffers_first) alloc((void**)&flush.buf, flush.bytes + 16);
  alloc((void**)&in, bytes); alloc((void**)&out, bytes);
  if (buffers_first) alloc((void**)&flush.buf, flush.bytes + 16);
  CK(cudaDeviceSynchronize());
  printf("order %s, %s\n", buffers_first ? "buffers-first" : "flush-first", pool ? "cudaMallocAsync" : "cudaMalloc");
  CUmodule mod; CU(cuModuleLoad(&mod, argv[1]));
  CUfunction fn[3][2];
  for (int k = 0; k < 3; k++) {
    CK(cudaGetFuncBySymbol(&fn[k][0], (const void*)kKernels[k].k));
    CU(cuModuleGetFunction(&fn[k][1], mod, kKernels[k].name));
  }
  dim3 block(32, 8), grid((nx + 31) / 32, (ny + 7) / 8);
  cudaEvent_t a, b; CK(cudaEventCreate(&a)); CK(cudaEventCreate(&b));
  const char* paths[] = {"runtime <<<>>>", "cuLaunchKernel, this file", "cuLaunchKernel, transpose.cubin"};
  std::vector<float> t[3][3];
  auto launch = [&](int k, int p) {
    void* args[] = {&in, &out, &nx, &ny};
    if (p == 0) {
      kKernels[k].k<<<grid, block>>>(in, out, nx, ny);
    } else {
      CU(cuLaunchKernel(fn[k][p - 1], grid.x, grid.y, 1, block.x, block.y, 1, 0, 0, args, nullptr));
    }
  };
  for (int k = 0; k < 3; k++) for (int p = 0; p < 3; p++) for (int w = 0; w < 3; w++) launch(k, p);
  CK(cudaDeviceSynchronize());
  for (int s = 0; s < samples; s++) for (int k = 0; k < 3; k++) for (int p = 0; p < 3; p++) {
    flush.evict();
    CK(cudaEventRecord(a)); launch(k, p); CK(cudaEventRecord(b)); CK(cudaEventSynchronize(b));
    float ms; CK(cudaEventElapsedTime(&ms, a, b)); t[k][p].push_back(ms);
  }
  for (int k = 0; k < 3; k++) for (int p = 0; p < 3; p++) {
    auto v = t[k][p]; std::sort(v.begin(), v.end());
    printf("%-12s %-32s median %.4f ms  min %.4f  max %.4f  (%d samples)\n", kKernels[k].name, paths[p], v[v.size() / 2], v.front(), v.back(), (int)v.size());
  }
  return 0;
}
