//! One job of both runs compared: its time (normalised by clock, or relative to the copy bound across GPU models), its counters and its correctness, into a verdict with notes; and the jobs only one run has.

use std::collections::BTreeSet;

use super::clocks::{self, ClockChange};
use super::comparison::{JobComparison, Settings, TimingChange};
use super::counters::{self, CounterChange};
use super::timing::{self, Direction, Interval};
use super::verdict::{Verdict, status_word};
use crate::metrics::MetricDef;
use crate::records::{Impossible, JobRecord, JobStatus, ProfileRecord, RunData};

/// The copy bound of a job's group in GB/s and the relative half-width of its interval.
fn copy_bound(run: &RunData, job: &JobRecord) -> Option<(f64, f64)> {
    let b = run.bound_of(job)?;
    Some((b.copy_gbs()?, b.best_copy()?.relative_half_width()))
}

fn pct_of_copy(run: &RunData, job: &JobRecord) -> Option<f64> {
    Some(100.0 * job.gbs()? / run.bound_of(job)?.copy_gbs()?)
}

/// Why a job's samples cannot be compared, if they cannot.
fn unusable_samples(job: &JobRecord) -> Option<&'static str> {
    match job.summary {
        _ if job.samples_ms.is_empty() => Some("no timing samples"),
        _ if job.samples_ms.iter().any(|x| !x.is_finite()) => {
            Some("a timing sample that is not a finite number")
        }
        None => Some("no timing summary"),
        Some(s) if s.median <= 0.0 => Some("a median time of 0"),
        Some(_) => None,
    }
}

fn compare_timing(
    base_run: &RunData,
    base: &JobRecord,
    new_run: &RunData,
    new: &JobRecord,
    s: &Settings,
    notes: &mut Vec<String>,
) -> Option<TimingChange> {
    for (job, which) in [(base, "the baseline"), (new, "this run")] {
        if let Some(why) = unusable_samples(job) {
            notes.push(format!(
                "timing not compared: {which} has {why} for this job"
            ));
            return None;
        }
    }
    let (base_ms, new_ms) = (base.summary?.median, new.summary?.median);
    let seed = timing::seed_for(base.id());
    let mut clocks = Vec::new();
    let change = if s.relative_to_copy {
        let (Some((base_copy, base_hw)), Some((new_copy, new_hw))) =
            (copy_bound(base_run, base), copy_bound(new_run, new))
        else {
            notes.push("timing not compared across GPU models: no copy bound for this group in one of the runs".into());
            return None;
        };
        // time × copy GB/s is proportional to the time relative to the run's own copy bound.
        let scaled = |v: &[f64], k: f64| v.iter().map(|x| x * k).collect::<Vec<_>>();
        // The bounds are medians with their own intervals; their widths add to the change's.
        timing::change_of_median(
            &scaled(&base.samples_ms, base_copy),
            &scaled(&new.samples_ms, new_copy),
            s.resamples,
            seed,
        )
        .map(|c| Interval {
            low: c.low - base_hw - new_hw,
            high: c.high + base_hw + new_hw,
            ..c
        })
    } else {
        clocks = clocks::changes(base, new, s.normalize);
        let factor: f64 = clocks.iter().map(ClockChange::factor).product();
        let normalised: Vec<f64> = new.samples_ms.iter().map(|x| x * factor).collect();
        timing::change_of_median(&base.samples_ms, &normalised, s.resamples, seed)
    };
    let Some(change) = change else {
        notes.push("timing not compared: the samples give no interval".into());
        return None;
    };
    // A suite that declares its own threshold (jobs that vary more between runs) widens this one.
    let own = [base, new]
        .iter()
        .filter_map(|j| j.own_noise_threshold())
        .fold(0.0, f64::max);
    let threshold = timing::threshold(s.noise_threshold.max(own), s.noise_floor_ms, base_ms);
    let verdict = match timing::judge(&change, threshold) {
        Direction::Slower => Verdict::Regressed,
        Direction::Faster => Verdict::Improved,
        Direction::Within => Verdict::Same,
    };
    Some(TimingChange {
        base_ms,
        new_ms,
        change,
        threshold,
        clocks,
        base_pct_of_copy: pct_of_copy(base_run, base),
        new_pct_of_copy: pct_of_copy(new_run, new),
        verdict,
    })
}

/// A job's profile with counters in it; where a run has profiles but not this job's, a note says why.
fn profile_of<'a>(
    run: &'a RunData,
    id: &str,
    which: &str,
    notes: &mut Vec<String>,
) -> Option<&'a ProfileRecord> {
    match run.profiles.get(id) {
        None => notes.push(format!(
            "counters not compared: {which} has no ncu profile of this job"
        )),
        Some(p) if p.metrics.is_empty() => {
            let why = p
                .error
                .as_deref()
                .and_then(|e| e.lines().next())
                .map(|e| format!(": {e}"))
                .unwrap_or_default();
            notes.push(format!(
                "counters not compared: ncu measured nothing for this job in {which}{why}"
            ));
        }
        Some(p) => return Some(p),
    }
    None
}

fn compare_counters(
    base_run: &RunData,
    base: &JobRecord,
    new_run: &RunData,
    new: &JobRecord,
    defs: &[MetricDef],
    redefined: &BTreeSet<String>,
    notes: &mut Vec<String>,
) -> Vec<CounterChange> {
    // A run without any profile is one note for the whole comparison (environment_notes), not one per job.
    if base_run.profiles.is_empty() || new_run.profiles.is_empty() {
        return Vec::new();
    }
    let (Some(b), Some(n)) = (
        profile_of(base_run, base.id(), "the baseline", notes),
        profile_of(new_run, new.id(), "this run", notes),
    ) else {
        return Vec::new();
    };
    let lacking = counters::not_measured(b, n, defs);
    if !lacking.is_empty() {
        notes.push(format!(
            "not measured in this run, so not compared: {}",
            lacking.join(", ")
        ));
    }
    counters::compare(b, n, defs, redefined)
}

/// `new_side`: the new run and its jobs' impossibility, computed once for all of them.
pub(super) fn compare_job(
    base_run: &RunData,
    base: &JobRecord,
    new_side: (&RunData, &Impossible),
    new: &JobRecord,
    defs: &[MetricDef],
    redefined: &BTreeSet<String>,
    s: &Settings,
) -> JobComparison {
    let (new_run, new_impossible) = new_side;
    let mut notes = Vec::new();
    let mut timing = None;
    let mut counters = Vec::new();
    let verdict = match (base.status, new.status) {
        // A result the card cannot deliver is a failure, whatever its time.
        (_, JobStatus::Ok) if new_impossible.contains_key(new.id()) => {
            notes.push(format!("impossible: {}", new_impossible[new.id()]));
            Verdict::Regressed
        }
        (JobStatus::Ok, JobStatus::Ok) => {
            timing = compare_timing(base_run, base, new_run, new, s, &mut notes);
            counters = compare_counters(base_run, base, new_run, new, defs, redefined, &mut notes);
            let parts = timing
                .iter()
                .map(|t| t.verdict)
                .chain(counters.iter().filter_map(|c| c.verdict));
            parts.min().unwrap_or(Verdict::Same)
        }
        (JobStatus::Ok, now) => {
            notes.push(format!("was correct, now {}", status_word(now)));
            Verdict::Regressed
        }
        (was, JobStatus::Ok) => {
            notes.push(format!(
                "now correct (was {}); no timing to compare with",
                status_word(was)
            ));
            Verdict::Improved
        }
        (was, now) => {
            notes.push(if was == now {
                format!("still {}", status_word(now))
            } else {
                format!(
                    "still not correct: was {}, now {}",
                    status_word(was),
                    status_word(now)
                )
            });
            Verdict::Same
        }
    };
    JobComparison {
        id: new.key.id.clone(),
        label: new.label.clone(),
        group: new.key.group.clone(),
        verdict,
        base_status: Some(base.status),
        new_status: Some(new.status),
        timing,
        counters,
        notes,
    }
}

/// A job only one run has. `unfinished`: the new run stopped early, so a job it lacks may be one it never reached.
pub(super) fn one_sided(j: &JobRecord, in_base: bool, unfinished: bool) -> JobComparison {
    let (verdict, notes) = match (in_base, j.status) {
        // A run killed halfway must not pass the gate on the jobs it got through.
        (true, _) if unfinished => (
            Verdict::Regressed,
            vec!["not in this run, which did not finish".to_string()],
        ),
        (true, _) => (Verdict::Missing, vec!["not in this run".to_string()]),
        (false, JobStatus::Ok) => (Verdict::New, vec!["not in the baseline".to_string()]),
        // An incorrect kernel must not enter unnoticed just because nothing was stored for it.
        (false, s) => (
            Verdict::Regressed,
            vec![format!("new job, and {}", status_word(s))],
        ),
    };
    JobComparison {
        id: j.key.id.clone(),
        label: j.label.clone(),
        group: j.key.group.clone(),
        verdict,
        base_status: in_base.then_some(j.status),
        new_status: (!in_base).then_some(j.status),
        timing: None,
        counters: Vec::new(),
        notes,
    }
}
