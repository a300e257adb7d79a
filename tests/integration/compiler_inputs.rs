//! What a manifest may pass to a compiler: options on the allow-list only, define names that are C identifiers, no shell character in any argument, and every file a build reads (a pre-included header) inside the suite and in its source hash.

use crate::common::{SMALL_SUITE, write_small_suite};

/// The load error of SMALL_SUITE with `extra` added to its [suite] table.
fn load_error_with(extra: &str) -> gpu_lab::suite::SuiteError {
    let d = tempfile::tempdir().unwrap();
    let m = SMALL_SUITE.replace("source = \"k.cu\"", &format!("source = \"k.cu\"\n{extra}"));
    gpu_lab::suite::load(&write_small_suite(d.path(), &m)).unwrap_err()
}

#[test]
fn options_that_pick_a_program_or_reach_a_shell_are_refused_at_load() {
    for option in [
        "-ccbin=/tmp/evil",
        "--compiler-bindir=/tmp",
        "-O3`touch /tmp/gpu-lab-pwned`",
        "-DX=$(touch /tmp/gpu-lab-pwned)",
        "-Xcompiler=-fplugin=/tmp/evil.so",
        "--options-file=/tmp/opts",
        "--output-file=/etc/passwd",
        "-arch=sm_50",
        "-DX=1;id",
    ] {
        let e = load_error_with(&format!("options = [\"{option}\"]"));
        assert!(
            e.message.contains('`') && !e.fix.is_empty() && e.line == Some(4),
            "{option}: {e}"
        );
    }
    // The split forms: a -Xcompiler value is checked as the next entry.
    let e = load_error_with("options = [\"-Xcompiler\", \"-B/tmp\"]");
    assert!(e.message.contains("-B/tmp"), "{e}");
    // What suites use stays allowed.
    let d = tempfile::tempdir().unwrap();
    let m = SMALL_SUITE.replace(
        "source = \"k.cu\"",
        "source = \"k.cu\"\noptions = [\"-G\", \"--use_fast_math\", \"--maxrregcount=32\", \"-Xptxas\", \"-dlcm=cg\", \"--std=c++17\"]",
    );
    gpu_lab::suite::load(&write_small_suite(d.path(), &m)).unwrap();
}

#[test]
fn define_names_that_are_not_c_identifiers_are_refused_at_load() {
    let d = tempfile::tempdir().unwrap();
    for name in ["X$(touch /tmp/p)", "A B", "1X", "X`id`"] {
        let m = SMALL_SUITE.replace(
            "kernel = \"k\"",
            &format!("kernel = \"k\"\ndefines = {{ \"{name}\" = \"N\" }}"),
        );
        let e = gpu_lab::suite::load(&write_small_suite(d.path(), &m)).unwrap_err();
        assert!(
            e.message.contains("is not a C identifier") && e.fix.contains("letters, digits"),
            "{name}: {e}"
        );
    }
}

#[test]
fn include_dirs_with_shell_characters_are_refused_at_load() {
    let d = tempfile::tempdir().unwrap();
    let m = SMALL_SUITE.replace(
        "source = \"k.cu\"",
        "source = \"k.cu\"\ninclude_dirs = [\"$(id)\"]",
    );
    let path = write_small_suite(d.path(), &m);
    std::fs::create_dir_all(path.parent().unwrap().join("$(id)")).unwrap();
    let e = gpu_lab::suite::load(&path).unwrap_err();
    assert!(e.message.contains("shell could act on"), "{e}");
}

#[test]
fn a_pre_included_header_outside_the_suite_is_refused_and_one_inside_is_hashed() {
    let d = tempfile::tempdir().unwrap();
    std::fs::write(d.path().join("outside.cuh"), "#define X 1\n").unwrap();
    for option in ["--pre-include=../outside.cuh", "-include=../outside.cuh"] {
        let m = SMALL_SUITE.replace(
            "source = \"k.cu\"",
            &format!("source = \"k.cu\"\noptions = [\"{option}\"]"),
        );
        let e = gpu_lab::suite::load(&write_small_suite(d.path(), &m)).unwrap_err();
        assert!(
            e.message.contains("lies outside the suite's directory")
                && e.fix.contains("allow_outside"),
            "{option}: {e}"
        );
    }
    // The split form cannot be confined.
    let m = SMALL_SUITE.replace(
        "source = \"k.cu\"",
        "source = \"k.cu\"\noptions = [\"-include\", \"../outside.cuh\"]",
    );
    let e = gpu_lab::suite::load(&write_small_suite(d.path(), &m)).unwrap_err();
    assert!(e.message.contains("in a form gpu-lab cannot check"), "{e}");
    // Inside: its text (and what it includes) is part of the suite's hash.
    let m = SMALL_SUITE.replace(
        "source = \"k.cu\"",
        "source = \"k.cu\"\noptions = [\"--pre-include=pre.cuh\"]",
    );
    let path = write_small_suite(d.path(), &m);
    let dir = path.parent().unwrap();
    std::fs::write(dir.join("pre.cuh"), "#include \"deep.cuh\"\n").unwrap();
    std::fs::write(dir.join("deep.cuh"), "#define TILE 32\n").unwrap();
    let before = gpu_lab::suite::load(&path).unwrap().source_hash;
    std::fs::write(dir.join("deep.cuh"), "#define TILE 64\n").unwrap();
    let after = gpu_lab::suite::load(&path).unwrap().source_hash;
    assert_ne!(
        before, after,
        "a change to a pre-included header changes the hash"
    );
    // And the build's options name it by its path under the suite.
    let suite = gpu_lab::suite::load(&path).unwrap();
    assert!(
        suite.jobs[0]
            .program
            .options
            .iter()
            .any(|o| o.starts_with("--pre-include=") && o.ends_with("mine/pre.cuh")),
        "{:?}",
        suite.jobs[0].program.options
    );
}
