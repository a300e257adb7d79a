//! One job on one GPU, run inside the child process: build, allocate, initialise, check against the reference, time with CUDA events.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

use crate::build;
use cudarc::driver::{
    CudaContext, CudaFunction, CudaModule, CudaSlice, CudaStream, DevicePtr, LaunchConfig,
    PushKernelArg,
};
use memory::Allocation;

mod memory;
mod program;
use crate::device::{NvmlSession, driver_present};
use crate::occupancy::{self, KernelUse, SmLimits};
use crate::records::{
    BoundsOutcome, CacheState, ClockSample, CompileInfo, ComputeOutcome, HostLinkSamples,
    JobOutcome, LaunchOccupancy, TimingConfig, split_by_clock,
};
use crate::stats;
use crate::suite::{BufferSpec, JobSpec, LaunchSpec, Memory, Program, StepProgram};
use crate::verify::{
    Correctness, CorrectnessSpec, ElemType, HostData, Init, MatmulShape, check_same,
};
use program::HostProgram;

#[derive(Debug, thiserror::Error)]
pub enum RunError {
    #[error("CUDA driver error while {doing}: {source}")]
    Driver {
        doing: String,
        source: cudarc::driver::DriverError,
    },
    #[error(transparent)]
    Build(#[from] build::BuildError),
    #[error(
        "no CUDA driver: libcuda was not found\n  fix: run on a machine with an NVIDIA GPU and its driver installed (see `gpu-lab doctor`)"
    )]
    NoDriver,
    #[error("{0}")]
    Invalid(String),
    #[error(
        "{0}\n  fix: make the variant's `args` match the kernel's parameters in number, order and type (buffers are pointers: 8 bytes; scalars `i32: N` 4, `i64: N` 8, `f16: x` 2, …)"
    )]
    Signature(String),
}

trait Doing<T> {
    fn doing(self, what: impl Into<String>) -> Result<T, RunError>;
}

impl<T> Doing<T> for Result<T, cudarc::driver::DriverError> {
    fn doing(self, what: impl Into<String>) -> Result<T, RunError> {
        self.map_err(|source| RunError::Driver {
            doing: what.into(),
            source,
        })
    }
}

/// An open GPU: context, stream, the architecture string for NVRTC and where compiled PTX is cached.
pub struct Gpu {
    pub ctx: Arc<CudaContext>,
    pub stream: Arc<CudaStream>,
    pub arch: String,
    pub cache_dir: Option<PathBuf>,
    pub toolkit: build::Toolkit,
    /// NVML, for the SM clock after every sample (absent: samples are kept without a reading).
    nvml: NvmlSession,
    ordinal: u32,
    /// The cold-L2 eviction kernel and its buffer, made once (`Gpu::flush`).
    flush: std::cell::OnceCell<Flush>,
}

impl Gpu {
    /// The SM clock and throttling now (None without NVML).
    fn clock(&self) -> Option<ClockSample> {
        self.nvml.clock(self.ordinal)
    }

    pub fn open(
        ordinal: usize,
        cache_dir: Option<PathBuf>,
        toolkit: build::Toolkit,
    ) -> Result<Gpu, RunError> {
        if !driver_present() {
            return Err(RunError::NoDriver);
        }
        let ctx = CudaContext::new(ordinal).doing(format!("opening GPU {ordinal}"))?;
        let (major, minor) = ctx
            .compute_capability()
            .doing("reading the compute capability")?;
        let stream = ctx.default_stream();
        Ok(Gpu {
            ctx,
            stream,
            arch: format!("sm_{major}{minor}"),
            cache_dir,
            toolkit,
            nvml: NvmlSession::open(),
            ordinal: ordinal as u32,
            flush: std::cell::OnceCell::new(),
        })
    }

    /// The L2 eviction of cold timing, compiled and allocated on first use.
    fn flush(&self) -> Result<&Flush, RunError> {
        if let Some(f) = self.flush.get() {
            return Ok(f);
        }
        let _ = self.flush.set(Flush::new(self)?);
        Ok(self.flush.get().expect("set just above"))
    }
}

/// Compiled functions of one program, by kernel name.
struct Loaded {
    _module: Option<Arc<CudaModule>>,
    functions: HashMap<String, CudaFunction>,
}

fn load(
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

/// Links NVRTC's relocatable PTX with the device runtime library through the driver's JIT linker
/// (`cuLinkCreate`, `cuLinkAddData`, `cuLinkAddFile` with `CU_JIT_INPUT_LIBRARY`,
/// `cuLinkComplete`), as NVRTC's documentation does for dynamic parallelism; returns the linked
/// cubin, copied out before the link state (which owns it) is destroyed.
fn link_device_runtime(
    gpu: &Gpu,
    ptx: &str,
    library: &std::path::Path,
) -> Result<Vec<u8>, RunError> {
    use cudarc::driver::sys;
    use std::ffi::{CString, c_void};
    use std::os::unix::ffi::OsStrExt;
    let ptx_c = CString::new(ptx)
        .map_err(|_| RunError::Invalid("the relocatable PTX holds a NUL byte".into()))?;
    let library_c = CString::new(library.as_os_str().as_bytes()).map_err(|_| {
        RunError::Invalid(format!(
            "the device runtime's path {} holds a NUL byte",
            library.display()
        ))
    })?;
    let name = c"gpu_lab_kernels.ptx";
    gpu.ctx
        .bind_to_thread()
        .doing("making the context current for the device link")?;
    // The linker writes its errors here; the buffer outlives the link state.
    let mut log = vec![0u8; 64 * 1024];
    let mut options = [
        sys::CUjit_option::CU_JIT_ERROR_LOG_BUFFER,
        sys::CUjit_option::CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES,
    ];
    let mut values: [*mut c_void; 2] = [log.as_mut_ptr().cast(), log.len() as *mut c_void];
    let mut state: sys::CUlinkState = std::ptr::null_mut();
    let linking = format!(
        "linking the relocatable PTX with the device runtime {} (the driver's JIT linker)",
        library.display()
    );
    // SAFETY: two options with their values (a buffer that outlives the state, and its length
    // carried in the pointer as the API specifies); `state` is written by the call.
    unsafe { sys::cuLinkCreate_v2(2, options.as_mut_ptr(), values.as_mut_ptr(), &mut state) }
        .result()
        .doing(linking.clone())?;
    // SAFETY: `state` is live until the destroy below; the PTX and path are NUL-terminated and
    // outlive the calls; the cubin pointer is owned by `state` and copied before the destroy.
    let outcome = unsafe {
        (|| -> Result<Vec<u8>, cudarc::driver::DriverError> {
            sys::cuLinkAddData_v2(
                state,
                sys::CUjitInputType::CU_JIT_INPUT_PTX,
                ptx_c.as_ptr() as *mut c_void,
                ptx_c.as_bytes_with_nul().len(),
                name.as_ptr(),
                0,
                std::ptr::null_mut(),
                std::ptr::null_mut(),
            )
            .result()?;
            sys::cuLinkAddFile_v2(
                state,
                sys::CUjitInputType::CU_JIT_INPUT_LIBRARY,
                library_c.as_ptr(),
                0,
                std::ptr::null_mut(),
                std::ptr::null_mut(),
            )
            .result()?;
            let (mut cubin, mut size): (*mut c_void, usize) = (std::ptr::null_mut(), 0);
            sys::cuLinkComplete(state, &mut cubin, &mut size).result()?;
            if cubin.is_null() || size == 0 {
                return Err(cudarc::driver::DriverError(
                    sys::CUresult::CUDA_ERROR_INVALID_IMAGE,
                ));
            }
            Ok(std::slice::from_raw_parts(cubin as *const u8, size).to_vec())
        })()
    };
    // SAFETY: destroyed once, after the cubin was copied out.
    let _ = unsafe { sys::cuLinkDestroy(state) };
    outcome.map_err(|source| {
        let text =
            String::from_utf8_lossy(&log[..log.iter().position(|&b| b == 0).unwrap_or(log.len())])
                .trim()
                .to_string();
        RunError::Driver {
            doing: if text.is_empty() {
                linking
            } else {
                format!("{linking}; the linker said:\n{text}")
            },
            source,
        }
    })
}

/// Sets the device runtime's pending launch buffer (`pending_launches`) before any kernel runs:
/// the driver takes the limit only then. The largest any of `specs` asks for.
fn set_pending_launches(gpu: &Gpu, specs: &[&JobSpec]) -> Result<(), RunError> {
    if let Some(n) = specs.iter().filter_map(|s| s.pending_launches).max() {
        gpu.ctx
            .set_limit(
                cudarc::driver::sys::CUlimit::CU_LIMIT_DEV_RUNTIME_PENDING_LAUNCH_COUNT,
                n as usize,
            )
            .doing(format!(
                "setting the device runtime's pending launch limit to {n} (pending_launches)"
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

/// One SM's limits, from the device attributes (for the occupancy model and the predicted occupancy).
fn sm_limits(gpu: &Gpu) -> Result<SmLimits, RunError> {
    use cudarc::driver::sys::CUdevice_attribute as A;
    let get = |attribute: A, what: &str| -> Result<u32, RunError> {
        gpu.ctx
            .attribute(attribute)
            .doing(format!("reading the device's {what}"))
            .map(|v| v.max(0) as u32)
    };
    let (major, minor) = gpu
        .ctx
        .compute_capability()
        .doing("reading the compute capability")?;
    Ok(SmLimits {
        compute_capability: [major.max(0) as u32, minor.max(0) as u32],
        warp_size: get(A::CU_DEVICE_ATTRIBUTE_WARP_SIZE, "warp size")?,
        max_threads_per_sm: get(
            A::CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR,
            "threads per SM",
        )?,
        max_blocks_per_sm: get(
            A::CU_DEVICE_ATTRIBUTE_MAX_BLOCKS_PER_MULTIPROCESSOR,
            "blocks per SM",
        )?,
        max_threads_per_block: get(
            A::CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK,
            "threads per block",
        )?,
        registers_per_sm: get(
            A::CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR,
            "registers per SM",
        )?,
        registers_per_block: get(
            A::CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK,
            "registers per block",
        )?,
        shared_bytes_per_sm: get(
            A::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR,
            "shared memory per SM",
        )?,
        shared_bytes_per_block: get(
            A::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK,
            "shared memory per block",
        )?,
        shared_bytes_per_block_optin: get(
            A::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN,
            "opt-in shared memory per block",
        )?,
        reserved_shared_bytes_per_block: get(
            A::CU_DEVICE_ATTRIBUTE_RESERVED_SHARED_MEMORY_PER_BLOCK,
            "reserved shared memory per block",
        )?,
    })
}

/// Each launch's kernel resources (function attributes, read after `load` raised the dynamic
/// shared memory limit where a launch needs it), the blocks per SM the driver predicts, and the
/// occupancy model's limits beside it. A driver that will not predict (it refuses some shapes a
/// launch would refuse too) is recorded per launch: the launch then fails with its own error. An
/// attribute the driver will not give is the error of the whole record (`run_job` keeps it).
fn occupancy_of(
    gpu: &Gpu,
    loaded: &Loaded,
    launches: &[LaunchSpec],
) -> Result<Vec<LaunchOccupancy>, RunError> {
    use cudarc::driver::sys::CUfunction_attribute as F;
    let sm = sm_limits(gpu)?;
    launches
        .iter()
        .map(|l| {
            let f = &loaded.functions[&l.kernel];
            let attr = |attribute: F, what: &str| -> Result<u32, RunError> {
                f.get_attribute(attribute)
                    .doing(format!("reading the {what} of `{}`", l.kernel))
                    .map(|v| v.max(0) as u32)
            };
            let kernel = KernelUse {
                threads_per_block: l.block.iter().product(),
                registers_per_thread: attr(F::CU_FUNC_ATTRIBUTE_NUM_REGS, "registers per thread")?,
                static_shared_bytes: attr(
                    F::CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES,
                    "static shared memory",
                )?,
                dynamic_shared_bytes: l.shared_bytes,
                max_threads_per_block: attr(
                    F::CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK,
                    "maximum threads per block",
                )?,
                max_dynamic_shared_bytes: attr(
                    F::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                    "maximum dynamic shared memory",
                )?,
            };
            let local_bytes_per_thread = attr(
                F::CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES,
                "local memory per thread",
            )?;
            // cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags with CU_OCCUPANCY_DEFAULT: the same
            // answer as cuOccupancyMaxActiveBlocksPerMultiprocessor.
            let (active, driver_error) = match f.occupancy_max_active_blocks_per_multiprocessor(
                kernel.threads_per_block,
                l.shared_bytes as usize,
                None,
            ) {
                Ok(n) => (Some(n), None),
                Err(e) => (
                    None,
                    Some(format!("cuOccupancyMaxActiveBlocksPerMultiprocessor: {e}")),
                ),
            };
            let (model, model_error) = match occupancy::block_limits(&sm, &kernel) {
                Ok(limits) => (Some(limits), None),
                Err(e) => (None, Some(e.to_string())),
            };
            Ok(LaunchOccupancy {
                kernel: l.kernel.clone(),
                threads_per_block: kernel.threads_per_block,
                registers_per_thread: kernel.registers_per_thread,
                static_shared_bytes: kernel.static_shared_bytes,
                dynamic_shared_bytes: kernel.dynamic_shared_bytes,
                local_bytes_per_thread,
                max_threads_per_block: kernel.max_threads_per_block,
                max_warps_per_sm: sm.max_warps(),
                active_blocks_per_sm: active,
                predicted_occupancy_pct: active
                    .and_then(|n| sm.occupancy_pct(n, kernel.threads_per_block)),
                driver_error,
                limiters: model.map(|m| m.limiters()).unwrap_or_default(),
                model,
                model_error,
            })
        })
        .collect()
}

/// Device buffers of a job with the host data they start from.
struct Buffers {
    memory: Vec<Allocation>,
    initial: Vec<Option<HostData>>,
    pointers: Pointers,
    /// Where each buffer is for copies (host memory by its host pointer).
    copy_pointers: Pointers,
    /// Host memory of earlier downloads, kept for the next download of the same buffer: faulting
    /// in a fresh 1 GiB allocation takes longer than the copy into it. The price: one host copy
    /// of each checked output stays allocated through timing.
    spare: Vec<Option<HostData>>,
}

/// Where each buffer is, as a kernel (or a copy) sees it, and its element size (for `a[offset]`).
#[derive(Clone, Default)]
struct Pointers {
    base: Vec<u64>,
    elem_bytes: Vec<u64>,
}

impl Pointers {
    /// The address of element `at` of buffer `i`.
    fn at(&self, i: usize, at: u64) -> u64 {
        self.base[i] + at * self.elem_bytes[i]
    }
}

impl Buffers {
    fn new(gpu: &Gpu, spec: &JobSpec, seed: u64) -> Result<Buffers, RunError> {
        let mut memory = Vec::new();
        for b in &spec.buffers {
            memory.push(Allocation::new(
                gpu,
                b.memory,
                b.bytes() as usize,
                &b.advise,
                &b.name,
            )?);
        }
        let elem_bytes: Vec<u64> = spec.buffers.iter().map(|b| b.elem.size() as u64).collect();
        let pointers = Pointers {
            base: memory.iter().map(|m| m.device_address(gpu)).collect(),
            elem_bytes: elem_bytes.clone(),
        };
        let copy_pointers = Pointers {
            base: memory.iter().map(|m| m.copy_address(gpu)).collect(),
            elem_bytes,
        };
        let mut bufs = Buffers {
            memory,
            initial: vec![None; spec.buffers.len()],
            pointers,
            copy_pointers,
            spare: vec![None; spec.buffers.len()],
        };
        bufs.reseed(spec, seed);
        Ok(bufs)
    }

    /// Initial data drawn from `seed` (another seed for a second verification on inputs the
    /// first never saw); a buffer `from` another gets that buffer's new values, converted.
    fn reseed(&mut self, spec: &JobSpec, seed: u64) {
        for (i, b) in spec.buffers.iter().enumerate() {
            self.initial[i] = match b.from {
                // The manifest only lets a buffer start from an earlier one, so it is filled already.
                Some(src) => self.initial[src].as_ref().map(|d| {
                    let mut data = d.converted(spec.buffers[src].elem, b.elem);
                    data.truncate(b.len as usize);
                    data
                }),
                None if b.has_data() => Some(HostData::init(
                    b.elem,
                    b.len as usize,
                    b.init,
                    seed.wrapping_add(i as u64),
                )),
                None => None,
            };
        }
    }

    /// Puts every buffer back to its initial state (inputs re-uploaded, outputs poisoned again).
    fn reset(&mut self, gpu: &Gpu, spec: &JobSpec) -> Result<(), RunError> {
        self.reset_where(gpu, spec, |_| true)
    }

    /// Puts the buffers `which` picks back to their initial state. Host-resident ones are written
    /// by the host, after the GPU is idle (a managed buffer's pages move back to the host).
    fn reset_where(
        &mut self,
        gpu: &Gpu,
        spec: &JobSpec,
        which: impl Fn(&BufferSpec) -> bool,
    ) -> Result<(), RunError> {
        if spec
            .buffers
            .iter()
            .any(|b| !b.memory.is_device() && which(b))
        {
            gpu.ctx
                .synchronize()
                .doing("waiting for the GPU before writing host buffers")?;
        }
        for (i, b) in spec.buffers.iter().enumerate() {
            if !which(b) {
                continue;
            }
            let fill = if b.init == Init::Poison { 0xFF } else { 0 };
            match (self.memory[i].host_bytes(), &self.initial[i]) {
                (Some(host), Some(data)) => {
                    host[..data.as_bytes().len()].copy_from_slice(data.as_bytes())
                }
                (Some(host), None) => host.fill(fill),
                // SAFETY: the pointer and length are those of a live device allocation (from
                // pageable memory the call may return before the DMA ends: hence the sync below).
                (None, Some(data)) => unsafe {
                    cudarc::driver::result::memcpy_htod_sync(self.pointers.base[i], data.as_bytes())
                }
                .doing(format!("uploading buffer `{}`", b.name))?,
                // SAFETY: the pointer and length are those of a live allocation on this stream.
                (None, None) => unsafe {
                    cudarc::driver::result::memset_d8_async(
                        self.pointers.base[i],
                        fill,
                        b.bytes() as usize,
                        gpu.stream.cu_stream(),
                    )
                }
                .doing(format!("filling buffer `{}`", b.name))?,
            }
        }
        // Non-blocking streams of a host program do not wait for the NULL stream's uploads and fills.
        gpu.ctx.synchronize().doing("finishing the buffers' reset")
    }

    fn download(&mut self, gpu: &Gpu, spec: &JobSpec, index: usize) -> Result<HostData, RunError> {
        let b = &spec.buffers[index];
        let mut data = match self.spare[index].take() {
            Some(d) if d.len() == b.len as usize => d,
            _ => HostData::zeroed(b.elem, b.len as usize),
        };
        let len = data.as_bytes().len();
        match self.memory[index].host_bytes() {
            Some(host) => {
                gpu.ctx.synchronize().doing(format!(
                    "waiting for the GPU before reading buffer `{}`",
                    b.name
                ))?;
                data.as_bytes_mut().copy_from_slice(&host[..len]);
            }
            // SAFETY: a live device allocation of at least `len` bytes; the copy is synchronous.
            None => unsafe {
                cudarc::driver::result::memcpy_dtoh_sync(
                    data.as_bytes_mut(),
                    self.pointers.base[index],
                )
            }
            .doing(format!("downloading buffer `{}`", b.name))?,
        }
        Ok(data)
    }

    /// Gives a download's host memory back for the next download of buffer `index`.
    fn recycle(&mut self, index: usize, data: HostData) {
        self.spare[index] = Some(data);
    }
}

/// Launches every kernel of a variant once, in order.
fn launch_all(
    stream: &Arc<CudaStream>,
    loaded: &Loaded,
    launches: &[LaunchSpec],
    pointers: &Pointers,
) -> Result<(), RunError> {
    stream
        .context()
        .bind_to_thread()
        .doing("making the context current")?;
    launches
        .iter()
        .try_for_each(|l| program::launch(loaded, l, pointers, stream.cu_stream()))
}

/// Runs a variant once and waits for it: its launches, or its host program.
fn run_checked(
    gpu: &Gpu,
    loaded: &Loaded,
    launches: &[LaunchSpec],
    steps: Option<&StepProgram>,
    buffers: &[BufferSpec],
    bufs: &Buffers,
    what: &str,
) -> Result<(), RunError> {
    if let Some(p) = steps {
        return HostProgram::new(gpu, p)?.run(loaded, launches, buffers, bufs, what);
    }
    launch_all(&gpu.stream, loaded, launches, &bufs.pointers)?;
    gpu.stream.synchronize().doing(format!(
        "running {what} (a fault here is an illegal memory access or a trap in the kernel)"
    ))
}

/// Verifies the variant's output against its correctness spec, on fresh buffers.
fn verify(
    gpu: &Gpu,
    spec: &JobSpec,
    loaded: &Loaded,
    bufs: &mut Buffers,
    compile: &mut Vec<CompileInfo>,
) -> Result<Option<Correctness>, RunError> {
    let elem_of = |i: usize| spec.buffers[i].elem;
    let outcome = match &spec.correctness {
        CorrectnessSpec::None => return Ok(None),
        CorrectnessSpec::SameAs {
            output,
            reference_output,
            tolerance,
        } => {
            let r = spec
                .reference
                .as_ref()
                .ok_or_else(|| RunError::Invalid("same_as check without a reference".into()))?;
            let ref_loaded = load(
                gpu,
                &r.program,
                &r.variant,
                &r.launches,
                &spec.buffers,
                compile,
            )?;
            bufs.reset(gpu, spec)?;
            run_checked(
                gpu,
                &ref_loaded,
                &r.launches,
                r.steps.as_ref(),
                &spec.buffers,
                bufs,
                &format!("reference variant `{}`", r.variant),
            )?;
            let expected_buffer = reference_output.unwrap_or(*output);
            let expected = bufs.download(gpu, spec, expected_buffer)?;
            bufs.reset(gpu, spec)?;
            run_checked(
                gpu,
                loaded,
                &spec.launches,
                spec.steps.as_ref(),
                &spec.buffers,
                bufs,
                "the variant",
            )?;
            let got = bufs.download(gpu, spec, *output)?;
            let outcome = check_same(
                elem_of(expected_buffer),
                &expected,
                elem_of(*output),
                &got,
                *tolerance,
            );
            bufs.recycle(expected_buffer, expected);
            bufs.recycle(*output, got);
            outcome
        }
        // The built-in references: run the variant once on fresh buffers, compare one output with
        // what the buffers started as.
        CorrectnessSpec::Copy { output, .. }
        | CorrectnessSpec::Transpose { output, .. }
        | CorrectnessSpec::Sum { output, .. }
        | CorrectnessSpec::Matmul { output, .. }
        | CorrectnessSpec::Scan { output, .. }
        | CorrectnessSpec::Compact { output, .. }
        | CorrectnessSpec::Sort { output, .. }
        | CorrectnessSpec::Histogram { output, .. }
        | CorrectnessSpec::Function { output, .. }
        | CorrectnessSpec::Add { output, .. } => {
            bufs.reset(gpu, spec)?;
            run_checked(
                gpu,
                loaded,
                &spec.launches,
                spec.steps.as_ref(),
                &spec.buffers,
                bufs,
                "the variant",
            )?;
            let (elem, got) = (elem_of(*output), bufs.download(gpu, spec, *output)?);
            let input_elem = spec
                .correctness
                .inputs()
                .first()
                .map_or(elem, |&i| elem_of(i));
            let initial: Vec<Option<&HostData>> = bufs.initial.iter().map(Option::as_ref).collect();
            let outcome = spec
                .correctness
                .against_inputs(elem, input_elem, &initial, &got);
            bufs.recycle(*output, got);
            outcome.ok_or_else(|| {
                RunError::Invalid(
                    "a check input is not initialised with random or iota data".into(),
                )
            })?
        }
    };
    Ok(Some(outcome))
}

/// What timing found: per-run times and how they were taken.
pub struct Timed {
    pub samples_ms: Vec<f64>,
    pub runs_per_sample: u32,
    pub warmup_runs: u32,
    pub stopped_by: String,
    /// How the samples were taken, in words for the report.
    pub method: String,
    /// The SM clock NVML read after each sample.
    pub clocks: Vec<Option<ClockSample>>,
    /// How long the warm-up ran, in ms.
    pub warmup_ms: f64,
}

/// Warm-up goes on until the last three SM clock readings are within 1% of each other, for at
/// most this long: a clock still ramping would slow the first samples.
const MAX_CLOCK_SETTLE_MS: f64 = 2000.0;

fn clock_settled(readings: &[u32]) -> bool {
    match readings {
        [.., a, b, c] => {
            let (lo, hi) = (*a.min(b).min(c) as f64, *a.max(b).max(c) as f64);
            hi <= lo * 1.01
        }
        _ => false,
    }
}

/// Below this per-run time a cold sample is a CUDA graph of many (eviction, event, run, event)
/// in a row, each run read between its event nodes. Timed one launch at a time between events, a cold kernel reads
/// 1 to 8 µs more than ncu's `gpu__time_duration` whatever its length (the launch and the events;
/// 92 transpose jobs on an H100, reports/cold-h100, 2026-11-22): 3% of 0.25 ms is 7.5 µs, so
/// shorter kernels are timed in graphs.
pub const GRAPH_BELOW_MS: f64 = 0.25;

/// Whether the runs may be captured into a CUDA graph (a library call bound to the default stream
/// may not), and if not, why (said in the job's timing method where a graph would have been used).
#[derive(Clone, Copy, PartialEq)]
pub enum Capture {
    Allowed,
    Never(&'static str),
}

/// Times `run` (one run of the variant, on the stream it is given) with CUDA events until the
/// stopping rule is met.
pub fn time_runs(
    gpu: &Gpu,
    cfg: &TimingConfig,
    capture: Capture,
    mut run: impl FnMut(&Arc<CudaStream>) -> Result<(), RunError>,
    check: &mut impl FnMut() -> Result<(), RunError>,
) -> Result<Timed, RunError> {
    let stream = gpu.stream.clone();
    // cudarc's default event flags disable timing; events that time need CU_EVENT_DEFAULT.
    let event = || {
        gpu.ctx
            .new_event(Some(cudarc::driver::sys::CUevent_flags::CU_EVENT_DEFAULT))
            .doing("creating a CUDA event")
    };
    let (start, stop) = (event()?, event()?);
    // Cold: a buffer of twice the L2 is read before every sample, outside the timed region.
    let flush = match cfg.cache {
        CacheState::Warm => None,
        CacheState::Cold => Some(gpu.flush()?),
    };
    // Warm-up: module load, first-touch and clocks ramping stay out of the samples; it goes on
    // until the SM clock is steady (without NVML, for the set time only).
    let (warmup_runs, warmup_ms) = warm_up(gpu, cfg, || {
        run(&stream)?;
        stream.synchronize().doing("warming up")
    })?;
    // Calibrate back to back, as samples run: the warm-up's syncs would add host gaps to short kernels.
    let calibration_runs = warmup_runs.min(100);
    start.record(&stream).doing("recording an event")?;
    for _ in 0..calibration_runs {
        run(&stream)?;
    }
    stop.record(&stream).doing("recording an event")?;
    stop.synchronize().doing("calibrating")?;
    let per_run = (start.elapsed_ms(&stop).doing("reading calibration time")? as f64
        / calibration_runs as f64)
        .max(1e-4);
    let mut method = match &flush {
        Some(_) => "events around one run after an L2 flush".to_string(),
        None => "events around back-to-back runs".to_string(),
    };
    if let (Some(_), Capture::Never(why), true) = (&flush, capture, per_run < GRAPH_BELOW_MS) {
        method = format!("{method} (not in a CUDA graph: {why})");
    }
    if let (Some(f), Capture::Allowed, true) = (&flush, capture, per_run < GRAPH_BELOW_MS) {
        match time_graphs(gpu, cfg, f, per_run, &mut run, check) {
            Ok(timed) => {
                return Ok(Timed {
                    warmup_runs,
                    warmup_ms,
                    ..timed
                });
            }
            // A kernel that cannot be captured is still timed, the plain way, and says why;
            // any other error (a fault, a failed verification) is the job's.
            Err(GraphError::Capture(e)) => {
                method = format!(
                    "{method} (a CUDA graph could not be captured: {})",
                    e.to_string().lines().next().unwrap_or_default()
                )
            }
            Err(GraphError::Run(e)) => return Err(e),
        }
    }
    // Cold: one run a sample (a second run would find the first one's data in L2).
    let runs_per_sample = if flush.is_some() {
        1
    } else {
        ((cfg.min_sample_ms / per_run).ceil() as u32).clamp(1, 10_000)
    };
    let mut samples = Vec::new();
    let mut clocks = Vec::new();
    let mut clock = SamplingClock::start();
    let stopped_by = loop {
        if let Some(f) = &flush {
            f.evict(&stream)?;
        }
        start.record(&stream).doing("recording an event")?;
        for _ in 0..runs_per_sample {
            run(&stream)?;
        }
        stop.record(&stream).doing("recording an event")?;
        stop.synchronize().doing("timing the variant")?;
        samples.push(
            start.elapsed_ms(&stop).doing("reading event time")? as f64 / runs_per_sample as f64,
        );
        clocks.push(gpu.clock());
        clock.verify_every(cfg, samples.len(), check)?;
        if let Some(why) = stop_sampling(cfg, &samples, clock.seconds()) {
            break why;
        }
    };
    Ok(Timed {
        samples_ms: samples,
        runs_per_sample,
        warmup_runs,
        stopped_by,
        method,
        clocks,
        warmup_ms,
    })
}

/// Runs `once` (a run that waits for itself) at least 3 times and for `cfg.warmup_ms`, then on
/// until the SM clock is steady (without NVML, for the set time only): module load, first touch
/// and a ramping clock stay out of the samples. Returns the runs and the ms it took.
fn warm_up(
    gpu: &Gpu,
    cfg: &TimingConfig,
    mut once: impl FnMut() -> Result<(), RunError>,
) -> Result<(u32, f64), RunError> {
    let (wall, mut runs, mut readings) = (Instant::now(), 0u32, Vec::<u32>::new());
    loop {
        once()?;
        runs += 1;
        let elapsed = wall.elapsed().as_secs_f64() * 1e3;
        if runs < 3 || elapsed < cfg.warmup_ms {
            continue;
        }
        match gpu.clock() {
            Some(c) if !clock_settled(&readings) && elapsed < MAX_CLOCK_SETTLE_MS => {
                readings.push(c.sm_mhz)
            }
            _ => break,
        }
    }
    Ok((runs, wall.elapsed().as_secs_f64() * 1e3))
}

/// `time_runs` with nothing to verify between samples (the bounds).
fn time_runs_plain(
    gpu: &Gpu,
    cfg: &TimingConfig,
    capture: Capture,
    run: impl FnMut(&Arc<CudaStream>) -> Result<(), RunError>,
) -> Result<Timed, RunError> {
    time_runs(gpu, cfg, capture, run, &mut || Ok(()))
}

/// Sampling time, without the time spent verifying between samples.
struct SamplingClock {
    started: Instant,
    paused: std::time::Duration,
}

impl SamplingClock {
    fn start() -> Self {
        SamplingClock {
            started: Instant::now(),
            paused: std::time::Duration::ZERO,
        }
    }

    fn seconds(&self) -> f64 {
        (self.started.elapsed() - self.paused).as_secs_f64()
    }

    /// `--verify-every K`: after every K-th sample, the check runs (its time not counted).
    fn verify_every(
        &mut self,
        cfg: &TimingConfig,
        samples: usize,
        check: &mut impl FnMut() -> Result<(), RunError>,
    ) -> Result<(), RunError> {
        if cfg.verify_every > 0 && samples.is_multiple_of(cfg.verify_every as usize) {
            let t = Instant::now();
            check()?;
            self.paused += t.elapsed();
        }
        Ok(())
    }
}

/// The stopping rule: enough samples and the noise target met, or a cap reached.
fn stop_sampling(cfg: &TimingConfig, samples: &[f64], seconds: f64) -> Option<String> {
    if samples.len() < cfg.min_samples {
        return None;
    }
    if stats::summarize(samples).is_some_and(|s| s.relative_half_width() <= cfg.target_rel_ci) {
        return Some(format!(
            "noise target {:.2}% met",
            cfg.target_rel_ci * 100.0
        ));
    }
    if samples.len() >= cfg.max_samples {
        return Some(format!("{} samples", cfg.max_samples));
    }
    (seconds >= cfg.max_seconds).then(|| format!("time cap {:.1}s", cfg.max_seconds))
}

/// Built-in L2 eviction kernel: reads a buffer of twice the L2, grid-stride, so that every line
/// the job left there is replaced by a clean one. A write (a memset) would evict as well but leave
/// the L2 full of dirty lines, whose write-back the timed kernel would then pay for; ncu's cache
/// control leaves a clean L2.
const EVICT_KERNEL: &str = r#"
extern "C" __global__ void gpu_lab_evict_l2(const float4* __restrict__ buffer, unsigned long long n4, float* sink) {
  float acc = 0.f;
  for (unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x; i < n4;
       i += (unsigned long long)gridDim.x * blockDim.x) { float4 v = buffer[i]; acc += v.x + v.y + v.z + v.w; }
  // Never true for a buffer of zeros; keeps the loads.
  if (acc == -1.f) *sink = acc;
}
"#;

/// The L2 flush of cold timing: a clean-read of a buffer of twice the L2 (`EVICT_KERNEL`).
struct Flush {
    _buffer: CudaSlice<u8>,
    kernel: CudaFunction,
    pointer: u64,
    n4: u64,
    blocks: u32,
}

impl Flush {
    fn new(gpu: &Gpu) -> Result<Flush, RunError> {
        use cudarc::driver::sys::CUdevice_attribute as A;
        let l2 = gpu
            .ctx
            .attribute(A::CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE)
            .doing("reading the L2 size")?
            .max(1 << 20) as usize;
        let sms = gpu
            .ctx
            .attribute(A::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)
            .doing("reading the SM count")?
            .max(1) as u32;
        // Zeros (so that the kernel's impossible sum stays impossible), plus 4 bytes of sink at the end.
        let buffer = gpu
            .stream
            .alloc_zeros::<u8>(2 * l2 + 16)
            .doing("allocating the L2 flush buffer")?;
        let pointer = buffer.device_ptr(&gpu.stream).0;
        gpu.stream
            .synchronize()
            .doing("clearing the L2 flush buffer")?;
        Ok(Flush {
            _buffer: buffer,
            kernel: compile_builtin(gpu, EVICT_KERNEL, "gpu_lab_evict_l2")?,
            pointer,
            n4: (2 * l2 / 16) as u64,
            blocks: sms * 8,
        })
    }

    /// Evicts the L2 on `stream` (a kernel launch, so it can be captured into a graph too).
    fn evict(&self, stream: &CudaStream) -> Result<(), RunError> {
        let sink = self.pointer + self.n4 * 16;
        let mut b = stream.launch_builder(&self.kernel);
        b.arg(&self.pointer).arg(&self.n4).arg(&sink);
        // SAFETY: the buffer holds n4 float4s and the sink after them, as the kernel takes.
        unsafe {
            b.launch(LaunchConfig {
                grid_dim: (self.blocks, 1, 1),
                block_dim: (256, 1, 1),
                shared_mem_bytes: 0,
            })
        }
        .doing("evicting the L2")?;
        Ok(())
    }
}

/// Why graph timing stopped: the capture failed (time the plain way) or the run did.
enum GraphError {
    Capture(RunError),
    Run(RunError),
}

/// Cold timing of a short kernel: a sample is a CUDA graph of `n` (L2 eviction, event, run,
/// event) in a row, the mean of the `n` runs' times between their events: no launch gap, and
/// nothing subtracted.
fn time_graphs(
    gpu: &Gpu,
    cfg: &TimingConfig,
    flush: &Flush,
    per_run: f64,
    run: &mut impl FnMut(&Arc<CudaStream>) -> Result<(), RunError>,
    check: &mut impl FnMut() -> Result<(), RunError>,
) -> Result<Timed, GraphError> {
    let graph = capture_graph(gpu, flush, per_run, run).map_err(GraphError::Capture)?;
    sample_graph(gpu, cfg, graph, check).map_err(GraphError::Run)
}

/// The graph of a graph sample, the stream it was captured on, and its runs' (start, end) events.
struct RunGraph {
    stream: Arc<CudaStream>,
    graph: cudarc::driver::CudaGraph,
    events: program::Events,
    n: usize,
}

fn capture_graph(
    gpu: &Gpu,
    flush: &Flush,
    per_run: f64,
    run: &mut impl FnMut(&Arc<CudaStream>) -> Result<(), RunError>,
) -> Result<RunGraph, RunError> {
    use cudarc::driver::sys::{self, CUgraphInstantiate_flags, CUstreamCaptureMode};
    // The default (legacy) stream cannot be captured: a stream of its own, after the uploads.
    gpu.stream.synchronize().doing("finishing the uploads")?;
    let stream = gpu.ctx.new_stream().doing("creating a capture stream")?;
    // About 0.2 ms of the kernel's own time per graph, 10 to 100 runs.
    let n = ((0.2 / per_run).ceil() as usize).clamp(10, 100);
    // Per run: its start and end, then a start and end with nothing between (what the event nodes cost).
    let events = program::Events::new(4 * n, true)?;
    // An event recorded with CU_EVENT_RECORD_EXTERNAL during capture becomes an event record node,
    // recorded each time the graph runs.
    // SAFETY: a live timing event and the capturing stream.
    let mark = |event: sys::CUevent| {
        program::check(
            unsafe {
                sys::cuEventRecordWithFlags(
                    event,
                    stream.cu_stream(),
                    sys::CUevent_record_flags::CU_EVENT_RECORD_EXTERNAL as u32,
                )
            },
            || "recording an event node in a graph".into(),
        )
    };
    stream
        .begin_capture(CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_THREAD_LOCAL)
        .doing("starting a graph capture")?;
    let body = (0..n).try_for_each(|i| {
        flush.evict(&stream)?;
        mark(events.0[4 * i])?;
        run(&stream)?;
        mark(events.0[4 * i + 1])?;
        mark(events.0[4 * i + 2])?;
        mark(events.0[4 * i + 3])
    });
    let graph = stream
        .end_capture(CUgraphInstantiate_flags(0))
        .doing("ending the graph capture");
    body?;
    let graph = graph?.ok_or_else(|| RunError::Invalid("the captured graph is empty".into()))?;
    Ok(RunGraph {
        stream,
        graph,
        events,
        n,
    })
}

fn sample_graph(
    gpu: &Gpu,
    cfg: &TimingConfig,
    g: RunGraph,
    check: &mut impl FnMut() -> Result<(), RunError>,
) -> Result<Timed, RunError> {
    let RunGraph {
        stream,
        graph,
        events,
        n,
    } = g;
    let time = || -> Result<f64, RunError> {
        graph.launch().doing("launching a graph")?;
        stream.synchronize().doing("timing a graph")?;
        let mut total = 0.0;
        for e in events.0.chunks(4) {
            total += program::elapsed_ms(e[0], e[1])? - program::elapsed_ms(e[2], e[3])?;
        }
        Ok(total / n as f64)
    };
    for _ in 0..2 {
        time()?;
    }
    let mut samples = Vec::new();
    let mut clocks = Vec::new();
    let mut clock = SamplingClock::start();
    let stopped_by = loop {
        samples.push(time()?);
        clocks.push(gpu.clock());
        clock.verify_every(cfg, samples.len(), check)?;
        // The check resets the buffers on the default stream; the capture stream does not wait for it.
        gpu.stream.synchronize().doing("finishing a verification")?;
        if let Some(why) = stop_sampling(cfg, &samples, clock.seconds()) {
            break why;
        }
    };
    // The graph's event nodes refer to the events: the graph goes first.
    drop(graph);
    drop(events);
    Ok(Timed {
        samples_ms: samples,
        runs_per_sample: n as u32,
        warmup_runs: 0,
        warmup_ms: 0.0,
        clocks,
        stopped_by,
        method: format!(
            "CUDA graph of {n} (L2 eviction, event, run, event, event, event); a sample is the mean over the {n} runs of the time between a run's events less the time between the two events after it (runs under {} µs)",
            GRAPH_BELOW_MS * 1e3
        ),
    })
}

/// Runs one job: check first, then time. A wrong variant is still timed (the report shows it, never ranks it).
pub fn run_job(
    gpu: &Gpu,
    spec: &JobSpec,
    cfg: &TimingConfig,
    seed: u64,
) -> Result<JobOutcome, RunError> {
    let mut compile = Vec::new();
    set_pending_launches(gpu, &[spec])?;
    let loaded = load(
        gpu,
        &spec.program,
        &spec.key.variant,
        &spec.launches,
        &spec.buffers,
        &mut compile,
    )?;
    // What the SM can hold of each launch; a driver that refuses an attribute costs the job its
    // occupancy record, not its measurement.
    let (occupancy, occupancy_error) = match occupancy_of(gpu, &loaded, &spec.launches) {
        Ok(o) => (o, None),
        Err(e) => (Vec::new(), Some(e.to_string())),
    };
    let mut bufs = Buffers::new(gpu, spec, seed)?;
    let correctness = verify(gpu, spec, &loaded, &mut bufs, &mut compile)?;
    bufs.reset(gpu, spec)?;
    // `--verify-every K`: between timed samples, a launch amid them (same module state, inputs
    // restored) is verified; the first wrong one is kept.
    let pointers = bufs.pointers.clone();
    let (mut during, mut verified_during) = (None::<Correctness>, 0u32);
    let verify_during = correctness.is_some();
    let mut check_during = |bufs: &mut Buffers| -> Result<(), RunError> {
        if !verify_during {
            return Ok(());
        }
        if let Some(c) = verify(gpu, spec, &loaded, bufs, &mut compile)? {
            verified_during += 1;
            if during.as_ref().is_none_or(|d| d.passed) {
                during = Some(c);
            }
        }
        bufs.reset(gpu, spec)
    };
    let (timed, timeline) = match &spec.steps {
        Some(p) => {
            let program = HostProgram::new(gpu, p)?;
            let (timed, timeline) = program::time_program(
                gpu,
                cfg,
                &program,
                &loaded,
                &spec.launches,
                spec,
                &mut bufs,
                &mut check_during,
            )?;
            (timed, Some(timeline))
        }
        None => {
            // Kernels that launch kernels are timed with events: device-side launches inside a graph are
            // recent in the driver (CUDA 12.x, with known issues), and a graph that captured but ran its
            // children wrongly would fail the job instead of falling back.
            let capture = if spec.program.rdc {
                Capture::Never("kernels that launch kernels (rdc) are timed with events")
            } else {
                Capture::Allowed
            };
            (
                time_runs(
                    gpu,
                    cfg,
                    capture,
                    |stream| launch_all(stream, &loaded, &spec.launches, &pointers),
                    &mut || check_during(&mut bufs),
                )?,
                None,
            )
        }
    };
    // Again after timing, on inputs of another seed: a kernel right only on its first launch, or
    // only on the data it was first given, is caught.
    let correctness_after = match correctness {
        Some(_) => {
            bufs.reseed(spec, seed.wrapping_add(1));
            verify(gpu, spec, &loaded, &mut bufs, &mut compile)?
        }
        None => None,
    };
    // Samples taken while throttled or below the clock floor stay out of the median, counted.
    let (samples_ms, excluded_samples) = split_by_clock(&timed.samples_ms, &timed.clocks);
    Ok(JobOutcome {
        correctness,
        samples_ms,
        excluded_samples,
        warmup_ms: timed.warmup_ms,
        sample_clock_mhz: {
            let mhz = timed.clocks.iter().flatten().map(|c| c.sm_mhz);
            mhz.clone().min().zip(mhz.max()).map(|(lo, hi)| [lo, hi])
        },
        runs_per_sample: timed.runs_per_sample,
        warmup_runs: timed.warmup_runs,
        stopped_by: timed.stopped_by,
        compile,
        seed,
        correctness_after,
        timing_method: timed.method,
        correctness_during: during,
        verified_during,
        occupancy,
        occupancy_error,
        timeline,
    })
}

/// Runs each job's launches once, in order, for `ncu` to profile: no check, no timing, so that
/// the n-th profiled kernel is the n-th launch listed here. Jobs of one group declare the same
/// buffers: device buffers are made and filled once and put back to their start before each job.
/// Host-resident and managed ones are made afresh for each job, since where their pages are after
/// a reset is the driver's choice and would change what the next job's kernel is profiled on.
///
/// With `profiled_runs` > 0, each job first runs once unprofiled, then that many times between
/// cuProfilerStart and cuProfilerStop (for ncu's `--profile-from-start off`), its buffers reset
/// before each: a process's first launch of a kernel reads up to 14% long under ncu
/// (reports/gap-probe-h200), while every timed sample follows warm-up launches. Within one job
/// the buffers are kept, as the timed samples keep them: the profiled runs find managed pages
/// where the job's own earlier runs left them, as every sample after the first does.
pub fn run_profile_pass(
    gpu: &Gpu,
    specs: &[JobSpec],
    seed: u64,
    profiled_runs: u32,
) -> Result<(), RunError> {
    set_pending_launches(gpu, &specs.iter().collect::<Vec<_>>())?;
    let mut kept: Option<(&[BufferSpec], Buffers)> = None;
    for spec in specs {
        let mut compile = Vec::new();
        let loaded = load(
            gpu,
            &spec.program,
            &spec.key.variant,
            &spec.launches,
            &spec.buffers,
            &mut compile,
        )?;
        let bufs = match kept.take() {
            Some((buffers, bufs))
                if buffers == spec.buffers.as_slice()
                    && buffers.iter().all(|b| b.memory.is_device()) =>
            {
                bufs
            }
            other => {
                drop(other); // the previous group's buffers go before this one's are made
                Buffers::new(gpu, spec, seed)?
            }
        };
        let (_, bufs) = kept.insert((&spec.buffers, bufs));
        bufs.reset(gpu, spec)?;
        run_checked(
            gpu,
            &loaded,
            &spec.launches,
            spec.steps.as_ref(),
            &spec.buffers,
            bufs,
            spec.id(),
        )?;
        for _ in 0..profiled_runs {
            bufs.reset(gpu, spec)?;
            profiler_range(gpu, true)?;
            run_checked(
                gpu,
                &loaded,
                &spec.launches,
                spec.steps.as_ref(),
                &spec.buffers,
                bufs,
                spec.id(),
            )?;
            profiler_range(gpu, false)?;
        }
    }
    Ok(())
}

/// Opens (cuProfilerStart) or closes (cuProfilerStop) the range of launches that ncu profiles
/// under `--profile-from-start off`.
fn profiler_range(gpu: &Gpu, open: bool) -> Result<(), RunError> {
    gpu.ctx
        .bind_to_thread()
        .doing("making the device's context current")?;
    // SAFETY: neither call takes arguments; both act on the context made current above.
    let status = unsafe {
        if open {
            cudarc::driver::sys::cuProfilerStart()
        } else {
            cudarc::driver::sys::cuProfilerStop()
        }
    };
    status.result().doing(if open {
        "opening the profiled range (cuProfilerStart)"
    } else {
        "closing the profiled range (cuProfilerStop)"
    })
}

/// Built-in copy kernel for the bandwidth bound: 16-byte loads and stores, grid-stride.
const COPY_KERNEL: &str = r#"
extern "C" __global__ void gpu_lab_copy(const float4* __restrict__ in, float4* __restrict__ out, unsigned long long n4) {
  for (unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x; i < n4;
       i += (unsigned long long)gridDim.x * blockDim.x) out[i] = in[i];
}
"#;

/// Built-in FP32 throughput kernel: 8 independent multiply-add chains per thread, every SM full.
const FMA_KERNEL: &str = r#"
extern "C" __global__ void gpu_lab_fma(float* out, int iters) {
  float a0 = threadIdx.x, a1 = a0 + 1.f, a2 = a0 + 2.f, a3 = a0 + 3.f, a4 = a0 + 4.f, a5 = a0 + 5.f, a6 = a0 + 6.f, a7 = a0 + 7.f;
  for (int i = 0; i < iters; ++i) {
#pragma unroll
    for (int u = 0; u < 16; ++u) {
      a0 = fmaf(a0, 0.9999f, 0.0001f); a1 = fmaf(a1, 0.9999f, 0.0001f); a2 = fmaf(a2, 0.9999f, 0.0001f); a3 = fmaf(a3, 0.9999f, 0.0001f);
      a4 = fmaf(a4, 0.9999f, 0.0001f); a5 = fmaf(a5, 0.9999f, 0.0001f); a6 = fmaf(a6, 0.9999f, 0.0001f); a7 = fmaf(a7, 0.9999f, 0.0001f);
    }
  }
  // Never true for these values; keeps the chains live.
  if (a0 + a1 + a2 + a3 + a4 + a5 + a6 + a7 == -1.f) out[0] = a0;
}
"#;

fn compile_builtin(gpu: &Gpu, source: &str, name: &str) -> Result<CudaFunction, RunError> {
    let ptx = cudarc::nvrtc::compile_ptx_with_opts(
        source,
        cudarc::nvrtc::CompileOptions {
            options: vec![format!("--gpu-architecture={}", gpu.arch)],
            ..Default::default()
        },
    )
    .map_err(|e| RunError::Invalid(format!("built-in kernel {name}: {e:?}")))?;
    let module = gpu
        .ctx
        .load_module(ptx)
        .doing(format!("loading the built-in kernel {name}"))?;
    module
        .load_function(name)
        .doing(format!("finding the built-in kernel {name}"))
}

/// The FP32 multiply-add rate: samples, flops per launch, SM count.
fn run_fma(gpu: &Gpu, cfg: &TimingConfig, sms: u32) -> Result<(Vec<f64>, f64, u32), RunError> {
    let f = compile_builtin(gpu, FMA_KERNEL, "gpu_lab_fma")?;
    // SAFETY: written only if the impossible sum comes true; never read.
    let out = unsafe { gpu.stream.alloc::<f32>(1) }.doing("allocating the FMA kernel's output")?;
    let out_ptr = out.device_ptr(&gpu.stream).0;
    let (blocks, threads, iters) = (sms * 8, 256u32, 256i32);
    let flops = blocks as f64 * threads as f64 * iters as f64 * 16.0 * 8.0 * 2.0;
    let samples = time_runs_plain(gpu, cfg, Capture::Allowed, |stream| {
        let mut b = stream.launch_builder(&f);
        b.arg(&out_ptr).arg(&iters);
        // SAFETY: one pointer and one int, as the kernel takes.
        unsafe {
            b.launch(LaunchConfig {
                grid_dim: (blocks, 1, 1),
                block_dim: (threads, 1, 1),
                shared_mem_bytes: 0,
            })
        }
        .doing("launching the FMA kernel")?;
        Ok(())
    })?
    .samples_ms;
    Ok((samples, flops, sms))
}

/// The copy bounds over `bytes`, and with `fma` the FP32 multiply-add rate.
pub fn run_bounds(
    gpu: &Gpu,
    bytes: u64,
    cfg: &TimingConfig,
    fma: bool,
    host_link: bool,
) -> Result<BoundsOutcome, RunError> {
    let bytes = bytes.div_ceil(16) * 16;
    let src_data = HostData::init(ElemType::U32, (bytes / 4) as usize, Init::Random, 1);
    let src = gpu
        .stream
        .clone_htod(src_data.as_bytes())
        .doing("uploading the copy source")?;
    // SAFETY: fully written by the copies before it is read.
    let dst =
        unsafe { gpu.stream.alloc::<u8>(bytes as usize) }.doing("allocating the copy target")?;
    let (src_ptr, dst_ptr) = (src.device_ptr(&gpu.stream).0, dst.device_ptr(&gpu.stream).0);
    let memcpy_samples_ms = time_runs_plain(gpu, cfg, Capture::Allowed, |stream| {
        // SAFETY: both buffers hold `bytes` bytes. Raw pointers: a graph capture must not see
        // cudarc's cross-stream event tracking.
        unsafe {
            cudarc::driver::result::memcpy_dtod_async(
                dst_ptr,
                src_ptr,
                bytes as usize,
                stream.cu_stream(),
            )
        }
        .doing("device-to-device copy")
    })?
    .samples_ms;
    let f = compile_builtin(gpu, COPY_KERNEL, "gpu_lab_copy")?;
    let sms = gpu
        .ctx
        .attribute(
            cudarc::driver::sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT,
        )
        .doing("reading the SM count")? as u64;
    let n4 = bytes / 16;
    let blocks = n4.div_ceil(256).min(sms * 32).max(1) as u32;
    let kernel_samples_ms = time_runs_plain(gpu, cfg, Capture::Allowed, |stream| {
        let mut b = stream.launch_builder(&f);
        b.arg(&src_ptr).arg(&dst_ptr).arg(&n4);
        // SAFETY: both buffers hold n4 float4s.
        unsafe {
            b.launch(LaunchConfig {
                grid_dim: (blocks, 1, 1),
                block_dim: (256, 1, 1),
                shared_mem_bytes: 0,
            })
        }
        .doing("launching the copy kernel")?;
        Ok(())
    })?
    .samples_ms;
    let fma = if fma {
        Some(run_fma(gpu, cfg, sms as u32)?)
    } else {
        None
    };
    let host = if host_link {
        Some(run_host_link(gpu, bytes, cfg)?)
    } else {
        None
    };
    Ok(BoundsOutcome {
        bytes,
        memcpy_samples_ms,
        kernel_samples_ms,
        fma,
        host,
    })
}

/// The host link's bounds at `bytes`: pinned copies each way, both ways at once on two streams,
/// and pageable copies each way (staged by the driver through its own pinned buffer).
fn run_host_link(gpu: &Gpu, bytes: u64, cfg: &TimingConfig) -> Result<HostLinkSamples, RunError> {
    use cudarc::driver::sys;
    let n = bytes as usize;
    let allocate = |memory, name| Allocation::new(gpu, memory, n, &[], name);
    let (mut pinned, mut pinned_back, mut pageable) = (
        allocate(Memory::Pinned, "host link: pinned")?,
        allocate(Memory::Pinned, "host link: pinned, second")?,
        allocate(Memory::Pageable, "host link: pageable")?,
    );
    // Pages touched before timing: a first-touch fault is not the link's speed.
    for host in [
        pinned.host_bytes(),
        pinned_back.host_bytes(),
        pageable.host_bytes(),
    ]
    .into_iter()
    .flatten()
    {
        host.fill(1);
    }
    let (device, device_back) = (
        allocate(Memory::Device, "host link: device")?,
        allocate(Memory::Device, "host link: device, second")?,
    );
    let at = |a: &Allocation| a.copy_address(gpu);
    let never = Capture::Never("copies over the host link are timed with events");
    let copy = |dst: u64, src: u64| {
        move |stream: &Arc<CudaStream>| -> Result<(), RunError> {
            // SAFETY: both are live allocations of `n` bytes; unified addressing tells the driver which side each is on.
            program::check(
                unsafe { sys::cuMemcpyAsync(dst, src, n, stream.cu_stream()) },
                || format!("copying {n} bytes over the host link"),
            )
        }
    };
    let h2d_pinned = time_runs_plain(gpu, cfg, never, copy(at(&device), at(&pinned)))?.samples_ms;
    let d2h_pinned =
        time_runs_plain(gpu, cfg, never, copy(at(&pinned_back), at(&device_back)))?.samples_ms;
    let h2d_pageable =
        time_runs_plain(gpu, cfg, never, copy(at(&device), at(&pageable)))?.samples_ms;
    let d2h_pageable =
        time_runs_plain(gpu, cfg, never, copy(at(&pageable), at(&device_back)))?.samples_ms;
    // Both ways at once: the second direction on a stream of its own that forks from and joins the timed one.
    let other = gpu.ctx.new_stream().doing("creating a second stream")?;
    let events = program::Events::new(2, false)?;
    let (fork, join) = (events.0[0], events.0[1]);
    let (up, down) = (
        copy(at(&device), at(&pinned)),
        copy(at(&pinned_back), at(&device_back)),
    );
    let both = time_runs_plain(gpu, cfg, never, |stream| {
        program::record(fork, stream.cu_stream())?;
        program::wait(other.cu_stream(), fork)?;
        up(stream)?;
        down(&other)?;
        program::record(join, other.cu_stream())?;
        program::wait(stream.cu_stream(), join)
    });
    Ok(HostLinkSamples {
        h2d_pinned,
        d2h_pinned,
        bidirectional_pinned: both?.samples_ms,
        h2d_pageable,
        d2h_pageable,
    })
}

/// cuBLAS at a matmul shape, math mode pinned to `CUBLAS_DEFAULT_MATH` (FP32 without TF32 tensor
/// cores): GEMV where n = 1, GEMM otherwise, on random data, timed like a variant.
pub fn run_cublas(
    gpu: &Gpu,
    shape: &MatmulShape,
    elem: ElemType,
    cfg: &TimingConfig,
) -> Result<ComputeOutcome, RunError> {
    use cudarc::cublas::{result as blas, sys as bs};
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
    let dim = |x: u64| {
        i32::try_from(x).map_err(|_| {
            RunError::Invalid(format!("cuBLAS takes 32-bit dimensions; {x} is too large"))
        })
    };
    let (m, n, k) = (dim(shape.m)?, dim(shape.n)?, dim(shape.k)?);
    let op = |t: bool| {
        if t {
            bs::cublasOperation_t::CUBLAS_OP_T
        } else {
            bs::cublasOperation_t::CUBLAS_OP_N
        }
    };
    // Row-major C = op(A) op(B) is column-major C^T = op(B)^T op(A)^T (see MatmulShape).
    let (lda, ldb) = (
        if shape.trans_a { m } else { k },
        if shape.trans_b { k } else { n },
    );
    let gemv = shape.n == 1 && !shape.trans_b;
    let (alpha32, beta32) = (shape.alpha as f32, shape.beta as f32);
    let call = || -> Result<(), RunError> {
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
    };
    // The handle is bound to the default stream, which a graph cannot capture.
    let samples_ms = time_runs_plain(
        gpu,
        cfg,
        Capture::Never("cuBLAS is bound to the default stream"),
        |_| call(),
    )?
    .samples_ms;
    Ok(ComputeOutcome {
        samples_ms,
        math_mode: "CUBLAS_DEFAULT_MATH (FP32 without TF32 tensor cores)".into(),
    })
}
