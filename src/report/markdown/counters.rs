//! The markdown report of a run with counters and no timed job (`profile --counters-only`): one table of every job's metrics, in the order they were profiled.

use std::fmt::Write;

use super::cells::{cell_text, metric_header, table};
use crate::metrics::{self, MetricDef};
use crate::records::{ProfileRecord, RunData};

/// Whether the run holds counters but no timed job: `profile --counters-only`.
pub(super) fn counters_only(run: &RunData) -> bool {
    run.jobs.is_empty() && !run.profiles.is_empty()
}

/// The table of every profiled job (by id, which names the shape after its `@`): its metrics,
/// which profiler collected them, and its error where it has one.
pub(super) fn section(run: &RunData, metrics: &[MetricDef], out: &mut String) {
    if !counters_only(run) {
        return;
    }
    let _ = writeln!(
        out,
        "## Counters (no job timed or checked: `--counters-only`)\n"
    );
    let mut header = vec!["job".to_string()];
    header.extend(metrics.iter().map(metric_header));
    header.push("profiler".into());
    let mut rows = vec![header];
    let mut records: Vec<&ProfileRecord> = run.profiles.values().collect();
    records.sort_by(|a, b| a.job_id.cmp(&b.job_id));
    for p in records {
        let mut row = vec![cell_text(&p.job_id)];
        row.extend(metrics.iter().map(|m| match p.metrics.get(&m.name) {
            Some(Some(v)) => metrics::format_value(m, *v),
            Some(None) => match p.not_applicable.get(&m.name) {
                Some(why) => format!("n/a ({})", cell_text(why)),
                None => "n/a".into(),
            },
            None => "–".into(),
        }));
        row.push(match (&p.error, &p.profiler) {
            (Some(e), _) => format!("error: {}", cell_text(e)),
            (None, Some(who)) => cell_text(who),
            (None, None) => "ncu".into(),
        });
        rows.push(row);
    }
    out.push_str(&table(rows));
    out.push_str("\n\n");
}
