//! The bounds a run measures, as `results.jsonl` stores them: each group's copy bound (with the
//! FP32 FMA rate and the host link), and each group's compute bound (cuBLAS) at a job's shape.

use serde::{Deserialize, Serialize};

use super::outcome::HostLink;
use crate::stats::Summary;

/// The bandwidth bounds measured for one group, in the same run.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct BoundsRecord {
    pub group: String,
    /// Bytes copied (each is read once and written once).
    pub bytes: u64,
    pub memcpy: Option<Summary>,
    pub copy_kernel: Option<Summary>,
    pub error: Option<String>,
    /// The FP32 multiply-add rate, for suites that declare flops: a kernel of independent FMA
    /// chains over every SM, `fma_flops` per launch (absent for data-movement suites).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fma: Option<FmaRate>,
    /// The UUID of the GPU it was measured on: each GPU of a `--gpus` run has its own bounds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gpu: Option<String>,
    /// The host link's copies of `bytes`, for suites whose variants copy between host and device.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host: Option<HostLinkBounds>,
    /// The compute roofs of the maths its jobs declare (beyond the FP32 FMA rate), each measured
    /// in the same run by cuBLAS/cuBLASLt at a large square shape and by a peak kernel of gpu-lab's own.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub roofs: Vec<RoofRecord>,
}

/// Who measured a roof.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum RoofSource {
    /// cuBLAS or cuBLASLt at a large square shape.
    Library,
    /// A built-in kernel that keeps the math's units busy with independent work.
    Kernel,
}

/// One measurement of a math's peak rate on the job's GPU, in the same run.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct RoofRecord {
    pub math: super::math::Math,
    pub source: RoofSource,
    /// What ran: `cuBLASLt 8192x8192x8192 bf16 -> bf16, f32 accumulate, algo ...` or the
    /// kernel's name and instruction (`mma.sync.m16n8k16 bf16`).
    pub what: String,
    /// Operations per launch (flops; integer operations for i8).
    pub ops: f64,
    pub summary: Option<crate::stats::Summary>,
    pub samples_ms: Vec<f64>,
    /// The SM clock NVML read around the measurement, MHz.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sm_mhz: Option<u32>,
    pub error: Option<String>,
}

/// The host link measured in the same run: copies of `BoundsRecord::bytes` each way.
pub type HostLinkBounds = HostLink<Option<Summary>>;

/// The measured FP32 FMA rate of the card and what it says about its peak.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct FmaRate {
    pub flops: f64,
    pub summary: Summary,
    pub sm_count: u32,
}

/// A compute bound measured for one group and one shape (cuBLAS at a job's matmul shape).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct ComputeBoundRecord {
    pub group: String,
    /// `BoundSpec::key` of the jobs it bounds.
    pub key: String,
    /// How cuBLAS was asked to compute (`CUBLAS_DEFAULT_MATH`: FP32 without TF32 tensor cores).
    pub math_mode: String,
    pub flops: f64,
    pub summary: Option<Summary>,
    pub samples_ms: Vec<f64>,
    pub error: Option<String>,
    /// The UUID of the GPU it was measured on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gpu: Option<String>,
}
