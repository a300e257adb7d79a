// Issue 12 probe, second step (run.sh; reports/strided-h100/alloc-probe.txt, probe-same-card.txt):
// do the allocation or the data make the column-strided transposes slower under events than under
// ncu? `probe time ALLOC DATA` times copy_row, copy_column and naive_row with events after gpu-lab's
// L2 eviction; `probe ncu ALLOC DATA` launches each 5 times for ncu to time.
#include "strided.cuh"

__global__ void fill_random(unsigned* p, size_t n, unsigned seed) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
    unsigned x = (unsigned)i * 2654435761u ^ seed; x ^= x >> 13; x *= 0x5bd1e995u; x ^= x >> 15;
    p[i] = (x & 0x7f7fffffu);  // finite floats
  }
}

// probe [ncu] ALLOC DATA: ALLOC = malloc | pool (cudaMallocAsync, as cudarc allocates), DATA = zero | random.
int main(int argc, char** argv) {
  bool ncu = argc > 1 && !strcmp(argv[1], "ncu");
  const char* alloc = argc > 2 ? argv[2] : "malloc";
  const char* data = argc > 3 ? argv[3] : "zero";
  bool pool = !strcmp(alloc, "pool");
  Flush flush = make_flush();
  cudaEvent_t a, b; CK(cudaEventCreate(&a)); CK(cudaEventCreate(&b));
  for (auto s : kShapes) {
    size_t n = (size_t)s.nx * s.ny, bytes = n * 4;
    float *in, *out;
    if (pool) { CK(cudaMallocAsync(&in, bytes, 0)); CK(cudaMallocAsync(&out, bytes, 0)); }
    else { CK(cudaMalloc(&in, bytes)); CK(cudaMalloc(&out, bytes)); }
    if (!strcmp(data, "random")) { fill_random<<<1024, 256>>>((unsigned*)in, n, 1); fill_random<<<1024, 256>>>((unsigned*)out, n, 2); }
    else { CK(cudaMemset(in, 0, bytes)); CK(cudaMemset(out, 0, bytes)); }
    CK(cudaDeviceSynchronize());
    dim3 block(32, 8), grid((s.nx + 31) / 32, (s.ny + 7) / 8);
    for (auto kk : kKernels) {
      dim3 g = grid;
      int nx = s.nx, ny = s.ny;
      if (!strcmp(kk.name, "copy_column")) { g = dim3((s.ny + 31) / 32, (s.nx + 7) / 8); nx = s.ny; ny = s.nx; }
      if (ncu) { for (int r = 0; r < 5; ++r) kk.k<<<g, block>>>(in, out, nx, ny); CK(cudaDeviceSynchronize()); continue; }
      std::vector<float> t;
      for (int r = 0; r < 33; ++r) {
        flush.evict();
        CK(cudaEventRecord(a)); kk.k<<<g, block>>>(in, out, nx, ny); CK(cudaEventRecord(b)); CK(cudaEventSynchronize(b));
        float ms; CK(cudaEventElapsedTime(&ms, a, b)); if (r >= 3) t.push_back(ms);
      }
      std::sort(t.begin(), t.end());
      printf("events %-12s %5dx%-5d %-6s %-6s median %.4f ms  min %.4f  max %.4f\n", kk.name, s.nx, s.ny, alloc, data, t[t.size() / 2], t.front(), t.back());
    }
    if (pool) { CK(cudaFreeAsync(in, 0)); CK(cudaFreeAsync(out, 0)); } else { CK(cudaFree(in)); CK(cudaFree(out)); }
    CK(cudaDeviceSynchronize());
  }
  return 0;
}
