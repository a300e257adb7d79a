//! Built-in transpose suite: float32 matrix copies and transposes, from the seeds' naive kernels to a tiled kernel near copy bandwidth.
//
// Conventions every kernel here follows:
//   * `in` is ny rows x nx columns, row-major: in[y * nx + x].
//   * `out` is nx rows x ny columns, row-major: out[x * ny + y] = in[y * nx + x]
//     (the copy kernels write out[y * nx + x] instead).
//   * Every global load and store is bounds-checked, so any nx, ny works: 4000 is not a
//     multiple of 64 or 128, and 2048 rows x 1024 columns is not square (the seeds' code
//     went wrong on both). Linear addresses are computed in size_t.
//   * __syncthreads() is never inside a branch: a thread whose element lies outside the
//     matrix skips its load and store but still reaches every barrier of its block.
//   * NVRTC compiles this file without host headers: nothing is #included.
//   * Several variants compile this same file with different -D values (see suite.toml).
//     Every macro below has an #ifndef default, so each kernel compiles whatever a variant
//     defines; a kernel reads only its own macros, and its launch block must match them.

// ---------------------------------------------------------------------------------------
// Macros (set through `defines` in suite.toml)
// ---------------------------------------------------------------------------------------

// Square tile side = block side (BDIM x BDIM threads) of smem_tile, smem_swizzle,
// shared_block and shared_swizzle_block.
#ifndef BDIM
#define BDIM 32
#endif
// Extra columns of smem_tile's shared tile: 0 gives the column read BDIM-way bank
// conflicts, 1 makes every column fall into 32 different banks.
#ifndef PAD
#define PAD 1
#endif
// transpose_unrolled: TILE x TILE tile moved by a TILE x SIDE block, TILE/SIDE elements
// per thread.
#ifndef TILE
#define TILE 32
#endif
#ifndef SIDE
#define SIDE 8
#endif
// smem_rect*: BDIMX x BDIMY block and tile (seed 002 §54 uses 64 x 8), IPAD extra
// columns of the shared tile.
#ifndef BDIMX
#define BDIMX 64
#endif
#ifndef BDIMY
#define BDIMY 8
#endif
#ifndef IPAD
#define IPAD 2
#endif
// transpose_fast: threads per block (one-dimensional block); 128, 256, 512 or 1024.
#ifndef FAST_THREADS
#define FAST_THREADS 512
#endif

static_assert(TILE % SIDE == 0, "transpose_unrolled needs SIDE to divide TILE");
static_assert(FAST_THREADS % 128 == 0 && FAST_THREADS <= 1024, "transpose_fast needs 128, 256, 512 or 1024 threads");

// ---------------------------------------------------------------------------------------
// Copies: the bound a transpose is measured against (seed 002 §43)
// ---------------------------------------------------------------------------------------

// Row-major copy: a warp reads and writes 32 consecutive floats (4 sectors per request).
extern "C" __global__ void copy_row(const float* __restrict__ in, float* __restrict__ out, int nx, int ny)
{
    int ix = blockIdx.x * blockDim.x + threadIdx.x;
    int iy = blockIdx.y * blockDim.y + threadIdx.y;
    if (ix < nx && iy < ny) {
        size_t i = (size_t)iy * nx + ix;
        out[i] = in[i];
    }
}

// Column-order copy: same elements, but a warp's 32 threads (consecutive ix) touch 32
// addresses ny floats apart, so every load and store request needs 32 sectors.
// (ix, iy) -> ix * ny + iy is a bijection onto [0, nx * ny), so every element is copied once.
extern "C" __global__ void copy_column(const float* __restrict__ in, float* __restrict__ out, int nx, int ny)
{
    int ix = blockIdx.x * blockDim.x + threadIdx.x;
    int iy = blockIdx.y * blockDim.y + threadIdx.y;
    if (ix < nx && iy < ny) {
        size_t i = (size_t)ix * ny + iy;
        out[i] = in[i];
    }
}

// ---------------------------------------------------------------------------------------
// Naive transposes straight from global memory (seed 002 §43-45, seed 001 v1-v2)
// ---------------------------------------------------------------------------------------

// Read a row, write a column: loads coalesced, each store request scatters over 32 rows.
extern "C" __global__ void naive_row(const float* __restrict__ in, float* __restrict__ out, int nx, int ny)
{
    int ix = blockIdx.x * blockDim.x + threadIdx.x;  // input column = output row
    int iy = blockIdx.y * blockDim.y + threadIdx.y;  // input row = output column
    if (ix < nx && iy < ny)
        out[(size_t)ix * ny + iy] = in[(size_t)iy * nx + ix];
}

// Read a column, write a row: threads run fastest along the OUTPUT row, so stores are
// coalesced and loads are strided. ix spans the output columns (ny of them), iy the output
// rows (nx of them); the grid is laid out accordingly (ceil_div(NY, BX) x ceil_div(NX, BY)).
// The seeds wrote out[iy * nx + ix] = in[ix * ny + iy], which is only right when nx == ny.
extern "C" __global__ void naive_column(const float* __restrict__ in, float* __restrict__ out, int nx, int ny)
{
    int ix = blockIdx.x * blockDim.x + threadIdx.x;  // output column = input row, < ny
    int iy = blockIdx.y * blockDim.y + threadIdx.y;  // output row = input column, < nx
    if (ix < ny && iy < nx)
        out[(size_t)iy * ny + ix] = in[(size_t)ix * nx + iy];
}

// naive_row with four elements per thread, blockDim.x apart along the input row: four
// independent loads in flight per thread. Each element has its own bounds check, so the
// last block of a row whose length is not a multiple of 4 * blockDim.x still writes its
// tail (seed 002's version dropped it).
extern "C" __global__ void unroll4_row(const float* __restrict__ in, float* __restrict__ out, int nx, int ny)
{
    int ix = blockIdx.x * blockDim.x * 4 + threadIdx.x;  // first of 4 input columns
    int iy = blockIdx.y * blockDim.y + threadIdx.y;      // input row
    if (iy < ny) {
#pragma unroll
        for (int k = 0; k < 4; ++k) {
            int x = ix + k * (int)blockDim.x;
            if (x < nx)
                out[(size_t)x * ny + iy] = in[(size_t)iy * nx + x];
        }
    }
}

// naive_column with four elements per thread, blockDim.x apart along the output row.
// Grid: ceil_div(NY, 4 * BX) x ceil_div(NX, BY).
extern "C" __global__ void unroll4_col(const float* __restrict__ in, float* __restrict__ out, int nx, int ny)
{
    int ix = blockIdx.x * blockDim.x * 4 + threadIdx.x;  // first of 4 output columns (< ny)
    int iy = blockIdx.y * blockDim.y + threadIdx.y;      // output row (< nx)
    if (iy < nx) {
#pragma unroll
        for (int k = 0; k < 4; ++k) {
            int x = ix + k * (int)blockDim.x;
            if (x < ny)
                out[(size_t)iy * ny + x] = in[(size_t)x * nx + iy];
        }
    }
}

// naive_row with blocks visited in diagonal order, against partition camping (seed 002
// §45). The launch order (linear block id) is remapped so that consecutive blocks touch
// different column strips. This mapping is a bijection for any grid, square or not:
// bid -> (bid / gridDim.y, bid % gridDim.y) is one, and shifting x by y modulo gridDim.x
// is one for each y. (Seed 002 multiplied by blockIdx.x where blockDim.x was meant.)
extern "C" __global__ void diagonal_row(const float* __restrict__ in, float* __restrict__ out, int nx, int ny)
{
    unsigned int bid = blockIdx.x + gridDim.x * blockIdx.y;
    unsigned int blk_y = bid % gridDim.y;
    unsigned int blk_x = (bid / gridDim.y + blk_y) % gridDim.x;
    int ix = blk_x * blockDim.x + threadIdx.x;
    int iy = blk_y * blockDim.y + threadIdx.y;
    if (ix < nx && iy < ny)
        out[(size_t)ix * ny + iy] = in[(size_t)iy * nx + ix];
}

// ---------------------------------------------------------------------------------------
// Square shared-memory tiles, one element per thread (seeds 000, 001 v3-v4, 003, 004)
// Block BDIM x BDIM, grid ceil_div(NX, BDIM) x ceil_div(NY, BDIM). Block (bx, by) moves
// the input tile of rows by*BDIM.. and columns bx*BDIM.. to output rows bx*BDIM.. and
// columns by*BDIM..; both global accesses are row-wise (coalesced) and the transposition
// happens in shared memory.
// ---------------------------------------------------------------------------------------

// Row into the tile, column out of it. PAD = 0: the column read tile[tx][ty] hits one bank
// for all 32 threads of a warp (32 shared transactions per request at BDIM = 32); PAD = 1
// shifts each tile row by one bank and the read becomes conflict-free.
extern "C" __global__ void smem_tile(const float* __restrict__ in, float* __restrict__ out, int nx, int ny)
{
    __shared__ float tile[BDIM][BDIM + PAD];
    int tx = threadIdx.x, ty = threadIdx.y;
    int x = blockIdx.x * BDIM + tx;  // input column
    int y = blockIdx.y * BDIM + ty;  // input row
    if (x < nx && y < ny)
        tile[ty][tx] = in[(size_t)y * nx + x];
    __syncthreads();
    int ox = blockIdx.y * BDIM + tx;  // output column = input row (< ny)
    int oy = blockIdx.x * BDIM + ty;  // output row = input column (< nx)
    // tile[tx][ty] = in[row ox][column oy]; it was loaded exactly when ox < ny && oy < nx.
    if (ox < ny && oy < nx)
        out[(size_t)oy * ny + ox] = tile[tx][ty];
}

// smem_tile without padding, made conflict-free by staggering instead (seed 004): tile row r
// keeps input column c at position (c + r) % BDIM. A warp's column read tile[tx][(tx + ty) % BDIM]
// then spans BDIM different banks, and no shared memory is wasted.
extern "C" __global__ void smem_swizzle(const float* __restrict__ in, float* __restrict__ out, int nx, int ny)
{
    __shared__ float tile[BDIM][BDIM];
    int tx = threadIdx.x, ty = threadIdx.y;
    int x = blockIdx.x * BDIM + tx;
    int y = blockIdx.y * BDIM + ty;
    if (x < nx && y < ny)
        tile[ty][(tx + ty) % BDIM] = in[(size_t)y * nx + x];
    __syncthreads();
    int ox = blockIdx.y * BDIM + tx;
    int oy = blockIdx.x * BDIM + ty;
    // Input (row ox, column oy) was stored by thread (ty, tx) at tile[tx][(ty + tx) % BDIM].
    if (ox < ny && oy < nx)
        out[(size_t)oy * ny + ox] = tile[tx][(tx + ty) % BDIM];
}

// Seed 004's transposeShared: the transposition happens on the shared STORE (buf[tx][ty]) and
// the shared load is row-wise. Store conflicts grow with BDIM: 2-way at 8, 8-way at 16,
// 32-way at 32.
extern "C" __global__ void shared_block(const float* __restrict__ in, float* __restrict__ out, int nx, int ny)
{
    __shared__ float buf[BDIM][BDIM];
    int tx = threadIdx.x, ty = threadIdx.y;
    int in_row = blockIdx.y * BDIM + ty;
    int in_col = blockIdx.x * BDIM + tx;
    if (in_row < ny && in_col < nx)
        buf[tx][ty] = in[(size_t)in_row * nx + in_col];
    __syncthreads();
    int out_row = blockIdx.x * BDIM + ty;  // = input column, < nx
    int out_col = blockIdx.y * BDIM + tx;  // = input row, < ny
    // buf[ty][tx] was stored by thread (ty, tx) from input (row out_col, column out_row).
    if (out_row < nx && out_col < ny)
        out[(size_t)out_row * ny + out_col] = buf[ty][tx];
}

// Seed 004's transposeSharedwBC: shared_block with the staggered column (tx + ty) % BDIM on
// both sides, which removes the store conflicts at every BDIM.
extern "C" __global__ void shared_swizzle_block(const float* __restrict__ in, float* __restrict__ out, int nx, int ny)
{
    __shared__ float buf[BDIM][BDIM];
    int tx = threadIdx.x, ty = threadIdx.y;
    int in_row = blockIdx.y * BDIM + ty;
    int in_col = blockIdx.x * BDIM + tx;
    if (in_row < ny && in_col < nx)
        buf[tx][(tx + ty) % BDIM] = in[(size_t)in_row * nx + in_col];
    __syncthreads();
    int out_row = blockIdx.x * BDIM + ty;
    int out_col = blockIdx.y * BDIM + tx;
    // Stored by thread (ty, tx) at buf[ty][(ty + tx) % BDIM].
    if (out_row < nx && out_col < ny)
        out[(size_t)out_row * ny + out_col] = buf[ty][(tx + ty) % BDIM];
}

// ---------------------------------------------------------------------------------------
// Several elements per thread (seed 004's transposeUnrolled, seed 000's optimized kernel)
// ---------------------------------------------------------------------------------------

// A TILE x TILE tile moved by a TILE x SIDE block: thread (tx, ty) loads rows ty, ty + SIDE, ...
// of the tile and stores rows ty, ty + SIDE, ... of the output tile, TILE / SIDE elements each.
// Staggered (swizzled) tile: tile row r keeps input column c at (c + r) % TILE, so row writes
// and column reads are both conflict-free (TILE is a multiple of 32). Block TILE x SIDE,
// grid ceil_div(NX, TILE) x ceil_div(NY, TILE).
extern "C" __global__ void transpose_unrolled(const float* __restrict__ in, float* __restrict__ out, int nx, int ny)
{
    __shared__ float tile[TILE][TILE];
    int tx = threadIdx.x, ty = threadIdx.y;
    int col = blockIdx.x * TILE + tx;  // input column of this thread's loads
    int row0 = blockIdx.y * TILE;      // first input row of the tile
#pragma unroll
    for (int off = 0; off < TILE; off += SIDE) {
        int r = ty + off;  // tile row
        if (col < nx && row0 + r < ny)
            tile[r][(tx + r) % TILE] = in[(size_t)(row0 + r) * nx + col];
    }
    __syncthreads();
    int ocol = blockIdx.y * TILE + tx;  // output column = input row row0 + tx (< ny)
    int orow0 = blockIdx.x * TILE;      // first output row = first input column of the tile
#pragma unroll
    for (int off = 0; off < TILE; off += SIDE) {
        int c = ty + off;  // tile column = output row within the tile
        // Input (tile row tx, tile column c) sits at tile[tx][(c + tx) % TILE].
        if (ocol < ny && orow0 + c < nx)
            out[(size_t)(orow0 + c) * ny + ocol] = tile[tx][(c + tx) % TILE];
    }
}

// ---------------------------------------------------------------------------------------
// Rectangular tiles (seed 002 §54): BDIMX x BDIMY block and tile, 64 x 8 by default
// Grid ceil_div(NX, BDIMX) x ceil_div(NY, BDIMY) (smem_rect_pad_unroll2: ceil_div(NX, 2 * BDIMX)).
// The input tile is BDIMY rows x BDIMX columns; its transpose is BDIMX rows x BDIMY columns.
// To store that transpose row-wise, each thread renumbers itself through its linear index
// i = ty * BDIMX + tx: i_row = i / BDIMY (output row in the tile), i_col = i % BDIMY
// (output column), and reads tile[i_col][i_row], a column of the shared tile.
// A warp then writes 32 / BDIMY output rows of BDIMY consecutive floats.
// ---------------------------------------------------------------------------------------

// IPAD = 0: the column read hits 32 / BDIMY banks, 8-way conflicts at 64 x 8.
// IPAD = 2: rows shift by 2 banks, 2-way conflicts (what seed 002 measured).
extern "C" __global__ void smem_rect(const float* __restrict__ in, float* __restrict__ out, int nx, int ny)
{
    __shared__ float tile[BDIMY][BDIMX + IPAD];
    int ix = blockIdx.x * BDIMX + threadIdx.x;
    int iy = blockIdx.y * BDIMY + threadIdx.y;
    if (ix < nx && iy < ny)
        tile[threadIdx.y][threadIdx.x] = in[(size_t)iy * nx + ix];
    __syncthreads();
    int i = threadIdx.y * BDIMX + threadIdx.x;
    int i_row = i / BDIMY;
    int i_col = i % BDIMY;
    int out_x = blockIdx.y * BDIMY + i_col;  // output column = input row (< ny)
    int out_y = blockIdx.x * BDIMX + i_row;  // output row = input column (< nx)
    // tile[i_col][i_row] = in[row out_x][column out_y], loaded exactly when both are in range.
    if (out_x < ny && out_y < nx)
        out[(size_t)out_y * ny + out_x] = tile[i_col][i_row];
}

// smem_rect with IPAD and two tiles per block: the block covers BDIMY rows x 2 * BDIMX
// columns, each thread moves two elements BDIMX columns apart (grid x halved).
extern "C" __global__ void smem_rect_unroll2(const float* __restrict__ in, float* __restrict__ out, int nx, int ny)
{
    __shared__ float tile[BDIMY][2 * BDIMX + IPAD];
    int ix = blockIdx.x * (2 * BDIMX) + threadIdx.x;
    int iy = blockIdx.y * BDIMY + threadIdx.y;
    if (iy < ny) {
        size_t at = (size_t)iy * nx + ix;
        if (ix < nx)
            tile[threadIdx.y][threadIdx.x] = in[at];
        if (ix + BDIMX < nx)
            tile[threadIdx.y][threadIdx.x + BDIMX] = in[at + BDIMX];
    }
    __syncthreads();
    int i = threadIdx.y * BDIMX + threadIdx.x;
    int i_row = i / BDIMY;
    int i_col = i % BDIMY;
    int out_x = blockIdx.y * BDIMY + i_col;            // output column (< ny)
    int out_y = blockIdx.x * (2 * BDIMX) + i_row;      // output row of the first element (< nx)
    if (out_x < ny) {
        if (out_y < nx)
            out[(size_t)out_y * ny + out_x] = tile[i_col][i_row];
        if (out_y + BDIMX < nx)
            out[(size_t)(out_y + BDIMX) * ny + out_x] = tile[i_col][i_row + BDIMX];
    }
}

// ---------------------------------------------------------------------------------------
// transpose_fast: 64 x 64 tiles, float4 global accesses, XOR-swizzled shared tile
// ---------------------------------------------------------------------------------------
//
// Why it is fast:
//  * 64 x 64 floats (16 KB) per block, 4096 / FAST_THREADS elements per thread: many
//    independent 16-byte loads in flight per thread, few instructions per byte.
//  * Global loads and stores are float4 (LDG.128 / STG.128): a warp reads 2 rows x 256
//    contiguous bytes and writes 4 rows x 128 contiguous bytes, all full sectors and lines.
//  * The shared tile has no padding (float4 stores must stay 16-byte aligned) and is
//    swizzled instead: tile element (r, c) lives at
//        r * 64 + 4 * ((c / 4) ^ ((r / 4) % 8)) + c % 4,
//    i.e. the 16-byte chunk c / 4 of row r is XORed with (r / 4) % 8. A quarter-warp's
//    float4 row store covers 8 chunks of one row (all 32 banks), and a warp's scalar
//    column read, 4 columns x 8 chunk-rows, also lands in 32 different banks.
//  * Edges: a float4 is used only where the whole 4-float chunk is inside the matrix, the
//    row length is a multiple of 4 and the buffer starts on 16 bytes (so the address is
//    16-byte aligned; device allocations are). Anything else takes the scalar path with
//    per-element checks, so every shape is correct and aligned shapes run vectorised
//    everywhere.
//
// Launch: block = [FAST_THREADS], grid = [ceil_div(NX, 64), ceil_div(NY, 64)].

#define FAST_TILE 64

__device__ __forceinline__ int fast_swizzle(int r, int c)
{
    return r * FAST_TILE + ((((c >> 2) ^ ((r >> 2) & 7)) << 2) | (c & 3));
}

extern "C" __global__ void __launch_bounds__(FAST_THREADS) transpose_fast(const float* __restrict__ in, float* __restrict__ out, int nx, int ny)
{
    __shared__ __align__(16) float tile[FAST_TILE * FAST_TILE];
    const int t = threadIdx.x;
    const int x0 = blockIdx.x * FAST_TILE;  // first input column of the tile = first output row
    const int y0 = blockIdx.y * FAST_TILE;  // first input row of the tile = first output column

    // Load: thread t takes chunk (t % 16) of tile rows t / 16, t / 16 + ROWS, ...
    // (a warp: 2 rows x 16 chunks = 2 x 256 contiguous bytes).
    const int ROWS = FAST_THREADS / 16;
    const int c = 4 * (t & 15);  // first tile column of this thread's chunk
    const int gx = x0 + c;       // its input column
    const bool vec_in = (nx & 3) == 0 && ((unsigned long long)in & 15) == 0;
#pragma unroll
    for (int k = 0; k < FAST_TILE / ROWS; ++k) {
        const int r = (t >> 4) + k * ROWS;  // tile row
        const int gy = y0 + r;              // its input row
        if (gy < ny) {
            const float* src = in + (size_t)gy * nx + gx;
            if (vec_in && gx + 3 < nx) {
                *reinterpret_cast<float4*>(&tile[fast_swizzle(r, c)]) = __ldg(reinterpret_cast<const float4*>(src));
            } else {
#pragma unroll
                for (int j = 0; j < 4; ++j)
                    if (gx + j < nx)
                        tile[fast_swizzle(r, c + j)] = __ldg(src + j);
            }
        }
    }
    __syncthreads();

    // Store: the output tile is 64 rows (input columns) x 16 chunks of 4 floats (input rows).
    // Work unit u = 0..31 is 4 output rows x 8 chunks; lane l takes row 4 * (u / 2) + l / 8
    // and chunk 8 * (u % 2) + l % 8 (a warp: 4 rows x 128 contiguous bytes). Warp w does units
    // w, w + WARPS, ...
    const int WARPS = FAST_THREADS / 32;
    const int lane = t & 31;
    const bool vec_out = (ny & 3) == 0 && ((unsigned long long)out & 15) == 0;
#pragma unroll
    for (int k = 0; k < 32 / WARPS; ++k) {
        const int u = (t >> 5) + k * WARPS;
        const int R = 4 * (u >> 1) + (lane >> 3);      // output row in the tile = tile column
        const int C = 4 * (8 * (u & 1) + (lane & 7));  // first output column in the tile = tile row
        const int gr = x0 + R;                          // global output row (< nx)
        const int gc = y0 + C;                          // global output column (< ny)
        if (gr < nx) {
            float* dst = out + (size_t)gr * ny + gc;
            if (vec_out && gc + 3 < ny) {
                float4 v;
                v.x = tile[fast_swizzle(C + 0, R)];
                v.y = tile[fast_swizzle(C + 1, R)];
                v.z = tile[fast_swizzle(C + 2, R)];
                v.w = tile[fast_swizzle(C + 3, R)];
                *reinterpret_cast<float4*>(dst) = v;
            } else {
#pragma unroll
                for (int j = 0; j < 4; ++j)
                    if (gc + j < ny)
                        dst[j] = tile[fast_swizzle(C + j, R)];
            }
        }
    }
}
