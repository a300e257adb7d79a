//! The nvprof-style summary of profiled launches: launches grouped by process, device and kernel, each metric's invocations, min, max and plain mean over them, and the metrics whose counters the file lacks.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use serde::Serialize;

use crate::metrics::{self, Aggregate, FormulaError, LaunchValue, MetricDef};
use crate::parse::KernelRow;

/// One metric of one kernel over its launches.
#[derive(Debug, Clone, PartialEq, Serialize, Default)]
pub struct MetricLine {
    pub metric: String,
    pub description: String,
    pub unit: String,
    /// Launches that had the metric's counters (values plus `not_applicable`).
    pub invocations: usize,
    pub min: Option<f64>,
    pub max: Option<f64>,
    /// Plain mean over the launches with a value, as nvprof's Avg.
    pub avg: Option<f64>,
    /// Launches where the formula is undefined (0/0: shared transactions per request without shared loads).
    pub not_applicable: usize,
    /// Why, where a rule of the metric said (`loads via cp.async/TMA`): the first launch's reason.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub not_applicable_reason: Option<String>,
    #[serde(skip)]
    pub(super) aggregate: Aggregate,
    #[serde(skip)]
    pub(super) raw: bool,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct KernelGroup {
    pub process_id: String,
    /// `NVIDIA H200 (0)`: ncu's device attribute name and index, or `device 0` when the file lacks the name.
    pub device: String,
    pub kernel: String,
    pub launches: usize,
    /// Launches ncu reported with `nan` values or a `(0, 0, 0)` grid: the kernel faulted.
    pub faulted_launches: usize,
    pub metrics: Vec<MetricLine>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Missing {
    pub metric: String,
    /// The counters it needs that no launch reported.
    pub counters: Vec<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Summary {
    pub kernels: Vec<KernelGroup>,
    pub missing: Vec<Missing>,
}

impl Summary {
    pub fn faulted_launches(&self) -> usize {
        self.kernels.iter().map(|k| k.faulted_launches).sum()
    }
}

/// The ncu column with the device's name (ncu's raw page carries it without being asked).
pub const DEVICE_NAME: &str = "device__attribute_display_name";

fn device_label(row: &KernelRow) -> String {
    match row.text.get(DEVICE_NAME) {
        Some(name) => format!("{name} ({})", row.device),
        None => format!("device {}", row.device),
    }
}

/// nvprof's short description: the catalog's up to its first explanation.
fn short_description(def: &MetricDef) -> String {
    let d = def.description.as_str();
    let end = [d.find(": "), d.find(" (")]
        .into_iter()
        .flatten()
        .min()
        .unwrap_or(d.len());
    d[..end].trim().to_string()
}

/// Groups launches by process, device and kernel (in order of first launch) and computes each
/// metric per launch; a formula that cannot be evaluated is an error, never shown as n/a.
pub fn summarize(rows: &[KernelRow], defs: &[MetricDef]) -> Result<Summary, FormulaError> {
    let mut summary = Summary {
        missing: missing(rows, defs),
        ..Summary::default()
    };
    let present: Vec<&MetricDef> = defs
        .iter()
        .filter(|d| !summary.missing.iter().any(|m| m.metric == d.name))
        .collect();
    let launch_values: Vec<&BTreeMap<String, f64>> = rows.iter().map(|r| &r.values).collect();
    let values = metrics::evaluate_launches(&launch_values, &present)?;
    let mut index: HashMap<(&str, &str, Option<&String>, &str), usize> = HashMap::new();
    let mut sums: Vec<Vec<f64>> = Vec::new();
    for (r, row) in rows.iter().enumerate() {
        let key = (
            row.process_id.as_str(),
            row.device.as_str(),
            row.text.get(DEVICE_NAME),
            row.kernel_name.as_str(),
        );
        let g = *index.entry(key).or_insert_with(|| {
            summary.kernels.push(new_group(row, &present));
            sums.push(vec![0.0; present.len()]);
            summary.kernels.len() - 1
        });
        let group = &mut summary.kernels[g];
        group.launches += 1;
        if row.looks_faulted() {
            // Counted and flagged, never averaged: a faulted launch's numbers are not measurements.
            group.faulted_launches += 1;
            continue;
        }
        let launch = &values[r * present.len()..(r + 1) * present.len()];
        add_launch(group, &mut sums[g], launch, &present);
    }
    for (group, sums) in summary.kernels.iter_mut().zip(&sums) {
        for (line, sum) in group.metrics.iter_mut().zip(sums) {
            let counted = line.invocations - line.not_applicable;
            line.avg = (counted > 0).then(|| sum / counted as f64);
        }
        group.metrics.retain(|l| l.invocations > 0);
    }
    Ok(summary)
}

/// The metrics that none of their counter sets (their own, or an alternative's) is in the file
/// for, with the counters they lack.
fn missing(rows: &[KernelRow], defs: &[MetricDef]) -> Vec<Missing> {
    let mut out = Vec::new();
    for def in defs {
        let in_file = |c: &str| rows.iter().any(|r| r.values.contains_key(c));
        if def.computable_with(&in_file).is_none() {
            let absent: Vec<String> = def
                .counters
                .values()
                .filter(|c| !in_file(c))
                .cloned()
                .collect::<BTreeSet<_>>()
                .into_iter()
                .collect();
            out.push(Missing {
                metric: def.name.clone(),
                counters: absent,
            });
        }
    }
    out
}

/// The group of the kernel `row` launched, with no launch counted yet.
fn new_group(row: &KernelRow, present: &[&MetricDef]) -> KernelGroup {
    KernelGroup {
        process_id: row.process_id.clone(),
        device: device_label(row),
        kernel: row.kernel_name.clone(),
        launches: 0,
        faulted_launches: 0,
        metrics: present
            .iter()
            .map(|d| MetricLine {
                metric: d.name.clone(),
                description: short_description(d),
                unit: d.unit.clone(),
                invocations: 0,
                min: None,
                max: None,
                avg: None,
                not_applicable: 0,
                not_applicable_reason: None,
                aggregate: d.aggregate,
                raw: metrics::is_raw_metric(d),
            })
            .collect(),
    }
}

/// Counts one launch's value of each metric into its group: min, max and the sum the mean is
/// taken over (`sums`), or one more n/a with its reason.
fn add_launch(
    group: &mut KernelGroup,
    sums: &mut [f64],
    launch: &[LaunchValue],
    present: &[&MetricDef],
) {
    for (i, value) in launch.iter().enumerate() {
        let line = &mut group.metrics[i];
        match *value {
            LaunchValue::Missing => {}
            LaunchValue::NotApplicable(rule) => {
                line.invocations += 1;
                line.not_applicable += 1;
                if line.not_applicable_reason.is_none() {
                    line.not_applicable_reason =
                        present[i].not_applicable_reason(rule).map(String::from);
                }
            }
            LaunchValue::Value(v) => {
                line.invocations += 1;
                line.min = Some(line.min.map_or(v, |m| m.min(v)));
                line.max = Some(line.max.map_or(v, |m| m.max(v)));
                sums[i] += v;
            }
        }
    }
}
