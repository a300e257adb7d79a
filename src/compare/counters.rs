//! Counter verdicts: a metric that moved past its tolerance in its worse direction is a regression, whatever the timing says (pure).
//!
//! ncu counters of one kernel on one input size are deterministic: the same code issues the same
//! requests and conflicts, so no statistics are needed, only each metric's `tolerance` and
//! `better` from its definition. The change is relative to the baseline's value, or absolute
//! where that value is 0 (as `tolerance` is defined against an ideal of 0); a change of exactly
//! the tolerance counts. Metrics made of time (durations, throughputs, % of a peak sustained over
//! the elapsed time) are not counters: the timing verdict already covers them.
//!
//! Not every count is exact: ncu's shared-memory bank-conflict count of conflict-free kernels (a
//! few thousand against millions of requests) moved by up to 43% between back-to-back runs of the
//! committed transpose suite. Such metrics carry a wide `tolerance` in their definition
//! (metrics/*.toml; docs/ci.md has the data); deterministic ones, such as sector counts, keep
//! theirs. A value computed by another formula, or from other counters, is not the same quantity:
//! a metric whose definition differs between the two runs is shown, never judged.

use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;

use crate::metrics::{Better, MetricDef};
use crate::records::ProfileRecord;

use super::verdict::Verdict;

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CounterChange {
    pub metric: String,
    /// `None`: not applicable in that run (e.g. no shared loads at all).
    pub base: Option<f64>,
    pub new: Option<f64>,
    /// Relative change (absolute when the baseline value is 0), when both values exist.
    pub change: Option<f64>,
    pub tolerance: f64,
    /// `Some` when judged (`better` is higher or lower); `None` when the metric only moved, or
    /// when its definition differs between the runs.
    pub verdict: Option<Verdict>,
    pub moved: bool,
    /// The two runs computed it with other counters or another formula.
    pub redefined: bool,
}

/// Metrics that measure time or a rate over time: they vary from run to run like timings do.
pub fn is_time_derived(def: &MetricDef) -> bool {
    let unit = def.unit.to_ascii_lowercase();
    matches!(unit.as_str(), "ns" | "us" | "ms" | "s" | "cycle" | "cycles")
        || unit.ends_with("/s")
        || def.counters.values().any(|c| {
            // `pct_of_peak_sustained_elapsed`: a throughput over the kernel's elapsed time (dram_pct_of_peak, sm_efficiency).
            [
                "per_second",
                "time_duration",
                "cycles_elapsed",
                "pct_of_peak_sustained_elapsed",
            ]
            .iter()
            .any(|t| c.contains(t))
        })
}

/// Metrics both runs define, but with other counters or another formula: their values do not compare.
pub fn redefined(base: &[MetricDef], new: &[MetricDef]) -> BTreeSet<String> {
    base.iter()
        .filter(|b| {
            new.iter()
                .any(|n| n.name == b.name && (n.counters != b.counters || n.formula != b.formula))
        })
        .map(|b| b.name.clone())
        .collect()
}

/// Relative change, or absolute when the baseline is 0.
fn change(base: f64, new: f64) -> f64 {
    if base == 0.0 {
        new - base
    } else {
        (new - base) / base.abs()
    }
}

/// The metrics `compare` would judge that the baseline's profile holds and the new one lacks.
pub fn not_measured<'a>(
    base: &ProfileRecord,
    new: &ProfileRecord,
    defs: &'a [MetricDef],
) -> Vec<&'a str> {
    defs.iter()
        .filter(|d| {
            !is_time_derived(d)
                && base.metrics.contains_key(&d.name)
                && !new.metrics.contains_key(&d.name)
        })
        .map(|d| d.name.as_str())
        .collect()
}

/// Every metric both runs measured for a job, in the order of `defs`; those in `redefined` are not judged.
pub fn compare(
    base: &ProfileRecord,
    new: &ProfileRecord,
    defs: &[MetricDef],
    redefined: &BTreeSet<String>,
) -> Vec<CounterChange> {
    let mut out = Vec::new();
    for def in defs.iter().filter(|d| !is_time_derived(d)) {
        let (Some(&b), Some(&n)) = (base.metrics.get(&def.name), new.metrics.get(&def.name)) else {
            continue;
        };
        let c = match (b, n) {
            (Some(b), Some(n)) => Some(change(b, n)),
            _ => None,
        };
        let moved = match c {
            Some(c) => c != 0.0 && c.abs() >= def.tolerance,
            None => b.is_some() != n.is_some(),
        };
        let redefined = redefined.contains(&def.name);
        let verdict = match (c, def.better) {
            _ if redefined => None,
            (_, Better::Neither) | (None, _) => None,
            (Some(_), _) if !moved => Some(Verdict::Same),
            (Some(c), Better::Lower) => Some(if c > 0.0 {
                Verdict::Regressed
            } else {
                Verdict::Improved
            }),
            (Some(c), Better::Higher) => Some(if c < 0.0 {
                Verdict::Regressed
            } else {
                Verdict::Improved
            }),
        };
        out.push(CounterChange {
            metric: def.name.clone(),
            base: b,
            new: n,
            change: c,
            tolerance: def.tolerance,
            verdict,
            moved,
            redefined,
        });
    }
    out
}

/// The definitions to judge by: those stored with either run, replaced by `current` (the metric
/// catalog in use, with the user's `--metrics-file`) where it defines the same name.
pub fn definitions(
    stored: &[&[MetricDef]],
    current: &BTreeMap<String, MetricDef>,
) -> Vec<MetricDef> {
    let mut out: Vec<MetricDef> = Vec::new();
    for def in stored.iter().flat_map(|d| d.iter()) {
        if !out.iter().any(|o| o.name == def.name) {
            out.push(
                current
                    .get(&def.name)
                    .cloned()
                    .unwrap_or_else(|| def.clone()),
            );
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const NONE: BTreeSet<String> = BTreeSet::new();

    fn catalog() -> Vec<MetricDef> {
        crate::metrics::Catalog::builtin()
            .unwrap()
            .metrics
            .into_values()
            .collect()
    }

    fn profile(values: &[(&str, Option<f64>)]) -> ProfileRecord {
        ProfileRecord {
            job_id: "j".into(),
            metrics: values.iter().map(|(k, v)| (k.to_string(), *v)).collect(),
            missing: vec![],
            kernels: vec![],
            passes: None,
            report_file: None,
            error: None,
            not_applicable: Default::default(),
            gpu: None,
            duration_from: None,
            profiler: None,
            hotspots: None,
        }
    }

    fn find<'a>(c: &'a [CounterChange], name: &str) -> &'a CounterChange {
        c.iter().find(|c| c.metric == name).unwrap()
    }

    #[test]
    fn bank_conflicts_from_1_to_32_transactions_per_request_regress() {
        let c = compare(
            &profile(&[("shared_load_transactions_per_request", Some(1.0))]),
            &profile(&[("shared_load_transactions_per_request", Some(32.0))]),
            &catalog(),
            &NONE,
        );
        let s = find(&c, "shared_load_transactions_per_request");
        assert_eq!(s.verdict, Some(Verdict::Regressed));
        assert_eq!(s.change, Some(31.0));
        let back = compare(
            &profile(&[("shared_load_transactions_per_request", Some(32.0))]),
            &profile(&[("shared_load_transactions_per_request", Some(1.0))]),
            &catalog(),
            &NONE,
        );
        assert_eq!(
            find(&back, "shared_load_transactions_per_request").verdict,
            Some(Verdict::Improved)
        );
    }

    #[test]
    fn within_tolerance_is_same_and_higher_is_better_for_efficiency() {
        let c = compare(
            &profile(&[
                ("shared_load_transactions_per_request", Some(1.03)),
                ("gld_efficiency", Some(100.0)),
            ]),
            &profile(&[
                ("shared_load_transactions_per_request", Some(1.19)),
                ("gld_efficiency", Some(12.5)),
            ]),
            &catalog(),
            &NONE,
        );
        assert_eq!(
            find(&c, "shared_load_transactions_per_request").verdict,
            Some(Verdict::Same)
        );
        assert_eq!(find(&c, "gld_efficiency").verdict, Some(Verdict::Regressed));
    }

    fn committed_profiles(run: &str) -> BTreeMap<String, ProfileRecord> {
        crate::store::load_run(
            &std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("tests/fixtures/runs")
                .join(run),
        )
        .unwrap()
        .0
        .profiles
    }

    #[test]
    fn bank_conflict_counts_must_double_by_their_definition() {
        // Back-to-back H100 runs 040241Z and 041414Z (commits 2ffcbe9 and 65d05e5): 1360 -> 1942 conflicts, no code change.
        let noise = compare(
            &profile(&[("shared_bank_conflicts", Some(1360.0))]),
            &profile(&[("shared_bank_conflicts", Some(1942.0))]),
            &catalog(),
            &NONE,
        );
        assert_eq!(
            find(&noise, "shared_bank_conflicts").verdict,
            Some(Verdict::Same)
        );
        assert_eq!(
            find(&noise, "shared_bank_conflicts").tolerance,
            1.0,
            "metrics/shared.toml"
        );
        let real = compare(
            &profile(&[("shared_bank_conflicts", Some(1713.0))]),
            &profile(&[("shared_bank_conflicts", Some(6.5e7))]),
            &catalog(),
            &NONE,
        );
        assert_eq!(
            find(&real, "shared_bank_conflicts").verdict,
            Some(Verdict::Regressed)
        );
        let doubled = compare(
            &profile(&[("shared_bank_conflicts", Some(1360.0))]),
            &profile(&[("shared_bank_conflicts", Some(2720.0))]),
            &catalog(),
            &NONE,
        );
        assert_eq!(
            find(&doubled, "shared_bank_conflicts").verdict,
            Some(Verdict::Regressed),
            "a change of exactly the tolerance counts"
        );
    }

    #[test]
    fn deterministic_counts_keep_their_own_tolerance() {
        // The committed global-memory run: an array of structs loads twice the sectors of a struct of arrays.
        let p = committed_profiles("20261122T054022Z-global-memory-h100-80gb-hbm3");
        let (soa, aos) = (&p["soa @ N=33554432"], &p["aos @ N=33554432"]);
        let c = compare(soa, aos, &catalog(), &NONE);
        let sectors = find(&c, "gld_transactions");
        assert_eq!(
            (sectors.change, sectors.tolerance, sectors.verdict),
            (Some(1.0), 0.1, Some(Verdict::Regressed))
        );
        assert_eq!(
            find(&compare(aos, soa, &catalog(), &NONE), "gld_transactions").verdict,
            Some(Verdict::Improved)
        );
        assert_eq!(
            find(&compare(soa, soa, &catalog(), &NONE), "gld_transactions").verdict,
            Some(Verdict::Same)
        );
    }

    #[test]
    fn stall_sync_tolerates_the_drift_of_back_to_back_runs() {
        // best[BLOCK=512,GRID=2048] @ N=20000003 in the H100 reduction runs 052522Z (commit 3c3957e) and 053942Z (committed).
        let committed = committed_profiles("20261122T053942Z-reduction-h100-80gb-hbm3");
        let now = &committed["best[BLOCK=512,GRID=2048] @ N=20000003"];
        let before = profile(&[("stall_sync", Some(10.470681436862893))]);
        let c = compare(&before, now, &catalog(), &NONE);
        let stall = find(&c, "stall_sync");
        assert!((stall.change.unwrap() + 0.0468).abs() < 1e-3, "{stall:?}");
        assert_eq!(stall.verdict, Some(Verdict::Same));
        // A kernel that waits at barriers half as long again is judged.
        let worse = profile(&[("stall_sync", Some(1.5 * 10.470681436862893))]);
        assert_eq!(
            find(&compare(&before, &worse, &catalog(), &NONE), "stall_sync").verdict,
            Some(Verdict::Regressed)
        );
    }

    #[test]
    fn throughputs_over_the_elapsed_time_are_left_to_the_timing_verdict() {
        let defs = catalog();
        for name in [
            "dram_pct_of_peak",
            "sm_efficiency",
            "sol_compute",
            "sol_memory",
            "duration",
            "dram_read_throughput",
            "gld_throughput",
        ] {
            assert!(
                is_time_derived(defs.iter().find(|d| d.name == name).unwrap()),
                "{name}"
            );
        }
        for name in [
            "achieved_occupancy",
            "stall_sync",
            "gld_transactions",
            "shared_bank_conflicts",
            "gld_efficiency",
        ] {
            assert!(
                !is_time_derived(defs.iter().find(|d| d.name == name).unwrap()),
                "{name}"
            );
        }
        // dram_pct_of_peak of complete_unrolled[BLOCK=128,UNROLL=8] @ N=20000003 moved 76.86 -> 79.27 between the two reduction runs.
        let c = compare(
            &profile(&[("dram_pct_of_peak", Some(79.27))]),
            &profile(&[("dram_pct_of_peak", Some(50.0))]),
            &defs,
            &NONE,
        );
        assert!(c.is_empty(), "{c:?}");
    }

    #[test]
    fn a_redefined_metric_is_shown_but_not_judged() {
        let redefined = BTreeSet::from(["shared_efficiency".to_string()]);
        let c = compare(
            &profile(&[("shared_efficiency", Some(47.98))]),
            &profile(&[("shared_efficiency", Some(100.0))]),
            &catalog(),
            &redefined,
        );
        let e = find(&c, "shared_efficiency");
        assert!(e.moved && e.redefined && e.verdict.is_none(), "{e:?}");
    }

    #[test]
    fn from_zero_the_change_is_absolute() {
        let c = compare(
            &profile(&[("shared_bank_conflicts", Some(0.0))]),
            &profile(&[("shared_bank_conflicts", Some(4096.0))]),
            &catalog(),
            &NONE,
        );
        assert_eq!(
            find(&c, "shared_bank_conflicts").verdict,
            Some(Verdict::Regressed)
        );
    }

    #[test]
    fn time_metrics_are_left_to_the_timing_verdict_and_neither_only_moves() {
        let c = compare(
            &profile(&[
                ("duration", Some(100.0)),
                ("dram_read_throughput", Some(1e12)),
            ]),
            &profile(&[
                ("duration", Some(900.0)),
                ("dram_read_throughput", Some(1e11)),
            ]),
            &catalog(),
            &NONE,
        );
        assert!(c.is_empty(), "{c:?}");
        let mut defs = catalog();
        defs.iter_mut().for_each(|d| d.better = Better::Neither);
        let c = compare(
            &profile(&[("gld_efficiency", Some(100.0))]),
            &profile(&[("gld_efficiency", Some(50.0))]),
            &defs,
            &NONE,
        );
        assert!(c[0].moved && c[0].verdict.is_none());
    }

    #[test]
    fn not_applicable_on_one_side_moved_but_is_not_judged() {
        let c = compare(
            &profile(&[("shared_load_transactions_per_request", None)]),
            &profile(&[("shared_load_transactions_per_request", Some(32.0))]),
            &catalog(),
            &NONE,
        );
        assert!(c[0].moved && c[0].verdict.is_none() && c[0].change.is_none());
    }

    #[test]
    fn current_definitions_replace_stored_ones() {
        let stored = catalog();
        let mut current: BTreeMap<String, MetricDef> = BTreeMap::new();
        let mut strict = stored
            .iter()
            .find(|d| d.name == "gld_efficiency")
            .unwrap()
            .clone();
        strict.tolerance = 0.0;
        current.insert(strict.name.clone(), strict);
        let defs = definitions(&[&stored, &stored], &current);
        assert_eq!(defs.len(), stored.len());
        assert_eq!(
            defs.iter()
                .find(|d| d.name == "gld_efficiency")
                .unwrap()
                .tolerance,
            0.0
        );
    }
}
