//! The markdown report's header: the run's title, then a table of the GPU, driver, CUDA, clocks, policy, ncu, date, command, compilers and timing method, and links to the run's charts.

use std::fmt::Write;

use super::cells::{is_compute, table};
use crate::records::{RunData, RunInfo};

type Rows = Vec<Vec<String>>;

/// One row of the header's two-column table.
fn kv(rows: &mut Rows, k: &str, v: String) {
    rows.push(vec![k.to_string(), v]);
}

pub(super) fn header(run: &RunData, out: &mut String) {
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
    device_rows(i, &mut rows);
    setting_rows(run, &mut rows);
    build_rows(run, &mut rows);
    if super::counters::counters_only(run) {
        kv(
            &mut rows,
            "timing",
            "none: counters only (`--counters-only`), no job timed or checked".into(),
        );
        if let Some(w) = i.wall_seconds {
            kv(&mut rows, "wall time", format!("{w:.0} s"));
        }
    } else {
        timing_rows(i, &mut rows);
    }
    out.push_str(&table(rows));
    let _ = write!(
        out,
        "\n\n{}: [chart.svg](chart.svg).\n\n",
        i.timing.cache.marked("Chart of every table below")
    );
    if run.jobs.iter().any(is_compute) && run.judges_by_math() {
        out.push_str("Roofline of the jobs that declare flops (a roof for each math they declare, and the copy bound, measured in this run): [roofline.svg](roofline.svg).\n\n");
    } else if run.jobs.iter().any(is_compute) {
        out.push_str("Roofline of the jobs that declare flops (FP32 peak and copy bound measured in this run): [roofline.svg](roofline.svg).\n\n");
    }
}

/// The GPU (or GPUs) the run used, its driver, peak bandwidth and clocks; or why it is unknown.
fn device_rows(i: &RunInfo, rows: &mut Rows) {
    let Some(d) = &i.device else {
        kv(
            rows,
            "GPU",
            format!(
                "unknown: {}",
                i.nvml_error
                    .clone()
                    .unwrap_or_else(|| "NVML gave no information".into())
            ),
        );
        return;
    };
    kv(
        rows,
        "GPU",
        format!(
            "{} (CC {}, {} GiB, {}-bit bus)",
            d.name,
            d.compute_capability,
            d.memory_total_bytes >> 30,
            d.bus_width_bits
        ),
    );
    kv(rows, "UUID", d.uuid.clone());
    if i.gpus.len() > 1 {
        let each: Vec<String> = i
            .gpus
            .iter()
            .map(|g| format!("GPU {}: {} ({})", g.index, g.name, g.uuid))
            .collect();
        kv(
            rows,
            "GPUs (`--gpus`: jobs spread over them, one at a time per GPU)",
            each.join("; "),
        );
    }
    kv(
        rows,
        "driver / CUDA",
        format!("{} / {}", d.driver, d.cuda_driver),
    );
    kv(
        rows,
        "peak DRAM bandwidth (NVML: 2 × memory clock × bus width)",
        format!("{:.0} GB/s", d.peak_bandwidth_gbs),
    );
    kv(
        rows,
        "max clocks",
        format!(
            "SM {} MHz, memory {} MHz",
            d.max_sm_clock_mhz, d.max_mem_clock_mhz
        ),
    );
}

/// The clocks seen and their policy, ncu, what it could not collect, the date, command and sources.
fn setting_rows(run: &RunData, rows: &mut Rows) {
    let i = &run.info;
    kv(
        rows,
        "clocks seen (NVML, before and after each job)",
        run.clocks_seen(),
    );
    let policy = if i.clock_policy == "none" {
        "the card is measured as found"
    } else {
        "ncu locked the clocks while profiling"
    };
    kv(
        rows,
        "clock policy",
        format!(
            "{} (ncu --clock-control {}; {policy})",
            i.clock_policy, i.clock_policy
        ),
    );
    kv(
        rows,
        "ncu",
        i.ncu_version
            .clone()
            .unwrap_or_else(|| "not used (`gpu-lab run`)".into()),
    );
    if !i.unavailable_metrics.is_empty() {
        kv(
            rows,
            "metrics this GPU cannot collect",
            i.unavailable_metrics.join("; "),
        );
    }
    if let Some(build) = &i.build {
        kv(
            rows,
            "gpu-lab",
            format!("{} ({})", i.gpu_lab_version, build.describe()),
        );
    }
    kv(rows, "date", i.started.clone());
    kv(rows, "command", format!("`{}`", i.command));
    kv(
        rows,
        "suite source sha256",
        i.suite_source_hash.chars().take(16).collect(),
    );
}

/// Which compiler built which variants, the samples left out, and how the jobs were timed (runs
/// before these were recorded have neither compilers nor methods).
fn build_rows(run: &RunData, rows: &mut Rows) {
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
            rows,
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
            rows,
            "samples left out",
            format!(
                "{excluded} samples of {jobs} jobs, taken while the GPU throttled or below {:.0}% of the job's highest SM clock (NVML after every sample), are not in the medians",
                crate::records::CLOCK_FLOOR * 100.0
            ),
        );
    }
    if let Some((k, v)) = super::energy::header_row(run) {
        kv(rows, &k, v);
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
        [(m, _)] => kv(rows, "timing method", format!("{m} (every job)")),
        _ => kv(
            rows,
            "timing method",
            methods
                .iter()
                .map(|(m, labels)| format!("{m}: {}", labels.join(", ")))
                .collect::<Vec<_>>()
                .join("; "),
        ),
    }
}

/// The timing settings and the run's wall time.
fn timing_rows(i: &RunInfo, rows: &mut Rows) {
    kv(
        rows,
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
        kv(rows, "wall time", format!("{w:.0} s"));
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
