//! The records of one or many runs as one polars DataFrame, built by joins: jobs ⋈ timings ⋈ NVML snapshots ⋈ bounds ⋈ device ⋈ counters; and the views built from it (pure).
//!
//! The frame has one row per job of each run; its columns, their types and meanings are in
//! docs/frame.md (for users who load `results.csv` into polars or pandas; a test keeps the two
//! in step). Only the `csv` feature of polars is used: eager joins, filters and group-bys need no
//! more, and `lazy` (the only way to polars' own pivot) would double the dependency tree.

mod tables;

use polars::prelude::*;

use crate::records::RunData;
use tables::{bounds, counters, environments, jobs, snapshots, timings};

/// The fixed columns, in order (the metric columns follow).
pub const COLUMNS: [&str; 40] = [
    "run",
    "job_id",
    "variant",
    "params",
    "group",
    "status",
    "verified",
    "bytes",
    "flops",
    "launches",
    "sanitized",
    "median_ms",
    "ci_low_ms",
    "ci_high_ms",
    "samples",
    "sm_clock_mhz",
    "mem_clock_mhz",
    "temperature_c",
    "power_w",
    "throttled",
    "bounds_bytes",
    "copy_gbs",
    "memcpy_gbs",
    "copy_kernel_gbs",
    "suite",
    "gpu",
    "gpu_uuid",
    "driver",
    "cuda",
    "ncu",
    "clock_policy",
    "cache",
    "seed",
    "started",
    "peak_gbs",
    "mock",
    "gbs",
    "gflops",
    "pct_of_copy",
    "pct_of_peak",
];

/// Prefix of the metric columns.
pub const METRIC_PREFIX: &str = "metric.";

fn left(a: &DataFrame, b: &DataFrame, on: &[&str]) -> PolarsResult<DataFrame> {
    a.join(
        b,
        on.iter().copied(),
        on.iter().copied(),
        JoinArgs::new(JoinType::Left),
        None,
    )
}

fn f64_of(df: &DataFrame, name: &str) -> PolarsResult<Float64Chunked> {
    Ok(df.column(name)?.cast(&DataType::Float64)?.f64()?.clone())
}

/// `num / den * scale` where both are present and `den > 0`, else null.
fn ratio(df: &DataFrame, num: &str, den: &str, scale: f64, name: &str) -> PolarsResult<Column> {
    let (n, d) = (f64_of(df, num)?, f64_of(df, den)?);
    let out: Float64Chunked = n
        .iter()
        .zip(d.iter())
        .map(|(n, d)| Some(n? / d.filter(|d| *d > 0.0)? * scale))
        .collect();
    Ok(out.with_name(name.into()).into_column())
}

/// The frame of `runs` (label, run), in run order and each run's job order: see the module's table.
/// Labels must be distinct (they are the join key of a run).
pub fn results(runs: &[(&str, &RunData)]) -> PolarsResult<DataFrame> {
    for (i, (label, _)) in runs.iter().enumerate() {
        if runs[..i].iter().any(|(l, _)| l == label) {
            polars_bail!(InvalidOperation: "run label `{label}` is given twice");
        }
    }
    let mut df = left(&jobs(runs)?, &timings(runs)?, &["run", "job_id"])?;
    df = left(&df, &snapshots(runs)?, &["run", "job_id"])?;
    df = left(&df, &bounds(runs)?, &["run", "job_id"])?;
    df = left(&df, &environments(runs)?, &["run"])?;
    // Throughput: work over the median (ms -> s, units -> giga-units).
    let per_second = |work: &str, name: &str| -> PolarsResult<Column> {
        let (w, t) = (f64_of(&df, work)?, f64_of(&df, "median_ms")?);
        let out: Float64Chunked = w
            .iter()
            .zip(t.iter())
            .map(|(w, t)| {
                Some(crate::records::per_second_g(
                    w.filter(|w| *w > 0.0)?,
                    t.filter(|t| *t > 0.0)?,
                ))
            })
            .collect();
        Ok(out.with_name(name.into()).into_column())
    };
    let (gbs, gflops) = (per_second("bytes", "gbs")?, per_second("flops", "gflops")?);
    df.with_column(gbs)?;
    df.with_column(gflops)?;
    let (pct_copy, pct_peak) = (
        ratio(&df, "gbs", "copy_gbs", 100.0, "pct_of_copy")?,
        ratio(&df, "gbs", "peak_gbs", 100.0, "pct_of_peak")?,
    );
    df.with_column(pct_copy)?;
    df.with_column(pct_peak)?;
    df = df.select(COLUMNS)?;
    // Counters long -> wide: one join per metric (a pivot by joins, in the runs' metric order).
    let long = counters(runs)?;
    let mut names: Vec<String> = Vec::new();
    for (_, r) in runs {
        for m in r
            .info
            .metrics
            .iter()
            .map(|m| m.name.clone())
            .chain(r.profiles.values().flat_map(|p| p.metrics.keys().cloned()))
        {
            if !names.contains(&m) {
                names.push(m);
            }
        }
    }
    for name in names {
        let mask = long.column("metric")?.str()?.equal(name.as_str());
        let mut one = long.filter(&mask)?.select(["run", "job_id", "value"])?;
        one.rename("value", format!("{METRIC_PREFIX}{name}").into())?;
        df = left(&df, &one, &["run", "job_id"])?;
    }
    Ok(df)
}

/// A text cell a spreadsheet must not read as a formula (names come from stored files, which an
/// old run or an edited one may hold): one starting with `=`, `+`, `-`, `@`, a tab or a carriage
/// return gets a leading `'`. The csv writers quote commas, quotes and newlines.
pub fn spreadsheet_safe(text: &str) -> String {
    if text.starts_with(['=', '+', '-', '@', '\t', '\r']) {
        format!("'{text}")
    } else {
        text.to_string()
    }
}

/// The frame as CSV (header first; an empty field is null).
pub fn to_csv(df: &DataFrame) -> PolarsResult<String> {
    let mut buf = Vec::new();
    // Text columns hold names from stored files: no cell may reach a spreadsheet as a formula.
    let mut safe = df.clone();
    for name in df.get_column_names_owned() {
        let column = df.column(&name)?;
        if column.dtype() == &DataType::String {
            let cells: Vec<Option<String>> = column
                .str()?
                .iter()
                .map(|c| c.map(spreadsheet_safe))
                .collect();
            safe.replace(&name, Column::new(name.clone(), cells))?;
        }
    }
    CsvWriter::new(&mut buf)
        .include_header(true)
        .finish(&mut safe)?;
    Ok(String::from_utf8_lossy(&buf).into_owned())
}

/// Runs side by side, one row per job of the first run (then jobs only later runs have): for
/// each run its median, its % of copy and the median's ratio to the first run's. A pivot of the
/// frame by joins.
pub fn side_by_side(frame: &DataFrame, labels: &[&str]) -> PolarsResult<DataFrame> {
    let runs = frame.column("run")?.str()?.clone();
    let of_run = |label: &str| frame.filter(&runs.equal(label));
    let mut keys =
        of_run(labels.first().copied().unwrap_or_default())?.select(["job_id", "group"])?;
    for label in labels.iter().skip(1) {
        let more = of_run(label)?.select(["job_id", "group"])?;
        let known = keys.column("job_id")?.str()?.clone();
        let new_ids = more
            .column("job_id")?
            .str()?
            .iter()
            .map(|id| id.is_some_and(|id| !known.iter().any(|k| k == Some(id))))
            .collect::<BooleanChunked>();
        keys = keys.vstack(&more.filter(&new_ids)?)?;
    }
    let mut wide = keys;
    for (i, label) in labels.iter().enumerate() {
        let mut one = of_run(label)?.select(["job_id", "median_ms", "pct_of_copy", "status"])?;
        for c in ["median_ms", "pct_of_copy", "status"] {
            one.rename(c, format!("{c} {}", i + 1).into())?;
        }
        wide = left(&wide, &one, &["job_id"])?;
        if i > 0 {
            let ratio = ratio(
                &wide,
                &format!("median_ms {}", i + 1),
                "median_ms 1",
                1.0,
                &format!("time ratio {}/1", i + 1),
            )?;
            wide.with_column(ratio)?;
        }
    }
    Ok(wide)
}

/// Per run: jobs, correct jobs, the median and the best % of copy over the correct jobs (a group-by of the frame).
// polars marks its eager aggregations deprecated in favour of the lazy API, which would double
// the build (docs/design-notes.md): the eager ones are what this small frame needs.
#[allow(deprecated)]
pub fn run_summary(frame: &DataFrame) -> PolarsResult<DataFrame> {
    let correct = frame.column("status")?.str()?.equal("ok");
    let ok = frame.filter(&correct)?;
    let jobs = frame.group_by_stable(["run"])?.select(["job_id"]).count()?;
    let mut correct_jobs = ok.group_by_stable(["run"])?.select(["job_id"]).count()?;
    correct_jobs.rename("job_id_count", "correct".into())?;
    let median = ok
        .group_by_stable(["run"])?
        .select(["pct_of_copy"])
        .median()?;
    let best = ok.group_by_stable(["run"])?.select(["pct_of_copy"]).max()?;
    let mut out = left(&jobs, &correct_jobs, &["run"])?;
    out = left(&out, &median, &["run"])?;
    out = left(&out, &best, &["run"])?;
    out.rename("job_id_count", "jobs".into())?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn committed(name: &str) -> RunData {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/runs")
            .join(name);
        crate::store::load_run(&dir).unwrap().0
    }

    const H200: &str = "20261122T044759Z-transpose-h200";

    #[test]
    fn names_that_a_spreadsheet_reads_as_formulas_are_prefixed() {
        assert_eq!(spreadsheet_safe("=HYPERLINK(\"x\")"), "'=HYPERLINK(\"x\")");
        assert_eq!(spreadsheet_safe("@SUM(A1)"), "'@SUM(A1)");
        assert_eq!(spreadsheet_safe("-1+2"), "'-1+2");
        assert_eq!(spreadsheet_safe("tiled"), "tiled");
    }

    #[test]
    fn a_job_of_a_run_over_two_gpus_is_divided_by_its_own_gpus_copy_bound() {
        let mut run = committed(H200);
        let group = run.jobs[0].group().to_string();
        let mut slower = run.bounds[&group].clone();
        for s in [&mut slower.memcpy, &mut slower.copy_kernel]
            .into_iter()
            .flatten()
        {
            s.median *= 2.0;
        }
        slower.gpu = Some("GPU-b".into());
        run.jobs[0].gpu = Some("GPU-b".into());
        run.gpu_bounds
            .insert((group.clone(), "GPU-b".into()), slower.clone());
        let df = results(&[("two", &run)]).unwrap();
        let pct = df.column("pct_of_copy").unwrap().f64().unwrap().clone();
        for (i, j) in run
            .jobs
            .iter()
            .enumerate()
            .filter(|(_, j)| j.group() == group)
        {
            let own = run.bound_of(j).unwrap().copy_gbs().unwrap();
            let want = 100.0 * j.gbs().unwrap() / own;
            assert!((pct.get(i).unwrap() - want).abs() < 1e-9, "{}", j.id());
        }
        let first = 100.0 * run.jobs[0].gbs().unwrap() / slower.copy_gbs().unwrap();
        assert!((pct.get(0).unwrap() - first).abs() < 1e-9);
    }
    const H100: &str = "20261122T042230Z-transpose-h100-80gb-hbm3";

    #[test]
    fn the_frame_has_a_row_per_job_and_the_reports_numbers() {
        let run = committed(H200);
        let df = results(&[("h200", &run)]).unwrap();
        assert_eq!(df.height(), run.jobs.len());
        let names: Vec<String> = df
            .get_column_names()
            .iter()
            .map(|n| n.to_string())
            .collect();
        assert_eq!(&names[..COLUMNS.len()], &COLUMNS.map(String::from)[..]);
        let ids = df.column("job_id").unwrap().str().unwrap().clone();
        let pct = df.column("pct_of_copy").unwrap().f64().unwrap().clone();
        let gld = df
            .column("metric.gld_efficiency")
            .unwrap()
            .f64()
            .unwrap()
            .clone();
        for (i, j) in run.jobs.iter().enumerate() {
            assert_eq!(ids.get(i), Some(j.id()), "job order is the run's");
            let want = 100.0 * j.gbs().unwrap() / run.bounds[j.group()].copy_gbs().unwrap();
            assert!((pct.get(i).unwrap() - want).abs() < 1e-9);
            assert_eq!(
                gld.get(i),
                run.profiles[j.id()]
                    .metrics
                    .get("gld_efficiency")
                    .copied()
                    .flatten()
            );
        }
        let csv = to_csv(&df).unwrap();
        assert_eq!(csv.lines().count(), 1 + run.jobs.len());
        assert!(csv.starts_with("run,job_id,variant,params,group,status,verified,bytes"));
    }

    #[test]
    fn every_row_says_the_l2_state_its_run_was_timed_in() {
        let warm = committed(H200);
        let mut cold = warm.clone();
        cold.info.timing.cache = crate::records::CacheState::Cold;
        let df = results(&[("warm", &warm), ("cold", &cold)]).unwrap();
        let runs = df.column("run").unwrap().str().unwrap().clone();
        let cache = df.column("cache").unwrap().str().unwrap().clone();
        assert_eq!(df.height(), 2 * warm.jobs.len());
        for i in 0..df.height() {
            assert_eq!(cache.get(i), runs.get(i), "row {i}");
        }
    }

    #[test]
    fn docs_frame_md_documents_every_column() {
        let doc = include_str!("../../docs/frame.md");
        for c in COLUMNS {
            assert!(
                doc.contains(&format!("| `{c}` |")),
                "docs/frame.md lacks `{c}`"
            );
        }
    }

    #[test]
    fn two_runs_side_by_side_and_summarised() {
        let (a, b) = (committed(H200), committed(H100));
        let df = results(&[("h200", &a), ("h100", &b)]).unwrap();
        assert_eq!(df.height(), a.jobs.len() + b.jobs.len());
        let wide = side_by_side(&df, &["h200", "h100"]).unwrap();
        assert_eq!(wide.height(), 92);
        let ratio = wide
            .column("time ratio 2/1")
            .unwrap()
            .f64()
            .unwrap()
            .clone();
        let (m1, m2) = (
            wide.column("median_ms 1").unwrap().f64().unwrap().clone(),
            wide.column("median_ms 2").unwrap().f64().unwrap().clone(),
        );
        for i in 0..wide.height() {
            assert!(
                (ratio.get(i).unwrap() - m2.get(i).unwrap() / m1.get(i).unwrap()).abs() < 1e-12
            );
        }
        let summary = run_summary(&df).unwrap();
        assert_eq!(summary.height(), 2);
        assert_eq!(
            summary
                .column("jobs")
                .unwrap()
                .cast(&DataType::UInt64)
                .unwrap()
                .u64()
                .unwrap()
                .get(0),
            Some(92)
        );
    }
}
