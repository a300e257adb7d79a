//! The notes on two runs' environments worth knowing before reading the verdicts: mock runs, cache state, GPU models and cards, driver, CUDA, ncu, sources, settings, clocks, throttling and counters.

use std::collections::BTreeSet;

use super::clocks::{self, ClockChange, Normalize};
use super::comparison::{JobComparison, Settings};
use crate::records::RunData;

/// The two GPU models, when both are known and differ.
pub fn other_gpu(base: &RunData, new: &RunData) -> Option<(String, String)> {
    match (&base.info.device, &new.info.device) {
        (Some(a), Some(b)) if a.name != b.name => Some((a.name.clone(), b.name.clone())),
        _ => None,
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

/// The notes on the two runs' environments, in the order a reader needs them.
pub(super) fn environment_notes(
    base: &RunData,
    new: &RunData,
    jobs: &[JobComparison],
    redefined: &BTreeSet<String>,
    s: &Settings,
) -> Vec<String> {
    let mut notes = Vec::new();
    run_notes(base, new, &mut notes);
    gpu_notes(base, new, &mut notes);
    source_and_setting_notes(base, new, &mut notes);
    clock_notes(jobs, &mut notes);
    measurement_notes(base, new, redefined, s, &mut notes);
    notes
}

/// Mock runs, a different L2 state, and a new run that did not finish.
fn run_notes(base: &RunData, new: &RunData, notes: &mut Vec<String>) {
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
}

/// Other GPU models, other cards, an unknown GPU, and a different driver, CUDA, ncu or clock policy.
fn gpu_notes(base: &RunData, new: &RunData, notes: &mut Vec<String>) {
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
        notes,
    );
    differs(
        "CUDA",
        bd.map(|d| &d.cuda_driver),
        nd.map(|d| &d.cuda_driver),
        notes,
    );
    differs(
        "ncu",
        base.info.ncu_version.as_ref(),
        new.info.ncu_version.as_ref(),
        notes,
    );
    differs(
        "clock policy",
        Some(&base.info.clock_policy),
        Some(&new.info.clock_policy),
        notes,
    );
}

/// Changed suite sources, input seed or timing settings.
fn source_and_setting_notes(base: &RunData, new: &RunData, notes: &mut Vec<String>) {
    if base.info.suite_source_hash != new.info.suite_source_hash {
        let short = |h: &str| h.chars().take(12).collect::<String>();
        notes.push(format!(
            "suite sources differ (sha256 {} → {}): the kernels or the manifest changed, as they do when a change is checked",
            short(&base.info.suite_source_hash),
            short(&new.info.suite_source_hash)
        ));
    }
    if let (Some(a), Some(b)) = (&base.info.build, &new.info.build)
        && a.differs_from(b)
    {
        notes.push(format!(
            "gpu-lab builds differ ({} → {}): a change in the harness, not only in the kernels, may move the numbers",
            a.describe(),
            b.describe()
        ));
    }
    differs(
        "input seed",
        Some(base.info.seed),
        Some(new.info.seed),
        notes,
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
}

/// Per clock, the jobs whose clock differed between the runs, and how many were normalised by it.
fn clock_notes(jobs: &[JobComparison], notes: &mut Vec<String>) {
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
}

/// Throttling in the new run, counters it lacks or that were redefined, and normalisation turned off.
fn measurement_notes(
    base: &RunData,
    new: &RunData,
    redefined: &BTreeSet<String>,
    s: &Settings,
    notes: &mut Vec<String>,
) {
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
}
