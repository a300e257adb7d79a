//! An f16 GEMM with mma.sync m16n8k16 (f32 accumulate), one warp per 16x8 tile of C from global memory: the Hopper bounds test's kernel.
// f16 inputs, f32 output: one warp computes a 16x8 tile of C with mma.sync m16n8k16 (f32 accumulate),
// operands read straight from global memory (row-major A: M x K, row-major B: K x N, row-major C).
// Fragment layouts as the PTX ISA gives them for m16n8k16 .f16: g = lane / 4, t = lane % 4;
// A: a0 (row g, k 2t..2t+1), a1 (row g+8), a2 (row g, k 2t+8..), a3 (row g+8, k 2t+8..);
// B: b0 (k 2t..2t+1, col g), b1 (k 2t+8..2t+9, col g); C: c0,c1 (row g, cols 2t..), c2,c3 (row g+8).
// Needs M % 16 == 0, N % 8 == 0, K % 16 == 0.
extern "C" __global__ void mma_f16_f32(int M, int N, int K, const unsigned short* A,
                                       const unsigned short* B, float* C) {
  const int lane = threadIdx.x & 31;
  const long long warp = (blockIdx.x * (long long)blockDim.x + threadIdx.x) >> 5;
  const int tiles_n = N / 8;
  const long long tm = warp / tiles_n, tn = warp % tiles_n;
  if (tm * 16 >= M) return;
  const int g = lane >> 2, t = lane & 3;
  const size_t r0 = tm * 16 + g, r1 = r0 + 8, col = tn * 8 + g;
  float d0 = 0.f, d1 = 0.f, d2 = 0.f, d3 = 0.f;
  for (int k = 0; k < K; k += 16) {
    const size_t ka = k + 2 * t;
    const unsigned a0 = *(const unsigned*)(A + r0 * K + ka);
    const unsigned a1 = *(const unsigned*)(A + r1 * K + ka);
    const unsigned a2 = *(const unsigned*)(A + r0 * K + ka + 8);
    const unsigned a3 = *(const unsigned*)(A + r1 * K + ka + 8);
    const unsigned b0 = B[ka * N + col] | ((unsigned)B[(ka + 1) * N + col] << 16);
    const unsigned b1 = B[(ka + 8) * N + col] | ((unsigned)B[(ka + 9) * N + col] << 16);
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
        : "+f"(d0), "+f"(d1), "+f"(d2), "+f"(d3)
        : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
  }
  const size_t c = tn * 8 + 2 * t;
  C[r0 * N + c] = d0;
  C[r0 * N + c + 1] = d1;
  C[r1 * N + c] = d2;
  C[r1 * N + c + 1] = d3;
}
