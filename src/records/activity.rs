//! A job's kernel durations from CUPTI's Activity API, recorded next to its event timing (stored format): the GPU's own start and end of each of the job's kernels, summed per sample.

use serde::{Deserialize, Serialize};

use crate::stats::Summary;

/// The activity durations of a job's timed samples (ms per run), or why there are none.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
pub struct ActivityRecord {
    /// Per sample, the sum of the job's kernels' GPU durations over the sample's runs (the L2
    /// flush, copies and memsets left out).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub samples_ms: Vec<f64>,
    /// Their median and its 95% interval (absent where no sample was recorded).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub summary: Option<Summary>,
    /// Kernels of the job per run, as the records counted them.
    #[serde(default)]
    pub kernels_per_run: f64,
    /// Samples during which no kernel of the job was recorded.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub missing_samples: usize,
    /// Records CUPTI dropped (no buffer free): the durations may be partial.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub dropped_records: usize,
    /// Taken in extra samples after the event samples (the default), not during them.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub after_timing: bool,
    /// Why the durations are absent or partial (CUPTI not loaded, an unknown record layout, …).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

impl ActivityRecord {
    /// A job with no activity durations, and why.
    pub fn failed(why: impl Into<String>) -> ActivityRecord {
        ActivityRecord {
            error: Some(why.into()),
            ..ActivityRecord::default()
        }
    }

    /// The activity median, where there is one.
    pub fn median_ms(&self) -> Option<f64> {
        self.summary.as_ref().map(|s| s.median)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failed_record_says_why_and_stores_little() {
        let r = ActivityRecord::failed("CUPTI could not be loaded");
        let json = serde_json::to_string(&r).unwrap();
        assert_eq!(
            json,
            r#"{"kernels_per_run":0.0,"error":"CUPTI could not be loaded"}"#
        );
        let back: ActivityRecord = serde_json::from_str(&json).unwrap();
        assert_eq!(back, r);
        assert_eq!(back.median_ms(), None);
    }
}
