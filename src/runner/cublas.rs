//! The cuBLAS bound: GEMV or GEMM at a matmul shape, math mode pinned, timed like a variant.

use cudarc::cublas::{result as blas, sys as bs};
use cudarc::driver::{CudaSlice, DevicePtr};

use super::device::Gpu;
use super::error::{Doing, RunError};
use super::timing::time_runs_plain;
use super::timing_rules::Capture;
use crate::records::{ComputeOutcome, TimingConfig};
use crate::verify::{ElemType, HostData, Init, MatmulShape};

/// cuBLAS at a matmul shape, math mode pinned to `CUBLAS_DEFAULT_MATH` (FP32 without TF32 tensor
/// cores): GEMV where n = 1, GEMM otherwise, on random data, timed like a variant.
pub fn run_cublas(
    gpu: &Gpu,
    shape: &MatmulShape,
    elem: ElemType,
    cfg: &TimingConfig,
) -> Result<ComputeOutcome, RunError> {
    // SAFETY: only tries to open the library.
    if !unsafe { bs::is_culib_present() } {
        return Err(RunError::Invalid("cuBLAS (libcublas) was not found\n  fix: put the CUDA toolkit's lib64 on LD_LIBRARY_PATH, or use bound = \"copy\" or \"variant:NAME\"".into()));
    }
    let upload = |len: u64, seed: u64| -> Result<CudaSlice<u8>, RunError> {
        let data = HostData::init(elem, len as usize, Init::Random, seed);
        gpu.stream
            .clone_htod(data.as_bytes())
            .doing("uploading cuBLAS operands")
    };
    let (a, b, c) = (
        upload(shape.m * shape.k, 11)?,
        upload(shape.k * shape.n, 12)?,
        upload(shape.m * shape.n, 13)?,
    );
    let (pa, pb, pc) = (
        a.device_ptr(&gpu.stream).0,
        b.device_ptr(&gpu.stream).0,
        c.device_ptr(&gpu.stream).0,
    );
    let blas = cudarc::cublas::CudaBlas::new(gpu.stream.clone())
        .map_err(|e| RunError::Invalid(format!("cuBLAS: {e:?}")))?;
    let handle = *blas.handle();
    // SAFETY: a live handle; the mode is one of cuBLAS's own.
    unsafe { bs::cublasSetMathMode(handle, bs::cublasMath_t::CUBLAS_DEFAULT_MATH) }
        .result()
        .map_err(|e| RunError::Invalid(format!("cuBLAS math mode: {e:?}")))?;
    let call = BlasCall::new(handle, shape, elem, [pa, pb, pc])?;
    // The handle is bound to the default stream, which a graph cannot capture.
    let samples_ms = time_runs_plain(
        gpu,
        cfg,
        Capture::Never("cuBLAS is bound to the default stream"),
        |_| call.call(),
    )?
    .samples_ms;
    Ok(ComputeOutcome {
        samples_ms,
        math_mode: "CUBLAS_DEFAULT_MATH (FP32 without TF32 tensor cores)".into(),
    })
}

/// One cuBLAS GEMV or GEMM at a shape, its operands in place: the arguments worked out once, the
/// call made for every run.
#[derive(Clone, Copy)]
struct BlasCall<'a> {
    handle: bs::cublasHandle_t,
    shape: &'a MatmulShape,
    elem: ElemType,
    gemv: bool,
    m: i32,
    n: i32,
    k: i32,
    lda: i32,
    ldb: i32,
    alpha32: f32,
    beta32: f32,
    pa: u64,
    pb: u64,
    pc: u64,
}

/// cuBLAS's transpose flag.
fn op(t: bool) -> bs::cublasOperation_t {
    if t {
        bs::cublasOperation_t::CUBLAS_OP_T
    } else {
        bs::cublasOperation_t::CUBLAS_OP_N
    }
}

impl<'a> BlasCall<'a> {
    /// The call's dimensions (cuBLAS takes 32-bit ones) and leading dimensions, for operands at
    /// `pa`, `pb` and `pc`.
    fn new(
        handle: bs::cublasHandle_t,
        shape: &'a MatmulShape,
        elem: ElemType,
        [pa, pb, pc]: [u64; 3],
    ) -> Result<BlasCall<'a>, RunError> {
        let dim = |x: u64| {
            i32::try_from(x).map_err(|_| {
                RunError::Invalid(format!("cuBLAS takes 32-bit dimensions; {x} is too large"))
            })
        };
        let (m, n, k) = (dim(shape.m)?, dim(shape.n)?, dim(shape.k)?);
        // Row-major C = op(A) op(B) is column-major C^T = op(B)^T op(A)^T (see MatmulShape).
        let (lda, ldb) = (
            if shape.trans_a { m } else { k },
            if shape.trans_b { k } else { n },
        );
        let gemv = shape.n == 1 && !shape.trans_b;
        let (alpha32, beta32) = (shape.alpha as f32, shape.beta as f32);
        Ok(BlasCall {
            handle,
            shape,
            elem,
            gemv,
            m,
            n,
            k,
            lda,
            ldb,
            alpha32,
            beta32,
            pa,
            pb,
            pc,
        })
    }

    /// One GEMV or GEMM on the handle's stream.
    fn call(&self) -> Result<(), RunError> {
        let BlasCall {
            handle,
            shape,
            elem,
            gemv,
            m,
            n,
            k,
            lda,
            ldb,
            alpha32,
            beta32,
            pa,
            pb,
            pc,
        } = *self;
        // SAFETY: the buffers hold m*k, k*n and m*n elements of `elem`, as the dimensions say.
        let r = unsafe {
            match (elem, gemv) {
                (ElemType::F64, true) => blas::dgemv(
                    handle,
                    op(!shape.trans_a),
                    if shape.trans_a { m } else { k },
                    if shape.trans_a { k } else { m },
                    &shape.alpha,
                    pa as *const f64,
                    lda,
                    pb as *const f64,
                    1,
                    &shape.beta,
                    pc as *mut f64,
                    1,
                ),
                (ElemType::F64, false) => blas::dgemm(
                    handle,
                    op(shape.trans_b),
                    op(shape.trans_a),
                    n,
                    m,
                    k,
                    &shape.alpha,
                    pb as *const f64,
                    ldb,
                    pa as *const f64,
                    lda,
                    &shape.beta,
                    pc as *mut f64,
                    n,
                ),
                (_, true) => blas::sgemv(
                    handle,
                    op(!shape.trans_a),
                    if shape.trans_a { m } else { k },
                    if shape.trans_a { k } else { m },
                    &alpha32,
                    pa as *const f32,
                    lda,
                    pb as *const f32,
                    1,
                    &beta32,
                    pc as *mut f32,
                    1,
                ),
                (_, false) => blas::sgemm(
                    handle,
                    op(shape.trans_b),
                    op(shape.trans_a),
                    n,
                    m,
                    k,
                    &alpha32,
                    pb as *const f32,
                    ldb,
                    pa as *const f32,
                    lda,
                    &beta32,
                    pc as *mut f32,
                    n,
                ),
            }
        };
        r.map_err(|e| {
            RunError::Invalid(format!(
                "cuBLAS {}: {e:?}",
                if gemv { "gemv" } else { "gemm" }
            ))
        })
    }
}
