//! The whole cycle a CI job runs — profile, baseline save, check unchanged (exit 0), check slowed (exit 3) — without a GPU, through the hidden `--mock-gpu` executor; and the rule that nothing a mock makes passes for a measurement.

use std::path::Path;

use assert_cmd::Command;
use predicates::prelude::*;
use serde_json::Value;

use crate::common::{gpu_lab_with_cache_in, h200_run, kernels_dir, stdout};

/// gpu-lab in the scratch directory `dir`, with its cache there and the built-in suites.
fn lab(dir: &Path) -> Command {
    let mut c = gpu_lab_with_cache_in(dir);
    c.env("GPU_LAB_KERNELS", kernels_dir());
    c
}

#[test]
fn profile_then_baseline_then_check_runs_end_to_end_and_says_mock_everywhere() {
    let d = tempfile::tempdir().unwrap();
    let run = stdout(
        &lab(d.path())
            .args([
                "--mock-gpu",
                "profile",
                "--suite",
                "shared-memory",
                "--out",
                "runs",
                "--quiet",
            ])
            .assert()
            .code(0),
    );
    let run_dir = d.path().join(run.trim());
    assert!(
        run_dir
            .file_name()
            .unwrap()
            .to_string_lossy()
            .ends_with("-shared-memory-mock"),
        "{run}"
    );
    let info: Value =
        serde_json::from_str(&std::fs::read_to_string(run_dir.join("run.json")).unwrap()).unwrap();
    assert_eq!(info["mock"], true);
    assert!(info["device"]["name"].as_str().unwrap().contains("MOCK"));
    let report = std::fs::read_to_string(run_dir.join("report.md")).unwrap();
    assert!(
        report.starts_with("# gpu-lab report: shared-memory (MOCK)")
            && report.contains("not a measurement"),
        "{report}"
    );
    // The mock verifies nothing, so no job is reported correct.
    assert!(report.contains("not checked") && !report.contains("| yes |"));
    let results = std::fs::read_to_string(run_dir.join("results.jsonl")).unwrap();
    let profiles = results
        .lines()
        .filter(|l| l.contains("\"kind\":\"profile\""))
        .count();
    let jobs = results
        .lines()
        .filter(|l| l.contains("\"kind\":\"job\""))
        .count();
    assert!(
        jobs > 20 && profiles == jobs,
        "{jobs} jobs, {profiles} profiles"
    );
    let metrics_csv = std::fs::read_to_string(run_dir.join("metrics.csv")).unwrap();
    assert!(
        metrics_csv.lines().all(|l| l.contains("MOCK")),
        "{metrics_csv}"
    );
    let svg = std::fs::read_to_string(run_dir.join("chart.svg")).unwrap();
    assert!(svg.contains("MOCK GPU"));
    let frame = std::fs::read_to_string(run_dir.join("results.csv")).unwrap();
    assert_eq!(frame.lines().count(), 1 + jobs);
    let mut r = csv::Reader::from_reader(frame.as_bytes());
    let mock_column = r
        .headers()
        .unwrap()
        .iter()
        .position(|h| h == "mock")
        .unwrap();
    assert!(r.records().all(|row| &row.unwrap()[mock_column] == "true"));

    // A baseline must hold measurements: a mock run is refused unless asked for.
    lab(d.path())
        .args(["baseline", "save", "mock", "--from", run.trim()])
        .assert()
        .code(1)
        .stderr(predicate::str::contains("MOCK run").and(predicate::str::contains("fix:")));
    lab(d.path())
        .args([
            "baseline",
            "save",
            "mock",
            "--from",
            run.trim(),
            "--allow-mock",
        ])
        .assert()
        .code(0);

    // Unchanged: every job Same, exit 0.
    let same = stdout(
        &lab(d.path())
            .args([
                "--mock-gpu",
                "check",
                "--baseline",
                "mock",
                "--suite",
                "shared-memory",
                "--out",
                "runs",
                "--quiet",
            ])
            .assert()
            .code(0),
    );
    assert!(
        same.contains("MOCK") && !same.contains("Regressed"),
        "{same}"
    );

    // One variant 30% slower: it alone regresses, exit 3.
    let slow = lab(d.path())
        .args([
            "--mock-gpu",
            "--mock-slow",
            "transpose_fast=1.3",
            "check",
            "--baseline",
            "mock",
            "--suite",
            "shared-memory",
            "--out",
            "runs",
            "--quiet",
            "--format",
            "json",
        ])
        .assert()
        .code(3);
    let verdicts: Value = serde_json::from_str(&stdout(&slow)).unwrap();
    let regressed: Vec<&str> = verdicts["comparison"]["jobs"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|j| j["verdict"] == "regressed")
        .map(|j| j["id"].as_str().unwrap())
        .collect();
    assert!(
        !regressed.is_empty() && regressed.iter().all(|id| id.starts_with("transpose_fast")),
        "{regressed:?}"
    );
    assert_eq!(verdicts["regressed"], true);
}

#[test]
fn a_mock_run_is_never_judged_against_a_measured_baseline() {
    let d = tempfile::tempdir().unwrap();
    let measured = h200_run();
    lab(d.path())
        .args([
            "baseline",
            "save",
            "h200",
            "--from",
            measured.to_str().unwrap(),
        ])
        .assert()
        .code(0);
    lab(d.path())
        .args([
            "--mock-gpu",
            "check",
            "--baseline",
            "h200",
            "--suite",
            "transpose",
            "--variant",
            "copy_row",
            "--out",
            "runs",
            "--quiet",
        ])
        .assert()
        .code(1)
        .stderr(
            predicate::str::contains("MOCK run").and(predicate::str::contains("cannot be judged")),
        );
}

#[test]
fn the_mock_flags_are_hidden_and_slowing_needs_the_mock() {
    let d = tempfile::tempdir().unwrap();
    lab(d.path())
        .args(["--mock-slow", "x=2", "run", "--suite", "transpose"])
        .assert()
        .code(2);
    lab(d.path())
        .args([
            "--mock-gpu",
            "--mock-slow",
            "x",
            "run",
            "--suite",
            "transpose",
        ])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("VARIANT=FACTOR"));
}

#[test]
fn a_compute_suite_gets_its_bound_peak_and_roofline_through_the_mock() {
    let d = tempfile::tempdir().unwrap();
    let run = stdout(
        &lab(d.path())
            .args([
                "--mock-gpu",
                "run",
                "--suite",
                "matmul",
                "--variant",
                "vectorized,naive",
                "--out",
                "runs",
                "--quiet",
            ])
            .assert()
            .code(0),
    );
    let dir = d.path().join(run.trim());
    let report = std::fs::read_to_string(dir.join("report.md")).unwrap();
    assert!(
        report.contains("% of cuBLAS SGEMM")
            && report.contains("math mode MOCK")
            && report.contains("8 SMs × 32 lanes"),
        "{report}"
    );
    let roofline = std::fs::read_to_string(dir.join("roofline.svg")).unwrap();
    assert!(roofline.contains("MOCK GPU") && roofline.matches("<circle").count() == 4);
    let results = std::fs::read_to_string(dir.join("results.jsonl")).unwrap();
    assert_eq!(
        results
            .lines()
            .filter(|l| l.contains("\"kind\":\"compute\""))
            .count(),
        2,
        "one cuBLAS bound per shape"
    );
}

#[test]
fn the_cache_state_is_a_setting_recorded_in_the_run() {
    let d = tempfile::tempdir().unwrap();
    let run = stdout(
        &lab(d.path())
            .args([
                "--mock-gpu",
                "run",
                "--suite",
                "transpose",
                "--variant",
                "copy_row",
                "--cache",
                "cold",
                "--out",
                "runs",
                "--quiet",
            ])
            .assert()
            .code(0),
    );
    let info: Value = serde_json::from_str(
        &std::fs::read_to_string(d.path().join(run.trim()).join("run.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(info["timing"]["cache"], "cold");
    assert!(info["cache_state"].as_str().unwrap().starts_with("L2 cold"));
    let suite_default = stdout(
        &lab(d.path())
            .args([
                "--mock-gpu",
                "run",
                "--suite",
                "transpose",
                "--variant",
                "copy_row",
                "--out",
                "runs",
                "--quiet",
            ])
            .assert()
            .code(0),
    );
    let info: Value = serde_json::from_str(
        &std::fs::read_to_string(d.path().join(suite_default.trim()).join("run.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(
        info["timing"]["cache"], "cold",
        "the suite's own state: built-in suites are timed cold"
    );
    let warm = stdout(
        &lab(d.path())
            .args([
                "--mock-gpu",
                "run",
                "--suite",
                "transpose",
                "--variant",
                "copy_row",
                "--cache",
                "warm",
                "--out",
                "runs",
                "--quiet",
            ])
            .assert()
            .code(0),
    );
    let info: Value = serde_json::from_str(
        &std::fs::read_to_string(d.path().join(warm.trim()).join("run.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(
        info["timing"]["cache"], "warm",
        "--cache overrides the suite"
    );
    lab(d.path())
        .args([
            "--mock-gpu",
            "run",
            "--suite",
            "transpose",
            "--cache",
            "lukewarm",
        ])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("cold"));
}

#[test]
fn rounds_interleave_the_variants_and_the_interval_is_across_rounds() {
    let d = tempfile::tempdir().unwrap();
    let run = stdout(
        &lab(d.path())
            .args([
                "--mock-gpu",
                "run",
                "--suite",
                "reduction",
                "--variant",
                "smem,warp_shuffle",
                "--rounds",
                "3",
                "--verify-every",
                "5",
                "--out",
                "runs",
                "--quiet",
            ])
            .assert()
            .code(0),
    );
    let run_dir = d.path().join(run.trim());
    let results = std::fs::read_to_string(run_dir.join("results.jsonl")).unwrap();
    let jobs: Vec<Value> = results
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|v| v["kind"] == "job")
        .collect();
    let group = jobs[0]["group"].as_str().unwrap().to_string();
    let in_group: Vec<&Value> = jobs
        .iter()
        .filter(|v| v["group"] == group.as_str())
        .collect();
    let per_round = in_group.len() / 3;
    assert!(
        per_round >= 2 && in_group.len() == 3 * per_round,
        "{} records",
        in_group.len()
    );
    // A B … A B … A B …: every round runs every job once before the next round starts, each
    // record holding the rounds so far.
    for (i, v) in in_group.iter().enumerate() {
        assert_eq!(v["id"], in_group[i % per_round]["id"]);
        assert_eq!(v["rounds"].as_array().unwrap().len(), i / per_round + 1);
    }
    let last = in_group.last().unwrap();
    let medians = last["samples_ms"].as_array().unwrap();
    assert_eq!(medians.len(), 3, "one median a round: {last}");
    assert!(
        last["rounds"]
            .as_array()
            .unwrap()
            .iter()
            .all(|r| r["samples_ms"].as_array().unwrap().len() >= 10),
        "each round keeps its own samples"
    );
    let info: Value =
        serde_json::from_str(&std::fs::read_to_string(run_dir.join("run.json")).unwrap()).unwrap();
    assert_eq!(info["timing"]["rounds"], 3);
    assert_eq!(
        info["timing"]["verify_every"], 5,
        "the verification cadence is part of the run's timing settings"
    );
    let report = std::fs::read_to_string(run_dir.join("report.md")).unwrap();
    assert!(
        report.contains("3 rounds, variants interleaved"),
        "{report}"
    );
}

#[test]
fn shards_split_the_jobs_exactly_once_whatever_the_order_and_balance_them() {
    let d = tempfile::tempdir().unwrap();
    let plan = |suites: &str, shards: &str| -> Vec<(String, String)> {
        let out = stdout(
            &lab(d.path())
                .args(["plan", "--suite", suites, "--shards", shards])
                .assert()
                .code(0),
        );
        let mut rows: Vec<(String, String)> = out
            .lines()
            .map(|l| {
                let f: Vec<&str> = l.split('\t').collect();
                (f[0].to_string(), format!("{}/{}", f[2], f[3]))
            })
            .collect();
        rows.sort_by(|a, b| a.1.cmp(&b.1));
        rows
    };
    let a = plan("transpose,reduction", "3");
    let b = plan("reduction,transpose", "3");
    assert_eq!(
        a, b,
        "the split depends on the jobs, not the order the suites are named in"
    );
    let mut ids: Vec<&String> = a.iter().map(|(_, id)| id).collect();
    let all = ids.len();
    ids.dedup();
    assert_eq!(ids.len(), all, "every job once");
    let per: Vec<usize> = (0..3)
        .map(|s| a.iter().filter(|(x, _)| x == &s.to_string()).count())
        .collect();
    assert!(
        per.iter().max().unwrap() - per.iter().min().unwrap() <= 2,
        "balanced: {per:?}"
    );
    // Running the shards runs each job exactly once.
    let mut ran = Vec::new();
    for s in 0..3 {
        let dirs = stdout(
            &lab(d.path())
                .args([
                    "--mock-gpu",
                    "run",
                    "--suite",
                    "transpose,reduction",
                    "--shard",
                    &format!("{s}/3"),
                    "--out",
                    "runs",
                    "--quiet",
                ])
                .assert()
                .code(0),
        );
        for dir in dirs.lines() {
            let results =
                std::fs::read_to_string(d.path().join(dir).join("results.jsonl")).unwrap();
            for v in results
                .lines()
                .map(|l| serde_json::from_str::<Value>(l).unwrap())
                .filter(|v| v["kind"] == "job")
            {
                ran.push(format!(
                    "{}/{}",
                    dir.split('-').nth(1).unwrap_or(""),
                    v["id"].as_str().unwrap()
                ));
            }
        }
    }
    assert_eq!(
        ran.len(),
        all,
        "{} jobs run across the shards, {all} planned",
        ran.len()
    );
    lab(d.path())
        .args([
            "--mock-gpu",
            "run",
            "--suite",
            "transpose",
            "--shard",
            "3/3",
        ])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("below the count"));
}

#[test]
fn shard_runs_merge_into_one_run_and_mismatched_shards_are_refused() {
    let d = tempfile::tempdir().unwrap();
    let shard = |s: &str, variant: Option<&str>| {
        let mut args = vec![
            "--mock-gpu",
            "run",
            "--suite",
            "reduction",
            "--shard",
            s,
            "--out",
            "runs",
            "--quiet",
        ];
        if let Some(v) = variant {
            args.extend(["--variant", v]);
        }
        stdout(&lab(d.path()).args(&args).assert().code(0))
            .trim()
            .to_string()
    };
    let (a, b) = (shard("0/2", None), shard("1/2", None));
    let merged = stdout(
        &lab(d.path())
            .args(["merge", &a, &b, "--out", "merged"])
            .assert()
            .code(0),
    )
    .trim()
    .to_string();
    let dir = d.path().join(&merged);
    let info: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("run.json")).unwrap()).unwrap();
    assert_eq!(info["merged_from"].as_array().unwrap().len(), 2);
    assert!(info.get("shard").is_none(), "the merged run is whole");
    let jobs = std::fs::read_to_string(dir.join("results.jsonl"))
        .unwrap()
        .lines()
        .filter(|l| l.contains("\"kind\":\"job\""))
        .count();
    let planned = stdout(
        &lab(d.path())
            .args(["plan", "--suite", "reduction"])
            .assert()
            .code(0),
    )
    .lines()
    .count();
    assert_eq!(jobs, planned, "every job of the plan, once");
    assert!(dir.join("report.md").is_file());
    // It is a run like any other (a MOCK one here, so never a baseline): reports re-render from it.
    let report = stdout(&lab(d.path()).args(["report", &merged]).assert().code(0));
    assert!(
        report.contains("(MOCK)") && report.contains("`smem"),
        "{report}"
    );
    // Refusals: a shard missing, a shard twice, a shard of another plan.
    lab(d.path())
        .args(["merge", &a, "--out", "merged"])
        .assert()
        .code(1)
        .stderr(predicate::str::contains("1/2 of the plan are missing"));
    lab(d.path())
        .args(["merge", &a, &a, "--out", "merged"])
        .assert()
        .code(1)
        .stderr(predicate::str::contains("given twice"));
    let other = shard("1/2", Some("smem"));
    lab(d.path())
        .args(["merge", &a, &other, "--out", "merged"])
        .assert()
        .code(1)
        .stderr(predicate::str::contains("another plan"));
}

#[test]
fn several_runs_compare_as_one_chart_of_each_runs_own_bound() {
    let d = tempfile::tempdir().unwrap();
    let run = |variant: &str| {
        stdout(
            &lab(d.path())
                .args([
                    "--mock-gpu",
                    "run",
                    "--suite",
                    "transpose",
                    "--variant",
                    variant,
                    "--out",
                    "runs",
                    "--quiet",
                ])
                .assert()
                .code(0),
        )
        .trim()
        .to_string()
    };
    let (a, b, c) = (run("copy_row,naive_row"), run("copy_row"), run("naive_row"));
    let svg = stdout(
        &lab(d.path())
            .args(["compare", &a, &b, &c, "--format", "svg"])
            .assert()
            .code(0),
    );
    assert!(
        svg.starts_with("<svg") && svg.contains("% of each run&apos;s own bound"),
        "{}",
        &svg[..400.min(svg.len())]
    );
    for dir in [&a, &b, &c] {
        assert!(
            svg.contains(dir.as_str()),
            "every run is in the legend: {dir}"
        );
    }
    assert!(
        svg.contains("not in this run"),
        "a job one run lacks is said so"
    );
    let percentages = svg
        .split("</text>")
        .filter(|t| t.trim_end().ends_with('%'))
        .count();
    assert!(
        percentages >= 4,
        "bars carry their percentage: {percentages}"
    );
}

#[test]
fn gpus_all_spreads_one_run_over_the_hosts_gpus_and_tags_every_record() {
    let d = tempfile::tempdir().unwrap();
    let out = stdout(
        &lab(d.path())
            .args([
                "--mock-gpu",
                "profile",
                "--suite",
                "transpose",
                "--gpus",
                "all",
                "--out",
                "runs",
                "--quiet",
            ])
            .assert()
            .code(0),
    );
    let dirs: Vec<&str> = out.lines().collect();
    assert_eq!(dirs.len(), 1, "GPUs of one model make one run: {out}");
    let dir = d.path().join(dirs[0]);
    let info: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("run.json")).unwrap()).unwrap();
    let uuids: Vec<&str> = info["gpus"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| g["uuid"].as_str().unwrap())
        .collect();
    assert_eq!(uuids, ["MOCK-GPU-0", "MOCK-GPU-1"]);
    let results = std::fs::read_to_string(dir.join("results.jsonl")).unwrap();
    for line in results.lines() {
        let r: Value = serde_json::from_str(line).unwrap();
        assert!(
            uuids.contains(&r["gpu"].as_str().unwrap_or("none")),
            "every record names its GPU: {line}"
        );
    }
    let report = std::fs::read_to_string(dir.join("report.md")).unwrap();
    assert!(
        report.contains("GPU 0: MOCK GPU") && report.contains("GPU 1: MOCK GPU"),
        "{report}"
    );
    // The merged-looking run re-renders like any other; checked against a one-GPU run, it names
    // both GPUs and says that it ran on other cards than the baseline.
    lab(d.path()).args(["report", dirs[0]]).assert().code(0);
    let one = stdout(
        &lab(d.path())
            .args([
                "--mock-gpu",
                "profile",
                "--suite",
                "transpose",
                "--gpu",
                "0",
                "--out",
                "one",
                "--quiet",
            ])
            .assert()
            .code(0),
    );
    lab(d.path())
        .args([
            "baseline",
            "save",
            "one",
            "--from",
            one.trim(),
            "--dir",
            "bl",
            "--quiet",
            "--allow-mock",
        ])
        .assert()
        .code(0);
    let check = stdout(
        &lab(d.path())
            .args([
                "check",
                "--baseline",
                "one",
                "--baseline-dir",
                "bl",
                "--from",
                dirs[0],
            ])
            .assert()
            .code(0),
    );
    assert!(
        check
            .lines()
            .any(|l| l.starts_with("| GPU") && l.contains("MOCK-GPU-0, MOCK-GPU-1")),
        "{check}"
    );
    assert!(
        check.contains("other cards of the same model: MOCK-GPU-0 → MOCK-GPU-0, MOCK-GPU-1"),
        "{check}"
    );
}

#[test]
fn gpus_of_different_models_each_run_every_job_into_a_run_of_their_own() {
    let d = tempfile::tempdir().unwrap();
    let out = stdout(
        &lab(d.path())
            .args([
                "--mock-gpu",
                "--mock-gpus",
                "A,B,A",
                "run",
                "--suite",
                "warp-divergence",
                "--gpus",
                "all",
                "--out",
                "runs",
                "--quiet",
            ])
            .assert()
            .code(0),
    );
    let mut dirs: Vec<&str> = out.lines().collect();
    dirs.sort();
    assert_eq!(dirs.len(), 2, "{out}");
    assert!(
        dirs[0].ends_with("-mock-a") && dirs[1].ends_with("-mock-b"),
        "{dirs:?}"
    );
    let jobs = |dir: &str| {
        std::fs::read_to_string(d.path().join(dir).join("results.jsonl"))
            .unwrap()
            .lines()
            .filter(|l| l.contains("\"kind\":\"job\""))
            .count()
    };
    assert!(
        jobs(dirs[0]) > 0 && jobs(dirs[0]) == jobs(dirs[1]),
        "each model runs every job"
    );
    let info: Value = serde_json::from_str(
        &std::fs::read_to_string(d.path().join(dirs[0]).join("run.json")).unwrap(),
    )
    .unwrap();
    let indices: Vec<u64> = info["gpus"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| g["index"].as_u64().unwrap())
        .collect();
    assert_eq!(indices, [0, 2], "the two GPUs of model A share its run");
    // And one command compares the models.
    let compared = stdout(
        &lab(d.path())
            .args(["compare", dirs[0], dirs[1]])
            .assert()
            .code(0),
    );
    assert!(
        compared.contains("model A") && compared.contains("model B"),
        "{compared}"
    );
}

#[test]
fn a_bad_gpu_list_is_a_usage_error_that_says_what_to_write() {
    let d = tempfile::tempdir().unwrap();
    let err = lab(d.path())
        .args(["--mock-gpu", "run", "--suite", "transpose", "--gpus", "0,0"])
        .assert()
        .code(2)
        .get_output()
        .stderr
        .clone();
    assert!(String::from_utf8_lossy(&err).contains("named twice"));
    let err = lab(d.path())
        .args([
            "--mock-gpu",
            "run",
            "--suite",
            "transpose",
            "--gpus",
            "zero",
        ])
        .assert()
        .code(2)
        .get_output()
        .stderr
        .clone();
    assert!(String::from_utf8_lossy(&err).contains("write `all` or indices"));
    let err = lab(d.path())
        .args(["--mock-gpu", "run", "--suite", "transpose", "--gpus", "0,7"])
        .assert()
        .code(1)
        .get_output()
        .stderr
        .clone();
    assert!(String::from_utf8_lossy(&err).contains("there is no GPU 7"));
    lab(d.path())
        .args([
            "--mock-gpu",
            "run",
            "--suite",
            "transpose",
            "--gpus",
            "0",
            "--gpu",
            "1",
        ])
        .assert()
        .code(2);
}

/// The occupancy suite through the mock: the report renders and says MOCK, and no occupancy is
/// recorded or shown, since the mock loads no kernel (a stand-in there would pass for a prediction).
#[test]
fn the_occupancy_suite_runs_on_the_mock_without_occupancy_records() {
    let d = tempfile::tempdir().unwrap();
    let run = stdout(
        &lab(d.path())
            .args([
                "--mock-gpu",
                "profile",
                "--suite",
                "occupancy",
                "--out",
                "runs",
                "--quiet",
            ])
            .assert()
            .code(0),
    );
    let dir = d.path().join(run.trim());
    let report = std::fs::read_to_string(dir.join("report.md")).unwrap();
    assert!(
        report.starts_with("# gpu-lab report: occupancy (MOCK)")
            && report.contains("not a measurement"),
        "{report}"
    );
    assert!(
        report.contains("| `block_size[BLOCK=32]`")
            && report.contains("| `launch_bounds[CHAINS=8,MIN_BLOCKS=8]`"),
        "{report}"
    );
    assert!(
        !report.contains("### Occupancy")
            && !report.contains("blocks/SM")
            && !report.contains("Legend of the occupancy tables"),
        "{report}"
    );
    let results = std::fs::read_to_string(dir.join("results.jsonl")).unwrap();
    let jobs: Vec<Value> = results
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|r| r["kind"] == "job")
        .collect();
    assert_eq!(jobs.len(), 27);
    assert!(
        jobs.iter().all(|j| j.get("occupancy").is_none()),
        "no job record holds occupancy"
    );
}

#[test]
fn a_suite_that_names_no_cache_state_is_timed_cold_unless_asked_otherwise() {
    let tmp = tempfile::tempdir().unwrap();
    let cache_of = |run: &Path| {
        let info: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(run.join("run.json")).unwrap()).unwrap();
        info["timing"]["cache"].as_str().unwrap().to_string()
    };
    // The host-program fixture suite declares no `cache`.
    let run = crate::common::mock_host_program_run_in(tmp.path());
    assert_eq!(cache_of(&run), "cold");
    let suite_dir = crate::common::fixtures();
    let warm = crate::common::mock_run_in(
        tmp.path(),
        [
            std::ffi::OsStr::new("--suite"),
            std::ffi::OsStr::new("host-program"),
            std::ffi::OsStr::new("--suite-dir"),
            suite_dir.as_os_str(),
            std::ffi::OsStr::new("--cache"),
            std::ffi::OsStr::new("warm"),
        ],
    );
    assert_eq!(cache_of(&warm), "warm");
}

#[test]
fn a_mock_energy_run_records_and_reports_energy_marked_mock() {
    let d = tempfile::tempdir().unwrap();
    let run_dir = crate::common::mock_run_in(
        d.path(),
        ["--suite", "matmul", "--variant", "naive", "--energy"],
    );
    let results = std::fs::read_to_string(run_dir.join("results.jsonl")).unwrap();
    let job: Value = results
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .find(|v| v["kind"] == "job")
        .unwrap();
    let energy = &job["energy"];
    assert_eq!(energy["mock"], true, "{energy}");
    assert!(
        energy["method"].as_str().unwrap().starts_with("MOCK"),
        "{energy}"
    );
    assert!(energy["joules"].as_f64().unwrap() > 0.0, "{energy}");
    let report = stdout(
        &lab(d.path())
            .args(["report", run_dir.to_str().unwrap()])
            .assert()
            .code(0),
    );
    assert!(report.contains("Energy (`--energy`):"), "{report}");
    assert!(
        report.contains("(MOCK)") && report.contains("MOCK: the energy above"),
        "{report}"
    );
    assert!(
        report.contains("J/TFLOP") && report.contains("700 W, P0"),
        "{report}"
    );
    let csv = stdout(
        &lab(d.path())
            .args(["report", run_dir.to_str().unwrap(), "--format", "csv"])
            .assert()
            .code(0),
    );
    assert!(
        csv.lines().next().unwrap().contains("joules_per_tflop"),
        "{csv}"
    );
    // Without --energy, nothing of it is stored.
    let plain = crate::common::mock_run_in(d.path(), ["--suite", "matmul", "--variant", "naive"]);
    let results = std::fs::read_to_string(plain.join("results.jsonl")).unwrap();
    assert!(!results.contains("\"energy\""), "{results}");
}
