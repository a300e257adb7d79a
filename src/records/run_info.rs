//! `run.json`: what a run was, on which GPU and how it was timed, and which shard of a plan it holds (stored format).

use serde::{Deserialize, Serialize};

use super::environment::DeviceInfo;
use super::outcome::TimingConfig;
use crate::metrics::MetricDef;

/// The run's environment fingerprint and configuration (`run.json`).
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct RunInfo {
    pub gpu_lab_version: String,
    pub command: String,
    pub started: String,
    pub finished: Option<String>,
    pub suite: String,
    pub suite_description: String,
    pub suite_source_hash: String,
    pub device: Option<DeviceInfo>,
    /// Why there is no device information, when there is none.
    pub nvml_error: Option<String>,
    pub ncu_version: Option<String>,
    /// `none` (clocks as found) unless the owner asked otherwise.
    pub clock_policy: String,
    pub timing: TimingConfig,
    /// L2 state during timing: repeated launches over the same buffers keep them warm.
    pub cache_state: String,
    pub seed: u64,
    pub metrics: Vec<MetricDef>,
    /// Metrics asked for that this GPU cannot collect, with why (checked against `ncu --query-metrics`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unavailable_metrics: Vec<String>,
    pub wall_seconds: Option<f64>,
    /// Made by the mock executor (`--mock-gpu`): no GPU ran, every number is a stand-in.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub mock: bool,
    /// The shard of a plan this run holds (`--shard I/N`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shard: Option<ShardInfo>,
    /// For a run made by `gpu-lab merge`: the shard runs it joins (directory names).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub merged_from: Vec<String>,
    /// For a run over several GPUs of one host (`--gpus`): each of them; `device` is the first.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub gpus: Vec<DeviceInfo>,
}

/// Which shard of which plan a run is, and its identity: `merge` refuses a copy of one shard
/// relabelled as another by these.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct ShardInfo {
    pub index: usize,
    pub count: usize,
    /// sha256 over every job of the plan before it was split: shards of one plan share it.
    pub plan: String,
    /// A random id of this shard's invocation: two shard runs never share one.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub run_id: String,
    /// The jobs this shard owns, each as the plan hash names it (`source hash\0suite\0job id`):
    /// the shards' sets are disjoint and together hash to `plan`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub jobs: Vec<String>,
}

/// The key of a job in a plan's hash and a shard's `jobs`.
pub fn plan_job_key(source_hash: &str, suite: &str, id: &str) -> String {
    format!("{source_hash}\u{0}{suite}\u{0}{id}")
}

/// The plan hash over every job key (sorted here): what `ShardInfo::plan` holds.
pub fn plan_hash<'a>(keys: impl IntoIterator<Item = &'a String>) -> String {
    use sha2::{Digest, Sha256};
    let mut keys: Vec<&String> = keys.into_iter().collect();
    keys.sort();
    let mut h = Sha256::new();
    for k in keys {
        h.update(k.as_bytes());
        h.update([1u8]);
    }
    h.finalize().iter().map(|b| format!("{b:02x}")).collect()
}
