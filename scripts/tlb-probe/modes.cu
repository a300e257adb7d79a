// Issue 12 probe, first version (reports/strided-h100/tlb-probe-modes.txt): are the column-strided
// transpose kernels slower under gpu-lab's cold timing than under ncu because of the L2 flush, or
// because the flush also evicts their page translations? Times copy_row, copy_column and naive_row
// with events after: nothing (warm), a read of 2x the L2 (gpu-lab's eviction), that read plus one
// load per page of the job's buffers (L2 cold, translations warm), and a memset of 2x the L2.
// `modes ncu` just launches each kernel 5 times for ncu to time with --cache-control all.
// Build: nvcc -O3 -arch=sm_90 -o modes modes.cu; run as run.sh runs probe.cu, without the arguments.
#include "strided.cuh"

int main(int argc, char** argv) {
  bool ncu = argc > 1 && !strcmp(argv[1], "ncu");
  Flush flush = make_flush();
  const char* modes[] = {"warm", "evict", "evict+touch64K", "evict+touch2M", "memset"};
  cudaEvent_t a, b; CK(cudaEventCreate(&a)); CK(cudaEventCreate(&b));
  for (auto s : kShapes) {
    size_t n = (size_t)s.nx * s.ny, bytes = n * 4;
    float *in, *out; CK(cudaMalloc(&in, bytes)); CK(cudaMalloc(&out, bytes));
    CK(cudaMemset(in, 0, bytes)); CK(cudaMemset(out, 0, bytes));
    dim3 block(32, 8), grid((s.nx + 31) / 32, (s.ny + 7) / 8);
    for (auto kk : kKernels) {
      // copy_column's grid runs along ny in x.
      dim3 g = grid;
      if (!strcmp(kk.name, "copy_column")) g = dim3((s.ny + 31) / 32, (s.nx + 7) / 8);
      int nx = s.nx, ny = s.ny;
      if (!strcmp(kk.name, "copy_column")) { nx = s.ny; ny = s.nx; }
      if (ncu) { for (int r = 0; r < 5; ++r) kk.k<<<g, block>>>(in, out, nx, ny); CK(cudaDeviceSynchronize()); continue; }
      for (int m = 0; m < 5; ++m) {
        std::vector<float> t;
        for (int r = 0; r < 33; ++r) {
          if (m >= 1 && m <= 3) flush.evict();
          if (m == 2 || m == 3) {
            unsigned long long st = m == 2 ? 65536 : 2 << 20;
            touch<<<264, 256>>>((const char*)in, bytes, st, flush.sink());
            touch<<<264, 256>>>((const char*)out, bytes, st, flush.sink());
          }
          if (m == 4) CK(cudaMemsetAsync(flush.buf, 0, flush.bytes));
          CK(cudaEventRecord(a)); kk.k<<<g, block>>>(in, out, nx, ny); CK(cudaEventRecord(b)); CK(cudaEventSynchronize(b));
          float ms; CK(cudaEventElapsedTime(&ms, a, b)); if (r >= 3) t.push_back(ms);
        }
        std::sort(t.begin(), t.end());
        printf("%-12s %5dx%-5d %-15s median %.4f ms  min %.4f  max %.4f\n", kk.name, s.nx, s.ny, modes[m], t[t.size() / 2], t.front(), t.back());
      }
    }
    CK(cudaFree(in)); CK(cudaFree(out));
  }
  return 0;
}
