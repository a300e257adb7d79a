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

/// The small suite with a sweep of two sizes, two variants, and these extra manifest lines.
fn shaped_suite(dir: &Path, suite_line: &str, variant_line: &str) -> std::path::PathBuf {
    let manifest = crate::common::SMALL_SUITE
        .replace("N = [1024]", "N = [65536, 1048576]")
        .replace(
            "source = \"k.cu\"\n",
            &format!("source = \"k.cu\"\n{suite_line}\n"),
        );
    let manifest = format!(
        "{manifest}{variant_line}\n[[variants]]\nname = \"w\"\nkernel = \"k\"\nblock = [\"128\"]\ngrid = [\"ceil_div(N, 128)\"]\nargs = [\"x\", \"N\"]\n"
    );
    crate::common::write_small_suite(dir, &manifest)
        .parent()
        .unwrap()
        .parent()
        .unwrap()
        .to_path_buf()
}

#[test]
fn a_shape_the_manifest_names_is_where_each_variant_is_sanitized() {
    let dir = tempfile::tempdir().unwrap();
    // The suite says N = 4096 (no point of the sweep); variant v says N = 1048576.
    let suites = shaped_suite(
        dir.path(),
        "sanitize = { shape = { N = 4096 } }",
        "sanitize = { shape = { N = 1048576 } }",
    );
    let run = mock_run_in(
        dir.path(),
        [
            "--suite",
            "mine",
            "--suite-dir",
            suites.to_str().unwrap(),
            "--sanitize",
            "memcheck",
            "--sanitize-only",
        ],
    );
    let groups: Vec<(String, String)> = sanitize_lines(&run)
        .iter()
        .map(|l| {
            (
                l["variant"].as_str().unwrap().to_string(),
                l["group"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    assert_eq!(
        groups,
        [
            ("v".to_string(), "N=1048576".to_string()),
            ("w".to_string(), "N=4096".to_string())
        ]
    );
}

#[test]
fn a_sanitize_shape_naming_no_axis_or_leaving_one_out_is_refused_with_the_fix() {
    let dir = tempfile::tempdir().unwrap();
    for (suite_line, says, fix) in [
        (
            "sanitize = { shape = { M = 4096 } }",
            "the sanitize shape names `M`, which no axis binds and no [params] entry has (the suite's axes bind `N`; its [params] are none)",
            "sanitize = { shape = { N = 1024 } }",
        ),
        (
            "sanitize = { shape = {} }",
            "the sanitize shape gives no value for `N`",
            "give a value for every axis name",
        ),
        ("sanitize = { N = 4096 }", "unknown field `N`", ""),
    ] {
        let suites = shaped_suite(dir.path(), suite_line, "");
        let out = gpu_lab_with_cache_in(dir.path())
            .args(["--mock-gpu", "run", "--suite", "mine", "--suite-dir"])
            .arg(&suites)
            .args(["--sanitize", "memcheck", "--sanitize-only", "--out", "runs"])
            .assert()
            .failure();
        let err = String::from_utf8_lossy(&out.get_output().stderr).to_string();
        assert!(err.contains(says), "{suite_line}: {err}");
        assert!(err.contains(fix), "{suite_line}: {err}");
        assert!(
            err.contains("suite.toml:"),
            "names the file and line: {err}"
        );
    }
}

#[test]
fn a_sanitize_shape_may_change_a_suites_params() {
    let dir = tempfile::tempdir().unwrap();
    let manifest = crate::common::SMALL_SUITE
        .replace("[axes]\nN = [1024]", "[params]\nN = 1048576")
        .replace(
            "source = \"k.cu\"\n",
            "source = \"k.cu\"\nsanitize = { shape = { N = 1024 } }\n",
        );
    let suites = crate::common::write_small_suite(dir.path(), &manifest)
        .parent()
        .unwrap()
        .parent()
        .unwrap()
        .to_path_buf();
    let run = mock_run_in(
        dir.path(),
        [
            "--suite",
            "mine",
            "--suite-dir",
            suites.to_str().unwrap(),
            "--sanitize",
            "memcheck",
            "--sanitize-only",
        ],
    );
    let lines = sanitize_lines(&run);
    assert_eq!(lines.len(), 1, "{lines:?}");
    assert_eq!(
        lines[0]["group"], "N=1024",
        "the params' N = 1048576 changed"
    );
}
