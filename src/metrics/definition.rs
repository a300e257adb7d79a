//! What a metric is: its definition as `metrics/*.toml` writes it (counters, formula, ideal, reading, alternatives, n/a rules), the raw ncu counters shown as they are, and how a value reads against its ideal.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, Deserialize, Serialize, PartialEq, Eq, Default)]
#[serde(rename_all = "lowercase")]
pub enum Better {
    Higher,
    Lower,
    #[default]
    Neither,
}

#[derive(Debug, Clone, Copy, Deserialize, Serialize, PartialEq, Eq, Default)]
#[serde(rename_all = "lowercase")]
pub enum Aggregate {
    /// Counts add up over a variant's launches.
    Sum,
    /// Ratios and rates: duration-weighted mean over the launches.
    #[default]
    Mean,
}

#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct MetricDef {
    #[serde(default)]
    pub name: String,
    pub description: String,
    pub unit: String,
    /// Alias -> raw ncu counter; the formula uses the aliases.
    pub counters: BTreeMap<String, String>,
    pub formula: String,
    pub ideal: Option<f64>,
    /// How far from ideal, relative (absolute when the ideal is 0), before a value gets a reading.
    #[serde(default = "default_tolerance")]
    pub tolerance: f64,
    #[serde(default)]
    pub better: Better,
    #[serde(default)]
    pub aggregate: Aggregate,
    /// Said after the value when it is far from ideal ("... ideal 1: bank conflicts").
    #[serde(default)]
    pub reading: String,
    /// The nvprof metric this one reproduces, when it does.
    #[serde(default)]
    pub nvprof: bool,
    /// Other ways to the same metric, tried in order where a launch lacks `counters` (an export
    /// made with other counters, such as NVIDIA's documented nvprof mapping). Never collected.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub alternatives: Vec<Alternative>,
    /// Where the metric has no meaning for a launch, and why (`n/a (loads via cp.async/TMA)`,
    /// never 0%): tried in order before the formula; a rule whose counters the launch lacks is skipped.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub not_applicable: Vec<NotApplicableRule>,
}

/// A condition under which a metric is n/a for a launch, with the reason shown beside `n/a`.
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct NotApplicableRule {
    /// Alias -> raw ncu counter, as a metric's own; collected with the metric where the GPU has them.
    pub counters: BTreeMap<String, String>,
    /// An expression over the aliases; the metric is n/a where it is true (or non-zero).
    pub when: String,
    pub reason: String,
}

/// Another formula for a metric, over other counters.
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Alternative {
    pub counters: BTreeMap<String, String>,
    pub formula: String,
    /// Said where it is used: what it is and how it differs.
    #[serde(default)]
    pub note: String,
}

impl MetricDef {
    /// The reason of rule `i` (`LaunchValue::NotApplicable(Some(i))`).
    pub fn not_applicable_reason(&self, rule: Option<usize>) -> Option<&str> {
        self.not_applicable.get(rule?).map(|r| r.reason.as_str())
    }

    /// The counter sets it can be computed from: its own, then each alternative's.
    pub fn counter_sets(&self) -> impl Iterator<Item = &BTreeMap<String, String>> {
        std::iter::once(&self.counters).chain(self.alternatives.iter().map(|a| &a.counters))
    }

    /// The first way to compute it whose counters all are `present`: `None` for its own, `Some(i)` for alternative i.
    pub fn computable_with(&self, present: &dyn Fn(&str) -> bool) -> Option<Option<usize>> {
        self.counter_sets()
            .position(|set| set.values().all(|c| present(c)))
            .map(|i| i.checked_sub(1))
    }
}

fn default_tolerance() -> f64 {
    0.1
}

#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct SetDef {
    #[serde(default)]
    pub description: String,
    pub metrics: Vec<String>,
}

/// Counter every profile collects: the kernel's duration, to weight means and to sanity-check timings.
pub const DURATION: &str = "gpu__time_duration.sum";

/// The catalogue's metric of that counter alone: what a job's ncu time is read from.
pub const DURATION_METRIC: &str = "duration";

/// A raw ncu metric shown as it is: its own name, its only counter.
pub fn raw_metric(name: &str) -> MetricDef {
    MetricDef {
        name: name.to_string(),
        description: "raw ncu metric".into(),
        unit: String::new(),
        counters: BTreeMap::from([("x".to_string(), name.to_string())]),
        formula: "x".into(),
        ideal: None,
        tolerance: default_tolerance(),
        better: Better::Neither,
        aggregate: Aggregate::Mean,
        reading: String::new(),
        nvprof: false,
        alternatives: Vec::new(),
        not_applicable: Vec::new(),
    }
}

/// True for a definition made by `raw_metric` (a name the user gave in ncu's own terms).
pub fn is_raw_metric(def: &MetricDef) -> bool {
    def.formula == "x" && def.counters.len() == 1 && def.counters.get("x") == Some(&def.name)
}

/// Raw ncu metric names look like `unit__counter.rollup`.
pub fn is_raw_counter(name: &str) -> bool {
    name.contains("__")
}

/// The raw counters to collect for these metrics (duration always included), sorted.
pub fn counters_needed(defs: &[MetricDef]) -> Vec<String> {
    // A not-applicable rule's counters too: without them the reason of an n/a is unknown.
    let mut set: BTreeSet<String> = defs
        .iter()
        .flat_map(|d| {
            d.counters
                .values()
                .chain(d.not_applicable.iter().flat_map(|r| r.counters.values()))
                .cloned()
        })
        .collect();
    set.insert(DURATION.to_string());
    set.into_iter().collect()
}

/// True when a value is far enough from its ideal to deserve a line of reading.
pub fn is_notable(def: &MetricDef, value: f64) -> bool {
    let Some(ideal) = def.ideal else { return false };
    let off = (value - ideal).abs() / ideal.abs().max(1.0);
    match def.better {
        Better::Higher => value < ideal && off > def.tolerance,
        Better::Lower => value > ideal && off > def.tolerance,
        Better::Neither => off > def.tolerance,
    }
}

/// Formats a value with its unit for tables: `12.5%`, `32.0`, `1.23 GB/s`.
pub fn format_value(def: &MetricDef, v: f64) -> String {
    match def.unit.as_str() {
        "%" => format!("{v:.1}%"),
        "byte/s" => format!("{:.1} GB/s", v / 1e9),
        "ns" => format!("{:.1} us", v / 1e3),
        "byte" => format!("{:.1} MB", v / 1e6),
        _ if v != 0.0 && v.abs() < 10.0 && v.fract() != 0.0 => format!("{v:.2}"),
        _ => format!("{v:.0}"),
    }
}

pub fn format_ideal(def: &MetricDef) -> String {
    def.ideal.map(|i| format_value(def, i)).unwrap_or_default()
}
