//! The summary a `run` or `profile` ends with on the terminal: per group one compact table (rank, variant, median and interval, rate, % of bound, correct, the set's key metric), from the same run data and cells as the markdown report; colour by whole rows, so that the columns stay aligned.

use std::fmt::Write;

use tabled::builder::Builder;
use tabled::settings::Style;

use super::markdown::{is_compute, pct, reference, speedup, status_cell, timing_cell};
use crate::metrics::{self, MetricDef};
use crate::records::{Impossible, JobRecord, JobStatus, RunData};

/// ANSI styles of a row: the header, the fastest correct variant, a wrong one, one that failed
/// or timed out.
const BOLD: &str = "\x1b[1m";
const GREEN_BOLD: &str = "\x1b[1;32m";
const RED_BOLD: &str = "\x1b[1;31m";
const YELLOW: &str = "\x1b[33m";
const RESET: &str = "\x1b[0m";

/// The run's summary: a title line (naming MOCK runs), then per group its heading and table.
/// `colour`: ANSI colours (the caller knows whether the terminal shows them).
pub fn render(run: &RunData, colour: bool) -> String {
    let mut out = String::new();
    let device = run
        .info
        .device
        .as_ref()
        .map(|d| format!(" on {}", d.name))
        .unwrap_or_default();
    // A mock device's name says MOCK already; a mock run of any other source still says it.
    let mock = if run.info.mock && !device.contains("MOCK") {
        " (MOCK)"
    } else {
        ""
    };
    let _ = writeln!(
        out,
        "{}",
        plain_text(&format!("suite {}{device}{mock}", run.info.suite))
    );
    let impossible = run.impossible_jobs();
    let key = key_metric(run);
    for group in run.groups() {
        let jobs: Vec<&JobRecord> = run.jobs.iter().filter(|j| j.group() == group).collect();
        let heading = if group.is_empty() { "results" } else { &group };
        let _ = writeln!(out, "\n{}", plain_text(heading));
        out.push_str(&group_table(run, &impossible, &jobs, key, colour));
        out.push('\n');
    }
    out
}

/// The set's key metric: the first one the run profiled other than its duration (the timing
/// column already says that); none in a run that only timed.
fn key_metric(run: &RunData) -> Option<&MetricDef> {
    run.info.metrics.iter().find(|m| m.name != "duration")
}

/// How a row is coloured.
#[derive(Clone, Copy, PartialEq)]
enum Tone {
    Plain,
    Header,
    Best,
    Bad,
    Warn,
}

/// One group's table; rows in the run's order, ranked by speedup over the group's reference.
fn group_table(
    run: &RunData,
    imp: &Impossible,
    jobs: &[&JobRecord],
    key: Option<&MetricDef>,
    colour: bool,
) -> String {
    let compute = jobs.iter().any(|j| is_compute(j));
    let ranks = ranks(run, imp, jobs);
    let median = run.info.timing.cache.marked("median ms [95% CI]");
    let mut head: Vec<String> = [
        "rank",
        "variant",
        &median,
        if compute { "GFLOP/s" } else { "GB/s" },
        if compute { "% of roof" } else { "% of copy" },
        "correct",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    if let Some(m) = key {
        head.push(m.name.clone());
    }
    let mut rows = vec![head];
    let mut tones = vec![Tone::Plain];
    for (j, rank) in jobs.iter().zip(&ranks) {
        let mut row = vec![
            rank.map(|r| r.to_string()).unwrap_or("–".into()),
            j.label.clone(),
            timing_cell(j),
            rate_cell(j, compute),
            bound_cell(run, j, compute),
            status_cell(imp, j).replace("**", ""),
        ];
        if let Some(m) = key {
            row.push(key_cell(run, j, m));
        }
        rows.push(row);
        tones.push(tone(imp, j, *rank));
    }
    let mut b = Builder::default();
    for r in rows {
        b.push_record(r.iter().map(|c| plain_text(c)));
    }
    let text = b.build().with(Style::rounded()).to_string();
    colour_rows(&text, &tones, colour)
}

/// Each job's place (1 = fastest) among the group's rankable jobs, by speedup over the
/// group's reference (by time for the same work, by rate where the work differs).
fn ranks(run: &RunData, imp: &Impossible, jobs: &[&JobRecord]) -> Vec<Option<usize>> {
    let first = reference(run, imp, jobs);
    let speedups: Vec<Option<f64>> = jobs
        .iter()
        .map(|j| {
            first
                .filter(|_| run.rankable_in(j, imp))
                .and_then(|f| speedup(f, j))
        })
        .collect();
    speedups
        .iter()
        .map(|s| {
            s.map(|s| {
                1 + speedups
                    .iter()
                    .flatten()
                    .filter(|other| **other > s)
                    .count()
            })
        })
        .collect()
}

fn tone(imp: &Impossible, j: &JobRecord, rank: Option<usize>) -> Tone {
    match j.status {
        JobStatus::Wrong => Tone::Bad,
        JobStatus::Ok if imp.contains_key(j.id()) => Tone::Bad,
        JobStatus::Failed | JobStatus::TimedOut => Tone::Warn,
        JobStatus::Ok if rank == Some(1) => Tone::Best,
        JobStatus::Ok => Tone::Plain,
    }
}

fn rate_cell(j: &JobRecord, compute: bool) -> String {
    let rate = if compute { j.gflops() } else { j.gbs() };
    rate.filter(|_| j.status == JobStatus::Ok)
        .map(|r| format!("{r:.0}"))
        .unwrap_or("–".into())
}

/// % of the job's bound: its math's roof (compute groups), else its copy bound; bytes that
/// cross the host link are judged in the report's host-programs section, not here.
fn bound_cell(run: &RunData, j: &JobRecord, compute: bool) -> String {
    if compute {
        let fp32 = run.fp32_roof(j.group());
        let roof = run.job_roof(j, fp32.as_ref());
        return pct(j.gflops(), roof.map(|r| r.gops));
    }
    if j.host_link {
        return "host link".into();
    }
    let copy = run
        .bound_of(j)
        .or_else(|| run.bounds.get(j.group()))
        .and_then(|b| b.copy_gbs());
    pct(j.gbs(), copy)
}

fn key_cell(run: &RunData, j: &JobRecord, m: &MetricDef) -> String {
    let profile = run.profiles.get(j.id());
    match profile.and_then(|p| p.metrics.get(&m.name)) {
        Some(Some(v)) => metrics::format_value(m, *v),
        Some(None) => "n/a".into(),
        None => "–".into(),
    }
}

/// Text from a stored file (a variant's label, a GPU name) as it may reach a terminal: every
/// control character (an escape sequence's ESC among them) a space.
fn plain_text(text: &str) -> String {
    text.chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect()
}

/// The table with each row's line coloured by its tone: the rounded style draws a top border,
/// the header, a rule, then one line per row (cells are one line: `plain_text`), then the bottom.
fn colour_rows(table: &str, tones: &[Tone], colour: bool) -> String {
    if !colour {
        return table.to_string();
    }
    let mut out = String::with_capacity(table.len() + 16 * tones.len());
    for (i, line) in table.lines().enumerate() {
        // Line 1 is the header; rows start at line 3.
        let tone = match i {
            1 => Some(Tone::Header),
            i if i >= 3 => tones.get(i - 2).copied(),
            _ => None,
        };
        let style = match tone {
            Some(Tone::Header) => BOLD,
            Some(Tone::Best) => GREEN_BOLD,
            Some(Tone::Bad) => RED_BOLD,
            Some(Tone::Warn) => YELLOW,
            _ => "",
        };
        if style.is_empty() {
            out.push_str(line);
        } else {
            let _ = write!(out, "{style}{line}{RESET}");
        }
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn control_characters_from_stored_names_never_reach_the_terminal() {
        assert_eq!(plain_text("a\x1b[31mb\nc"), "a [31mb c");
    }

    #[test]
    fn colour_wraps_whole_row_lines_and_keeps_borders_plain() {
        let table = "top\nhead\nrule\nrow1\nrow2\nbottom";
        let tones = [Tone::Plain, Tone::Best, Tone::Bad];
        let out = colour_rows(table, &tones, true);
        let lines: Vec<&str> = out.lines().collect();
        assert_eq!(lines[0], "top");
        assert_eq!(lines[1], format!("{BOLD}head{RESET}"));
        assert_eq!(lines[3], format!("{GREEN_BOLD}row1{RESET}"));
        assert_eq!(lines[4], format!("{RED_BOLD}row2{RESET}"));
        assert_eq!(lines[5], "bottom");
        assert_eq!(colour_rows(table, &tones, false), table);
    }
}
