// Issue 12 probe, third step (reports/strided-h100/habits.txt): what gpu-lab's child does around its
// cold samples that a plain program does not, one habit at a time, for copy_row, copy_column and
// naive_row at 16384²: plain (eviction, events, kernel), the NVML reads gpu-lab makes after every
// sample (SM clock and throttle reasons), and plain again after 2 s of back-to-back runs (gpu-lab's
// warm-up goes on until the clock settles). Build: nvcc -O3 -arch=sm_90 habits.cu -lnvidia-ml.
#include <nvml.h>
#include <chrono>
#include <string>
#include "strided.cuh"

int main() {
  Flush flush = make_flush();
  if (nvmlInit_v2() != NVML_SUCCESS) { fprintf(stderr, "nvmlInit failed\n"); return 1; }
  const char* modes[] = {"plain", "nvml-reads", "plain", "after-2s-runs"};
  cudaEvent_t a, b; CK(cudaEventCreate(&a)); CK(cudaEventCreate(&b));
  int n1 = 16384;
  size_t n = (size_t)n1 * n1, bytes = n * 4;
  float *in, *out; CK(cudaMalloc(&in, bytes)); CK(cudaMalloc(&out, bytes));
  CK(cudaMemset(in, 0, bytes)); CK(cudaMemset(out, 0, bytes));
  dim3 block(32, 8), g((n1 + 31) / 32, (n1 + 7) / 8);
  for (auto kk : kKernels) {
    for (int m = 0; m < 4; ++m) {
      if (m == 3) {
        auto t0 = std::chrono::steady_clock::now();
        while (std::chrono::steady_clock::now() - t0 < std::chrono::seconds(2)) { kk.k<<<g, block>>>(in, out, n1, n1); CK(cudaDeviceSynchronize()); }
      }
      std::vector<float> t;
      unsigned mhz = 0;
      for (int r = 0; r < 33; ++r) {
        flush.evict();
        CK(cudaEventRecord(a)); kk.k<<<g, block>>>(in, out, n1, n1); CK(cudaEventRecord(b)); CK(cudaEventSynchronize(b));
        float ms; CK(cudaEventElapsedTime(&ms, a, b)); if (r >= 3) t.push_back(ms);
        if (m == 1) {
          nvmlDevice_t d; unsigned long long reasons;
          nvmlDeviceGetHandleByIndex_v2(0, &d); nvmlDeviceGetClockInfo(d, NVML_CLOCK_SM, &mhz); nvmlDeviceGetCurrentClocksEventReasons(d, &reasons);
        }
      }
      std::sort(t.begin(), t.end());
      printf("events %-12s %5dx%-5d %-14s median %.4f ms  min %.4f  max %.4f  %s\n", kk.name, n1, n1, modes[m], t[t.size() / 2], t.front(), t.back(), m == 1 ? (std::to_string(mhz) + " MHz").c_str() : "");
    }
  }
  return 0;
}
