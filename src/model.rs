//! What a run records: its environment, one record per job, bounds and profiles, and the derived figures reports show (pure).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::device::{DeviceInfo, Snapshot};
use crate::metrics::MetricDef;
use crate::runner::host::CheckOutcome;
use crate::runner::TimingConfig;
use crate::stats::Summary;

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

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct JobRecord {
    pub id: String,
    pub variant: String,
    pub label: String,
    pub description: String,
    pub variant_params: BTreeMap<String, i64>,
    pub group: String,
    pub group_params: BTreeMap<String, i64>,
    pub status: JobStatus,
    pub error: Option<String>,
    pub check: Option<CheckOutcome>,
    pub samples_ms: Vec<f64>,
    pub runs_per_sample: u32,
    pub stopped_by: String,
    pub summary: Option<Summary>,
    pub bytes: Option<f64>,
    pub flops: Option<f64>,
    pub launches: usize,
    pub nvml_before: Option<Snapshot>,
    pub nvml_after: Option<Snapshot>,
    pub wall_seconds: f64,
}

impl JobRecord {
    pub fn gbs(&self) -> Option<f64> {
        Some(self.bytes? / (self.summary?.median * 1e-3) / 1e9)
    }
    pub fn gflops(&self) -> Option<f64> {
        let f = self.flops.filter(|f| *f > 0.0)?;
        Some(f / (self.summary?.median * 1e-3) / 1e9)
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
    /// The better of the two copies, in GB/s of bytes read plus written.
    pub fn copy_gbs(&self) -> Option<f64> {
        self.best_copy().map(|s| 2.0 * self.bytes as f64 / (s.median * 1e-3) / 1e9)
    }
    pub fn memcpy_gbs(&self) -> Option<f64> {
        self.memcpy.map(|s| 2.0 * self.bytes as f64 / (s.median * 1e-3) / 1e9)
    }
    pub fn kernel_gbs(&self) -> Option<f64> {
        self.copy_kernel.map(|s| 2.0 * self.bytes as f64 / (s.median * 1e-3) / 1e9)
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
    pub fn failed(job: &crate::suite::JobSpec, error: String, report_file: Option<String>) -> Self {
        ProfileRecord { job_id: job.id.clone(), metrics: Default::default(), missing: Vec::new(), kernels: Vec::new(), passes: None, report_file, error: Some(error) }
    }
}

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
                    run.jobs.retain(|o| o.id != j.id);
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
        groups_in_order(self.jobs.iter().map(|j| &j.group))
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
