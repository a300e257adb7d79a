//! What the test modules share: the gpu-lab binary as a command, and the paths of the repository's fixtures, kernels and committed runs.

use std::ffi::OsStr;
use std::path::{Path, PathBuf};

use assert_cmd::Command;

/// The committed H200 run of the transpose suite, relative to the repository root.
pub const H200_RUN: &str = "tests/fixtures/runs/20261122T044759Z-transpose-h200";

/// The repository root (the package directory).
pub fn repo() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// The committed H200 run of the transpose suite, as an absolute path.
pub fn h200_run() -> PathBuf {
    repo().join(H200_RUN)
}

/// The text of a run directory's results, `results.jsonl` or (as the committed runs store it)
/// `results.jsonl.gz`, read as gpu-lab reads it.
pub fn results_text(run: &Path) -> String {
    String::from_utf8(gpu_lab::store::read_results(run).unwrap().1).unwrap()
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

/// The gpu-lab binary of this build, run in `dir`, its data directory (runs without --out, the
/// history) outside the checkout: `dir/data` in a scratch directory, a directory of this test
/// process under the system's temporary directory when `dir` is the repository.
pub fn gpu_lab_in(dir: &Path) -> Command {
    let mut c = Command::cargo_bin("gpu-lab").unwrap();
    c.current_dir(dir);
    let data = if dir == repo() {
        std::env::temp_dir().join(format!("gpu-lab-test-data-{}", std::process::id()))
    } else {
        dir.join("data")
    };
    c.env("GPU_LAB_DATA", data);
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

/// gpu-lab on the mock GPU with the repository's suites and a cache of its own in `dir`: the
/// start of most integration tests' command lines.
pub fn mock_gpu_lab_in(dir: &Path) -> Command {
    let mut cmd = gpu_lab_with_cache_in(dir);
    cmd.env("GPU_LAB_KERNELS", kernels_dir()).arg("--mock-gpu");
    cmd
}

/// A quiet mock run (`--mock-gpu run ARGS --out runs --quiet`) in the scratch directory `dir`, its
/// build cache inside it and the built-in suites found in the repository, that must exit 0: the
/// run directory it printed.
pub fn mock_run_in<I, S>(dir: &Path, args: I) -> PathBuf
where
    I: IntoIterator<Item = S>,
    S: AsRef<OsStr>,
{
    let out = mock_gpu_lab_in(dir)
        .args(["run"])
        .args(args)
        .args(["--out", "runs", "--quiet"])
        .assert()
        .code(0);
    dir.join(stdout(&out).trim())
}

/// [`mock_run_in`] of the host-program fixture suite, which draws timelines.
pub fn mock_host_program_run_in(dir: &Path) -> PathBuf {
    let suite_dir = fixtures();
    mock_run_in(
        dir,
        [
            OsStr::new("--suite"),
            OsStr::new("host-program"),
            OsStr::new("--suite-dir"),
            suite_dir.as_os_str(),
        ],
    )
}

/// A one-variant suite named `mine` (source `k.cu`, one buffer `x`, sweep `N = [1024]`): the
/// manifest the hostile-input tests edit.
pub const SMALL_SUITE: &str = "[suite]\nname = \"mine\"\nsource = \"k.cu\"\n[axes]\nN = [1024]\n[[buffers]]\nname = \"x\"\ntype = \"f32\"\nlen = \"N\"\ninit = \"random\"\n[[variants]]\nname = \"v\"\nkernel = \"k\"\nblock = [\"256\"]\ngrid = [\"ceil_div(N, 256)\"]\nargs = [\"x\", \"N\"]\n";

/// A suite in `dir/mine` with this manifest and a kernel source `k.cu`; the manifest's path.
pub fn write_small_suite(dir: &Path, manifest: &str) -> PathBuf {
    let d = dir.join("mine");
    std::fs::create_dir_all(&d).unwrap();
    std::fs::write(
        d.join("k.cu"),
        "extern \"C\" __global__ void k(float* x, int n) {}\n",
    )
    .unwrap();
    std::fs::write(d.join("suite.toml"), manifest).unwrap();
    d.join("suite.toml")
}
