//! Special files where gpu-lab reads one (run.json, results.jsonl, a stored baseline, `--baseline`):
//! a FIFO (a reader would wait for a writer forever) and a symlink to /dev/zero (a reader would never
//! reach its end) each end the command at once with exit 1 and an error naming the path.

use std::path::{Path, PathBuf};
use std::time::Duration;

use assert_cmd::Command;
use predicates::prelude::*;

use crate::common::{gpu_lab_with_cache_in, h200_run, kernels_dir, mock_run_in, stdout};

/// Far past what any of these commands needs on a normal file: a hang fails the test instead of CI.
const PROMPTLY: Duration = Duration::from_secs(30);

/// The two hostile stand-ins for a file, with the word the refusal uses for each.
#[derive(Clone, Copy, Debug)]
enum Special {
    Fifo,
    DevZero,
}

const SPECIALS: [Special; 2] = [Special::Fifo, Special::DevZero];

impl Special {
    /// Replaces whatever is at `path` with this special file.
    fn plant(self, path: &Path) {
        let _ = std::fs::remove_file(path);
        match self {
            Special::Fifo => {
                let c = std::ffi::CString::new(path.as_os_str().as_encoded_bytes()).unwrap();
                // SAFETY: a valid NUL-terminated path; mkfifo touches nothing else.
                assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0, "{path:?}");
            }
            Special::DevZero => std::os::unix::fs::symlink("/dev/zero", path).unwrap(),
        }
    }

    fn word(self) -> &'static str {
        match self {
            Special::Fifo => "a FIFO",
            Special::DevZero => "a character device",
        }
    }
}

/// gpu-lab in the scratch directory `dir`, with its cache there and the built-in suites.
fn lab(dir: &Path) -> Command {
    let mut c = gpu_lab_with_cache_in(dir);
    c.env("GPU_LAB_KERNELS", kernels_dir());
    c.timeout(PROMPTLY);
    c
}

/// Runs `cmd` and asserts it ended by itself with exit 1, naming `path` as `special`, not a regular file.
fn refused(cmd: &mut Command, path: &Path, special: Special) {
    cmd.assert()
        .code(1)
        .stderr(predicate::str::contains(path.display().to_string()))
        .stderr(predicate::str::contains(format!(
            "is {}, not a regular file",
            special.word()
        )));
}

/// A copy of the committed H200 run under `dir` (commands write beside a run).
fn copied_run(dir: &Path, name: &str) -> PathBuf {
    let to = dir.join(name);
    std::fs::create_dir_all(&to).unwrap();
    std::fs::copy(h200_run().join("run.json"), to.join("run.json")).unwrap();
    std::fs::write(
        to.join("results.jsonl"),
        crate::common::results_text(&h200_run()),
    )
    .unwrap();
    to
}

/// A baseline saved from the committed H200 run, as `dir/baselines/h200.json`.
fn saved_baseline(dir: &Path) -> PathBuf {
    let run = copied_run(dir, "source-run");
    lab(dir)
        .args(["baseline", "save", "h200", "--from"])
        .arg(&run)
        .arg("--dir")
        .arg(dir.join("baselines"))
        .assert()
        .code(0);
    dir.join("baselines/h200.json")
}

#[test]
fn report_refuses_a_special_run_json_or_results_file_without_hanging() {
    let d = tempfile::tempdir().unwrap();
    for special in SPECIALS {
        for file in ["run.json", "results.jsonl"] {
            let run = copied_run(d.path(), "run");
            special.plant(&run.join(file));
            refused(
                lab(d.path()).arg("report").arg(&run),
                &run.join(file),
                special,
            );
            std::fs::remove_dir_all(&run).unwrap();
        }
    }
}

#[test]
fn a_results_file_past_its_size_limit_is_refused_naming_the_limit() {
    let d = tempfile::tempdir().unwrap();
    let run = copied_run(d.path(), "run");
    // Sparse: no disk is spent, and reading it would cost more than a gigabyte of memory.
    std::fs::File::create(run.join("results.jsonl"))
        .unwrap()
        .set_len((1 << 30) + 1)
        .unwrap();
    lab(d.path())
        .arg("report")
        .arg(&run)
        .assert()
        .code(1)
        .stderr(
            predicate::str::contains("more than the 1073741824 gpu-lab reads").and(
                predicate::str::contains(run.join("results.jsonl").display().to_string()),
            ),
        );
}

#[test]
fn merge_refuses_a_shard_with_a_special_run_json_or_results_file_without_hanging() {
    let d = tempfile::tempdir().unwrap();
    let shard = |s: &str| mock_run_in(d.path(), ["--suite", "reduction", "--shard", s]);
    let (a, b) = (shard("0/2"), shard("1/2"));
    for special in SPECIALS {
        for file in ["run.json", "results.jsonl"] {
            let saved = std::fs::read(b.join(file)).unwrap();
            special.plant(&b.join(file));
            refused(
                lab(d.path())
                    .arg("merge")
                    .args([&a, &b])
                    .args(["--out", "merged"]),
                &b.join(file),
                special,
            );
            std::fs::remove_file(b.join(file)).unwrap();
            std::fs::write(b.join(file), saved).unwrap();
        }
    }
}

#[test]
fn baseline_save_refuses_a_special_run_and_never_waits_on_a_special_baseline() {
    let d = tempfile::tempdir().unwrap();
    let dir = d.path().join("baselines");
    for special in SPECIALS {
        // The run to save.
        for file in ["run.json", "results.jsonl"] {
            let run = copied_run(d.path(), "run");
            special.plant(&run.join(file));
            refused(
                lab(d.path())
                    .args(["baseline", "save", "h200", "--from"])
                    .arg(&run)
                    .arg("--dir")
                    .arg(&dir),
                &run.join(file),
                special,
            );
            std::fs::remove_dir_all(&run).unwrap();
        }
        // A special file where the baseline would go is not read to describe it, nor replaced.
        let run = copied_run(d.path(), "run");
        std::fs::create_dir_all(&dir).unwrap();
        let stored = dir.join("h200.json");
        special.plant(&stored);
        lab(d.path())
            .args(["baseline", "save", "h200", "--from"])
            .arg(&run)
            .arg("--dir")
            .arg(&dir)
            .assert()
            .code(1)
            .stderr(predicate::str::contains(format!(
                "{} already exists",
                stored.display()
            )));
        assert!(!std::fs::symlink_metadata(&stored).unwrap().is_file());
        std::fs::remove_file(&stored).unwrap();
        std::fs::remove_dir_all(&run).unwrap();
    }
}

#[test]
fn baseline_list_and_export_refuse_a_special_baseline_without_hanging() {
    let d = tempfile::tempdir().unwrap();
    let good = saved_baseline(d.path());
    let dir = good.parent().unwrap();
    for special in SPECIALS {
        let bad = dir.join("bad.json");
        special.plant(&bad);
        refused(
            lab(d.path()).args(["baseline", "list", "--dir"]).arg(dir),
            &bad,
            special,
        );
        refused(
            lab(d.path())
                .args(["baseline", "export", "bad", "--dir"])
                .arg(dir),
            &bad,
            special,
        );
        std::fs::remove_file(&bad).unwrap();
    }
    // Without it, the listing is as before.
    let listed = stdout(
        &lab(d.path())
            .args(["baseline", "list", "--dir"])
            .arg(dir)
            .assert()
            .code(0),
    );
    assert!(listed.contains("| h200 "), "{listed}");
}

#[test]
fn check_refuses_a_special_baseline_or_run_without_hanging() {
    let d = tempfile::tempdir().unwrap();
    let good = saved_baseline(d.path());
    let dir = good.parent().unwrap().to_path_buf();
    let run = copied_run(d.path(), "checked");
    for special in SPECIALS {
        // `--baseline PATH`, and `--baseline NAME` whose stored file is special.
        let path = d.path().join("given.json");
        special.plant(&path);
        refused(
            lab(d.path())
                .arg("check")
                .arg("--baseline")
                .arg(&path)
                .arg("--from")
                .arg(&run),
            &path,
            special,
        );
        let stored = dir.join("other.json");
        special.plant(&stored);
        refused(
            lab(d.path())
                .args(["check", "--baseline", "other", "--baseline-dir"])
                .arg(&dir)
                .arg("--from")
                .arg(&run),
            &stored,
            special,
        );
        // The run checked.
        for file in ["run.json", "results.jsonl"] {
            let bad_run = copied_run(d.path(), "bad-run");
            special.plant(&bad_run.join(file));
            refused(
                lab(d.path())
                    .args(["check", "--baseline", "h200", "--baseline-dir"])
                    .arg(&dir)
                    .arg("--from")
                    .arg(&bad_run),
                &bad_run.join(file),
                special,
            );
            std::fs::remove_dir_all(&bad_run).unwrap();
        }
    }
}
