//! What a comparison of two runs holds, as the exporters read it: the settings it was made with, its notes, and per job the verdict, the change of time and counters, and notes.

use serde::Serialize;

use super::clocks::{ClockChange, Normalize};
use super::counters::CounterChange;
use super::timing::{self, Interval};
use super::verdict::Verdict;
use crate::records::{Fingerprint, JobStatus};

/// Default noise threshold, percent: between back-to-back cold runs of unchanged code a kernel's
/// median moved by up to 6.05% (warm pairs: 4.9%); docs/ci.md has the data of ten pairs.
pub const DEFAULT_NOISE_THRESHOLD_PCT: f64 = 7.0;
/// Default absolute floor, microseconds: kernels of 5–8 µs drifted by up to 0.78 µs (14%) between
/// back-to-back runs (regression-demo-h100, docs/ci.md).
pub const DEFAULT_NOISE_FLOOR_US: f64 = 1.0;

#[derive(Debug, Clone, Serialize)]
pub struct Settings {
    /// Relative noise threshold (0.05 = 5%).
    pub noise_threshold: f64,
    /// Absolute noise floor over the baseline's median, in ms.
    pub noise_floor_ms: f64,
    pub normalize: Normalize,
    /// Different GPU models: compare each job's time relative to its own run's copy bound.
    pub relative_to_copy: bool,
    pub resamples: usize,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            noise_threshold: DEFAULT_NOISE_THRESHOLD_PCT / 100.0,
            noise_floor_ms: DEFAULT_NOISE_FLOOR_US / 1000.0,
            normalize: Normalize::Auto,
            relative_to_copy: false,
            resamples: timing::RESAMPLES,
        }
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct TimingChange {
    /// Medians as measured, in ms.
    pub base_ms: f64,
    pub new_ms: f64,
    /// Change of the compared quantity: the time, normalised by clock where clocks differ, or
    /// (across GPU models) the time relative to the run's copy bound.
    pub change: Interval,
    pub threshold: f64,
    pub clocks: Vec<ClockChange>,
    pub base_pct_of_copy: Option<f64>,
    pub new_pct_of_copy: Option<f64>,
    pub verdict: Verdict,
}

#[derive(Debug, Clone, Serialize)]
pub struct JobComparison {
    pub id: String,
    pub label: String,
    pub group: String,
    pub verdict: Verdict,
    pub base_status: Option<JobStatus>,
    pub new_status: Option<JobStatus>,
    pub timing: Option<TimingChange>,
    pub counters: Vec<CounterChange>,
    pub notes: Vec<String>,
}

#[derive(Debug, Clone, Serialize)]
pub struct Comparison {
    /// `false` for `gpu-lab compare`: the same comparison shown side by side, without verdicts.
    #[serde(skip)]
    pub verdicts: bool,
    pub base: Fingerprint,
    pub new: Fingerprint,
    pub settings: Settings,
    /// Differences of environment worth knowing before reading the verdicts.
    pub notes: Vec<String>,
    /// The baseline's jobs in their order, then the jobs only the new run has.
    pub jobs: Vec<JobComparison>,
}

impl Comparison {
    pub fn count(&self, v: Verdict) -> usize {
        self.jobs.iter().filter(|j| j.verdict == v).count()
    }
    pub fn regressed(&self) -> bool {
        self.count(Verdict::Regressed) > 0
    }
}
