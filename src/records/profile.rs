//! ncu's view of one job, as `results.jsonl` stores it, and what its `duration_from` says.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::hotspots::Hotspots;

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
    /// Metric name -> why it is n/a, where its definition says (`loads via cp.async/TMA`).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub not_applicable: BTreeMap<String, String>,
    /// The UUID of the GPU ncu profiled it on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gpu: Option<String>,
    /// Which ncu session the `duration` metric comes from (`profiler::pass::take_durations`,
    /// `keep_metric_set_durations`); absent in runs made before the duration had a session.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duration_from: Option<String>,
    /// Which profiler collected the counters (`cupti`, or `ncu` with why CUPTI did not);
    /// absent in runs made before CUPTI, which were all ncu's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub profiler: Option<String>,
    /// The job's source hot spots (`--hotspots`); absent where they were not asked for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hotspots: Option<Hotspots>,
}

/// How many runs of a job the duration's own session profiles unless told otherwise; its duration
/// is their median, since one profiled launch of a 20 µs kernel varies by a few percent from run
/// to run.
pub const DURATION_RUNS: u32 = 5;

/// How a profile record's `duration_from` begins when its duration came from the session of its own.
pub const DURATION_OWN_SESSION: &str = "own session";

/// How a profile record's `duration_from` begins when its duration came from the timing child's
/// CUPTI Activity records (`profiler::activity_duration`).
pub const DURATION_FROM_ACTIVITY: &str = "activity";

impl ProfileRecord {
    /// Whether the record's `duration` is its job's activity median from the timing child.
    pub fn duration_from_activity(&self) -> bool {
        self.duration_from
            .as_deref()
            .is_some_and(|f| f.starts_with(DURATION_FROM_ACTIVITY))
    }

    /// What `duration_from` says of a duration from the session of its own, over `runs` runs.
    pub fn own_session_duration(runs: usize) -> String {
        format!(
            "{DURATION_OWN_SESSION}: gpu__time_duration alone, the median of {runs} profiled runs after one unprofiled run of the job"
        )
    }

    /// What `duration_from` says where no session of its own was asked for.
    pub const METRIC_SET_DURATION_ASKED: &str = "the metric set's session, as asked (--duration-runs 0): read under its replay, up to 6% longer than alone";

    /// Whether the record's `duration` is the metric set's reading because the run asked for no
    /// session of its own (as against one that failed).
    pub fn duration_from_metric_set_as_asked(&self) -> bool {
        self.duration_from.as_deref() == Some(Self::METRIC_SET_DURATION_ASKED)
    }

    /// Whether the record's `duration` came from the session of its own.
    pub fn duration_from_own_session(&self) -> bool {
        self.duration_from
            .as_deref()
            .is_some_and(|f| f.starts_with(DURATION_OWN_SESSION))
    }

    /// A job ncu could not give numbers for, and why.
    pub fn failed(job_id: &str, error: String, report_file: Option<String>) -> Self {
        ProfileRecord {
            job_id: job_id.to_string(),
            metrics: Default::default(),
            missing: Vec::new(),
            kernels: Vec::new(),
            passes: None,
            report_file,
            error: Some(error),
            not_applicable: BTreeMap::new(),
            gpu: None,
            duration_from: None,
            profiler: None,
            hotspots: None,
        }
    }
}
