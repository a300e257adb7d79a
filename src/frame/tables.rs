//! The frame's source tables, one per kind of record of the runs: jobs, timings, NVML snapshots, copy bounds, environments and counters, each keyed by run (and job or group) for the joins in `frame`.

use polars::prelude::*;

use crate::records::{CacheState, JobStatus, RunData, format_params};

fn status_word(s: JobStatus) -> &'static str {
    match s {
        JobStatus::Ok => "ok",
        JobStatus::Wrong => "wrong",
        JobStatus::Failed => "failed",
        JobStatus::TimedOut => "timed_out",
    }
}

/// jobs: `run, job_id, variant, params, group, status, verified, bytes, flops, launches`.
/// compute-sanitizer's verdicts on a job's variant (`memcheck: clean; racecheck: 1 finding (4096
/// reports)`), `None` where the run sanitized none.
fn sanitized(run: &RunData, job: &crate::records::JobRecord) -> Option<String> {
    let label = job.key.label();
    let said: Vec<String> = run
        .sanitize
        .iter()
        .filter(|s| s.variant == label)
        .map(|s| format!("{}: {}", s.tool.as_str(), s.verdict()))
        .collect();
    (!said.is_empty()).then(|| said.join("; "))
}

pub(super) fn jobs(runs: &[(&str, &RunData)]) -> PolarsResult<DataFrame> {
    let all: Vec<(&str, &crate::records::JobRecord)> = runs
        .iter()
        .flat_map(|(label, r)| r.jobs.iter().map(move |j| (*label, j)))
        .collect();
    DataFrame::new_infer_height(vec![
        Column::new(
            "run".into(),
            all.iter().map(|(l, _)| l.to_string()).collect::<Vec<_>>(),
        ),
        Column::new(
            "job_id".into(),
            all.iter()
                .map(|(_, j)| j.key.id.clone())
                .collect::<Vec<_>>(),
        ),
        Column::new(
            "variant".into(),
            all.iter()
                .map(|(_, j)| j.key.variant.clone())
                .collect::<Vec<_>>(),
        ),
        Column::new(
            "params".into(),
            all.iter()
                .map(|(_, j)| format_params(&j.key.variant_params))
                .collect::<Vec<_>>(),
        ),
        Column::new(
            "group".into(),
            all.iter()
                .map(|(_, j)| j.key.group.clone())
                .collect::<Vec<_>>(),
        ),
        Column::new(
            "status".into(),
            all.iter()
                .map(|(_, j)| status_word(j.status).to_string())
                .collect::<Vec<_>>(),
        ),
        Column::new(
            "verified".into(),
            all.iter()
                .map(|(_, j)| j.correctness.as_ref().map(|c| c.passed))
                .collect::<Vec<_>>(),
        ),
        Column::new(
            "sanitized".into(),
            runs.iter()
                .flat_map(|(_, r)| r.jobs.iter().map(move |j| sanitized(r, j)))
                .collect::<Vec<_>>(),
        ),
        Column::new(
            "bytes".into(),
            all.iter().map(|(_, j)| j.work.bytes).collect::<Vec<_>>(),
        ),
        Column::new(
            "flops".into(),
            all.iter().map(|(_, j)| j.work.flops).collect::<Vec<_>>(),
        ),
        Column::new(
            "launches".into(),
            all.iter()
                .map(|(_, j)| j.launches as u64)
                .collect::<Vec<_>>(),
        ),
    ])
}

/// timings: `run, job_id, median_ms, ci_low_ms, ci_high_ms, samples` (jobs with a summary only).
pub(super) fn timings(runs: &[(&str, &RunData)]) -> PolarsResult<DataFrame> {
    let all: Vec<(&str, &str, crate::stats::Summary)> = runs
        .iter()
        .flat_map(|(label, r)| {
            r.jobs
                .iter()
                .filter_map(move |j| Some((*label, j.id(), j.summary?)))
        })
        .collect();
    DataFrame::new_infer_height(vec![
        Column::new(
            "run".into(),
            all.iter().map(|a| a.0.to_string()).collect::<Vec<_>>(),
        ),
        Column::new(
            "job_id".into(),
            all.iter().map(|a| a.1.to_string()).collect::<Vec<_>>(),
        ),
        Column::new(
            "median_ms".into(),
            all.iter().map(|a| a.2.median).collect::<Vec<_>>(),
        ),
        Column::new(
            "ci_low_ms".into(),
            all.iter().map(|a| a.2.ci_low).collect::<Vec<_>>(),
        ),
        Column::new(
            "ci_high_ms".into(),
            all.iter().map(|a| a.2.ci_high).collect::<Vec<_>>(),
        ),
        Column::new(
            "samples".into(),
            all.iter().map(|a| a.2.n as u64).collect::<Vec<_>>(),
        ),
    ])
}

/// NVML after each job: `run, job_id, sm_clock_mhz, mem_clock_mhz, temperature_c, power_w, throttled` (jobs with a snapshot only).
pub(super) fn snapshots(runs: &[(&str, &RunData)]) -> PolarsResult<DataFrame> {
    let all: Vec<(&str, &str, &crate::records::Snapshot)> = runs
        .iter()
        .flat_map(|(label, r)| {
            r.jobs.iter().filter_map(move |j| {
                Some((
                    *label,
                    j.id(),
                    j.nvml_after.as_ref().or(j.nvml_before.as_ref())?,
                ))
            })
        })
        .collect();
    let f = |v: Option<u32>| v.map(f64::from);
    DataFrame::new_infer_height(vec![
        Column::new(
            "run".into(),
            all.iter().map(|a| a.0.to_string()).collect::<Vec<_>>(),
        ),
        Column::new(
            "job_id".into(),
            all.iter().map(|a| a.1.to_string()).collect::<Vec<_>>(),
        ),
        Column::new(
            "sm_clock_mhz".into(),
            all.iter().map(|a| f(a.2.sm_clock_mhz)).collect::<Vec<_>>(),
        ),
        Column::new(
            "mem_clock_mhz".into(),
            all.iter().map(|a| f(a.2.mem_clock_mhz)).collect::<Vec<_>>(),
        ),
        Column::new(
            "temperature_c".into(),
            all.iter().map(|a| f(a.2.temperature_c)).collect::<Vec<_>>(),
        ),
        Column::new(
            "power_w".into(),
            all.iter().map(|a| a.2.power_w).collect::<Vec<_>>(),
        ),
        Column::new(
            "throttled".into(),
            all.iter().map(|a| a.2.is_throttled()).collect::<Vec<_>>(),
        ),
    ])
}

/// The copy bound of each job: `run, job_id, bounds_bytes, copy_gbs, memcpy_gbs, copy_kernel_gbs`,
/// its own GPU's in a run over several GPUs (`RunData::bound_of`), as the report divides by.
pub(super) fn bounds(runs: &[(&str, &RunData)]) -> PolarsResult<DataFrame> {
    let all: Vec<(&str, &str, &crate::records::BoundsRecord)> = runs
        .iter()
        .flat_map(|(label, r)| {
            r.jobs
                .iter()
                .filter_map(move |j| Some((*label, j.id(), r.bound_of(j)?)))
        })
        .collect();
    DataFrame::new_infer_height(vec![
        Column::new(
            "run".into(),
            all.iter().map(|a| a.0.to_string()).collect::<Vec<_>>(),
        ),
        Column::new(
            "job_id".into(),
            all.iter().map(|a| a.1.to_string()).collect::<Vec<_>>(),
        ),
        Column::new(
            "bounds_bytes".into(),
            all.iter().map(|a| a.2.bytes).collect::<Vec<_>>(),
        ),
        Column::new(
            "copy_gbs".into(),
            all.iter().map(|a| a.2.copy_gbs()).collect::<Vec<_>>(),
        ),
        Column::new(
            "memcpy_gbs".into(),
            all.iter().map(|a| a.2.memcpy_gbs()).collect::<Vec<_>>(),
        ),
        Column::new(
            "copy_kernel_gbs".into(),
            all.iter().map(|a| a.2.kernel_gbs()).collect::<Vec<_>>(),
        ),
    ])
}

/// one row per run: `run, suite, gpu, gpu_uuid, driver, ncu, started, peak_gbs, mock, cuda, clock_policy, cache, seed`.
pub(super) fn environments(runs: &[(&str, &RunData)]) -> PolarsResult<DataFrame> {
    let d = |r: &RunData| r.info.device.clone();
    DataFrame::new_infer_height(vec![
        Column::new(
            "run".into(),
            runs.iter().map(|(l, _)| l.to_string()).collect::<Vec<_>>(),
        ),
        Column::new(
            "suite".into(),
            runs.iter()
                .map(|(_, r)| r.info.suite.clone())
                .collect::<Vec<_>>(),
        ),
        Column::new(
            "gpu".into(),
            runs.iter()
                .map(|(_, r)| d(r).map(|d| d.name))
                .collect::<Vec<_>>(),
        ),
        Column::new(
            "gpu_uuid".into(),
            runs.iter()
                .map(|(_, r)| d(r).map(|d| d.uuid))
                .collect::<Vec<_>>(),
        ),
        Column::new(
            "driver".into(),
            runs.iter()
                .map(|(_, r)| d(r).map(|d| d.driver))
                .collect::<Vec<_>>(),
        ),
        Column::new(
            "ncu".into(),
            runs.iter()
                .map(|(_, r)| r.info.ncu_version.clone())
                .collect::<Vec<_>>(),
        ),
        Column::new(
            "started".into(),
            runs.iter()
                .map(|(_, r)| r.info.started.clone())
                .collect::<Vec<_>>(),
        ),
        Column::new(
            "peak_gbs".into(),
            runs.iter()
                .map(|(_, r)| d(r).map(|d| d.peak_bandwidth_gbs).filter(|p| *p > 0.0))
                .collect::<Vec<_>>(),
        ),
        Column::new(
            "mock".into(),
            runs.iter().map(|(_, r)| r.info.mock).collect::<Vec<_>>(),
        ),
        Column::new(
            "cuda".into(),
            runs.iter()
                .map(|(_, r)| d(r).map(|d| d.cuda_driver))
                .collect::<Vec<_>>(),
        ),
        Column::new(
            "clock_policy".into(),
            runs.iter()
                .map(|(_, r)| r.info.clock_policy.clone())
                .collect::<Vec<_>>(),
        ),
        // Every row says its L2 state, so a warm time copied out of the frame still says warm.
        Column::new(
            "cache".into(),
            runs.iter()
                .map(|(_, r)| match r.info.timing.cache {
                    CacheState::Cold => "cold",
                    CacheState::Warm => "warm",
                })
                .collect::<Vec<_>>(),
        ),
        Column::new(
            "seed".into(),
            runs.iter().map(|(_, r)| r.info.seed).collect::<Vec<_>>(),
        ),
    ])
}

/// counters, long: `run, job_id, metric, value` (value null where not applicable).
pub(super) fn counters(runs: &[(&str, &RunData)]) -> PolarsResult<DataFrame> {
    let all: Vec<(&str, &str, &str, Option<f64>)> = runs
        .iter()
        .flat_map(|(label, r)| {
            r.profiles.values().flat_map(move |p| {
                p.metrics
                    .iter()
                    .map(move |(m, v)| (*label, p.job_id.as_str(), m.as_str(), *v))
            })
        })
        .collect();
    DataFrame::new_infer_height(vec![
        Column::new(
            "run".into(),
            all.iter().map(|a| a.0.to_string()).collect::<Vec<_>>(),
        ),
        Column::new(
            "job_id".into(),
            all.iter().map(|a| a.1.to_string()).collect::<Vec<_>>(),
        ),
        Column::new(
            "metric".into(),
            all.iter().map(|a| a.2.to_string()).collect::<Vec<_>>(),
        ),
        Column::new("value".into(), all.iter().map(|a| a.3).collect::<Vec<_>>()),
    ])
}
