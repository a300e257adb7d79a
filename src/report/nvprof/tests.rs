//! Tests of the nvprof summary: grouping launches, nvprof's formatting, and the table, markdown and CSV it prints.

use std::collections::BTreeMap;

use super::*;
use crate::metrics::{self, Aggregate};
use crate::parse::KernelRow;

#[test]
fn long_durations_are_scaled_once() {
    let line = MetricLine {
        unit: "ns".into(),
        ..MetricLine::default()
    };
    assert_eq!(nvprof_value(&line, 5e12), "5000.00s");
    assert_eq!(nvprof_value(&line, 2.5e9), "2.5000s");
    assert_eq!(nvprof_value(&line, 1234.0), "1.2340us");
}

fn row(id: u64, kernel: &str, values: &[(&str, f64)]) -> KernelRow {
    KernelRow {
        id,
        process_id: "558".into(),
        kernel_name: kernel.into(),
        block_size: "(32, 8, 1)".into(),
        grid_size: "(64, 256, 1)".into(),
        device: "0".into(),
        cc: "9.0".into(),
        values: values.iter().map(|(k, v)| (k.to_string(), *v)).collect(),
        text: BTreeMap::from([(DEVICE_NAME.to_string(), "NVIDIA H200".to_string())]),
    }
}

const REQ: &str = "smsp__sass_data_bytes_mem_global_op_ld.sum";
const SECT: &str = "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum";

#[test]
fn launches_group_by_kernel_with_min_max_and_plain_mean() {
    let c = metrics::Catalog::builtin().unwrap();
    let defs = c
        .resolve(&[
            "gld_efficiency".into(),
            "shared_load_transactions_per_request".into(),
        ])
        .unwrap();
    let rows = vec![
        row(0, "copy_row", &[(REQ, 128.0), (SECT, 4.0)]),
        row(1, "copy_column", &[(REQ, 128.0), (SECT, 32.0)]),
        row(2, "copy_row", &[(REQ, 128.0), (SECT, 8.0)]),
    ];
    let s = summarize(&rows, &defs).unwrap();
    assert_eq!(
        s.kernels
            .iter()
            .map(|k| (k.kernel.as_str(), k.launches))
            .collect::<Vec<_>>(),
        [("copy_row", 2), ("copy_column", 1)]
    );
    let eff = &s.kernels[0].metrics[0];
    assert_eq!(
        (eff.invocations, eff.min, eff.max, eff.avg),
        (2, Some(50.0), Some(100.0), Some(75.0))
    );
    assert_eq!(s.missing.len(), 1);
    assert_eq!(s.missing[0].metric, "shared_load_transactions_per_request");
    assert_eq!(s.missing[0].counters.len(), 2);
}

#[test]
fn the_table_has_nvprofs_columns_and_widths() {
    let c = metrics::Catalog::builtin().unwrap();
    let defs = c.resolve(&["gld_efficiency".into()]).unwrap();
    let s = summarize(
        &[row(
            0,
            "copyRow(float*, float*, int, int)",
            &[(REQ, 128.0), (SECT, 4.0)],
        )],
        &defs,
    )
    .unwrap();
    let t = render_table(&s);
    let lines: Vec<&str> = t.lines().collect();
    assert_eq!(lines[0], "==558== Profiling result:");
    assert_eq!(lines[3], "Device \"NVIDIA H200 (0)\"");
    assert_eq!(lines[4], "    Kernel: copyRow(float*, float*, int, int)");
    // nvprof's own line for this metric, column for column (../shared/seeds/002, a GT 1030).
    assert_eq!(
        lines[5],
        "          1                            gld_efficiency             Global Memory Load Efficiency     100.00%     100.00%     100.00%"
    );
    assert_eq!(
        lines[2],
        "Invocations                               Metric Name                        Metric Description         Min         Max         Avg"
    );
}

#[test]
fn values_are_formatted_as_nvprof_did() {
    let line = |unit: &str, aggregate| MetricLine {
        metric: "m".into(),
        description: String::new(),
        unit: unit.into(),
        invocations: 1,
        min: None,
        max: None,
        avg: None,
        not_applicable: 0,
        not_applicable_reason: None,
        aggregate,
        raw: false,
    };
    assert_eq!(nvprof_value(&line("%", Aggregate::Mean), 83.333), "83.33%");
    assert_eq!(
        nvprof_value(&line("byte/s", Aggregate::Mean), 24.568e9),
        "24.568GB/s"
    );
    assert_eq!(
        nvprof_value(&line("byte/s", Aggregate::Mean), 192.52e9),
        "192.52GB/s"
    );
    assert_eq!(
        nvprof_value(&line("sectors", Aggregate::Mean), 16.000031),
        "16.000031"
    );
    assert_eq!(
        nvprof_value(&line("conflicts", Aggregate::Sum), 4194306.0),
        "4194306"
    );
    assert_eq!(
        nvprof_value(&line("ns", Aggregate::Sum), 983_168.0),
        "983.17us"
    );
}

#[test]
fn undefined_ratios_and_faulted_launches_are_shown() {
    let c = metrics::Catalog::builtin().unwrap();
    let defs = c
        .resolve(&["shared_load_transactions_per_request".into()])
        .unwrap();
    let w = "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum";
    let i = "smsp__inst_executed_op_shared_ld.sum";
    let mut bad = row(1, "faulty", &[(w, f64::NAN), (i, f64::NAN)]);
    bad.grid_size = "(0, 0, 0)".into();
    let s = summarize(&[row(0, "copy", &[(w, 0.0), (i, 0.0)]), bad], &defs).unwrap();
    assert_eq!(s.faulted_launches(), 1);
    let t = render_table(&s);
    assert!(t.contains("n/a         n/a         n/a"), "{t}");
    assert!(t.contains("(faulted: 1 of 1 launches"), "{t}");
    let md = render_markdown(&s);
    assert!(md.contains("| `faulty` (faulted: 1 of 1 launches"), "{md}");
    let csv = render_csv(&s).unwrap();
    assert_eq!(csv.lines().count(), 3, "{csv}");
}

#[test]
fn launches_where_a_ratio_is_undefined_are_counted_and_said() {
    let c = metrics::Catalog::builtin().unwrap();
    let defs = c.resolve(&["gld_efficiency".into()]).unwrap();
    let rows = [
        row(0, "copy", &[(REQ, 128.0), (SECT, 4.0)]),
        row(1, "copy", &[(REQ, 0.0), (SECT, 0.0)]),
        row(2, "copy", &[(REQ, 128.0), (SECT, 8.0)]),
    ];
    let s = summarize(&rows, &defs).unwrap();
    let line = &s.kernels[0].metrics[0];
    assert_eq!(
        (line.invocations, line.not_applicable, line.min, line.avg),
        (3, 1, Some(50.0), Some(75.0))
    );
    let t = render_table(&s);
    assert!(t.contains("\n        (gld_efficiency: n/a in 1 of 3 invocations (formula undefined there, such as 0/0); Min, Max and Avg are over the other 2)\n"), "{t}");
    let md = render_markdown(&s);
    assert!(
        md.contains("| `copy` | 3           | 1   | gld_efficiency |"),
        "{md}"
    );
}
