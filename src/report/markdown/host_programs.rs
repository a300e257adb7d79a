//! The markdown report's section on host programs (pure): the host link measured in the run, each group's step variants with their overlap and how near their copies came to the pinned bound, and each job's steps summed over chunks, linked to its timeline picture.

use std::fmt::Write;

use super::cells::{status_cell, table, timing_cell};
use crate::records::{
    BoundsRecord, HostLinkBounds, Impossible, JobRecord, RunData, StepKind, StepTime, Timeline,
    busy_ms, without_chunk,
};
#[cfg(test)]
use crate::report::timeline::timeline_file;
use crate::report::timeline::timeline_file_in;

/// The directions whose copies are compared with the pinned bounds.
const COPY_KINDS: [StepKind; 2] = [StepKind::H2d, StepKind::D2h];

/// ms a copy of `bytes` takes at `gbs` GB/s.
fn ms_at(bytes: u64, gbs: f64) -> f64 {
    bytes as f64 / (gbs * 1e6)
}

fn gbs_cell(g: Option<f64>) -> String {
    g.map_or("–".into(), |g| format!("{g:.1} GB/s"))
}

fn pct_cell(p: Option<f64>) -> String {
    p.filter(|p| p.is_finite())
        .map_or("–".into(), |p| format!("{p:.0}%"))
}

/// `4.2 MB`, `268 MB`: a copy's size as the header of a group says it.
fn mb(bytes: u64) -> String {
    let m = bytes as f64 / 1e6;
    if m < 100.0 {
        format!("{m:.1} MB")
    } else {
        format!("{m:.0} MB")
    }
}

/// How near a sample's host-device copies came to the pinned bounds, %: the time copies of their
/// bytes take at the bound of their direction over the time some copy of that direction ran
/// (copies that share the link in one direction at once are as busy as one copy of both). None
/// when the program copies nothing between host and device, or a direction it copies in has no bound.
pub fn transfers_pct_of_pinned(
    t: &Timeline,
    host: Option<&HostLinkBounds>,
    bound_bytes: u64,
) -> Option<f64> {
    let (mut ideal, mut busy) = (0.0, 0.0);
    for kind in COPY_KINDS {
        let copies: Vec<&StepTime> = t.steps.iter().filter(|s| s.kind == kind).collect();
        if copies.is_empty() {
            continue;
        }
        let gbs = host?.pinned_gbs(bound_bytes, kind)?;
        ideal += copies.iter().map(|s| ms_at(s.bytes, gbs)).sum::<f64>();
        busy += busy_ms(copies.iter().map(|s| (s.start_ms, s.end_ms)).collect());
    }
    (busy > 0.0).then(|| 100.0 * ideal / busy)
}

/// The steps of one label, over every chunk.
struct StepSum<'a> {
    label: &'a str,
    kind: StepKind,
    count: usize,
    streams: Vec<&'a str>,
    median_ms: f64,
    bytes: u64,
    /// The spans of its steps in the drawn sample.
    spans: Vec<(f64, f64)>,
}

/// A timeline's steps summed by label without the chunk, in the order each label was first issued
/// (one label used for two kinds of work stays two rows).
fn step_sums(t: &Timeline) -> Vec<StepSum<'_>> {
    let mut out: Vec<StepSum> = Vec::new();
    for s in &t.steps {
        let label = without_chunk(&s.label);
        let i = match out
            .iter()
            .position(|x| x.label == label && x.kind == s.kind)
        {
            Some(i) => i,
            None => {
                out.push(StepSum {
                    label,
                    kind: s.kind,
                    count: 0,
                    streams: Vec::new(),
                    median_ms: 0.0,
                    bytes: 0,
                    spans: Vec::new(),
                });
                out.len() - 1
            }
        };
        let sum = &mut out[i];
        sum.count += 1;
        sum.median_ms += s.median_ms.max(0.0);
        sum.bytes += s.bytes;
        sum.spans.push((s.start_ms, s.end_ms));
        if !sum.streams.contains(&s.stream.as_str()) {
            sum.streams.push(&s.stream);
        }
    }
    out
}

/// `s[0], s[1], s[2]`; `s[0] … s[7] (8 streams)` when there are many.
fn streams_cell(streams: &[&str]) -> String {
    match streams {
        [first, .., last] if streams.len() > 4 => {
            format!("{first} … {last} ({} streams)", streams.len())
        }
        _ => streams.join(", "),
    }
}

/// The host link measured for the group, in one line.
fn host_link_line(b: &BoundsRecord, host: &HostLinkBounds, mock: bool) -> String {
    let g = |s, ways| gbs_cell(HostLinkBounds::gbs(b.bytes, s, ways));
    let source = if mock {
        "MOCK stand-ins, nothing was measured"
    } else {
        "measured in this run"
    };
    format!(
        "Host link at this size (copies of {}, {source}): pinned H2D **{}**, pinned D2H **{}**, pinned bidirectional **{}** (both directions at once, the bytes of both); pageable H2D {}, pageable D2H {}.\n",
        mb(b.bytes),
        g(&host.h2d_pinned, 1.0),
        g(&host.d2h_pinned, 1.0),
        g(&host.bidirectional_pinned, 2.0),
        g(&host.h2d_pageable, 1.0),
        g(&host.d2h_pageable, 1.0),
    )
}

/// One job's steps, chunks summed: count, streams, summed median ms, the time they kept busy, GB/s
/// over it and % of the pinned bound. A step's span includes its wait in the queue of its engine
/// (copies of one direction on several streams run one at a time), so GB/s is taken over the time
/// some step of the row ran, not over the sum of their spans.
fn steps_table(run: &RunData, j: &JobRecord, t: &Timeline) -> String {
    let bound = run.bound_of(j);
    let mut rows = vec![
        [
            "step",
            "kind",
            "count",
            "streams",
            &run.info.timing.cache.marked("median ms (sum)"),
            "busy ms",
            "GB/s",
            "% of pinned",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect::<Vec<_>>(),
    ];
    for s in step_sums(t) {
        let busy = busy_ms(s.spans.clone());
        let gbs = (s.bytes > 0 && busy > 0.0).then(|| s.bytes as f64 / busy / 1e6);
        let pinned = bound.and_then(|b| b.host.as_ref()?.pinned_gbs(b.bytes, s.kind));
        rows.push(vec![
            format!("`{}`", s.label),
            s.kind.name().to_string(),
            s.count.to_string(),
            streams_cell(&s.streams),
            format!("{:.4}", s.median_ms),
            format!("{busy:.4}"),
            gbs.map_or("–".into(), |g| format!("{g:.1}")),
            pct_cell(gbs.zip(pinned).map(|(g, p)| 100.0 * g / p)),
        ]);
    }
    table(rows)
}

/// The group's host programs (its jobs that recorded a timeline): the host link, a table of the
/// variants, then each job's steps. The host link alone for a group whose kernels only reach host
/// memory (mapped or managed buffers given to plain launches); nothing for a group without either.
pub(crate) fn section(run: &RunData, imp: &Impossible, group: &str, out: &mut String) {
    let jobs: Vec<(&JobRecord, &Timeline)> = run
        .jobs
        .iter()
        .filter(|j| j.group() == group)
        .filter_map(|j| Some((j, j.timeline.as_ref()?)))
        .collect();
    let linked = run.jobs.iter().any(|j| j.group() == group && j.host_link);
    if jobs.is_empty() && !linked {
        return;
    }
    let _ = writeln!(out, "### Host programs\n");
    let mock = run.info.mock || jobs.iter().any(|(_, t)| t.mock);
    if mock {
        let _ = writeln!(
            out,
            "**MOCK: stand-in times, nothing ran. The timelines, overlaps and bandwidths below test gpu-lab; they are not measurements.**\n"
        );
    }
    let crosses_link = linked
        || jobs
            .iter()
            .any(|(_, t)| t.steps.iter().any(|s| s.kind.is_transfer()));
    match run
        .bounds
        .get(group)
        .and_then(|b| Some((b, b.host.as_ref()?)))
    {
        Some((b, host)) => out.push_str(&host_link_line(b, host, run.info.mock)),
        None if crosses_link => out.push_str("Host link: not measured in this run.\n"),
        None => {}
    }
    out.push('\n');
    if jobs.is_empty() {
        return;
    }
    let mut rows = vec![
        [
            "variant",
            &run.info.timing.cache.marked("median ms [95% CI]"),
            "kernel time hidden behind transfers",
            "transfer time hidden behind kernels",
            "transfers % of pinned",
            "correct",
            "timeline",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect::<Vec<_>>(),
    ];
    for (j, t) in &jobs {
        let o = t.overlap();
        let bound = run.bound_of(j);
        rows.push(vec![
            format!(
                "`{}`{}",
                j.label,
                if t.mock && !run.info.mock {
                    " (MOCK)"
                } else {
                    ""
                }
            ),
            timing_cell(j),
            pct_cell(o.kernel_hidden_pct()),
            pct_cell(o.transfer_hidden_pct()),
            pct_cell(transfers_pct_of_pinned(
                t,
                bound.and_then(|b| b.host.as_ref()),
                bound.map_or(0, |b| b.bytes),
            )),
            status_cell(imp, j),
            format!("[svg]({})", timeline_file_in(run, j.id())),
        ]);
    }
    out.push_str(&table(rows));
    out.push_str("\n\nOf the sample nearest the median: kernel time hidden = the share of the time some kernel ran during which a copy or prefetch ran too; transfer time hidden = the share of the time some copy or prefetch ran during which a kernel ran too; transfers % of pinned = the time the h2d and d2h copies' bytes take at the pinned bounds above over the time some copy of that direction ran (`–`: no such copies, or no bound).\n\n");
    for (j, t) in &jobs {
        let _ = writeln!(
            out,
            "Steps of `{}` (chunks summed; median of each step over the samples; busy = the time some step of the row ran in the drawn sample, which GB/s is taken over, since a step's span includes its wait behind others on its engine; [timeline]({})):\n",
            j.label,
            timeline_file_in(run, j.id())
        );
        out.push_str(&steps_table(run, j, t));
        out.push_str("\n\n");
    }
}

#[cfg(test)]
#[path = "host_programs_tests.rs"]
mod tests;
