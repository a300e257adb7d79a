//! `--profiler cupti|ncu` on the command line, and the hidden `__cupti` child where there is no GPU: clear errors, never a panic.

use assert_cmd::Command;
use predicates::prelude::*;

use crate::common::{gpu_lab_with_cache_in, kernels_dir};

fn lab(dir: &std::path::Path) -> Command {
    let mut c = gpu_lab_with_cache_in(dir);
    c.env("GPU_LAB_KERNELS", kernels_dir());
    c
}

#[test]
fn an_unknown_profiler_is_a_usage_error_naming_the_choices() {
    let d = tempfile::tempdir().unwrap();
    lab(d.path())
        .args([
            "--mock-gpu",
            "profile",
            "--suite",
            "transpose",
            "--profiler",
            "nvprof",
        ])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("cupti").and(predicate::str::contains("ncu")));
}

#[test]
fn both_profilers_are_accepted_by_profile_and_the_mock_profiles_every_job() {
    for profiler in ["cupti", "ncu"] {
        let d = tempfile::tempdir().unwrap();
        let out = lab(d.path())
            .args([
                "--mock-gpu",
                "profile",
                "--suite",
                "shared-memory",
                "--profiler",
                profiler,
                "--out",
                "runs",
                "--quiet",
            ])
            .assert()
            .code(0);
        let run = String::from_utf8_lossy(&out.get_output().stdout)
            .trim()
            .to_string();
        let results = std::fs::read_to_string(d.path().join(run).join("results.jsonl")).unwrap();
        let profiles = results
            .lines()
            .filter(|l| l.contains("\"kind\":\"profile\""))
            .count();
        assert!(profiles > 10, "{profiler}: {profiles} profile records");
    }
}

#[test]
fn the_cupti_child_without_a_gpu_fails_with_a_message_not_a_panic() {
    let d = tempfile::tempdir().unwrap();
    std::fs::write(d.path().join("specs.json"), "[]").unwrap();
    std::fs::write(d.path().join("counters.json"), "[\"dram__bytes_read.sum\"]").unwrap();
    let out = lab(d.path())
        .args([
            "__cupti",
            "--specs",
            "specs.json",
            "--counters",
            "counters.json",
            "--out",
            "out.json",
            "--gpu",
            "0",
            "--seed",
            "1",
        ])
        .current_dir(d.path())
        .assert()
        .failure();
    let stderr = String::from_utf8_lossy(&out.get_output().stderr).to_string();
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert!(!stderr.trim().is_empty());
    assert!(!d.path().join("out.json").exists());
}
