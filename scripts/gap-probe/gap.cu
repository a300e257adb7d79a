// Why do some 20-70 us kernels time 4-10% shorter in gpu-lab's cold graphs than under ncu
// (reports/gpus-h200x2/suite-all, ncu-agreement-*.txt), while most agree within 1%? One kernel
// that disagrees (reduction `best`, GRID 1024 and 2048, 2^24+ ints) and one that agrees (an
// element-wise copy of the same bytes), each timed after gpu-lab's L2 eviction:
//   graph      gpu-lab's graph: n x (evict, event, kernel, event, event, event); raw = between a
//              kernel's events, net = raw less the empty pair after it (what gpu-lab reports)
//   events     one launch between events after an eviction, back to back
//   idle-1ms   the host sleeps 1 ms (the GPU idles), then the eviction and the timed launch, as
//              ncu idles between replays and flushes before each
//   idle-20ms  the same after 20 ms
// `gap ncu` launches each kernel 20 times after an eviction, for ncu to time (run.sh).
#include <cuda_runtime.h>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#define BLOCK 512
#include "../../kernels/reduction/reduction.cu"

extern "C" __global__ void copy_ints(const int* __restrict__ x, int* __restrict__ y, long long n)
{
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        y[i] = x[i];
}

// gpu-lab's eviction kernel (src/runner/l2_flush.rs, EVICT_KERNEL): a clean read of twice the L2.
extern "C" __global__ void evict_l2(const float4* __restrict__ buffer, unsigned long long n4, float* sink)
{
    float acc = 0.f;
    for (unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x; i < n4;
         i += (unsigned long long)gridDim.x * blockDim.x) { float4 v = buffer[i]; acc += v.x + v.y + v.z + v.w; }
    if (acc == -1.f) *sink = acc;
}

#define CK(x) do { cudaError_t err_ = (x); if (err_ != cudaSuccess) { fprintf(stderr, "%s: %s\n", #x, cudaGetErrorString(err_)); exit(1); } } while (0)

struct Setup {
    int *x, *y, *partials;
    float4* flush;
    unsigned long long n4;
    int sms;
    long long n;
};

static void evict(const Setup& s, cudaStream_t st)
{
    evict_l2<<<s.sms * 8, 256, 0, st>>>(s.flush, s.n4, reinterpret_cast<float*>(s.flush + s.n4));
}

// kind 0: reduce_best with `grid` blocks; kind 1: copy_ints.
static void launch(const Setup& s, int kind, int grid, cudaStream_t st)
{
    if (kind == 0)
        reduce_best<<<grid, BLOCK, 0, st>>>(s.x, s.partials, (int)s.n);
    else
        copy_ints<<<(unsigned)((s.n + 255) / 256), 256, 0, st>>>(s.x, s.y, s.n);
}

static double median(std::vector<double> v)
{
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
}

int main(int argc, char** argv)
{
    std::string mode = argc > 1 ? argv[1] : "time";
    Setup s;
    s.n = argc > 2 ? atoll(argv[2]) : 20000003;
    int l2;
    CK(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, 0));
    CK(cudaDeviceGetAttribute(&s.sms, cudaDevAttrMultiProcessorCount, 0));
    // gpu-lab's order: the job's buffers, then the flush buffer.
    CK(cudaMalloc(&s.x, s.n * 4));
    CK(cudaMalloc(&s.y, s.n * 4));
    CK(cudaMalloc(&s.partials, 4096 * 4));
    std::vector<int> host(s.n);
    srand(1);
    for (auto& v : host) v = rand() % 201 - 100;
    CK(cudaMemcpy(s.x, host.data(), s.n * 4, cudaMemcpyHostToDevice));
    s.n4 = 2ull * l2 / 16;
    CK(cudaMalloc(&s.flush, 2ull * l2 + 16));
    CK(cudaMemset(s.flush, 0, 2ull * l2 + 16));
    CK(cudaDeviceSynchronize());
    struct K { const char* name; int kind, grid; } kernels[] = {{"best[GRID=1024]", 0, 1024}, {"best[GRID=2048]", 0, 2048}, {"copy_ints", 1, 0}};
    if (mode == "ncu") {
        for (auto& k : kernels)
            for (int r = 0; r < 20; ++r) { evict(s, 0); launch(s, k.kind, k.grid, 0); }
        CK(cudaDeviceSynchronize());
        return 0;
    }
    cudaStream_t st;
    CK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
    printf("n = %lld ints (%.1f MB), L2 %d bytes, %d SMs\n", s.n, s.n * 4 / 1e6, l2, s.sms);
    for (auto& k : kernels) {
        // Graphs as gpu-lab builds them.
        const int n = 10;
        std::vector<cudaEvent_t> ev(4 * n);
        for (auto& e : ev) CK(cudaEventCreate(&e));
        cudaGraph_t g;
        CK(cudaStreamBeginCapture(st, cudaStreamCaptureModeThreadLocal));
        for (int i = 0; i < n; ++i) {
            evict(s, st);
            CK(cudaEventRecordWithFlags(ev[4 * i], st, cudaEventRecordExternal));
            launch(s, k.kind, k.grid, st);
            CK(cudaEventRecordWithFlags(ev[4 * i + 1], st, cudaEventRecordExternal));
            CK(cudaEventRecordWithFlags(ev[4 * i + 2], st, cudaEventRecordExternal));
            CK(cudaEventRecordWithFlags(ev[4 * i + 3], st, cudaEventRecordExternal));
        }
        CK(cudaStreamEndCapture(st, &g));
        cudaGraphExec_t ge;
        CK(cudaGraphInstantiate(&ge, g, 0));
        std::vector<double> raw, net;
        for (int rep = 0; rep < 32; ++rep) {
            CK(cudaGraphLaunch(ge, st));
            CK(cudaStreamSynchronize(st));
            if (rep < 2) continue;
            double r = 0, e = 0;
            for (int i = 0; i < n; ++i) {
                float a, b;
                CK(cudaEventElapsedTime(&a, ev[4 * i], ev[4 * i + 1]));
                CK(cudaEventElapsedTime(&b, ev[4 * i + 2], ev[4 * i + 3]));
                r += a;
                e += b;
            }
            raw.push_back(r / n);
            net.push_back((r - e) / n);
        }
        printf("%-16s graph      raw %8.2f us  net %8.2f us\n", k.name, median(raw) * 1e3, median(net) * 1e3);
        CK(cudaGraphExecDestroy(ge));
        CK(cudaGraphDestroy(g));
        // Single launches between events, after an eviction, with the GPU idle before or not.
        for (int idle_ms : {0, 1, 20}) {
            std::vector<double> t;
            for (int rep = 0; rep < 40; ++rep) {
                if (idle_ms) std::this_thread::sleep_for(std::chrono::milliseconds(idle_ms));
                evict(s, st);
                CK(cudaEventRecord(ev[0], st));
                launch(s, k.kind, k.grid, st);
                CK(cudaEventRecord(ev[1], st));
                CK(cudaEventSynchronize(ev[1]));
                float a;
                CK(cudaEventElapsedTime(&a, ev[0], ev[1]));
                if (rep >= 3) t.push_back(a);
            }
            printf("%-16s %-10s %8.2f us\n", k.name, idle_ms ? (idle_ms == 1 ? "idle-1ms" : "idle-20ms") : "events", median(t) * 1e3);
        }
        for (auto& e : ev) CK(cudaEventDestroy(e));
    }
    CK(cudaGetLastError());
    return 0;
}
