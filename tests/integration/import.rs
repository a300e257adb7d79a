//! `gpu-lab import` end to end on every captured ncu export (and the derived ones), each output format, and `gpu-lab ncu`'s orchestration with a stand-in ncu.

use predicates::prelude::*;

use crate::common::gpu_lab;

const ROOT: &str = env!("CARGO_MANIFEST_DIR");

fn stdout_of(args: &[&str]) -> String {
    String::from_utf8(
        gpu_lab()
            .args(args)
            .assert()
            .success()
            .get_output()
            .stdout
            .clone(),
    )
    .unwrap()
}

/// Every real ncu CSV in the repository: captured fixtures and the committed runs' exports.
fn real_exports() -> Vec<String> {
    let mut files = Vec::new();
    for dir in [
        "tests/fixtures/ncu-h200",
        "tests/fixtures/h100",
        "tests/fixtures/h200",
    ] {
        for e in std::fs::read_dir(format!("{ROOT}/{dir}")).unwrap() {
            let p = e.unwrap().path();
            if p.extension().is_some_and(|x| x == "csv") {
                files.push(p.strip_prefix(ROOT).unwrap().display().to_string());
            }
        }
    }
    for run in std::fs::read_dir(format!("{ROOT}/tests/fixtures/runs")).unwrap() {
        for e in std::fs::read_dir(run.unwrap().path()).unwrap() {
            let p = e.unwrap().path();
            let name = p.file_name().unwrap().to_string_lossy().to_string();
            if name.starts_with("profile-") && name.ends_with(".csv") {
                files.push(p.strip_prefix(ROOT).unwrap().display().to_string());
            }
        }
    }
    files.sort();
    // 12: the reduction run's two duration exports are stored gzipped and read by their own test.
    assert!(files.len() >= 12, "{files:?}");
    files
}

#[test]
fn every_real_export_imports() {
    for file in real_exports() {
        if file.ends_with("details-set-full-one-kernel.csv") {
            continue; // display names only: its own test below
        }
        let out = stdout_of(&["import", &file]);
        assert!(
            out.contains("Profiling result:")
                && out.contains("    Kernel: ")
                && out.contains("duration"),
            "{file}:\n{out}"
        );
    }
}

/// strided_read of a committed H100 run: ncu printed 100, 50, 25, 12.50, 12.50 for its five
/// launches; whole values came first, and every launch must still count.
#[test]
fn launches_mixing_whole_and_fractional_values_all_count() {
    let out = stdout_of(&[
        "import",
        "tests/fixtures/runs/20261122T054022Z-global-memory-h100-80gb-hbm3/profile-0.csv",
        "--metrics",
        "gld_efficiency_ncu",
    ]);
    let at = out.find("Kernel: strided_read").unwrap();
    let line = out[at..].lines().nth(1).unwrap();
    assert!(
        line.trim_start().starts_with("5 ") && line.ends_with("12.50%     100.00%      40.00%"),
        "{out}"
    );
    assert!(!out.contains("n/a"), "{out}");
}

/// Every launch of every real export, each catalog metric evaluated on its own (a fresh formula
/// per launch), must give the table's invocations, n/a count, min and max.
#[test]
fn the_table_agrees_with_each_launch_evaluated_alone() {
    use gpu_lab::metrics::{self, LaunchValue};
    let catalog = metrics::Catalog::builtin().unwrap();
    let defs: Vec<metrics::MetricDef> = catalog.metrics.values().cloned().collect();
    for file in real_exports() {
        let rows = gpu_lab::parse::parse_ncu_csv(
            &std::fs::read_to_string(format!("{ROOT}/{file}")).unwrap(),
        )
        .unwrap()
        .kernels;
        let summary = gpu_lab::report::nvprof::summarize(&rows, &defs).unwrap();
        for group in &summary.kernels {
            let launches: Vec<_> = rows
                .iter()
                .filter(|r| {
                    r.process_id == group.process_id
                        && r.kernel_name == group.kernel
                        && !r.looks_faulted()
                })
                .collect();
            for line in &group.metrics {
                let def = &catalog.metrics[&line.metric];
                let each: Vec<LaunchValue> = launches
                    .iter()
                    .map(|r| metrics::evaluate(def, &r.values).unwrap())
                    .filter(|v| *v != LaunchValue::Missing)
                    .collect();
                let values: Vec<f64> = each
                    .iter()
                    .filter_map(|v| {
                        if let LaunchValue::Value(x) = v {
                            Some(*x)
                        } else {
                            None
                        }
                    })
                    .collect();
                let what = format!("{file}: {} of {}", line.metric, group.kernel);
                assert_eq!(
                    (line.invocations, line.not_applicable),
                    (each.len(), each.len() - values.len()),
                    "{what}"
                );
                assert_eq!(line.min, values.iter().copied().reduce(f64::min), "{what}");
                assert_eq!(line.max, values.iter().copied().reduce(f64::max), "{what}");
            }
        }
    }
}

#[test]
fn the_committed_h200_run_reads_as_nvprof_would_print_it() {
    let out = stdout_of(&[
        "import",
        "tests/fixtures/h200/transpose-raw-8192x8192.csv",
        "--metrics",
        "gld_efficiency,shared_load_transactions_per_request",
    ]);
    insta::assert_snapshot!("import_h200_transpose_table", out);
}

#[test]
fn each_format() {
    let file = "tests/fixtures/ncu-h200/raw-metrics-stdout-mixed.csv";
    let m = "achieved_occupancy,dram_read_throughput,shared_load_transactions_per_request";
    insta::assert_snapshot!(
        "import_format_table",
        stdout_of(&["import", file, "--metrics", m])
    );
    insta::assert_snapshot!(
        "import_format_md",
        stdout_of(&["import", file, "--metrics", m, "--format", "md"])
    );
    let csv = stdout_of(&["import", file, "--metrics", m, "--format", "csv"]);
    let mut r = csv::Reader::from_reader(csv.as_bytes());
    let rows: Vec<csv::StringRecord> = r.records().map(|x| x.unwrap()).collect();
    assert_eq!(rows.len(), 3);
    // Six launches of transpose_naive; full precision in base units.
    assert_eq!(&rows[0][2], "transpose_naive");
    assert_eq!(&rows[0][8], "6");
    assert_eq!(&rows[2][10], "", "not applicable: no shared loads");
    let json: serde_json::Value = serde_json::from_str(&stdout_of(&[
        "import",
        file,
        "--metrics",
        m,
        "--format",
        "json",
    ]))
    .unwrap();
    assert_eq!(json["kernels"][0]["device"], "NVIDIA H200 (0)");
    assert_eq!(json["kernels"][0]["launches"], 6);
    assert_eq!(json["kernels"][0]["metrics"][2]["not_applicable"], 6);
}

#[test]
fn without_metrics_every_computable_one_and_a_note_of_the_rest() {
    gpu_lab()
        .args([
            "import",
            "tests/fixtures/ncu-h200/raw-import-speedoflight.csv",
        ])
        .assert()
        .success()
        .stdout(predicate::str::contains("duration").and(predicate::str::contains("983.58us")))
        .stderr(predicate::str::contains("other gpu-lab metrics skipped"));
}

#[test]
fn missing_counters_are_named_and_the_rest_is_shown() {
    gpu_lab()
        .args([
            "import",
            "tests/fixtures/ncu-h200/raw-import-speedoflight.csv",
            "--metrics",
            "gld_efficiency,duration",
        ])
        .assert()
        .success()
        .stdout(
            predicate::str::contains("duration")
                .and(predicate::str::contains("gld_efficiency").not()),
        )
        .stderr(predicate::str::contains("gld_efficiency not computed").and(
            predicate::str::contains("l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum"),
        ));
    gpu_lab()
        .args([
            "import",
            "tests/fixtures/ncu-h200/raw-import-speedoflight.csv",
            "--metrics",
            "gld_efficiency",
        ])
        .assert()
        .code(1)
        .stderr(
            predicate::str::contains("none of the requested metrics")
                .and(predicate::str::contains("fix:")),
        );
}

#[test]
fn details_pages_give_named_metrics_and_raw_names_on_request() {
    // `--metrics` run, details page: ncu's own names, program output mixed in.
    let out = stdout_of(&[
        "import",
        "tests/fixtures/ncu-h200/details-metrics-stdout-mixed.csv",
        "--metrics",
        "dram_read_throughput,dram__bytes_read.sum.per_second",
    ]);
    assert!(
        out.contains("283.60GB/s") && out.contains("dram__bytes_read.sum.per_second"),
        "{out}"
    );
    // `--set full`, details page: section display names only.
    let file = "tests/fixtures/ncu-h200/details-set-full-one-kernel.csv";
    gpu_lab().args(["import", file]).assert().code(1).stderr(
        predicate::str::contains("no gpu-lab metric can be computed")
            .and(predicate::str::contains("DRAM Frequency")),
    );
    let out = stdout_of(&["import", file, "--metrics", "Duration,DRAM Frequency"]);
    assert!(
        out.contains("transpose_padded")
            && out.contains("293408")
            && out.contains("3198949358.350000"),
        "{out}"
    );
    gpu_lab()
        .args(["import", file, "--metrics", "Durations"])
        .assert()
        .code(1)
        .stderr(predicate::str::contains("closest to it: Duration"));
}

#[test]
fn nvtx_columns_template_names_na_faults_and_two_processes() {
    let file = "tests/fixtures/derived/h200-raw-nvtx-template-nan-two-processes.csv";
    let out = gpu_lab()
        .args([
            "import",
            file,
            "--metrics",
            "gld_efficiency,gst_efficiency",
            "--format",
            "json",
        ])
        .assert()
        .code(4)
        .get_output()
        .clone();
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let kernels = json["kernels"].as_array().unwrap();
    let names: Vec<(&str, &str)> = kernels
        .iter()
        .map(|k| {
            (
                k["process_id"].as_str().unwrap(),
                k["kernel"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        names,
        [
            ("3118", "copy_row"),
            (
                "3118",
                "void transposeUnrolled<32, 8>(const float *, float *, int)"
            ),
            ("3119", "copy_column")
        ]
    );
    // copy_row: 3 launches, one faulted (left out), one with `n/a` requested bytes (gld_efficiency not computable there).
    assert_eq!(kernels[0]["launches"], 3);
    assert_eq!(kernels[0]["faulted_launches"], 1);
    assert_eq!(kernels[0]["metrics"][0]["invocations"], 1);
    assert_eq!(kernels[0]["metrics"][1]["invocations"], 2);
    assert_eq!(kernels[1]["metrics"][0]["avg"], 12.5);
    assert!(String::from_utf8_lossy(&out.stderr).contains("1 kernel launch(es) faulted"));
    let table = String::from_utf8(
        gpu_lab()
            .args(["import", file, "--metrics", "gld_efficiency"])
            .assert()
            .code(4)
            .get_output()
            .stdout
            .clone(),
    )
    .unwrap();
    assert!(
        table.contains("==3119== Profiling result:") && table.contains("(faulted: 1 of 3 launches"),
        "{table}"
    );
}

#[test]
fn bad_input_gets_a_clear_error() {
    gpu_lab()
        .args(["import", "no/such/file.csv"])
        .assert()
        .code(1)
        .stderr(predicate::str::contains("does not exist").and(predicate::str::contains("fix:")));
    let d = tempfile::tempdir().unwrap();
    let text = d.path().join("notes.txt");
    std::fs::write(&text, "hello\nno table here\n").unwrap();
    gpu_lab()
        .args(["import", text.to_str().unwrap()])
        .assert()
        .code(1)
        .stderr(predicate::str::contains("no CSV table found"));
    let rep = d.path().join("run.ncu-rep");
    std::fs::write(&rep, [0u8, 1, 2]).unwrap();
    gpu_lab()
        .args(["import", rep.to_str().unwrap()])
        .env("NCU", d.path().join("no-ncu"))
        .assert()
        .code(1)
        .stderr(
            predicate::str::contains("is not a file")
                .and(predicate::str::contains("a CSV export of it needs no ncu")),
        );
    let bin = d.path().join("run.bin");
    std::fs::write(&bin, [0u8, 1, 2]).unwrap();
    gpu_lab()
        .args(["import", bin.to_str().unwrap()])
        .assert()
        .code(1)
        .stderr(predicate::str::contains(".ncu-rep extension"));
    gpu_lab()
        .args([
            "import",
            "tests/fixtures/h200/transpose-raw-8192x8192.csv",
            "--metrics",
            "gld_eficiency",
        ])
        .assert()
        .code(1)
        .stderr(predicate::str::contains("did you mean gld_efficiency"));
    gpu_lab()
        .args([
            "import",
            "tests/fixtures/h200/transpose-raw-8192x8192.csv",
            "--format",
            "xml",
        ])
        .assert()
        .code(2);
}

/// A stand-in ncu: answers --version and --query-metrics with the H200 capture, runs the wrapped
/// program when profiling (so its exit status is real), and exports a real H200 CSV for any report.
fn fake_ncu(dir: &std::path::Path) -> std::path::PathBuf {
    let script = format!(
        r#"#!/bin/sh
echo "$@" >> {dir}/ncu-args
case "$1" in
  --version) echo "NVIDIA (R) Nsight Compute Command Line Profiler"; echo "Version 2025.3.1.0 (stand-in)";;
  --query-metrics) gzip -dc {root}/tests/fixtures/ncu-h200/query-metrics.txt.gz;;
  --import) cat {root}/tests/fixtures/h200/transpose-raw-8192x8192.csv;;
  *) while [ $# -gt 0 ]; do case "$1" in --export) shift; rep="$1";; /bin/sh) break;; esac; shift; done
     echo "==PROF== Connected to process 1 (stand-in)"
     "$@"; status=$?
     [ -n "$NO_KERNEL" ] || echo report > "$rep.ncu-rep"
     exit $status;;
esac
"#,
        dir = dir.display(),
        root = ROOT
    );
    let path = dir.join("ncu");
    install_script(&path, &script);
    path
}

/// Puts an executable script at `path` without this process ever holding it open for writing: a
/// parallel test that forks meanwhile would inherit that descriptor, and running the script would
/// then fail with ETXTBSY. A child writes it under a temporary name, renamed into place when done.
pub fn install_script(path: &std::path::Path, text: &str) {
    use std::io::Write;
    let partial = path.with_extension("partial");
    let mut writer = std::process::Command::new("/bin/sh")
        .args(["-c", r#"cat > "$1" && chmod 755 "$1""#, "install-script"])
        .arg(&partial)
        .stdin(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    writer
        .stdin
        .take()
        .unwrap()
        .write_all(text.as_bytes())
        .unwrap();
    assert!(writer.wait().unwrap().success());
    std::fs::rename(&partial, path).unwrap();
}

#[test]
fn ncu_orchestration_exit_codes_and_program_output() {
    // Under target/, not /tmp, which may be mounted noexec.
    let d = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let ncu = fake_ncu(d.path());
    let run = |program: &[&str], extra: &[&str]| {
        let mut c = gpu_lab();
        c.args([
            "ncu",
            "--metrics",
            "gld_efficiency,shared_load_transactions_per_request",
        ])
        .args(extra)
        .arg("--")
        .args(program);
        c.env("NCU", &ncu)
            .env("GPU_LAB_CACHE", d.path().join("cache"));
        c
    };
    let ok = run(
        &["/bin/sh", "-c", "echo probe says hello"],
        &["--kernel", "copy_.*", "--launch-count", "2"],
    )
    .assert()
    .code(0)
    .get_output()
    .clone();
    let (stdout, stderr) = (
        String::from_utf8_lossy(&ok.stdout),
        String::from_utf8_lossy(&ok.stderr),
    );
    assert!(
        stdout.contains("Device \"NVIDIA H200 (0)\"")
            && stdout.contains("gld_efficiency")
            && !stdout.contains("probe says hello"),
        "{stdout}"
    );
    assert!(
        stderr.contains("probe says hello") && stderr.contains("end of output (exit code 0)"),
        "{stderr}"
    );
    let args = std::fs::read_to_string(d.path().join("ncu-args")).unwrap();
    assert!(
        args.contains("--clock-control none")
            && args.contains("--kernel-name regex:copy_.* --launch-count 2"),
        "{args}"
    );

    run(&["/bin/sh", "-c", "exit 3"], &[])
        .assert()
        .code(4)
        .stderr(predicate::str::contains("exited with code 3"));
    run(&["/bin/sh", "-c", "exit 3"], &[])
        .env("NO_KERNEL", "1")
        .assert()
        .code(4)
        .stderr(predicate::str::contains(
            "exited with code 3, and ncu profiled no kernel",
        ));
    run(&["/bin/sh", "-c", "true"], &["--kernel", "nothing"])
        .env("NO_KERNEL", "1")
        .assert()
        .code(1)
        .stderr(predicate::str::contains("no kernel matched --kernel"));
    run(&["./no-such-probe"], &[]).assert().code(1).stderr(
        predicate::str::contains("program `./no-such-probe` not found")
            .and(predicate::str::contains("fix:")),
    );
    // A raw name this GPU does not have is refused before ncu runs, with the closest names.
    run(
        &["/bin/sh", "-c", "true"],
        &["--metrics", "l1tex__t_sector_pipe_lsu_mem_global_op_ld.sum"],
    )
    .assert()
    .code(1)
    .stderr(predicate::str::contains(
        "closest: l1tex__t_sectors_pipe_lsu_mem_global_op_ld",
    ));
    // A report an earlier run left at the --export path is not this run's.
    let stale = d.path().join("stale");
    std::fs::write(d.path().join("stale.ncu-rep"), "earlier").unwrap();
    run(
        &["/bin/sh", "-c", "true"],
        &["--kernel", "nothing", "--export", stale.to_str().unwrap()],
    )
    .env("NO_KERNEL", "1")
    .assert()
    .code(1)
    .stderr(
        predicate::str::contains("no kernel matched --kernel").and(predicate::str::contains(
            "stale.ncu-rep is from an earlier run",
        )),
    );
    let keep = d.path().join("kept");
    run(
        &["/bin/sh", "-c", "true"],
        &["--export", keep.to_str().unwrap(), "--format", "csv"],
    )
    .assert()
    .code(0)
    .stderr(predicate::str::contains("kept.ncu-rep"));
    assert!(d.path().join("kept.ncu-rep").is_file());
}

#[test]
fn ncu_without_ncu_or_program_says_how_to_fix_it() {
    gpu_lab()
        .args(["ncu", "--", "/bin/true"])
        .env("NCU", "/nonexistent/ncu")
        .assert()
        .code(1)
        .stderr(predicate::str::contains(
            "NCU=/nonexistent/ncu is not a file",
        ));
    gpu_lab()
        .args(["ncu", "--metrics", "gld_efficiency"])
        .assert()
        .code(2);
}

#[test]
fn the_nvcc_built_probe_captured_on_an_h100_shows_the_seeds_numbers() {
    // `gpu-lab ncu` on examples/nvprof-probe (scripts/ncu-demo.sh, H100, 2026-11-22): the export it read back.
    let out = stdout_of(&[
        "import",
        "tests/fixtures/h100/nvprof-probe-raw.csv",
        "--metrics",
        "gld_efficiency,shared_load_transactions_per_request",
    ]);
    let line_after = |kernel: &str, metric: &str| -> String {
        let at = out
            .find(&format!("Kernel: {kernel}"))
            .unwrap_or_else(|| panic!("no {kernel} in\n{out}"));
        out[at..]
            .lines()
            .find(|l| l.contains(metric))
            .unwrap()
            .to_string()
    };
    assert!(
        line_after("copy_row(", "gld_efficiency").ends_with("100.00%     100.00%     100.00%"),
        "{out}"
    );
    assert!(
        line_after("copy_column(", "gld_efficiency").ends_with("12.50%      12.50%      12.50%"),
        "{out}"
    );
    // Column read of an unpadded tile: 32 wavefronts per request; padded: about 1.
    assert!(
        line_after(
            "void transpose_tile<1, 0>",
            "shared_load_transactions_per_request"
        )
        .contains("32.1"),
        "{out}"
    );
    assert!(
        line_after(
            "void transpose_tile<1, 1>",
            "shared_load_transactions_per_request"
        )
        .contains("1.0"),
        "{out}"
    );
    assert!(
        out.contains("Device \"NVIDIA H100 80GB HBM3 (0)\""),
        "{out}"
    );
}

/// An export made with NVIDIA's documented nvprof mapping (`smsp__sass_average_data_bytes_per_sector_mem_global_op_ld.pct`
/// for gld_efficiency) gets the metric through its alternative formula, and says which.
#[test]
fn nvidias_mapping_is_an_alternative_formula_that_is_named() {
    gpu_lab()
        .args(["import", "tests/fixtures/ncu-h200/raw-metrics-stdout-mixed.csv", "--metrics", "gld_efficiency"])
        .assert()
        .code(0)
        .stdout(predicate::str::contains("gld_efficiency").and(predicate::str::contains("100.00%")))
        .stderr(predicate::str::contains("gld_efficiency computed from smsp__sass_average_data_bytes_per_sector_mem_global_op_ld.pct"));
}

/// The `occupancy` set on a launch ncu profiled on an H100 (256 threads, 16 registers): ncu's own
/// launch limits, which the occupancy model reproduces (src/occupancy.rs), its theoretical and the
/// achieved occupancy.
#[test]
fn the_occupancy_set_reads_ncus_launch_limits_and_both_occupancies() {
    let json: serde_json::Value = serde_json::from_str(&stdout_of(&[
        "import",
        "tests/fixtures/h100/transpose-raw-2048x1024.csv",
        "--set",
        "occupancy",
        "--format",
        "json",
    ]))
    .unwrap();
    let copy_row = json["kernels"]
        .as_array()
        .unwrap()
        .iter()
        .find(|k| k["kernel"] == "copy_row")
        .unwrap();
    let avg = |name: &str| {
        copy_row["metrics"]
            .as_array()
            .unwrap()
            .iter()
            .find(|m| m["metric"] == name)
            .unwrap_or_else(|| panic!("no {name}"))["avg"]
            .as_f64()
            .unwrap()
    };
    assert_eq!(
        [
            avg("registers_per_thread"),
            avg("occupancy_limit_block_size"),
            avg("occupancy_limit_blocks"),
            avg("occupancy_limit_registers"),
            avg("theoretical_occupancy")
        ],
        [16.0, 8.0, 32.0, 16.0, 100.0]
    );
    assert_eq!(
        avg("achieved_occupancy"),
        65.38,
        "ncu measured fewer warps resident than the 100% the limits allow"
    );
}
