//! Markdown exporter: the run's report, section by section: the header (`header`), per group its ladder table (`bandwidth` or `compute`), readings (`readings`), energy and clock events (`energy`), occupancy (`occupancy`) and host programs (`host_programs`), the source hot spots (`hotspots`), the sanitizer's verdicts (`sanitize`), then the closing notes and legends (`footer`).

mod activity;
mod bandwidth;
mod cells;
mod compute;
mod counters;
mod energy;
mod footer;
mod header;
mod host_programs;
mod hotspots;
mod occupancy;
mod readings;
mod roofs;
#[cfg(test)]
mod roofs_tests;
mod sanitize;
mod tensor_use;

use std::fmt::Write;

use super::exporter::Exporter;
use crate::metrics::MetricDef;
use crate::records::{Impossible, JobRecord, RunData};
pub use cells::is_compute;
pub(crate) use cells::{pct, reference, speedup, status_cell, table, timing_cell};
pub use host_programs::transfers_pct_of_pinned;
pub use hotspots::program_section as program_hotspots;

pub struct Markdown;

/// A group's heading, its ladder table (by flops where a job declares them, else by bytes), then
/// its readings and occupancy.
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
        compute::section(run, imp, group, &jobs, metrics, out);
    } else {
        bandwidth::section(run, imp, group, &jobs, metrics, out);
    }
    readings::section(run, imp, &jobs, metrics, out);
    energy::section(&jobs, out);
    activity::section(&jobs, out);
    occupancy::section(run, imp, &jobs, out);
}

impl Exporter<RunData> for Markdown {
    fn file_name(&self) -> &'static str {
        "report.md"
    }

    fn render(&self, run: &RunData) -> anyhow::Result<String> {
        let mut out = String::new();
        header::header(run, &mut out);
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
            host_programs::section(run, &impossible, &g, &mut out);
        }
        counters::section(run, &run.info.metrics, &mut out);
        hotspots::section(run, &mut out);
        sanitize::section(run, &mut out);
        footer::ncu_passes(run, &mut out);
        footer::legends(run, &mut out);
        Ok(out)
    }
}
