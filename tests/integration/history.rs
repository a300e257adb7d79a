//! Results outside the checkout and the history of runs: a run with no --out writes only into the data directory; three runs show as a trend; `check --baseline last:K`; a torn history file costs only itself; the BMF and github-action-benchmark exports have the shapes their tools document.

use std::path::Path;

use serde_json::Value;

use crate::common::{gpu_lab_in, h200_run, kernels_dir, stdout};

/// gpu-lab in `cwd` with its data directory `data`, its cache under `data` and the built-in suites.
fn lab(cwd: &Path, data: &Path) -> assert_cmd::Command {
    let mut c = gpu_lab_in(cwd);
    c.env("GPU_LAB_DATA", data)
        .env("GPU_LAB_CACHE", data.join("cache"))
        .env("GPU_LAB_KERNELS", kernels_dir());
    c
}

/// A quiet mock run of the shared-memory suite with no --out (extra arguments first); its directory.
fn mock_run(cwd: &Path, data: &Path, extra: &[&str]) -> String {
    let out = lab(cwd, data)
        .arg("--mock-gpu")
        .args(extra)
        .args(["run", "--suite", "shared-memory", "--quiet"])
        .assert()
        .code(0);
    stdout(&out).trim().to_string()
}

#[test]
fn a_run_writes_nothing_where_it_is_started_and_three_runs_make_a_trend() {
    let cwd = tempfile::tempdir().unwrap();
    let data = tempfile::tempdir().unwrap();
    let runs: Vec<String> = (0..3)
        .map(|_| mock_run(cwd.path(), data.path(), &[]))
        .collect();
    assert_eq!(
        std::fs::read_dir(cwd.path()).unwrap().count(),
        0,
        "a run wrote into the directory it was started in"
    );
    for r in &runs {
        assert!(Path::new(r).starts_with(data.path().join("runs")), "{r}");
    }
    let history = data.path().join("history/shared-memory");
    let files: Vec<_> = walk(&history);
    assert_eq!(files.len(), 3, "one file per run: {files:?}");
    assert!(files.iter().all(|f| f.extension().unwrap() == "parquet"));

    let md = stdout(
        &lab(cwd.path(), data.path())
            .args(["history", "--suite", "shared-memory"])
            .assert()
            .code(0),
    );
    assert!(md.contains("# History of `shared-memory` — MOCK"), "{md}");
    assert!(md.contains("3 runs"), "{md}");
    assert!(md.contains("| run started (UTC)"), "{md}");
    let csv = stdout(
        &lab(cwd.path(), data.path())
            .args(["history", "--suite", "shared-memory", "--format", "csv"])
            .assert()
            .code(0),
    );
    let mut reader = ::csv::Reader::from_reader(csv.as_bytes());
    let run_col = reader
        .headers()
        .unwrap()
        .iter()
        .position(|h| h == "run_id")
        .unwrap();
    let mut seen: Vec<String> = reader
        .records()
        .map(|r| r.unwrap()[run_col].to_string())
        .collect();
    seen.sort();
    seen.dedup();
    assert_eq!(seen.len(), 3, "{csv}");
    let svg = stdout(
        &lab(cwd.path(), data.path())
            .args([
                "history",
                "--suite",
                "shared-memory",
                "--format",
                "svg",
                "--measure",
                "gb_per_s",
            ])
            .assert()
            .code(0),
    );
    assert!(
        svg.starts_with("<svg") && svg.contains("over 3 runs"),
        "{svg}"
    );
}

fn walk(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        if e.path().is_dir() {
            out.extend(walk(&e.path()));
        } else {
            out.push(e.path());
        }
    }
    out
}

#[test]
fn check_against_the_last_runs_passes_the_same_and_fails_a_slowdown() {
    let cwd = tempfile::tempdir().unwrap();
    let data = tempfile::tempdir().unwrap();
    // Nothing in the history yet: a clear error.
    let none = lab(cwd.path(), data.path())
        .args([
            "--mock-gpu",
            "check",
            "--baseline",
            "last:3",
            "--suite",
            "shared-memory",
            "--quiet",
        ])
        .assert()
        .code(1);
    let err = String::from_utf8_lossy(&none.get_output().stderr).to_string();
    assert!(
        err.contains("no earlier run") && err.contains("fix:"),
        "{err}"
    );
    for _ in 0..2 {
        mock_run(cwd.path(), data.path(), &[]);
    }
    let same = stdout(
        &lab(cwd.path(), data.path())
            .args([
                "--mock-gpu",
                "check",
                "--baseline",
                "last:3",
                "--suite",
                "shared-memory",
                "--quiet",
            ])
            .assert()
            .code(0),
    );
    assert!(same.contains("the last 3 runs in the history"), "{same}");
    let slow = lab(cwd.path(), data.path())
        .args([
            "--mock-gpu",
            "--mock-slow",
            "transpose_fast=1.5",
            "check",
            "--baseline",
            "last:3",
            "--suite",
            "shared-memory",
            "--quiet",
            "--format",
            "json",
        ])
        .assert()
        .code(3);
    let verdicts: Value = serde_json::from_str(&stdout(&slow)).unwrap();
    assert_eq!(verdicts["regressed"], true);
    for bad in ["last:0", "last:x", "last:-1"] {
        let e = lab(cwd.path(), data.path())
            .args([
                "--mock-gpu",
                "check",
                "--baseline",
                bad,
                "--suite",
                "shared-memory",
            ])
            .assert()
            .code(1);
        let text = String::from_utf8_lossy(&e.get_output().stderr).to_string();
        assert!(text.contains("last:K"), "{bad}: {text}");
    }
}

#[test]
fn a_torn_history_file_costs_only_itself() {
    let cwd = tempfile::tempdir().unwrap();
    let data = tempfile::tempdir().unwrap();
    mock_run(cwd.path(), data.path(), &[]);
    mock_run(cwd.path(), data.path(), &[]);
    let files = walk(&data.path().join("history/shared-memory"));
    let bytes = std::fs::read(&files[0]).unwrap();
    std::fs::write(&files[0], &bytes[..bytes.len() / 3]).unwrap();
    let out = lab(cwd.path(), data.path())
        .args(["history", "--suite", "shared-memory"])
        .assert()
        .code(0);
    let err = String::from_utf8_lossy(&out.get_output().stderr).to_string();
    assert!(err.contains("skipped an unreadable history file"), "{err}");
    assert!(stdout(&out).contains(". 1 run;"), "{}", stdout(&out));
}

#[test]
fn with_no_data_directory_and_no_out_a_run_says_how_to_fix_it() {
    let cwd = tempfile::tempdir().unwrap();
    let out = gpu_lab_in(cwd.path())
        .env_remove("GPU_LAB_DATA")
        .env_remove("XDG_DATA_HOME")
        .env_remove("HOME")
        .env("GPU_LAB_CACHE", cwd.path().join("cache"))
        .env("GPU_LAB_KERNELS", kernels_dir())
        .args(["--mock-gpu", "run", "--suite", "shared-memory"])
        .assert()
        .code(1);
    let err = String::from_utf8_lossy(&out.get_output().stderr).to_string();
    assert!(
        err.contains("GPU_LAB_DATA") && err.contains("--out"),
        "{err}"
    );
    assert!(!cwd.path().join("runs").exists());
    // No history yet: `history` says so and how to make one.
    let data = tempfile::tempdir().unwrap();
    let e = lab(cwd.path(), data.path())
        .args(["history", "--suite", "shared-memory"])
        .assert()
        .code(1);
    assert!(String::from_utf8_lossy(&e.get_output().stderr).contains("no run of suite"));
}

/// The shape https://bencher.dev/docs/reference/bencher-metric-format/ documents (its JSON
/// schema): an object of benchmarks, each an object of measures, each an object with a number
/// `value` and optional numbers `lower_value` and `upper_value`, nothing else.
#[test]
fn the_bmf_export_has_the_documented_shape() {
    let text = stdout(
        &crate::common::gpu_lab()
            .args([
                "report",
                &h200_run().display().to_string(),
                "--format",
                "bmf",
            ])
            .assert()
            .code(0),
    );
    let v: Value = serde_json::from_str(&text).unwrap();
    let benchmarks = v.as_object().expect("an object of benchmarks");
    assert!(!benchmarks.is_empty());
    for (name, measures) in benchmarks {
        assert!(
            !name.is_empty() && name.starts_with("transpose: "),
            "{name}"
        );
        let measures = measures.as_object().expect("an object of measures");
        assert!(measures.contains_key("latency"), "{name}");
        for (measure, metric) in measures {
            let metric = metric.as_object().unwrap();
            assert!(metric["value"].is_number(), "{name} {measure}");
            for (k, x) in metric {
                assert!(
                    ["value", "lower_value", "upper_value"].contains(&k.as_str()),
                    "{k}"
                );
                assert!(x.is_number());
            }
            let (lo, val, hi) = (
                metric["lower_value"].as_f64().unwrap(),
                metric["value"].as_f64().unwrap(),
                metric["upper_value"].as_f64().unwrap(),
            );
            assert!(lo <= val && val <= hi, "{name} {measure}");
        }
        // Latency in ns, as Bencher's built-in Latency Measure: a transpose takes microseconds.
        assert!(measures["latency"]["value"].as_f64().unwrap() > 1e3);
    }
}

/// The shape github-action-benchmark reads for `customSmallerIsBetter` and
/// `customBiggerIsBetter` (https://github.com/benchmark-action/github-action-benchmark, custom
/// benchmarks; `BenchmarkResult` in its src/extract.ts): an array of objects with a string
/// `name`, a number `value`, a string `unit`, and optional strings `range` and `extra`.
#[test]
fn the_github_benchmark_exports_have_the_documented_shape() {
    for (format, unit) in [
        ("github-benchmark", "ms"),
        ("github-benchmark-bigger", "GB/s"),
    ] {
        let text = stdout(
            &crate::common::gpu_lab()
                .args([
                    "report",
                    &h200_run().display().to_string(),
                    "--format",
                    format,
                ])
                .assert()
                .code(0),
        );
        let v: Value = serde_json::from_str(&text).unwrap();
        let entries = v.as_array().expect("an array of results");
        assert!(!entries.is_empty());
        for e in entries {
            let e = e.as_object().unwrap();
            assert!(
                e["name"].is_string() && e["value"].is_number() && e["unit"].is_string(),
                "{e:?}"
            );
            for (k, x) in e {
                match k.as_str() {
                    "name" | "unit" | "range" | "extra" => assert!(x.is_string(), "{k}"),
                    "value" => assert!(x.is_number()),
                    other => panic!("{other} is not a field of the format"),
                }
            }
        }
        assert!(entries.iter().any(|e| e["unit"] == unit), "{format}");
        let names: Vec<&str> = entries
            .iter()
            .map(|e| e["name"].as_str().unwrap())
            .collect();
        let mut unique = names.clone();
        unique.sort();
        unique.dedup();
        assert_eq!(unique.len(), names.len(), "names are unique: {names:?}");
    }
}

/// The committed GPU-made example (examples/history, an H200): its Parquet history, read back by
/// this build, renders the committed table byte for byte, and its exports parse as their tools'
/// formats.
#[test]
fn the_committed_gpu_history_renders_as_committed() {
    let example = crate::common::repo().join("examples/history");
    let md = stdout(
        &crate::common::gpu_lab()
            .env("GPU_LAB_DATA", example.join("data"))
            .args(["history", "--suite", "shared-memory"])
            .assert()
            .code(0),
    );
    assert_eq!(
        md,
        std::fs::read_to_string(example.join("history.md")).unwrap()
    );
    assert!(md.contains("NVIDIA H200") && md.contains("3 runs"), "{md}");
    let bmf: Value =
        serde_json::from_str(&std::fs::read_to_string(example.join("bmf.json")).unwrap()).unwrap();
    assert!(
        bmf.as_object()
            .unwrap()
            .values()
            .all(|m| m["latency"]["value"].is_number())
    );
    for file in ["github-benchmark.json", "github-benchmark-bigger.json"] {
        let v: Value =
            serde_json::from_str(&std::fs::read_to_string(example.join(file)).unwrap()).unwrap();
        assert!(
            v.as_array()
                .unwrap()
                .iter()
                .all(|e| e["value"].is_number() && e["name"].is_string())
        );
    }
}
