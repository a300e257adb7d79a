//! The catalogue of every known metric and set: the built-in `metrics/*.toml` and user files, checked as they are added; names resolved to definitions, with "did you mean" hints for unknown ones.

use std::collections::BTreeMap;

use serde::Deserialize;

use super::definition::{MetricDef, SetDef, is_raw_counter, raw_metric};
use super::formula::Evaluator;

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
    (
        "metrics/tensor.toml",
        include_str!("../../metrics/tensor.toml"),
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
