//! `baseline`, `check` and `compare` as a CI job meets them: exit codes, verdicts and reports over copies of the committed H200 run.
//!
//! Every "new run" here is the committed run with one deliberate transformation (a job's samples
//! scaled, a counter changed, the clocks of the NVML snapshots changed): test data built from
//! real data, never a measurement.

use std::fs;
use std::path::PathBuf;

use assert_cmd::Command;
use predicates::prelude::*;
use serde_json::Value;

use crate::common::{H200_RUN as RUN, gpu_lab_in, kernels_dir, repo, stdout};
const H100_RUN: &str = "tests/fixtures/runs/20261122T042230Z-transpose-h100-80gb-hbm3";
const SLOWED: &str = "smem_pad_32 @ NX=8192,NY=8192";

/// A scratch directory holding `runs/` and `baselines/`; commands run inside it.
struct Lab {
    dir: tempfile::TempDir,
}

impl Lab {
    fn new() -> Lab {
        let lab = Lab {
            dir: tempfile::tempdir().unwrap(),
        };
        lab.copy_run(RUN, "base", |_| {});
        lab
    }

    fn path(&self, rel: &str) -> PathBuf {
        self.dir.path().join(rel)
    }

    /// Copies a committed run to `runs/NAME`, passing every record of results.jsonl through `edit`.
    fn copy_run(&self, from: &str, name: &str, edit: impl Fn(&mut Value)) -> String {
        let src = repo().join(from);
        let dst = self.path(&format!("runs/{name}"));
        fs::create_dir_all(&dst).unwrap();
        fs::copy(src.join("run.json"), dst.join("run.json")).unwrap();
        let body: String = crate::common::results_text(&src)
            .lines()
            .map(|l| {
                let mut v: Value = serde_json::from_str(l).unwrap();
                edit(&mut v);
                format!("{v}\n")
            })
            .collect();
        fs::write(dst.join("results.jsonl"), body).unwrap();
        format!("runs/{name}")
    }

    fn cmd(&self) -> Command {
        gpu_lab_in(self.dir.path())
    }

    fn save_base(&self) {
        self.cmd()
            .args(["baseline", "save", "h200", "--from", "runs/base"])
            .assert()
            .success()
            .stdout(predicate::str::contains("baselines/h200.json"));
    }

    fn check(&self, run: &str) -> assert_cmd::assert::Assert {
        self.cmd()
            .args(["check", "--baseline", "h200", "--from", run])
            .assert()
    }
}

fn scale_samples(id: &'static str, k: f64) -> impl Fn(&mut Value) {
    move |v| {
        if v["kind"] == "job" && v["id"] == id {
            for x in v["samples_ms"].as_array_mut().unwrap() {
                *x = Value::from(x.as_f64().unwrap() * k);
            }
            for f in [
                "median", "ci_low", "ci_high", "mean", "stddev", "min", "max",
            ] {
                v["summary"][f] = Value::from(v["summary"][f].as_f64().unwrap() * k);
            }
        }
    }
}

/// Verdict rows of the markdown table that are not `Same`.
fn changed_rows(md: &str) -> Vec<String> {
    md.lines()
        .filter(|l| {
            l.starts_with("| ")
                && ["**Regressed**", "Improved", "New", "Missing"]
                    .iter()
                    .any(|v| l.starts_with(&format!("| {v}")))
        })
        .map(String::from)
        .collect()
}

#[test]
fn identical_runs_are_the_same_everywhere_and_exit_0() {
    let lab = Lab::new();
    lab.copy_run(RUN, "again", |_| {});
    lab.save_base();
    let a = lab.check("runs/again").code(0);
    let md = stdout(&a);
    assert!(
        md.contains("**No regression** in 92 jobs (0 improved, 92 same, 0 new, 0 missing)"),
        "{md}"
    );
    assert!(changed_rows(&md).is_empty());
    // Saved beside the checked run, exactly as printed.
    assert_eq!(
        fs::read_to_string(lab.path("runs/again/check-h200.md")).unwrap(),
        md
    );
}

#[test]
fn one_job_twenty_percent_slower_regresses_alone_and_exits_3() {
    let lab = Lab::new();
    lab.copy_run(RUN, "slow", scale_samples(SLOWED, 1.2));
    lab.save_base();
    let md = stdout(&lab.check("runs/slow").code(3));
    let rows = changed_rows(&md);
    assert_eq!(rows.len(), 1, "{rows:?}");
    assert!(
        rows[0].contains("`smem_pad_32` @ NX=8192,NY=8192") && rows[0].contains("+20.0%"),
        "{}",
        rows[0]
    );
    insta::assert_snapshot!(md);
}

#[test]
fn one_job_twenty_percent_faster_improves_and_exits_0() {
    let lab = Lab::new();
    lab.copy_run(RUN, "fast", scale_samples(SLOWED, 1.0 / 1.2));
    lab.save_base();
    let md = stdout(&lab.check("runs/fast").code(0));
    let rows = changed_rows(&md);
    assert_eq!(rows.len(), 1, "{rows:?}");
    assert!(
        rows[0].starts_with("| Improved") && rows[0].contains("-16.7%"),
        "{}",
        rows[0]
    );
}

#[test]
fn a_counter_regression_with_unchanged_timing_exits_3_and_names_the_metric() {
    let lab = Lab::new();
    lab.copy_run(RUN, "conflicts", |v| {
        if v["kind"] == "profile" && v["job_id"] == SLOWED {
            v["metrics"]["shared_load_transactions_per_request"] = Value::from(32.0);
        }
    });
    lab.save_base();
    let a = lab
        .cmd()
        .args([
            "check",
            "--baseline",
            "h200",
            "--from",
            "runs/conflicts",
            "--format",
            "json",
        ])
        .assert()
        .code(3);
    let json: Value = serde_json::from_slice(&a.get_output().stdout).unwrap();
    assert_eq!(json["counts"]["regressed"], 1);
    let job = json["comparison"]["jobs"]
        .as_array()
        .unwrap()
        .iter()
        .find(|j| j["verdict"] == "regressed")
        .unwrap();
    assert_eq!(job["id"], SLOWED);
    assert_eq!(job["timing"]["verdict"], "same");
    let moved: Vec<&Value> = job["counters"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["moved"] == true)
        .collect();
    assert_eq!(moved.len(), 1);
    assert_eq!(moved[0]["metric"], "shared_load_transactions_per_request");
    assert!(lab.path("runs/conflicts/check-h200.json").is_file());
}

#[test]
fn a_run_at_other_clocks_is_reported_and_normalised() {
    let lab = Lab::new();
    // The memory clock at 2619 MHz (an H100's) in every snapshot, and the memory-bound times stretched to match.
    lab.copy_run(RUN, "clocks", |v| {
        if v["kind"] == "job" {
            for s in ["nvml_before", "nvml_after"] {
                v[s]["mem_clock_mhz"] = Value::from(2619);
            }
            for x in v["samples_ms"].as_array_mut().unwrap() {
                *x = Value::from(x.as_f64().unwrap() * 3201.0 / 2619.0);
            }
        }
    });
    lab.save_base();
    let md = stdout(&lab.check("runs/clocks").code(0));
    assert!(md.contains("**memory clock differs** in 92 jobs (3201 → 2619 MHz); 92 of them scale with it and had their times normalised"), "{md}");
    assert!(md.contains("SM 1980 MHz, memory 2619 MHz"));
    assert!(md.contains("memory clock 3201 → 2619 MHz (normalised)"));
    // Taken at face value, the same data is 22% slower everywhere.
    lab.cmd()
        .args([
            "check",
            "--baseline",
            "h200",
            "--from",
            "runs/clocks",
            "--normalize",
            "none",
        ])
        .assert()
        .code(3);
}

#[test]
fn a_corrupt_or_truncated_baseline_is_an_error_naming_the_file() {
    let lab = Lab::new();
    lab.save_base();
    let file = lab.path("baselines/h200.json");
    let text = fs::read_to_string(&file).unwrap();
    fs::write(&file, &text[..text.len() * 2 / 3]).unwrap();
    lab.check("runs/base").code(1).stderr(
        predicate::str::contains("baselines/h200.json")
            .and(predicate::str::contains("truncated"))
            .and(predicate::str::contains("fix:")),
    );
    fs::write(&file, text.replace("\"samples_ms\"", "\"samples\"")).unwrap();
    lab.check("runs/base").code(1).stderr(
        predicate::str::contains("baselines/h200.json")
            .and(predicate::str::contains("not valid baseline JSON")),
    );
    lab.cmd()
        .args(["check", "--baseline", "nope", "--from", "runs/base"])
        .assert()
        .code(1)
        .stderr(predicate::str::contains("baselines/nope.json"));
}

#[test]
fn saving_takes_the_newest_run_and_never_overwrites_without_force() {
    let lab = Lab::new();
    let later = lab.copy_run(RUN, "later", |_| {});
    let info = lab.path(&format!("{later}/run.json"));
    fs::write(
        &info,
        fs::read_to_string(&info).unwrap().replace(
            "\"started\": \"2026-11-22T04:47:59Z\"",
            "\"started\": \"2026-11-23T00:00:00Z\"",
        ),
    )
    .unwrap();
    lab.cmd()
        .args(["baseline", "save", "h200", "--runs", "runs"])
        .assert()
        .success()
        .stderr(predicate::str::contains(
            "taking the newest run, runs/later",
        ));
    lab.cmd()
        .args(["baseline", "save", "h200", "--from", "runs/base"])
        .assert()
        .code(1)
        .stderr(
            predicate::str::contains("already exists").and(predicate::str::contains("--force")),
        );
    lab.cmd()
        .args(["baseline", "save", "h200", "--from", "runs/base", "--force"])
        .assert()
        .success();
    lab.cmd()
        .args(["baseline", "save", "../escape", "--from", "runs/base"])
        .assert()
        .code(1)
        .stderr(predicate::str::contains("not a usable baseline name"));
    lab.cmd()
        .args(["baseline", "list"])
        .assert()
        .success()
        .stdout(
            predicate::str::contains("| h200")
                .and(predicate::str::contains("NVIDIA H200"))
                .and(predicate::str::contains("runs/base")),
        );
}

#[test]
fn another_gpu_model_is_an_error_unless_allowed_then_ratios_are_compared() {
    let lab = Lab::new();
    lab.copy_run(H100_RUN, "h100", |_| {});
    lab.save_base();
    lab.check("runs/h100").code(1).stderr(
        predicate::str::contains("NVIDIA H200")
            .and(predicate::str::contains("NVIDIA H100 80GB HBM3"))
            .and(predicate::str::contains("--allow-other-gpu")),
    );
    lab.cmd()
        .args([
            "check",
            "--baseline",
            "h200",
            "--from",
            "runs/h100",
            "--allow-other-gpu",
        ])
        .assert()
        .stdout(
            predicate::str::contains("different GPU models").and(predicate::str::contains(
                "time relative to each run's copy bound",
            )),
        );
}

#[test]
fn compare_shows_two_runs_side_by_side_without_verdicts() {
    let lab = Lab::new();
    lab.copy_run(H100_RUN, "h100", |_| {});
    let md = stdout(
        &lab.cmd()
            .args(["compare", "runs/base", "runs/h100"])
            .assert()
            .code(0),
    );
    assert!(
        md.contains("# gpu-lab compare")
            && md.contains("NVIDIA H100 80GB HBM3")
            && md.contains("% of copy")
    );
    assert!(!md.contains("Regressed") && !md.contains("| Same") && !md.contains("| verdict"));
    assert_eq!(md.lines().filter(|l| l.starts_with("| `")).count(), 92);
}

#[test]
fn check_needs_a_run_to_check_and_a_gpu_to_run_one() {
    let lab = Lab::new();
    lab.save_base();
    lab.cmd()
        .args(["check", "--baseline", "h200"])
        .assert()
        .code(2);
    lab.cmd()
        .args([
            "check",
            "--baseline",
            "h200",
            "--from",
            "runs/base",
            "--suite",
            "transpose",
        ])
        .assert()
        .code(2);
    // Without a driver: there is none; with libcuda and no GPU: the driver's error; on a GPU host:
    // GPU 99 does not exist. Either way no run starts.
    let why = match gpu_lab::device::cuda_device_count() {
        Err(gpu_lab::device::DeviceError::NoDriver) => "no NVIDIA GPU driver found",
        Err(_) => "the CUDA driver cannot count GPUs",
        Ok(_) => "there is no GPU 99",
    };
    let kernels = kernels_dir();
    lab.cmd()
        .args([
            "check",
            "--baseline",
            "h200",
            "--suite",
            "transpose",
            "--gpu",
            "99",
            "--out",
            "runs",
            "--suite-dir",
            kernels.to_str().unwrap(),
        ])
        .assert()
        .code(1)
        .stderr(predicate::str::contains(why).and(predicate::str::contains("panicked").not()));
    lab.cmd()
        .args([
            "check",
            "--baseline",
            "h200",
            "--suite",
            "faults",
            "--out",
            "runs",
        ])
        .assert()
        .code(1)
        .stderr(predicate::str::contains("holds suite `transpose`"));
}

#[test]
fn an_unfinished_run_with_every_job_still_fails_the_gate() {
    let lab = Lab::new();
    let killed = lab.copy_run(RUN, "killed-late", |_| {});
    // Killed after its last job: every record is there, the end time is not.
    let info = lab.path(&format!("{killed}/run.json"));
    fs::write(
        &info,
        fs::read_to_string(&info).unwrap().replace(
            "\"finished\": \"2026-11-22T04:49:59Z\"",
            "\"finished\": null",
        ),
    )
    .unwrap();
    lab.save_base();
    lab.check(&killed)
        .code(3)
        .stderr(predicate::str::contains("did not finish").and(predicate::str::contains("fix:")));
}

#[test]
fn a_run_killed_halfway_fails_the_gate() {
    let lab = Lab::new();
    let killed = lab.copy_run(RUN, "killed", |_| {});
    // What a run killed after 40 jobs leaves: no end time, the records it had appended.
    let info = lab.path(&format!("{killed}/run.json"));
    fs::write(
        &info,
        fs::read_to_string(&info).unwrap().replace(
            "\"finished\": \"2026-11-22T04:49:59Z\"",
            "\"finished\": null",
        ),
    )
    .unwrap();
    let results = lab.path(&format!("{killed}/results.jsonl"));
    let text = fs::read_to_string(&results).unwrap();
    let mut jobs = 0;
    let kept: String = text
        .lines()
        .take_while(|l| {
            jobs += usize::from(l.contains("\"kind\":\"job\""));
            jobs <= 40
        })
        .map(|l| format!("{l}\n"))
        .collect();
    fs::write(&results, kept).unwrap();
    lab.save_base();
    let a = lab
        .check(&killed)
        .code(3)
        .stderr(predicate::str::contains("did not finish"));
    let md = stdout(&a);
    assert!(
        md.contains("**REGRESSED: 52 of 92 jobs**") && md.contains("**this run did not finish**"),
        "{md}"
    );
}

#[test]
fn incorrect_jobs_are_stored_as_recorded_and_never_timed_against() {
    let lab = Lab::new();
    let faults = lab.copy_run(
        "tests/fixtures/runs/20261122T044733Z-faults-h200",
        "faults",
        |_| {},
    );
    lab.cmd()
        .args(["baseline", "save", "faults", "--from", &faults])
        .assert()
        .success()
        .stderr(
            predicate::str::contains(
                "4 jobs of this run are not correct: they are stored as recorded",
            )
            .and(predicate::str::contains("status only").not()),
        );
    let stored: Value =
        serde_json::from_str(&fs::read_to_string(lab.path("baselines/faults.json")).unwrap())
            .unwrap();
    let wrong = stored["jobs"]
        .as_array()
        .unwrap()
        .iter()
        .find(|j| j["job"]["status"] == "wrong")
        .unwrap();
    assert_eq!(
        wrong["job"]["samples_ms"].as_array().unwrap().len(),
        19,
        "its samples are kept"
    );
    let json: Value = serde_json::from_slice(
        &lab.cmd()
            .args([
                "check",
                "--baseline",
                "faults",
                "--from",
                &faults,
                "--format",
                "json",
            ])
            .assert()
            .code(0)
            .get_output()
            .stdout,
    )
    .unwrap();
    let job = json["comparison"]["jobs"]
        .as_array()
        .unwrap()
        .iter()
        .find(|j| j["id"] == "misses_one @ N=1048576")
        .unwrap();
    assert_eq!(
        (&job["verdict"], &job["timing"], &job["notes"][0]),
        (
            &Value::from("same"),
            &Value::Null,
            &Value::from("still wrong")
        )
    );
}

#[test]
fn cold_and_warm_runs_are_not_judged_against_each_other_unless_asked() {
    let lab = Lab::new();
    lab.save_base();
    let cold = lab.copy_run(RUN, "cold", |_| {});
    let info = lab.path(&format!("{cold}/run.json"));
    let mut v: Value = serde_json::from_str(&fs::read_to_string(&info).unwrap()).unwrap();
    v["timing"]["cache"] = Value::from("cold");
    fs::write(&info, v.to_string()).unwrap();
    lab.check(&cold).code(1).stderr(
        predicate::str::contains("timed with the L2 Warm")
            .and(predicate::str::contains("--allow-cache-mismatch"))
            .and(predicate::str::contains("--cache warm")),
    );
    let md = stdout(
        &lab.cmd()
            .args([
                "check",
                "--baseline",
                "h200",
                "--from",
                &cold,
                "--allow-cache-mismatch",
            ])
            .assert()
            .code(0),
    );
    assert!(md.contains("**L2 state differs**"), "{md}");
}

#[test]
fn an_impossible_result_fails_the_gate_and_is_never_ranked() {
    let lab = Lab::new();
    lab.save_base();
    // The same times, but one job claims ten times the bytes: more than the card can move.
    let inflated = lab.copy_run(RUN, "inflated", |v| {
        if v["kind"] == "job" && v["id"] == SLOWED {
            v["bytes"] = Value::from(v["bytes"].as_f64().unwrap() * 10.0);
        }
    });
    let md = stdout(&lab.check(&inflated).code(3));
    assert!(
        md.contains("impossible:") && md.contains("of the copy bound measured in this run"),
        "{md}"
    );
    let report = stdout(&lab.cmd().args(["report", &inflated]).assert().code(0));
    let row = report
        .lines()
        .find(|l| l.starts_with("| `smem_pad_32`") && l.contains("**IMPOSSIBLE**"))
        .expect("the row is marked");
    assert_eq!(
        row.split('|').nth(6).map(str::trim),
        Some("–"),
        "never ranked: {row}"
    );
}

#[test]
fn a_baseline_whose_stored_name_is_a_path_is_refused() {
    let lab = Lab::new();
    lab.save_base();
    let path = lab.path("baselines/h200.json");
    let mut v: Value = serde_json::from_str(&fs::read_to_string(&path).unwrap()).unwrap();
    v["name"] = Value::from("x/../../../tmp/anything");
    fs::write(&path, v.to_string()).unwrap();
    lab.check("runs/base").code(1).stderr(
        predicate::str::contains("names itself")
            .and(predicate::str::contains("not a usable baseline name")),
    );
    assert!(!lab.path("runs/base/check-x").exists());
}

#[test]
fn junit_output_has_one_case_per_job_and_the_regression_as_its_only_failure() {
    let lab = Lab::new();
    lab.copy_run(RUN, "slow", scale_samples(SLOWED, 1.2));
    lab.save_base();
    let a = lab
        .cmd()
        .args([
            "check",
            "--baseline",
            "h200",
            "--from",
            "runs/slow",
            "--format",
            "junit",
        ])
        .assert()
        .code(3);
    let xml = String::from_utf8(a.get_output().stdout.clone()).unwrap();
    assert!(
        xml.starts_with(
            "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites name=\"gpu-lab check\""
        ),
        "{xml}"
    );
    let cases = xml.matches("<testcase ").count();
    assert!(cases > 20, "one test case per job: {cases}");
    assert_eq!(xml.matches("<failure ").count(), 1, "{xml}");
    assert!(xml.contains("failures=\"1\""));
    let failing = xml
        .split("<testcase ")
        .find(|c| c.contains("<failure"))
        .unwrap();
    assert!(
        failing.contains("name=\"smem_pad_32\"")
            && failing.contains("+20.0%")
            && failing.contains("type=\"regression\""),
        "{failing}"
    );
    assert!(
        lab.path("runs/slow/check-h200.xml").is_file(),
        "the verdict file is saved beside the run in the same format"
    );
}

#[test]
fn a_baseline_exports_as_reframe_references_keyed_by_gpu_model() {
    let lab = Lab::new();
    lab.save_base();
    let out = stdout(
        &lab.cmd()
            .args(["baseline", "export", "h200"])
            .assert()
            .code(0),
    );
    assert!(
        out.contains("GPU_LAB_REFERENCES = {\n    'NVIDIA H200': {"),
        "{out}"
    );
    let rows = out
        .lines()
        .filter(|l| l.trim_start().starts_with("'transpose/"))
        .count();
    assert!(
        rows > 20 && out.contains(", -0.0700, 0.0700, 'ms'),"),
        "{rows} rows:\n{out}"
    );
    lab.cmd()
        .args(["baseline", "export", "../x"])
        .assert()
        .code(1);
}
