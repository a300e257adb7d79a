//! What one GPU measures, each step made into its record: a group's copy and compute bounds, and one job (a failed job's log kept in the run).

use std::path::Path;
use std::time::Instant;

use anyhow::bail;

use crate::executor::{Executor, Failure, RunContext};
use crate::records::{
    BoundSpec, BoundsRecord, ComputeBoundRecord, FmaRate, HostLinkBounds, JobOutcome, JobRecord,
    JobStatus, Math, RoofRecord, RoofSource,
};
use crate::stats;
use crate::store::{self, FileKind, read_regular};
use crate::suite::{JobSpec, Suite};

/// The copy bounds of a group: a copy of as many bytes as the group's largest buffer, read once and written once.
pub(super) fn bounds(
    executor: &dyn Executor,
    ctx: &RunContext,
    tag: &str,
    group: &str,
    jobs: &[&JobSpec],
) -> anyhow::Result<BoundsRecord> {
    let bytes = jobs
        .iter()
        .flat_map(|j| j.buffers.iter().map(|b| b.bytes()))
        .max()
        .unwrap_or(0);
    let failed = |e: String| BoundsRecord {
        group: group.to_string(),
        bytes,
        memcpy: None,
        copy_kernel: None,
        error: Some(e),
        fma: None,
        gpu: None,
        host: None,
        roofs: Vec::new(),
    };
    let roofs = roofs(executor, ctx, tag, jobs)?;
    if bytes == 0 {
        return Ok(BoundsRecord {
            roofs,
            ..failed("the group has no buffers to copy".into())
        });
    }
    let record = match executor.bounds(ctx, &format!("bounds-{tag}"), bytes) {
        Ok(o) => BoundsRecord {
            group: group.to_string(),
            bytes: o.bytes,
            memcpy: stats::summarize(&o.memcpy_samples_ms),
            copy_kernel: stats::summarize(&o.kernel_samples_ms),
            error: None,
            fma: o.fma.and_then(|(samples, flops, sm_count)| {
                Some(FmaRate {
                    flops,
                    summary: stats::summarize(&samples)?,
                    sm_count,
                })
            }),
            gpu: None,
            host: o.host.as_ref().map(HostLinkBounds::from_samples),
            roofs: Vec::new(),
        },
        Err(Failure::Fatal(why)) => bail!("{why}"),
        Err(f) => failed(f.message()),
    };
    Ok(BoundsRecord { roofs, ..record })
}

/// The maths whose roofs a group measures: those its jobs' flops declare, FP32 aside (its roof is
/// the FMA rate), in `Math` order.
pub(super) fn roof_maths(jobs: &[&JobSpec]) -> Vec<Math> {
    let mut maths: Vec<Math> = jobs
        .iter()
        .filter(|j| j.work.flops.is_some())
        .filter_map(|j| j.work.math)
        .filter(|m| *m != Math::Fp32)
        .collect();
    maths.sort();
    maths.dedup();
    maths
}

/// Each math's roofs in the group, summarized; a math whose child failed gets one record that
/// says why (so a report can say "roof not measured" with the reason).
fn roofs(
    executor: &dyn Executor,
    ctx: &RunContext,
    tag: &str,
    jobs: &[&JobSpec],
) -> anyhow::Result<Vec<RoofRecord>> {
    let mut out = Vec::new();
    for math in roof_maths(jobs) {
        match executor.roofs(ctx, &format!("roofs-{tag}-{}", math.name()), math) {
            Ok(found) => out.extend(found.into_iter().map(|r| RoofRecord {
                summary: stats::summarize(&r.samples_ms),
                ..r
            })),
            Err(Failure::Fatal(why)) => bail!("{why}"),
            Err(f) => out.push(RoofRecord {
                math,
                source: RoofSource::Library,
                what: "the roofs' child".into(),
                ops: 0.0,
                summary: None,
                samples_ms: Vec::new(),
                sm_mhz: None,
                error: Some(f.message()),
            }),
        }
    }
    Ok(out)
}

/// The vendor compute bounds of a group: cuBLAS once per distinct shape its jobs ask for.
pub(super) fn compute_bounds(
    executor: &dyn Executor,
    ctx: &RunContext,
    tag: &str,
    group: &str,
    jobs: &[&JobSpec],
) -> anyhow::Result<Vec<ComputeBoundRecord>> {
    let mut wanted: Vec<(&BoundSpec, String, f64)> = Vec::new();
    for j in jobs {
        if let (BoundSpec::Cublas { shape, .. }, Some(key)) = (&j.bound, j.bound.key())
            && !wanted.iter().any(|(_, k, _)| *k == key)
        {
            wanted.push((&j.bound, key, shape.flops()));
        }
    }
    let mut out = Vec::new();
    for (bi, (bound, key, flops)) in wanted.into_iter().enumerate() {
        let record = |summary, samples_ms, math_mode, error| ComputeBoundRecord {
            group: group.to_string(),
            key: key.clone(),
            math_mode,
            flops,
            summary,
            samples_ms,
            error,
            gpu: None,
        };
        out.push(
            match executor.compute_bound(ctx, &format!("compute-{tag}-{bi}"), bound) {
                Ok(o) => record(
                    stats::summarize(&o.samples_ms),
                    o.samples_ms,
                    o.math_mode,
                    None,
                ),
                Err(Failure::Fatal(why)) => bail!("{why}"),
                Err(f) => record(None, Vec::new(), String::new(), Some(f.message())),
            },
        );
    }
    Ok(out)
}

/// Runs one job and makes its record; a failed job keeps its whole log in the run's `logs/`.
pub(super) fn run_job(
    executor: &dyn Executor,
    ctx: &RunContext,
    suite: &Suite,
    job: &JobSpec,
    tag: &str,
) -> anyhow::Result<JobRecord> {
    let t0 = Instant::now();
    let nvml_before = executor.snapshot();
    let outcome = executor.job(ctx, tag, job);
    let nvml_after = executor.snapshot();
    let description = suite
        .manifest
        .variants
        .iter()
        .find(|v| v.name == job.key.variant)
        .map(|v| v.description.clone())
        .unwrap_or_default();
    // Failed until the outcome says otherwise.
    let mut record = JobRecord {
        key: job.key.clone(),
        label: job.label(),
        description,
        work: job.work,
        bound: job.bound.clone(),
        launches: job.launches.len(),
        host_link: job.crosses_host_link(),
        noise_threshold_pct: job.noise_threshold_pct,
        nvml_before,
        nvml_after,
        ..Default::default()
    };
    match outcome {
        Ok(o) => {
            record.status = status_of(&o);
            record.summary = stats::summarize(&o.samples_ms);
            record.correctness = o.correctness;
            record.correctness_after = o.correctness_after;
            record.samples_ms = o.samples_ms;
            record.runs_per_sample = o.runs_per_sample;
            record.stopped_by = o.stopped_by;
            record.timing_method = o.timing_method;
            record.correctness_during = o.correctness_during;
            record.verified_during = o.verified_during;
            record.timed_checks = o.timed_checks;
            record.excluded_samples = o.excluded_samples;
            record.warmup_ms = o.warmup_ms;
            record.sample_clock_mhz = o.sample_clock_mhz;
            record.occupancy = o.occupancy;
            record.occupancy_error = o.occupancy_error;
            record.timeline = o.timeline;
            record.sample_clock_events = o.sample_clock_events;
            record.clock_lowered_kept = o.clock_lowered_kept;
            record.energy = o.energy;
            record.activity = o.activity;
            record.phases = o.phases;
            record.compilers = o
                .compile
                .iter()
                .map(|c| c.compiler.clone())
                .filter(|c| !c.is_empty())
                .collect();
            record.compilers.dedup();
        }
        Err(Failure::Fatal(why)) => bail!("{why}"),
        Err(failure) => {
            if matches!(failure, Failure::TimedOut { .. }) {
                record.status = JobStatus::TimedOut;
            }
            let mut message = failure.message();
            if let Some(log) = failure.log() {
                // work/ goes when the run ends; a failed job's whole log stays.
                // Through the safe reader and writer: the log must be a regular file, and `logs/`
                // a real directory of the run.
                let kept = Path::new("logs").join(format!("{tag}.log"));
                if read_regular(log, FileKind::LOG)
                    .map_err(std::io::Error::other)
                    .and_then(|text| store::write_atomic_under(ctx.dir, &kept, &text))
                    .is_ok()
                {
                    message.push_str(&format!("\n(full log: logs/{tag}.log)"));
                }
            }
            record.error = Some(message);
        }
    }
    record.wall_seconds = t0.elapsed().as_secs_f64();
    Ok(record)
}

/// A job that ran is WRONG if any verification of it failed: before timing, between samples, its
/// verified timed runs (issue 32), or after timing.
fn status_of(o: &JobOutcome) -> JobStatus {
    let passed = |c: &Option<crate::verify::Correctness>| c.as_ref().is_none_or(|c| c.passed);
    if passed(&o.correctness)
        && passed(&o.correctness_after)
        && passed(&o.correctness_during)
        && o.timed_checks.as_ref().is_none_or(|t| t.passed())
    {
        JobStatus::Ok
    } else {
        JobStatus::Wrong
    }
}

#[cfg(test)]
mod status_tests {
    use super::*;
    use crate::records::{TimedChecks, TimedSetup, VerifiedRun, timed_wrong};
    use crate::verify::Correctness;

    fn check(passed: bool) -> Correctness {
        Correctness {
            passed,
            checked: 16,
            mismatches: u64::from(!passed) * 12,
            unwritten: u64::from(!passed) * 12,
            rel_error: 0.0,
            first_mismatch: (!passed).then(|| "[1] = NaN, expected 2".into()),
            max_error: None,
            elem: None,
            max_ulp: None,
        }
    }

    /// What the child reports for a job right before and after timing, with one try of verified
    /// timed runs whose checks are `passed`.
    fn outcome(passed: [bool; 3]) -> JobOutcome {
        let runs: Vec<VerifiedRun> = TimedSetup::TRY
            .iter()
            .zip(passed)
            .map(|(&setup, p)| VerifiedRun {
                attempt: 1,
                setup,
                ms: 0.02,
                seed: 1,
                check: check(p),
                output_as_before: false,
            })
            .collect();
        let wrong = timed_wrong(&runs);
        JobOutcome {
            correctness: Some(check(true)),
            samples_ms: vec![0.01; 10],
            runs_per_sample: 1,
            warmup_runs: 3,
            stopped_by: "noise target 0.50% met".into(),
            compile: Vec::new(),
            seed: 1,
            correctness_after: Some(check(true)),
            timing_method: String::new(),
            correctness_during: None,
            verified_during: 0,
            timed_checks: Some(TimedChecks { runs, wrong }),
            excluded_samples: Vec::new(),
            warmup_ms: 25.0,
            sample_clock_mhz: None,
            occupancy: Vec::new(),
            occupancy_error: None,
            timeline: None,
            sample_clock_events: Default::default(),
            clock_lowered_kept: 0,
            energy: None,
            activity: None,
            phases: Vec::new(),
        }
    }

    #[test]
    fn a_job_right_before_and_after_timing_is_wrong_when_a_verified_timed_run_is() {
        assert_eq!(status_of(&outcome([true; 3])), JobStatus::Ok);
        // The transpose: right before and after timing, a quarter rewritten over poison.
        let cheat = outcome([true, false, true]);
        assert_eq!(status_of(&cheat), JobStatus::Wrong);
        let why = cheat.timed_checks.unwrap().wrong.unwrap();
        assert!(
            why.starts_with("timed run 2 of try 1 (inputs as timed, outputs poisoned"),
            "{why}"
        );
        // Jobs made before verified timed runs existed (none recorded) keep their status.
        let old = JobOutcome {
            timed_checks: None,
            ..outcome([true; 3])
        };
        assert_eq!(status_of(&old), JobStatus::Ok);
    }
}
