//! The cells and table layout that several sections of the markdown report share: the table itself, a job's timing, correctness and speedup, and its metric values.

use crate::metrics::{self, MetricDef};
use crate::records::{Impossible, JobRecord, JobStatus, RunData};

/// A markdown table of rows of cells, the first row its header; each cell made safe for a table
/// row (`cell_text`): names from stored files (a GPU name, an old run's variant) may hold anything.
/// Cells are not padded to their column's width: a renderer aligns them, and padding made the
/// committed example reports half whitespace (1.27 MB of 2.27 MB, measured 2026-11-26).
pub(crate) fn table(rows: Vec<Vec<String>>) -> String {
    let mut lines = Vec::with_capacity(rows.len() + 1);
    for (i, row) in rows.iter().enumerate() {
        let cells: Vec<String> = row.iter().map(|c| cell_text(c)).collect();
        lines.push(format!("| {} |", cells.join(" | ")));
        if i == 0 {
            lines.push(format!("|{}|", vec!["---"; cells.len()].join("|")));
        }
    }
    lines.join("\n")
}

/// A cell's text kept to one table row: an unescaped `|` escaped, a newline, carriage return or
/// other control character a space, and the noncharacters U+FFFE/U+FFFF the replacement character.
pub(crate) fn cell_text(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut escaped = false;
    for c in text.chars() {
        match c {
            '|' if !escaped => out.push_str("\\|"),
            c if c.is_control() => out.push(' '),
            '\u{fffe}' | '\u{ffff}' => out.push('\u{fffd}'),
            c => out.push(c),
        }
        escaped = c == '\\' && !escaped;
    }
    out
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
pub(crate) fn speedup(first: &JobRecord, j: &JobRecord) -> Option<f64> {
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

pub(crate) fn pct(a: Option<f64>, b: Option<f64>) -> String {
    match (a, b) {
        (Some(a), Some(b)) if b > 0.0 => format!("{:.0}%", 100.0 * a / b),
        _ => "–".into(),
    }
}

/// The speedup reference of a table: its first ranked job with a timing.
pub(crate) fn reference<'a>(
    run: &RunData,
    imp: &Impossible,
    jobs: &[&'a JobRecord],
) -> Option<&'a JobRecord> {
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
pub(super) fn speedup_cell(
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
pub(super) fn metric_header(m: &MetricDef) -> String {
    match m.ideal {
        Some(_) => format!("{} (ideal {})", m.name, metrics::format_ideal(m)),
        None => m.name.clone(),
    }
}

/// A job's value of each metric: `n/a` where undefined, `–` where not measured.
pub(super) fn metric_cells(run: &RunData, j: &JobRecord, metrics: &[MetricDef]) -> Vec<String> {
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

#[cfg(test)]
mod cell_tests {
    use super::*;

    #[test]
    fn a_name_with_a_pipe_newline_or_control_character_keeps_a_table_row_whole() {
        let hostile = "a|b\nc\rd\u{7}e\u{fffe}\u{ffff}";
        let t = table(vec![
            vec!["GPU".into(), "variant".into()],
            vec![hostile.into(), "v".into()],
        ]);
        let lines: Vec<&str> = t.lines().collect();
        assert_eq!(lines.len(), 3, "{t}");
        for l in lines {
            // Columns: the unescaped pipes, less the two at the ends.
            let cols = l
                .char_indices()
                .filter(|&(i, c)| c == '|' && (i == 0 || l.as_bytes()[i - 1] != b'\\'))
                .count()
                - 1;
            assert_eq!(cols, 2, "{l}");
            assert!(
                !l.contains(['\u{fffe}', '\u{ffff}', '\r', '\u{7}']),
                "{l:?}"
            );
        }
        assert_eq!(cell_text("already \\| escaped"), "already \\| escaped");
    }
}
