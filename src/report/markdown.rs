//! Markdown exporter: header (GPU, driver, CUDA, ncu, clocks, policy, date), one ladder table per group, readings of notable metrics, and the host programs' timelines (`host_programs`).

use std::fmt::Write;

use tabled::builder::Builder;
use tabled::settings::Style;

use super::Exporter;
use crate::metrics::{self, MetricDef};
use crate::records::{Impossible, JobRecord, JobStatus, LaunchOccupancy, RunData};

pub struct Markdown;

/// A markdown table of rows of cells, the first row its header.
pub(crate) fn table(rows: Vec<Vec<String>>) -> String {
    let mut b = Builder::default();
    for r in rows {
        b.push_record(r);
    }
    b.build().with(Style::markdown()).to_string()
}

pub(crate) fn status_cell(imp: &Impossible, j: &JobRecord) -> String {
    match j.status {
        JobStatus::Ok if imp.contains_key(j.id()) => "**IMPOSSIBLE**".into(),
        JobStatus::Ok if j.correctness.is_none() => "not checked".into(),
        JobStatus::Ok => "yes".into(),
        JobStatus::Wrong => "**WRONG**".into(),
        JobStatus::Failed => "failed".into(),
        JobStatus::TimedOut => "timed out".into(),
    }
}

/// How much faster `j` is than `first`: by time for the same work, by GB/s where the two move
/// different amounts of bytes (a strided read of 1/32 of the data is not 32× faster).
fn speedup(first: &JobRecord, j: &JobRecord) -> Option<f64> {
    let ratio = match (
        first.work.flops,
        j.work.flops,
        first.work.bytes,
        j.work.bytes,
    ) {
        (Some(a), Some(b), ..) if a != b => Some(j.gflops()? / first.gflops()?),
        (Some(_), Some(_), ..) => Some(first.summary?.median / j.summary?.median),
        (.., Some(a), Some(b)) if a != b => Some(j.gbs()? / first.gbs()?),
        _ => Some(first.summary?.median / j.summary?.median),
    };
    // A zero or negative time (only ever from an edited file) has no speedup.
    ratio.filter(|r| r.is_finite() && *r > 0.0)
}

fn pct(a: Option<f64>, b: Option<f64>) -> String {
    match (a, b) {
        (Some(a), Some(b)) if b > 0.0 => format!("{:.0}%", 100.0 * a / b),
        _ => "–".into(),
    }
}

fn header(run: &RunData, out: &mut String) {
    let i = &run.info;
    let _ = writeln!(
        out,
        "# gpu-lab report: {}{}\n",
        i.suite,
        if i.mock { " (MOCK)" } else { "" }
    );
    if i.mock {
        let _ = writeln!(
            out,
            "**MOCK run: no GPU was used (`--mock-gpu`). Every time, bandwidth and counter below is a deterministic stand-in made to test gpu-lab itself, not a measurement.**\n"
        );
    }
    if !i.suite_description.is_empty() {
        let _ = writeln!(out, "{}\n", i.suite_description);
    }
    let mut rows = vec![vec!["run".to_string(), String::new()]];
    let mut kv = |k: &str, v: String| rows.push(vec![k.to_string(), v]);
    match &i.device {
        Some(d) => {
            kv(
                "GPU",
                format!(
                    "{} (CC {}, {} GiB, {}-bit bus)",
                    d.name,
                    d.compute_capability,
                    d.memory_total_bytes >> 30,
                    d.bus_width_bits
                ),
            );
            kv("UUID", d.uuid.clone());
            if i.gpus.len() > 1 {
                let each: Vec<String> = i
                    .gpus
                    .iter()
                    .map(|g| format!("GPU {}: {} ({})", g.index, g.name, g.uuid))
                    .collect();
                kv(
                    "GPUs (`--gpus`: jobs spread over them, one at a time per GPU)",
                    each.join("; "),
                );
            }
            kv("driver / CUDA", format!("{} / {}", d.driver, d.cuda_driver));
            kv(
                "peak DRAM bandwidth (NVML: 2 × memory clock × bus width)",
                format!("{:.0} GB/s", d.peak_bandwidth_gbs),
            );
            kv(
                "max clocks",
                format!(
                    "SM {} MHz, memory {} MHz",
                    d.max_sm_clock_mhz, d.max_mem_clock_mhz
                ),
            );
        }
        None => kv(
            "GPU",
            format!(
                "unknown: {}",
                i.nvml_error
                    .clone()
                    .unwrap_or_else(|| "NVML gave no information".into())
            ),
        ),
    }
    kv(
        "clocks seen (NVML, before and after each job)",
        run.clocks_seen(),
    );
    let policy = if i.clock_policy == "none" {
        "the card is measured as found"
    } else {
        "ncu locked the clocks while profiling"
    };
    kv(
        "clock policy",
        format!(
            "{} (ncu --clock-control {}; {policy})",
            i.clock_policy, i.clock_policy
        ),
    );
    kv(
        "ncu",
        i.ncu_version
            .clone()
            .unwrap_or_else(|| "not used (`gpu-lab run`)".into()),
    );
    if !i.unavailable_metrics.is_empty() {
        kv(
            "metrics this GPU cannot collect",
            i.unavailable_metrics.join("; "),
        );
    }
    kv("date", i.started.clone());
    kv("command", format!("`{}`", i.command));
    kv(
        "suite source sha256",
        i.suite_source_hash.chars().take(16).collect(),
    );
    // Which compiler built which variants, and how the jobs were timed (runs before these were
    // recorded have neither).
    let compilers = grouped(
        run.jobs.iter().flat_map(|j| {
            j.compilers
                .iter()
                .map(move |c| (c.as_str(), j.key.variant.as_str()))
        }),
        true,
    );
    if !compilers.is_empty() {
        kv(
            "compilers",
            compilers
                .iter()
                .map(|(c, v)| format!("{c}: {}", v.join(", ")))
                .collect::<Vec<_>>()
                .join("; "),
        );
    }
    let excluded: usize = run.jobs.iter().map(|j| j.excluded_samples.len()).sum();
    if excluded > 0 {
        let jobs = run
            .jobs
            .iter()
            .filter(|j| !j.excluded_samples.is_empty())
            .count();
        kv(
            "samples left out",
            format!(
                "{excluded} samples of {jobs} jobs, taken while the GPU throttled or below {:.0}% of the job's highest SM clock (NVML after every sample), are not in the medians",
                crate::records::CLOCK_FLOOR * 100.0
            ),
        );
    }
    let methods = grouped(
        run.jobs
            .iter()
            .filter(|j| !j.timing_method.is_empty())
            .map(|j| (j.timing_method.as_str(), j.label.as_str())),
        false,
    );
    match methods.as_slice() {
        [] => {}
        [(m, _)] => kv("timing method", format!("{m} (every job)")),
        _ => kv(
            "timing method",
            methods
                .iter()
                .map(|(m, labels)| format!("{m}: {}", labels.join(", ")))
                .collect::<Vec<_>>()
                .join("; "),
        ),
    }
    kv(
        "timing",
        format!(
            "CUDA events, median of ≥{} samples with 95% CI, stop at ±{:.1}% or {:.1} s; {}{}",
            i.timing.min_samples,
            i.timing.target_rel_ci * 100.0,
            i.timing.max_seconds,
            i.cache_state,
            if i.timing.rounds > 1 {
                format!(
                    "; {} rounds, variants interleaved: a job's median is the median of its round medians, its interval across rounds",
                    i.timing.rounds
                )
            } else {
                String::new()
            }
        ),
    );
    if let Some(w) = i.wall_seconds {
        kv("wall time", format!("{w:.0} s"));
    }
    out.push_str(&table(rows));
    out.push_str("\n\nChart of every table below: [chart.svg](chart.svg).\n\n");
    if run.jobs.iter().any(is_compute) {
        out.push_str("Roofline of the jobs that declare flops (FP32 peak and copy bound measured in this run): [roofline.svg](roofline.svg).\n\n");
    }
}

/// (key, member) pairs gathered by key, keys and members in first-seen order; with `once`, each
/// member once per key.
fn grouped<'a>(
    pairs: impl Iterator<Item = (&'a str, &'a str)>,
    once: bool,
) -> Vec<(&'a str, Vec<&'a str>)> {
    let mut out: Vec<(&str, Vec<&str>)> = Vec::new();
    for (key, member) in pairs {
        match out.iter_mut().find(|(k, _)| *k == key) {
            Some((_, members)) if !(once && members.contains(&member)) => members.push(member),
            Some(_) => {}
            None => out.push((key, vec![member])),
        }
    }
    out
}

/// The speedup reference of a table: its first ranked job with a timing.
fn reference<'a>(run: &RunData, imp: &Impossible, jobs: &[&'a JobRecord]) -> Option<&'a JobRecord> {
    jobs.iter()
        .copied()
        .find(|j| run.rankable_in(j, imp) && j.summary.is_some())
}

/// `median [95% CI]` in ms, and where the suite declares how much the job varies between runs
/// (its `noise_threshold`), that too: a one-round run's interval does not cover it.
pub(crate) fn timing_cell(j: &JobRecord) -> String {
    let between_runs = j
        .own_noise_threshold()
        .map(|t| format!(", ±{}% between runs", (t * 1000.0).round() / 10.0))
        .unwrap_or_default();
    j.summary
        .map(|s| {
            format!(
                "{:.4} [{:.4}, {:.4}]{between_runs}",
                s.median, s.ci_low, s.ci_high
            )
        })
        .unwrap_or("–".into())
}

/// The job's speedup over the table's reference, for ranked jobs only.
fn speedup_cell(
    run: &RunData,
    imp: &Impossible,
    first: Option<&JobRecord>,
    j: &JobRecord,
) -> String {
    match first {
        Some(f) if run.rankable_in(j, imp) => speedup(f, j)
            .map(|x| format!("{x:.2}×"))
            .unwrap_or("–".into()),
        _ => "–".into(),
    }
}

/// A metric's column: its name, with its ideal value where it has one.
fn metric_header(m: &MetricDef) -> String {
    match m.ideal {
        Some(_) => format!("{} (ideal {})", m.name, metrics::format_ideal(m)),
        None => m.name.clone(),
    }
}

/// A job's value of each metric: `n/a` where undefined, `–` where not measured.
fn metric_cells(run: &RunData, j: &JobRecord, metrics: &[MetricDef]) -> Vec<String> {
    let profile = run.profiles.get(j.id());
    metrics
        .iter()
        .map(|m| match profile.and_then(|p| p.metrics.get(&m.name)) {
            Some(Some(v)) => metrics::format_value(m, *v),
            // With the reason its definition gives, where it gives one (`loads via cp.async/TMA`).
            Some(None) => match profile.and_then(|p| p.not_applicable.get(&m.name)) {
                Some(why) => format!("n/a ({why})"),
                None => "n/a".into(),
            },
            None => "–".into(),
        })
        .collect()
}

/// A job measured by its flops (the suite declares them): its table shows GFLOP/s and the roofline.
pub fn is_compute(j: &JobRecord) -> bool {
    j.work.flops.is_some_and(|f| f > 0.0)
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

/// A group of compute jobs: GFLOP/s, % of the FP32 peak, % of the compute bound, the roofline.
fn compute_section(
    run: &RunData,
    imp: &Impossible,
    group: &str,
    jobs: &[&JobRecord],
    metrics: &[MetricDef],
    out: &mut String,
) {
    let peak = run.fp32_peak(group);
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
        let roof = run.roofline_under(j, peak.map(|p| p.0));
        let mut row = vec![
            format!("`{}`", j.label),
            timing_cell(j),
            gflops_cell(g),
            pct(g, peak.map(|p| p.0)),
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
    out.push_str(&table(rows));
    out.push_str("\n\n");
    readings(run, imp, jobs, metrics, out);
    occupancy_section(run, imp, jobs, out);
}

fn group_section(
    run: &RunData,
    imp: &Impossible,
    group: &str,
    metrics: &[MetricDef],
    out: &mut String,
) {
    let jobs: Vec<&JobRecord> = run.jobs.iter().filter(|j| j.group() == group).collect();
    let _ = writeln!(
        out,
        "## {}\n",
        if group.is_empty() { "results" } else { group }
    );
    if jobs.iter().any(|j| is_compute(j)) {
        return compute_section(run, imp, group, &jobs, metrics, out);
    }
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
    let first = reference(run, imp, &jobs);
    let mut head = vec![
        "variant",
        "median ms [95% CI]",
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
    for j in &jobs {
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
    out.push_str(&table(rows));
    out.push_str("\n\n");
    readings(run, imp, &jobs, metrics, out);
    occupancy_section(run, imp, &jobs, out);
}

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
fn occupancy_section(run: &RunData, imp: &Impossible, jobs: &[&JobRecord], out: &mut String) {
    if jobs
        .iter()
        .all(|j| j.occupancy.is_empty() && j.occupancy_error.is_none())
    {
        return;
    }
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
        "### Occupancy\n\nPer launch, as the child loaded the kernel: registers, local memory per thread (spills) and shared memory per block (static + dynamic); the blocks per SM the driver predicts (`cuOccupancyMaxActiveBlocksPerMultiprocessor`) and the predicted occupancy, their warps over {slots}; the limit that allows the fewest blocks (gpu-lab's occupancy model; `=` marks limits that tie); the occupancy ncu achieved, where the job was profiled with `achieved_occupancy`; the job's median time.\n"
    );
    let mut rows = vec![
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
            "median ms",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect::<Vec<_>>(),
    ];
    let mut notes = Vec::new();
    for j in jobs {
        if let Some(e) = &j.occupancy_error {
            notes.push(format!("- `{}`: occupancy not read: {e}", j.label));
        }
        for o in &j.occupancy {
            let blocks = match (o.active_blocks_per_sm, o.model_disagrees()) {
                (Some(b), Some(model)) => format!("{b} (model: {model})"),
                (Some(b), None) => b.to_string(),
                (None, _) => "–".into(),
            };
            rows.push(vec![
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
            ]);
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

/// One line per notable metric, error and wrong output of the jobs.
fn readings(
    run: &RunData,
    imp: &Impossible,
    jobs: &[&JobRecord],
    metrics: &[MetricDef],
    out: &mut String,
) {
    let mut readings = Vec::new();
    for j in jobs {
        if let Some(p) = run.profiles.get(j.id()) {
            for m in metrics {
                if let Some(Some(v)) = p.metrics.get(&m.name)
                    && metrics::is_notable(m, *v)
                    && !m.reading.is_empty()
                {
                    readings.push(format!(
                        "- `{}`: {} {} (ideal {})",
                        j.label,
                        metrics::format_value(m, *v),
                        m.reading,
                        metrics::format_ideal(m)
                    ));
                }
            }
            if let Some(e) = &p.error {
                readings.push(format!("- `{}`: ncu: {e}", j.label));
            }
        }
        if let Some(e) = &j.error {
            let lines: Vec<&str> = e.lines().take(12).collect();
            let more = if e.lines().count() > lines.len() {
                "\n  …(the rest is in results.jsonl and the job's log under logs/)"
            } else {
                ""
            };
            readings.push(format!(
                "- `{}` {}:\n\n  ```\n  {}{more}\n  ```",
                j.label,
                status_cell(imp, j),
                lines.join("\n  ")
            ));
        }
        if let Some(ulp) = j
            .correctness
            .as_ref()
            .filter(|c| c.passed)
            .and_then(|c| c.max_ulp)
        {
            readings.push(format!(
                "- `{}` largest error against float64: {ulp:.2} ulp",
                j.label
            ));
        }
        if let Some(c) = j.correctness.as_ref().filter(|c| c.passed)
            && let (Some(in_eps), Some(elem), Some(max)) = (c.error_in_eps(), c.elem, c.max_error)
        {
            readings.push(format!("- `{}` error against its reference: relative L2 {:.2e} = {in_eps:.2} eps of {}, worst element {max:.2e} of max|ref|", j.label, c.rel_error, elem.name()));
        }
        if !j.excluded_samples.is_empty() {
            let throttled = j
                .excluded_samples
                .iter()
                .filter(|e| e.clock.throttled)
                .count();
            let lowest = j
                .excluded_samples
                .iter()
                .map(|e| e.clock.sm_mhz)
                .min()
                .unwrap_or(0);
            readings.push(format!("- `{}`: {} samples left out of the median ({throttled} throttled; lowest SM clock {lowest} MHz)", j.label, j.excluded_samples.len()));
        }
        if let Some(why) = imp.get(j.id()) {
            readings.push(format!(
                "- `{}` is impossible, never ranked: {why}",
                j.label
            ));
        }
        if let (JobStatus::Wrong, Some(c)) = (
            j.status,
            j.correctness_during.as_ref().filter(|c| !c.passed),
        ) {
            readings.push(format!(
                "- `{}` was right before timing and wrong on a launch between timed samples ({} verified during timing): {} of {} elements differ; first: {}",
                j.label, j.verified_during, c.mismatches, c.checked, c.first_mismatch.clone().unwrap_or_default()
            ));
        } else if let (JobStatus::Wrong, Some(c)) =
            (j.status, j.correctness_after.as_ref().filter(|c| !c.passed))
        {
            readings.push(format!(
                "- `{}` was right before timing and is wrong after it (fresh inputs, another seed): {} of {} elements differ; first: {}",
                j.label, c.mismatches, c.checked, c.first_mismatch.clone().unwrap_or_default()
            ));
        } else if let (JobStatus::Wrong, Some(c)) = (j.status, &j.correctness) {
            readings.push(format!(
                "- `{}` is wrong: {} of {} elements differ ({} never written); first: {}",
                j.label,
                c.mismatches,
                c.checked,
                c.unwritten,
                c.first_mismatch.clone().unwrap_or_default()
            ));
        }
    }
    if !readings.is_empty() {
        let _ = writeln!(out, "Readings:\n\n{}\n", readings.join("\n"));
    }
}

impl Exporter<RunData> for Markdown {
    fn file_name(&self) -> &'static str {
        "report.md"
    }

    fn render(&self, run: &RunData) -> anyhow::Result<String> {
        let mut out = String::new();
        header(run, &mut out);
        // Duration is in every profile but the ladder's own timing column already says it.
        let metrics: Vec<MetricDef> = run
            .info
            .metrics
            .iter()
            .filter(|m| m.name != "duration")
            .cloned()
            .collect();
        let impossible = run.impossible_jobs();
        for g in run.groups() {
            group_section(run, &impossible, &g, &metrics, &mut out);
            super::host_programs::section(run, &impossible, &g, &mut out);
        }
        let passes: Vec<f64> = run.profiles.values().filter_map(|p| p.passes).collect();
        if !passes.is_empty() {
            let (lo, hi) = passes
                .iter()
                .fold((f64::MAX, f64::MIN), |(a, b), &p| (a.min(p), b.max(p)));
            let times = if lo == hi {
                format!("{lo:.0}")
            } else {
                format!("{lo:.0}–{hi:.0}")
            };
            // Runs made before the duration had its own session say nothing of where it came from.
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
            let fell_back = run
                .profiles
                .values()
                .filter(|p| {
                    p.duration_from.is_some()
                        && !p.duration_from_own_session()
                        && !p.duration_from_metric_set_as_asked()
                })
                .count();
            let duration_note = match (own, fell_back) {
                (0, 0) if asked > 0 => "; each job's ncu duration the set's reading, as `--duration-runs 0` asked: up to 6% longer under its replay than alone".to_string(),
                (0, 0) => String::new(),
                (_, 0) => "; each job's ncu duration from one more session that collects only it: the median of its profiled runs after one unprofiled run".to_string(),
                (_, n) => format!("; each job's ncu duration from one more session that collects only it, except {n} whose duration is the set's reading, longer under its replay (each record's `duration_from` says why)"),
            };
            let _ = writeln!(
                out,
                "ncu replayed each kernel {times} times to collect these counters (one profiled launch per variant, one ncu session per table{duration_note}).\n"
            );
        }
        if run.jobs.iter().any(is_compute) {
            out.push_str("Legend of the tables with flops: GFLOP/s = the suite's flops expression over the median (T = TFLOP/s); % of FP32 peak = over SMs × FP32 lanes × 2 × the SM clock seen; % of the compute bound = over the bound the suite names (cuBLAS at the job's shape, or a variant), measured in this run; flop/byte = declared flops over declared bytes, flop/DRAM byte = over the DRAM bytes ncu counted (`dram_bytes`: what the caches left); % of roofline = over min(FP32 peak, flop/byte × copy bound), the roof that is lower there named in `roof`; speedup over the first correct variant by time (equal flops; by GFLOP/s where flops differ).\n\n");
        }
        if run.jobs.iter().any(|j| !j.occupancy.is_empty()) {
            out.push_str("Legend of the occupancy tables: predicted occupancy = the driver's blocks per SM × the block's warps over the SM's warp slots, before anything runs; achieved occupancy = the warps ncu saw resident, averaged over the SM's active cycles (for a job of several launches, over all of them); the limiter is gpu-lab's occupancy model (src/occupancy.rs: warp slots, block slots, registers allocated per warp in units of 256 from each quarter of the register file, shared memory with the driver's reservation per block, 1 KiB since Ampere), its blocks beside the driver's where they differ; local B/thread = local memory per thread, where spilled registers go.\n\n");
        }
        out.push_str("Legend: median of per-run times; GB/s = the suite's bytes expression over the median; % of copy = over the better of a device-to-device memcpy and a copy kernel of the same bytes, measured in this run; speedup over the first correct variant of the table (by GB/s where the two move different amounts of bytes; variants that are not checked or impossible are never ranked); `n/a` = not applicable (for example no shared-memory loads at all); `–` = not measured.\n");
        if run.jobs.iter().any(|j| j.host_link) {
            out.push_str("`host link` in % of copy and % of peak: a host program whose bytes cross the host link, judged against the host link in its group's host-programs section, not against DRAM.\n");
        }
        Ok(out)
    }
}
