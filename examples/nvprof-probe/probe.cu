//! A small CUDA program in the seeds' style, compiled with nvcc, for `gpu-lab ncu` to profile: row and column copies, and a shared-memory tile transpose read row-wise, column-wise and padded.
// Build: nvcc -O3 -arch=native -o probe probe.cu      Run: ./probe [N] [EXIT_CODE]
#include <cstdio>
#include <cstdlib>
#include <vector>

#define TILE 32

// Each warp reads 32 consecutive floats: 4 sectors per request, nvprof's gld_efficiency 100%.
__global__ void copy_row(const float* in, float* out, int n) {
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x < n && y < n) out[y * n + x] = in[y * n + x];
}

// Each warp reads one float from 32 rows: 32 sectors per request, gld_efficiency 12.5%.
__global__ void copy_column(const float* in, float* out, int n) {
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x < n && y < n) out[x * n + y] = in[x * n + y];
}

// Transpose through a 32x32 tile. ROW reads the tile along rows (conflict-free), COLUMN down
// columns (32-way bank conflicts: 32 shared transactions per request), PAD = 1 adds a column
// that puts each row in another bank (1 transaction per request again).
template <bool COLUMN, int PAD>
__global__ void transpose_tile(const float* in, float* out, int n) {
    __shared__ float tile[TILE][TILE + PAD];
    int x = blockIdx.x * TILE + threadIdx.x;
    int y = blockIdx.y * TILE + threadIdx.y;
    if (x < n && y < n) tile[threadIdx.y][threadIdx.x] = in[y * n + x];
    __syncthreads();
    if (COLUMN) {
        x = blockIdx.y * TILE + threadIdx.x;
        y = blockIdx.x * TILE + threadIdx.y;
        if (x < n && y < n) out[y * n + x] = tile[threadIdx.x][threadIdx.y];
    } else {
        // Row read: writes the tile back untransposed, the conflict-free baseline.
        if (x < n && y < n) out[y * n + x] = tile[threadIdx.y][threadIdx.x];
    }
}

static void check(cudaError_t e, const char* what) {
    if (e != cudaSuccess) {
        fprintf(stderr, "probe: %s: %s\n", what, cudaGetErrorString(e));
        exit(2);
    }
}

int main(int argc, char** argv) {
    int n = argc > 1 ? atoi(argv[1]) : 2048;
    int exit_code = argc > 2 ? atoi(argv[2]) : 0;
    size_t bytes = (size_t)n * n * sizeof(float);
    std::vector<float> host(n * (size_t)n), back(n * (size_t)n);
    for (size_t i = 0; i < host.size(); i++) host[i] = (float)(i % 1013);
    float *in, *out;
    check(cudaMalloc(&in, bytes), "cudaMalloc");
    check(cudaMalloc(&out, bytes), "cudaMalloc");
    check(cudaMemcpy(in, host.data(), bytes, cudaMemcpyHostToDevice), "copy in");
    dim3 block(TILE, TILE), grid((n + TILE - 1) / TILE, (n + TILE - 1) / TILE);

    int wrong = 0;
    auto verify = [&](const char* name, bool transposed) {
        check(cudaGetLastError(), name);
        check(cudaMemcpy(back.data(), out, bytes, cudaMemcpyDeviceToHost), "copy out");
        for (int y = 0; y < n; y++)
            for (int x = 0; x < n; x++) {
                float want = transposed ? host[(size_t)x * n + y] : host[(size_t)y * n + x];
                if (back[(size_t)y * n + x] != want) { wrong++; printf("%s: wrong at (%d, %d)\n", name, x, y); return; }
            }
    };
    for (int rep = 0; rep < 2; rep++) {
        copy_row<<<grid, block>>>(in, out, n);
        verify("copy_row", false);
    }
    copy_column<<<grid, block>>>(in, out, n);
    verify("copy_column", false);
    transpose_tile<false, 0><<<grid, block>>>(in, out, n);
    verify("tile_row_read", false);
    transpose_tile<true, 0><<<grid, block>>>(in, out, n);
    verify("tile_column_read", true);
    transpose_tile<true, 1><<<grid, block>>>(in, out, n);
    verify("tile_column_read_padded", true);
    printf("probe: n=%d, 6 launches, %s\n", n, wrong ? "WRONG results" : "all results correct");
    cudaFree(in);
    cudaFree(out);
    return wrong ? 1 : exit_code;
}
