//! Module loading: a variant's program compiled (or taken from the cache), linked with the device runtime where it launches kernels itself, loaded, and each launch's argument list checked against its kernel's parameters.

use std::collections::HashMap;
use std::sync::Arc;

use cudarc::driver::{CudaFunction, CudaModule};

use super::device::Gpu;
use super::device_link::link_device_runtime;
use super::error::{Doing, RunError};
use crate::build;
use crate::records::CompileInfo;
use crate::suite::{BufferSpec, LaunchSpec, Program};

/// Compiled functions of one program, by kernel name.
pub(super) struct Loaded {
    _module: Option<Arc<CudaModule>>,
    pub(super) functions: HashMap<String, CudaFunction>,
}

pub(super) fn load(
    gpu: &Gpu,
    program: &Program,
    variant: &str,
    launches: &[LaunchSpec],
    buffers: &[BufferSpec],
    info: &mut Vec<CompileInfo>,
) -> Result<Loaded, RunError> {
    // A host program of copies alone runs no kernel: nothing to compile.
    if launches.is_empty() {
        return Ok(Loaded {
            _module: None,
            functions: HashMap::new(),
        });
    }
    let mut kernels: Vec<String> = launches.iter().map(|l| l.kernel.clone()).collect();
    kernels.sort();
    kernels.dedup();
    let compiled = build::compile(
        program,
        variant,
        &kernels,
        &gpu.arch,
        &gpu.toolkit,
        gpu.cache_dir.as_deref(),
    )?;
    info.push(CompileInfo {
        source: program.source_path.display().to_string(),
        cached: compiled.cached,
        millis: compiled.millis,
        compiler: compiled.compiler.clone(),
    });
    let image = match compiled.image {
        build::Image::Ptx(ptx) => cudarc::nvrtc::Ptx::from_src(ptx),
        build::Image::Cubin(bytes) => cudarc::nvrtc::Ptx::from_binary(bytes),
        build::Image::RelocatablePtx {
            ptx,
            device_runtime,
        } => cudarc::nvrtc::Ptx::from_binary(link_device_runtime(gpu, &ptx, &device_runtime)?),
    };
    let module = gpu
        .ctx
        .load_module(image)
        .doing("loading the compiled module")?;
    let mut functions: HashMap<String, (CudaFunction, Vec<usize>)> = HashMap::new();
    for l in launches {
        if !functions.contains_key(&l.kernel) {
            let symbol = compiled
                .symbols
                .get(&l.kernel)
                .map_or(l.kernel.as_str(), String::as_str);
            let f = module
                .load_function(symbol)
                .doing(format!("finding kernel `{}` (symbol `{symbol}`)", l.kernel))?;
            let sizes = param_sizes(&f)?;
            functions.insert(l.kernel.clone(), (f, sizes));
        }
        let (_, sizes) = &functions[&l.kernel];
        // Every launch, not only a kernel's first: a wrong argument list faults or computes
        // garbage; refuse it before anything runs.
        if let Some(mismatch) = l.signature_mismatch(buffers, sizes) {
            return Err(RunError::Signature(mismatch));
        }
    }
    // Each kernel may use as much dynamic shared memory as its largest launch asks for.
    for (name, (f, _)) in &functions {
        let most = launches
            .iter()
            .filter(|l| &l.kernel == name)
            .map(|l| l.shared_bytes)
            .max()
            .unwrap_or(0);
        if most > 48 * 1024 {
            f.set_attribute(cudarc::driver::sys::CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, most as i32)
                .doing(format!("allowing {most} bytes of dynamic shared memory for `{name}`"))?;
        }
    }
    Ok(Loaded {
        _module: Some(module),
        functions: functions.into_iter().map(|(k, (f, _))| (k, f)).collect(),
    })
}

/// The kernel's parameter sizes in order, from the driver (`cuFuncGetParamInfo`, CUDA 12.4+).
fn param_sizes(f: &CudaFunction) -> Result<Vec<usize>, RunError> {
    use cudarc::driver::sys;
    let mut sizes = Vec::new();
    // No kernel takes thousands of parameters (the limit is 32 KB of them); the bound keeps a driver quirk from looping.
    for index in 0..4096 {
        let (mut offset, mut size) = (0usize, 0usize);
        // SAFETY: the function handle is live (its module is held by `f`), and the two out-pointers are valid.
        let status =
            unsafe { sys::cuFuncGetParamInfo(f.cu_function(), index, &mut offset, &mut size) };
        match status {
            sys::CUresult::CUDA_SUCCESS => sizes.push(size),
            // Past the last parameter.
            sys::CUresult::CUDA_ERROR_INVALID_VALUE => break,
            other => {
                return Err(RunError::Driver {
                    doing: "reading the kernel's parameters".into(),
                    source: cudarc::driver::DriverError(other),
                });
            }
        }
    }
    Ok(sizes)
}
