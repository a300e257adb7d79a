//! A metric's formula evaluated on the counters of kernel launches: per launch a value, n/a (with the rule that says why) or missing; many launches at once on all cores; and the launches of a variant combined as the metric says.

use std::collections::BTreeMap;

use super::definition::{Aggregate, MetricDef};
use crate::expr;

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
