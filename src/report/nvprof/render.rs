//! The nvprof summary printed: nvprof's own fixed-width `--metrics` table, markdown, CSV or JSON, values formatted as nvprof printed them.

use std::fmt::Write as _;

use tabled::builder::Builder;
use tabled::settings::Style;

use super::summary::{KernelGroup, MetricLine, Summary};
use crate::metrics::Aggregate;

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
