// Probe: which cuBLASLt FP8 configuration runs on this GPU (in-place C==D vs separate D; scale pointers).
#include <cublasLt.h>
#include <cuda_runtime.h>
#include <cstdio>
#define CK(x) do { auto s = (x); if (s) { printf("  %s -> %d\n", #x, (int)s); return (int)s; } } while (0)
int run(bool inplace, bool scales, cudaDataType out) {
  int n = 8192; size_t N = (size_t)n * n;
  void *a, *b, *c, *d, *ws, *sc; cudaMalloc(&a, N); cudaMalloc(&b, N); cudaMalloc(&c, N * 2); cudaMalloc(&d, N * 2);
  cudaMalloc(&ws, 32 << 20); cudaMalloc(&sc, 8); float ones[2] = {1, 1}; cudaMemcpy(sc, ones, 8, cudaMemcpyHostToDevice);
  cudaMemset(a, 0x38, N); cudaMemset(b, 0x38, N);
  cublasLtHandle_t h; cublasLtCreate(&h);
  cublasLtMatmulDesc_t desc; CK(cublasLtMatmulDescCreate(&desc, CUBLAS_COMPUTE_32F, CUDA_R_32F));
  cublasOperation_t T = CUBLAS_OP_T, Nn = CUBLAS_OP_N;
  CK(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSA, &T, sizeof T));
  CK(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSB, &Nn, sizeof Nn));
  if (scales) { void* sa = sc; void* sb = (char*)sc + 4;
    CK(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, &sa, sizeof sa));
    CK(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, &sb, sizeof sb)); }
  cublasLtMatrixLayout_t la, lb, lc;
  cublasLtMatrixLayoutCreate(&la, CUDA_R_8F_E4M3, n, n, n); cublasLtMatrixLayoutCreate(&lb, CUDA_R_8F_E4M3, n, n, n);
  cublasLtMatrixLayoutCreate(&lc, out, n, n, n);
  cublasLtMatmulPreference_t p; cublasLtMatmulPreferenceCreate(&p); size_t w = 32 << 20;
  cublasLtMatmulPreferenceSetAttribute(p, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &w, sizeof w);
  cublasLtMatmulHeuristicResult_t r; int cnt = 0;
  CK(cublasLtMatmulAlgoGetHeuristic(h, desc, la, lb, lc, lc, p, 1, &r, &cnt));
  float al = 1, be = 0;
  CK(cublasLtMatmul(h, desc, &al, a, la, b, lb, &be, c, lc, inplace ? c : d, lc, &r.algo, ws, w, 0));
  cudaEvent_t e0, e1; cudaEventCreate(&e0); cudaEventCreate(&e1); cudaEventRecord(e0);
  for (int i = 0; i < 10; i++) cublasLtMatmul(h, desc, &al, a, la, b, lb, &be, c, lc, inplace ? c : d, lc, &r.algo, ws, w, 0);
  cudaEventRecord(e1); cudaEventSynchronize(e1); float ms; cudaEventElapsedTime(&ms, e0, e1);
  printf("  ok: %.1f TFLOP/s\n", 2.0 * n * n * (double)n / (ms / 10 * 1e-3) / 1e12);
  return 0;
}
int main() {
  for (int inplace = 0; inplace < 2; inplace++) for (int scales = 0; scales < 2; scales++)
    for (cudaDataType out : {CUDA_R_16BF, CUDA_R_16F, CUDA_R_32F}) {
      printf("inplace=%d scales=%d out=%d\n", inplace, scales, (int)out); run(inplace, scales, out); }
}
