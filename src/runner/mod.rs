//! One job on one GPU, run inside the child process: build, allocate, initialise, check against the reference, time with CUDA events.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

use cudarc::driver::{CudaContext, CudaFunction, CudaModule, CudaSlice, CudaStream, DevicePtr, LaunchConfig, PushKernelArg};
use crate::build;
use crate::device::driver_present;
use crate::records::{BoundsOutcome, CompileInfo, JobOutcome, TimingConfig};
use crate::stats;
use crate::suite::{ArgSpec, JobSpec, LaunchSpec, Program};
use crate::verify::{check_same, Correctness, CorrectnessSpec, ElemType, HostData, Init};

#[derive(Debug, thiserror::Error)]
pub enum RunError {
    #[error("CUDA driver error while {doing}: {source}")]
    Driver { doing: String, source: cudarc::driver::DriverError },
    #[error(transparent)]
    Build(#[from] build::BuildError),
    #[error("no CUDA driver: libcuda was not found\n  fix: run on a machine with an NVIDIA GPU and its driver installed (see `gpu-lab doctor`)")]
    NoDriver,
    #[error("{0}")]
    Invalid(String),
}

trait Doing<T> {
    fn doing(self, what: impl Into<String>) -> Result<T, RunError>;
}

impl<T> Doing<T> for Result<T, cudarc::driver::DriverError> {
    fn doing(self, what: impl Into<String>) -> Result<T, RunError> {
        self.map_err(|source| RunError::Driver { doing: what.into(), source })
    }
}

/// An open GPU: context, stream, the architecture string for NVRTC and where compiled PTX is cached.
pub struct Gpu {
    pub ctx: Arc<CudaContext>,
    pub stream: Arc<CudaStream>,
    pub arch: String,
    pub cache_dir: Option<PathBuf>,
}

impl Gpu {
    pub fn open(ordinal: usize, cache_dir: Option<PathBuf>) -> Result<Gpu, RunError> {
        if !driver_present() {
            return Err(RunError::NoDriver);
        }
        let ctx = CudaContext::new(ordinal).doing(format!("opening GPU {ordinal}"))?;
        let (major, minor) = ctx.compute_capability().doing("reading the compute capability")?;
        let stream = ctx.default_stream();
        Ok(Gpu { ctx, stream, arch: format!("sm_{major}{minor}"), cache_dir })
    }
}

/// Compiled functions of one program, by kernel name.
struct Loaded {
    _module: Arc<CudaModule>,
    functions: HashMap<String, CudaFunction>,
}

fn load(gpu: &Gpu, program: &Program, launches: &[LaunchSpec], info: &mut Vec<CompileInfo>) -> Result<Loaded, RunError> {
    let compiled = build::compile(program, &gpu.arch, gpu.cache_dir.as_deref())?;
    info.push(CompileInfo { source: program.source_path.display().to_string(), cached: compiled.cached, millis: compiled.millis });
    let module = gpu.ctx.load_module(cudarc::nvrtc::Ptx::from_src(compiled.ptx)).doing("loading the compiled module")?;
    let mut functions = HashMap::new();
    for l in launches {
        if functions.contains_key(&l.kernel) {
            continue;
        }
        let f = module.load_function(&l.kernel).doing(format!("finding kernel `{}` (is it extern \"C\"?)", l.kernel))?;
        if l.shared_bytes > 48 * 1024 {
            f.set_attribute(cudarc::driver::sys::CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, l.shared_bytes as i32)
                .doing(format!("allowing {} bytes of dynamic shared memory", l.shared_bytes))?;
        }
        functions.insert(l.kernel.clone(), f);
    }
    Ok(Loaded { _module: module, functions })
}

/// Device buffers of a job with the host data they start from.
struct Buffers {
    device: Vec<CudaSlice<u8>>,
    initial: Vec<Option<HostData>>,
    pointers: Vec<u64>,
}

impl Buffers {
    fn new(gpu: &Gpu, spec: &JobSpec, seed: u64) -> Result<Buffers, RunError> {
        let mut device = Vec::new();
        let mut initial = Vec::new();
        let mut pointers = Vec::new();
        for (i, b) in spec.buffers.iter().enumerate() {
            let bytes = b.bytes() as usize;
            // SAFETY: every byte is written by `reset` before any kernel reads it.
            let slice = unsafe { gpu.stream.alloc::<u8>(bytes.max(1)) }.doing(format!("allocating {bytes} bytes for buffer `{}`", b.name))?;
            pointers.push(slice.device_ptr(&gpu.stream).0);
            initial.push(match b.init {
                Init::Random | Init::RandomInt | Init::Iota => Some(HostData::init(b.elem, b.len as usize, b.init, seed.wrapping_add(i as u64))),
                Init::Poison | Init::Zero => None,
            });
            device.push(slice);
        }
        Ok(Buffers { device, initial, pointers })
    }

    /// Puts every buffer back to its initial state (inputs re-uploaded, outputs poisoned again).
    fn reset(&mut self, gpu: &Gpu, spec: &JobSpec) -> Result<(), RunError> {
        for (i, b) in spec.buffers.iter().enumerate() {
            match &self.initial[i] {
                Some(data) => gpu.stream.memcpy_htod(data.as_bytes(), &mut self.device[i]).doing(format!("uploading buffer `{}`", b.name))?,
                None => {
                    let byte = if b.init == Init::Poison { 0xFF } else { 0 };
                    // SAFETY: the pointer and length are those of a live allocation on this stream.
                    unsafe { cudarc::driver::result::memset_d8_async(self.pointers[i], byte, b.bytes() as usize, gpu.stream.cu_stream()) }
                        .doing(format!("filling buffer `{}`", b.name))?;
                }
            }
        }
        Ok(())
    }

    fn download(&self, gpu: &Gpu, spec: &JobSpec, index: usize) -> Result<HostData, RunError> {
        let b = &spec.buffers[index];
        let mut data = HostData::zeroed(b.elem, b.len as usize);
        gpu.stream.memcpy_dtoh(&self.device[index], data.as_bytes_mut()).doing(format!("downloading buffer `{}`", b.name))?;
        Ok(data)
    }
}

/// Launches every kernel of a variant once, in order.
fn launch_all(gpu: &Gpu, loaded: &Loaded, launches: &[LaunchSpec], pointers: &[u64]) -> Result<(), RunError> {
    for l in launches {
        let f = &loaded.functions[&l.kernel];
        let mut b = gpu.stream.launch_builder(f);
        // Arguments live in this vector until the launch is queued (the builder keeps pointers to them).
        let values: Vec<ArgSpec> = l.args.iter().map(|a| match a {
            ArgSpec::Buffer(i) => ArgSpec::U64(pointers[*i]),
            other => *other,
        }).collect();
        for v in &values {
            match v {
                ArgSpec::U64(x) => b.arg(x),
                ArgSpec::I32(x) => b.arg(x),
                ArgSpec::U32(x) => b.arg(x),
                ArgSpec::I64(x) => b.arg(x),
                ArgSpec::F32(x) => b.arg(x),
                ArgSpec::Buffer(_) => unreachable!("replaced by its pointer above"),
            };
        }
        let cfg = LaunchConfig { grid_dim: (l.grid[0], l.grid[1], l.grid[2]), block_dim: (l.block[0], l.block[1], l.block[2]), shared_mem_bytes: l.shared_bytes };
        // SAFETY: argument count and types come from the manifest; a mismatch is the kernel author's
        // bug and at worst faults this child process, which is why jobs run in one.
        unsafe { b.launch(cfg) }.doing(format!("launching `{}` grid {:?} block {:?}", l.kernel, l.grid, l.block))?;
    }
    Ok(())
}

fn run_checked(gpu: &Gpu, loaded: &Loaded, launches: &[LaunchSpec], bufs: &Buffers, what: &str) -> Result<(), RunError> {
    launch_all(gpu, loaded, launches, &bufs.pointers)?;
    gpu.stream.synchronize().doing(format!("running {what} (a fault here is an illegal memory access or a trap in the kernel)"))
}

fn input_ref<'a>(bufs: &'a Buffers, spec: &JobSpec, i: usize) -> Result<&'a HostData, RunError> {
    bufs.initial[i].as_ref().ok_or_else(|| RunError::Invalid(format!("check input `{}` is not initialised with random or iota data", spec.buffers[i].name)))
}

/// Verifies the variant's output against its correctness spec, on fresh buffers.
fn verify(gpu: &Gpu, spec: &JobSpec, loaded: &Loaded, bufs: &mut Buffers, compile: &mut Vec<CompileInfo>) -> Result<Option<Correctness>, RunError> {
    let elem_of = |i: usize| spec.buffers[i].elem;
    let outcome = match &spec.correctness {
        CorrectnessSpec::None => return Ok(None),
        CorrectnessSpec::SameAs { output, tolerance } => {
            let r = spec.reference.as_ref().ok_or_else(|| RunError::Invalid("same_as check without a reference".into()))?;
            let ref_loaded = load(gpu, &r.program, &r.launches, compile)?;
            bufs.reset(gpu, spec)?;
            run_checked(gpu, &ref_loaded, &r.launches, bufs, &format!("reference variant `{}`", r.variant))?;
            let expected = bufs.download(gpu, spec, *output)?;
            bufs.reset(gpu, spec)?;
            run_checked(gpu, loaded, &spec.launches, bufs, "the variant")?;
            check_same(elem_of(*output), &expected, &bufs.download(gpu, spec, *output)?, *tolerance)
        }
        // The built-in references: run the variant once on fresh buffers, compare one output with its input.
        CorrectnessSpec::Copy { input, output, .. } | CorrectnessSpec::Transpose { input, output, .. } | CorrectnessSpec::Sum { input, output, .. } => {
            bufs.reset(gpu, spec)?;
            run_checked(gpu, loaded, &spec.launches, bufs, "the variant")?;
            let (elem, got) = (elem_of(*output), bufs.download(gpu, spec, *output)?);
            let want = input_ref(bufs, spec, *input)?;
            spec.correctness.against_input(elem, want, &got).expect("a built-in reference")
        }
    };
    Ok(Some(outcome))
}

/// Times `run` (one run of the variant) with CUDA events until the stopping rule is met.
pub fn time_runs(gpu: &Gpu, cfg: &TimingConfig, mut run: impl FnMut() -> Result<(), RunError>) -> Result<(Vec<f64>, u32, u32, String), RunError> {
    // cudarc's default event flags disable timing; events that time need CU_EVENT_DEFAULT.
    let event = || gpu.ctx.new_event(Some(cudarc::driver::sys::CUevent_flags::CU_EVENT_DEFAULT)).doing("creating a CUDA event");
    let (start, stop) = (event()?, event()?);
    // Warm-up: module load, first-touch and clocks ramping stay out of the samples.
    let mut warmup_runs = 0u32;
    let wall = Instant::now();
    while warmup_runs < 3 || wall.elapsed().as_secs_f64() * 1e3 < cfg.warmup_ms {
        run()?;
        warmup_runs += 1;
        gpu.stream.synchronize().doing("warming up")?;
    }
    // Calibrate back to back, as samples run: the warm-up's syncs would add host gaps to short kernels.
    let calibration_runs = warmup_runs.min(100);
    start.record(&gpu.stream).doing("recording an event")?;
    for _ in 0..calibration_runs {
        run()?;
    }
    stop.record(&gpu.stream).doing("recording an event")?;
    stop.synchronize().doing("calibrating")?;
    let per_run = (start.elapsed_ms(&stop).doing("reading calibration time")? as f64 / calibration_runs as f64).max(1e-4);
    let runs_per_sample = ((cfg.min_sample_ms / per_run).ceil() as u32).clamp(1, 10_000);
    let mut samples = Vec::new();
    let sampling = Instant::now();
    let stopped_by = loop {
        start.record(&gpu.stream).doing("recording an event")?;
        for _ in 0..runs_per_sample {
            run()?;
        }
        stop.record(&gpu.stream).doing("recording an event")?;
        stop.synchronize().doing("timing the variant")?;
        samples.push(start.elapsed_ms(&stop).doing("reading event time")? as f64 / runs_per_sample as f64);
        if samples.len() < cfg.min_samples {
            continue;
        }
        if stats::summarize(&samples).is_some_and(|s| s.relative_half_width() <= cfg.target_rel_ci) {
            break format!("noise target {:.2}% met", cfg.target_rel_ci * 100.0);
        }
        if samples.len() >= cfg.max_samples {
            break format!("{} samples", cfg.max_samples);
        }
        if sampling.elapsed().as_secs_f64() >= cfg.max_seconds {
            break format!("time cap {:.1}s", cfg.max_seconds);
        }
    };
    Ok((samples, runs_per_sample, warmup_runs, stopped_by))
}

/// Runs one job: check first, then time. A wrong variant is still timed (the report shows it, never ranks it).
pub fn run_job(gpu: &Gpu, spec: &JobSpec, cfg: &TimingConfig, seed: u64) -> Result<JobOutcome, RunError> {
    let mut compile = Vec::new();
    let loaded = load(gpu, &spec.program, &spec.launches, &mut compile)?;
    let mut bufs = Buffers::new(gpu, spec, seed)?;
    let correctness = verify(gpu, spec, &loaded, &mut bufs, &mut compile)?;
    bufs.reset(gpu, spec)?;
    let (samples_ms, runs_per_sample, warmup_runs, stopped_by) = time_runs(gpu, cfg, || launch_all(gpu, &loaded, &spec.launches, &bufs.pointers))?;
    Ok(JobOutcome { correctness, samples_ms, runs_per_sample, warmup_runs, stopped_by, compile, seed })
}

/// Runs each job's launches exactly once, in order, for `ncu` to profile: no check, no timing,
/// so that the n-th profiled kernel is the n-th launch listed here.
pub fn run_profile_pass(gpu: &Gpu, specs: &[JobSpec], seed: u64) -> Result<(), RunError> {
    for spec in specs {
        let mut compile = Vec::new();
        let loaded = load(gpu, &spec.program, &spec.launches, &mut compile)?;
        let mut bufs = Buffers::new(gpu, spec, seed)?;
        bufs.reset(gpu, spec)?;
        run_checked(gpu, &loaded, &spec.launches, &bufs, spec.id())?;
    }
    Ok(())
}

/// Built-in copy kernel for the bandwidth bound: 16-byte loads and stores, grid-stride.
const COPY_KERNEL: &str = r#"
extern "C" __global__ void gpu_lab_copy(const float4* __restrict__ in, float4* __restrict__ out, unsigned long long n4) {
  for (unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x; i < n4;
       i += (unsigned long long)gridDim.x * blockDim.x) out[i] = in[i];
}
"#;

pub fn run_bounds(gpu: &Gpu, bytes: u64, cfg: &TimingConfig) -> Result<BoundsOutcome, RunError> {
    let bytes = bytes.div_ceil(16) * 16;
    let src_data = HostData::init(ElemType::U32, (bytes / 4) as usize, Init::Random, 1);
    let src = gpu.stream.clone_htod(src_data.as_bytes()).doing("uploading the copy source")?;
    // SAFETY: fully written by the copies before it is read.
    let mut dst = unsafe { gpu.stream.alloc::<u8>(bytes as usize) }.doing("allocating the copy target")?;
    let (memcpy_samples_ms, ..) = time_runs(gpu, cfg, || gpu.stream.memcpy_dtod(&src, &mut dst).doing("device-to-device copy"))?;
    let ptx = cudarc::nvrtc::compile_ptx_with_opts(COPY_KERNEL, cudarc::nvrtc::CompileOptions { options: vec![format!("--gpu-architecture={}", gpu.arch)], ..Default::default() })
        .map_err(|e| RunError::Invalid(format!("built-in copy kernel: {e:?}")))?;
    let module = gpu.ctx.load_module(ptx).doing("loading the copy kernel")?;
    let f = module.load_function("gpu_lab_copy").doing("finding the copy kernel")?;
    let sms = gpu.ctx.attribute(cudarc::driver::sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT).doing("reading the SM count")? as u64;
    let n4 = bytes / 16;
    let blocks = n4.div_ceil(256).min(sms * 32).max(1) as u32;
    let (src_ptr, dst_ptr) = (src.device_ptr(&gpu.stream).0, dst.device_ptr(&gpu.stream).0);
    let (kernel_samples_ms, ..) = time_runs(gpu, cfg, || {
        let mut b = gpu.stream.launch_builder(&f);
        b.arg(&src_ptr).arg(&dst_ptr).arg(&n4);
        // SAFETY: both buffers hold n4 float4s.
        unsafe { b.launch(LaunchConfig { grid_dim: (blocks, 1, 1), block_dim: (256, 1, 1), shared_mem_bytes: 0 }) }.doing("launching the copy kernel")?;
        Ok(())
    })?;
    Ok(BoundsOutcome { bytes, memcpy_samples_ms, kernel_samples_ms })
}
