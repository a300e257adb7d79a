//! Dynamic parallelism as a standalone nvcc program (seed 002 §32-33), for `gpu-lab ncu` to profile: the kernels of kernels/dynamic-parallelism, each run, checked against the CPU and timed with events.
// Build (from the repository root; -rdc=true and the device runtime are required for device-side launches):
//   nvcc -O3 -arch=native -rdc=true -o dp examples/cuda/dynamic_parallelism.cu -lcudadevrt
// Run:      ./dp [LOG2_N] [--print]      (default LOG2_N = 24; --print also runs §32's printing example)
// Profile:  gpu-lab ncu -- ./dp 20       (one line per kernel the host launches)
// Exit code: 0 when every sum and copy is right, 1 on a CUDA error, 2 when a result is wrong.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

// The suite's kernels, unchanged: one source for the suite and this program.
#include "../../kernels/dynamic-parallelism/dynpar.cu"

// seed 002 §32's example: thread 0 of each grid launches a child of half as many threads, down to
// one; every thread prints its depth. The seed's version did not wait for anything either.
__global__ void dynamic_parallelism_check(int size, int depth)
{
    printf(" Depth : %d - tid : %d \n", depth, threadIdx.x);
    if (size == 1)
        return;
    if (threadIdx.x == 0) {
        dynamic_parallelism_check<<<1, size / 2, 0, cudaStreamFireAndForget>>>(size / 2, depth + 1);
        LAUNCH_CHECK();
    }
}

#define CUDA(call)                                                                                  \
    do {                                                                                            \
        cudaError_t e_ = (call);                                                                    \
        if (e_ != cudaSuccess) {                                                                    \
            fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call, cudaGetErrorString(e_)); \
            exit(1);                                                                                \
        }                                                                                           \
    } while (0)

struct Timer {
    cudaEvent_t start, stop;
    Timer() { CUDA(cudaEventCreate(&start)); CUDA(cudaEventCreate(&stop)); }
    void begin() { CUDA(cudaEventRecord(start)); }
    float end_ms()
    {
        CUDA(cudaEventRecord(stop));
        CUDA(cudaEventSynchronize(stop));
        float ms = 0;
        CUDA(cudaEventElapsedTime(&ms, start, stop));
        return ms;
    }
};

static int failures = 0;

static void report(const char* name, long long launches, float ms, long long got, long long want)
{
    const bool ok = got == want;
    failures += !ok;
    printf("%-22s %10lld %10.3f  %s", name, launches, ms, ok ? "correct" : "WRONG");
    if (!ok)
        printf(" (got %lld, want %lld)", got, want);
    printf("\n");
}

int main(int argc, char** argv)
{
    int log2n = 24;
    bool print = false;
    for (int i = 1; i < argc; ++i) {
        if (!strcmp(argv[i], "--print"))
            print = true;
        else
            log2n = atoi(argv[i]);
    }
    if (log2n < 10 || log2n > 28) {
        fprintf(stderr, "LOG2_N must be 10 to 28\n");
        return 1;
    }
    const int n = 1 << log2n, block = 512, blocks = n / block, grid = 1024;
    // Every parent block of copy_parent may have a child waiting at once, and every block of
    // recursive_seed a chain of nested launches (9 levels from 512): at 2048 slots (= the blocks at
    // 2^20) the seed's reduction failed with an unspecified launch failure on an H100.
    CUDA(cudaDeviceSetLimit(cudaLimitDevRuntimePendingLaunchCount, 16 * blocks > 2048 ? 16 * blocks : 2048));
    if (print) {
        dynamic_parallelism_check<<<1, 16>>>(16, 0);
        CUDA(cudaGetLastError());
        CUDA(cudaDeviceSynchronize());
    }

    std::vector<int> x(n);
    unsigned s = 12345u;
    long long want = 0; // int32 sums wrap on the GPU: compare as int
    for (int i = 0; i < n; ++i) {
        s = s * 1664525u + 1013904223u;
        x[i] = (int)(s >> 16) % 2000 - 1000;
        want += x[i];
    }
    const int want32 = (int)(unsigned)want;
    int *dx, *dy, *dpartials, *dtotal;
    CUDA(cudaMalloc(&dx, n * sizeof(int)));
    CUDA(cudaMalloc(&dy, n * sizeof(int)));
    CUDA(cudaMalloc(&dpartials, blocks * sizeof(int)));
    CUDA(cudaMalloc(&dtotal, sizeof(int)));
    std::vector<int> partials(blocks), y(n);
    Timer t;
    auto upload = [&] { CUDA(cudaMemcpy(dx, x.data(), n * sizeof(int), cudaMemcpyHostToDevice)); };
    auto partial_sum = [&](int count) {
        CUDA(cudaMemcpy(partials.data(), dpartials, count * sizeof(int), cudaMemcpyDeviceToHost));
        unsigned sum = 0;
        for (int i = 0; i < count; ++i)
            sum += (unsigned)partials[i];
        return (long long)(int)sum;
    };
    // Each kernel runs once untimed (module loading is lazy: a first launch also loads), then
    // once more between events, after `prepare` (an upload for the in-place reductions).
    auto timed = [&](auto prepare, auto run) {
        prepare();
        run();
        CUDA(cudaGetLastError());
        CUDA(cudaDeviceSynchronize());
        prepare();
        t.begin();
        run();
        const float ms = t.end_ms();
        CUDA(cudaGetLastError());
        return ms;
    };
    auto nothing = [] {};
    auto copied = [&] {
        CUDA(cudaMemcpy(y.data(), dy, n * sizeof(int), cudaMemcpyDeviceToHost));
        return (long long)(memcmp(x.data(), y.data(), n * sizeof(int)) == 0);
    };
    auto read_total = [&] {
        int total = 0;
        CUDA(cudaMemcpy(&total, dtotal, sizeof(int), cudaMemcpyDeviceToHost));
        return (long long)total;
    };
    printf("N = 2^%d = %d ints; times in ms (CUDA events around the second run of each)\n", log2n, n);
    printf("%-22s %10s %10s  %s\n", "kernel", "launches", "ms", "check");

    // (1) a copy: one flat grid, then a child grid per parent block ("launches": device-side ones)
    upload();
    auto poison_y = [&] { CUDA(cudaMemset(dy, 0xff, n * sizeof(int))); };
    float ms = timed(poison_y, [&] { copy_slice<<<(n + 255) / 256, 256>>>(dx, dy, n); });
    report("copy_flat", 0, ms, copied(), 1);
    for (int children : { 32, 1024, blocks }) {
        const long long chunk = ((long long)n + children - 1) / children;
        ms = timed(poison_y, [&] { copy_parent<<<children, 32>>>(dx, dy, n, chunk); });
        char name[64];
        snprintf(name, sizeof name, "copy_children[%d]", children);
        report(name, children, ms, copied(), 1);
    }

    // (2) the seed's recursive reductions, in place: the input is uploaded again before each run
    ms = timed(upload, [&] { reduce_recursive_seed<<<blocks, block>>>(dx, dpartials, block); });
    report("recursive_seed", 8LL * blocks, ms, partial_sum(blocks), want32);
    ms = timed(upload, [&] { reduce_recursive_nested<<<blocks, block / 2>>>(dx, dpartials, block / 2, block); });
    report("recursive_nested", 8, ms, partial_sum(blocks), want32);

    // (3) past the seed
    ms = timed(upload, [&] { reduce_recursive_cutoff<<<blocks, block / 2>>>(dx, dpartials, block, block); });
    report("recursive_cutoff", 3, ms, partial_sum(blocks), want32);
    upload();
    ms = timed(nothing, [&] { reduce_grid<<<grid, BLOCK>>>(dx, dpartials, dtotal, n, 1); });
    report("two_pass_tail", 1, ms, read_total(), want32);
    ms = timed(nothing, [&] {
        reduce_grid<<<grid, BLOCK>>>(dx, dpartials, dtotal, n, 0);
        sum_partials<<<1, 1024>>>(dpartials, dtotal, grid);
    });
    report("two_pass_host", 0, ms, read_total(), want32);

    CUDA(cudaFree(dx));
    CUDA(cudaFree(dy));
    CUDA(cudaFree(dpartials));
    CUDA(cudaFree(dtotal));
    if (failures)
        fprintf(stderr, "%d result(s) wrong\n", failures);
    return failures ? 2 : 0;
}
