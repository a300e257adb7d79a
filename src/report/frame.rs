//! The run as the polars frame of `frame.rs`: `results.csv` (one row per job, every column joined in), and the markdown of several runs side by side (pure).

use std::fmt::Write;

use polars::prelude::DataFrame;

use super::exporter::Exporter;
use super::markdown::table;
use crate::frame;
use crate::records::{CacheState, RunData};

pub struct Results;

impl Exporter<RunData> for Results {
    fn file_name(&self) -> &'static str {
        "results.csv"
    }

    fn render(&self, run: &RunData) -> anyhow::Result<String> {
        // A run's own frame is labelled by when it started (its directory is not known here).
        Ok(frame::to_csv(&frame::results(&[(
            run.info.started.as_str(),
            run,
        )])?)?)
    }
}

fn cell(df: &DataFrame, column: &str, row: usize) -> String {
    match df.column(column).and_then(|c| c.get(row)) {
        Ok(v) if v.is_null() => "–".into(),
        Ok(v) => match v.extract::<f64>() {
            Some(x) if column.starts_with("median_ms") => format!("{x:.4}"),
            Some(x) if column.starts_with("pct_of_copy") => format!("{x:.0}%"),
            Some(x) => format!("{x:.3}"),
            None => v
                .get_str()
                .map(str::to_string)
                .unwrap_or_else(|| v.to_string()),
        },
        Err(_) => "–".into(),
    }
}

fn cache_word(cache: CacheState) -> &'static str {
    match cache {
        CacheState::Cold => "L2 cold",
        CacheState::Warm => "**L2 warm**",
    }
}

/// What the L2 was when the runs were timed: "cold" only where every run was.
fn cache_line(runs: &[&RunData]) -> String {
    let warm = runs
        .iter()
        .filter(|r| r.info.timing.cache == CacheState::Warm)
        .count();
    if warm == 0 {
        format!("Every run: {}.", CacheState::Cold.describe())
    } else if warm == runs.len() {
        format!("Every run: {}.", CacheState::Warm.describe())
    } else {
        format!(
            "**Mixed L2 states**: {warm} of {} runs were timed L2 warm (their median columns say so), the others cold; warm medians include what L2 kept between launches, so a time ratio between a warm and a cold run is not the code's change.",
            runs.len()
        )
    }
}

/// `runs` side by side (`frame::side_by_side`), with a line per run saying what it is.
pub fn side_by_side_markdown(
    frame: &DataFrame,
    labels: &[&str],
    runs: &[&RunData],
) -> anyhow::Result<String> {
    let wide = frame::side_by_side(frame, labels)?;
    let summary = frame::run_summary(frame)?;
    let mut out = String::from("# gpu-lab compare\n\n");
    for (i, (label, run)) in labels.iter().zip(runs).enumerate() {
        let gpu = run.info.gpu_name();
        let mock = if run.info.mock {
            " — **MOCK: stand-in numbers, not measurements**"
        } else {
            ""
        };
        let _ = writeln!(
            out,
            "{}. `{label}`: {} on {gpu}, {}, {}{mock}",
            i + 1,
            run.info.suite,
            run.info.started,
            cache_word(run.info.timing.cache)
        );
    }
    let _ = writeln!(out, "\n{}", cache_line(runs));
    let mut rows = vec![vec![
        "run".to_string(),
        "jobs".into(),
        "correct".into(),
        "median % of copy".into(),
        "best % of copy".into(),
    ]];
    for r in 0..summary.height() {
        rows.push(
            [
                "run",
                "jobs",
                "correct",
                "pct_of_copy_median",
                "pct_of_copy_max",
            ]
            .iter()
            .map(|c| cell(&summary, c, r).replace("%", ""))
            .collect(),
        );
    }
    let _ = writeln!(out, "\n{}\n", table(rows));
    let mut head = vec!["job".to_string()];
    for (i, run) in (1..=labels.len()).zip(runs) {
        // Every warm timing says so where it is shown: a column of warm medians is named warm.
        head.push(run.info.timing.cache.marked(&format!("median ms {i}")));
        head.push(format!("% of copy {i}"));
        if i > 1 {
            head.push(format!("time {i}/1"));
        }
    }
    let mut rows = vec![head];
    for r in 0..wide.height() {
        let mut row = vec![format!("`{}`", cell(&wide, "job_id", r))];
        for i in 1..=labels.len() {
            let status = cell(&wide, &format!("status {i}"), r);
            let median = cell(&wide, &format!("median_ms {i}"), r);
            row.push(if status == "ok" || status == "–" {
                median
            } else {
                format!("{median} ({status})")
            });
            row.push(cell(&wide, &format!("pct_of_copy {i}"), r));
            if i > 1 {
                row.push(cell(&wide, &format!("time ratio {i}/1"), r));
            }
        }
        rows.push(row);
    }
    let _ = writeln!(out, "{}\n", table(rows));
    out.push_str("Legend: median time per run of the variant; % of copy = over the copy bound measured in that run; time i/1 = median of run i over run 1 (below 1: faster). Side by side only: `gpu-lab check` gives verdicts.\n");
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(cache: CacheState) -> RunData {
        let mut r = RunData::default();
        r.info.timing.cache = cache;
        r
    }

    #[test]
    fn cold_is_said_only_where_every_run_is_cold_and_warm_runs_are_named() {
        let (cold, warm) = (run(CacheState::Cold), run(CacheState::Warm));
        assert!(cache_line(&[&cold, &cold]).starts_with("Every run: L2 cold"));
        assert!(cache_line(&[&warm]).starts_with("Every run: L2 warm"));
        let mixed = cache_line(&[&cold, &warm]);
        assert!(
            mixed.contains("1 of 2 runs were timed L2 warm") && !mixed.contains("Every run"),
            "{mixed}"
        );
        assert_eq!(cache_word(CacheState::Warm), "**L2 warm**");
    }
}
