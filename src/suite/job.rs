//! A job: one variant at one point of the sweep, fully resolved (numbers, not expressions), as handed to the child process.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

pub use crate::records::{BoundSpec, JobKey, StepKind, Work, format_params};
use crate::verify::{CorrectnessSpec, ElemType, Init};

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct JobSpec {
    #[serde(flatten)]
    pub key: JobKey,
    pub suite: String,
    pub program: Program,
    pub launches: Vec<LaunchSpec>,
    pub buffers: Vec<BufferSpec>,
    /// What a correct output is (stored as `check`, the manifest's key).
    #[serde(rename = "check")]
    pub correctness: CorrectnessSpec,
    /// For `same_as` checks: the reference variant, run on the same inputs.
    pub reference: Option<Reference>,
    /// What its throughput is compared with (the suite's `bound`).
    #[serde(default)]
    pub bound: BoundSpec,
    /// The device runtime's pending launch limit to set before the first launch (rdc programs).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pending_launches: Option<u32>,
    /// The suite's or variant's own noise threshold for `check`, in percent (`noise_threshold`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub noise_threshold_pct: Option<f64>,
    #[serde(flatten)]
    pub work: Work,
    /// A host program instead of bare launches: copies, launches, events and syncs on streams
    /// (`launches` then holds the kernel steps' launches, in step order).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub steps: Option<StepProgram>,
    /// The tensor maps its launches (and its reference's) pass, resolved at its sizes; encoded on
    /// the GPU side for the job's allocations.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tensor_maps: Vec<super::tensor_map::TensorMapSpec>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq, Hash)]
pub struct Program {
    pub source_path: PathBuf,
    /// Compiler options, defines included (`-DTILE=32`).
    pub options: Vec<String>,
    /// The project's header directories (`include_dirs`), resolved; the toolkit's are added at build time.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub include_dirs: Vec<PathBuf>,
    #[serde(default)]
    pub compiler: Compiler,
    /// Relocatable device code, linked with the CUDA device runtime (kernels that launch kernels).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub rdc: bool,
    /// Built for the GPU's arch-specific target (`sm_90a` on compute capability 9.0) instead of
    /// `sm_XY`: what `wgmma` and `setmaxnreg` need (`arch = "specific"` in the manifest).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub arch_specific: bool,
}

/// Which compiler builds a program: NVRTC in process (the default), or the toolkit's nvcc for
/// sources NVRTC cannot take (host headers, `<cassert>`, nvcc-only flags).
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq, Hash, Default)]
#[serde(rename_all = "lowercase")]
pub enum Compiler {
    #[default]
    Nvrtc,
    Nvcc,
}

/// The target a program is built for: the GPU's own architecture (`sm_90`, portable PTX, the
/// default) or its arch-specific one (`sm_90a`: `wgmma`, `setmaxnreg`; runs on that exact
/// compute capability only).
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq, Hash, Default)]
#[serde(rename_all = "lowercase")]
pub enum ArchTarget {
    #[default]
    Generic,
    Specific,
}

impl Compiler {
    pub fn name(self) -> &'static str {
        match self {
            Compiler::Nvrtc => "NVRTC",
            Compiler::Nvcc => "nvcc",
        }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Reference {
    pub variant: String,
    pub program: Program,
    pub launches: Vec<LaunchSpec>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub steps: Option<StepProgram>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct LaunchSpec {
    pub kernel: String,
    pub grid: [u32; 3],
    pub block: [u32; 3],
    pub shared_bytes: u32,
    pub args: Vec<ArgSpec>,
    /// Blocks per cluster (`cluster = [...]`): launched with `cuLaunchKernelEx` and a cluster dimension.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cluster: Option<[u32; 3]>,
    /// Programmatic dependent launch: may overlap the end of the launch before it.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub pdl: bool,
    /// A grid that names `SMS`: its expressions, evaluated again at each GPU's multiprocessor
    /// count before the job runs (`grid` holds the value at the nominal count until then).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub grid_of_sms: Option<SmsGrid>,
}

/// A launch's grid expressions that name `SMS` (the GPU's multiprocessor count), with the job's
/// bindings: what evaluating the grid again at a GPU's own count needs (suite/device_grid.rs).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct SmsGrid {
    pub exprs: Vec<String>,
    pub env: crate::expr::Bindings,
}

#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "lowercase")]
pub enum ArgSpec {
    /// Device pointer to the buffer with this index.
    Buffer(usize),
    /// Device pointer to element `.1` of buffer `.0` (a chunk of it: `a[chunk * M]`).
    #[serde(rename = "buffer_at")]
    BufferAt(usize, u64),
    I32(i32),
    U32(u32),
    I64(i64),
    U64(u64),
    F32(f32),
    F64(f64),
    /// A `__half` scalar, as its bits.
    F16(u16),
    /// A `__nv_bfloat16` scalar, as its bits.
    Bf16(u16),
    /// A `CUtensorMap` passed by value (128 bytes): the tensor map with this index in the
    /// manifest's `[[tensor_maps]]` (`JobSpec::tensor_maps` holds it resolved).
    #[serde(rename = "tensor_map")]
    TensorMap(usize),
}

impl ArgSpec {
    /// Bytes the kernel parameter takes (a buffer is a device pointer).
    pub fn size(&self) -> usize {
        match self {
            ArgSpec::F16(_) | ArgSpec::Bf16(_) => 2,
            ArgSpec::I32(_) | ArgSpec::U32(_) | ArgSpec::F32(_) => 4,
            ArgSpec::Buffer(_)
            | ArgSpec::BufferAt(..)
            | ArgSpec::I64(_)
            | ArgSpec::U64(_)
            | ArgSpec::F64(_) => 8,
            ArgSpec::TensorMap(_) => super::tensor_map::TENSOR_MAP_BYTES,
        }
    }

    /// How the manifest's argument reads in a signature: `float*`-like buffers as `ptr`, scalars by type.
    pub fn describe(&self, buffers: &[BufferSpec]) -> String {
        match self {
            ArgSpec::TensorMap(i) => format!("CUtensorMap #{i}"),
            ArgSpec::Buffer(i) => format!(
                "{}* {}",
                buffers.get(*i).map_or("?", |b| b.elem.name()),
                buffers.get(*i).map_or("?", |b| b.name.as_str())
            ),
            ArgSpec::BufferAt(i, at) => format!(
                "{}* {}[{at}]",
                buffers.get(*i).map_or("?", |b| b.elem.name()),
                buffers.get(*i).map_or("?", |b| b.name.as_str())
            ),
            ArgSpec::I32(v) => format!("i32 {v}"),
            ArgSpec::U32(v) => format!("u32 {v}"),
            ArgSpec::I64(v) => format!("i64 {v}"),
            ArgSpec::U64(v) => format!("u64 {v}"),
            ArgSpec::F32(v) => format!("f32 {v}"),
            ArgSpec::F64(v) => format!("f64 {v}"),
            ArgSpec::F16(b) => format!("f16 {}", half::f16::from_bits(*b)),
            ArgSpec::Bf16(b) => format!("bf16 {}", half::bf16::from_bits(*b)),
        }
    }
}

impl LaunchSpec {
    /// Compares the manifest's arguments with the kernel's parameter sizes (from the driver):
    /// `None` when they agree, else a message listing both signatures.
    pub fn signature_mismatch(
        &self,
        buffers: &[BufferSpec],
        param_sizes: &[usize],
    ) -> Option<String> {
        const TENSOR_MAP: usize = super::tensor_map::TENSOR_MAP_BYTES;
        let ours: Vec<usize> = self.args.iter().map(ArgSpec::size).collect();
        if ours == param_sizes {
            return None;
        }
        let manifest: Vec<String> = self
            .args
            .iter()
            .map(|a| format!("{} ({} bytes)", a.describe(buffers), a.size()))
            .collect();
        let kernel: Vec<String> = param_sizes
            .iter()
            .enumerate()
            .map(|(i, s)| format!("#{i}: {s} bytes"))
            .collect();
        let first = ours
            .iter()
            .zip(param_sizes)
            .position(|(a, b)| a != b)
            .unwrap_or(ours.len().min(param_sizes.len()));
        let hint = match (ours.get(first), param_sizes.get(first)) {
            (Some(&a), Some(&TENSOR_MAP)) if a != TENSOR_MAP => format!(
                "\n  parameter #{first} takes {TENSOR_MAP} bytes, the size of a `CUtensorMap` passed by value (`const __grid_constant__ CUtensorMap`): declare a [[tensor_maps]] entry for its buffer and name it in args"
            ),
            (Some(&TENSOR_MAP), Some(_)) => format!(
                "\n  argument #{first} is a tensor map (128 bytes by value) and the kernel's parameter #{first} is not a `const __grid_constant__ CUtensorMap`"
            ),
            _ => String::new(),
        };
        Some(format!(
            "the manifest passes {} argument(s) to `{}` and the kernel takes {} parameter(s); they first differ at #{first}\n  manifest: ({})\n  kernel:   ({}){hint}",
            ours.len(),
            self.kernel,
            param_sizes.len(),
            manifest.join(", "),
            kernel.join(", ")
        ))
    }
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct BufferSpec {
    pub name: String,
    pub elem: ElemType,
    pub len: u64,
    /// How it starts (for a buffer `from` another: that buffer's init).
    pub init: Init,
    /// Starts as buffer `from`'s initial values, converted to this buffer's type.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub from: Option<usize>,
    /// Where it lives: device memory (the default) or one of the host kinds.
    #[serde(default, skip_serializing_if = "Memory::is_device")]
    pub memory: Memory,
    /// Unified-memory advice set once, after allocation (managed buffers only).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub advise: Vec<Advice>,
}

/// Where a buffer's memory is, as a CUDA program allocates it.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq, Default)]
#[serde(rename_all = "lowercase")]
pub enum Memory {
    /// `cuMemAlloc`: device memory.
    #[default]
    Device,
    /// `malloc`: ordinary host memory; the driver stages copies through a pinned buffer of its own.
    Pageable,
    /// `cuMemHostAlloc`: page-locked host memory, copied by DMA.
    Pinned,
    /// `cuMemHostAlloc(DEVICEMAP)`: page-locked host memory a kernel reads and writes over the bus (zero-copy).
    Mapped,
    /// `cuMemAllocManaged`: unified memory, migrated between host and device on demand or by prefetch.
    Managed,
}

impl Memory {
    pub fn is_device(&self) -> bool {
        *self == Memory::Device
    }

    /// A kernel may take a pointer to it.
    pub fn kernel_visible(self) -> bool {
        matches!(self, Memory::Device | Memory::Mapped | Memory::Managed)
    }

    /// It may be the host side of a copy (the source of `h2d`, the target of `d2h`).
    pub fn host_side(self) -> bool {
        !matches!(self, Memory::Device)
    }

    /// It may be the device side of a copy.
    pub fn device_side(self) -> bool {
        matches!(self, Memory::Device | Memory::Managed)
    }

    pub fn name(self) -> &'static str {
        match self {
            Memory::Device => "device",
            Memory::Pageable => "pageable",
            Memory::Pinned => "pinned",
            Memory::Mapped => "mapped",
            Memory::Managed => "managed",
        }
    }
}

/// Unified-memory advice (`cuMemAdvise`) for a managed buffer.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum Advice {
    /// Read-mostly: read-only copies may live on every processor that reads it.
    ReadMostly,
    /// Its pages prefer to stay on the device.
    PreferredLocationDevice,
    /// Its pages prefer to stay on the host.
    PreferredLocationHost,
    /// The device maps it, so that reads from there do not fault.
    AccessedByDevice,
}

/// A variant written as a host program: its steps in issue order, the streams it creates and the
/// events its steps record and wait on.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct StepProgram {
    pub steps: Vec<Step>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub streams: Vec<StreamSpec>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub events: Vec<String>,
}

/// A stream the variant creates (`stream[2]` of a family of them is one with its index in the name).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct StreamSpec {
    pub name: String,
    /// `CU_STREAM_NON_BLOCKING`: it does not synchronise with the NULL stream.
    #[serde(default)]
    pub non_blocking: bool,
}

/// One step of a host program.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Step {
    /// How reports and timelines name it (`h2d h_a`, `kernel sum_arrays #2` for chunk 2).
    pub label: String,
    /// The stream it is issued on (index into `StepProgram::streams`); None: the NULL stream.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stream: Option<usize>,
    /// The chunk it belongs to, when it was repeated over chunks.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub chunk: Option<u64>,
    pub action: Action,
}

/// Elements `offset .. offset + len` of a buffer.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq)]
pub struct Region {
    pub buffer: usize,
    pub offset: u64,
    pub len: u64,
}

impl Region {
    /// The bytes it spans, in the element size of its buffer in `buffers`.
    pub fn bytes(&self, buffers: &[BufferSpec]) -> u64 {
        self.len * buffers.get(self.buffer).map_or(0, |b| b.elem.size() as u64)
    }
}

#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum Direction {
    H2d,
    D2h,
    D2d,
}

impl Direction {
    pub fn name(self) -> &'static str {
        match self {
            Direction::H2d => "h2d",
            Direction::D2h => "d2h",
            Direction::D2d => "d2d",
        }
    }
}

/// Where a prefetch moves a managed buffer's pages.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum Location {
    Device,
    Host,
}

/// What a step does.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(tag = "op", rename_all = "snake_case")]
pub enum Action {
    /// `cuMemcpy` (the host waits) or `cuMemcpyAsync` on the step's stream.
    Copy {
        direction: Direction,
        from: Region,
        to: Region,
        asynchronous: bool,
    },
    /// `launches[launch]` on the step's stream.
    Kernel { launch: usize },
    /// `cuMemsetD8Async` of the region's bytes.
    Memset { region: Region, value: u8 },
    /// `cuMemPrefetchAsync` of a managed buffer's region.
    Prefetch { region: Region, to: Location },
    /// `cuEventRecord` of event `event` on the step's stream.
    Record { event: usize },
    /// `cuStreamWaitEvent`: the step's stream waits for event `event`.
    Wait { event: usize },
    /// The host waits: for the device, the step's stream (`stream`), or an event.
    Sync { target: SyncTarget },
}

#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum SyncTarget {
    /// `cuCtxSynchronize`.
    Device,
    /// `cuStreamSynchronize` of the step's stream.
    Stream,
    /// `cuEventSynchronize` of this event.
    Event(usize),
}

impl StepProgram {
    /// A stream's name as reports show it (`NULL` for the NULL stream).
    pub fn stream_name(&self, stream: Option<usize>) -> String {
        stream
            .and_then(|i| self.streams.get(i))
            .map_or("NULL".to_string(), |s| s.name.clone())
    }
}

impl Action {
    /// What the timeline calls its work (None for records, waits and syncs, which only order it).
    pub fn kind(&self) -> Option<StepKind> {
        Some(match self {
            Action::Copy {
                direction: Direction::H2d,
                ..
            } => StepKind::H2d,
            Action::Copy {
                direction: Direction::D2h,
                ..
            } => StepKind::D2h,
            Action::Copy {
                direction: Direction::D2d,
                ..
            } => StepKind::D2d,
            Action::Kernel { .. } => StepKind::Kernel,
            Action::Memset { .. } => StepKind::Memset,
            Action::Prefetch { .. } => StepKind::Prefetch,
            Action::Record { .. } | Action::Wait { .. } | Action::Sync { .. } => return None,
        })
    }

    /// The bytes it moves (copies, memsets, prefetches), for its bandwidth.
    pub fn bytes(&self, buffers: &[BufferSpec]) -> u64 {
        match self {
            Action::Copy { from, .. } => from.bytes(buffers),
            Action::Memset { region, .. } | Action::Prefetch { region, .. } => {
                region.bytes(buffers)
            }
            _ => 0,
        }
    }
}

impl BufferSpec {
    pub fn bytes(&self) -> u64 {
        self.len * self.elem.size() as u64
    }

    /// True when it starts with data (random, whole numbers or iota) rather than zeros or poison.
    pub fn has_data(&self) -> bool {
        matches!(self.init, Init::Random | Init::RandomInt | Init::Iota)
    }
}

impl JobSpec {
    pub fn id(&self) -> &str {
        &self.key.id
    }

    pub fn label(&self) -> String {
        self.key.label()
    }

    /// Its data crosses the host link: a launch or a step of it uses a host (pageable, pinned,
    /// mapped) or managed buffer, which only host programs may. Its group's bounds include the host link.
    pub fn crosses_host_link(&self) -> bool {
        let on_host = |i: usize| self.buffers.get(i).is_some_and(|b| !b.memory.is_device());
        let by_launch = self
            .launches
            .iter()
            .flat_map(|l| &l.args)
            .any(|a| matches!(*a, ArgSpec::Buffer(i) | ArgSpec::BufferAt(i, _) if on_host(i)));
        let by_step = self
            .steps
            .iter()
            .flat_map(|p| &p.steps)
            .any(|s| match &s.action {
                Action::Copy { from, to, .. } => on_host(from.buffer) || on_host(to.buffer),
                Action::Memset { region, .. } | Action::Prefetch { region, .. } => {
                    on_host(region.buffer)
                }
                Action::Kernel { .. }
                | Action::Record { .. }
                | Action::Wait { .. }
                | Action::Sync { .. } => false,
            });
        by_launch || by_step
    }

    pub fn threads_per_launch(&self) -> Vec<u64> {
        self.launches
            .iter()
            .map(|l| l.grid.iter().chain(&l.block).map(|&d| d as u64).product())
            .collect()
    }
}
