//! The markdown report of the committed H100 run, as a snapshot: any change to rendering shows up in review.

use crate::common::{gpu_lab, h200_run, repo};

#[test]
fn markdown_report_of_the_committed_run() {
    let dir = h200_run();
    let (run, warnings) = gpu_lab::store::load_run(&dir).unwrap();
    assert!(warnings.is_empty(), "{warnings:?}");
    let md = gpu_lab::report::exporter(gpu_lab::report::Format::Md)
        .render(&run)
        .unwrap();
    // The report must show what the seeds teach.
    assert!(md.contains("| `smem_32`"));
    insta::assert_snapshot!(md);
}

#[test]
fn truncated_results_keep_every_complete_record() {
    let src = h200_run();
    let d = tempfile::tempdir().unwrap();
    std::fs::copy(src.join("run.json"), d.path().join("run.json")).unwrap();
    let body = crate::common::results_text(&src);
    // A run killed mid-write: the last line is cut in half.
    let cut = &body[..body.len() - 200];
    std::fs::write(d.path().join("results.jsonl"), cut).unwrap();
    let (run, warnings) = gpu_lab::store::load_run(d.path()).unwrap();
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    assert!(run.jobs.len() >= 90);
}

#[test]
fn svg_chart_has_a_bar_per_correct_job_and_a_copy_line_per_group() {
    let dir = h200_run();
    let (run, _) = gpu_lab::store::load_run(&dir).unwrap();
    let svg = gpu_lab::report::exporter(gpu_lab::report::Format::Svg)
        .render(&run)
        .unwrap();
    assert!(svg.starts_with("<svg"));
    // One background rectangle plus one bar per correct job (92 here).
    assert_eq!(svg.matches("<rect").count(), 1 + 92);
    assert_eq!(
        svg.matches("\ncopy ").count(),
        4,
        "one copy-bound label per group"
    );
    assert!(svg.contains("transpose_fast[THREADS=512]"));
}

/// The compute report of the committed H100 matmul run: GFLOP/s, % of the FP32 peak, % of cuBLAS,
/// the roofline, all from the run's own records (no GPU).
#[test]
fn the_committed_matmul_run_reports_compute_columns_and_a_roofline() {
    let dir = repo().join("tests/fixtures/runs/20261122T173408Z-matmul-h100-80gb-hbm3");
    let (run, warnings) = gpu_lab::store::load_run(&dir).unwrap();
    assert!(warnings.is_empty(), "{warnings:?}");
    let md = gpu_lab::report::exporter(gpu_lab::report::Format::Md)
        .render(&run)
        .unwrap();
    assert!(md.contains("| variant ") && md.contains("| GFLOP/s | % of FP32 peak | % of cuBLAS SGEMM | flop/byte | flop/DRAM byte | % of roofline | roof "), "{md}");
    assert!(md.contains("132 SMs × 128 lanes × 2 × 1980 MHz"));
    // The best rung: 2 * 4096^3 flops over its median, against cuBLAS's median in the same run.
    let vec = run
        .jobs
        .iter()
        .find(|j| j.id() == "vectorized @ S=4096")
        .unwrap();
    let cublas = run
        .compute_bounds
        .values()
        .find(|c| c.group == "S=4096")
        .unwrap();
    let pct = 100.0 * vec.gflops().unwrap() / cublas.gflops().unwrap();
    let expected = cublas.summary.unwrap().median / vec.summary.unwrap().median * 100.0;
    assert!((pct - expected).abs() < 1e-9);
    assert!(
        md.contains(&format!(
            "| `vectorized` | {:.4}",
            vec.summary.unwrap().median
        )),
        "{md}"
    );
    assert!(md.contains(&format!("{pct:.0}%")));
    let (peak, lanes, mhz) = run.fp32_peak("S=4096").unwrap();
    assert_eq!((lanes, mhz), (128, 1980));
    assert!((peak - 132.0 * 128.0 * 2.0 * 1980.0 / 1e3).abs() < 1e-6);
    let roof = run.roofline(vec).unwrap();
    assert!(
        roof.compute_bound
            && (roof.intensity - 512.0).abs() < 1e-9
            && roof.attainable_gflops == peak
    );
    let svg = gpu_lab::report::exporter(gpu_lab::report::Format::Roofline)
        .render(&run)
        .unwrap();
    assert!(
        svg.starts_with("<svg") && svg.contains("roofline") && svg.contains("vectorized @ S=4096")
    );
    assert_eq!(svg.matches("<circle").count(), run.jobs.len());
}

/// Data-movement runs keep their report: no compute columns, no roofline link.
#[test]
fn runs_without_flops_keep_the_bandwidth_report() {
    let dir = h200_run();
    let (run, _) = gpu_lab::store::load_run(&dir).unwrap();
    let md = gpu_lab::report::exporter(gpu_lab::report::Format::Md)
        .render(&run)
        .unwrap();
    assert!(!md.contains("GFLOP/s") && !md.contains("roofline.svg"));
}

/// Unchecked variants are shown but never ranked: the speedup reference is the first verified one.
#[test]
fn unchecked_variants_are_never_ranked_nor_the_reference() {
    let dir = repo().join("tests/fixtures/runs/20261122T054102Z-warp-divergence-h100-80gb-hbm3");
    let (run, _) = gpu_lab::store::load_run(&dir).unwrap();
    let md = gpu_lab::report::exporter(gpu_lab::report::Format::Md)
        .render(&run)
        .unwrap();
    let speedup = |label: &str| {
        md.lines()
            .find(|l| l.starts_with(&format!("| `{label}`")))
            .and_then(|l| l.split('|').nth(6))
            .map(|c| c.trim().to_string())
            .unwrap()
    };
    assert_eq!(speedup("seed_divergent"), "–");
    assert_eq!(speedup("seed_warp_aligned_G"), "–");
    assert_eq!(
        speedup("divergent"),
        "1.00×",
        "the first verified variant is the reference"
    );
    assert!(
        run.jobs
            .iter()
            .filter(|j| j.correctness.is_none())
            .all(|j| !run.rankable(j))
    );
}

/// A run killed in the middle of appending a record that holds a multi-byte character leaves one
/// non-UTF-8 line: it costs that line, and `report --write` refuses to replace the report with a
/// shorter one.
#[test]
fn a_cut_multibyte_character_costs_its_line_only_and_write_refuses() {
    let src = h200_run();
    let d = tempfile::tempdir().unwrap();
    std::fs::copy(src.join("run.json"), d.path().join("run.json")).unwrap();
    let mut body = crate::common::results_text(&src).into_bytes();
    let lines = body.iter().filter(|&&b| b == b'\n').count();
    // A line cut inside "…" (E2 80 A6): its first byte only, then the next record.
    body.extend_from_slice(b"{\"kind\":\"job\",\"error\":\"cut \xE2\n");
    std::fs::write(d.path().join("results.jsonl"), &body).unwrap();
    let (run, warnings) = gpu_lab::store::load_run(d.path()).unwrap();
    assert_eq!(run.jobs.len(), 92, "every whole record is kept");
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    assert!(
        warnings[0].contains(&format!("results.jsonl:{}", lines + 1)),
        "{warnings:?}"
    );
    std::fs::write(d.path().join("report.md"), "the old report").unwrap();
    let out = gpu_lab()
        .args(["report", d.path().to_str().unwrap(), "--write"])
        .assert()
        .code(1);
    assert!(String::from_utf8_lossy(&out.get_output().stderr).contains("was not rewritten"));
    assert!(
        out.get_output().stdout.is_empty(),
        "a refused --write prints no report either"
    );
    assert_eq!(
        std::fs::read_to_string(d.path().join("report.md")).unwrap(),
        "the old report"
    );
    // A results file that is a directory is an error, not an empty report.
    std::fs::remove_file(d.path().join("results.jsonl")).unwrap();
    std::fs::create_dir(d.path().join("results.jsonl")).unwrap();
    assert!(gpu_lab::store::load_run(d.path()).is_err());
}

/// What the child records for one launch, with the occupancy model's limits (as `runner` builds
/// it); `driver` overrides the driver's blocks per SM where a test needs them to differ.
fn launch(
    kernel: &str,
    threads: u32,
    registers: u32,
    dynamic: u32,
    driver: Option<u32>,
) -> gpu_lab::records::LaunchOccupancy {
    use gpu_lab::occupancy::{KernelUse, SmLimits, block_limits};
    let sm = SmLimits::hopper();
    let max_dynamic = dynamic.max(48 * 1024);
    let model = block_limits(
        &sm,
        &KernelUse {
            threads_per_block: threads,
            registers_per_thread: registers,
            static_shared_bytes: 0,
            dynamic_shared_bytes: dynamic,
            max_threads_per_block: 1024,
            max_dynamic_shared_bytes: max_dynamic,
        },
    )
    .unwrap();
    let blocks = driver.unwrap_or(model.active_blocks());
    gpu_lab::records::LaunchOccupancy {
        kernel: kernel.into(),
        threads_per_block: threads,
        registers_per_thread: registers,
        static_shared_bytes: 0,
        dynamic_shared_bytes: dynamic,
        local_bytes_per_thread: 0,
        max_threads_per_block: 1024,
        max_warps_per_sm: sm.max_warps(),
        active_blocks_per_sm: Some(blocks),
        predicted_occupancy_pct: sm.occupancy_pct(blocks, threads),
        driver_error: None,
        limiters: model.limiters(),
        model: Some(model),
        model_error: None,
        cluster: None,
        active_clusters: None,
        cluster_error: None,
    }
}

/// A launch in clusters gets a cluster column (blocks per cluster, clusters resident at once);
/// a table without clusters keeps its columns.
#[test]
fn cluster_launches_get_a_cluster_column() {
    let dir = h200_run();
    let (mut run, _) = gpu_lab::store::load_run(&dir).unwrap();
    let group = "NX=8192,NY=8192";
    let at = |run: &gpu_lab::records::RunData, label: &str| {
        run.jobs
            .iter()
            .position(|j| j.label == label && j.key.group == group)
            .unwrap()
    };
    let copy = at(&run, "copy_row[BX=32,BY=8]");
    run.jobs[copy].occupancy = vec![launch("copy_row", 256, 32, 0, None)];
    let render = |run: &gpu_lab::records::RunData| {
        gpu_lab::report::exporter(gpu_lab::report::Format::Md)
            .render(run)
            .unwrap()
    };
    let plain = render(&run);
    assert!(
        !plain.contains("cluster (active clusters)"),
        "no clusters, no column"
    );
    let mut clustered = launch("copy_row", 256, 32, 0, None);
    clustered.cluster = Some([16, 1, 1]);
    clustered.active_clusters = Some(7);
    let mut failed = launch("copy_row", 256, 32, 0, None);
    failed.cluster = Some([8, 2, 1]);
    failed.cluster_error =
        Some("cuOccupancyMaxActiveClusters: CUDA_ERROR_INVALID_CLUSTER_SIZE".into());
    run.jobs[copy].occupancy = vec![clustered, failed];
    let md = render(&run);
    let section = &md[md.find("## NX=8192,NY=8192").unwrap()..];
    let section = &section[section.find("### Occupancy").unwrap()..];
    assert!(section.contains("cluster (active clusters)"), "{section}");
    assert!(section.contains(" 16×1×1 (7) "), "{section}");
    assert!(section.contains(" 8×2×1 (–) "), "{section}");
    assert!(
        section.contains("cuOccupancyMaxActiveClusters`)"),
        "{section}"
    );
    assert!(
        section.contains("the driver gave no cluster occupancy: cuOccupancyMaxActiveClusters: CUDA_ERROR_INVALID_CLUSTER_SIZE"),
        "{section}"
    );
}

/// A run whose jobs carry occupancy records gets an occupancy table per group: registers, shared
/// memory, the driver's blocks per SM and predicted occupancy, the limiter, ncu's achieved
/// occupancy and the time, and a line on what occupancy bought. Runs without the records (every
/// committed one) render as before: the snapshot above is unchanged. The records here are made
/// up for the test and set on a committed run's jobs; only the times and ncu's values are real.
#[test]
fn occupancy_records_get_a_table_beside_the_time() {
    let dir = h200_run();
    let (mut run, _) = gpu_lab::store::load_run(&dir).unwrap();
    let md = gpu_lab::report::exporter(gpu_lab::report::Format::Md)
        .render(&run)
        .unwrap();
    assert!(
        !md.contains("### Occupancy") && !md.contains("predicted occupancy"),
        "no records, no table"
    );
    let group = "NX=8192,NY=8192";
    let at = |run: &gpu_lab::records::RunData, label: &str| {
        run.jobs
            .iter()
            .position(|j| j.label == label && j.key.group == group)
            .unwrap()
    };
    let (copy, fast, column) = (
        at(&run, "copy_row[BX=32,BY=8]"),
        at(&run, "transpose_fast[THREADS=512]"),
        at(&run, "copy_column[BX=32,BY=8]"),
    );
    // 256 threads at 32 registers: 8 blocks, warps and registers tie. 512 threads with 100 KiB of
    // dynamic shared memory: 2 blocks, 50%. The third launch: the driver says 7 where the model says 8.
    run.jobs[copy].occupancy = vec![launch("copy_row", 256, 32, 0, None)];
    run.jobs[fast].occupancy = vec![launch("transpose_fast", 512, 40, 100 * 1024, None)];
    run.jobs[column].occupancy = vec![launch("copy_column", 256, 32, 0, Some(7))];
    // The committed run measured achieved occupancy for every job (its set has it): one stands in
    // for a value, one is taken away to stand for a job ncu did not measure.
    run.profiles
        .get_mut(&run.jobs[copy].key.id)
        .unwrap()
        .metrics
        .insert("achieved_occupancy".into(), Some(91.04));
    run.profiles
        .get_mut(&run.jobs[fast].key.id)
        .unwrap()
        .metrics
        .remove("achieved_occupancy");
    // A job whose occupancy the driver would not give, and another group where that is all there is.
    let naive = at(&run, "naive_row[BX=32,BY=8]");
    run.jobs[naive].occupancy_error = Some("CUDA driver error while reading the registers per thread of `naive_row`: CUDA_ERROR_INVALID_VALUE".into());
    let other = run
        .jobs
        .iter()
        .position(|j| j.label == "copy_row[BX=32,BY=8]" && j.key.group == "NX=4000,NY=4000")
        .unwrap();
    run.jobs[other].occupancy_error = Some("CUDA_ERROR_NOT_SUPPORTED".into());
    let md = gpu_lab::report::exporter(gpu_lab::report::Format::Md)
        .render(&run)
        .unwrap();
    let only_error = &md[md.find("## NX=4000,NY=4000").unwrap()..];
    let only_error =
        &only_error[only_error.find("### Occupancy").unwrap()..only_error.find("\n## ").unwrap()];
    assert!(
        only_error
            .contains("- `copy_row[BX=32,BY=8]`: occupancy not read: CUDA_ERROR_NOT_SUPPORTED")
            && !only_error.contains("| variant"),
        "no empty table:\n{only_error}"
    );
    let section = &md[md.find("## NX=8192,NY=8192").unwrap()..];
    let section = &section[section.find("### Occupancy").expect("an occupancy table")..];
    assert!(
        section.contains("- `naive_row[BX=32,BY=8]`: occupancy not read: CUDA driver error"),
        "{section}"
    );
    assert!(section.contains("the SM's 64 warp slots"), "{section}");
    let row = |label: &str| {
        section
            .lines()
            .find(|l| l.starts_with(&format!("| `{label}`")))
            .unwrap_or_else(|| panic!("no row for {label}:\n{section}"))
            .split('|')
            .map(str::trim)
            .collect::<Vec<_>>()
    };
    let copy_row = row("copy_row[BX=32,BY=8]");
    let median = |i: usize| format!("{:.4}", run.jobs[i].summary.unwrap().median);
    assert_eq!(
        copy_row[2..12],
        [
            "`copy_row`",
            "256",
            "32",
            "0",
            "0 B + 0 B",
            "8",
            "100.0%",
            "warps (= registers)",
            "91.0%",
            &median(copy)
        ],
        "{copy_row:?}"
    );
    let fast_row = row("transpose_fast[THREADS=512]");
    assert_eq!(
        fast_row[6..11],
        ["0 B + 100 KiB", "2", "50.0%", "shared memory", "–"],
        "not measured: no achieved occupancy"
    );
    assert_eq!(row("copy_column[BX=32,BY=8]")[7], "7 (model: 8)");
    assert!(
        section.contains("the driver predicts 7 blocks per SM, the occupancy model 8"),
        "{section}"
    );
    // Only the groups whose jobs carry records (or an error) get the section.
    assert_eq!(md.matches("### Occupancy").count(), 2);
    // The fastest of the three runs at the lowest occupancy: said with the measured times.
    let ratio = run.jobs[copy].summary.unwrap().median / run.jobs[fast].summary.unwrap().median;
    let line = format!(
        "- Occupancy is not speed here: the fastest job, `transpose_fast[THREADS=512]` ({} ms), runs at 50.0% predicted occupancy; `copy_row[BX=32,BY=8]` at 100.0% takes {} ms ({ratio:.2}× as long).",
        median(fast),
        median(copy)
    );
    assert!(section.contains(&line), "{line}\n{section}");
    assert!(md.contains("Legend of the occupancy tables"));
}

/// The committed H100 reduction run of 2026-11-23: every job's ncu duration is the median of its
/// five profiled runs in the duration's own session, recomputed here from that session's raw
/// export, and the report says where the durations came from.
#[test]
fn durations_of_the_committed_run_are_the_median_of_their_own_sessions_runs() {
    use gpu_lab::records::DURATION_RUNS;
    let dir = repo().join("tests/fixtures/runs/20261123T074227Z-reduction-h100-80gb-hbm3");
    let (run, warnings) = gpu_lab::store::load_run(&dir).unwrap();
    assert!(warnings.is_empty(), "{warnings:?}");
    let lines = crate::common::results_text(&dir);
    let profiles: Vec<gpu_lab::records::ProfileRecord> = lines
        .lines()
        .filter_map(|l| match serde_json::from_str(l).unwrap() {
            gpu_lab::records::Record::Profile(p) => Some(p),
            _ => None,
        })
        .collect();
    assert_eq!(profiles.len(), run.jobs.len());
    let mut checked = 0;
    for pass in ["profile-0", "profile-1"] {
        // Stored gzipped to keep the tracked tree small.
        let mut csv = String::new();
        std::io::Read::read_to_string(
            &mut flate2::read::GzDecoder::new(
                std::fs::File::open(dir.join(format!("{pass}-duration.csv.gz"))).unwrap(),
            ),
            &mut csv,
        )
        .unwrap();
        let rows = gpu_lab::parse::parse_ncu_csv(&csv).unwrap().kernels;
        let mut next = 0;
        for p in profiles
            .iter()
            .filter(|p| p.report_file.as_deref() == Some(&format!("{pass}.ncu-rep")))
        {
            assert!(
                p.duration_from_own_session(),
                "{}: {:?}",
                p.job_id,
                p.duration_from
            );
            let n = p.kernels.len();
            let mut runs: Vec<f64> = (0..DURATION_RUNS as usize)
                .map(|r| {
                    rows[next + r * n..next + (r + 1) * n]
                        .iter()
                        .map(|k| k.values[gpu_lab::metrics::DURATION])
                        .sum()
                })
                .collect();
            next += DURATION_RUNS as usize * n;
            assert_eq!(
                p.metrics["duration"],
                Some(gpu_lab::stats::median_in_place(&mut runs)),
                "{}",
                p.job_id
            );
            checked += 1;
        }
        assert_eq!(
            next,
            rows.len(),
            "{pass}: every profiled launch belongs to a job"
        );
    }
    assert_eq!(checked, profiles.len());
    let md = gpu_lab::report::exporter(gpu_lab::report::Format::Md)
        .render(&run)
        .unwrap();
    assert!(
        md.contains(
            "each job's ncu duration from one more session that collects only it: the median"
        ),
        "{md}"
    );
    // A job whose own session failed keeps the set's reading, and the report counts it apart.
    let mut run = run;
    let first = run.profiles.values_mut().next().unwrap();
    first.duration_from = Some("the metric set's session, since the duration's own session could not give it: it failed: ncu timed out".into());
    let md = gpu_lab::report::exporter(gpu_lab::report::Format::Md)
        .render(&run)
        .unwrap();
    assert!(
        md.contains("except 1 whose duration is the set's reading"),
        "{md}"
    );
    // A run that asked for no session of its own says the durations are the set's, as asked.
    for p in run.profiles.values_mut() {
        p.duration_from = Some(gpu_lab::records::ProfileRecord::METRIC_SET_DURATION_ASKED.into());
    }
    let md = gpu_lab::report::exporter(gpu_lab::report::Format::Md)
        .render(&run)
        .unwrap();
    assert!(
        md.contains("each job's ncu duration the set's reading, as `--duration-runs 0` asked"),
        "{md}"
    );
    assert!(!md.contains("except"), "{md}");
}

/// Every heading of timed values and every chart's title in the report of `dir`, in each format
/// that shows them (markdown, HTML, the bar chart, the roofline where there are flops).
fn timed_headings(dir: &std::path::Path) -> Vec<String> {
    use gpu_lab::report::{Format, exporter};
    let (run, _) = gpu_lab::store::load_run(dir).unwrap();
    let mut formats = vec![Format::Md, Format::Html, Format::Svg];
    if run.jobs.iter().any(|j| j.gflops().is_some()) {
        formats.push(Format::Roofline);
    }
    let mut headings = Vec::new();
    for f in formats {
        let text = exporter(f).render(&run).unwrap();
        for line in text.lines() {
            // Table headers (a markdown row or an HTML <th>), the chart link, the charts' titles.
            for piece in line.split(['|', '<', '>']) {
                let piece = piece.trim();
                if piece.starts_with("median ms")
                    || piece.starts_with("Chart of every table")
                    || piece.contains(": effective GB/s")
                    || piece.contains("): roofline")
                {
                    headings.push(piece.to_string());
                }
            }
        }
    }
    headings
}

#[test]
fn warm_times_say_warm_wherever_they_are_shown_and_cold_ones_say_nothing_more() {
    for warm in [
        h200_run(),
        repo().join("tests/fixtures/runs/20261122T173408Z-matmul-h100-80gb-hbm3"),
    ] {
        let headings = timed_headings(&warm);
        // Median columns of the ladder and occupancy tables, the chart link, the two charts.
        assert!(headings.len() >= 4, "{} {headings:?}", warm.display());
        for h in &headings {
            assert!(h.contains("(L2 warm)"), "{h}");
        }
    }
    for cold in ["matmul", "transfers"] {
        let headings = timed_headings(&repo().join(format!("examples/reports/{cold}/h100")));
        assert!(headings.len() >= 4, "{cold} {headings:?}");
        assert!(headings.iter().all(|h| !h.contains("warm")), "{headings:?}");
    }
}
