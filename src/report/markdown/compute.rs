//! The markdown report's ladder of a group measured by its flops: the FP32 peak, copy bound and compute bounds measured in the run, then one row per variant with its GFLOP/s, % of peak, % of the compute bound, intensity, % of roofline, speedup and metrics.

use std::fmt::Write;

use super::cells::{
    metric_cells, metric_header, pct, reference, speedup_cell, status_cell, table, timing_cell,
};
use crate::metrics::MetricDef;
use crate::records::{Impossible, JobRecord, JobStatus, RunData};

/// A group of compute jobs: GFLOP/s, % of the FP32 peak, % of the compute bound, the roofline.
pub(super) fn section(
    run: &RunData,
    imp: &Impossible,
    group: &str,
    jobs: &[&JobRecord],
    metrics: &[MetricDef],
    out: &mut String,
) {
    // Once: `fp32_peak` scans every job of the run.
    let peak = run.fp32_peak(group);
    bounds(run, group, peak, out);
    out.push_str(&ladder(run, imp, jobs, metrics, peak.map(|p| p.0)));
    out.push_str("\n\n");
}

/// What the group's jobs are measured against: the FP32 peak (`peak`: GFLOP/s, lanes, MHz), the
/// copy bound and each compute bound.
fn bounds(run: &RunData, group: &str, peak: Option<(f64, u32, u32)>, out: &mut String) {
    let bounds = run.bounds.get(group);
    match (bounds.and_then(|b| b.fma.as_ref()), peak) {
        (Some(f), Some((p, lanes, mhz))) => {
            let _ = writeln!(
                out,
                "FP32 peak: {} SMs × {lanes} lanes × 2 × {mhz} MHz (NVML, during the jobs) = **{p:.0} GFLOP/s**; the lanes are read off a multiply-add kernel measured in this run at {:.0} GFLOP/s.\n",
                f.sm_count,
                f.gflops()
            );
        }
        _ => {
            let _ = writeln!(out, "FP32 peak: not measured in this run.\n");
        }
    }
    if let Some(copy) = bounds.and_then(|b| b.copy_gbs()) {
        let _ = writeln!(
            out,
            "Copy bound at this size: **{copy:.0} GB/s** (the roofline's memory slope).\n"
        );
    }
    for c in run.compute_bounds.values().filter(|c| c.group == group) {
        match (&c.error, c.summary, c.gflops()) {
            (None, Some(s), Some(g)) => {
                let _ = writeln!(
                    out,
                    "Compute bound {}: median {:.4} ms [{:.4}, {:.4}] = **{g:.0} GFLOP/s** (math mode {}).\n",
                    c.key, s.median, s.ci_low, s.ci_high, c.math_mode
                );
            }
            (e, ..) => {
                let _ = writeln!(
                    out,
                    "Compute bound {} could not be measured: {}\n",
                    c.key,
                    e.as_deref().unwrap_or("no samples")
                );
            }
        }
    }
}

/// One row per variant; `peak`: the group's FP32 peak in GFLOP/s.
fn ladder(
    run: &RunData,
    imp: &Impossible,
    jobs: &[&JobRecord],
    metrics: &[MetricDef],
    peak: Option<f64>,
) -> String {
    let bound_name = jobs
        .iter()
        .find_map(|j| run.compute_bound_gflops(j))
        .map(|(n, _)| n)
        .unwrap_or_else(|| "bound".into());
    let first = reference(run, imp, jobs);
    let mut head: Vec<String> = [
        "variant",
        "median ms [95% CI]",
        "GFLOP/s",
        "% of FP32 peak",
        &format!("% of {bound_name}"),
        "flop/byte",
        "flop/DRAM byte",
        "% of roofline",
        "roof",
        "speedup",
        "correct",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    head.extend(metrics.iter().map(metric_header));
    let mut rows = vec![head];
    for j in jobs {
        let ok = j.status == JobStatus::Ok;
        let g = j.gflops().filter(|_| ok);
        let roof = run.roofline_under(j, peak);
        let mut row = vec![
            format!("`{}`", j.label),
            timing_cell(j),
            gflops_cell(g),
            pct(g, peak),
            pct(g, run.compute_bound_gflops(j).and_then(|(_, b)| b)),
            roof.map(|r| format!("{:.1}", r.intensity))
                .unwrap_or("–".into()),
            measured_intensity(run, j)
                .map(|x| format!("{x:.1}"))
                .unwrap_or("–".into()),
            pct(g, roof.map(|r| r.attainable_gflops)),
            roof.map(|r| if r.compute_bound { "compute" } else { "memory" }.to_string())
                .unwrap_or("–".into()),
            speedup_cell(run, imp, first, j),
            status_cell(imp, j),
        ];
        row.extend(metric_cells(run, j, metrics));
        rows.push(row);
    }
    table(rows)
}

fn gflops_cell(g: Option<f64>) -> String {
    match g {
        Some(g) if g >= 1e4 => format!("{:.1} T", g / 1e3),
        Some(g) => format!("{g:.0}"),
        None => "–".into(),
    }
}

/// Flops over the DRAM bytes ncu counted for the job (`dram_bytes`): the intensity the caches
/// left, next to the declared one.
fn measured_intensity(run: &RunData, j: &JobRecord) -> Option<f64> {
    let bytes = run
        .profiles
        .get(j.id())?
        .metrics
        .get("dram_bytes")
        .copied()
        .flatten()
        .filter(|b| *b > 0.0)?;
    Some(j.work.flops? / bytes)
}
