//! The markdown report's occupancy table under a group's table: per launch, registers, shared and local memory, the driver's blocks per SM and predicted occupancy, the model's limiter and ncu's achieved occupancy; then notes on what occupancy bought.

use std::fmt::Write;

use super::cells::table;
use crate::records::{Impossible, JobRecord, LaunchOccupancy, RunData};

/// `100 KiB`, `1000 B`: shared memory as a manifest would write it.
fn bytes_cell(bytes: u64) -> String {
    if bytes >= 1024 && bytes.is_multiple_of(1024) {
        format!("{} KiB", bytes / 1024)
    } else {
        format!("{bytes} B")
    }
}

/// The limiter, with the limits that tie with it: `warps (= registers)`.
fn limiter_cell(o: &LaunchOccupancy) -> String {
    match o.limiters.split_first() {
        None => "–".into(),
        Some((first, [])) => first.name().into(),
        Some((first, tied)) => format!(
            "{} (= {})",
            first.name(),
            tied.iter().map(|l| l.name()).collect::<Vec<_>>().join(", ")
        ),
    }
}

fn pct_cell(p: Option<f64>) -> String {
    p.map(|p| format!("{p:.1}%")).unwrap_or("–".into())
}

/// A job's achieved occupancy as ncu measured it (over all its launches), where it was profiled
/// with `achieved_occupancy`.
fn achieved_occupancy(run: &RunData, j: &JobRecord) -> Option<f64> {
    run.profiles
        .get(j.id())?
        .metrics
        .get("achieved_occupancy")
        .copied()
        .flatten()
}

/// What the child recorded about each launch's occupancy, beside the time: registers, shared and
/// local memory, the driver's blocks per SM and predicted occupancy, the model's limiter, and
/// ncu's achieved occupancy where the job was profiled. Nothing for jobs without the records
/// (runs made before they were kept, mock runs).
pub(super) fn section(run: &RunData, imp: &Impossible, jobs: &[&JobRecord], out: &mut String) {
    if jobs
        .iter()
        .all(|j| j.occupancy.is_empty() && j.occupancy_error.is_none())
    {
        return;
    }
    intro(jobs, out);
    // Old runs and suites without clusters keep their table as it was.
    let clustered = jobs
        .iter()
        .any(|j| j.occupancy.iter().any(|o| o.cluster.is_some()));
    let mut header = vec![
        [
            "variant",
            "kernel",
            "threads",
            "registers",
            "local B/thread",
            "shared/block",
            "blocks/SM",
            "predicted occupancy",
            "limiter",
            "achieved occupancy (ncu)",
            &run.info.timing.cache.marked("median ms"),
        ]
        .iter()
        .map(|s| s.to_string())
        .collect::<Vec<_>>(),
    ];
    if clustered {
        header[0].insert(7, "cluster (active clusters)".to_string());
    }
    let mut rows = header;
    let mut notes = Vec::new();
    for j in jobs {
        if let Some(e) = &j.occupancy_error {
            notes.push(format!("- `{}`: occupancy not read: {e}", j.label));
        }
        for o in &j.occupancy {
            let mut row = launch_row(run, j, o);
            if clustered {
                row.insert(7, cluster_cell(o));
            }
            rows.push(row);
            launch_notes(j, o, &mut notes);
        }
    }
    if rows.len() > 1 {
        out.push_str(&table(rows));
        out.push_str("\n\n");
    }
    if let Some(line) = occupancy_against_time(run, imp, jobs) {
        notes.insert(0, line);
    }
    if !notes.is_empty() {
        let _ = writeln!(out, "{}\n", notes.join("\n"));
    }
}

/// The section's heading and what its columns mean, naming the SM's warp slots where all launches agree.
fn intro(jobs: &[&JobRecord], out: &mut String) {
    let clusters = if jobs
        .iter()
        .any(|j| j.occupancy.iter().any(|o| o.cluster.is_some()))
    {
        " for cluster launches, the blocks per cluster and, in brackets, the clusters the whole GPU holds at once (`cuOccupancyMaxActiveClusters`);"
    } else {
        ""
    };
    let mut slots: Vec<u32> = jobs
        .iter()
        .flat_map(|j| j.occupancy.iter().map(|o| o.max_warps_per_sm))
        .collect();
    slots.sort_unstable();
    slots.dedup();
    let slots = match slots.as_slice() {
        [one] => format!("the SM's {one} warp slots"),
        _ => "the SM's warp slots".to_string(),
    };
    let _ = writeln!(
        out,
        "### Occupancy\n\nPer launch, as the child loaded the kernel: registers, local memory per thread (spills) and shared memory per block (static + dynamic); the blocks per SM the driver predicts (`cuOccupancyMaxActiveBlocksPerMultiprocessor`) and the predicted occupancy, their warps over {slots}; the limit that allows the fewest blocks (gpu-lab's occupancy model; `=` marks limits that tie);{clusters} the occupancy ncu achieved, where the job was profiled with `achieved_occupancy`; the job's median time.\n"
    );
}

/// `16×1×1 (8)`: blocks per cluster and the clusters the GPU holds at once (`cuOccupancyMaxActiveClusters`).
fn cluster_cell(o: &LaunchOccupancy) -> String {
    match (o.cluster, o.active_clusters) {
        (Some([x, y, z]), Some(n)) => format!("{x}×{y}×{z} ({n})"),
        (Some([x, y, z]), None) => format!("{x}×{y}×{z} (–)"),
        (None, _) => "–".into(),
    }
}

/// The row of one launch of a job.
fn launch_row(run: &RunData, j: &JobRecord, o: &LaunchOccupancy) -> Vec<String> {
    let blocks = match (o.active_blocks_per_sm, o.model_disagrees()) {
        (Some(b), Some(model)) => format!("{b} (model: {model})"),
        (Some(b), None) => b.to_string(),
        (None, _) => "–".into(),
    };
    vec![
        format!("`{}`", j.label),
        format!("`{}`", o.kernel),
        o.threads_per_block.to_string(),
        o.registers_per_thread.to_string(),
        o.local_bytes_per_thread.to_string(),
        format!(
            "{} + {}",
            bytes_cell(o.static_shared_bytes as u64),
            bytes_cell(o.dynamic_shared_bytes as u64)
        ),
        blocks,
        pct_cell(o.predicted_occupancy_pct),
        limiter_cell(o),
        pct_cell(achieved_occupancy(run, j)),
        j.summary
            .map(|s| format!("{:.4}", s.median))
            .unwrap_or("–".into()),
    ]
}

/// What the driver or the model could not say of a launch, where they disagree, and a launch
/// that cannot run.
fn launch_notes(j: &JobRecord, o: &LaunchOccupancy, notes: &mut Vec<String>) {
    if let Some(e) = &o.cluster_error {
        notes.push(format!(
            "- `{}` (`{}`): the driver gave no cluster occupancy: {e}",
            j.label, o.kernel
        ));
    }
    if let Some(e) = &o.driver_error {
        notes.push(format!(
            "- `{}` (`{}`): the driver gave no occupancy: {e}",
            j.label, o.kernel
        ));
    }
    if let Some(e) = &o.model_error {
        notes.push(format!("- `{}` (`{}`): no limiter: {e}", j.label, o.kernel));
    }
    if let (Some(model), Some(driver)) = (o.model_disagrees(), o.active_blocks_per_sm) {
        notes.push(format!("- `{}` (`{}`): the driver predicts {driver} blocks per SM, the occupancy model {model}: the limiter named is the model's and may be wrong", j.label, o.kernel));
    }
    if o.active_blocks_per_sm == Some(0) {
        notes.push(format!("- `{}` (`{}`): no block of this launch fits on an SM ({} limits it): the launch cannot run", j.label, o.kernel, o.limiter().map_or("no limit named", |l| l.name())));
    }
}

/// One line on what occupancy bought in this table: the fastest ranked job against the ranked job
/// of the highest predicted occupancy. Only single-launch jobs that declare the same work are
/// compared (a time is only comparable for equal bytes and flops).
fn occupancy_against_time(run: &RunData, imp: &Impossible, jobs: &[&JobRecord]) -> Option<String> {
    let timed: Vec<(&JobRecord, f64, f64)> = jobs
        .iter()
        .filter(|j| run.rankable_in(j, imp))
        .filter_map(|j| match j.occupancy.as_slice() {
            [o] => Some((*j, j.summary?.median, o.predicted_occupancy_pct?)),
            _ => None,
        })
        .collect();
    let (first, ..) = timed.first()?;
    if timed.len() < 2 || timed.iter().any(|(j, ..)| j.work != first.work) {
        return None;
    }
    let fastest = timed.iter().min_by(|a, b| a.1.total_cmp(&b.1))?;
    let fullest = timed
        .iter()
        .max_by(|a, b| a.2.total_cmp(&b.2).then(b.1.total_cmp(&a.1)))?;
    if fullest.2 <= fastest.2 {
        return Some(format!(
            "- The fastest job, `{}` ({:.4} ms), also has the highest predicted occupancy here ({:.1}%).",
            fastest.0.label, fastest.1, fastest.2
        ));
    }
    Some(format!(
        "- Occupancy is not speed here: the fastest job, `{}` ({:.4} ms), runs at {:.1}% predicted occupancy; `{}` at {:.1}% takes {:.4} ms ({:.2}× as long).",
        fastest.0.label,
        fastest.1,
        fastest.2,
        fullest.0.label,
        fullest.2,
        fullest.1,
        fullest.1 / fastest.1
    ))
}
