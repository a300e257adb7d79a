//! The markdown report's closing notes: how often ncu replayed each kernel and where each job's duration came from, then the legends of the tables the run has.

use std::fmt::Write;

use super::cells::is_compute;
use crate::records::RunData;

/// How many times ncu replayed the kernels, and where the profiles' durations came from; nothing
/// for a run without ncu passes.
pub(super) fn ncu_passes(run: &RunData, out: &mut String) {
    let passes: Vec<f64> = run.profiles.values().filter_map(|p| p.passes).collect();
    if passes.is_empty() {
        return;
    }
    let (lo, hi) = passes
        .iter()
        .fold((f64::MAX, f64::MIN), |(a, b), &p| (a.min(p), b.max(p)));
    let times = if lo == hi {
        format!("{lo:.0}")
    } else {
        format!("{lo:.0}–{hi:.0}")
    };
    let duration_note = duration_note(run);
    let _ = writeln!(
        out,
        "ncu replayed each kernel {times} times to collect these counters (one profiled launch per variant, one ncu session per table{duration_note}).\n"
    );
}

/// Where each job's ncu duration came from: its own session, the set's reading as asked, or the
/// set's reading as a fallback. Runs made before the duration had its own session say nothing.
fn duration_note(run: &RunData) -> String {
    let own = run
        .profiles
        .values()
        .filter(|p| p.duration_from_own_session())
        .count();
    let asked = run
        .profiles
        .values()
        .filter(|p| p.duration_from_metric_set_as_asked())
        .count();
    let activity = run
        .profiles
        .values()
        .filter(|p| p.duration_from_activity())
        .count();
    let fell_back = run
        .profiles
        .values()
        .filter(|p| {
            p.duration_from.is_some()
                && !p.duration_from_own_session()
                && !p.duration_from_metric_set_as_asked()
                && !p.duration_from_activity()
        })
        .count();
    if activity > 0 {
        return activity_note(activity, own, fell_back);
    }
    match (own, fell_back) {
        (0, 0) if asked > 0 => "; each job's ncu duration the set's reading, as `--duration-runs 0` asked: up to 6% longer under its replay than alone".to_string(),
        (0, 0) => String::new(),
        (_, 0) => "; each job's ncu duration from one more session that collects only it: the median of its profiled runs after one unprofiled run".to_string(),
        (_, n) => format!("; each job's ncu duration from one more session that collects only it, except {n} whose duration is the set's reading, longer under its replay (each record's `duration_from` says why)"),
    }
}

/// The duration note of a run whose jobs' durations came from the timing child's activity records.
fn activity_note(activity: usize, own: usize, other: usize) -> String {
    let mut note = format!(
        "; the duration of {activity} jobs the median of their timed samples' kernel durations from CUPTI's Activity API in the timing child (no profiler session of its own)"
    );
    if own > 0 {
        note.push_str(&format!(", of {own} from ncu's own duration session"));
    }
    if other > 0 {
        note.push_str(&format!(
            ", of {other} the profiler's reading (each record's `duration_from` says why)"
        ));
    }
    note
}

/// The legends of the tables the run has: with flops, of occupancy, of every table, of host links.
pub(super) fn legends(run: &RunData, out: &mut String) {
    if run.jobs.iter().any(is_compute) && run.judges_by_math() {
        out.push_str("Legend of the tables with flops: GFLOP/s = the suite's flops expression over the median (T = TFLOP/s; GOP/s and TOP/s for an integer math such as `i8-tensor`); % of its math's roof = over the roof of the math the job declares (`math`; none declared: FP32 SIMT, whose peak is SMs × FP32 lanes × 2 × the SM clock seen; any other: the fastest of cuBLAS/cuBLASLt at a large square shape and gpu-lab's own peak kernel, measured in this run, named above the table with its clock; `roof not measured` where neither was, and then no impossible-result gate); % of the compute bound = over the bound the suite names (cuBLAS at the job's shape, or a variant), measured in this run; flop/byte = declared flops over declared bytes, flop/DRAM byte = over the DRAM bytes ncu counted (`dram_bytes`: what the caches left); % of roofline = over min(its math's roof, flop/byte × copy bound), the roof that is lower there named in `roof`; speedup over the first correct variant by time (equal flops; by GFLOP/s where flops differ).\n\n");
    } else if run.jobs.iter().any(is_compute) {
        out.push_str("Legend of the tables with flops: GFLOP/s = the suite's flops expression over the median (T = TFLOP/s); % of FP32 peak = over SMs × FP32 lanes × 2 × the SM clock seen; % of the compute bound = over the bound the suite names (cuBLAS at the job's shape, or a variant), measured in this run; flop/byte = declared flops over declared bytes, flop/DRAM byte = over the DRAM bytes ncu counted (`dram_bytes`: what the caches left); % of roofline = over min(FP32 peak, flop/byte × copy bound), the roof that is lower there named in `roof`; speedup over the first correct variant by time (equal flops; by GFLOP/s where flops differ).\n\n");
    }
    if run.jobs.iter().any(|j| !j.occupancy.is_empty()) {
        out.push_str("Legend of the occupancy tables: predicted occupancy = the driver's blocks per SM × the block's warps over the SM's warp slots, before anything runs; achieved occupancy = the warps ncu saw resident, averaged over the SM's active cycles (for a job of several launches, over all of them); the limiter is gpu-lab's occupancy model (src/occupancy.rs: warp slots, block slots, registers allocated per warp in units of 256 from each quarter of the register file, shared memory with the driver's reservation per block, 1 KiB since Ampere), its blocks beside the driver's where they differ; local B/thread = local memory per thread, where spilled registers go.\n\n");
    }
    super::energy::legend(run, out);
    out.push_str("Legend: median of per-run times; GB/s = the suite's bytes expression over the median; % of copy = over the better of a device-to-device memcpy and a copy kernel of the same bytes, measured in this run; speedup over the first correct variant of the table (by GB/s where the two move different amounts of bytes; variants that are not checked or impossible are never ranked); `n/a` = not applicable (for example no shared-memory loads at all); `–` = not measured.\n");
    if run.jobs.iter().any(|j| j.host_link) {
        out.push_str("`host link` in % of copy and % of peak: a host program whose bytes cross the host link, judged against the host link in its group's host-programs section, not against DRAM.\n");
    }
}
