//! Tests of the markdown report's host-program section (`host_programs.rs`): the host link, overlap, the steps table and timeline links.

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
        md.contains("MOCK stand-ins, nothing was measured") && !md.contains("measured in this run"),
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
