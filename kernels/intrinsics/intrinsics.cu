//! Standard vs intrinsic math functions (seed 002 §69-70): y[i] = f(x[i]), one application per element, in float32 (standard, intrinsic, and standard under --use_fast_math) and float64.

// One element per thread; every kernel has the same signature (input, output, element count).
// The float32 standard kernels are also compiled with --use_fast_math by the `*_fast_math`
// variants, which turns sinf/expf/logf/powf into __sinf/__expf/__logf/__powf.

// ---- sin: x in [-1, 1) ----

extern "C" __global__ void sin_f32(const float* __restrict__ x, float* __restrict__ y, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        y[i] = sinf(x[i]);
}

extern "C" __global__ void sin_f32_intrinsic(const float* __restrict__ x, float* __restrict__ y, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        y[i] = __sinf(x[i]);
}

extern "C" __global__ void sin_f64(const double* __restrict__ x, double* __restrict__ y, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        y[i] = sin(x[i]);
}

// ---- exp: x in [-1, 1) ----

extern "C" __global__ void exp_f32(const float* __restrict__ x, float* __restrict__ y, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        y[i] = expf(x[i]);
}

extern "C" __global__ void exp_f32_intrinsic(const float* __restrict__ x, float* __restrict__ y, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        y[i] = __expf(x[i]);
}

extern "C" __global__ void exp_f64(const double* __restrict__ x, double* __restrict__ y, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        y[i] = exp(x[i]);
}

// ---- log: x = 0, 1, 2, ... (iota; log(0) = -inf) ----

extern "C" __global__ void log_f32(const float* __restrict__ x, float* __restrict__ y, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        y[i] = logf(x[i]);
}

extern "C" __global__ void log_f32_intrinsic(const float* __restrict__ x, float* __restrict__ y, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        y[i] = __logf(x[i]);
}

extern "C" __global__ void log_f64(const double* __restrict__ x, double* __restrict__ y, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        y[i] = log(x[i]);
}

// ---- pow(x, 3): x = 0, 1, 2, ... (iota) ----
// __powf(x, y) is exp2(y * log2(x)) from the approximate lg2/ex2 instructions (the seed's PTX):
// NaN for x < 0, hence the non-negative input.

extern "C" __global__ void pow_f32(const float* __restrict__ x, float* __restrict__ y, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        y[i] = powf(x[i], 3.0f);
}

extern "C" __global__ void pow_f32_intrinsic(const float* __restrict__ x, float* __restrict__ y, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        y[i] = __powf(x[i], 3.0f);
}

extern "C" __global__ void pow_f64(const double* __restrict__ x, double* __restrict__ y, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        y[i] = pow(x[i], 3.0);
}
