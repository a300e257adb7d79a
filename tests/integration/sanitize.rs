//! `--sanitize` through the mock executor: the stage's choices (one job per variant, racecheck only where a kernel uses shared memory), its records, the report's section, the frame's column, `--sanitize-only` and the errors of the command line.

use std::path::Path;

use crate::common::{gpu_lab_with_cache_in, mock_run_in, repo};

fn planted_dir() -> std::path::PathBuf {
    repo().join("tests/gpu")
}

fn sanitize_lines(run: &Path) -> Vec<serde_json::Value> {
    std::fs::read_to_string(run.join("results.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .filter(|v| v["kind"] == "sanitize")
        .collect()
}

#[test]
fn sanitize_only_records_each_variant_once_per_tool_at_its_smallest_group_and_times_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let run = mock_run_in(
        dir.path(),
        [
            "--suite",
            "sanitize-planted",
            "--suite-dir",
            planted_dir().to_str().unwrap(),
            "--sanitize",
            "racecheck,memcheck",
            "--sanitize-only",
        ],
    );
    let lines = sanitize_lines(&run);
    assert_eq!(lines.len(), 8, "4 variants x 2 tools: {lines:?}");
    assert!(
        lines.iter().all(|l| l["group"] == "N=65536"),
        "the smallest group"
    );
    let tools: Vec<&str> = lines.iter().map(|l| l["tool"].as_str().unwrap()).collect();
    assert_eq!(
        tools,
        [["memcheck"; 4], ["racecheck"; 4]].concat(),
        "tool by tool, in their order of cost"
    );
    let batched: Vec<Option<u64>> = lines.iter().map(|l| l["batch_of"].as_u64()).collect();
    assert_eq!(
        batched,
        [[Some(4); 4].as_slice(), &[None, None, Some(2), Some(2)]].concat(),
        "one child for the 4 variants under memcheck, one for the 2 racecheck checks"
    );
    let skipped: Vec<&str> = lines
        .iter()
        .filter(|l| l["skipped"].is_string())
        .map(|l| l["variant"].as_str().unwrap())
        .collect();
    assert_eq!(
        skipped,
        ["clean", "oob_write"],
        "no shared memory in their kernels"
    );
    let results = std::fs::read_to_string(run.join("results.jsonl")).unwrap();
    assert!(!results.contains(r#""kind":"job""#), "nothing timed");
    let report = std::fs::read_to_string(run.join("report.md")).unwrap();
    assert!(
        report.contains("## Sanitizer (compute-sanitizer)"),
        "{report}"
    );
    assert!(report.contains("MOCK"), "a mock verdict says MOCK");
}

#[test]
fn a_sanitized_run_times_its_jobs_and_the_frame_carries_the_verdicts() {
    let dir = tempfile::tempdir().unwrap();
    let run = mock_run_in(
        dir.path(),
        [
            "--suite",
            "sanitize-planted",
            "--suite-dir",
            planted_dir().to_str().unwrap(),
            "--variant",
            "smem_race",
            "--sanitize",
            "synccheck",
        ],
    );
    assert_eq!(sanitize_lines(&run).len(), 1);
    let csv = std::fs::read_to_string(run.join("results.csv")).unwrap();
    let header = csv.lines().next().unwrap();
    assert!(header.contains("sanitized"), "{header}");
    assert_eq!(
        csv.matches("synccheck: clean (MOCK").count(),
        2,
        "both jobs: {csv}"
    );
}

#[test]
fn sanitize_only_without_tools_and_an_unknown_tool_are_usage_errors() {
    let dir = tempfile::tempdir().unwrap();
    for args in [vec!["--sanitize-only"], vec!["--sanitize", "leakcheck"]] {
        gpu_lab_with_cache_in(dir.path())
            .args(["--mock-gpu", "run", "--suite", "copy"])
            .args(&args)
            .assert()
            .code(2);
    }
}
