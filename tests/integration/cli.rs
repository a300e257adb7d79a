//! The command line as users meet it: listing, re-rendering a stored GPU run anywhere, and clear errors without a GPU.

use predicates::prelude::*;

use crate::common::{H200_RUN as RUN, gpu_lab};

/// What a run asking for GPU 99 must say on this machine: without libcuda that there is no
/// driver; with libcuda and no GPU (a machine with Debian's CUDA packages) the driver's own error;
/// on a GPU host that GPU 99 does not exist.
fn why_gpu_99_cannot_run() -> &'static str {
    match gpu_lab::device::cuda_device_count() {
        Err(gpu_lab::device::DeviceError::NoDriver) => "no NVIDIA GPU driver found",
        Err(_) => "the CUDA driver cannot count GPUs",
        Ok(_) => "there is no GPU 99",
    }
}

#[test]
fn list_shows_suites_variants_metrics_and_sets() {
    gpu_lab()
        .args(["list"])
        .assert()
        .success()
        .stdout(predicate::str::contains("transpose").and(predicate::str::contains("92 jobs")));
    gpu_lab()
        .args(["list", "variants"])
        .assert()
        .success()
        .stdout(predicate::str::contains("smem_pad_32"));
    // One suite's variants, as a user types it.
    let one = String::from_utf8(
        gpu_lab()
            .args(["list", "variants", "--suite", "transpose"])
            .assert()
            .success()
            .get_output()
            .stdout
            .clone(),
    )
    .unwrap();
    assert!(
        one.starts_with("transpose")
            && one.contains("smem_pad_32")
            && !one.lines().any(|l| l.starts_with("shared-memory")),
        "{one}"
    );
    gpu_lab()
        .args(["list", "variants", "--suite", "transpos"])
        .assert()
        .code(1)
        .stderr(predicate::str::contains("no suite named `transpos`"));
    gpu_lab()
        .args(["list", "metrics"])
        .assert()
        .success()
        .stdout(
            predicate::str::contains("gld_efficiency").and(predicate::str::contains(
                "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum",
            )),
        );
    gpu_lab()
        .args(["list", "sets"])
        .assert()
        .success()
        .stdout(predicate::str::contains("transpose"));
}

#[test]
fn report_rerenders_the_committed_gpu_run_without_a_gpu() {
    gpu_lab().args(["report", RUN]).assert().success().stdout(
        predicate::str::contains("NVIDIA H200")
            .and(predicate::str::contains("| `copy_column[BX=32,BY=8]`"))
            .and(predicate::str::contains("12.5%")),
    );
    let csv = gpu_lab()
        .args(["report", RUN, "--format", "csv"])
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    let text = String::from_utf8(csv).unwrap();
    assert_eq!(text.lines().count(), 93, "header + 92 jobs");
    gpu_lab()
        .args(["report", RUN, "--format", "json"])
        .assert()
        .success()
        .stdout(predicate::str::contains("\"copy_bound_gbs\""));
}

#[test]
fn report_of_a_missing_run_says_what_is_wrong() {
    gpu_lab()
        .args(["report", "tests/fixtures/runs/no-such-run"])
        .assert()
        .code(1)
        .stderr(predicate::str::contains("is not a gpu-lab run directory"));
}

/// A run that cannot start says why and how to fix it: without a driver that there is none, with
/// a driver and no GPU the driver's error, on a GPU host that the GPU asked for does not exist.
/// Either way nothing panics.
#[test]
fn a_run_that_cannot_start_fails_cleanly_with_the_fix() {
    let out = tempfile::tempdir().unwrap();
    let why = why_gpu_99_cannot_run();
    gpu_lab()
        .args([
            "profile",
            "--suite",
            "transpose",
            "--gpu",
            "99",
            "--out",
            out.path().to_str().unwrap(),
        ])
        .assert()
        .code(1)
        .stderr(
            predicate::str::contains(why)
                .and(predicate::str::contains("fix:"))
                .and(predicate::str::contains("panicked").not()),
        );
    assert_eq!(
        std::fs::read_dir(out.path()).unwrap().count(),
        0,
        "no run directory for a run that never started"
    );
}

#[test]
fn the_command_line_is_consistent() {
    use clap::CommandFactory;
    gpu_lab::cli::Cli::command().debug_assert();
}

#[test]
fn unknown_suite_and_usage_errors() {
    gpu_lab()
        .args(["run", "--suite", "transpos"])
        .assert()
        .code(1)
        .stderr(
            predicate::str::contains("no suite named `transpos`")
                .and(predicate::str::contains("transpose")),
        );
    gpu_lab().args(["profile"]).assert().code(2);
    gpu_lab()
        .args(["run", "--suite", "transpose", "--timeout", "0"])
        .assert()
        .code(2);
    gpu_lab()
        .args(["run", "--suite", "transpose", "--noise=-1"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("not a positive number"));
    gpu_lab()
        .args(["report", RUN, "--format", "pdf"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("md, json, csv, svg"));
    gpu_lab()
        .args([
            "check",
            "--baseline",
            "x",
            "--from",
            RUN,
            "--normalize",
            "often",
        ])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("auto, sm, memory, none"));
    gpu_lab()
        .args(["profile", "--suite", "transpose", "--duration-runs", "101"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("not in 0..=100"));
}

#[test]
fn hidden_child_commands_stay_hidden() {
    gpu_lab()
        .args(["--help"])
        .assert()
        .success()
        .stdout(
            predicate::str::contains("__job")
                .not()
                .and(predicate::str::contains("mock").not()),
        )
        .stdout(predicate::str::contains(
            "Exit codes: 0 ok, 1 error, 2 usage, 3 regression found, 4 some jobs failed",
        ));
}

#[test]
fn the_frame_of_a_run_and_of_several_runs() {
    let csv = String::from_utf8(
        gpu_lab()
            .args(["report", RUN, "--format", "frame"])
            .assert()
            .success()
            .get_output()
            .stdout
            .clone(),
    )
    .unwrap();
    let mut r = csv::Reader::from_reader(csv.as_bytes());
    let header = r.headers().unwrap().clone();
    assert!(
        header.iter().any(|h| h == "pct_of_copy")
            && header.iter().any(|h| h == "metric.gld_efficiency"),
        "{header:?}"
    );
    assert_eq!(r.records().count(), 92);
    let h100 = "tests/fixtures/runs/20261122T042230Z-transpose-h100-80gb-hbm3";
    let three = String::from_utf8(
        gpu_lab()
            .args(["compare", RUN, h100, RUN])
            .assert()
            .success()
            .get_output()
            .stdout
            .clone(),
    )
    .unwrap();
    assert!(
        three.contains("| job")
            && three.contains("time 3/1")
            && three.contains("NVIDIA H100 80GB HBM3"),
        "{three}"
    );
    let stacked = String::from_utf8(
        gpu_lab()
            .args(["compare", RUN, h100, "--format", "csv"])
            .assert()
            .success()
            .get_output()
            .stdout
            .clone(),
    )
    .unwrap();
    assert_eq!(stacked.lines().count(), 1 + 92 + 92);
    gpu_lab()
        .args(["compare", RUN, h100, RUN, "--format", "json"])
        .assert()
        .code(1)
        .stderr(predicate::str::contains("two runs"));
    gpu_lab().args(["compare", RUN]).assert().code(2);
}
