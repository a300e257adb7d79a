// Issue 12 probe: does a column-strided transpose's time depend on where its buffers land, and does
// ncu read the same launches alike? Times the transpose suite's kernels (kernels/transpose/transpose.cu
// built with nvcc -cubin, loaded with cuModuleLoad as gpu-lab loads a module) cold: gpu-lab's read
// eviction before every sample, CUDA events around one launch, the kernels interleaved. It does so
// once per placement: a placement `bP` allocates P MiB of padding, then the job's buffers, then the
// flush buffer (gpu-lab's order); `fP` the padding, the flush buffer, then the job's buffers. Each
// placement's buffers are freed before the next is made.
// Usage: placement CUBIN NX NY SAMPLES PLACEMENTS KERNELS, e.g.
//   placement transpose.cubin 8192 8192 30 b0,f0,b2,b64,b1024 naive_row,unroll4_row,copy_column
// Under ncu (-k the kernels' names) the profiled launches come in the printed order: for each
// placement, 3 warm-up rounds and then SAMPLES rounds of the kernels in the order given.
// Build: nvcc -O3 -arch=sm_90 -o placement placement.cu -lcuda
#include "strided.cuh"
#include <cuda.h>
#include <string>
#define CU(x) do { CUresult r = (x); if (r != CUDA_SUCCESS) { const char* s; cuGetErrorString(r, &s); fprintf(stderr, "%s: %s\n", #x, s); exit(1); } } while (0)

static std::vector<std::string> split(const char* s) {
  std::vector<std::string> out; std::string cur;
  for (const char* p = s; ; p++) {
    if (*p == ',' || *p == 0) { if (!cur.empty()) out.push_back(cur); cur.clear(); if (!*p) break; } else cur += *p;
  }
  return out;
}

int main(int argc, char** argv) {
  if (argc != 7) { fprintf(stderr, "usage: placement CUBIN NX NY SAMPLES PLACEMENTS KERNELS\n"); return 2; }
  int nx = atoi(argv[2]), ny = atoi(argv[3]), samples = atoi(argv[4]);
  auto placements = split(argv[5]), names = split(argv[6]);
  CK(cudaSetDevice(0)); CK(cudaFree(0));
  CUmodule mod; CU(cuModuleLoad(&mod, argv[1]));
  std::vector<CUfunction> fn(names.size());
  for (size_t k = 0; k < names.size(); k++) CU(cuModuleGetFunction(&fn[k], mod, names[k].c_str()));
  size_t bytes = (size_t)nx * ny * 4;
  cudaEvent_t a, b; CK(cudaEventCreate(&a)); CK(cudaEventCreate(&b));
  printf("NX=%d NY=%d, %d samples a kernel and placement, cold (read eviction of 2x L2 before each)\n", nx, ny, samples);
  for (auto& place : placements) {
    bool flush_first = place[0] == 'f';
    size_t pad = (size_t)atoll(place.c_str() + 1) << 20;
    char* padding = nullptr; float *in, *out; Flush flush{nullptr, flush_bytes()};
    auto alloc = [](void** p, size_t n) { CK(cudaMalloc(p, n)); CK(cudaMemset(*p, 0, n)); };
    if (pad) alloc((void**)&padding, pad);
    if (flush_first) alloc((void**)&flush.buf, flush.bytes + 16);
    alloc((void**)&in, bytes); alloc((void**)&out, bytes);
    if (!flush_first) alloc((void**)&flush.buf, flush.bytes + 16);
    CK(cudaDeviceSynchronize());
    auto launch = [&](size_t k) {
      void* args[] = {&in, &out, &nx, &ny};
      // unroll4_row covers 4 * blockDim.x input columns a block, as the transpose suite's grid says.
      unsigned gx = names[k] == "unroll4_row" ? (nx + 127) / 128 : (nx + 31) / 32;
      CU(cuLaunchKernel(fn[k], gx, (ny + 7) / 8, 1, 32, 8, 1, 0, 0, args, nullptr));
    };
    for (int w = 0; w < 3; w++) for (size_t k = 0; k < names.size(); k++) launch(k);
    CK(cudaDeviceSynchronize());
    std::vector<std::vector<float>> t(names.size());
    for (int s = 0; s < samples; s++) for (size_t k = 0; k < names.size(); k++) {
      flush.evict();
      CK(cudaEventRecord(a)); launch(k); CK(cudaEventRecord(b)); CK(cudaEventSynchronize(b));
      float ms; CK(cudaEventElapsedTime(&ms, a, b)); t[k].push_back(ms);
    }
    for (size_t k = 0; k < names.size(); k++) {
      auto v = t[k]; std::sort(v.begin(), v.end());
      printf("%-6s in=%p %-12s median %.4f ms  min %.4f  max %.4f\n", place.c_str(), (void*)in, names[k].c_str(), v[v.size() / 2], v.front(), v.back());
    }
    CK(cudaFree(flush.buf)); CK(cudaFree(out)); CK(cudaFree(in));
    if (padding) CK(cudaFree(padding));
  }
  return 0;
}
