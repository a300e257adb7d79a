//! The markdown report's ladder of a group measured by its flops: the roof of each math its jobs declare (the FP32 peak unless they declare another), copy bound and compute bounds measured in the run, then one row per variant with its GFLOP/s, % of its roof, % of the compute bound, intensity, % of roofline, speedup and metrics.

use std::fmt::Write;

use super::cells::{
    metric_cells, metric_header, pct, reference, speedup_cell, status_cell, table, timing_cell,
};
use crate::metrics::MetricDef;
use crate::records::{Impossible, JobRecord, JobStatus, Math, Roof, RunData};

/// A group of compute jobs: GFLOP/s, % of its math's roof, % of the compute bound, the roofline.
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
    let fp32 = run.fp32_roof(group);
    // A run whose jobs all run on FP32 reads as reports always have; one that declares other
    // maths names the roof of each.
    let maths = run.maths_of(group);
    if run.judges_by_math() {
        for &math in &maths {
            match math {
                Math::Fp32 => fp32_peak_line(run, group, peak, out),
                m => super::roofs::roof_line(run, group, m, out),
            }
        }
    } else {
        fp32_peak_line(run, group, peak, out);
    }
    bounds(run, group, out);
    let judged = Judged {
        by_math: run.judges_by_math(),
        maths,
        fp32,
    };
    out.push_str(&ladder(run, imp, jobs, metrics, &judged));
    out.push_str("\n\n");
}

/// The FP32 peak (`peak`: GFLOP/s, lanes, MHz) and how it was found.
fn fp32_peak_line(run: &RunData, group: &str, peak: Option<(f64, u32, u32)>, out: &mut String) {
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
}

/// What else the group's jobs are measured against: the copy bound and each compute bound.
fn bounds(run: &RunData, group: &str, out: &mut String) {
    let bounds = run.bounds.get(group);
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

/// How a group's jobs are judged: by their maths' roofs (`by_math`) or all by the FP32 peak.
struct Judged {
    by_math: bool,
    /// The maths the group's jobs declare.
    maths: Vec<Math>,
    /// The group's FP32 peak.
    fp32: Option<Roof>,
}

impl Judged {
    /// The group mixes maths: a column names each job's.
    fn mixed(&self) -> bool {
        self.by_math && self.maths.len() > 1
    }

    /// The header of the rate column: GFLOP/s, GOP/s where every math is an integer one.
    fn rate_header(&self) -> &'static str {
        let integer = self.maths.iter().filter(|m| m.is_integer()).count();
        match integer {
            0 => "GFLOP/s",
            n if n == self.maths.len() => "GOP/s",
            _ => "GFLOP/s or GOP/s",
        }
    }

    /// The header of the roof column: the FP32 peak's as always, else the one math's roof.
    fn roof_header(&self) -> String {
        match self.maths.as_slice() {
            _ if !self.by_math => "% of FP32 peak".into(),
            [Math::Fp32] => "% of FP32 peak".into(),
            [m] => format!("% of {} roof", m.title()),
            _ => "% of its math's roof".into(),
        }
    }

    /// The % of its roof of a job doing `g` giga-ops per second; where its math's roof was not
    /// measured the cell says so (never the FP32 peak instead).
    fn roof_cell(&self, j: &JobRecord, g: Option<f64>, roof: Option<&Roof>) -> String {
        match roof {
            None if self.by_math && j.math() != Math::Fp32 => "roof not measured".into(),
            r => pct(g, r.map(|r| r.gops)),
        }
    }
}

/// One row per variant, each judged by its math's roof.
fn ladder(
    run: &RunData,
    imp: &Impossible,
    jobs: &[&JobRecord],
    metrics: &[MetricDef],
    judged: &Judged,
) -> String {
    let bound_name = jobs
        .iter()
        .find_map(|j| run.compute_bound_gflops(j))
        .map(|(n, _)| n)
        .unwrap_or_else(|| "bound".into());
    let first = reference(run, imp, jobs);
    let median = run.info.timing.cache.marked("median ms [95% CI]");
    let mut head: Vec<String> = [
        "variant",
        &median,
        judged.rate_header(),
        &judged.roof_header(),
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
    if judged.mixed() {
        head.insert(1, "math".into());
    }
    let mut rows = vec![head];
    for j in jobs {
        let ok = j.status == JobStatus::Ok;
        let g = j.gflops().filter(|_| ok);
        let own = run.job_roof(j, judged.fp32.as_ref());
        let roof = run.roofline_under(j, own.as_ref().map(|r| r.gops));
        let mut row = vec![
            format!("`{}`", j.label),
            timing_cell(j),
            gflops_cell(g),
            judged.roof_cell(j, g, own.as_ref()),
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
        if judged.mixed() {
            row.insert(1, format!("`{}`", j.math().name()));
        }
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
