//! `--shape` on run and profile (one sweep point while iterating, or one per suite over the catalogue) and `profile --counters-only` (passes with no timing), through the mock.

use std::collections::BTreeSet;
use std::path::Path;

use predicates::prelude::*;
use serde_json::Value;

use crate::common::{gpu_lab_with_cache_in, mock_gpu_lab_in, mock_run_in, results_text, stdout};

fn records(run: &Path) -> Vec<Value> {
    results_text(run)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// The groups of a run's records of `kind`.
fn groups(run: &Path, kind: &str) -> BTreeSet<String> {
    records(run)
        .iter()
        .filter(|r| r["kind"] == kind)
        .map(|r| r["group"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn a_named_shape_runs_only_the_jobs_at_that_point() {
    let d = tempfile::tempdir().unwrap();
    let run = mock_run_in(
        d.path(),
        ["--suite", "transpose", "--shape", "NX = 1024, NY = 2048"],
    );
    assert_eq!(
        groups(&run, "job"),
        BTreeSet::from(["NX=1024,NY=2048".to_string()])
    );
    assert_eq!(
        groups(&run, "bounds"),
        BTreeSet::from(["NX=1024,NY=2048".to_string()]),
        "bounds only where jobs run"
    );
    let all = mock_run_in(d.path(), ["--suite", "transpose", "--variant", "copy_row"]);
    assert_eq!(groups(&all, "job").len(), 4, "without --shape, every point");
}

#[test]
fn first_and_smallest_pick_one_point_of_every_suite() {
    let d = tempfile::tempdir().unwrap();
    let out = mock_gpu_lab_in(d.path())
        .args([
            "run",
            "--suite",
            "transpose,shared-memory",
            "--shape",
            "smallest",
            "--out",
            "runs",
            "--quiet",
        ])
        .assert()
        .code(0);
    let runs: Vec<String> = stdout(&out).lines().map(str::to_string).collect();
    assert_eq!(runs.len(), 2);
    let picked: Vec<BTreeSet<String>> = runs
        .iter()
        .map(|r| groups(&d.path().join(r), "job"))
        .collect();
    assert_eq!(picked[0], BTreeSet::from(["NX=1024,NY=2048".to_string()]));
    assert_eq!(picked[1], BTreeSet::from(["NX=4000,NY=2000".to_string()]));
    let first = mock_run_in(d.path(), ["--suite", "transpose", "--shape", "first"]);
    assert_eq!(
        groups(&first, "job"),
        BTreeSet::from(["NX=4000,NY=4000".to_string()])
    );
}

#[test]
fn an_unknown_shape_fails_before_any_job_and_lists_the_shapes_there_are() {
    let d = tempfile::tempdir().unwrap();
    mock_gpu_lab_in(d.path())
        .args([
            "run",
            "--suite",
            "transpose",
            "--shape",
            "NX=999",
            "--out",
            "runs",
        ])
        .assert()
        .failure()
        .stderr(
            predicate::str::contains("`NX=999`")
                .and(predicate::str::contains("NX=8192,NY=8192"))
                .and(predicate::str::contains("fix:")),
        );
    assert!(!d.path().join("runs").exists(), "no run directory opened");
    gpu_lab_with_cache_in(d.path())
        .args(["--mock-gpu", "run", "--suite", "transpose", "--shape", "NX"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("NAME=VALUE"));
}

#[test]
fn counters_only_profiles_every_job_without_timing_and_says_so() {
    let d = tempfile::tempdir().unwrap();
    let out = mock_gpu_lab_in(d.path())
        .args([
            "profile",
            "--suite",
            "shared-memory",
            "--shape",
            "NX=4000",
            "--counters-only",
            "--out",
            "runs",
            "--quiet",
        ])
        .assert()
        .code(0);
    let run = d.path().join(stdout(&out).trim());
    let recs = records(&run);
    let kinds: BTreeSet<&str> = recs.iter().map(|r| r["kind"].as_str().unwrap()).collect();
    assert_eq!(
        kinds,
        BTreeSet::from(["profile"]),
        "no job or bounds record"
    );
    let profiled: Vec<&str> = recs.iter().map(|r| r["job_id"].as_str().unwrap()).collect();
    assert_eq!(profiled.len(), 15, "every job of the point: {profiled:?}");
    assert!(profiled.iter().all(|j| j.ends_with("@ NX=4000,NY=2000")));
    let info: Value =
        serde_json::from_str(&std::fs::read_to_string(run.join("run.json")).unwrap()).unwrap();
    assert!(
        info["wall_seconds"].as_f64().is_some(),
        "its wall time: {info}"
    );
    let report = std::fs::read_to_string(run.join("report.md")).unwrap();
    assert!(
        report.contains("none: counters only (`--counters-only`)"),
        "{report}"
    );
    assert!(report.contains("## Counters (no job timed or checked"));
    let table_rows = report
        .lines()
        .filter(|l| l.starts_with("| ") && l.contains("@ NX=4000,NY=2000"))
        .count();
    assert_eq!(table_rows, 15, "one row a job:\n{report}");
}

#[test]
fn counters_only_with_no_duration_session_profiles_without_a_panic() {
    // `--duration-runs 0` takes each job's duration from its timing; `--counters-only` times
    // nothing, so there is none to take (a lane's thread panicked here before).
    let d = tempfile::tempdir().unwrap();
    let out = mock_gpu_lab_in(d.path())
        .args([
            "profile",
            "--suite",
            "occupancy",
            "--shape",
            "smallest",
            "--counters-only",
            "--duration-runs",
            "0",
            "--out",
            "runs",
            "--quiet",
        ])
        .assert()
        .code(0);
    let run = d.path().join(stdout(&out).trim());
    let recs = records(&run);
    assert!(!recs.is_empty());
    assert!(
        recs.iter()
            .all(|r| r["kind"] == "profile" && r["error"].is_null())
    );
}

#[test]
fn counters_only_refuses_the_timing_options_it_would_ignore() {
    let d = tempfile::tempdir().unwrap();
    for (flag, value) in [
        ("--rounds", "3"),
        ("--max-seconds", "0.2"),
        ("--verify-every", "2"),
    ] {
        gpu_lab_with_cache_in(d.path())
            .args([
                "--mock-gpu",
                "profile",
                "--suite",
                "transpose",
                "--counters-only",
                flag,
                value,
            ])
            .assert()
            .code(2)
            .stderr(predicate::str::contains("--counters-only"));
    }
}
