// Host emulation of the CUDA subset the matmul SIMT kernels use (kernels/matmul/simt.cu): one std::thread
// per CUDA thread, a std::barrier for __syncthreads, __shared__ arrays as statics (one block at a time).
#include <algorithm>
#include <barrier>
#include <cmath>
#include <cstdio>
#include <thread>
#include <vector>
#include <functional>
using std::min;
struct dim3 { int x = 0, y = 0, z = 0; };
struct float4 { float x, y, z, w; } __attribute__((aligned(16)));
struct int2 { int x, y; };
inline float4 make_float4(float a, float b, float c, float d) { return {a, b, c, d}; }
inline int2 make_int2(int a, int b) { return {a, b}; }
thread_local dim3 threadIdx, blockIdx;
dim3 gridDim, blockDim;
std::barrier<>* g_bar;
inline void __syncthreads() { g_bar->arrive_and_wait(); }
#define __global__
#define __device__
#define __forceinline__ inline
#define __noinline__ __attribute__((noinline))
#define __shared__ static
#define __align__(n) __attribute__((aligned(n)))
#define __launch_bounds__(...)
inline unsigned __cvta_generic_to_shared(const void*) { return 0; }
