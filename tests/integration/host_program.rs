//! A host-program suite (tests/fixtures/host-program: pinned copies in, a kernel, copies out; serial and in chunks over two streams) run end to end through the mock executor: the report's host-program section, and the timeline pictures beside it, written by the run and again by `gpu-lab report --write`, every one saying MOCK.

use std::path::Path;

use crate::common::{gpu_lab_with_cache_in as lab, mock_host_program_run_in};

/// The timeline files of a run directory, sorted, with their text.
fn timelines(run: &Path) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = std::fs::read_dir(run.join("timelines"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .map(|p| {
            (
                format!("timelines/{}", p.file_name().unwrap().to_string_lossy()),
                std::fs::read_to_string(&p).unwrap(),
            )
        })
        .collect();
    out.sort();
    out
}

#[test]
fn a_mock_run_of_host_programs_reports_them_and_draws_their_timelines_marked_mock() {
    let d = tempfile::tempdir().unwrap();
    let run = mock_host_program_run_in(d.path());
    let report = std::fs::read_to_string(run.join("report.md")).unwrap();

    // The section, marked MOCK, with the stand-in host link named as such.
    assert!(
        report.contains("### Host programs")
            && report.contains("**MOCK: stand-in times, nothing ran."),
        "{report}"
    );
    assert!(report.contains("Host link at this size (copies of 4.2 MB, MOCK stand-ins, nothing was measured): pinned H2D **50.0 GB/s**"), "{report}");
    assert!(
        !report
            .lines()
            .any(|l| l.starts_with("Host link") && l.contains("measured in this run")),
        "{report}"
    );
    // Their bytes cross the host link: the main table does not hold them against DRAM's copy bound.
    // The group's main table comes before its host-programs section: the first `serial` row is its.
    let main_row = report
        .lines()
        .find(|l| l.starts_with("| `serial`"))
        .unwrap_or_default();
    assert!(
        main_row.contains("| host link | host link |"),
        "{main_row}\n{report}"
    );
    // One row per variant; the serial one overlaps nothing.
    let (_, section) = report.split_once("### Host programs").unwrap();
    let row = |first: &str| {
        section
            .lines()
            .find(|l| l.starts_with(&format!("| {first} ")))
            .unwrap_or_else(|| panic!("no row {first}: {section}"))
            .to_string()
    };
    let serial = row("`serial`");
    assert!(
        serial.contains("| 0% |") && serial.contains("not checked"),
        "{serial}"
    );
    row("`chunked[CHUNKS=2]`");
    // The chunked job's steps: each label once, its two chunks summed over both streams.
    let (_, chunked_steps) = section.split_once("Steps of `chunked[CHUNKS=2]`").unwrap();
    let h2d = chunked_steps
        .lines()
        .find(|l| l.starts_with("| `h2d h_a`"))
        .unwrap();
    assert!(
        h2d.contains("| h2d ") && h2d.contains("| 2 ") && h2d.contains("| s[0], s[1] "),
        "{h2d}"
    );

    // A timeline per job, each linked from the report, each saying MOCK in its title.
    let files = timelines(&run);
    assert_eq!(
        files.len(),
        2,
        "{:?}",
        files.iter().map(|f| &f.0).collect::<Vec<_>>()
    );
    for (file, svg) in &files {
        assert!(
            report.contains(&format!("]({file})")),
            "{file} is not linked: {report}"
        );
        assert!(
            svg.starts_with("<svg") && svg.contains("MOCK: stand-in times, nothing ran"),
            "{file}: {svg}"
        );
    }
    let chunked = &files
        .iter()
        .find(|(f, _)| f.starts_with("timelines/chunked-chunks-2-n-1048576-"))
        .unwrap()
        .1;
    for lane in ["s[0]", "s[1]"] {
        assert!(
            chunked.contains(&format!("\n{lane}\n")),
            "no lane {lane}: {chunked}"
        );
    }

    // `gpu-lab report --write` draws them again, the same.
    std::fs::remove_dir_all(run.join("timelines")).unwrap();
    lab(d.path())
        .arg("report")
        .arg(&run)
        .arg("--write")
        .assert()
        .code(0);
    assert_eq!(timelines(&run), files);
    assert_eq!(
        std::fs::read_to_string(run.join("report.md")).unwrap(),
        report
    );
}
