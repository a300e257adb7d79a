//! The command line as users meet it: listing, re-rendering a stored GPU run anywhere, and clear errors without a GPU.

use assert_cmd::Command;
use predicates::prelude::*;

const RUN: &str = "reports/runs/20261122T044759Z-transpose-h200";

fn gpu_lab() -> Command {
    let mut c = Command::cargo_bin("gpu-lab").unwrap();
    c.current_dir(env!("CARGO_MANIFEST_DIR"));
    c
}

fn has_gpu_driver() -> bool {
    // SAFETY: only tries to open the library.
    unsafe { cudarc::driver::sys::is_culib_present() }
}

#[test]
fn list_shows_suites_variants_metrics_and_sets() {
    gpu_lab().args(["list"]).assert().success().stdout(predicate::str::contains("transpose").and(predicate::str::contains("92 jobs")));
    gpu_lab().args(["list", "variants"]).assert().success().stdout(predicate::str::contains("smem_pad_32"));
    gpu_lab()
        .args(["list", "metrics"])
        .assert()
        .success()
        .stdout(predicate::str::contains("gld_efficiency").and(predicate::str::contains("l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum")));
    gpu_lab().args(["list", "sets"]).assert().success().stdout(predicate::str::contains("transpose"));
}

#[test]
fn report_rerenders_the_committed_gpu_run_without_a_gpu() {
    gpu_lab()
        .args(["report", RUN])
        .assert()
        .success()
        .stdout(predicate::str::contains("NVIDIA H200").and(predicate::str::contains("| `copy_column[BX=32,BY=8]`")).and(predicate::str::contains("12.5%")));
    let csv = gpu_lab().args(["report", RUN, "--format", "csv"]).assert().success().get_output().stdout.clone();
    let text = String::from_utf8(csv).unwrap();
    assert_eq!(text.lines().count(), 93, "header + 92 jobs");
    gpu_lab().args(["report", RUN, "--format", "json"]).assert().success().stdout(predicate::str::contains("\"copy_bound_gbs\""));
}

#[test]
fn report_of_a_missing_run_says_what_is_wrong() {
    gpu_lab()
        .args(["report", "reports/runs/no-such-run"])
        .assert()
        .code(1)
        .stderr(predicate::str::contains("is not a gpu-lab run directory"));
}

#[test]
fn profile_without_a_gpu_fails_cleanly() {
    if has_gpu_driver() {
        eprintln!("skipped: this machine has a GPU driver");
        return;
    }
    gpu_lab()
        .args(["profile", "--suite", "transpose", "--out", std::env::temp_dir().join("gpu-lab-cli-test").to_str().unwrap()])
        .assert()
        .code(1)
        .stderr(predicate::str::contains("no NVIDIA GPU driver found").and(predicate::str::contains("fix:")).and(predicate::str::contains("panicked").not()));
}

#[test]
fn unknown_suite_and_usage_errors() {
    gpu_lab()
        .args(["run", "--suite", "transpos"])
        .assert()
        .code(1)
        .stderr(predicate::str::contains("no suite named `transpos`").and(predicate::str::contains("transpose")));
    gpu_lab().args(["profile"]).assert().code(2);
    gpu_lab().args(["run", "--suite", "transpose", "--timeout", "0"]).assert().code(2);
    gpu_lab().args(["run", "--suite", "transpose", "--noise=-1"]).assert().code(2).stderr(predicate::str::contains("not a positive number"));
    gpu_lab().args(["report", RUN, "--format", "pdf"]).assert().code(2);
}

#[test]
fn hidden_child_commands_stay_hidden() {
    gpu_lab().args(["--help"]).assert().success().stdout(predicate::str::contains("__job").not()).stdout(predicate::str::contains("Exit codes"));
}
