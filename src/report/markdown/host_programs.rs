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
pub(crate) fn transfers_pct_of_pinned(
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
            "median ms (sum)",
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
            "median ms [95% CI]",
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
mod tests {
    use super::*;
    use crate::records::{JobKey, JobStatus, RunInfo, Work};
    use crate::stats::summarize;

    fn step(
        label: &str,
        kind: StepKind,
        stream: &str,
        start_ms: f64,
        end_ms: f64,
        bytes: u64,
    ) -> StepTime {
        StepTime {
            label: label.into(),
            kind,
            stream: stream.into(),
            start_ms,
            end_ms,
            bytes,
            median_ms: end_ms - start_ms,
        }
    }

    /// 100 MB per copy; pinned H2D 50 GB/s (2 ms), D2H 25 GB/s (4 ms), bidirectional 40 GB/s, pageable 10 GB/s.
    fn bounds() -> BoundsRecord {
        let s = |ms: f64| summarize(&[ms, ms, ms]);
        BoundsRecord {
            group: "N=1".into(),
            bytes: 100_000_000,
            memcpy: s(0.2),
            copy_kernel: None,
            error: None,
            fma: None,
            gpu: None,
            host: Some(HostLinkBounds {
                h2d_pinned: s(2.0),
                d2h_pinned: s(4.0),
                bidirectional_pinned: s(5.0),
                h2d_pageable: s(10.0),
                d2h_pageable: s(10.0),
            }),
            roofs: Vec::new(),
        }
    }

    fn job(variant: &str, t: Option<Timeline>) -> JobRecord {
        JobRecord {
            key: JobKey {
                id: format!("{variant} @ N=1"),
                variant: variant.into(),
                group: "N=1".into(),
                ..Default::default()
            },
            label: variant.into(),
            status: JobStatus::Ok,
            samples_ms: vec![10.0, 10.0, 10.0],
            summary: summarize(&[10.0, 10.0, 10.0]),
            work: Work {
                bytes: Some(3e8),
                flops: None,
                ..Default::default()
            },
            timeline: t,
            ..Default::default()
        }
    }

    /// Serial: 100 MB in at 50 GB/s (2 ms), a 1 ms kernel, 100 MB out at 25 GB/s (4 ms).
    fn serial() -> Timeline {
        Timeline {
            total_ms: 7.0,
            steps: vec![
                step("h2d a", StepKind::H2d, "NULL", 0.0, 2.0, 100_000_000),
                step("kernel k", StepKind::Kernel, "NULL", 2.0, 3.0, 0),
                step("d2h c", StepKind::D2h, "NULL", 3.0, 7.0, 100_000_000),
            ],
            mock: false,
        }
    }

    /// Two chunks of 50 MB on two streams: chunk 1's copy in runs under chunk 0's kernel, both copies in share the link.
    fn chunked() -> Timeline {
        Timeline {
            total_ms: 6.0,
            steps: vec![
                step("h2d a #0", StepKind::H2d, "s[0]", 0.0, 2.0, 50_000_000),
                step("h2d a #1", StepKind::H2d, "s[1]", 1.0, 3.0, 50_000_000),
                step("kernel k #0", StepKind::Kernel, "s[0]", 2.0, 3.0, 0),
                step("kernel k #1", StepKind::Kernel, "s[1]", 3.0, 4.0, 0),
                step("d2h c #0", StepKind::D2h, "s[0]", 3.0, 5.0, 50_000_000),
                step("d2h c #1", StepKind::D2h, "s[1]", 4.0, 6.0, 50_000_000),
            ],
            mock: false,
        }
    }

    fn run(jobs: Vec<JobRecord>, mock: bool) -> RunData {
        RunData {
            info: RunInfo {
                suite: "streams".into(),
                mock,
                ..Default::default()
            },
            jobs,
            bounds: [("N=1".to_string(), bounds())].into(),
            ..Default::default()
        }
    }

    fn render(r: &RunData) -> String {
        let mut out = String::new();
        section(r, &r.impossible_jobs(), "N=1", &mut out);
        out
    }

    /// The cells of the table row that starts with this first cell.
    fn row<'a>(md: &'a str, first: &str) -> Vec<&'a str> {
        let line = md
            .lines()
            .find(|l| l.trim_start_matches('|').trim().starts_with(first))
            .unwrap_or_else(|| panic!("no row {first}:\n{md}"));
        line.trim()
            .trim_matches('|')
            .split('|')
            .map(str::trim)
            .collect()
    }

    #[test]
    fn pinned_share_is_ideal_copy_time_over_the_time_each_direction_was_busy() {
        let host = bounds().host;
        // Serial: every copy at exactly its bound.
        assert_eq!(
            transfers_pct_of_pinned(&serial(), host.as_ref(), 100_000_000).map(f64::round),
            Some(100.0)
        );
        // Chunked: h2d 100 MB in 3 ms busy (ideal 2), d2h 100 MB in 3 ms busy (ideal 4): 6 / 6.
        assert_eq!(
            transfers_pct_of_pinned(&chunked(), host.as_ref(), 100_000_000).map(f64::round),
            Some(100.0)
        );
        // A program with no host copies, or no bound for a direction it copies in, has no share.
        let kernels = Timeline {
            total_ms: 1.0,
            steps: vec![step("kernel k", StepKind::Kernel, "NULL", 0.0, 1.0, 0)],
            mock: false,
        };
        assert_eq!(
            transfers_pct_of_pinned(&kernels, host.as_ref(), 100_000_000),
            None
        );
        let no_d2h = HostLinkBounds {
            d2h_pinned: None,
            ..host.clone().unwrap()
        };
        assert_eq!(
            transfers_pct_of_pinned(&serial(), Some(&no_d2h), 100_000_000),
            None
        );
        assert_eq!(transfers_pct_of_pinned(&serial(), None, 100_000_000), None);
        assert_eq!(
            busy_ms(vec![
                (0.0, 2.0),
                (1.0, 3.0),
                (5.0, 6.0),
                (5.5, 5.7),
                (f64::NAN, 9.0)
            ]),
            4.0
        );
    }

    #[test]
    fn the_section_shows_the_host_link_the_variants_and_each_jobs_steps() {
        let r = run(
            vec![
                job("plain", None),
                job("serial", Some(serial())),
                job("chunked", Some(chunked())),
            ],
            false,
        );
        let md = render(&r);
        assert!(md.starts_with("### Host programs\n"), "{md}");
        assert!(!md.contains("MOCK"), "{md}");
        assert!(md.contains("Host link at this size (copies of 100 MB, measured in this run): pinned H2D **50.0 GB/s**, pinned D2H **25.0 GB/s**, pinned bidirectional **40.0 GB/s** (both directions at once, the bytes of both); pageable H2D 10.0 GB/s, pageable D2H 10.0 GB/s."), "{md}");
        // A variant without a timeline is not a host program.
        assert!(!md.contains("`plain`"), "{md}");
        // A group whose only host-memory job is a plain launch (zero-copy) gets the host link alone.
        let mut plain = job("plain", None);
        plain.host_link = true;
        let md = render(&run(vec![plain], false));
        assert!(
            md.starts_with("### Host programs\n")
                && md.contains("Host link at this size")
                && !md.contains("| variant"),
            "{md}"
        );
        let md = render(&r);
        assert_eq!(
            row(&md, "`serial`"),
            vec![
                "`serial`",
                "10.0000 [10.0000, 10.0000]",
                "0%",
                "0%",
                "100%",
                "not checked",
                &format!("[svg]({})", timeline_file("serial @ N=1"))
            ]
        );
        // A suite's own noise threshold says how far the next run may land.
        let mut noisy = job("serial", Some(serial()));
        noisy.noise_threshold_pct = Some(20.0);
        assert_eq!(
            row(&render(&run(vec![noisy.clone()], false)), "`serial`")[1],
            "10.0000 [10.0000, 10.0000], ±20% between runs"
        );
        noisy.noise_threshold_pct = Some(12.5);
        assert_eq!(
            row(&render(&run(vec![noisy], false)), "`serial`")[1],
            "10.0000 [10.0000, 10.0000], ±12.5% between runs"
        );
        // Chunked: kernels 2-4, transfers 0-6: all kernel time hidden, 2 of 6 ms of transfers.
        assert_eq!(row(&md, "`chunked`")[2..5], ["100%", "33%", "100%"]);
        // Its steps, chunks summed: 2 copies of 50 MB, 4 ms of medians, the link busy 3 ms (0-2 and
        // 1-3 overlap: the second waited) = 33.3 GB/s, 67% of the h2d bound.
        assert!(md.contains(&format!("Steps of `chunked` (chunks summed; median of each step over the samples; busy = the time some step of the row ran in the drawn sample, which GB/s is taken over, since a step's span includes its wait behind others on its engine; [timeline]({}))", timeline_file("chunked @ N=1"))), "{md}");
        let (serial_steps, chunked_steps) = md.split_once("Steps of `chunked`").unwrap();
        assert_eq!(
            row(chunked_steps, "`h2d a`"),
            vec![
                "`h2d a`",
                "h2d",
                "2",
                "s[0], s[1]",
                "4.0000",
                "3.0000",
                "33.3",
                "67%"
            ]
        );
        assert_eq!(
            row(chunked_steps, "`kernel k`"),
            vec![
                "`kernel k`",
                "kernel",
                "2",
                "s[0], s[1]",
                "2.0000",
                "2.0000",
                "–",
                "–"
            ]
        );
        // The serial job's steps come first, each once, at its bound.
        assert_eq!(
            row(serial_steps, "`d2h c`"),
            vec![
                "`d2h c`", "d2h", "1", "NULL", "4.0000", "4.0000", "25.0", "100%"
            ]
        );
    }

    #[test]
    fn a_mock_run_says_so_and_calls_nothing_measured() {
        let md = render(&run(
            vec![job(
                "serial",
                Some(Timeline {
                    mock: true,
                    ..serial()
                }),
            )],
            true,
        ));
        assert!(md.contains("**MOCK: stand-in times, nothing ran."), "{md}");
        assert!(
            md.contains("MOCK stand-ins, nothing was measured")
                && !md.contains("measured in this run"),
            "{md}"
        );
        // A mock timeline in a measured run (never made, but a record could be edited) is marked on its row.
        let md = render(&run(
            vec![job(
                "serial",
                Some(Timeline {
                    mock: true,
                    ..serial()
                }),
            )],
            false,
        ));
        assert!(
            md.contains("**MOCK: stand-in times") && md.contains("| `serial` (MOCK) "),
            "{md}"
        );
    }

    #[test]
    fn groups_without_host_programs_get_nothing_and_a_missing_bound_is_said() {
        assert_eq!(render(&run(vec![job("plain", None)], false)), "");
        let mut r = run(vec![job("serial", Some(serial()))], false);
        r.bounds.clear();
        let md = render(&r);
        assert!(
            md.contains("Host link: not measured in this run.") && row(&md, "`serial`")[4] == "–",
            "{md}"
        );
        // Device-only steps (a memset, a kernel) need no host link and do not ask for one.
        let device_only = Timeline {
            total_ms: 2.0,
            steps: vec![
                step("memset a", StepKind::Memset, "NULL", 0.0, 1.0, 1000),
                step("kernel k", StepKind::Kernel, "NULL", 1.0, 2.0, 0),
            ],
            mock: false,
        };
        let mut r = run(vec![job("dev", Some(device_only))], false);
        r.bounds.clear();
        let md = render(&r);
        assert!(
            !md.contains("Host link") && row(&md, "`dev`")[2..5] == ["0%", "–", "–"],
            "{md}"
        );
    }

    #[test]
    fn chunk_suffixes_are_dropped_only_when_they_are_chunk_numbers() {
        assert_eq!(without_chunk("h2d a #12"), "h2d a");
        assert_eq!(without_chunk("h2d a"), "h2d a");
        assert_eq!(without_chunk("tag #x"), "tag #x");
        assert_eq!(without_chunk("tag #"), "tag #");
        assert_eq!(streams_cell(&["a", "b"]), "a, b");
        assert_eq!(
            streams_cell(&["s[0]", "s[1]", "s[2]", "s[3]", "s[4]"]),
            "s[0] … s[4] (5 streams)"
        );
    }
}
