//! ncu CSV ingestion on real captured output (H200 and H100) and on each quirk ncu is known to print.

use std::collections::BTreeMap;

use gpu_lab::metrics::{Catalog, Evaluator, LaunchValue, evaluate, is_raw_metric, raw_metric};
use gpu_lab::parse::{parse_ncu_csv, parse_number, unit_scale};

use crate::common::{fixture, repo};

#[test]
fn raw_page_with_program_stdout_units_row_and_separators() {
    let out = parse_ncu_csv(&fixture("ncu-h200/raw-metrics-stdout-mixed.csv")).unwrap();
    let names: Vec<&str> = out.kernels.iter().map(|k| k.kernel_name.as_str()).collect();
    assert_eq!(names.len(), 6, "{names:?}");
    // The probe was profiled with a kernel filter: six launches of transpose_naive, IDs 0..5.
    assert!(names.iter().all(|n| *n == "transpose_naive"));
    assert_eq!(
        out.kernels.iter().map(|k| k.id).collect::<Vec<_>>(),
        vec![0, 1, 2, 3, 4, 5]
    );
    // "983,168" with a thousands separator, in ns (the units row says so).
    assert_eq!(out.kernels[0].values["gpu__time_duration.sum"], 983_168.0);
    assert_eq!(
        out.kernels[0].values["l1tex__average_t_sectors_per_request_pipe_lsu_mem_global_op_st.ratio"],
        32.0
    );
    assert_eq!(
        out.kernels[0].text["launch__cluster_scheduling_policy"],
        "PolicySpread"
    );
    assert_eq!(out.kernels[0].block_size, "(32, 32, 1)");
    // The probe's own stdout is kept apart, not parsed as data.
    assert!(
        out.program_output
            .iter()
            .any(|l| l.starts_with("transpose_naive: 24.1576 ms"))
    );
    assert!(
        out.warnings
            .iter()
            .any(|l| l.contains("unmodified GPU clocks"))
    );
    assert!(out.errors.is_empty());
    assert!(out.kernels.iter().all(|k| !k.looks_faulted()));
}

#[test]
fn details_page_is_pivoted_to_one_row_per_kernel() {
    let out = parse_ncu_csv(&fixture("ncu-h200/details-metrics-stdout-mixed.csv")).unwrap();
    assert!(!out.kernels.is_empty());
    let k = &out.kernels[0];
    assert_eq!(k.kernel_name, "transpose_naive");
    assert_eq!(k.values["gpu__time_duration.sum"], 981_760.0);
    assert_eq!(
        k.values["dram__bytes_read.sum.per_second"],
        283_595_827_900.91
    );
    assert_eq!(
        k.values["sm__warps_active.avg.pct_of_peak_sustained_active"],
        56.22
    );
}

#[test]
fn full_set_details_with_blank_lines_and_unavailable_metric_warning() {
    let out = parse_ncu_csv(&fixture("ncu-h200/details-set-full-one-kernel.csv")).unwrap();
    assert_eq!(out.kernels.len(), 1);
    let k = &out.kernels[0];
    assert_eq!(k.kernel_name, "transpose_padded");
    assert_eq!(k.values["Duration"], 293_408.0);
    assert_eq!(k.values["DRAM Frequency"], 3_198_949_358.35);
    assert!(
        out.warnings
            .iter()
            .any(|w| w.contains("Unable to access the following 6 metrics"))
    );
}

#[test]
fn scaled_units_are_converted_to_base_units() {
    // Exported without --print-units base: durations in us, sizes in Mbyte.
    let out = parse_ncu_csv(&fixture("ncu-h200/raw-import-speedoflight.csv")).unwrap();
    assert_eq!(out.kernels.len(), 3);
    let k = &out.kernels[0];
    assert!((k.values["gpu__time_duration.sum"] - 983_136.0).abs() < 1e-6);
    assert!((k.values["profiler__replayer_bytes_mem_accessible.avg"] - 545_259_856.0).abs() < 1.0);
    assert_eq!(unit_scale("Ghz"), 1e9);
    assert_eq!(unit_scale("Kbyte/block"), 1e3);
    assert_eq!(unit_scale("msecond"), 1e6);
    assert_eq!(unit_scale("byte/s"), 1.0);
    assert_eq!(unit_scale("%"), 1.0);
}

#[test]
fn h100_capture_of_the_transpose_suite() {
    // `ncu -i profile-3.ncu-rep --csv --page raw --print-units base`, from the committed H100 run.
    let out = parse_ncu_csv(&fixture("h100/transpose-raw-2048x1024.csv")).unwrap();
    assert_eq!(out.kernels.len(), 23);
    let ids: Vec<u64> = out.kernels.iter().map(|k| k.id).collect();
    assert_eq!(ids, (0..23).collect::<Vec<_>>());
    let col = out
        .kernels
        .iter()
        .find(|k| k.kernel_name == "copy_column")
        .unwrap();
    let req = col.values["smsp__sass_data_bytes_mem_global_op_ld.sum"];
    let sectors = col.values["l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum"];
    assert_eq!(100.0 * req / (32.0 * sectors), 12.5);
    assert_eq!(col.values["profiler__replayer_passes"], 6.0);
}

const HEADER: &str = r#""ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream","Block Size","Grid Size","Device","CC","gpu__time_duration.sum","smsp__inst_executed.sum""#;

#[test]
fn template_names_with_commas_nan_rows_errors_and_two_processes() {
    let text = format!(
        "==PROF== Connected to process 10 (./app)\n==ERROR== Failed to find metric regex:^bogus__metric$\n{HEADER}\n\
         \"\",\"\",\"\",\"\",\"\",\"\",\"\",\"\",\"\",\"\",\"\",\"ns\",\"inst\"\n\
         \"0\",\"10\",\"app\",\"h\",\"void transposeUnrolled<32, 8>(const float *, float *, int)\",\"1\",\"7\",\"(32, 8, 1)\",\"(125, 125, 1)\",\"0\",\"9.0\",\"1,234\",\"n/a\"\n\
         \"1\",\"10\",\"app\",\"h\",\"faulty\",\"1\",\"7\",\"(32, 1, 1)\",\"(0, 0, 0)\",\"0\",\"9.0\",\"nan\",\"nan\"\n\
         \"0\",\"11\",\"app\",\"h\",\"second_process\",\"1\",\"7\",\"(1, 1, 1)\",\"(1, 1, 1)\",\"0\",\"9.0\",\"5\",\"7\"\n"
    );
    let out = parse_ncu_csv(&text).unwrap();
    assert_eq!(out.errors.len(), 1);
    assert_eq!(out.kernels.len(), 3);
    assert_eq!(
        out.kernels[0].kernel_name,
        "void transposeUnrolled<32, 8>(const float *, float *, int)"
    );
    assert_eq!(out.kernels[0].values["gpu__time_duration.sum"], 1234.0);
    assert_eq!(out.kernels[0].text["smsp__inst_executed.sum"], "n/a");
    assert!(out.kernels[1].looks_faulted());
    assert!(!out.kernels[0].looks_faulted());
    assert_eq!(out.kernels[2].process_id, "11");
}

#[test]
fn no_table_gives_the_ncu_error() {
    let err = parse_ncu_csv("==ERROR== Failed to find metric regex:^x__y$\n")
        .unwrap_err()
        .to_string();
    assert!(err.contains("Failed to find metric"), "{err}");
}

#[test]
fn numbers() {
    assert_eq!(parse_number("283,595,827,900.91"), Some(283_595_827_900.91));
    assert_eq!(parse_number("12.50"), Some(12.5));
    assert!(parse_number("nan").unwrap().is_nan());
    assert_eq!(parse_number("n/a"), None);
    assert_eq!(parse_number("(32, 32, 1)"), None);
    assert_eq!(parse_number(""), None);
}

#[test]
fn h200_capture_of_the_transpose_suite() {
    let out = parse_ncu_csv(&fixture("h200/transpose-raw-8192x8192.csv")).unwrap();
    assert_eq!(out.kernels.len(), 23);
    let smem = out
        .kernels
        .iter()
        .find(|k| k.kernel_name == "smem_tile")
        .unwrap();
    let per_request = smem.values["l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum"]
        / smem.values["smsp__inst_executed_op_shared_ld.sum"];
    assert!(
        (per_request - 32.0).abs() < 0.5,
        "the unpadded 32x32 tile's column read: {per_request}"
    );
}

// The metric evaluators on parsed launches (here rather than in src/metrics, which must not import parse).

#[test]
fn the_compiled_evaluator_agrees_with_evaluate_on_real_launches() {
    let text = fixture("h100/transpose-raw-2048x1024.csv");
    let rows = parse_ncu_csv(&text).unwrap().kernels;
    let c = Catalog::builtin().unwrap();
    for def in c.metrics.values() {
        let mut e = Evaluator::new(def).unwrap();
        for r in &rows {
            assert_eq!(
                e.evaluate(&r.values),
                evaluate(def, &r.values),
                "{} on {}",
                def.name,
                r.kernel_name
            );
        }
        assert_eq!(e.evaluate(&BTreeMap::new()), Ok(LaunchValue::Missing));
    }
    let raw = raw_metric("gpu__time_duration.sum");
    assert!(is_raw_metric(&raw) && !is_raw_metric(&c.metrics["gld_efficiency"]));
    assert_eq!(
        Evaluator::new(&raw).unwrap().evaluate(&BTreeMap::from([(
            "gpu__time_duration.sum".to_string(),
            f64::NAN
        )])),
        Ok(LaunchValue::NotApplicable(None))
    );
}

/// The launches of `strided_read` in a committed H100 run: ncu printed its percentage as `100`,
/// `50`, `25`, `12.50`, `12.50`, whole values first. Each launch must count, with its own value.
#[test]
fn launches_mixing_whole_and_fractional_counters_all_evaluate() {
    let text =
        std::fs::read_to_string(repo().join(
            "tests/fixtures/runs/20261122T054022Z-global-memory-h100-80gb-hbm3/profile-0.csv",
        ))
        .unwrap();
    let rows: Vec<_> = parse_ncu_csv(&text)
        .unwrap()
        .kernels
        .into_iter()
        .filter(|r| r.kernel_name == "strided_read")
        .collect();
    let c = Catalog::builtin().unwrap();
    let def = &c.metrics["gld_efficiency_ncu"];
    let mut e = Evaluator::new(def).unwrap();
    let got: Vec<LaunchValue> = rows
        .iter()
        .map(|r| e.evaluate(&r.values).unwrap())
        .collect();
    assert_eq!(got, [100.0, 50.0, 25.0, 12.5, 12.5].map(LaunchValue::Value));
    for r in &rows {
        assert_eq!(evaluate(def, &r.values), e.evaluate(&r.values));
    }
}

/// Issue 32: an ncu that returns NaN counters for a launch that ran (a GPU newer than it knows) is
/// an environment failure: `import` stops with exit 1 and the fix, and shows no value.
#[test]
fn import_refuses_nan_counters_of_a_launch_that_ran_as_an_environment_failure() {
    let fixture = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/derived/h200-raw-nvtx-template-nan-two-processes.csv"
    ))
    .unwrap();
    // The faulted launch's NaN counters, with the grid of a launch that ran.
    assert!(fixture.contains("\"(0, 0, 0)\""));
    let ran = fixture.replacen("\"(0, 0, 0)\"", "\"(64, 256, 1)\"", 1);
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("nan.csv");
    std::fs::write(&file, ran).unwrap();
    let out = crate::common::gpu_lab()
        .args([
            "import",
            file.to_str().unwrap(),
            "--metrics",
            "gld_efficiency",
        ])
        .assert()
        .code(gpu_lab::exit::ERROR)
        .get_output()
        .clone();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("NaN or infinite for kernel `copy_row`")
            && err.contains("environment failure")
            && err.contains("fix: update Nsight Compute"),
        "{err}"
    );
    assert!(
        out.stdout.is_empty(),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
}
