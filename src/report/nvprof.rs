//! Named metrics per kernel from profiled launches, printed in nvprof's `--metrics` layout (or markdown, CSV, JSON) (pure).
//!
//! nvprof grouped launches by kernel under a device header and gave, per metric, the number of
//! invocations and the min, max and plain average over them; `gpu-lab ncu` and `gpu-lab import`
//! print the same table from Nsight Compute's counters. Launches where a formula is undefined
//! (n/a) count as invocations but not in Min/Max/Avg; the table says how many there were.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fmt::Write as _;

use serde::Serialize;
use tabled::builder::Builder;
use tabled::settings::Style;

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
    aggregate: Aggregate,
    #[serde(skip)]
    raw: bool,
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
    let mut summary = Summary::default();
    for def in defs {
        // Computable when any of its counter sets (its own, or an alternative's) is in the file.
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
            summary.missing.push(Missing {
                metric: def.name.clone(),
                counters: absent,
            });
        }
    }
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
            summary.kernels.push(KernelGroup {
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
            });
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
        for (i, value) in values[r * present.len()..(r + 1) * present.len()]
            .iter()
            .enumerate()
        {
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
                    sums[g][i] += v;
                }
            }
        }
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

/// Significant digits with a scaled unit, as nvprof printed throughputs: `24.568GB/s`.
fn scaled(v: f64, units: [&str; 5]) -> String {
    let mut x = v;
    let mut i = 0;
    while x.abs() >= 1000.0 && i < units.len() - 1 {
        x /= 1000.0;
        i += 1;
    }
    let decimals = if x.abs() >= 100.0 {
        2
    } else if x.abs() >= 10.0 {
        3
    } else {
        4
    };
    format!("{x:.decimals$}{}", units[i])
}

/// A value as nvprof printed it: `100.00%`, `192.52GB/s`, `4194306`, `16.000031`.
pub fn nvprof_value(line: &MetricLine, v: f64) -> String {
    match line.unit.as_str() {
        "%" => format!("{v:.2}%"),
        "byte/s" => scaled(v, ["B/s", "KB/s", "MB/s", "GB/s", "TB/s"]),
        "byte" => scaled(v, ["B", "KB", "MB", "GB", "TB"]),
        "ns" => {
            let (x, u) = if v >= 1e9 {
                (v / 1e9, "s")
            } else if v >= 1e6 {
                (v / 1e6, "ms")
            } else if v >= 1e3 {
                (v / 1e3, "us")
            } else {
                (v, "ns")
            };
            // Seconds are the largest unit: 5000 s stays 5000 s (no further scaling by 1000).
            let decimals = if x.abs() >= 100.0 {
                2
            } else if x.abs() >= 10.0 {
                3
            } else {
                4
            };
            format!("{x:.decimals$}{u}")
        }
        _ if (line.aggregate == Aggregate::Sum || line.raw)
            && v.fract() == 0.0
            && v.abs() < 1e15 =>
        {
            format!("{v:.0}")
        }
        _ => format!("{v:.6}"),
    }
}

fn cells(line: &MetricLine) -> [String; 3] {
    let f = |v: Option<f64>| {
        v.map(|v| nvprof_value(line, v))
            .unwrap_or_else(|| "n/a".into())
    };
    // Avg of a metric n/a in every launch says why, where a rule of the metric said.
    let avg = match (line.avg, &line.not_applicable_reason) {
        (None, Some(why)) => format!("n/a ({why})"),
        (v, _) => f(v),
    };
    [f(line.min), f(line.max), avg]
}

/// nvprof's Invocations counts launches: where only some are n/a, say so, since Min/Max/Avg leave them out.
fn not_applicable_note(l: &MetricLine) -> Option<String> {
    (l.not_applicable > 0 && l.not_applicable < l.invocations).then(|| {
        format!(
            "{}: n/a in {} of {} invocations ({}); Min, Max and Avg are over the other {}",
            l.metric,
            l.not_applicable,
            l.invocations,
            l.not_applicable_reason
                .as_deref()
                .unwrap_or("formula undefined there, such as 0/0"),
            l.invocations - l.not_applicable
        )
    })
}

fn fault_note(k: &KernelGroup) -> Option<String> {
    (k.faulted_launches > 0).then(|| {
        format!(
            "faulted: {} of {} launches reported nan values or a (0, 0, 0) grid",
            k.faulted_launches, k.launches
        )
    })
}

/// Kernels of one process, in order.
fn by_process(s: &Summary) -> Vec<(&str, Vec<&KernelGroup>)> {
    let mut out: Vec<(&str, Vec<&KernelGroup>)> = Vec::new();
    for k in &s.kernels {
        match out.iter_mut().find(|(p, _)| *p == k.process_id) {
            Some((_, ks)) => ks.push(k),
            None => out.push((&k.process_id, vec![k])),
        }
    }
    out
}

/// nvprof's `--metrics` table: right-aligned columns as wide as their longest entry, nvprof's
/// minimum widths otherwise (11, 41 and 41 characters, then 11 for each value).
pub fn render_table(s: &Summary) -> String {
    let mut out = String::new();
    for (pid, kernels) in by_process(s) {
        let lines = kernels.iter().flat_map(|k| &k.metrics);
        let name_w = lines
            .clone()
            .map(|l| l.metric.len())
            .max()
            .unwrap_or(0)
            .max(41);
        let desc_w = lines
            .clone()
            .map(|l| l.description.len() + 2)
            .max()
            .unwrap_or(0)
            .max(41);
        let value_w = lines
            .flat_map(|l| cells(l).map(|c| c.len()))
            .max()
            .unwrap_or(0)
            .max(11);
        let _ = writeln!(out, "=={pid}== Profiling result:\n=={pid}== Metric result:");
        let _ = writeln!(
            out,
            "{:>11} {:>name_w$} {:>desc_w$} {:>value_w$} {:>value_w$} {:>value_w$}",
            "Invocations", "Metric Name", "Metric Description", "Min", "Max", "Avg"
        );
        let mut device = None;
        for k in kernels {
            if device != Some(&k.device) {
                let _ = writeln!(out, "Device \"{}\"", k.device);
                device = Some(&k.device);
            }
            let _ = writeln!(out, "    Kernel: {}", k.kernel);
            if let Some(note) = fault_note(k) {
                let _ = writeln!(out, "        ({note})");
            }
            for l in &k.metrics {
                let [min, max, avg] = cells(l);
                let _ = writeln!(
                    out,
                    "{:>11} {:>name_w$} {:>desc_w$} {min:>value_w$} {max:>value_w$} {avg:>value_w$}",
                    l.invocations, l.metric, l.description
                );
                if let Some(note) = not_applicable_note(l) {
                    let _ = writeln!(out, "        ({note})");
                }
            }
        }
    }
    out
}

fn md_cell(s: &str) -> String {
    s.replace('|', "\\|")
}

/// One markdown table per process and device, with the n/a launches counted beside Invocations.
pub fn render_markdown(s: &Summary) -> String {
    let mut out = String::new();
    for (pid, kernels) in by_process(s) {
        let mut devices: Vec<&str> = Vec::new();
        for k in &kernels {
            if !devices.contains(&k.device.as_str()) {
                devices.push(&k.device);
            }
        }
        for device in devices {
            let _ = writeln!(out, "### Device \"{device}\", process {pid}\n");
            let mut b = Builder::default();
            b.push_record([
                "Kernel",
                "Invocations",
                "n/a",
                "Metric Name",
                "Metric Description",
                "Min",
                "Max",
                "Avg",
            ]);
            for k in kernels.iter().filter(|k| k.device == device) {
                let kernel = match fault_note(k) {
                    Some(note) => format!("`{}` ({note})", md_cell(&k.kernel)),
                    None => format!("`{}`", md_cell(&k.kernel)),
                };
                if k.metrics.is_empty() {
                    b.push_record(
                        std::iter::once(kernel.clone())
                            .chain(std::iter::repeat_n(String::new(), 7)),
                    );
                }
                for l in &k.metrics {
                    let [min, max, avg] = cells(l);
                    b.push_record([
                        kernel.clone(),
                        l.invocations.to_string(),
                        l.not_applicable.to_string(),
                        l.metric.clone(),
                        md_cell(&l.description),
                        min,
                        max,
                        avg,
                    ]);
                }
            }
            let _ = writeln!(out, "{}\n", b.build().with(Style::markdown()));
        }
    }
    out
}

/// One row per kernel and metric, values in base units at full precision (empty where not applicable).
pub fn render_csv(s: &Summary) -> anyhow::Result<String> {
    let mut w = ::csv::Writer::from_writer(Vec::new());
    w.write_record([
        "process_id",
        "device",
        "kernel",
        "launches",
        "faulted_launches",
        "metric",
        "description",
        "unit",
        "invocations",
        "not_applicable",
        "min",
        "max",
        "avg",
    ])?;
    let num = |v: Option<f64>| v.map(|x| format!("{x}")).unwrap_or_default();
    for k in &s.kernels {
        if k.metrics.is_empty() {
            // A kernel whose every launch faulted still gets its row.
            w.write_record(
                [
                    k.process_id.clone(),
                    k.device.clone(),
                    k.kernel.clone(),
                    k.launches.to_string(),
                    k.faulted_launches.to_string(),
                ]
                .into_iter()
                .chain(std::iter::repeat_n(String::new(), 8)),
            )?;
        }
        for l in &k.metrics {
            w.write_record([
                k.process_id.clone(),
                k.device.clone(),
                k.kernel.clone(),
                k.launches.to_string(),
                k.faulted_launches.to_string(),
                l.metric.clone(),
                l.description.clone(),
                l.unit.clone(),
                l.invocations.to_string(),
                l.not_applicable.to_string(),
                num(l.min),
                num(l.max),
                num(l.avg),
            ])?;
        }
    }
    Ok(String::from_utf8(w.into_inner()?)?)
}

/// The formats of nvprof's table.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    /// nvprof's own fixed-width text.
    Table,
    Md,
    Csv,
    Json,
}

pub fn render(s: &Summary, format: Format) -> anyhow::Result<String> {
    match format {
        Format::Table => Ok(render_table(s)),
        Format::Md => Ok(render_markdown(s)),
        Format::Csv => render_csv(s),
        Format::Json => Ok(serde_json::to_string_pretty(s)? + "\n"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_durations_are_scaled_once() {
        let line = MetricLine {
            unit: "ns".into(),
            ..MetricLine::default()
        };
        assert_eq!(nvprof_value(&line, 5e12), "5000.00s");
        assert_eq!(nvprof_value(&line, 2.5e9), "2.5000s");
        assert_eq!(nvprof_value(&line, 1234.0), "1.2340us");
    }
    use std::collections::BTreeMap;

    fn row(id: u64, kernel: &str, values: &[(&str, f64)]) -> KernelRow {
        KernelRow {
            id,
            process_id: "558".into(),
            kernel_name: kernel.into(),
            block_size: "(32, 8, 1)".into(),
            grid_size: "(64, 256, 1)".into(),
            device: "0".into(),
            cc: "9.0".into(),
            values: values.iter().map(|(k, v)| (k.to_string(), *v)).collect(),
            text: BTreeMap::from([(DEVICE_NAME.to_string(), "NVIDIA H200".to_string())]),
        }
    }

    const REQ: &str = "smsp__sass_data_bytes_mem_global_op_ld.sum";
    const SECT: &str = "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum";

    #[test]
    fn launches_group_by_kernel_with_min_max_and_plain_mean() {
        let c = metrics::Catalog::builtin().unwrap();
        let defs = c
            .resolve(&[
                "gld_efficiency".into(),
                "shared_load_transactions_per_request".into(),
            ])
            .unwrap();
        let rows = vec![
            row(0, "copy_row", &[(REQ, 128.0), (SECT, 4.0)]),
            row(1, "copy_column", &[(REQ, 128.0), (SECT, 32.0)]),
            row(2, "copy_row", &[(REQ, 128.0), (SECT, 8.0)]),
        ];
        let s = summarize(&rows, &defs).unwrap();
        assert_eq!(
            s.kernels
                .iter()
                .map(|k| (k.kernel.as_str(), k.launches))
                .collect::<Vec<_>>(),
            [("copy_row", 2), ("copy_column", 1)]
        );
        let eff = &s.kernels[0].metrics[0];
        assert_eq!(
            (eff.invocations, eff.min, eff.max, eff.avg),
            (2, Some(50.0), Some(100.0), Some(75.0))
        );
        assert_eq!(s.missing.len(), 1);
        assert_eq!(s.missing[0].metric, "shared_load_transactions_per_request");
        assert_eq!(s.missing[0].counters.len(), 2);
    }

    #[test]
    fn the_table_has_nvprofs_columns_and_widths() {
        let c = metrics::Catalog::builtin().unwrap();
        let defs = c.resolve(&["gld_efficiency".into()]).unwrap();
        let s = summarize(
            &[row(
                0,
                "copyRow(float*, float*, int, int)",
                &[(REQ, 128.0), (SECT, 4.0)],
            )],
            &defs,
        )
        .unwrap();
        let t = render_table(&s);
        let lines: Vec<&str> = t.lines().collect();
        assert_eq!(lines[0], "==558== Profiling result:");
        assert_eq!(lines[3], "Device \"NVIDIA H200 (0)\"");
        assert_eq!(lines[4], "    Kernel: copyRow(float*, float*, int, int)");
        // nvprof's own line for this metric, column for column (../shared/seeds/002, a GT 1030).
        assert_eq!(
            lines[5],
            "          1                            gld_efficiency             Global Memory Load Efficiency     100.00%     100.00%     100.00%"
        );
        assert_eq!(
            lines[2],
            "Invocations                               Metric Name                        Metric Description         Min         Max         Avg"
        );
    }

    #[test]
    fn values_are_formatted_as_nvprof_did() {
        let line = |unit: &str, aggregate| MetricLine {
            metric: "m".into(),
            description: String::new(),
            unit: unit.into(),
            invocations: 1,
            min: None,
            max: None,
            avg: None,
            not_applicable: 0,
            not_applicable_reason: None,
            aggregate,
            raw: false,
        };
        assert_eq!(nvprof_value(&line("%", Aggregate::Mean), 83.333), "83.33%");
        assert_eq!(
            nvprof_value(&line("byte/s", Aggregate::Mean), 24.568e9),
            "24.568GB/s"
        );
        assert_eq!(
            nvprof_value(&line("byte/s", Aggregate::Mean), 192.52e9),
            "192.52GB/s"
        );
        assert_eq!(
            nvprof_value(&line("sectors", Aggregate::Mean), 16.000031),
            "16.000031"
        );
        assert_eq!(
            nvprof_value(&line("conflicts", Aggregate::Sum), 4194306.0),
            "4194306"
        );
        assert_eq!(
            nvprof_value(&line("ns", Aggregate::Sum), 983_168.0),
            "983.17us"
        );
    }

    #[test]
    fn undefined_ratios_and_faulted_launches_are_shown() {
        let c = metrics::Catalog::builtin().unwrap();
        let defs = c
            .resolve(&["shared_load_transactions_per_request".into()])
            .unwrap();
        let w = "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum";
        let i = "smsp__inst_executed_op_shared_ld.sum";
        let mut bad = row(1, "faulty", &[(w, f64::NAN), (i, f64::NAN)]);
        bad.grid_size = "(0, 0, 0)".into();
        let s = summarize(&[row(0, "copy", &[(w, 0.0), (i, 0.0)]), bad], &defs).unwrap();
        assert_eq!(s.faulted_launches(), 1);
        let t = render_table(&s);
        assert!(t.contains("n/a         n/a         n/a"), "{t}");
        assert!(t.contains("(faulted: 1 of 1 launches"), "{t}");
        let md = render_markdown(&s);
        assert!(md.contains("| `faulty` (faulted: 1 of 1 launches"), "{md}");
        let csv = render_csv(&s).unwrap();
        assert_eq!(csv.lines().count(), 3, "{csv}");
    }

    #[test]
    fn launches_where_a_ratio_is_undefined_are_counted_and_said() {
        let c = metrics::Catalog::builtin().unwrap();
        let defs = c.resolve(&["gld_efficiency".into()]).unwrap();
        let rows = [
            row(0, "copy", &[(REQ, 128.0), (SECT, 4.0)]),
            row(1, "copy", &[(REQ, 0.0), (SECT, 0.0)]),
            row(2, "copy", &[(REQ, 128.0), (SECT, 8.0)]),
        ];
        let s = summarize(&rows, &defs).unwrap();
        let line = &s.kernels[0].metrics[0];
        assert_eq!(
            (line.invocations, line.not_applicable, line.min, line.avg),
            (3, 1, Some(50.0), Some(75.0))
        );
        let t = render_table(&s);
        assert!(t.contains("\n        (gld_efficiency: n/a in 1 of 3 invocations (formula undefined there, such as 0/0); Min, Max and Avg are over the other 2)\n"), "{t}");
        let md = render_markdown(&s);
        assert!(
            md.contains("| `copy` | 3           | 1   | gld_efficiency |"),
            "{md}"
        );
    }
}
