//! What `run` and `profile` leave on the terminal (issue 34 part 5), and what an installed gpu-lab needs (part 6): its built-in suites from any directory, shell completions and a man page.

use std::path::Path;

use crate::common::{gpu_lab_in, h200_run, kernels_dir, repo, stdout};

fn stderr(a: &assert_cmd::assert::Assert) -> String {
    String::from_utf8(a.get_output().stderr.clone()).unwrap()
}

/// `--mock-gpu run --suite gemv` in `dir` with `extra` arguments before the command.
fn mock_gemv_run(dir: &Path, extra: &[&str]) -> assert_cmd::assert::Assert {
    gpu_lab_in(dir)
        .env("GPU_LAB_CACHE", dir.join("cache"))
        .env("GPU_LAB_KERNELS", kernels_dir())
        .env_remove("NO_COLOR")
        .args(extra)
        .args(["--mock-gpu", "run", "--suite", "gemv", "--out", "runs"])
        .assert()
        .code(0)
}

#[test]
fn a_mock_run_ends_with_its_table_on_stderr_and_quiet_prints_none_of_it() {
    let tmp = tempfile::tempdir().unwrap();
    let run = mock_gemv_run(tmp.path(), &[]);
    // stdout stays the run directory alone, for scripts.
    let out = stdout(&run);
    assert_eq!(out.lines().count(), 1, "{out}");
    assert!(tmp.path().join(out.trim()).join("report.md").is_file());
    let err = stderr(&run);
    let table = err.split_once("suite gemv").expect("a summary title").1;
    assert!(table.contains("MOCK"), "{err}");
    assert!(table.contains("│ rank │ variant"), "{err}");
    assert!(
        table.trim_end().ends_with('╯'),
        "the table ends the output: {err}"
    );
    // Not a terminal: no colour unless asked for.
    assert!(!err.contains('\x1b'), "{err}");
    let coloured = stderr(&mock_gemv_run(tmp.path(), &["--color", "always"]));
    assert!(coloured.contains("\x1b["), "{coloured}");

    let quiet = mock_gemv_run(tmp.path(), &["--quiet"]);
    assert_eq!(stdout(&quiet).lines().count(), 1);
    let err = stderr(&quiet);
    assert!(!err.contains("rank") && !err.contains('╭'), "{err}");
}

#[test]
fn no_color_turns_colour_off_only_where_auto_would_decide() {
    let tmp = tempfile::tempdir().unwrap();
    let err = stderr(
        &gpu_lab_in(tmp.path())
            .env("GPU_LAB_CACHE", tmp.path().join("cache"))
            .env("GPU_LAB_KERNELS", kernels_dir())
            .env("NO_COLOR", "1")
            .args(["--mock-gpu", "--color", "auto", "run", "--suite", "gemv"])
            .args(["--out", "runs"])
            .assert()
            .code(0),
    );
    assert!(err.contains("│ rank │") && !err.contains('\x1b'), "{err}");
}

#[test]
fn table_of_a_mock_run() {
    let tmp = tempfile::tempdir().unwrap();
    let run = mock_gemv_run(tmp.path(), &["--quiet"]);
    let (data, warnings) = gpu_lab::store::load_run(&tmp.path().join(stdout(&run).trim())).unwrap();
    assert!(warnings.is_empty(), "{warnings:?}");
    insta::assert_snapshot!(gpu_lab::report::terminal::render(&data, false));
}

#[test]
fn table_of_the_committed_h200_run() {
    let (data, _) = gpu_lab::store::load_run(&h200_run()).unwrap();
    let table = gpu_lab::report::terminal::render(&data, false);
    // A measured run ranks its verified variants: one of them first.
    assert!(table.contains("│ 1    │"), "{table}");
    assert!(!table.contains("MOCK"), "{table}");
    insta::assert_snapshot!(table);
}

#[test]
fn an_installed_binary_lists_the_built_in_suites_from_any_directory() {
    let tmp = tempfile::tempdir().unwrap();
    let bin = tmp.path().join("bin");
    let cwd = tmp.path().join("somewhere");
    std::fs::create_dir_all(&bin).unwrap();
    std::fs::create_dir_all(&cwd).unwrap();
    let exe = bin.join("gpu-lab");
    std::fs::copy(assert_cmd::cargo::cargo_bin("gpu-lab"), &exe).unwrap();
    let cache = tmp.path().join("cache");
    let list = |cwd: &Path| {
        assert_cmd::Command::new(&exe)
            .current_dir(cwd)
            .env_remove("GPU_LAB_KERNELS")
            .env("GPU_LAB_CACHE", &cache)
            .args(["list", "suites"])
            .assert()
            .code(0)
    };
    let out = stdout(&list(&cwd));
    for suite in ["matmul", "reduction", "transpose", "tensor-gemm"] {
        assert!(out.lines().any(|l| l.starts_with(suite)), "{suite}: {out}");
    }
    assert!(out.contains("builtin-kernels"), "{out}");
    // The copy holds every file of the suites (sources and headers read by path), once.
    let copies: Vec<_> = std::fs::read_dir(cache.join("builtin-kernels"))
        .unwrap()
        .flatten()
        .collect();
    assert_eq!(copies.len(), 1);
    let copy = copies[0].path();
    assert_eq!(
        std::fs::read(copy.join("sgemm-tutorial/suite.toml")).unwrap(),
        std::fs::read(kernels_dir().join("sgemm-tutorial/suite.toml")).unwrap()
    );
    // A suite in ./kernels wins over the built-in copy of the same name.
    copy_tree(&kernels_dir().join("gemv"), &cwd.join("kernels/gemv"));
    let shadowed = stdout(&list(&cwd));
    let line = shadowed.lines().find(|l| l.starts_with("gemv")).unwrap();
    assert!(
        line.contains("kernels/gemv/suite.toml") && !line.contains("builtin-kernels"),
        "{line}"
    );
    // A mock run of a built-in suite runs from there too.
    assert_cmd::Command::new(&exe)
        .current_dir(&cwd)
        .env_remove("GPU_LAB_KERNELS")
        .env("GPU_LAB_CACHE", &cache)
        .args([
            "--mock-gpu",
            "-q",
            "run",
            "--suite",
            "gemv",
            "--out",
            "runs",
        ])
        .assert()
        .code(0);
}

fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap().flatten() {
        if e.file_type().unwrap().is_dir() {
            copy_tree(&e.path(), &to.join(e.file_name()));
        } else {
            std::fs::copy(e.path(), to.join(e.file_name())).unwrap();
        }
    }
}

#[test]
fn completions_and_the_man_page_name_the_commands() {
    for shell in ["bash", "zsh", "fish", "elvish", "powershell"] {
        let out = stdout(
            &gpu_lab_in(repo())
                .args(["completions", shell])
                .assert()
                .code(0),
        );
        for command in ["run", "profile", "report", "completions"] {
            assert!(out.contains(command), "{shell} lacks {command}");
        }
    }
    let man = stdout(&gpu_lab_in(repo()).arg("man").assert().code(0));
    assert!(man.contains(".TH gpu-lab 1"), "{man}");
    for command in ["profile", "compare", "completions"] {
        assert!(man.contains(command), "the man page lacks {command}");
    }
    let err = gpu_lab_in(repo())
        .args(["completions", "tcsh"])
        .assert()
        .code(2);
    assert!(stderr(&err).contains("possible values"), "{}", stderr(&err));
}
