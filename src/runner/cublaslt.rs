//! The cuBLASLt GEMM engine: one matmul of any supported contract (f16/bf16, TF32, FP8, i8) at a row-major shape, its algorithm chosen once by the heuristic and recorded, timed like a variant.

use std::ffi::c_void;

use cudarc::cublaslt::{result as lt, sys};
use cudarc::driver::{CudaSlice, DevicePtr};

use super::cublas::run_cublas;
use super::device::Gpu;
use super::error::{Doing, RunError};
use super::timing::time_runs_plain;
use super::timing_rules::Capture;
use crate::records::{Accumulate, BoundSpec, ComputeOutcome, GemmTypes, TimingConfig, tn_shape};
use crate::verify::{ElemType, HostData, Init, MatmulShape};

/// The workspace cuBLASLt may use: NVIDIA recommends 32 MiB on Hopper (4 MiB before).
const WORKSPACE_BYTES: usize = 32 << 20;

/// The bound a job asked for: cuBLAS SGEMM/DGEMM for the classic contracts (as before), cuBLASLt
/// for every other.
pub fn run_gemm_bound(
    gpu: &Gpu,
    bound: &BoundSpec,
    cfg: &TimingConfig,
) -> Result<ComputeOutcome, RunError> {
    let (BoundSpec::Cublas { shape, elem, .. }, Some(types)) = (bound, bound.gemm_types()) else {
        return Err(RunError::Invalid(format!(
            "{} is not a cuBLAS bound: only cuBLAS bounds are measured by a child",
            bound.name()
        )));
    };
    let types = types.map_err(|why| RunError::Invalid(format!("{}: {why}", bound.name())))?;
    if types.is_classic() {
        return run_cublas(gpu, shape, *elem, cfg);
    }
    let gemm = LtGemm::new(gpu, shape, types)?;
    // Timed with events around each call, as cuBLAS is: no graph capture of cuBLASLt's launches.
    let never = Capture::Never("cuBLASLt is timed call by call, as cuBLAS is");
    let samples_ms = time_runs_plain(gpu, cfg, never, |stream| {
        gemm.call(stream.cu_stream() as sys::cudaStream_t)
    })?
    .samples_ms;
    Ok(ComputeOutcome {
        samples_ms,
        math_mode: gemm.describe(),
    })
}

/// The cuBLASLt element type of `elem`, or why it has none.
fn cuda_type(elem: ElemType) -> Result<sys::cudaDataType, RunError> {
    use sys::cudaDataType::*;
    Ok(match elem {
        ElemType::F16 => CUDA_R_16F,
        ElemType::Bf16 => CUDA_R_16BF,
        ElemType::F32 => CUDA_R_32F,
        ElemType::F64 => CUDA_R_64F,
        ElemType::E4m3 => CUDA_R_8F_E4M3,
        ElemType::E5m2 => CUDA_R_8F_E5M2,
        ElemType::I8 => CUDA_R_8I,
        ElemType::I32 => CUDA_R_32I,
        other => {
            return Err(RunError::Invalid(format!(
                "cuBLASLt has no GEMM of {} elements",
                other.name()
            )));
        }
    })
}

/// cuBLASLt's compute type, scale type and their name for a contract.
fn compute_of(types: &GemmTypes) -> (sys::cublasComputeType_t, sys::cudaDataType, &'static str) {
    use sys::cublasComputeType_t::*;
    use sys::cudaDataType::*;
    match (types.accumulate, types.tf32) {
        (Accumulate::F32, true) => (
            CUBLAS_COMPUTE_32F_FAST_TF32,
            CUDA_R_32F,
            "CUBLAS_COMPUTE_32F_FAST_TF32",
        ),
        (Accumulate::F16, _) => (CUBLAS_COMPUTE_16F, CUDA_R_16F, "CUBLAS_COMPUTE_16F"),
        (Accumulate::I32, _) => (CUBLAS_COMPUTE_32I, CUDA_R_32I, "CUBLAS_COMPUTE_32I"),
        (Accumulate::F64, _) => (CUBLAS_COMPUTE_64F, CUDA_R_64F, "CUBLAS_COMPUTE_64F"),
        (Accumulate::F32, false) => (CUBLAS_COMPUTE_32F, CUDA_R_32F, "CUBLAS_COMPUTE_32F"),
    }
}

/// alpha and beta as the scale type holds them (host memory, 8 bytes each at most).
fn scalars(types: &GemmTypes, shape: &MatmulShape) -> [[u8; 8]; 2] {
    let bytes = |x: f64| -> [u8; 8] {
        let mut out = [0u8; 8];
        match compute_of(types).1 {
            sys::cudaDataType::CUDA_R_16F => {
                out[..2].copy_from_slice(&half::f16::from_f64(x).to_bits().to_ne_bytes())
            }
            sys::cudaDataType::CUDA_R_32I => out[..4].copy_from_slice(&(x as i32).to_ne_bytes()),
            sys::cudaDataType::CUDA_R_64F => out.copy_from_slice(&x.to_ne_bytes()),
            _ => out[..4].copy_from_slice(&(x as f32).to_ne_bytes()),
        }
        out
    };
    [bytes(shape.alpha), bytes(shape.beta)]
}

/// A cuBLASLt call's error, naming the step.
fn lt_err(what: &str) -> impl Fn(lt::CublasError) -> RunError + '_ {
    move |e| RunError::Invalid(format!("cuBLASLt {what}: {:?}", e.0))
}

/// The descriptors of one cuBLASLt matmul; destroyed with it.
struct Descriptors {
    desc: sys::cublasLtMatmulDesc_t,
    /// Layouts of cuBLASLt's A (the user's B), B (the user's A) and C = D.
    layouts: [sys::cublasLtMatrixLayout_t; 3],
    pref: sys::cublasLtMatmulPreference_t,
}

impl Drop for Descriptors {
    fn drop(&mut self) {
        // SAFETY: each was created once by `LtGemm::new` (null where creation stopped early) and is destroyed once here.
        unsafe {
            if !self.pref.is_null() {
                let _ = lt::destroy_matmul_pref(self.pref);
            }
            for l in self.layouts {
                if !l.is_null() {
                    let _ = lt::destroy_matrix_layout(l);
                }
            }
            if !self.desc.is_null() {
                let _ = lt::destroy_matmul_desc(self.desc);
            }
        }
    }
}

/// A handle that is destroyed with its owner.
struct Handle(sys::cublasLtHandle_t);

impl Drop for Handle {
    fn drop(&mut self) {
        // SAFETY: created once by `create_handle`, destroyed once here.
        let _ = unsafe { lt::destroy_handle(self.0) };
    }
}

/// One cuBLASLt matmul, operands in place and algorithm chosen: called once per run.
struct LtGemm {
    // Field order is drop order: descriptors before the handle.
    descriptors: Descriptors,
    handle: Handle,
    algo: sys::cublasLtMatmulHeuristicResult_t,
    scalars: [[u8; 8]; 2],
    /// A, B, C and the workspace, kept alive while the GEMM is called.
    buffers: Vec<CudaSlice<u8>>,
    pointers: [u64; 4],
    types: GemmTypes,
    shape: MatmulShape,
    /// The check's shape had other transposes than cuBLASLt allows for these types.
    relaid: bool,
}

impl LtGemm {
    /// Uploads random operands of `shape` and `types`, builds the descriptors and asks the
    /// heuristic for its best algorithm.
    fn new(gpu: &Gpu, shape: &MatmulShape, types: GemmTypes) -> Result<LtGemm, RunError> {
        // SAFETY: only tries to open the library.
        if !unsafe { sys::is_culib_present() } {
            return Err(RunError::Invalid("cuBLASLt (libcublasLt) was not found\n  fix: put the CUDA toolkit's lib64 on LD_LIBRARY_PATH, or use bound = \"copy\" or \"variant:NAME\"".into()));
        }
        let (shape, relaid) = if types.needs_tn() {
            tn_shape(shape)
        } else {
            (*shape, false)
        };
        let upload = |elem: ElemType, len: u64, seed: u64| -> Result<CudaSlice<u8>, RunError> {
            let data = HostData::init(elem, len as usize, Init::Random, seed);
            gpu.stream
                .clone_htod(data.as_bytes())
                .doing("uploading cuBLASLt operands")
        };
        let buffers = vec![
            upload(types.a, shape.m * shape.k, 11)?,
            upload(types.b, shape.k * shape.n, 12)?,
            upload(types.out, shape.m * shape.n, 13)?,
            // SAFETY: scratch space for cuBLASLt; never read by gpu-lab.
            unsafe { gpu.stream.alloc::<u8>(WORKSPACE_BYTES) }
                .doing("allocating the cuBLASLt workspace")?,
        ];
        let mut pointers = [0u64; 4];
        for (p, b) in pointers.iter_mut().zip(&buffers) {
            *p = b.device_ptr(&gpu.stream).0;
        }
        let handle = Handle(lt::create_handle().map_err(lt_err("creating a handle"))?);
        let descriptors = describe(&shape, &types)?;
        let algo = heuristic(&handle, &descriptors, &types)?;
        Ok(LtGemm {
            descriptors,
            handle,
            algo,
            scalars: scalars(&types, &shape),
            buffers,
            pointers,
            types,
            shape,
            relaid,
        })
    }

    /// One matmul on `stream`.
    fn call(&self, stream: sys::cudaStream_t) -> Result<(), RunError> {
        let [a, b, c, workspace] = self.pointers;
        let [la, lb, lc] = self.descriptors.layouts;
        debug_assert_eq!(self.buffers.len(), 4);
        // SAFETY: the descriptors describe the buffers behind the pointers (cuBLASLt's A is the
        // user's B: row-major C = A·B is column-major Cᵀ = Bᵀ·Aᵀ); alpha and beta are host values
        // of the scale type; the workspace holds WORKSPACE_BYTES.
        unsafe {
            lt::matmul(
                self.handle.0,
                self.descriptors.desc,
                self.scalars[0].as_ptr() as *const c_void,
                self.scalars[1].as_ptr() as *const c_void,
                b as *const c_void,
                la,
                a as *const c_void,
                lb,
                c as *const c_void,
                lc,
                c as *mut c_void,
                lc,
                &self.algo.algo,
                workspace as *mut c_void,
                WORKSPACE_BYTES,
                stream,
            )
        }
        .map_err(lt_err("matmul"))
    }

    /// The math mode and algorithm, as the record keeps them.
    fn describe(&self) -> String {
        let mut s = format!(
            "cuBLASLt {} {}, {}{}",
            self.types.label(),
            self.shape.label(),
            compute_of(&self.types).2,
            algo_config(&self.algo.algo)
        );
        if matches!(self.types.a, ElemType::E4m3 | ElemType::E5m2) {
            s.push_str(", A/B scales 1.0 (cuBLASLt's default), fast accumulate off");
        }
        if self.relaid {
            s.push_str(", run with both operands K-contiguous (cuBLASLt's TN layout, which these types need; the check's layout differs)");
        }
        s
    }
}

/// The matmul descriptor (transposes) and the layouts of a row-major `shape`:
/// cuBLASLt's A is the user's B (n × k), its B the user's A, its C the output (n × m column-major).
fn describe(shape: &MatmulShape, types: &GemmTypes) -> Result<Descriptors, RunError> {
    let (compute, scale, _) = compute_of(types);
    let mut d = Descriptors {
        desc: std::ptr::null_mut(),
        layouts: [std::ptr::null_mut(); 3],
        pref: std::ptr::null_mut(),
    };
    d.desc =
        lt::create_matmul_desc(compute, scale).map_err(lt_err("creating the matmul descriptor"))?;
    let op = |t: bool| {
        if t {
            cudarc::cublas::sys::cublasOperation_t::CUBLAS_OP_T
        } else {
            cudarc::cublas::sys::cublasOperation_t::CUBLAS_OP_N
        }
    };
    let set = |attr, value: *const c_void, size: usize| {
        // SAFETY: a live descriptor; the value is of the attribute's documented type and size.
        unsafe { lt::set_matmul_desc_attribute(d.desc, attr, value, size) }
            .map_err(lt_err("setting a matmul attribute"))
    };
    use sys::cublasLtMatmulDescAttributes_t::*;
    let (ta, tb) = (op(shape.trans_b), op(shape.trans_a));
    set(
        CUBLASLT_MATMUL_DESC_TRANSA,
        &ta as *const _ as *const c_void,
        std::mem::size_of_val(&ta),
    )?;
    set(
        CUBLASLT_MATMUL_DESC_TRANSB,
        &tb as *const _ as *const c_void,
        std::mem::size_of_val(&tb),
    )?;
    // FP8 scales are left unset: cuBLASLt's default is 1.0, and on an H100 (CUDA 13) setting the
    // A/B scale pointers to device f32 1.0 made every FP8 matmul return NOT_SUPPORTED (.carry
    // probe, 2026-11-25), while the same GEMM without them ran at 1600 TFLOP/s.
    let layout = |elem, rows: u64, cols: u64| -> Result<sys::cublasLtMatrixLayout_t, RunError> {
        lt::create_matrix_layout(cuda_type(elem)?, rows, cols, rows as i64)
            .map_err(lt_err("creating a matrix layout"))
    };
    let (m, n, k) = (shape.m, shape.n, shape.k);
    // A stored matrix's column-major rows are its row-major columns.
    d.layouts[0] = if shape.trans_b {
        layout(types.b, k, n)?
    } else {
        layout(types.b, n, k)?
    };
    d.layouts[1] = if shape.trans_a {
        layout(types.a, m, k)?
    } else {
        layout(types.a, k, m)?
    };
    d.layouts[2] = layout(types.out, n, m)?;
    d.pref = lt::create_matmul_pref().map_err(lt_err("creating the heuristic preference"))?;
    let bytes = WORKSPACE_BYTES as u64;
    // SAFETY: a live preference; the attribute is a u64.
    unsafe {
        lt::set_matmul_pref_attribute(
            d.pref,
            sys::cublasLtMatmulPreferenceAttributes_t::CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
            &bytes as *const u64 as *const c_void,
            8,
        )
    }
    .map_err(lt_err("setting the workspace limit"))?;
    Ok(d)
}

/// The heuristic's best algorithm for the descriptors, or why there is none.
fn heuristic(
    handle: &Handle,
    d: &Descriptors,
    types: &GemmTypes,
) -> Result<sys::cublasLtMatmulHeuristicResult_t, RunError> {
    let mut result = std::mem::MaybeUninit::<sys::cublasLtMatmulHeuristicResult_t>::zeroed();
    let mut count = 0i32;
    let [la, lb, lc] = d.layouts;
    // SAFETY: live handle and descriptors; room for one result.
    unsafe {
        sys::cublasLtMatmulAlgoGetHeuristic(
            handle.0,
            d.desc,
            la,
            lb,
            lc,
            lc,
            d.pref,
            1,
            result.as_mut_ptr(),
            &mut count,
        )
    }
    .result()
    .map_err(lt_err("asking the heuristic for an algorithm"))?;
    // SAFETY: zero-initialised and, where count is 1, written by cuBLASLt.
    let result = unsafe { result.assume_init() };
    if count == 0 || result.state != sys::cublasStatus_t::CUBLAS_STATUS_SUCCESS {
        return Err(RunError::Invalid(format!(
            "cuBLASLt has no algorithm for {} on this GPU ({:?}); FP8 needs compute capability 8.9 or later, and FP8/i8 need dimensions that are multiples of 16",
            types.label(),
            result.state
        )));
    }
    Ok(result)
}

/// `, algo 66 tile 21 stages 12` (cuBLASLt's enum values; absent where it cannot say).
fn algo_config(algo: &sys::cublasLtMatmulAlgo_t) -> String {
    use sys::cublasLtMatmulAlgoConfigAttributes_t::*;
    let read = |attr| -> Option<u32> {
        let (mut value, mut written) = (0u32, 0usize);
        // SAFETY: a valid algorithm; the buffer is a u32 (these attributes are 4 bytes).
        unsafe {
            sys::cublasLtMatmulAlgoConfigGetAttribute(
                algo,
                attr,
                &mut value as *mut u32 as *mut c_void,
                4,
                &mut written,
            )
        }
        .result()
        .ok()
        .map(|_| value)
    };
    [
        ("algo", CUBLASLT_ALGO_CONFIG_ID),
        ("tile", CUBLASLT_ALGO_CONFIG_TILE_ID),
        ("stages", CUBLASLT_ALGO_CONFIG_STAGES_ID),
    ]
    .into_iter()
    .filter_map(|(name, attr)| read(attr).map(|v| format!(" {name} {v}")))
    .fold(", heuristic's first:".to_string(), |s, x| s + &x)
}

/// A roof's library measurement: `types` at a square `size`, or cuBLAS DGEMM/SGEMM for the classic ones.
pub fn run_gemm_roof(
    gpu: &Gpu,
    types: GemmTypes,
    size: u64,
    cfg: &TimingConfig,
) -> Result<ComputeOutcome, RunError> {
    let shape = MatmulShape {
        m: size,
        n: size,
        k: size,
        alpha: 1.0,
        beta: 0.0,
        trans_a: false,
        trans_b: !types.is_classic(),
    };
    let classic = types.is_classic();
    let bound = BoundSpec::Cublas {
        shape,
        elem: types.out,
        a_elem: (!classic).then_some(types.a),
        b_elem: (!classic).then_some(types.b),
        tf32: types.tf32,
        f16_accumulate: types.accumulate == Accumulate::F16,
    };
    run_gemm_bound(gpu, &bound, cfg)
}
