//! Shared-memory access patterns of seed 002 §49-51 (row/column write and read, static and dynamic tiles, padding), each moving a whole float32 matrix so it can be checked and timed.
//
// The seeds' kernels wrote thread indices into one 32x32 tile and back out (one block, nothing
// to check, nothing to time). Here every block moves one BDIM x BDIM tile of a matrix through
// shared memory, with the seed's access pattern, and writes it back coalesced:
//   * row write / row read and column write / column read leave the tile as it was: a copy;
//   * row write / column read and column write / row read transpose the tile: written at the
//     transposed block position, the whole matrix is transposed.
// Conventions are transpose.cu's: `in` is ny rows x nx columns, `out` is its nx x ny transpose
// (the copies write out[y * nx + x]); every global access is bounds-checked; no barrier sits in
// a branch; nothing is #included.

#ifndef BDIM
#define BDIM 32
#endif
// Extra columns of the dynamic tile's rows (seed 002 §51 IPAD).
#ifndef IPAD
#define IPAD 0
#endif

// seed 002 §49 setRowReadRow: tile[ty][tx] both ways; a warp touches 32 consecutive words, 1 transaction.
extern "C" __global__ void smem_row_row(const float* __restrict__ in, float* __restrict__ out, int nx, int ny)
{
    __shared__ float tile[BDIM][BDIM];
    int x = blockIdx.x * BDIM + threadIdx.x, y = blockIdx.y * BDIM + threadIdx.y;
    bool inside = x < nx && y < ny;
    if (inside)
        tile[threadIdx.y][threadIdx.x] = in[(size_t)y * nx + x];
    __syncthreads();
    if (inside)
        out[(size_t)y * nx + x] = tile[threadIdx.y][threadIdx.x];
}

// The column-major counterpart of smem_row_row: tile[tx][ty] both ways; a warp's 32 words are 32
// words apart, all in one bank: 32 transactions per store and per load request.
extern "C" __global__ void smem_col_col(const float* __restrict__ in, float* __restrict__ out, int nx, int ny)
{
    __shared__ float tile[BDIM][BDIM];
    int x = blockIdx.x * BDIM + threadIdx.x, y = blockIdx.y * BDIM + threadIdx.y;
    bool inside = x < nx && y < ny;
    if (inside)
        tile[threadIdx.x][threadIdx.y] = in[(size_t)y * nx + x];
    __syncthreads();
    if (inside)
        out[(size_t)y * nx + x] = tile[threadIdx.x][threadIdx.y];
}

// seed 002 §49 setColReadRow: the column-major store carries the conflicts (32 per store request),
// the row read is conflict-free. The tile holds the transpose: tile[c][r] = in[row r][column c].
extern "C" __global__ void smem_col_row(const float* __restrict__ in, float* __restrict__ out, int nx, int ny)
{
    __shared__ float tile[BDIM][BDIM];
    int x = blockIdx.x * BDIM + threadIdx.x, y = blockIdx.y * BDIM + threadIdx.y;
    if (x < nx && y < ny)
        tile[threadIdx.x][threadIdx.y] = in[(size_t)y * nx + x];
    __syncthreads();
    int ox = blockIdx.y * BDIM + threadIdx.x;  // output column = input row (< ny)
    int oy = blockIdx.x * BDIM + threadIdx.y;  // output row = input column (< nx)
    // tile[ty][tx] = in[row ox][column oy], stored exactly when both are in range.
    if (ox < ny && oy < nx)
        out[(size_t)oy * ny + ox] = tile[threadIdx.y][threadIdx.x];
}

// seed 002 §50 setRowReadColDyn and §51 setRowReadColDynPad: a dynamically sized tile
// (extern __shared__, shared_bytes = BDIM * (BDIM + IPAD) * 4) addressed through 1-d row and
// column indices. IPAD = 0: 32 transactions per load request; IPAD = 1: 1.
extern "C" __global__ void smem_dyn_row_col(const float* __restrict__ in, float* __restrict__ out, int nx, int ny)
{
    extern __shared__ float dyn_tile[];
    int row_index = threadIdx.y * (BDIM + IPAD) + threadIdx.x;
    int col_index = threadIdx.x * (BDIM + IPAD) + threadIdx.y;
    int x = blockIdx.x * BDIM + threadIdx.x, y = blockIdx.y * BDIM + threadIdx.y;
    if (x < nx && y < ny)
        dyn_tile[row_index] = in[(size_t)y * nx + x];
    __syncthreads();
    int ox = blockIdx.y * BDIM + threadIdx.x;
    int oy = blockIdx.x * BDIM + threadIdx.y;
    if (ox < ny && oy < nx)
        out[(size_t)oy * ny + ox] = dyn_tile[col_index];
}
