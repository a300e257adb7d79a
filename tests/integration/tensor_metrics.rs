//! The tensor metric set and the tensor-pipe check through the mock executor: the set resolves and is collected, a suite that declares flops collects the tensor-pipe counter whatever its set, and its report says where a job runs on the tensor cores without declaring its math.

use std::path::{Path, PathBuf};

use crate::common::{mock_gpu_lab_in, stdout};

/// `gpu-lab --mock-gpu profile ARGS` in `dir`: the run's report.
fn mock_profile_report(dir: &Path, args: &[&str]) -> String {
    let out = mock_gpu_lab_in(dir)
        .args(["profile"])
        .args(args)
        .args(["--out", "runs", "--quiet"])
        .assert()
        .code(0);
    let run: PathBuf = dir.join(stdout(&out).trim());
    std::fs::read_to_string(run.join("report.md")).unwrap()
}

#[test]
fn a_flops_suite_collects_the_tensor_pipe_and_says_where_undeclared_jobs_use_it() {
    let d = tempfile::tempdir().unwrap();
    // gemv declares flops and no math; its own set is `compute`, which holds the check. The
    // mock's stand-in counters read as a busy tensor pipe.
    let report = mock_profile_report(d.path(), &["--suite", "gemv"]);
    assert!(report.contains("tensor_pipe_utilization"), "{report}");
    assert!(
        report.contains("runs on the tensor cores (tensor pipe busy 100.0% of its peak) but declares no math: judged against the FP32 SIMT roof"),
        "{report}"
    );
    // Another set: the check is collected all the same.
    let d = tempfile::tempdir().unwrap();
    let report = mock_profile_report(d.path(), &["--suite", "gemv", "--set", "memory"]);
    assert!(
        report.contains("tensor_pipe_utilization") && report.contains("declares no math"),
        "{report}"
    );
}

#[test]
fn the_tensor_set_profiles_a_suite_without_flops_and_says_nothing_of_math() {
    let d = tempfile::tempdir().unwrap();
    let report = mock_profile_report(d.path(), &["--suite", "transpose", "--set", "tensor"]);
    for metric in [
        "tensor_pipe_utilization",
        "wgmma_share",
        "tma_load_bytes",
        "dsmem_read_bytes",
        "cluster_residency",
    ] {
        assert!(report.contains(metric), "{metric}: {report}");
    }
    // No flops: no roof to judge against, so no math to declare.
    assert!(!report.contains("declares no math"), "{report}");
}
