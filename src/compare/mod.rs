//! Two runs side by side, job by job: the change of each median with its interval, clocks, counters, correctness, and a verdict (pure).
//!
//! `check` judges a run against a baseline with these verdicts; `compare` shows the same
//! comparison without them. The rules (docs/ci.md): a job regresses when it stopped being correct,
//! when the 95% interval of its time change lies wholly above the noise threshold, when a
//! counter moved by its tolerance or more in its worse direction, or when the new run did not
//! finish and lacks it; it improves in the mirror cases; anything else is the same.

pub mod clocks;
pub mod counters;
pub mod json;
pub mod junit;
pub mod markdown;
pub mod reframe;
pub mod timing;

use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;

use crate::metrics::MetricDef;
use crate::records::{Fingerprint, Impossible, JobRecord, JobStatus, ProfileRecord, RunData};
use crate::report::Exporter;
use clocks::{ClockChange, Normalize};
use counters::CounterChange;
use timing::{Direction, Interval};

/// Default noise threshold, percent: between back-to-back cold runs of unchanged code a kernel's
/// median moved by up to 6.05% (warm pairs: 4.9%); docs/ci.md has the data of ten pairs.
pub const DEFAULT_NOISE_THRESHOLD_PCT: f64 = 7.0;
/// Default absolute floor, microseconds: kernels of 5–8 µs drifted by up to 0.78 µs (14%) between
/// back-to-back runs (reports/regression-demo-h100, docs/ci.md).
pub const DEFAULT_NOISE_FLOOR_US: f64 = 1.0;

/// In report order: what needs attention first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    Regressed,
    Improved,
    New,
    Missing,
    Same,
}

impl Verdict {
    pub fn word(self) -> &'static str {
        match self {
            Verdict::Regressed => "Regressed",
            Verdict::Improved => "Improved",
            Verdict::New => "New",
            Verdict::Missing => "Missing",
            Verdict::Same => "Same",
        }
    }
}

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

/// The two GPU models, when both are known and differ.
pub fn other_gpu(base: &RunData, new: &RunData) -> Option<(String, String)> {
    match (&base.info.device, &new.info.device) {
        (Some(a), Some(b)) if a.name != b.name => Some((a.name.clone(), b.name.clone())),
        _ => None,
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

fn status_word(s: JobStatus) -> &'static str {
    match s {
        JobStatus::Ok => "correct",
        JobStatus::Wrong => "wrong",
        JobStatus::Failed => "failed",
        JobStatus::TimedOut => "timed out",
    }
}

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
fn compare_job(
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
fn one_sided(j: &JobRecord, in_base: bool, unfinished: bool) -> JobComparison {
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

fn differs<T: PartialEq + std::fmt::Display>(
    what: &str,
    a: Option<T>,
    b: Option<T>,
    notes: &mut Vec<String>,
) {
    if let (Some(a), Some(b)) = (a, b)
        && a != b
    {
        notes.push(format!("{what} differs: {a} → {b}"));
    }
}

fn environment_notes(
    base: &RunData,
    new: &RunData,
    jobs: &[JobComparison],
    redefined: &BTreeSet<String>,
    s: &Settings,
) -> Vec<String> {
    let mut notes = Vec::new();
    for (which, run) in [("the baseline", base), ("this run", new)] {
        if run.info.mock {
            notes.push(format!("**MOCK**: {which} was made with `--mock-gpu`: no GPU ran, its numbers are stand-ins, and these verdicts test gpu-lab itself, not a kernel"));
        }
    }
    if base.info.timing.cache != new.info.timing.cache {
        notes.push(format!(
            "**L2 state differs** ({} → {}): times of L2-resident sizes do not compare",
            base.info.cache_state, new.info.cache_state
        ));
    }
    if new.info.finished.is_none() {
        notes.push("**this run did not finish** (no end time in its run.json): every baseline job it lacks counts as Regressed".into());
    }
    let (bd, nd) = (base.info.device.as_ref(), new.info.device.as_ref());
    match (other_gpu(base, new), bd.zip(nd)) {
        (Some((a, b)), _) => notes.push(format!(
            "different GPU models ({a} → {b}): each job is compared by its time relative to the copy bound measured in its own run (its % of copy), clocks are not normalised; counters are compared as usual"
        )),
        (None, Some(_)) if base.gpu_uuids() != new.gpu_uuids() => notes.push(format!("other cards of the same model: {} → {}", base.gpu_uuids().join(", "), new.gpu_uuids().join(", "))),
        (None, None) => notes.push("the GPU of one run is unknown (NVML gave no device): the model could not be verified".into()),
        _ => {}
    }
    differs(
        "driver",
        bd.map(|d| &d.driver),
        nd.map(|d| &d.driver),
        &mut notes,
    );
    differs(
        "CUDA",
        bd.map(|d| &d.cuda_driver),
        nd.map(|d| &d.cuda_driver),
        &mut notes,
    );
    differs(
        "ncu",
        base.info.ncu_version.as_ref(),
        new.info.ncu_version.as_ref(),
        &mut notes,
    );
    differs(
        "clock policy",
        Some(&base.info.clock_policy),
        Some(&new.info.clock_policy),
        &mut notes,
    );
    if base.info.suite_source_hash != new.info.suite_source_hash {
        let short = |h: &str| h.chars().take(12).collect::<String>();
        notes.push(format!(
            "suite sources differ (sha256 {} → {}): the kernels or the manifest changed, as they do when a change is checked",
            short(&base.info.suite_source_hash),
            short(&new.info.suite_source_hash)
        ));
    }
    differs(
        "input seed",
        Some(base.info.seed),
        Some(new.info.seed),
        &mut notes,
    );
    let (bt, nt) = (&base.info.timing, &new.info.timing);
    if (bt.target_rel_ci, bt.max_seconds) != (nt.target_rel_ci, nt.max_seconds) {
        notes.push(format!(
            "timing settings differ: noise target ±{:.1}% → ±{:.1}%, at most {:.1} s → {:.1} s per job",
            bt.target_rel_ci * 100.0,
            nt.target_rel_ci * 100.0,
            bt.max_seconds,
            nt.max_seconds
        ));
    }
    for clock in [clocks::Clock::Sm, clocks::Clock::Memory] {
        let changed: Vec<&ClockChange> = jobs
            .iter()
            .filter_map(|j| j.timing.as_ref())
            .flat_map(|t| &t.clocks)
            .filter(|c| c.clock == clock)
            .collect();
        if changed.is_empty() {
            continue;
        }
        let range = |f: &dyn Fn(&&ClockChange) -> u32| {
            let (lo, hi) = (
                changed.iter().map(f).min().unwrap_or(0),
                changed.iter().map(f).max().unwrap_or(0),
            );
            if lo == hi {
                format!("{lo}")
            } else {
                format!("{lo}–{hi}")
            }
        };
        let normalised = changed.iter().filter(|c| c.normalised).count();
        notes.push(format!(
            "**{} clock differs** in {} jobs ({} → {} MHz); {}",
            clock.name(),
            changed.len(),
            range(&|c| c.base_mhz),
            range(&|c| c.new_mhz),
            if normalised == 0 {
                "no job's time was normalised by it".to_string()
            } else {
                format!("{normalised} of them scale with it and had their times normalised (time × new/old clock)")
            }
        ));
    }
    let throttled = new
        .jobs
        .iter()
        .flat_map(|j| [&j.nvml_before, &j.nvml_after])
        .flatten()
        .filter(|s| s.is_throttled())
        .count();
    if throttled > 0 {
        notes.push(format!(
            "{throttled} NVML snapshots of this run show the GPU throttled"
        ));
    }
    if !base.profiles.is_empty() && new.profiles.is_empty() {
        notes.push("this run has no ncu counters: counters were not compared (profile the new run to compare them)".into());
    }
    if !redefined.is_empty() {
        notes.push(format!(
            "definition changed between the runs (other counters or formula): {}; its values are shown but not judged",
            redefined.iter().cloned().collect::<Vec<_>>().join(", ")
        ));
    }
    if s.normalize == Normalize::None && !s.relative_to_copy {
        notes.push("clock normalisation is off".into());
    }
    notes
}

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
