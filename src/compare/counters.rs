//! Counter verdicts: a metric that moved past its tolerance in its worse direction is a regression, whatever the timing says (pure).
//!
//! ncu counters of one kernel on one input size are deterministic: the same code issues the same
//! requests and conflicts, so no statistics are needed, only each metric's `tolerance` and
//! `better` from its definition. The change is relative to the baseline's value, or absolute
//! where that value is 0 (as `tolerance` is defined against an ideal of 0). Metrics made of time
//! (durations, throughputs) are not counters: the timing verdict already covers them.
//!
//! Event counts summed over a kernel (`aggregate = "sum"`) are the exception to determinism:
//! ncu's shared-memory bank-conflict count of conflict-free kernels (a few thousand against
//! millions of requests) moved by up to 43% between back-to-back runs of the committed transpose
//! suite, while ratios moved by at most 3.6% (occupancy) and 1.2% (transactions per request).
//! Counts are therefore judged with at least `count_tolerance` (default 100%: a count must
//! double); a real conflict regression multiplies them by thousands.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::metrics::{Aggregate, Better, MetricDef};
use crate::model::ProfileRecord;

use super::Verdict;

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CounterChange {
    pub metric: String,
    /// `None`: not applicable in that run (e.g. no shared loads at all).
    pub base: Option<f64>,
    pub new: Option<f64>,
    /// Relative change (absolute when the baseline value is 0), when both values exist.
    pub change: Option<f64>,
    pub tolerance: f64,
    /// `Some` when judged (`better` is higher or lower); `None` when the metric only moved.
    pub verdict: Option<Verdict>,
    pub moved: bool,
}

/// Metrics that measure time or a rate over time: they vary from run to run like timings do.
pub fn is_time_derived(def: &MetricDef) -> bool {
    let unit = def.unit.to_ascii_lowercase();
    matches!(unit.as_str(), "ns" | "us" | "ms" | "s" | "cycle" | "cycles")
        || unit.ends_with("/s")
        || def.counters.values().any(|c| c.contains("per_second") || c.contains("time_duration") || c.contains("cycles_elapsed"))
}

/// Relative change, or absolute when the baseline is 0.
fn change(base: f64, new: f64) -> f64 {
    if base == 0.0 { new - base } else { (new - base) / base.abs() }
}

/// Tolerance a verdict uses: the definition's, and for summed event counts at least `count_tolerance`.
pub fn tolerance(def: &MetricDef, count_tolerance: f64) -> f64 {
    if def.aggregate == Aggregate::Sum { def.tolerance.max(count_tolerance) } else { def.tolerance }
}

/// Every metric both runs measured for a job, in the order of `defs`.
pub fn compare(base: &ProfileRecord, new: &ProfileRecord, defs: &[MetricDef], count_tolerance: f64) -> Vec<CounterChange> {
    let mut out = Vec::new();
    for def in defs.iter().filter(|d| !is_time_derived(d)) {
        let tolerance = tolerance(def, count_tolerance);
        let (Some(&b), Some(&n)) = (base.metrics.get(&def.name), new.metrics.get(&def.name)) else { continue };
        let c = match (b, n) {
            (Some(b), Some(n)) => Some(change(b, n)),
            _ => None,
        };
        let moved = match c {
            Some(c) => c.abs() > tolerance,
            None => b.is_some() != n.is_some(),
        };
        let verdict = match (c, def.better) {
            (_, Better::Neither) | (None, _) => None,
            (Some(_), _) if !moved => Some(Verdict::Same),
            (Some(c), Better::Lower) => Some(if c > 0.0 { Verdict::Regressed } else { Verdict::Improved }),
            (Some(c), Better::Higher) => Some(if c < 0.0 { Verdict::Regressed } else { Verdict::Improved }),
        };
        out.push(CounterChange { metric: def.name.clone(), base: b, new: n, change: c, tolerance, verdict, moved });
    }
    out
}

/// The definitions to judge by: those stored with either run, replaced by `current` (the metric
/// catalog in use, with the user's `--metrics-file`) where it defines the same name.
pub fn definitions(stored: &[&[MetricDef]], current: &BTreeMap<String, MetricDef>) -> Vec<MetricDef> {
    let mut out: Vec<MetricDef> = Vec::new();
    for def in stored.iter().flat_map(|d| d.iter()) {
        if !out.iter().any(|o| o.name == def.name) {
            out.push(current.get(&def.name).cloned().unwrap_or_else(|| def.clone()));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const COUNTS: f64 = 1.0;

    fn catalog() -> Vec<MetricDef> {
        crate::metrics::Catalog::builtin().unwrap().metrics.into_values().collect()
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
        }
    }

    fn find<'a>(c: &'a [CounterChange], name: &str) -> &'a CounterChange {
        c.iter().find(|c| c.metric == name).unwrap()
    }

    #[test]
    fn bank_conflicts_from_1_to_32_transactions_per_request_regress() {
        let c = compare(&profile(&[("shared_load_transactions_per_request", Some(1.0))]), &profile(&[("shared_load_transactions_per_request", Some(32.0))]), &catalog(), COUNTS);
        let s = find(&c, "shared_load_transactions_per_request");
        assert_eq!(s.verdict, Some(Verdict::Regressed));
        assert_eq!(s.change, Some(31.0));
        let back = compare(&profile(&[("shared_load_transactions_per_request", Some(32.0))]), &profile(&[("shared_load_transactions_per_request", Some(1.0))]), &catalog(), COUNTS);
        assert_eq!(find(&back, "shared_load_transactions_per_request").verdict, Some(Verdict::Improved));
    }

    #[test]
    fn within_tolerance_is_same_and_higher_is_better_for_efficiency() {
        let c = compare(
            &profile(&[("shared_load_transactions_per_request", Some(1.03)), ("gld_efficiency", Some(100.0))]),
            &profile(&[("shared_load_transactions_per_request", Some(1.19)), ("gld_efficiency", Some(12.5))]),
            &catalog(),
            COUNTS,
        );
        assert_eq!(find(&c, "shared_load_transactions_per_request").verdict, Some(Verdict::Same));
        assert_eq!(find(&c, "gld_efficiency").verdict, Some(Verdict::Regressed));
    }

    #[test]
    fn event_counts_must_at_least_double() {
        // Back-to-back runs on an H100 (commits 65d05e5 and 7f2250b): 1360 -> 1942 conflicts, no code change.
        let noise = compare(&profile(&[("shared_bank_conflicts", Some(1360.0))]), &profile(&[("shared_bank_conflicts", Some(1942.0))]), &catalog(), COUNTS);
        assert_eq!(find(&noise, "shared_bank_conflicts").verdict, Some(Verdict::Same));
        let real = compare(&profile(&[("shared_bank_conflicts", Some(1713.0))]), &profile(&[("shared_bank_conflicts", Some(6.5e7))]), &catalog(), COUNTS);
        assert_eq!(find(&real, "shared_bank_conflicts").verdict, Some(Verdict::Regressed));
        assert_eq!(find(&real, "shared_bank_conflicts").tolerance, 1.0);
    }

    #[test]
    fn from_zero_the_change_is_absolute() {
        let c = compare(&profile(&[("shared_bank_conflicts", Some(0.0))]), &profile(&[("shared_bank_conflicts", Some(4096.0))]), &catalog(), COUNTS);
        assert_eq!(find(&c, "shared_bank_conflicts").verdict, Some(Verdict::Regressed));
    }

    #[test]
    fn time_metrics_are_left_to_the_timing_verdict_and_neither_only_moves() {
        let c = compare(
            &profile(&[("duration", Some(100.0)), ("dram_read_throughput", Some(1e12))]),
            &profile(&[("duration", Some(900.0)), ("dram_read_throughput", Some(1e11))]),
            &catalog(),
            COUNTS,
        );
        assert!(c.is_empty(), "{c:?}");
        let mut defs = catalog();
        defs.iter_mut().for_each(|d| d.better = Better::Neither);
        let c = compare(&profile(&[("gld_efficiency", Some(100.0))]), &profile(&[("gld_efficiency", Some(50.0))]), &defs, COUNTS);
        assert!(c[0].moved && c[0].verdict.is_none());
    }

    #[test]
    fn not_applicable_on_one_side_moved_but_is_not_judged() {
        let c = compare(&profile(&[("shared_load_transactions_per_request", None)]), &profile(&[("shared_load_transactions_per_request", Some(32.0))]), &catalog(), COUNTS);
        assert!(c[0].moved && c[0].verdict.is_none() && c[0].change.is_none());
    }

    #[test]
    fn current_definitions_replace_stored_ones() {
        let stored = catalog();
        let mut current: BTreeMap<String, MetricDef> = BTreeMap::new();
        let mut strict = stored.iter().find(|d| d.name == "gld_efficiency").unwrap().clone();
        strict.tolerance = 0.0;
        current.insert(strict.name.clone(), strict);
        let defs = definitions(&[&stored, &stored], &current);
        assert_eq!(defs.len(), stored.len());
        assert_eq!(defs.iter().find(|d| d.name == "gld_efficiency").unwrap().tolerance, 0.0);
    }
}
