//! Module loading: a variant's program compiled (or taken from the cache), linked with the device runtime where it launches kernels itself, loaded, and each launch's argument list checked against its kernel's parameters.

use std::collections::HashMap;
use std::sync::Arc;

use cudarc::driver::{CudaFunction, CudaModule};

use super::device::Gpu;
use super::device_link::link_device_runtime;
use super::error::{Doing, RunError};
use crate::build;
use crate::records::CompileInfo;
use crate::suite::{BufferSpec, JobSpec, LaunchSpec, Program};

/// Compiled functions of one program, by kernel name.
pub(super) struct Loaded {
    _module: Option<Arc<CudaModule>>,
    pub(super) functions: HashMap<String, CudaFunction>,
}

/// Compiles (or takes from the cache) and loads a job's program: [`load`] with the job's own
/// program, variant, launches and buffers.
pub(super) fn load_job(
    gpu: &Gpu,
    spec: &JobSpec,
    info: &mut Vec<CompileInfo>,
) -> Result<Loaded, RunError> {
    load(
        gpu,
        &spec.program,
        &spec.key.variant,
        &spec.launches,
        &spec.buffers,
        info,
    )
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
    for (name, (f, _)) in &functions {
        let own: Vec<&LaunchSpec> = launches.iter().filter(|l| &l.kernel == name).collect();
        allow_shared_memory(gpu, name, f, &own)?;
        allow_clusters(gpu, name, f, &own)?;
    }
    Ok(Loaded {
        _module: Some(module),
        functions: functions.into_iter().map(|(k, (f, _))| (k, f)).collect(),
    })
}

/// Lets kernel `name` use as much dynamic shared memory as its largest launch asks for, up to the
/// device's opt-in maximum (above 48 KB a kernel must opt in).
fn allow_shared_memory(
    gpu: &Gpu,
    name: &str,
    f: &CudaFunction,
    launches: &[&LaunchSpec],
) -> Result<(), RunError> {
    use cudarc::driver::sys::{CUdevice_attribute as A, CUfunction_attribute as F};
    let most = launches.iter().map(|l| l.shared_bytes).max().unwrap_or(0);
    if most <= 48 * 1024 {
        return Ok(());
    }
    let optin = gpu
        .ctx
        .attribute(A::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN)
        .doing("reading the device's opt-in shared memory per block")?
        .max(0) as u64;
    let fixed = f
        .get_attribute(F::CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES)
        .doing(format!("reading the static shared memory of `{name}`"))?
        .max(0) as u64;
    if most as u64 + fixed > optin {
        return Err(RunError::Invalid(format!(
            "a launch of `{name}` asks for {most} bytes of dynamic shared memory, and the kernel has {fixed} bytes of static shared memory: {} bytes, more than the {optin} bytes this GPU allows a block (its opt-in maximum, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN)\n  fix: make shared_bytes at most {} (smaller tiles, or fewer pipeline stages)",
            most as u64 + fixed,
            optin.saturating_sub(fixed)
        )));
    }
    f.set_attribute(F::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, most as i32)
        .doing(format!(
            "allowing {most} bytes of dynamic shared memory for `{name}` (this GPU's opt-in maximum per block: {optin} bytes, {fixed} of them taken by its static shared memory)"
        ))
}

/// The cluster shape compiled into kernel `f` (`__cluster_dims__`), if any. A driver or GPU
/// that will not answer (clusters came with compute capability 9.0) has none to report: every
/// kernel is asked, and a GPU without clusters must still run the kernels that use none.
pub(super) fn compiled_cluster(
    f: &CudaFunction,
    _name: &str,
) -> Result<Option<[u32; 3]>, RunError> {
    use cudarc::driver::sys::CUfunction_attribute as F;
    let mut dims = [0u32; 3];
    for (d, attribute) in dims.iter_mut().zip([
        F::CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_WIDTH,
        F::CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_HEIGHT,
        F::CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_DEPTH,
    ]) {
        match f.get_attribute(attribute) {
            Ok(v) => *d = v.max(0) as u32,
            Err(_) => return Ok(None),
        }
    }
    Ok(dims.iter().all(|&d| d > 0).then_some(dims))
}

/// Checks the cluster shape of each launch of kernel `name` (its `cluster`, or the one compiled in
/// with `__cluster_dims__`) and lets clusters of more than 8 blocks (non-portable sizes) run.
fn allow_clusters(
    gpu: &Gpu,
    name: &str,
    f: &CudaFunction,
    launches: &[&LaunchSpec],
) -> Result<(), RunError> {
    use cudarc::driver::sys::{CUdevice_attribute as A, CUfunction_attribute as F};
    let compiled = compiled_cluster(f, name)?;
    let mut largest = 0u64;
    for l in launches {
        let shape = match (l.cluster, compiled) {
            (Some(asked), Some(fixed)) if asked != fixed => {
                return Err(RunError::Invalid(format!(
                    "`{name}` is compiled with __cluster_dims__{fixed:?} and a launch asks for cluster {asked:?}\n  fix: remove `cluster` from the launch (the compiled shape is used), or remove __cluster_dims__ from the kernel"
                )));
            }
            (Some(shape), _) | (None, Some(shape)) => shape,
            (None, None) => continue,
        };
        if let Some(i) = (0..3).find(|&i| !l.grid[i].is_multiple_of(shape[i])) {
            return Err(RunError::Invalid(format!(
                "`{name}` runs in clusters of {shape:?} blocks and a launch's grid {:?} is not a whole number of them (dimension {i})\n  fix: make each grid dimension a multiple of the cluster's",
                l.grid
            )));
        }
        largest = largest.max(shape.iter().map(|&d| d as u64).product());
    }
    if largest == 0 {
        return Ok(());
    }
    let supported = gpu
        .ctx
        .attribute(A::CU_DEVICE_ATTRIBUTE_CLUSTER_LAUNCH)
        .doing("reading whether the device launches clusters")?;
    if supported == 0 {
        return Err(RunError::Invalid(format!(
            "`{name}` runs in thread-block clusters, and this GPU cannot launch clusters (compute capability 9.0 or later can)\n  fix: run it on a Hopper or later GPU, or drop `cluster` / __cluster_dims__"
        )));
    }
    // Up to 8 blocks a cluster is portable; beyond, the kernel must allow it (16 on H100).
    if largest > 8 {
        f.set_attribute(F::CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED, 1)
            .doing(format!(
                "allowing `{name}` a non-portable cluster size ({largest} blocks; 8 is the portable limit)"
            ))?;
    }
    Ok(())
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
