//! What the test modules share: the gpu-lab binary as a command, and the paths of the repository's fixtures, kernels and committed runs.

use std::path::{Path, PathBuf};

use assert_cmd::Command;

/// The committed H200 run of the transpose suite, relative to the repository root.
pub const H200_RUN: &str = "reports/runs/20261122T044759Z-transpose-h200";

/// The repository root (the package directory).
pub fn repo() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// The committed H200 run of the transpose suite, as an absolute path.
pub fn h200_run() -> PathBuf {
    repo().join(H200_RUN)
}

/// `tests/fixtures`: real ncu and nvidia-smi output and the fixture suites.
pub fn fixtures() -> PathBuf {
    repo().join("tests/fixtures")
}

/// The text of a file under `tests/fixtures`.
pub fn fixture(path: &str) -> String {
    std::fs::read_to_string(fixtures().join(path)).unwrap()
}

/// `kernels`: the built-in suites.
pub fn kernels_dir() -> PathBuf {
    repo().join("kernels")
}

/// The gpu-lab binary of this build, run in `dir`.
pub fn gpu_lab_in(dir: &Path) -> Command {
    let mut c = Command::cargo_bin("gpu-lab").unwrap();
    c.current_dir(dir);
    c
}

/// The gpu-lab binary of this build, run in the repository root.
pub fn gpu_lab() -> Command {
    gpu_lab_in(repo())
}

/// The gpu-lab binary run in a scratch directory `dir` with its build cache inside it.
pub fn gpu_lab_with_cache_in(dir: &Path) -> Command {
    let mut c = gpu_lab_in(dir);
    c.env("GPU_LAB_CACHE", dir.join("cache"));
    c
}

/// A command's standard output as text.
pub fn stdout(a: &assert_cmd::assert::Assert) -> String {
    String::from_utf8(a.get_output().stdout.clone()).unwrap()
}
