//! A job: one variant at one point of the sweep, fully resolved (numbers, not expressions), as handed to the child process.

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use super::manifest::{ElemType, Init};

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct JobSpec {
    /// Unique within a run: `variant[params] @ group`.
    pub id: String,
    pub suite: String,
    pub variant: String,
    /// The variant's own parameters (fixed and swept), shown beside its name.
    pub variant_params: BTreeMap<String, i64>,
    /// The suite-wide sweep point (for example the matrix shape); report tables are per group.
    pub group: String,
    pub group_params: BTreeMap<String, i64>,
    pub program: Program,
    pub launches: Vec<LaunchSpec>,
    pub buffers: Vec<BufferSpec>,
    pub check: CheckSpec,
    /// For `same_as` checks: the reference variant, run on the same inputs.
    pub reference: Option<Reference>,
    pub bytes: Option<f64>,
    pub flops: Option<f64>,
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

/// Where a copy reads and writes: `out[output_offset + i] == input[input_offset + i * input_stride]`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct CopyMap {
    pub input_offset: usize,
    pub input_stride: usize,
    pub output_offset: usize,
}

impl CopyMap {
    pub const IDENTITY: CopyMap = CopyMap { input_offset: 0, input_stride: 1, output_offset: 0 };
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(tag = "op", rename_all = "snake_case")]
pub enum CheckSpec {
    None,
    Copy { input: usize, output: usize, map: CopyMap },
    Transpose { input: usize, output: usize, rows: u64, cols: u64 },
    SameAs { output: usize, tolerance: f64 },
    /// The first `count` elements of `output` must add up to the sum of `input`.
    Sum { input: usize, output: usize, count: u64, input_stride: u64, tolerance: f64 },
}

impl JobSpec {
    /// `name[K=V,…]`: the variant with its own parameters, as reports show it.
    pub fn label(&self) -> String {
        if self.variant_params.is_empty() {
            self.variant.clone()
        } else {
            format!("{}[{}]", self.variant, format_params(&self.variant_params))
        }
    }

    pub fn threads_per_launch(&self) -> Vec<u64> {
        self.launches
            .iter()
            .map(|l| l.grid.iter().chain(&l.block).map(|&d| d as u64).product())
            .collect()
    }
}

pub fn format_params(params: &BTreeMap<String, i64>) -> String {
    params.iter().map(|(k, v)| format!("{k}={v}")).collect::<Vec<_>>().join(",")
}
