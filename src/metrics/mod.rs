//! Metric definitions (`metrics/*.toml`) and their formulas: raw ncu counters -> named metrics such as `gld_efficiency` (pure).

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

use crate::expr;

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

#[derive(Debug, Clone, Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct MetricsFile {
    #[serde(default)]
    metrics: BTreeMap<String, MetricDef>,
    #[serde(default)]
    sets: BTreeMap<String, SetDef>,
}

/// Every known metric and set.
#[derive(Debug, Clone, Default)]
pub struct Catalog {
    pub metrics: BTreeMap<String, MetricDef>,
    pub sets: BTreeMap<String, SetDef>,
}

/// Counter every profile collects: the kernel's duration, to weight means and to sanity-check timings.
pub const DURATION: &str = "gpu__time_duration.sum";

/// The catalogue's metric of that counter alone: what a job's ncu time is read from.
pub const DURATION_METRIC: &str = "duration";

#[derive(Debug, thiserror::Error)]
pub enum MetricsError {
    #[error("{file}: {message}")]
    File { file: String, message: String },
    #[error("unknown metric or set `{name}`{}\n  fix: `gpu-lab list metrics` shows every name; a raw ncu counter is accepted as it is (it contains `__`)", suggest(.suggestions))]
    Unknown {
        name: String,
        suggestions: Vec<String>,
    },
    #[error(
        "an empty metric name (two commas in a row, or `--metrics ''`)\n  fix: name metrics, sets or raw ncu counters, separated by single commas"
    )]
    Empty,
}

fn suggest(s: &[String]) -> String {
    if s.is_empty() {
        String::new()
    } else {
        format!("; did you mean {}?", s.join(", "))
    }
}

/// Edit distance, for "did you mean" suggestions.
fn levenshtein(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut cur = vec![i + 1];
        for (j, cb) in b.iter().enumerate() {
            cur.push(
                (prev[j] + usize::from(ca != *cb))
                    .min(prev[j + 1] + 1)
                    .min(cur[j] + 1),
            );
        }
        prev = cur;
    }
    prev[b.len()]
}

/// The (up to) three `candidates` closest to `name` by edit distance, for "did you mean" and
/// "closest" hints; a name further off than a third of its length (at least 3 edits) and not
/// containing `name` is no hint.
pub fn nearest<'a>(name: &str, candidates: impl IntoIterator<Item = &'a String>) -> Vec<String> {
    let limit = (name.chars().count() / 3).max(3);
    let mut near: Vec<(usize, &String)> = candidates
        .into_iter()
        .map(|c| (levenshtein(name, c), c))
        .filter(|(d, c)| *d <= limit || c.contains(name))
        .collect();
    near.sort();
    near.dedup();
    near.into_iter().take(3).map(|(_, c)| c.clone()).collect()
}

/// The built-in definition files (`metrics/*.toml`), embedded so the binary works from any directory.
/// Sets come last: a set may name a metric of any file.
pub const BUILTIN_FILES: &[(&str, &str)] = &[
    (
        "metrics/memory.toml",
        include_str!("../../metrics/memory.toml"),
    ),
    (
        "metrics/shared.toml",
        include_str!("../../metrics/shared.toml"),
    ),
    (
        "metrics/execution.toml",
        include_str!("../../metrics/execution.toml"),
    ),
    (
        "metrics/compute.toml",
        include_str!("../../metrics/compute.toml"),
    ),
    ("metrics/sets.toml", include_str!("../../metrics/sets.toml")),
];

impl Catalog {
    /// Every built-in definition and set.
    pub fn builtin() -> Result<Catalog, MetricsError> {
        let mut c = Catalog::default();
        for (file, text) in BUILTIN_FILES {
            c.add_toml(file, text)?;
        }
        Ok(c)
    }

    /// Adds one file's definitions; later files override earlier ones (user files over built-ins).
    pub fn add_toml(&mut self, file: &str, text: &str) -> Result<(), MetricsError> {
        let parsed: MetricsFile = toml::from_str(text).map_err(|e| MetricsError::File {
            file: file.into(),
            message: e.to_string(),
        })?;
        for (name, mut def) in parsed.metrics {
            def.name = name.clone();
            // A formula must at least evaluate with every counter 1, bound as launches bind them.
            let probe = Evaluator::new(&def).and_then(|mut e| {
                e.evaluate(&def.counters.values().map(|c| (c.clone(), 1.0)).collect())
            });
            if let Err(e) = probe {
                return Err(MetricsError::File {
                    file: file.into(),
                    message: format!("metric `{name}`: {}", e.error),
                });
            }
            self.metrics.insert(name, def);
        }
        for (name, set) in parsed.sets {
            for m in &set.metrics {
                if !self.metrics.contains_key(m) && !is_raw_counter(m) {
                    return Err(MetricsError::File {
                        file: file.into(),
                        message: format!("set `{name}` names unknown metric `{m}`"),
                    });
                }
            }
            self.sets.insert(name, set);
        }
        Ok(())
    }

    /// Resolves names (sets, metrics, raw counters) to metric definitions, in order, without repeats.
    pub fn resolve(&self, names: &[String]) -> Result<Vec<MetricDef>, MetricsError> {
        if names.iter().any(|n| n.trim().is_empty()) {
            return Err(MetricsError::Empty);
        }
        let mut out: Vec<MetricDef> = Vec::new();
        let mut push = |d: MetricDef| {
            if !out.iter().any(|o| o.name == d.name) {
                out.push(d);
            }
        };
        for name in names {
            if let Some(set) = self.sets.get(name) {
                for m in &set.metrics {
                    push(self.metric_or_raw(m));
                }
            } else if self.metrics.contains_key(name) || is_raw_counter(name) {
                push(self.metric_or_raw(name));
            } else {
                return Err(MetricsError::Unknown {
                    name: name.clone(),
                    suggestions: nearest(name, self.metrics.keys().chain(self.sets.keys())),
                });
            }
        }
        Ok(out)
    }

    fn metric_or_raw(&self, name: &str) -> MetricDef {
        self.metrics
            .get(name)
            .cloned()
            .unwrap_or_else(|| raw_metric(name))
    }
}

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

/// The metrics to show from a table holding `available`: the ones asked for (names found in the
/// file are accepted as they are), or every catalog metric the file can give, and how many were skipped.
pub fn choose_for_file(
    catalog: &Catalog,
    requested: &[String],
    available: &[String],
) -> anyhow::Result<(Vec<MetricDef>, usize)> {
    let present: std::collections::HashSet<&str> = available.iter().map(String::as_str).collect();
    if requested.is_empty() {
        let defs: Vec<MetricDef> = catalog
            .metrics
            .values()
            .filter(|d| d.computable_with(&|c| present.contains(c)).is_some())
            .cloned()
            .collect();
        if defs.is_empty() {
            let sample: Vec<&str> = available.iter().take(5).map(String::as_str).collect();
            anyhow::bail!(
                "no gpu-lab metric can be computed from this file: it holds {} metrics ({}{}), none of the counters gpu-lab's metrics need\n  fix: export the raw page with the counters (`ncu -i REPORT --csv --page raw --print-units base`), or name metrics of the file with --metrics",
                available.len(),
                sample.join(", "),
                if available.len() > sample.len() {
                    ", …"
                } else {
                    ""
                }
            );
        }
        return Ok((defs.clone(), catalog.metrics.len() - defs.len()));
    }
    let mut defs: Vec<MetricDef> = Vec::new();
    for name in requested {
        let resolved = if present.contains(name.as_str())
            && !catalog.metrics.contains_key(name)
            && !catalog.sets.contains_key(name)
        {
            vec![raw_metric(name)]
        } else {
            catalog
                .resolve(std::slice::from_ref(name))
                .map_err(|e| match e {
                    MetricsError::Unknown { .. } => match nearest(name, available) {
                        near if near.is_empty() => e.into(),
                        near => anyhow::anyhow!(
                            "{e}\n  the file's own metrics closest to it: {}",
                            near.join(", ")
                        ),
                    },
                    other => other.into(),
                })?
        };
        for d in resolved {
            if !defs.iter().any(|o| o.name == d.name) {
                defs.push(d);
            }
        }
    }
    Ok((defs, 0))
}

/// A metric's value for one kernel launch.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum LaunchValue {
    /// The launch lacks a counter the formula needs.
    Missing,
    /// Measured, but the formula is undefined there (0/0, such as shared transactions per
    /// request of a kernel without shared loads, or any other non-finite result): n/a; with the
    /// index of the metric's `not_applicable` rule that says why, where one did.
    NotApplicable(Option<usize>),
    Value(f64),
}

/// A formula that cannot be evaluated at all: a bug in the definition, never an n/a value.
#[derive(Debug, PartialEq, thiserror::Error)]
#[error(
    "metric `{metric}`: {error}\n  fix: correct its formula (metrics/*.toml, or the file given with --metrics-file); `gpu-lab list metrics` shows each formula and its counters"
)]
pub struct FormulaError {
    pub metric: String,
    pub error: expr::ExprError,
}

/// One launch's value of `def` (the formula parsed for this call; `Evaluator` parses it once for many).
pub fn evaluate(
    def: &MetricDef,
    values: &BTreeMap<String, f64>,
) -> Result<LaunchValue, FormulaError> {
    Evaluator::new(def)?.evaluate(values)
}

/// `evaluate` for many launches of one metric: the formula is parsed once.
pub struct Evaluator<'a> {
    def: &'a MetricDef,
    /// The metric's own formula, then each alternative's, with its counters.
    formulas: Vec<(&'a BTreeMap<String, String>, &'a str, expr::Compiled)>,
    /// The not-applicable rules' conditions, with their counters.
    rules: Vec<(&'a BTreeMap<String, String>, expr::Compiled)>,
}

impl<'a> Evaluator<'a> {
    pub fn new(def: &'a MetricDef) -> Result<Self, FormulaError> {
        let sources = std::iter::once((&def.counters, def.formula.as_str())).chain(
            def.alternatives
                .iter()
                .map(|a| (&a.counters, a.formula.as_str())),
        );
        let formulas = sources
            .map(|(counters, formula)| {
                Ok((
                    counters,
                    formula,
                    expr::Compiled::new(formula).map_err(|error| FormulaError {
                        metric: def.name.clone(),
                        error,
                    })?,
                ))
            })
            .collect::<Result<_, FormulaError>>()?;
        let rules = def
            .not_applicable
            .iter()
            .map(|r| {
                Ok((
                    &r.counters,
                    expr::Compiled::new(&r.when).map_err(|error| FormulaError {
                        metric: def.name.clone(),
                        error,
                    })?,
                ))
            })
            .collect::<Result<_, FormulaError>>()?;
        Ok(Evaluator {
            def,
            formulas,
            rules,
        })
    }

    /// The first formula whose counters the launch holds gives the value; `Missing` when none does.
    pub fn evaluate(
        &mut self,
        values: &BTreeMap<String, f64>,
    ) -> Result<LaunchValue, FormulaError> {
        let finite = |v: f64| {
            if v.is_finite() {
                LaunchValue::Value(v)
            } else {
                LaunchValue::NotApplicable(None)
            }
        };
        for (i, (counters, compiled)) in self.rules.iter_mut().enumerate() {
            let bound: Option<Vec<(&str, f64)>> = counters
                .iter()
                .map(|(alias, counter)| Some((alias.as_str(), *values.get(counter)?)))
                .collect();
            if let Some(bound) = bound
                && compiled.holds(bound).map_err(|error| FormulaError {
                    metric: self.def.name.clone(),
                    error,
                })?
            {
                return Ok(LaunchValue::NotApplicable(Some(i)));
            }
        }
        for (counters, formula, compiled) in &mut self.formulas {
            // A formula that is one counter's alias (most rates and percentages) needs no expression engine.
            if let Some(counter) = counters.get(formula.trim()) {
                match values.get(counter) {
                    Some(v) => return Ok(finite(*v)),
                    None => continue,
                }
            }
            let bound: Option<Vec<(&str, f64)>> = counters
                .iter()
                .map(|(alias, counter)| Some((alias.as_str(), *values.get(counter)?)))
                .collect();
            if let Some(bound) = bound {
                return compiled
                    .eval(bound)
                    .map(finite)
                    .map_err(|error| FormulaError {
                        metric: self.def.name.clone(),
                        error,
                    });
            }
        }
        Ok(LaunchValue::Missing)
    }
}

/// Every metric of every launch (each launch its counters by name), row-major (`rows.len() × defs.len()`),
/// evaluated on all cores: a large import spends most of its time here.
pub fn evaluate_launches(
    rows: &[&BTreeMap<String, f64>],
    defs: &[&MetricDef],
) -> Result<Vec<LaunchValue>, FormulaError> {
    let threads = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .clamp(1, 16);
    let chunk = rows.len().div_ceil(threads).max(1);
    std::thread::scope(|s| {
        let parts: Vec<_> = rows
            .chunks(chunk)
            .map(|part| {
                s.spawn(move || -> Result<Vec<LaunchValue>, FormulaError> {
                    let mut evaluators = defs
                        .iter()
                        .map(|d| Evaluator::new(d))
                        .collect::<Result<Vec<_>, _>>()?;
                    let mut out = Vec::with_capacity(part.len() * defs.len());
                    for row in part {
                        for e in &mut evaluators {
                            out.push(e.evaluate(row)?);
                        }
                    }
                    Ok(out)
                })
            })
            .collect();
        let mut all = Vec::with_capacity(rows.len() * defs.len());
        for p in parts {
            all.extend(p.join().expect("a metric evaluation thread panicked")?);
        }
        Ok(all)
    })
}

/// Combines per-launch values of one variant (value, launch duration) as the metric says.
pub fn aggregate(def: &MetricDef, per_launch: &[(f64, f64)]) -> Option<f64> {
    if per_launch.is_empty() {
        return None;
    }
    match def.aggregate {
        Aggregate::Sum => Some(per_launch.iter().map(|(v, _)| v).sum()),
        Aggregate::Mean => {
            let total: f64 = per_launch.iter().map(|(_, d)| d).sum();
            if total > 0.0 {
                Some(per_launch.iter().map(|(v, d)| v * d).sum::<f64>() / total)
            } else {
                Some(per_launch.iter().map(|(v, _)| v).sum::<f64>() / per_launch.len() as f64)
            }
        }
    }
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

#[cfg(test)]
mod tests;
