//! `profile --hotspots`: the flag reaches the profile records of the variants asked for (and only theirs), the report gets its section, a variant that no selected job is refused, all without a GPU through the mock; and `ncu --hotspots` over a stand-in ncu that gives back an H100 capture of examples/nvprof-probe.

use serde_json::Value;

use crate::common::{gpu_lab, mock_gpu_lab_in, repo, stdout};
use crate::import::install_script;

fn profile_records(run_dir: &std::path::Path) -> Vec<Value> {
    std::fs::read_to_string(run_dir.join("results.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|v| v["kind"] == "profile")
        .collect()
}

#[test]
fn hot_spots_are_asked_for_the_named_variants_only_and_a_mock_says_it_has_no_lines() {
    let d = tempfile::tempdir().unwrap();
    let out = mock_gpu_lab_in(d.path())
        .args(["profile", "--suite", "transpose"])
        .args(["--variant", "naive_column,smem_32", "--hotspots", "smem_32"])
        .args(["--out", "runs", "--quiet"])
        .assert()
        .code(0);
    let run_dir = d.path().join(stdout(&out).trim());
    let records = profile_records(&run_dir);
    assert_eq!(records.len(), 8, "two variants at four shapes");
    for r in &records {
        let job = r["job_id"].as_str().unwrap();
        let hotspots = &r["hotspots"];
        if job.starts_with("smem_32") {
            assert!(
                hotspots["error"]
                    .as_str()
                    .unwrap()
                    .starts_with("MOCK: no ncu ran"),
                "{r}"
            );
            assert_eq!(hotspots["kernels"], Value::Array(vec![]), "{r}");
        } else {
            assert!(hotspots.is_null(), "{r}");
        }
    }
    let report = std::fs::read_to_string(run_dir.join("report.md")).unwrap();
    let section = report.split("## Source hot spots").nth(1).unwrap();
    assert_eq!(
        section.matches("no hot spots: MOCK: no ncu ran").count(),
        4,
        "{section}"
    );
    assert!(!section.contains("naive_column @"), "{section}");
    // The HTML report is the markdown read back: the section is there too.
    let html = std::fs::read_to_string(run_dir.join("report.html")).unwrap();
    assert!(html.contains("Source hot spots"));
}

#[test]
fn a_counters_only_run_keeps_its_hot_spot_section() {
    // A `--counters-only` run has profiles and no timed jobs; its hot spots were once dropped
    // from the report (scan, H100, 2026-11-26).
    let d = tempfile::tempdir().unwrap();
    let out = mock_gpu_lab_in(d.path())
        .args(["profile", "--suite", "transpose", "--counters-only"])
        .args(["--variant", "smem_32", "--hotspots", "--shape", "smallest"])
        .args(["--out", "runs", "--quiet"])
        .assert()
        .code(0);
    let run_dir = d.path().join(stdout(&out).trim());
    let report = std::fs::read_to_string(run_dir.join("report.md")).unwrap();
    let (_, section) = report.split_once("## Source hot spots").expect(&report);
    assert_eq!(
        section.matches("no hot spots: MOCK: no ncu ran").count(),
        1,
        "{section}"
    );
}

#[test]
fn hot_spots_alone_mean_every_variant_and_without_the_flag_no_record_has_them() {
    let d = tempfile::tempdir().unwrap();
    let run = |extra: &[&str]| {
        let out = mock_gpu_lab_in(d.path())
            .args(["profile", "--suite", "transpose"])
            .args(["--variant", "copy_row,naive_row"])
            .args(extra)
            .args(["--out", "runs", "--quiet"])
            .assert()
            .code(0);
        profile_records(&d.path().join(stdout(&out).trim()))
    };
    let every = run(&["--hotspots"]);
    assert!(every.iter().all(|r| r["hotspots"].is_object()), "{every:?}");
    let none = run(&[]);
    assert!(none.iter().all(|r| r["hotspots"].is_null()), "{none:?}");
}

#[test]
fn hot_spots_of_a_variant_no_selected_job_is_are_refused_with_the_fix() {
    let d = tempfile::tempdir().unwrap();
    let err = mock_gpu_lab_in(d.path())
        .args(["profile", "--suite", "transpose"])
        .args(["--variant", "copy_row", "--hotspots", "smem_32,nope"])
        .args(["--out", "runs", "--quiet"])
        .assert()
        .code(1)
        .get_output()
        .stderr
        .clone();
    let err = String::from_utf8_lossy(&err);
    assert!(
        err.contains("--hotspots names smem_32, nope") && err.contains("fix:"),
        "{err}"
    );
    assert!(!d.path().join("runs").exists(), "nothing ran");
}

/// A stand-in ncu: a session runs the program and writes a report; an import prints the raw or
/// the source page of the H100 capture of examples/nvprof-probe (one report, round 1 of
/// 2026-11-26: six launches, copy_row twice).
fn probe_ncu(dir: &std::path::Path) -> std::path::PathBuf {
    let fixtures = repo().join("tests/fixtures");
    let script = format!(
        r#"#!/bin/sh
echo "$@" >> {dir}/ncu-args
case "$1" in
  --version) echo "NVIDIA (R) Nsight Compute Command Line Profiler"; echo "Version 2025.3.1.0 (stand-in)";;
  --query-metrics) gzip -dc {fixtures}/ncu-h200/query-metrics.txt.gz;;
  --import) case "$*" in *"--page source"*) gzip -dc {fixtures}/ncu-source/probe-h100.csv.gz;; *) gzip -dc {fixtures}/ncu-source/probe-h100-raw.csv.gz;; esac;;
  *) while [ $# -gt 0 ]; do case "$1" in --export) shift; rep="$1";; /bin/sh) break;; esac; shift; done
     "$@"; status=$?
     echo report > "$rep.ncu-rep"
     exit $status;;
esac
"#,
        dir = dir.display(),
        fixtures = fixtures.display()
    );
    let path = dir.join("ncu");
    install_script(&path, &script);
    path
}

#[test]
fn ncu_hotspots_follow_the_table_one_per_kernel_with_its_launches_summed() {
    // Under target/, not /tmp, which may be mounted noexec.
    let d = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let ncu = probe_ncu(d.path());
    let run = |extra: &[&str]| {
        let mut c = gpu_lab();
        c.args(["ncu", "--metrics", "shared_load_transactions_per_request"])
            .args(extra)
            .args(["--", "/bin/true"])
            .env("NCU", &ncu)
            .env("GPU_LAB_CACHE", d.path().join("cache"));
        c
    };
    let out = run(&["--hotspots"]).assert().code(0).get_output().clone();
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    let (table, hot) = text.split_once("## Source hot spots").expect(&text);
    assert!(
        table.contains("Kernel: void transpose_tile<1, 0>"),
        "{table}"
    );
    let headings: Vec<&str> = hot.lines().filter(|l| l.starts_with("### ")).collect();
    assert_eq!(
        headings,
        [
            "### 2 launches — `copy_row(const float *, float *, int)`",
            "### 1 launch — `copy_column(const float *, float *, int)`",
            "### 1 launch — `void transpose_tile<0, 0>(const float *, float *, int)`",
            "### 1 launch — `void transpose_tile<1, 0>(const float *, float *, int)`",
            "### 1 launch — `void transpose_tile<1, 1>(const float *, float *, int)`",
        ]
    );
    // The column read of the unpadded tile: 32-way conflicts; padded: none. The strided copy's
    // load line moves 7340032 sectors more than it needs.
    let section = |kernel: &str| {
        let at = hot.find(kernel).unwrap();
        hot[at..].split("### ").next().unwrap().to_string()
    };
    assert!(
        section("transpose_tile<1, 0>")
            .contains("| probe.cu:36 | – | 1469 | 40.4% | short_sb (63.4%) | – | 32.0× |"),
        "{hot}"
    );
    assert!(
        section("transpose_tile<1, 1>").contains("| probe.cu:36 | – | 705 |"),
        "{hot}"
    );
    assert!(
        section("copy_column")
            .contains("| probe.cu:20 | – | 5182 | 55.4% | long_sb (97.8%) | 7340032 |"),
        "{hot}"
    );
    // Built on another machine: ncu had the line numbers but not the file.
    assert!(
        section("copy_row").contains("could not open the source file"),
        "{hot}"
    );
    let args = std::fs::read_to_string(d.path().join("ncu-args")).unwrap();
    assert!(
        args.contains("--section SourceCounters --section WarpStateStats --import-source yes")
            && args.contains("--page source --csv --print-source cuda,sass"),
        "{args}"
    );

    // A filter: a template instance (its arguments hold a comma) and a function's name.
    let out = run(&["--hotspots", "transpose_tile<1, 0>,copy_row"])
        .assert()
        .code(0)
        .get_output()
        .clone();
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    let headings: Vec<&str> = text.lines().filter(|l| l.starts_with("### ")).collect();
    assert_eq!(headings.len(), 2, "{text}");
    assert!(headings[0].contains("copy_row") && headings[1].contains("transpose_tile<1, 0>"));

    // No kernel of that name: a warning, the table, and exit 1.
    run(&["--hotspots", "nope"])
        .assert()
        .code(1)
        .stderr(predicates::str::contains(
            "names kernels not profiled: nope",
        ))
        .stderr(predicates::str::contains(
            "no hot spots: none of the kernels",
        ));
}

#[test]
fn ncu_hotspots_refuse_csv_and_json_before_anything_runs() {
    let d = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let ncu = probe_ncu(d.path());
    for format in ["csv", "json"] {
        gpu_lab()
            .args(["ncu", "--hotspots", "--format", format, "--", "/bin/true"])
            .env("NCU", &ncu)
            .assert()
            .code(1)
            .stderr(predicates::str::contains(
                "fix: use --format table or md with --hotspots",
            ));
    }
    assert!(!d.path().join("ncu-args").exists());
}
