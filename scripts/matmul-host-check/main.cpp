// Runs one SIMT kernel of kernels/matmul/simt.cu on the CPU (cuda_shim.h: a thread per CUDA thread,
// a std::barrier for __syncthreads) and checks C = 1.5 A B + 0.5 C against a float64 product.
// Usage: check M N K GRID_X GRID_Y THREADS (built by run.sh with the variant's defines and KERNEL).
#include "cuda_shim.h"
#include "simt.cu"
#include <cstdlib>
#include <random>

int main(int argc, char** argv) {
  if (argc != 7) {
    fprintf(stderr, "usage: %s M N K GRID_X GRID_Y THREADS\n", argv[0]);
    return 2;
  }
  const int M = atoi(argv[1]), N = atoi(argv[2]), K = atoi(argv[3]);
  std::vector<float> A(size_t(M) * K), B(size_t(K) * N), C(size_t(M) * N);
  std::mt19937 rng(1);
  std::uniform_real_distribution<float> dist(-1, 1);
  for (auto* v : {&A, &B, &C})
    for (auto& x : *v) x = dist(rng);
  const std::vector<float> C0 = C;
  gridDim = {atoi(argv[4]), atoi(argv[5]), 1};
  blockDim = {atoi(argv[6]), 1, 1};
  // Blocks one after another (their __shared__ arrays are statics), the threads of a block together.
  for (int by = 0; by < gridDim.y; ++by)
    for (int bx = 0; bx < gridDim.x; ++bx) {
      std::barrier<> bar(blockDim.x);
      g_bar = &bar;
      std::vector<std::thread> threads;
      for (int t = 0; t < blockDim.x; ++t)
        threads.emplace_back([&, t, bx, by] {
          threadIdx = {t, 0, 0};
          blockIdx = {bx, by, 0};
          KERNEL(M, N, K, 1.5f, A.data(), B.data(), 0.5f, C.data());
        });
      for (auto& th : threads) th.join();
    }
  double max_err = 0;
  long wrong = 0;
  for (int i = 0; i < M; ++i)
    for (int j = 0; j < N; ++j) {
      double s = 0;
      for (int k = 0; k < K; ++k) s += double(A[size_t(i) * K + k]) * B[size_t(k) * N + j];
      const double err = fabs(1.5 * s + 0.5 * C0[size_t(i) * N + j] - C[size_t(i) * N + j]);
      max_err = std::max(max_err, err);
      wrong += err > 2.0 * K * 1.2e-7 * 4; // the suite's 2·K·ε, with the inputs' |x| ≤ 1 and alpha 1.5
    }
  printf("M=%d N=%d K=%d max |error| %.3g, %ld wrong\n", M, N, K, max_err, wrong);
  return wrong != 0;
}
