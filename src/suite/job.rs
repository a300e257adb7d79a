//! A job: one variant at one point of the sweep, fully resolved (numbers, not expressions), as handed to the child process.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

pub use crate::records::{format_params, BoundSpec, JobKey, Work};
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
    #[serde(flatten)]
    pub work: Work,
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
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct LaunchSpec {
    pub kernel: String,
    pub grid: [u32; 3],
    pub block: [u32; 3],
    pub shared_bytes: u32,
    pub args: Vec<ArgSpec>,
}

#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "lowercase")]
pub enum ArgSpec {
    /// Device pointer to the buffer with this index.
    Buffer(usize),
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
}

impl ArgSpec {
    /// Bytes the kernel parameter takes (a buffer is a device pointer).
    pub fn size(&self) -> usize {
        match self {
            ArgSpec::F16(_) | ArgSpec::Bf16(_) => 2,
            ArgSpec::I32(_) | ArgSpec::U32(_) | ArgSpec::F32(_) => 4,
            ArgSpec::Buffer(_) | ArgSpec::I64(_) | ArgSpec::U64(_) | ArgSpec::F64(_) => 8,
        }
    }

    /// How the manifest's argument reads in a signature: `float*`-like buffers as `ptr`, scalars by type.
    pub fn describe(&self, buffers: &[BufferSpec]) -> String {
        match self {
            ArgSpec::Buffer(i) => format!("{}* {}", buffers.get(*i).map_or("?", |b| b.elem.name()), buffers.get(*i).map_or("?", |b| b.name.as_str())),
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
    pub fn signature_mismatch(&self, buffers: &[BufferSpec], param_sizes: &[usize]) -> Option<String> {
        let ours: Vec<usize> = self.args.iter().map(ArgSpec::size).collect();
        if ours == param_sizes {
            return None;
        }
        let manifest: Vec<String> = self.args.iter().map(|a| format!("{} ({} bytes)", a.describe(buffers), a.size())).collect();
        let kernel: Vec<String> = param_sizes.iter().enumerate().map(|(i, s)| format!("#{i}: {s} bytes")).collect();
        let first = ours.iter().zip(param_sizes).position(|(a, b)| a != b).unwrap_or(ours.len().min(param_sizes.len()));
        Some(format!(
            "the manifest passes {} argument(s) to `{}` and the kernel takes {} parameter(s); they first differ at #{first}\n  manifest: ({})\n  kernel:   ({})",
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

    pub fn threads_per_launch(&self) -> Vec<u64> {
        self.launches
            .iter()
            .map(|l| l.grid.iter().chain(&l.block).map(|&d| d as u64).product())
            .collect()
    }
}
