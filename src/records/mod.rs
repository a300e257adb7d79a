//! What a run records: its environment, one record per job, bounds and profiles, and the derived figures reports show (pure data).
//!
//! These types are the files of a run directory (`run.json`, `results.jsonl`) and of a baseline;
//! their serialised field names are a stored format and do not change with Rust names.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::metrics::MetricDef;
use crate::stats::Summary;
use crate::verify::Correctness;

mod environment;
mod outcome;

pub use environment::{peak_bandwidth_gbs, DeviceInfo, Fingerprint, Snapshot};
pub use outcome::{BoundsOutcome, CompileInfo, JobOutcome, TimingConfig};

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
}

#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum JobStatus {
    Ok,
    /// Ran, but its output is wrong: shown, never ranked or baselined.
    Wrong,
    Failed,
    TimedOut,
}

/// Which job: one variant at one point of the sweep. A job spec and its record share it.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq, Default)]
pub struct JobKey {
    /// Unique within a run: `variant[params] @ group`.
    pub id: String,
    pub variant: String,
    /// The variant's own parameters (fixed and swept), shown beside its name.
    pub variant_params: BTreeMap<String, i64>,
    /// The suite-wide sweep point (for example the matrix shape); report tables are per group.
    pub group: String,
    pub group_params: BTreeMap<String, i64>,
}

impl JobKey {
    /// `name[K=V,…]`: the variant with its own parameters, as reports show it.
    pub fn label(&self) -> String {
        if self.variant_params.is_empty() {
            self.variant.clone()
        } else {
            format!("{}[{}]", self.variant, format_params(&self.variant_params))
        }
    }
}

/// `K=V,K=V`, in key order.
pub fn format_params(params: &BTreeMap<String, i64>) -> String {
    params.iter().map(|(k, v)| format!("{k}={v}")).collect::<Vec<_>>().join(",")
}

/// The work a job declares, for throughput: bytes it must move and operations it performs.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Default)]
pub struct Work {
    pub bytes: Option<f64>,
    pub flops: Option<f64>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct JobRecord {
    #[serde(flatten)]
    pub key: JobKey,
    pub label: String,
    pub description: String,
    pub status: JobStatus,
    pub error: Option<String>,
    /// What the correctness verification found (stored as `check`).
    #[serde(rename = "check")]
    pub correctness: Option<Correctness>,
    pub samples_ms: Vec<f64>,
    pub runs_per_sample: u32,
    pub stopped_by: String,
    pub summary: Option<Summary>,
    #[serde(flatten)]
    pub work: Work,
    pub launches: usize,
    pub nvml_before: Option<Snapshot>,
    pub nvml_after: Option<Snapshot>,
    pub wall_seconds: f64,
}

/// Giga-units per second of `amount` done in `ms` milliseconds (bytes -> GB/s, flops -> GFLOP/s).
pub fn per_second_g(amount: f64, ms: f64) -> f64 {
    amount / (ms * 1e-3) / 1e9
}

impl JobRecord {
    pub fn id(&self) -> &str {
        &self.key.id
    }
    pub fn group(&self) -> &str {
        &self.key.group
    }
    pub fn gbs(&self) -> Option<f64> {
        Some(per_second_g(self.work.bytes?, self.summary?.median))
    }
    pub fn gflops(&self) -> Option<f64> {
        let f = self.work.flops.filter(|f| *f > 0.0)?;
        Some(per_second_g(f, self.summary?.median))
    }
}

/// The bandwidth bounds measured for one group, in the same run.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct BoundsRecord {
    pub group: String,
    /// Bytes copied (each is read once and written once).
    pub bytes: u64,
    pub memcpy: Option<Summary>,
    pub copy_kernel: Option<Summary>,
    pub error: Option<String>,
}

impl BoundsRecord {
    /// The faster of the two copies (a timing with a positive median).
    pub fn best_copy(&self) -> Option<&Summary> {
        [&self.memcpy, &self.copy_kernel].into_iter().flatten().filter(|s| s.median > 0.0).min_by(|a, b| a.median.total_cmp(&b.median))
    }
    /// GB/s of a copy of `bytes` timed as `s`: every byte is read once and written once.
    fn gbs_of(&self, s: &Summary) -> f64 {
        per_second_g(2.0 * self.bytes as f64, s.median)
    }
    /// The better of the two copies, in GB/s of bytes read plus written.
    pub fn copy_gbs(&self) -> Option<f64> {
        self.best_copy().map(|s| self.gbs_of(s))
    }
    pub fn memcpy_gbs(&self) -> Option<f64> {
        self.memcpy.as_ref().map(|s| self.gbs_of(s))
    }
    pub fn kernel_gbs(&self) -> Option<f64> {
        self.copy_kernel.as_ref().map(|s| self.gbs_of(s))
    }
}

/// ncu's view of one job.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct ProfileRecord {
    pub job_id: String,
    /// Metric name -> value; `None` where the ratio is undefined (e.g. no shared loads at all).
    pub metrics: BTreeMap<String, Option<f64>>,
    /// Metrics whose counters ncu did not report.
    pub missing: Vec<String>,
    pub kernels: Vec<String>,
    /// Replay passes ncu needed (profiler__replayer_passes), when it says.
    pub passes: Option<f64>,
    pub report_file: Option<String>,
    pub error: Option<String>,
}

impl ProfileRecord {
    /// A job ncu could not give numbers for, and why.
    pub fn failed(job_id: &str, error: String, report_file: Option<String>) -> Self {
        ProfileRecord { job_id: job_id.to_string(), metrics: Default::default(), missing: Vec::new(), kernels: Vec::new(), passes: None, report_file, error: Some(error) }
    }
}

/// One line of `results.jsonl`. Lines are read and written one at a time, so the size of the
/// largest variant costs nothing worth a box.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Record {
    Job(JobRecord),
    Bounds(BoundsRecord),
    Profile(ProfileRecord),
}

/// A run as read back: the latest record of each kind per job or group wins.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RunData {
    pub info: RunInfo,
    pub jobs: Vec<JobRecord>,
    pub bounds: BTreeMap<String, BoundsRecord>,
    pub profiles: BTreeMap<String, ProfileRecord>,
}

impl RunData {
    pub fn from_records(info: RunInfo, records: Vec<Record>) -> Self {
        let mut run = RunData { info, ..Default::default() };
        for r in records {
            match r {
                Record::Job(j) => {
                    run.jobs.retain(|o| o.key.id != j.key.id);
                    run.jobs.push(j);
                }
                Record::Bounds(b) => {
                    run.bounds.insert(b.group.clone(), b);
                }
                Record::Profile(p) => {
                    run.profiles.insert(p.job_id.clone(), p);
                }
            }
        }
        run
    }

    /// Groups in the order their first job ran.
    pub fn groups(&self) -> Vec<String> {
        groups_in_order(self.jobs.iter().map(|j| &j.key.group))
    }

    /// Range of the SM and memory clocks NVML saw before and after the jobs, and throttled snapshots.
    pub fn clocks_seen(&self) -> String {
        let snaps: Vec<&Snapshot> = self.jobs.iter().flat_map(|j| [&j.nvml_before, &j.nvml_after]).flatten().collect();
        let range = |f: &dyn Fn(&Snapshot) -> Option<u32>| {
            let v: Vec<u32> = snaps.iter().filter_map(|s| f(s)).collect();
            match (v.iter().min(), v.iter().max()) {
                (Some(a), Some(b)) if a == b => format!("{a} MHz"),
                (Some(a), Some(b)) => format!("{a}–{b} MHz"),
                _ => "not read".into(),
            }
        };
        let throttled = snaps.iter().filter(|s| s.is_throttled()).count();
        format!(
            "SM {}, memory {}{}",
            range(&|s| s.sm_clock_mhz),
            range(&|s| s.mem_clock_mhz),
            if throttled > 0 { format!("; **{throttled} snapshots throttled**") } else { String::new() }
        )
    }
}

/// Distinct group names in order of first appearance.
pub fn groups_in_order<'a>(names: impl Iterator<Item = &'a String>) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for g in names {
        if !out.contains(g) {
            out.push(g.clone());
        }
    }
    out
}
