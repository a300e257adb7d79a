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
    #[serde(flatten)]
    pub work: Work,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq, Hash)]
pub struct Program {
    pub source_path: PathBuf,
    /// NVRTC options, defines included (`-DTILE=32`).
    pub options: Vec<String>,
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
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct BufferSpec {
    pub name: String,
    pub elem: ElemType,
    pub len: u64,
    pub init: Init,
}

impl BufferSpec {
    pub fn bytes(&self) -> u64 {
        self.len * self.elem.size() as u64
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
