//! `check --baseline last:K`: the last K runs of a fingerprint, from the history, as one baseline run that `compare` judges against (pure).
//!
//! Each job's baseline samples are the K runs' medians, one per run, as `--rounds` keeps one
//! median per round: the interval is then run to run, the noise a gate meets between two runs on
//! one machine. With a single run found, its own samples stand (one median has no interval).

use std::collections::BTreeMap;

use super::row::{HistoryRow, Measure};
use crate::records::{JobKey, JobRecord, JobStatus, RunData};

/// The baseline made of `runs` (ids, oldest first) of `rows`, shaped like `new` (the run judged):
/// its jobs keep their work and bound where `new` has them; a job only the history has is kept
/// too (the run judged then lacks it, which a check counts against it).
pub fn baseline_run(rows: &[HistoryRow], runs: &[String], new: &RunData) -> RunData {
    let mut by_job: BTreeMap<&str, Vec<&HistoryRow>> = BTreeMap::new();
    let mut order: Vec<&str> = Vec::new();
    for r in rows
        .iter()
        .filter(|r| r.measure == Measure::TimeMs && runs.contains(&r.run_id))
    {
        let list = by_job.entry(r.job_id.as_str()).or_default();
        if list.is_empty() {
            order.push(&r.job_id);
        }
        // One row per run: a run appended twice counts once.
        list.retain(|o| o.run_id != r.run_id);
        list.push(r);
    }
    let jobs = order
        .into_iter()
        .map(|id| job_of(&by_job[id], new))
        .collect();
    let last = rows.iter().find(|r| runs.last() == Some(&r.run_id));
    let mut info = new.info.clone();
    info.started = last.map_or_else(String::new, |r| r.started.clone());
    info.finished = Some(info.started.clone());
    info.command = format!(
        "the last {} runs in the history: {}",
        runs.len(),
        runs.join(", ")
    );
    info.build = None;
    RunData {
        info,
        jobs,
        ..RunData::default()
    }
}

fn job_of(rows: &[&HistoryRow], new: &RunData) -> JobRecord {
    let first = rows[0];
    let samples: Vec<f64> = match rows {
        [only] => only.samples.clone(),
        many => many.iter().map(|r| r.median).collect(),
    };
    let template = new.jobs.iter().find(|j| j.key.id == first.job_id);
    let mut job = JobRecord {
        key: JobKey {
            id: first.job_id.clone(),
            variant: first.variant.clone(),
            group: first.group.clone(),
            ..JobKey::default()
        },
        label: first.label.clone(),
        ..JobRecord::default()
    };
    if let Some(t) = template {
        job.key = t.key.clone();
        job.label = t.label.clone();
        job.description = t.description.clone();
        job.work = t.work;
        job.bound = t.bound.clone();
        job.timing_method = t.timing_method.clone();
        job.noise_threshold_pct = t.noise_threshold_pct;
    }
    job.status = JobStatus::Ok;
    job.summary = crate::stats::summarize(&samples);
    job.samples_ms = samples;
    job.runs_per_sample = 1;
    job.stopped_by = "history".into();
    job
}
