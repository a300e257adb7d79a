//! A math's compute roofs on this GPU: cuBLAS/cuBLASLt at a large square GEMM of the math's contract, and gpu-lab's own `mma.sync` peak kernel, each a `RoofRecord` with its own error.

use cudarc::driver::{DevicePtr, LaunchConfig, PushKernelArg};

use super::builtin::compile_builtin;
use super::cublaslt::run_gemm_roof;
use super::device::Gpu;
use super::error::{Doing, RunError};
use super::peak_kernels::{BLOCKS_PER_SM, ITERS, NAME, THREADS, peak_mma};
use super::timing::time_runs_plain;
use super::timing_rules::Capture;
use crate::records::{GemmTypes, Math, RoofRecord, RoofSource, TimingConfig};
use crate::verify::ElemType;

/// The side of the square GEMM a library roof is measured at: large enough that every SM is busy
/// for milliseconds with the library's biggest tiles.
pub const ROOF_GEMM_SIZE: u64 = 8192;

/// Both roofs of `math` (none for FP32, whose roof is the FMA rate of the copy bounds).
pub fn run_roofs(gpu: &Gpu, math: Math, cfg: &TimingConfig) -> Vec<RoofRecord> {
    if math == Math::Fp32 {
        return Vec::new();
    }
    vec![library_roof(gpu, math, cfg), kernel_roof(gpu, math, cfg)]
}

/// The GEMM contract a math's library roof runs: `Math::gemm_types`, except that cuBLASLt has no
/// e5m2·e5m2 GEMM, so the E5M2 roof pairs e5m2 with e4m3 (the same tensor-core rate).
pub fn roof_gemm_types(math: Math) -> Result<GemmTypes, String> {
    let (input, out, acc) = math.gemm_types();
    let b = if math == Math::E5m2Tensor {
        ElemType::E4m3
    } else {
        input
    };
    GemmTypes::new(
        input,
        b,
        out,
        acc == ElemType::F16,
        math == Math::Tf32Tensor,
    )
}

/// A roof record of `math` measured by `source`, as yet without samples.
fn record(math: Math, source: RoofSource, what: String, ops: f64) -> RoofRecord {
    RoofRecord {
        math,
        source,
        what,
        ops,
        summary: None,
        samples_ms: Vec::new(),
        sm_mhz: None,
        error: None,
    }
}

/// cuBLAS or cuBLASLt at `ROOF_GEMM_SIZE`³ of the math's contract.
fn library_roof(gpu: &Gpu, math: Math, cfg: &TimingConfig) -> RoofRecord {
    let n = ROOF_GEMM_SIZE;
    let ops = 2.0 * (n * n * n) as f64;
    let mut r = record(
        math,
        RoofSource::Library,
        format!("cuBLAS/cuBLASLt {n}x{n}x{n}"),
        ops,
    );
    let types = match roof_gemm_types(math) {
        Ok(t) => t,
        Err(why) => {
            r.error = Some(why);
            return r;
        }
    };
    match run_gemm_roof(gpu, types, n, cfg) {
        Ok(o) => {
            // cuBLAS's classic GEMMs name only their math mode; cuBLASLt's name the whole call.
            r.what = if types.is_classic() {
                format!(
                    "cuBLAS {}GEMM {n}x{n}x{n}, {}",
                    if math == Math::Fp64 { "D" } else { "S" },
                    o.math_mode
                )
            } else {
                o.math_mode
            };
            r.samples_ms = o.samples_ms;
            r.sm_mhz = gpu.clock().map(|c| c.sm_mhz);
        }
        Err(e) => r.error = Some(format!("cuBLAS/cuBLASLt {}: {e}", types.label())),
    }
    r
}

/// gpu-lab's own `mma.sync` loop for the math, on every SM.
fn kernel_roof(gpu: &Gpu, math: Math, cfg: &TimingConfig) -> RoofRecord {
    let Some(mma) = peak_mma(math) else {
        let mut r = record(math, RoofSource::Kernel, "gpu-lab peak kernel".into(), 0.0);
        r.error = Some(format!("gpu-lab has no peak kernel for {}", math.name()));
        return r;
    };
    let sms = match sm_count(gpu) {
        Ok(s) => s,
        Err(e) => {
            let mut r = record(math, RoofSource::Kernel, mma.what(0), 0.0);
            r.error = Some(e.to_string());
            return r;
        }
    };
    let mut r = record(
        math,
        RoofSource::Kernel,
        mma.what(sms),
        mma.ops_per_launch(sms),
    );
    let cc = gpu
        .arch
        .trim_start_matches("sm_")
        .parse::<u32>()
        .unwrap_or(0);
    if cc < mma.min_sm {
        r.error = Some(format!(
            "{} needs compute capability {}.{} or later; this GPU is {}",
            mma.instruction,
            mma.min_sm / 10,
            mma.min_sm % 10,
            gpu.arch
        ));
        return r;
    }
    match time_peak_kernel(gpu, &mma.source(), sms, cfg) {
        Ok(samples) => {
            r.samples_ms = samples;
            r.sm_mhz = gpu.clock().map(|c| c.sm_mhz);
        }
        Err(e) => r.error = Some(format!("{}: {e}", mma.instruction)),
    }
    r
}

/// The GPU's SM count.
fn sm_count(gpu: &Gpu) -> Result<u32, RunError> {
    Ok(gpu
        .ctx
        .attribute(
            cudarc::driver::sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT,
        )
        .doing("reading the SM count")? as u32)
}

/// Compiles a peak kernel for the GPU's architecture and times its launches on `sms` SMs.
fn time_peak_kernel(
    gpu: &Gpu,
    source: &str,
    sms: u32,
    cfg: &TimingConfig,
) -> Result<Vec<f64>, RunError> {
    let f = compile_builtin(&gpu.ctx, &gpu.arch, source, NAME)?;
    // SAFETY: written only if the accumulators' sum is exactly -1; never read.
    let out = unsafe { gpu.stream.alloc::<f32>(1) }.doing("allocating the peak kernel's output")?;
    let out_ptr = out.device_ptr(&gpu.stream).0;
    let iters = ITERS;
    let samples = time_runs_plain(gpu, cfg, Capture::Allowed, |stream| {
        let mut b = stream.launch_builder(&f);
        b.arg(&out_ptr).arg(&iters);
        // SAFETY: one pointer and one int, as the kernel takes.
        unsafe {
            b.launch(LaunchConfig {
                grid_dim: (sms * BLOCKS_PER_SM, 1, 1),
                block_dim: (THREADS, 1, 1),
                shared_mem_bytes: 0,
            })
        }
        .doing("launching the peak kernel")?;
        Ok(())
    })?;
    Ok(samples.samples_ms)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::records::Accumulate;

    #[test]
    fn every_math_but_fp32_has_a_library_contract_cublaslt_accepts() {
        for math in Math::ALL {
            let types = roof_gemm_types(math).unwrap();
            assert_eq!(types.tf32, math == Math::Tf32Tensor, "{math:?}");
            assert_eq!(
                types.accumulate == Accumulate::F16,
                math == Math::F16TensorF16Acc,
                "{math:?}"
            );
        }
        let e5m2 = roof_gemm_types(Math::E5m2Tensor).unwrap();
        assert_eq!((e5m2.a, e5m2.b), (ElemType::E5m2, ElemType::E4m3));
        assert!(roof_gemm_types(Math::Fp64).unwrap().is_classic());
        assert!(!roof_gemm_types(Math::Tf32Tensor).unwrap().is_classic());
    }
}
