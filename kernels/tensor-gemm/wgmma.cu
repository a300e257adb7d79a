//! Hopper tensor-core GEMMs (sm_90a: wgmma, TMA, setmaxnreg), C = A * B^T in f16 or bf16 with f32 accumulation, adapted from pranjalssh/fast.cu (MIT).
// Hopper tensor-core GEMMs (sm_90a: wgmma, setmaxnreg), C = A * B^T: A (M x K) and B (N x K)
// row-major in f16 or bf16 (both K-major: the "TN" contract cuBLAS is fastest at, the check's
// trans_b = true), f32 accumulation, C (M x N) row-major in f32 or rounded once to bf16/f16.
//
// Adapted from pranjalssh/fast.cu (MIT License, Copyright (c) 2024 Pranjal Shankhdhar),
// examples/matmul/matmul_2..12.cuh: its smem descriptors, wgmma wrappers, mbarrier and TMA
// helpers, the producer/consumer split with setmaxnreg, the cluster multicast of B and the
// persistent loop. Changed here: 2-D tensor maps with a 64-element k-box (fast.cu uses a 3-D
// map for wider k-boxes), any M and N (edge tiles are zero-filled by TMA and clipped at the
// store), K a multiple of 8 with a zero-filled last k-tile, a row-major C stored straight from
// the accumulators, f16 as well as bf16, and a grouped tile order computed on the device
// instead of fast.cu's host-made Hilbert schedule.
//
// Rungs (README.md):
// - tgh::wgmma_gemm<T, OutT>: one warpgroup, 128 x 128 block tile; TMA loads of 128B-swizzled
//   64-wide k-tiles into a 4-stage ring of mbarrier-guarded buffers; wgmma m64n128k16.
// - tgh::ws_gemm<T, OutT, CLUSTER_M>: a producer warpgroup (one thread issues TMA, registers
//   given back with setmaxnreg) and two consumer warpgroups (240 registers each), 128 x 256
//   block tile, wgmma m64n256k16, 4 stages; CLUSTER_M = 2: two blocks of a cluster share B's
//   tile, loaded once and multicast to both. Launched with one block per tile, or persistent
//   (one block per SM, a tile loop in a grouped order): the same kernel, another grid.
// - tgh::ws_gemm_tma_store<T, OutT, CLUSTER_M>: the same with f16/bf16 C written through shared
//   memory and TMA stores (fast.cu kernels 11-12's epilogue), 3 stages.
//
// Contract: K and N multiples of 8 (TMA's 16-byte row strides, pair stores); M free. A launch
// that breaks it traps.

#if defined(__CUDACC_RTC__)
// NVRTC has no <cuda.h>: the driver's type is 128 opaque bytes aligned to 64.
struct __align__(64) CUtensorMap {
  unsigned long long opaque[16];
};
#else
#include <cuda.h>
#endif
#include <cuda_bf16.h>
#include <cuda_fp16.h>

namespace tgh {

constexpr int BK = 64;  // k-elements a stage: one 128-byte swizzle span of f16/bf16

__device__ __forceinline__ unsigned smem_addr(const void* p) {
  return static_cast<unsigned>(__cvta_generic_to_shared(p));
}

// The wgmma shared-memory matrix descriptor of a K-major tile written by TMA with the 128-byte
// swizzle: start address, leading byte offset 16, stride byte offset 1024 (8 rows of 128 bytes),
// swizzle mode 128B (PTX ISA, "Matrix Descriptor Format"). Moving 16 k-elements is +32 bytes.
__device__ __forceinline__ unsigned long long smem_desc(const void* p) {
  const unsigned long long addr = smem_addr(p);
  unsigned long long desc = (addr & 0x3FFFF) >> 4;
  desc |= (16ull >> 4) << 16;
  desc |= (1024ull >> 4) << 32;
  desc |= 1ull << 62;
  return desc;
}

__device__ __forceinline__ void wgmma_fence() { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }
__device__ __forceinline__ void wgmma_commit() { asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory"); }
__device__ __forceinline__ void wgmma_wait_all() { asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory"); }

// wgmma m64n128k16, bf16 inputs, f32 accumulators d (scale-d 0 overwrites them, 1 adds).
template <int ScaleD>
__device__ __forceinline__ void wgmma_n128(float (&d)[8][8], const __nv_bfloat16* sA, const __nv_bfloat16* sB) {
  const unsigned long long da = smem_desc(sA), db = smem_desc(sB);
  asm volatile(
      "{\n"
      ".reg .pred p;\n"
      "setp.ne.b32 p, %66, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 "
      "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}, %64, %65, p, 1, 1, 0, 0;\n"
      "}\n"
      : "+f"(d[0][0]), "+f"(d[0][1]), "+f"(d[0][2]), "+f"(d[0][3]), "+f"(d[0][4]), "+f"(d[0][5]), "+f"(d[0][6]), "+f"(d[0][7]),
        "+f"(d[1][0]), "+f"(d[1][1]), "+f"(d[1][2]), "+f"(d[1][3]), "+f"(d[1][4]), "+f"(d[1][5]), "+f"(d[1][6]), "+f"(d[1][7]),
        "+f"(d[2][0]), "+f"(d[2][1]), "+f"(d[2][2]), "+f"(d[2][3]), "+f"(d[2][4]), "+f"(d[2][5]), "+f"(d[2][6]), "+f"(d[2][7]),
        "+f"(d[3][0]), "+f"(d[3][1]), "+f"(d[3][2]), "+f"(d[3][3]), "+f"(d[3][4]), "+f"(d[3][5]), "+f"(d[3][6]), "+f"(d[3][7]),
        "+f"(d[4][0]), "+f"(d[4][1]), "+f"(d[4][2]), "+f"(d[4][3]), "+f"(d[4][4]), "+f"(d[4][5]), "+f"(d[4][6]), "+f"(d[4][7]),
        "+f"(d[5][0]), "+f"(d[5][1]), "+f"(d[5][2]), "+f"(d[5][3]), "+f"(d[5][4]), "+f"(d[5][5]), "+f"(d[5][6]), "+f"(d[5][7]),
        "+f"(d[6][0]), "+f"(d[6][1]), "+f"(d[6][2]), "+f"(d[6][3]), "+f"(d[6][4]), "+f"(d[6][5]), "+f"(d[6][6]), "+f"(d[6][7]),
        "+f"(d[7][0]), "+f"(d[7][1]), "+f"(d[7][2]), "+f"(d[7][3]), "+f"(d[7][4]), "+f"(d[7][5]), "+f"(d[7][6]), "+f"(d[7][7])
      : "l"(da), "l"(db), "n"(ScaleD));
}

// wgmma m64n128k16, f16 inputs, f32 accumulators d (scale-d 0 overwrites them, 1 adds).
template <int ScaleD>
__device__ __forceinline__ void wgmma_n128(float (&d)[8][8], const __half* sA, const __half* sB) {
  const unsigned long long da = smem_desc(sA), db = smem_desc(sB);
  asm volatile(
      "{\n"
      ".reg .pred p;\n"
      "setp.ne.b32 p, %66, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16 "
      "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}, %64, %65, p, 1, 1, 0, 0;\n"
      "}\n"
      : "+f"(d[0][0]), "+f"(d[0][1]), "+f"(d[0][2]), "+f"(d[0][3]), "+f"(d[0][4]), "+f"(d[0][5]), "+f"(d[0][6]), "+f"(d[0][7]),
        "+f"(d[1][0]), "+f"(d[1][1]), "+f"(d[1][2]), "+f"(d[1][3]), "+f"(d[1][4]), "+f"(d[1][5]), "+f"(d[1][6]), "+f"(d[1][7]),
        "+f"(d[2][0]), "+f"(d[2][1]), "+f"(d[2][2]), "+f"(d[2][3]), "+f"(d[2][4]), "+f"(d[2][5]), "+f"(d[2][6]), "+f"(d[2][7]),
        "+f"(d[3][0]), "+f"(d[3][1]), "+f"(d[3][2]), "+f"(d[3][3]), "+f"(d[3][4]), "+f"(d[3][5]), "+f"(d[3][6]), "+f"(d[3][7]),
        "+f"(d[4][0]), "+f"(d[4][1]), "+f"(d[4][2]), "+f"(d[4][3]), "+f"(d[4][4]), "+f"(d[4][5]), "+f"(d[4][6]), "+f"(d[4][7]),
        "+f"(d[5][0]), "+f"(d[5][1]), "+f"(d[5][2]), "+f"(d[5][3]), "+f"(d[5][4]), "+f"(d[5][5]), "+f"(d[5][6]), "+f"(d[5][7]),
        "+f"(d[6][0]), "+f"(d[6][1]), "+f"(d[6][2]), "+f"(d[6][3]), "+f"(d[6][4]), "+f"(d[6][5]), "+f"(d[6][6]), "+f"(d[6][7]),
        "+f"(d[7][0]), "+f"(d[7][1]), "+f"(d[7][2]), "+f"(d[7][3]), "+f"(d[7][4]), "+f"(d[7][5]), "+f"(d[7][6]), "+f"(d[7][7])
      : "l"(da), "l"(db), "n"(ScaleD));
}

// wgmma m64n256k16, bf16 inputs, f32 accumulators d (scale-d 0 overwrites them, 1 adds).
template <int ScaleD>
__device__ __forceinline__ void wgmma_n256(float (&d)[16][8], const __nv_bfloat16* sA, const __nv_bfloat16* sB) {
  const unsigned long long da = smem_desc(sA), db = smem_desc(sB);
  asm volatile(
      "{\n"
      ".reg .pred p;\n"
      "setp.ne.b32 p, %130, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16 "
      "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, %64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, %80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95, %96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111, %112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, %123, %124, %125, %126, %127}, %128, %129, p, 1, 1, 0, 0;\n"
      "}\n"
      : "+f"(d[0][0]), "+f"(d[0][1]), "+f"(d[0][2]), "+f"(d[0][3]), "+f"(d[0][4]), "+f"(d[0][5]), "+f"(d[0][6]), "+f"(d[0][7]),
        "+f"(d[1][0]), "+f"(d[1][1]), "+f"(d[1][2]), "+f"(d[1][3]), "+f"(d[1][4]), "+f"(d[1][5]), "+f"(d[1][6]), "+f"(d[1][7]),
        "+f"(d[2][0]), "+f"(d[2][1]), "+f"(d[2][2]), "+f"(d[2][3]), "+f"(d[2][4]), "+f"(d[2][5]), "+f"(d[2][6]), "+f"(d[2][7]),
        "+f"(d[3][0]), "+f"(d[3][1]), "+f"(d[3][2]), "+f"(d[3][3]), "+f"(d[3][4]), "+f"(d[3][5]), "+f"(d[3][6]), "+f"(d[3][7]),
        "+f"(d[4][0]), "+f"(d[4][1]), "+f"(d[4][2]), "+f"(d[4][3]), "+f"(d[4][4]), "+f"(d[4][5]), "+f"(d[4][6]), "+f"(d[4][7]),
        "+f"(d[5][0]), "+f"(d[5][1]), "+f"(d[5][2]), "+f"(d[5][3]), "+f"(d[5][4]), "+f"(d[5][5]), "+f"(d[5][6]), "+f"(d[5][7]),
        "+f"(d[6][0]), "+f"(d[6][1]), "+f"(d[6][2]), "+f"(d[6][3]), "+f"(d[6][4]), "+f"(d[6][5]), "+f"(d[6][6]), "+f"(d[6][7]),
        "+f"(d[7][0]), "+f"(d[7][1]), "+f"(d[7][2]), "+f"(d[7][3]), "+f"(d[7][4]), "+f"(d[7][5]), "+f"(d[7][6]), "+f"(d[7][7]),
        "+f"(d[8][0]), "+f"(d[8][1]), "+f"(d[8][2]), "+f"(d[8][3]), "+f"(d[8][4]), "+f"(d[8][5]), "+f"(d[8][6]), "+f"(d[8][7]),
        "+f"(d[9][0]), "+f"(d[9][1]), "+f"(d[9][2]), "+f"(d[9][3]), "+f"(d[9][4]), "+f"(d[9][5]), "+f"(d[9][6]), "+f"(d[9][7]),
        "+f"(d[10][0]), "+f"(d[10][1]), "+f"(d[10][2]), "+f"(d[10][3]), "+f"(d[10][4]), "+f"(d[10][5]), "+f"(d[10][6]), "+f"(d[10][7]),
        "+f"(d[11][0]), "+f"(d[11][1]), "+f"(d[11][2]), "+f"(d[11][3]), "+f"(d[11][4]), "+f"(d[11][5]), "+f"(d[11][6]), "+f"(d[11][7]),
        "+f"(d[12][0]), "+f"(d[12][1]), "+f"(d[12][2]), "+f"(d[12][3]), "+f"(d[12][4]), "+f"(d[12][5]), "+f"(d[12][6]), "+f"(d[12][7]),
        "+f"(d[13][0]), "+f"(d[13][1]), "+f"(d[13][2]), "+f"(d[13][3]), "+f"(d[13][4]), "+f"(d[13][5]), "+f"(d[13][6]), "+f"(d[13][7]),
        "+f"(d[14][0]), "+f"(d[14][1]), "+f"(d[14][2]), "+f"(d[14][3]), "+f"(d[14][4]), "+f"(d[14][5]), "+f"(d[14][6]), "+f"(d[14][7]),
        "+f"(d[15][0]), "+f"(d[15][1]), "+f"(d[15][2]), "+f"(d[15][3]), "+f"(d[15][4]), "+f"(d[15][5]), "+f"(d[15][6]), "+f"(d[15][7])
      : "l"(da), "l"(db), "n"(ScaleD));
}

// wgmma m64n256k16, f16 inputs, f32 accumulators d (scale-d 0 overwrites them, 1 adds).
template <int ScaleD>
__device__ __forceinline__ void wgmma_n256(float (&d)[16][8], const __half* sA, const __half* sB) {
  const unsigned long long da = smem_desc(sA), db = smem_desc(sB);
  asm volatile(
      "{\n"
      ".reg .pred p;\n"
      "setp.ne.b32 p, %130, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n256k16.f32.f16.f16 "
      "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, %64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, %80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95, %96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111, %112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, %123, %124, %125, %126, %127}, %128, %129, p, 1, 1, 0, 0;\n"
      "}\n"
      : "+f"(d[0][0]), "+f"(d[0][1]), "+f"(d[0][2]), "+f"(d[0][3]), "+f"(d[0][4]), "+f"(d[0][5]), "+f"(d[0][6]), "+f"(d[0][7]),
        "+f"(d[1][0]), "+f"(d[1][1]), "+f"(d[1][2]), "+f"(d[1][3]), "+f"(d[1][4]), "+f"(d[1][5]), "+f"(d[1][6]), "+f"(d[1][7]),
        "+f"(d[2][0]), "+f"(d[2][1]), "+f"(d[2][2]), "+f"(d[2][3]), "+f"(d[2][4]), "+f"(d[2][5]), "+f"(d[2][6]), "+f"(d[2][7]),
        "+f"(d[3][0]), "+f"(d[3][1]), "+f"(d[3][2]), "+f"(d[3][3]), "+f"(d[3][4]), "+f"(d[3][5]), "+f"(d[3][6]), "+f"(d[3][7]),
        "+f"(d[4][0]), "+f"(d[4][1]), "+f"(d[4][2]), "+f"(d[4][3]), "+f"(d[4][4]), "+f"(d[4][5]), "+f"(d[4][6]), "+f"(d[4][7]),
        "+f"(d[5][0]), "+f"(d[5][1]), "+f"(d[5][2]), "+f"(d[5][3]), "+f"(d[5][4]), "+f"(d[5][5]), "+f"(d[5][6]), "+f"(d[5][7]),
        "+f"(d[6][0]), "+f"(d[6][1]), "+f"(d[6][2]), "+f"(d[6][3]), "+f"(d[6][4]), "+f"(d[6][5]), "+f"(d[6][6]), "+f"(d[6][7]),
        "+f"(d[7][0]), "+f"(d[7][1]), "+f"(d[7][2]), "+f"(d[7][3]), "+f"(d[7][4]), "+f"(d[7][5]), "+f"(d[7][6]), "+f"(d[7][7]),
        "+f"(d[8][0]), "+f"(d[8][1]), "+f"(d[8][2]), "+f"(d[8][3]), "+f"(d[8][4]), "+f"(d[8][5]), "+f"(d[8][6]), "+f"(d[8][7]),
        "+f"(d[9][0]), "+f"(d[9][1]), "+f"(d[9][2]), "+f"(d[9][3]), "+f"(d[9][4]), "+f"(d[9][5]), "+f"(d[9][6]), "+f"(d[9][7]),
        "+f"(d[10][0]), "+f"(d[10][1]), "+f"(d[10][2]), "+f"(d[10][3]), "+f"(d[10][4]), "+f"(d[10][5]), "+f"(d[10][6]), "+f"(d[10][7]),
        "+f"(d[11][0]), "+f"(d[11][1]), "+f"(d[11][2]), "+f"(d[11][3]), "+f"(d[11][4]), "+f"(d[11][5]), "+f"(d[11][6]), "+f"(d[11][7]),
        "+f"(d[12][0]), "+f"(d[12][1]), "+f"(d[12][2]), "+f"(d[12][3]), "+f"(d[12][4]), "+f"(d[12][5]), "+f"(d[12][6]), "+f"(d[12][7]),
        "+f"(d[13][0]), "+f"(d[13][1]), "+f"(d[13][2]), "+f"(d[13][3]), "+f"(d[13][4]), "+f"(d[13][5]), "+f"(d[13][6]), "+f"(d[13][7]),
        "+f"(d[14][0]), "+f"(d[14][1]), "+f"(d[14][2]), "+f"(d[14][3]), "+f"(d[14][4]), "+f"(d[14][5]), "+f"(d[14][6]), "+f"(d[14][7]),
        "+f"(d[15][0]), "+f"(d[15][1]), "+f"(d[15][2]), "+f"(d[15][3]), "+f"(d[15][4]), "+f"(d[15][5]), "+f"(d[15][6]), "+f"(d[15][7])
      : "l"(da), "l"(db), "n"(ScaleD));
}

// ---------------------------------------------------------------------------------------------
// mbarriers and TMA

__device__ __forceinline__ void bar_init(unsigned long long* bar, unsigned count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(smem_addr(bar)), "r"(count));
}

__device__ __forceinline__ void bar_expect_bytes(unsigned long long* bar, unsigned bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(smem_addr(bar)), "r"(bytes)
               : "memory");
}

// Spins until the barrier's phase `parity` has completed.
__device__ __forceinline__ void bar_wait(unsigned long long* bar, unsigned parity) {
  asm volatile(
      "{\n"
      ".reg .pred P1;\n"
      "WAIT_%=:\n"
      "mbarrier.try_wait.parity.shared::cta.b64 P1, [%0], %1;\n"
      "@P1 bra.uni DONE_%=;\n"
      "bra.uni WAIT_%=;\n"
      "DONE_%=:\n"
      "}\n" ::"r"(smem_addr(bar)),
      "r"(parity)
      : "memory");
}

__device__ __forceinline__ void bar_arrive(unsigned long long* bar) {
  asm volatile("mbarrier.arrive.release.cta.shared::cta.b64 _, [%0];\n" ::"r"(smem_addr(bar)) : "memory");
}

// Arrives on the barrier at the same offset in block `cta` of the cluster. The default .release.cta
// semantics, as CUTLASS's ClusterBarrier::arrive(cta_id) and fast.cu: the slot's readers are
// wgmmas already waited for, so no cluster-scope release is needed, and one (.release.cluster,
// the first version here) made every 2-block-cluster rung about 1.5x slower on an H200.
__device__ __forceinline__ void bar_arrive_cluster(unsigned long long* bar, unsigned cta) {
  asm volatile(
      "{\n"
      ".reg .b32 remote;\n"
      "mapa.shared::cluster.u32 remote, %0, %1;\n"
      "mbarrier.arrive.shared::cluster.b64 _, [remote];\n"
      "}\n" ::"r"(smem_addr(bar)),
      "r"(cta)
      : "memory");
}

__device__ __forceinline__ void cluster_sync() {
  asm volatile("barrier.cluster.arrive.release;\nbarrier.cluster.wait.acquire;\n" ::: "memory");
}

// One box of a 2-D tensor map (x: the k-element, y: the row) into shared memory; completes
// on `bar` by its bytes. A box past the tensor's edge is filled with zeros.
__device__ __forceinline__ void tma_load(void* dst, const CUtensorMap* map, unsigned long long* bar, int x, int y) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
      " [%0], [%1, {%3, %4}], [%2];\n" ::"r"(smem_addr(dst)),
      "l"(reinterpret_cast<unsigned long long>(map)), "r"(smem_addr(bar)), "r"(x), "r"(y)
      : "memory");
}

// The same box written into every block of `mask` in the cluster (same offset, each block's
// own barrier at `bar`'s offset).
__device__ __forceinline__ void tma_load_multicast(void* dst, const CUtensorMap* map, unsigned long long* bar, int x,
                                                   int y, unsigned short mask) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes.multicast::cluster"
      " [%0], [%1, {%3, %4}], [%2], %5;\n" ::"r"(smem_addr(dst)),
      "l"(reinterpret_cast<unsigned long long>(map)), "r"(smem_addr(bar)), "r"(x), "r"(y), "h"(mask)
      : "memory");
}

template <unsigned REGS>
__device__ __forceinline__ void regs_dealloc() {
  asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(REGS));
}
template <unsigned REGS>
__device__ __forceinline__ void regs_alloc() {
  asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(REGS));
}

// ---------------------------------------------------------------------------------------------
// Epilogue: the m64nNk16 accumulator layout (PTX ISA, "wgmma .m64nNk16 register fragment layout
// for the accumulator"): in a warpgroup, warp w, lane l holds, for every 16 columns c16,
// d[c16][0..1] at row 16w + l/4, columns 16*c16 + 2*(l%4) + {0, 1}; [2..3] at row + 8;
// [4..5] and [6..7] the same 8 columns further. Stored as pairs, rows and columns clipped.

__device__ __forceinline__ void store_pair(float* p, float x, float y) {
  *reinterpret_cast<float2*>(p) = make_float2(x, y);
}
__device__ __forceinline__ void store_pair(__half* p, float x, float y) {
  *reinterpret_cast<__half2*>(p) = __floats2half2_rn(x, y);
}
__device__ __forceinline__ void store_pair(__nv_bfloat16* p, float x, float y) {
  *reinterpret_cast<__nv_bfloat162*>(p) = __floats2bfloat162_rn(x, y);
}

// Stores one warpgroup's 64 x N16*16 accumulators whose top-left is (row0, col0).
template <int N16, typename OutT>
__device__ __forceinline__ void store_tile(const float (&d)[N16][8], OutT* C, int M, int N, int row0, int col0) {
  const int t = threadIdx.x % 128;
  const int row = row0 + 16 * (t / 32) + (t % 32) / 4;
  const int col = col0 + 2 * (t % 4);
#pragma unroll
  for (int c16 = 0; c16 < N16; ++c16) {
#pragma unroll
    for (int half = 0; half < 2; ++half) {
      const int c = col + 16 * c16 + 8 * half;
      if (c < N) {
        if (row < M) store_pair(C + (long long)row * N + c, d[c16][4 * half + 0], d[c16][4 * half + 1]);
        if (row + 8 < M) store_pair(C + (long long)(row + 8) * N + c, d[c16][4 * half + 2], d[c16][4 * half + 3]);
      }
    }
  }
}

template <int N16>
__device__ __forceinline__ void zero(float (&d)[N16][8]) {
#pragma unroll
  for (int i = 0; i < N16; ++i)
#pragma unroll
    for (int j = 0; j < 8; ++j) d[i][j] = 0.0f;
}

__device__ __forceinline__ void require_multiples_of_8(int N, int K) {
  if (((N | K) & 7) != 0) __trap();
}

// ---------------------------------------------------------------------------------------------
// Rung: wgmma + TMA, one warpgroup. 128 x 128 block tile (two m64 halves), 4 stages of
// (128 + 128) x 64 elements (32 KiB each, 128 KiB of dynamic shared memory). Thread 0 keeps the
// ring STAGES - 1 k-tiles ahead; everyone waits the stage's full barrier, issues 4 wgmma
// k16 steps per half, waits them, and the block syncs before the slot is reloaded.

constexpr int W_BM = 128, W_BN = 128, W_STAGES = 4;

template <typename T, typename OutT>
__global__ void __launch_bounds__(128) wgmma_gemm(int M, int N, int K, const __grid_constant__ CUtensorMap mapA,
                                                  const __grid_constant__ CUtensorMap mapB, OutT* C) {
  require_multiples_of_8(N, K);
  extern __shared__ __align__(1024) unsigned char smem_raw[];
  // The 128B swizzle pattern repeats every 1024 bytes: stage buffers must start on such a boundary.
  unsigned char* smem = reinterpret_cast<unsigned char*>((reinterpret_cast<unsigned long long>(smem_raw) + 1023) & ~1023ull);
  T* sA = reinterpret_cast<T*>(smem);
  T* sB = sA + W_STAGES * W_BM * BK;
  unsigned long long* full = reinterpret_cast<unsigned long long*>(sB + W_STAGES * W_BN * BK);

  const int row0 = blockIdx.y * W_BM, col0 = blockIdx.x * W_BN;
  const int k_tiles = (K + BK - 1) / BK;
  constexpr unsigned STAGE_BYTES = (W_BM + W_BN) * BK * sizeof(T);

  if (threadIdx.x == 0) {
    for (int s = 0; s < W_STAGES; ++s) bar_init(&full[s], 1);
    asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
  }
  __syncthreads();
  auto issue = [&](int kt) {
    const int s = kt % W_STAGES;
    bar_expect_bytes(&full[s], STAGE_BYTES);
    tma_load(sA + s * W_BM * BK, &mapA, &full[s], kt * BK, row0);
    tma_load(sB + s * W_BN * BK, &mapB, &full[s], kt * BK, col0);
  };
  if (threadIdx.x == 0) {
    for (int kt = 0; kt < W_STAGES - 1 && kt < k_tiles; ++kt) issue(kt);
  }

  float d[2][W_BN / 16][8];
  zero(d[0]);
  zero(d[1]);
  for (int kt = 0; kt < k_tiles; ++kt) {
    if (threadIdx.x == 0 && kt + W_STAGES - 1 < k_tiles) issue(kt + W_STAGES - 1);
    const int s = kt % W_STAGES;
    bar_wait(&full[s], (kt / W_STAGES) & 1);
    wgmma_fence();
#pragma unroll
    for (int half = 0; half < 2; ++half) {
#pragma unroll
      for (int k16 = 0; k16 < BK / 16; ++k16) {
        wgmma_n128<1>(d[half], sA + s * W_BM * BK + half * 64 * BK + k16 * 16, sB + s * W_BN * BK + k16 * 16);
      }
    }
    wgmma_commit();
    wgmma_wait_all();
    // Every warp is done reading stage s before thread 0 refills it (next iteration's issue).
    __syncthreads();
  }
  store_tile(d[0], C, M, N, row0, col0);
  store_tile(d[1], C, M, N, row0 + 64, col0);
}

// ---------------------------------------------------------------------------------------------
// Rungs: warp-specialized producer/consumer (CLUSTER_M = 1), with clusters and multicast
// (CLUSTER_M = 2), persistent (grid = the SMs, rounded down to the cluster's multiple).
//
// Block tile 128 x 256: consumer warpgroup c computes rows 64c .. 64c + 63 with wgmma m64n256k16
// (128 f32 accumulators a thread). Tiles are numbered in a grouped order (GROUP super-rows of
// 128 * CLUSTER_M rows walked column by column) so that blocks running together share A's and
// B's k-tiles in L2; cluster q takes tiles q, q + clusters, q + 2 * clusters, ...

constexpr int S_BM = 128, S_BN = 256, S_STAGES = 4, S_CONSUMERS = 2, GROUP = 8;

struct TileOrder {
  int super_rows, cols;  // tiles of (S_BM * CLUSTER_M) x S_BN
  __device__ __forceinline__ void at(int t, int& super_row, int& col) const {
    const int per_group = GROUP * cols;
    const int group = t / per_group;
    const int first = group * GROUP;
    const int rows_here = min(GROUP, super_rows - first);
    const int in_group = t % per_group;
    super_row = first + in_group % rows_here;
    col = in_group / rows_here;
  }
};

// A consumer warpgroup's arrival on a slot's empty barrier: thread r arrives on block r's
// (the multicasts into that slot came from other blocks of the cluster, whose producers wait
// for every block's consumers before they write it again).
template <int CLUSTER_SIZE>
__device__ __forceinline__ void free_slot(unsigned long long* empty, int t) {
  if (CLUSTER_SIZE == 1) {
    if (t == 0) bar_arrive(empty);
  } else if (t < CLUSTER_SIZE) {
    bar_arrive_cluster(empty, t);
  }
}

// Two neighbouring outputs rounded once and packed in 32 bits (x in the low half).
template <typename OutT>
__device__ __forceinline__ unsigned pack_pair(float x, float y);
template <>
__device__ __forceinline__ unsigned pack_pair<__nv_bfloat16>(float x, float y) {
  const __nv_bfloat162 v = __floats2bfloat162_rn(x, y);
  return *reinterpret_cast<const unsigned*>(&v);
}
template <>
__device__ __forceinline__ unsigned pack_pair<__half>(float x, float y) {
  const __half2 v = __floats2half2_rn(x, y);
  return *reinterpret_cast<const unsigned*>(&v);
}

// The epilogue through shared memory and TMA (2-byte outputs): a consumer writes its 64 x 256
// tile as four 64 x 64 boxes, each 64 rows of 128 bytes with the 128B swizzle (16-byte chunk c of
// row r at chunk c ^ (r % 8): a warp's 8 rows x 16 bytes land on 32 different banks), then one
// thread stores them with cp.async.bulk.tensor (clipped at C's edges) while the warpgroup goes on
// to the next tile's k-loop. Before writing the buffer again that thread waits for the previous
// stores to have read it.
// STMATRIX: the same layout written with stmatrix.x4 (four 8 x 8 matrices of 16-bit elements a
// warp instruction, one 16-byte row of each from each lane's address): the accumulator fragment of
// 16 columns is exactly the instruction's four matrices, so a thread issues 16 stores a tile
// instead of 64, and each matrix's 8 rows land on 8 different 16-byte chunks (no bank conflicts).
template <typename OutT, bool STMATRIX = false>
__device__ __forceinline__ void store_tile_tma(const float (&d)[S_BN / 16][8], OutT* sC, const CUtensorMap* mapC,
                                               int row0, int col0, int named_barrier) {
  static_assert(sizeof(OutT) == 2, "the TMA epilogue is for f16/bf16 outputs");
  const int t = threadIdx.x % 128;
  if (t == 0) asm volatile("cp.async.bulk.wait_group.read 0;\n" ::: "memory");
  asm volatile("bar.sync %0, 128;\n" ::"r"(named_barrier) : "memory");
  unsigned char* base = reinterpret_cast<unsigned char*>(sC);
  if constexpr (STMATRIX) {
    // Lane l gives the address of row l % 8 of matrix l / 8: matrices 0 and 1 are rows 0-7 and
    // 8-15 of the warp's 16 at the first 8 columns, 2 and 3 the same at the next 8.
    const int lane = t % 32, j = lane / 8, i = lane % 8;
    const int row = 16 * (t / 32) + 8 * (j % 2) + i;
    const unsigned row_addr = smem_addr(base) + row * 128;
#pragma unroll
    for (int c16 = 0; c16 < S_BN / 16; ++c16) {
      const int chunk = (c16 % 4) * 2 + j / 2;
      const unsigned addr = row_addr + (c16 / 4) * (64 * 128) + ((chunk ^ i) * 16);
      asm volatile("stmatrix.sync.aligned.m8n8.x4.shared.b16 [%0], {%1, %2, %3, %4};\n" ::"r"(addr),
                   "r"(pack_pair<OutT>(d[c16][0], d[c16][1])), "r"(pack_pair<OutT>(d[c16][2], d[c16][3])),
                   "r"(pack_pair<OutT>(d[c16][4], d[c16][5])), "r"(pack_pair<OutT>(d[c16][6], d[c16][7]))
                   : "memory");
    }
  } else {
    const int r = 16 * (t / 32) + (t % 32) / 4;  // and r + 8
#pragma unroll
    for (int c16 = 0; c16 < S_BN / 16; ++c16) {
#pragma unroll
      for (int half = 0; half < 2; ++half) {
        const int col = 16 * c16 + 8 * half + 2 * (t % 4);  // 0 .. 255 in the tile
        unsigned char* box = base + (col / 64) * (64 * 128);
        const int chunk = (col % 64) / 8, within = (col % 8) * 2;
#pragma unroll
        for (int rr = 0; rr < 2; ++rr) {
          const int row = r + 8 * rr;
          *reinterpret_cast<unsigned*>(box + row * 128 + ((chunk ^ (row % 8)) * 16) + within) =
              pack_pair<OutT>(d[c16][4 * half + 2 * rr], d[c16][4 * half + 2 * rr + 1]);
        }
      }
    }
  }
  // The generic-proxy writes must be visible to the TMA engine (async proxy) before it reads them.
  asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
  asm volatile("bar.sync %0, 128;\n" ::"r"(named_barrier) : "memory");
  if (t == 0) {
#pragma unroll
    for (int b = 0; b < S_BN / 64; ++b) {
      asm volatile(
          "cp.async.bulk.tensor.2d.global.shared::cta.bulk_group [%0, {%1, %2}], [%3];\n" ::"l"(
              reinterpret_cast<unsigned long long>(mapC)),
          "r"(col0 + 64 * b), "r"(row0), "r"(smem_addr(base + b * 64 * 128))
          : "memory");
    }
    asm volatile("cp.async.bulk.commit_group;\n" ::: "memory");
  }
}

// The warp-specialized kernel's body. STAGES: the ring's depth; TMA_STORE: the epilogue through
// shared memory and TMA (mapC) instead of stores from the registers (C).
// KEEP_ONE: a consumer keeps its last k-tile's wgmmas in flight (wgmma.wait_group 1) and frees
// that tile's slot only once the next tile's wgmmas are issued, instead of waiting for all of them
// (wait_group 0) before it frees the slot and waits for the next: CUTLASS's mainloop.
// CLUSTER_N = 2: clusters of CLUSTER_M x CLUSTER_N blocks (rank = rm + CLUSTER_M * rn) on
// neighbouring tiles; A's k-tile is multicast along a row of the cluster (by rn = 0) as B's is
// along a column (by rm = 0): each block loads a 1/CLUSTER_N of A's and 1/CLUSTER_M of B's bytes
// from L2.
template <typename T, typename OutT, int CLUSTER_M, int STAGES, bool TMA_STORE, bool KEEP_ONE = false,
          int CLUSTER_N = 1, bool STMATRIX = false>
__device__ __forceinline__ void ws_body(int M, int N, int K, const CUtensorMap* mapA, const CUtensorMap* mapB,
                                        const CUtensorMap* mapC, OutT* C) {
  require_multiples_of_8(N, K);
  extern __shared__ __align__(1024) unsigned char smem_raw[];
  unsigned char* smem = reinterpret_cast<unsigned char*>((reinterpret_cast<unsigned long long>(smem_raw) + 1023) & ~1023ull);
  T* sA = reinterpret_cast<T*>(smem);
  T* sB = sA + STAGES * S_BM * BK;
  // TMA_STORE: each consumer's 64 x 256 output tile (32 KiB), after the stages.
  OutT* sC = reinterpret_cast<OutT*>(sB + STAGES * S_BN * BK);
  unsigned long long* full =
      reinterpret_cast<unsigned long long*>(reinterpret_cast<unsigned char*>(sC) + (TMA_STORE ? S_CONSUMERS * 64 * S_BN * sizeof(OutT) : 0));
  unsigned long long* empty = full + STAGES;

  constexpr int CLUSTER = CLUSTER_M * CLUSTER_N;
  unsigned rank = 0;  // this block's rank in its cluster
  if (CLUSTER > 1) asm volatile("mov.u32 %0, %%cluster_ctarank;\n" : "=r"(rank));
  const int rm = rank % CLUSTER_M, rn = rank / CLUSTER_M;
  const int cluster = blockIdx.x / CLUSTER, clusters = gridDim.x / CLUSTER;
  const TileOrder order{(M + S_BM * CLUSTER_M - 1) / (S_BM * CLUSTER_M), (N + S_BN * CLUSTER_N - 1) / (S_BN * CLUSTER_N)};
  const int tiles = order.super_rows * order.cols;
  const int k_tiles = (K + BK - 1) / BK;

  if (threadIdx.x == 0) {
    for (int s = 0; s < STAGES; ++s) {
      bar_init(&full[s], 1);
      // Every consumer of every block of the cluster frees a slot: the multicasts write it in all.
      bar_init(&empty[s], S_CONSUMERS * CLUSTER);
    }
    asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
  }
  cluster_sync();

  const int wg = threadIdx.x / 128, t = threadIdx.x % 128;
  if (wg == 0) {
    // Producer: one thread issues every copy; the warpgroup keeps 24 registers.
    regs_dealloc<24>();
    if (t == 0) {
      int slot = 0;
      unsigned phase = 0;
      for (int tile = cluster; tile < tiles; tile += clusters) {
        int super_row, col;
        order.at(tile, super_row, col);
        const int row0 = (super_row * CLUSTER_M + rm) * S_BM, col0 = (col * CLUSTER_N + rn) * S_BN;
        for (int kt = 0; kt < k_tiles; ++kt) {
          bar_wait(&empty[slot], phase);
          bar_expect_bytes(&full[slot], (S_BM + S_BN) * BK * sizeof(T));
          if (CLUSTER_N == 1) {
            tma_load(sA + slot * S_BM * BK, mapA, &full[slot], kt * BK, row0);
          } else if (rn == 0) {
            // The blocks rm, rm + CLUSTER_M, ...: this row of the cluster.
            unsigned short row_mask = 0;
            for (int j = 0; j < CLUSTER_N; ++j) row_mask |= (unsigned short)(1u << (rm + j * CLUSTER_M));
            tma_load_multicast(sA + slot * S_BM * BK, mapA, &full[slot], kt * BK, row0, row_mask);
          }
          if (CLUSTER_M == 1) {
            tma_load(sB + slot * S_BN * BK, mapB, &full[slot], kt * BK, col0);
          } else if (rm == 0) {
            tma_load_multicast(sB + slot * S_BN * BK, mapB, &full[slot], kt * BK, col0,
                               (unsigned short)(((1u << CLUSTER_M) - 1) << (rn * CLUSTER_M)));
          }
          if (++slot == STAGES) {
            slot = 0;
            phase ^= 1;
          }
        }
      }
    }
  } else {
    regs_alloc<240>();
    const int c = wg - 1;
    // Every slot starts empty: its first phase completes with one arrival per consumer per block.
    for (int s = 0; s < STAGES; ++s) free_slot<CLUSTER>(&empty[s], t);
    int slot = 0;
    unsigned phase = 0;
    float d[S_BN / 16][8];
    for (int tile = cluster; tile < tiles; tile += clusters) {
      int super_row, col;
      order.at(tile, super_row, col);
      const int row0 = (super_row * CLUSTER_M + rm) * S_BM, col0 = (col * CLUSTER_N + rn) * S_BN;
      zero(d);
      for (int kt = 0; kt < k_tiles; ++kt) {
        bar_wait(&full[slot], phase);
        wgmma_fence();
#pragma unroll
        for (int k16 = 0; k16 < BK / 16; ++k16) {
          wgmma_n256<1>(d, sA + slot * S_BM * BK + c * 64 * BK + k16 * 16, sB + slot * S_BN * BK + k16 * 16);
        }
        wgmma_commit();
        if constexpr (KEEP_ONE) {
          asm volatile("wgmma.wait_group.sync.aligned 1;\n" ::: "memory");
          if (kt > 0) free_slot<CLUSTER>(&empty[slot == 0 ? STAGES - 1 : slot - 1], t);
        } else {
          wgmma_wait_all();
          free_slot<CLUSTER>(&empty[slot], t);
        }
        if (++slot == STAGES) {
          slot = 0;
          phase ^= 1;
        }
      }
      if constexpr (KEEP_ONE) {
        wgmma_wait_all();
        free_slot<CLUSTER>(&empty[slot == 0 ? STAGES - 1 : slot - 1], t);
      }
      if constexpr (TMA_STORE) {
        store_tile_tma<OutT, STMATRIX>(d, sC + c * 64 * S_BN, mapC, row0 + 64 * c, col0, 2 + c);
      } else {
        store_tile(d, C, M, N, row0 + 64 * c, col0);
      }
    }
    if constexpr (TMA_STORE) {
      // Shared memory must outlive the stores' reads of it.
      if (t == 0) asm volatile("cp.async.bulk.wait_group 0;\n" ::: "memory");
    }
  }
  // No block leaves while another of its cluster may still arrive on its barriers.
  cluster_sync();
}


template <typename T, typename OutT, int CLUSTER_M, int CLUSTER_N = 1>
__global__ void __launch_bounds__(128 * (S_CONSUMERS + 1), 1)
    ws_gemm(int M, int N, int K, const __grid_constant__ CUtensorMap mapA, const __grid_constant__ CUtensorMap mapB,
            OutT* C) {
  ws_body<T, OutT, CLUSTER_M, S_STAGES, false, false, CLUSTER_N>(M, N, K, &mapA, &mapB, nullptr, C);
}

// The same with the TMA epilogue (f16/bf16 C through mapC: 64 x 64 boxes, 128B swizzle) and 3
// stages (3 x 48 KiB + 64 KiB of output tiles).
template <typename T, typename OutT, int CLUSTER_M>
__global__ void __launch_bounds__(128 * (S_CONSUMERS + 1), 1)
    ws_gemm_tma_store(int M, int N, int K, const __grid_constant__ CUtensorMap mapA,
                      const __grid_constant__ CUtensorMap mapB, const __grid_constant__ CUtensorMap mapC) {
  ws_body<T, OutT, CLUSTER_M, 3, true>(M, N, K, &mapA, &mapB, &mapC, nullptr);
}

// The TMA-epilogue kernel with the last k-tile's wgmmas kept in flight (KEEP_ONE).
template <typename T, typename OutT, int CLUSTER_M, int CLUSTER_N = 1>
__global__ void __launch_bounds__(128 * (S_CONSUMERS + 1), 1)
    ws_gemm_tma_store_keep1(int M, int N, int K, const __grid_constant__ CUtensorMap mapA,
                            const __grid_constant__ CUtensorMap mapB, const __grid_constant__ CUtensorMap mapC) {
  ws_body<T, OutT, CLUSTER_M, 3, true, true, CLUSTER_N>(M, N, K, &mapA, &mapB, &mapC, nullptr);
}

// The keep-one TMA-store kernel with the epilogue written by stmatrix (fast.cu kernel 12's).
template <typename T, typename OutT, int CLUSTER_M, int CLUSTER_N = 1>
__global__ void __launch_bounds__(128 * (S_CONSUMERS + 1), 1)
    ws_gemm_stmatrix(int M, int N, int K, const __grid_constant__ CUtensorMap mapA,
                     const __grid_constant__ CUtensorMap mapB, const __grid_constant__ CUtensorMap mapC) {
  ws_body<T, OutT, CLUSTER_M, 3, true, true, CLUSTER_N, true>(M, N, K, &mapA, &mapB, &mapC, nullptr);
}

}  // namespace tgh
