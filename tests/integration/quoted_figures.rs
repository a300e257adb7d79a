//! Every figure the docs quote from a run, recomputed from that run's `results.jsonl` through gpu-lab's own record parsing (`docs/quoted-figures.toml`): prose that drifts from its data fails here.

use std::collections::BTreeMap;
use std::path::Path;

use gpu_lab::records::{HostLinkBounds, JobRecord, RunData};
use serde::Deserialize;

use crate::common::repo;

/// One figure as a document prints it, and where its value comes from.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Figure {
    /// The document, from the repository root (its `[[doc]]`'s).
    #[serde(default)]
    file: String,
    /// A piece of the document's text that holds the figure (to find it, and to keep it in context).
    text: String,
    /// The figure as printed, inside `text`; its decimals are the rounding it is compared at.
    quoted: String,
    /// The run directory, from the repository root (its `[[doc]]`'s).
    #[serde(default)]
    run: String,
    /// The job id (`variant[PARAMS] @ group`); the run-wide fields need none.
    #[serde(default)]
    job: Option<String>,
    /// What is recomputed: see `value`.
    field: String,
    /// The other job of a `speedup` (its median over this job's) or a `pct_of_job`.
    #[serde(default)]
    other: Option<String>,
    /// The metric of a `metric` field.
    #[serde(default)]
    metric: Option<String>,
    /// The copy of a `host_gbs` field: h2d_pinned, d2h_pinned, bidirectional_pinned (the bytes of
    /// both ways), h2d_pageable or d2h_pageable, of the job's group's host-link bounds.
    #[serde(default)]
    link: Option<String>,
    /// The launch of a job's occupancy table the `registers`, `local_bytes`, `blocks_per_sm` and
    /// `predicted_occupancy` fields read (0: the first).
    #[serde(default)]
    launch: usize,
}

/// The figures one document quotes from one run.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Doc {
    file: String,
    run: String,
    figure: Vec<Figure>,
}

#[derive(Debug, Deserialize)]
struct Figures {
    doc: Vec<Doc>,
}

impl Figures {
    /// Every figure with its document and run filled in.
    fn flattened(self) -> Vec<Figure> {
        self.doc
            .into_iter()
            .flat_map(|d| {
                let (file, run) = (d.file, d.run);
                d.figure.into_iter().map(move |f| Figure {
                    file: file.clone(),
                    run: run.clone(),
                    ..f
                })
            })
            .collect()
    }
}

fn job<'a>(run: &'a RunData, id: &str, where_: &str) -> Result<&'a JobRecord, String> {
    run.jobs
        .iter()
        .find(|j| j.id() == id)
        .ok_or_else(|| format!("{where_}: no job `{id}` in the run"))
}

fn median(j: &JobRecord) -> Option<f64> {
    j.summary.map(|s| s.median)
}

/// The figure's value, recomputed from its run.
fn value(f: &Figure, run: &RunData) -> Result<f64, String> {
    let at = format!("{} `{}`", f.file, f.quoted);
    let all = || run.jobs.iter();
    let field = f.field.as_str();
    match field {
        "jobs" => return Ok(all().count() as f64),
        "jobs_correct" => {
            return Ok(all()
                .filter(|j| j.correctness.as_ref().is_some_and(|c| c.passed))
                .count() as f64);
        }
        "jobs_unchecked" => return Ok(all().filter(|j| j.correctness.is_none()).count() as f64),
        _ => {}
    }
    let id = f
        .job
        .as_deref()
        .ok_or(format!("{at}: `{field}` needs a job"))?;
    // A counter's value is the job's profile record: a `--counters-only` run has no job records.
    if let Some(scale) = metric_scale(field) {
        let name = f.metric.as_deref().ok_or(format!("{at}: needs `metric`"))?;
        return run
            .profiles
            .get(id)
            .and_then(|p| p.metrics.get(name).copied().flatten())
            .map(|v| v * scale)
            .ok_or_else(|| format!("{at}: the run has no `{field}` for `{id}`"));
    }
    let j = job(run, id, &at)?;
    let other = || -> Result<&JobRecord, String> {
        job(
            run,
            f.other.as_deref().ok_or(format!("{at}: needs `other`"))?,
            &at,
        )
    };
    let copy = || run.bound_of(j).and_then(|b| b.copy_gbs());
    let got = match field {
        "median_ms" => median(j),
        "median_us" => median(j).map(|m| m * 1e3),
        "gbs" => j.gbs(),
        "gflops" => j.gflops(),
        "tflops" => j.gflops().map(|g| g / 1e3),
        "pct_of_copy" => j.gbs().zip(copy()).map(|(g, c)| 100.0 * g / c),
        "copy_gbs" => copy(),
        "memcpy_gbs" => run.bound_of(j).and_then(|b| b.memcpy_gbs()),
        "copy_kernel_gbs" => run.bound_of(j).and_then(|b| b.kernel_gbs()),
        // The group's FP32 peak (SMs x lanes x 2 x clock) and the multiply-add kernel it is read off.
        "fp32_peak_tflops" => run.fp32_peak(j.group()).map(|(g, _, _)| g / 1e3),
        "fma_kernel_tflops" => run
            .bounds
            .get(j.group())
            .and_then(|b| b.fma.as_ref())
            .map(|f| f.gflops() / 1e3),
        "cublas_tflops" => run
            .compute_bound_gflops(j)
            .and_then(|(_, g)| g)
            .map(|g| g / 1e3),
        "pct_of_cublas" => j
            .gflops()
            .zip(run.compute_bound_gflops(j).and_then(|(_, g)| g))
            .map(|(g, c)| 100.0 * g / c),
        "speedup" => median(other()?).zip(median(j)).map(|(o, m)| o / m),
        "pct_of_job" => j.gbs().zip(other()?.gbs()).map(|(a, b)| 100.0 * a / b),
        "host_gbs" => host_gbs(f, run, j, &at)?,
        // The `function` check's largest error in ulp, before timing and after it (another seed).
        "max_ulp" => j.correctness.as_ref().and_then(|c| c.max_ulp),
        "max_ulp_after" => j.correctness_after.as_ref().and_then(|c| c.max_ulp),
        // A tolerance check's relative L2 error, in its output type's epsilon, and worst element.
        "rel_error" => j.correctness.as_ref().map(|c| c.rel_error),
        "error_eps" => j.correctness.as_ref().and_then(|c| c.error_in_eps()),
        "max_error" => j.correctness.as_ref().and_then(|c| c.max_error),
        // One launch's kernel as loaded (the occupancy table's row).
        "registers" => j
            .occupancy
            .get(f.launch)
            .map(|o| f64::from(o.registers_per_thread)),
        "local_bytes" => j
            .occupancy
            .get(f.launch)
            .map(|o| f64::from(o.local_bytes_per_thread)),
        "blocks_per_sm" => j
            .occupancy
            .get(f.launch)
            .and_then(|o| o.active_blocks_per_sm)
            .map(f64::from),
        "predicted_occupancy" => j
            .occupancy
            .get(f.launch)
            .and_then(|o| o.predicted_occupancy_pct),
        // The host-programs table's overlap columns and "transfers % of pinned", of the job's drawn sample.
        "kernel_hidden_pct" => j
            .timeline
            .as_ref()
            .and_then(|t| t.overlap().kernel_hidden_pct()),
        "transfers_pct_of_pinned" => j.timeline.as_ref().and_then(|t| {
            let bound = run.bound_of(j);
            gpu_lab::report::markdown::transfers_pct_of_pinned(
                t,
                bound.and_then(|b| b.host.as_ref()),
                bound.map_or(0, |b| b.bytes),
            )
        }),
        other => return Err(format!("{at}: unknown field `{other}`")),
    };
    got.ok_or_else(|| format!("{at}: the run has no `{field}` for `{id}`"))
}

/// The scale of a metric field (`metric`, `metric_mega`, `metric_giga`); None for other fields.
fn metric_scale(field: &str) -> Option<f64> {
    match field {
        "metric" => Some(1.0),
        "metric_mega" => Some(1e-6),
        "metric_giga" => Some(1e-9),
        _ => None,
    }
}

/// GB/s of one of the host-link copies measured in the same run at the job's group's size.
fn host_gbs(f: &Figure, run: &RunData, j: &JobRecord, at: &str) -> Result<Option<f64>, String> {
    let bound = run
        .bound_of(j)
        .ok_or(format!("{at}: the job has no bounds"))?;
    let host = bound
        .host
        .as_ref()
        .ok_or(format!("{at}: no host link measured"))?;
    let (copy, ways) = match f.link.as_deref() {
        Some("h2d_pinned") => (&host.h2d_pinned, 1.0),
        Some("d2h_pinned") => (&host.d2h_pinned, 1.0),
        Some("bidirectional_pinned") => (&host.bidirectional_pinned, 2.0),
        Some("h2d_pageable") => (&host.h2d_pageable, 1.0),
        Some("d2h_pageable") => (&host.d2h_pageable, 1.0),
        other => return Err(format!("{at}: `host_gbs` needs a `link`, not {other:?}")),
    };
    Ok(HostLinkBounds::gbs(bound.bytes, copy, ways))
}

/// `v` printed as `quoted` is: the same number of decimals (of the mantissa where it is written
/// as `2.82e-4`), thousands separators left out of both.
fn printed_like(v: f64, quoted: &str) -> String {
    let (mantissa, exponent) = quoted.split_once('e').unwrap_or((quoted, ""));
    let decimals = mantissa.split_once('.').map_or(0, |(_, d)| d.len());
    if exponent.is_empty() {
        format!("{v:.decimals$}")
    } else {
        format!("{v:.decimals$e}")
    }
}

fn same_figure(v: f64, quoted: &str) -> bool {
    let plain = quoted.replace(',', "");
    printed_like(v, &plain) == plain
}

#[test]
fn every_quoted_figure_is_its_runs_value_at_the_quoted_rounding() {
    let root = repo();
    let text = std::fs::read_to_string(root.join("docs/quoted-figures.toml")).unwrap();
    let figures = toml::from_str::<Figures>(&text).unwrap().flattened();
    assert!(!figures.is_empty());
    let mut runs: BTreeMap<&str, RunData> = BTreeMap::new();
    let mut docs: BTreeMap<&str, String> = BTreeMap::new();
    let mut wrong = Vec::new();
    for f in &figures {
        let doc = docs
            .entry(&f.file)
            .or_insert_with(|| std::fs::read_to_string(root.join(&f.file)).unwrap());
        // Markdown wraps lines: the text is looked for with its spaces and line breaks as one.
        let flat = doc.split_whitespace().collect::<Vec<_>>().join(" ");
        if !flat.contains(&f.text) {
            wrong.push(format!("{}: the text `{}` is not there", f.file, f.text));
            continue;
        }
        if !f.text.contains(&f.quoted) {
            wrong.push(format!(
                "{}: `{}` is not inside `{}`",
                f.file, f.quoted, f.text
            ));
            continue;
        }
        let run = runs.entry(&f.run).or_insert_with(|| {
            let dir = root.join(&f.run);
            assert!(
                Path::new(&dir).join("results.jsonl").is_file()
                    || Path::new(&dir).join("results.jsonl.gz").is_file(),
                "{}: {} has no results.jsonl",
                f.file,
                f.run
            );
            gpu_lab::store::load_run(&dir).unwrap().0
        });
        match value(f, run) {
            Ok(v) if same_figure(v, &f.quoted) => {}
            Ok(v) => wrong.push(format!(
                "{}: `{}` quotes {} where {} gives {} ({} of `{}`)",
                f.file,
                f.text,
                f.quoted,
                f.run,
                printed_like(v, &f.quoted),
                f.field,
                f.job.as_deref().unwrap_or("the run")
            )),
            Err(e) => wrong.push(e),
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

#[test]
fn a_figure_is_compared_at_the_rounding_it_is_printed_with() {
    assert_eq!(printed_like(93.96, "94"), "94");
    assert_eq!(printed_like(1.914, "1.91"), "1.91");
    assert_ne!(printed_like(127.2, "120.5"), "120.5");
    assert!(same_figure(7_077_924.0, "7,077,924") && !same_figure(7_077_925.0, "7,077,924"));
    assert!(same_figure(2.8239e-4, "2.82e-4") && !same_figure(2.8289e-4, "2.82e-4"));
}
