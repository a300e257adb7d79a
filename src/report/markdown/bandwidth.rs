//! The markdown report's ladder of a group measured by its bytes: the copy bound of the group (per GPU where several timed it), then one row per variant with its GB/s, % of copy, % of peak, speedup and metrics.

use std::fmt::Write;

use super::cells::{
    metric_cells, metric_header, pct, reference, speedup_cell, status_cell, table, timing_cell,
};
use crate::metrics::MetricDef;
use crate::records::{Impossible, JobRecord, RunData};

/// The group's bounds, then its table.
pub(super) fn section(
    run: &RunData,
    imp: &Impossible,
    group: &str,
    jobs: &[&JobRecord],
    metrics: &[MetricDef],
    out: &mut String,
) {
    let bound = run.bounds.get(group);
    let copy = bound.and_then(|b| b.copy_gbs());
    let peak = run.info.device.as_ref().map(|d| d.peak_bandwidth_gbs);
    if let Some(b) = bound {
        let _ = writeln!(
            out,
            "Copy bound at this size ({:.0} MB read + written): device-to-device memcpy {}, copy kernel {} → **{}**; NVML peak {}.\n",
            b.bytes as f64 / 1e6,
            b.memcpy_gbs()
                .map(|g| format!("{g:.0} GB/s"))
                .unwrap_or("–".into()),
            b.kernel_gbs()
                .map(|g| format!("{g:.0} GB/s"))
                .unwrap_or("–".into()),
            copy.map(|g| format!("{g:.0} GB/s")).unwrap_or("–".into()),
            peak.map(|g| format!("{g:.0} GB/s")).unwrap_or("–".into()),
        );
        if let Some(e) = &b.error {
            let _ = writeln!(out, "Bounds could not be measured: {e}\n");
        }
    }
    per_gpu_bounds(run, group, out);
    out.push_str(&ladder(run, imp, jobs, metrics, copy, peak));
    out.push_str("\n\n");
}

/// One row per variant: its time, GB/s, % of copy and of peak, speedup, correctness, GPU and
/// metrics. `copy`: the group's copy bound, for jobs whose own GPU has none.
fn ladder(
    run: &RunData,
    imp: &Impossible,
    jobs: &[&JobRecord],
    metrics: &[MetricDef],
    copy: Option<f64>,
    peak: Option<f64>,
) -> String {
    let first = reference(run, imp, jobs);
    let median = run.info.timing.cache.marked("median ms [95% CI]");
    let mut head = vec![
        "variant",
        &median,
        "GB/s",
        "% of copy",
        "% of peak",
        "speedup",
        "correct",
    ]
    .into_iter()
    .map(String::from)
    .collect::<Vec<_>>();
    let several_gpus = run.info.gpus.len() > 1;
    if several_gpus {
        head.push("GPU".into());
    }
    head.extend(metrics.iter().map(metric_header));
    let mut rows = vec![head];
    for j in jobs {
        let gbs = j.gbs();
        let mut row = vec![
            format!("`{}`", j.label),
            timing_cell(j),
            gbs.map(|g| format!("{g:.0}")).unwrap_or("–".into()),
            // Bytes that cross the host link are judged against the host link (the host-programs section), not DRAM.
            if j.host_link {
                "host link".into()
            } else {
                pct(gbs, run.bound_of(j).and_then(|b| b.copy_gbs()).or(copy))
            },
            if j.host_link {
                "host link".into()
            } else {
                pct(gbs, peak)
            },
            speedup_cell(run, imp, first, j),
            status_cell(imp, j),
        ];
        if several_gpus {
            row.push(gpu_cell(run, j));
        }
        row.extend(metric_cells(run, j, metrics));
        rows.push(row);
    }
    table(rows)
}

/// In a run over several GPUs: each GPU's own copy bound of the group (its jobs are compared with it).
fn per_gpu_bounds(run: &RunData, group: &str, out: &mut String) {
    let each: Vec<String> = run
        .gpu_bounds
        .iter()
        .filter(|((g, _), _)| g == group)
        .map(|((_, uuid), b)| {
            format!(
                "{} {}",
                gpu_name(run, uuid),
                b.copy_gbs()
                    .map(|g| format!("{g:.0} GB/s"))
                    .unwrap_or("–".into())
            )
        })
        .collect();
    if each.len() > 1 {
        let _ = writeln!(
            out,
            "Copy bound measured on each GPU: {}; each job's % of copy is against the bound of the GPU that timed it.\n",
            each.join(", ")
        );
    }
}

/// `GPU N` for a GPU UUID of the run, else the UUID.
fn gpu_name(run: &RunData, uuid: &str) -> String {
    run.info
        .gpus
        .iter()
        .find(|g| g.uuid == uuid)
        .map(|g| format!("GPU {}", g.index))
        .unwrap_or_else(|| uuid.to_string())
}

fn gpu_cell(run: &RunData, j: &JobRecord) -> String {
    let mut gpus: Vec<String> = j
        .rounds
        .iter()
        .filter_map(|r| r.gpu.as_deref())
        .chain(j.gpu.as_deref())
        .map(|u| gpu_name(run, u))
        .collect();
    gpus.sort();
    gpus.dedup();
    if gpus.is_empty() {
        "–".into()
    } else {
        gpus.join(", ")
    }
}
