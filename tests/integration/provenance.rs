//! Every run names the build that made it: the git commit (and whether the tree was dirty) and the sha256 of the binary, in run.json, the report header and compare's notes.

use sha2::{Digest, Sha256};

use crate::common::{gpu_lab_in, mock_run_in, stdout};

fn run_json(run: &std::path::Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(run.join("run.json")).unwrap()).unwrap()
}

#[test]
fn a_run_records_the_commit_and_the_sha256_of_the_binary_that_made_it() {
    let tmp = tempfile::tempdir().unwrap();
    let run = mock_run_in(
        tmp.path(),
        ["--suite", "reduction", "--variant", "neighbored"],
    );
    let build = &run_json(&run)["build"];
    let binary = std::fs::read(assert_cmd::cargo::cargo_bin("gpu-lab")).unwrap();
    let expected: String = Sha256::digest(&binary)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    assert_eq!(build["binary_sha256"], expected.as_str());
    // From a git checkout (CI clones one) the commit is its HEAD; from a source tarball, none.
    let head = std::process::Command::new("git")
        .args(["rev-parse", "HEAD"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8(o.stdout).unwrap().trim().to_string());
    match head {
        // Built outside a checkout: no commit recorded.
        None => assert!(build.get("commit").is_none(), "{build}"),
        Some(head) => {
            assert_eq!(build["commit"], head.as_str(), "{build}");
            assert!(build["dirty"].is_boolean());
            let report = std::fs::read_to_string(run.join("report.md")).unwrap();
            let row = report
                .lines()
                .find(|l| l.split('|').nth(1).map(str::trim) == Some("gpu-lab"))
                .expect("the header names the build");
            assert!(
                row.contains(&head[..12]) && row.contains(&expected[..16]),
                "{row}"
            );
        }
    }
}

#[test]
fn compare_says_when_two_runs_come_from_different_builds() {
    let tmp = tempfile::tempdir().unwrap();
    let run = mock_run_in(
        tmp.path(),
        ["--suite", "reduction", "--variant", "neighbored"],
    );
    let other = tmp.path().join("runs/other-build");
    std::fs::create_dir_all(&other).unwrap();
    for f in ["results.jsonl", "report.md"] {
        std::fs::copy(run.join(f), other.join(f)).unwrap();
    }
    let mut info = run_json(&run);
    info["build"]["commit"] = "0123456789abcdef0123456789abcdef01234567".into();
    std::fs::write(other.join("run.json"), info.to_string()).unwrap();
    let same = stdout(
        &gpu_lab_in(tmp.path())
            .args(["compare"])
            .args([&run, &run])
            .assert()
            .code(0),
    );
    assert!(!same.contains("gpu-lab builds differ"), "{same}");
    let md = stdout(
        &gpu_lab_in(tmp.path())
            .args(["compare"])
            .args([&run, &other])
            .assert()
            .code(0),
    );
    assert!(
        md.contains("gpu-lab builds differ") && md.contains("commit 0123456789ab"),
        "{md}"
    );
}
