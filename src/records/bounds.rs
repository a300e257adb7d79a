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
