//! Two runs side by side, job by job: the change of each median with its interval, clocks, counters, correctness, and a verdict (pure).
//!
//! `check` judges a run against a baseline with these verdicts; `compare` shows the same
//! comparison without them. The rules (docs/ci.md): a job regresses when it stopped being correct,
//! when the 95% interval of its time change lies wholly above the noise threshold, when a
//! counter moved by its tolerance or more in its worse direction, or when the new run did not
//! finish and lacks it; it improves in the mirror cases; anything else is the same.

pub mod clocks;
mod comparison;
pub mod counters;
mod environment;
mod job;
pub mod json;
pub mod junit;
pub mod markdown;
pub mod reframe;
pub mod timing;
mod verdict;

use std::collections::{BTreeMap, BTreeSet};

pub use comparison::{
    Comparison, DEFAULT_NOISE_FLOOR_US, DEFAULT_NOISE_THRESHOLD_PCT, JobComparison, Settings,
    TimingChange,
};
pub use environment::other_gpu;
pub use verdict::Verdict;

use crate::metrics::MetricDef;
use crate::records::{Fingerprint, JobRecord, RunData};
use crate::report::Exporter;
use environment::environment_notes;
use job::{compare_job, one_sided};

/// Compares `new` with `base` job by job (matched by job id); `verdicts: false` for a plain side-by-side.
pub fn compare(
    base: &RunData,
    base_label: &str,
    new: &RunData,
    new_label: &str,
    defs: &[MetricDef],
    settings: &Settings,
    verdicts: bool,
) -> Comparison {
    let new_by_id: BTreeMap<&str, &JobRecord> = new.jobs.iter().map(|j| (j.id(), j)).collect();
    let base_ids: BTreeSet<&str> = base.jobs.iter().map(|j| j.id()).collect();
    let redefined = counters::redefined(&base.info.metrics, &new.info.metrics);
    let unfinished = new.info.finished.is_none();
    let new_impossible = new.impossible_jobs();
    let mut jobs: Vec<JobComparison> = base
        .jobs
        .iter()
        .map(|b| match new_by_id.get(b.id()) {
            Some(n) => compare_job(
                base,
                b,
                (new, &new_impossible),
                n,
                defs,
                &redefined,
                settings,
            ),
            None => one_sided(b, true, unfinished),
        })
        .collect();
    jobs.extend(
        new.jobs
            .iter()
            .filter(|n| !base_ids.contains(n.id()))
            .map(|n| one_sided(n, false, unfinished)),
    );
    Comparison {
        verdicts,
        base: Fingerprint::of(base_label, base),
        new: Fingerprint::of(new_label, new),
        settings: settings.clone(),
        notes: environment_notes(base, new, &jobs, &redefined, settings),
        jobs,
    }
}

/// The formats of a verdict report.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    Md,
    Json,
    /// JUnit XML: one test case per job, a regression a failure (for CI systems).
    Junit,
}

pub fn exporter(format: Format) -> Box<dyn Exporter<Comparison>> {
    match format {
        Format::Md => Box::new(markdown::Markdown),
        Format::Json => Box::new(json::Json),
        Format::Junit => Box::new(junit::Junit),
    }
}

#[cfg(test)]
mod tests;
