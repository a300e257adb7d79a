//! Tests of metric definitions and formulas against values captured on an H200.

use std::collections::BTreeMap;

use super::*;

fn builtin() -> Catalog {
    Catalog::builtin().unwrap()
}

fn values(pairs: &[(&str, f64)]) -> BTreeMap<String, f64> {
    pairs.iter().map(|(k, v)| (k.to_string(), *v)).collect()
}

#[test]
fn gld_efficiency_of_row_and_column_access() {
    let c = builtin();
    let def = &c.metrics["gld_efficiency"];
    // A warp reading 32 consecutive floats: 128 requested bytes in 4 sectors.
    let row = values(&[
        ("smsp__sass_data_bytes_mem_global_op_ld.sum", 128.0),
        ("l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum", 4.0),
    ]);
    assert_eq!(evaluate(def, &row), Ok(LaunchValue::Value(100.0)));
    // Reading a column: 32 sectors for the same 128 bytes, nvprof's 12.5%.
    let col = values(&[
        ("smsp__sass_data_bytes_mem_global_op_ld.sum", 128.0),
        ("l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum", 32.0),
    ]);
    assert_eq!(evaluate(def, &col), Ok(LaunchValue::Value(12.5)));
    assert!(is_notable(def, 12.5));
    assert!(!is_notable(def, 99.0));
}

#[test]
fn missing_counter_and_undefined_ratio_differ() {
    let c = builtin();
    let def = &c.metrics["shared_load_transactions_per_request"];
    assert_eq!(evaluate(def, &values(&[])), Ok(LaunchValue::Missing));
    let no_shared = values(&[
        ("l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum", 0.0),
        ("smsp__inst_executed_op_shared_ld.sum", 0.0),
    ]);
    assert_eq!(
        evaluate(def, &no_shared),
        Ok(LaunchValue::NotApplicable(None))
    );
    let conflicts = values(&[
        (
            "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum",
            1024.0,
        ),
        ("smsp__inst_executed_op_shared_ld.sum", 32.0),
    ]);
    assert_eq!(evaluate(def, &conflicts), Ok(LaunchValue::Value(32.0)));
}

#[test]
fn sets_resolve_and_unknown_names_get_suggestions() {
    let c = builtin();
    let defs = c
        .resolve(&["transpose".into(), "gld_efficiency".into()])
        .unwrap();
    assert_eq!(
        defs.iter().filter(|d| d.name == "gld_efficiency").count(),
        1
    );
    let counters = counters_needed(&defs);
    assert!(counters.contains(&DURATION.to_string()));
    assert!(
        counters.contains(&"l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum".to_string())
    );
    let raw = c.resolve(&["dram__bytes_read.sum".into()]).unwrap();
    assert_eq!(raw[0].counters["x"], "dram__bytes_read.sum");
    let err = c
        .resolve(&["gld_eficiency".into()])
        .unwrap_err()
        .to_string();
    assert!(err.contains("did you mean gld_efficiency"), "{err}");
}

#[test]
fn every_builtin_counter_exists_on_hopper() {
    // ncu --query-metrics from an H200 (ncu 2025.3.1): every counter we ask for must be collectable.
    // Stored gzipped (1 MB plain).
    let gz = std::fs::File::open(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/ncu-h200/query-metrics.txt.gz"
    ))
    .unwrap();
    let mut listing = String::new();
    std::io::Read::read_to_string(&mut flate2::read::GzDecoder::new(gz), &mut listing).unwrap();
    let bases: std::collections::HashSet<&str> = listing
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .collect();
    // A raw export ncu wrote on an H100: the names it reported for a real launch.
    let export = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/h100/transpose-raw-2048x1024.csv"
    ))
    .unwrap();
    let exported: std::collections::HashSet<&str> = export
        .lines()
        .next()
        .unwrap()
        .split(',')
        .map(|h| h.trim_matches('"'))
        .collect();
    for def in builtin().metrics.values() {
        // Collected: its own counters and its n/a rules' (alternatives are never collected).
        let collected = def
            .counters
            .values()
            .chain(def.not_applicable.iter().flat_map(|r| r.counters.values()));
        for counter in collected {
            let base = counter.split('.').next().unwrap();
            // Launch statistics (registers, occupancy limits, cluster shape) and ncu's derived
            // occupancy figures (`sm__maximum_warps_per_active_cycle_pct`) are not in that list;
            // ncu reports them for every launch, as its export shows.
            if exported.contains(counter.as_str()) {
                continue;
            }
            assert!(
                !base.starts_with("launch__"),
                "{} uses {counter}, a launch statistic ncu's H100 export lacks",
                def.name
            );
            assert!(
                bases.contains(base),
                "{} uses {counter}, not in ncu's list for Hopper",
                def.name
            );
        }
    }
    for launch_statistic in [
        "launch__occupancy_limit_blocks",
        "launch__occupancy_limit_warps",
        "launch__occupancy_limit_registers",
        "launch__occupancy_limit_shared_mem",
        "launch__registers_per_thread",
        "sm__maximum_warps_per_active_cycle_pct",
    ] {
        assert!(
            exported.contains(launch_statistic),
            "ncu's H100 export has no {launch_statistic}"
        );
    }
}

#[test]
fn aggregation_weights_means_by_duration() {
    let c = builtin();
    let eff = &c.metrics["gld_efficiency"];
    assert_eq!(aggregate(eff, &[(100.0, 1.0), (50.0, 3.0)]), Some(62.5));
    let dur = &c.metrics["duration"];
    assert_eq!(aggregate(dur, &[(10.0, 10.0), (5.0, 5.0)]), Some(15.0));
    assert_eq!(aggregate(dur, &[]), None);
}

#[test]
fn broken_definitions_are_rejected_with_the_file_name() {
    let mut c = Catalog::default();
    let bad = "[metrics.x]\ndescription = \"d\"\nunit = \"%\"\ncounters = { a = \"a__b.sum\" }\nformula = \"a * b\"\n";
    let err = c.add_toml("user.toml", bad).unwrap_err().to_string();
    assert!(
        err.contains("user.toml") && err.contains("unknown name `b`"),
        "{err}"
    );
    let bad_set = "[sets.s]\nmetrics = [\"nope\"]\n";
    assert!(
        c.add_toml("user.toml", bad_set)
            .unwrap_err()
            .to_string()
            .contains("nope")
    );
}

#[test]
fn ncu_efficiency_of_a_kernel_without_loads_is_not_applicable() {
    let c = builtin();
    let def = &c.metrics["gld_efficiency_ncu"];
    // What ncu 2025.3.1 reported on an H100 for the seed's divergence_code (no global loads).
    let none = values(&[
        (
            "smsp__sass_average_data_bytes_per_sector_mem_global_op_ld.pct",
            0.0,
        ),
        ("l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum", 0.0),
    ]);
    assert_eq!(evaluate(def, &none), Ok(LaunchValue::NotApplicable(None)));
    let misaligned = values(&[
        (
            "smsp__sass_average_data_bytes_per_sector_mem_global_op_ld.pct",
            80.0,
        ),
        (
            "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum",
            5_242_880.0,
        ),
    ]);
    assert_eq!(evaluate(def, &misaligned), Ok(LaunchValue::Value(80.0)));
}

#[test]
fn a_formula_that_cannot_be_evaluated_is_an_error_naming_the_metric_not_na() {
    let mut c = Catalog::default();
    // Loads (every counter 1 gives a number), but gives `false` where `b` is 0.
    let text = "[metrics.odd]\ndescription = \"d\"\nunit = \"\"\ncounters = { a = \"a__x.sum\", b = \"b__x.sum\" }\nformula = \"if(b > 0, a / b, false)\"\n";
    c.add_toml("user.toml", text).unwrap();
    let def = &c.metrics["odd"];
    assert_eq!(
        evaluate(def, &values(&[("a__x.sum", 3.0), ("b__x.sum", 2.0)])),
        Ok(LaunchValue::Value(1.5))
    );
    let err = evaluate(def, &values(&[("a__x.sum", 3.0), ("b__x.sum", 0.0)]))
        .unwrap_err()
        .to_string();
    assert!(
        err.starts_with("metric `odd`: cannot evaluate") && err.contains("fix:"),
        "{err}"
    );
    // A non-finite result is n/a, not an error.
    let ratio = "[metrics.r]\ndescription = \"d\"\nunit = \"\"\ncounters = { a = \"a__x.sum\", b = \"b__x.sum\" }\nformula = \"a / b\"\n";
    c.add_toml("user.toml", ratio).unwrap();
    assert_eq!(
        evaluate(
            &c.metrics["r"],
            &values(&[("a__x.sum", 0.0), ("b__x.sum", 0.0)])
        ),
        Ok(LaunchValue::NotApplicable(None))
    );
}

#[test]
fn gld_efficiency_says_why_it_is_not_applicable_for_loads_not_made_by_ld() {
    let c = Catalog::builtin().unwrap();
    let def = &c.metrics["gld_efficiency"];
    let base = [
        ("smsp__sass_data_bytes_mem_global_op_ld.sum", 0.0),
        ("l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum", 0.0),
        ("l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum", 0.0),
    ];
    let with =
        |extra: &[(&str, f64)]| values(&base.iter().chain(extra).copied().collect::<Vec<_>>());
    let reason = |v: LaunchValue| match v {
        LaunchValue::NotApplicable(rule) => def.not_applicable_reason(rule).map(String::from),
        other => panic!("{other:?}"),
    };
    // LDGSTS (cp.async) or TMA loads, no LD: the reason is the async loads.
    assert_eq!(
        reason(
            evaluate(
                def,
                &with(&[
                    ("smsp__inst_executed_op_ldgsts.sum", 64.0),
                    ("smsp__inst_executed_op_tma_ld.sum", 0.0)
                ])
            )
            .unwrap()
        )
        .as_deref(),
        Some("loads via cp.async/TMA")
    );
    assert_eq!(
        reason(
            evaluate(
                def,
                &with(&[
                    ("smsp__inst_executed_op_ldgsts.sum", 0.0),
                    ("smsp__inst_executed_op_tma_ld.sum", 8.0)
                ])
            )
            .unwrap()
        )
        .as_deref(),
        Some("loads via cp.async/TMA")
    );
    // No loads of any kind, and without the async counters (an export that lacks them).
    assert_eq!(
        reason(
            evaluate(
                def,
                &with(&[
                    ("smsp__inst_executed_op_ldgsts.sum", 0.0),
                    ("smsp__inst_executed_op_tma_ld.sum", 0.0)
                ])
            )
            .unwrap()
        )
        .as_deref(),
        Some("no global loads")
    );
    assert!(
        reason(evaluate(def, &with(&[])).unwrap())
            .unwrap()
            .contains("were not counted")
    );
    // LD loads beside TMA loads (which do not use the LSU pipe) or no async loads: the formula.
    let ld = |ldgsts: f64, tma: f64| {
        values(&[
            ("smsp__sass_data_bytes_mem_global_op_ld.sum", 128.0),
            ("l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum", 4.0),
            ("l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum", 1.0),
            ("smsp__inst_executed_op_ldgsts.sum", ldgsts),
            ("smsp__inst_executed_op_tma_ld.sum", tma),
        ])
    };
    assert_eq!(evaluate(def, &ld(0.0, 0.0)), Ok(LaunchValue::Value(100.0)));
    assert_eq!(evaluate(def, &ld(0.0, 64.0)), Ok(LaunchValue::Value(100.0)));
    // LD loads beside cp.async: n/a with the reason, whatever the sectors say.
    assert!(
        reason(evaluate(def, &ld(64.0, 0.0)).unwrap())
            .unwrap()
            .contains("mixed with cp.async"),
    );
    // The rules' counters are collected with the metric, so that the reason is known.
    let needed = counters_needed(std::slice::from_ref(def));
    assert!(
        needed
            .iter()
            .any(|c| c == "smsp__inst_executed_op_ldgsts.sum")
            && needed
                .iter()
                .any(|c| c == "smsp__inst_executed_op_tma_ld.sum"),
        "{needed:?}"
    );
}

#[test]
fn the_tensor_set_resolves_and_the_compute_set_holds_the_tensor_pipe_check() {
    let c = builtin();
    let tensor = c.resolve(&["tensor".into()]).unwrap();
    for name in [
        TENSOR_PIPE_METRIC,
        "tensor_hmma_utilization",
        "tensor_imma_utilization",
        "tensor_dmma_utilization",
        "wgmma_share",
        "tma_load_bytes",
        "tma_store_bytes",
        "tma_load_instructions",
        "dsmem_read_bytes",
        "dsmem_write_bytes",
        "cluster_size",
        "cluster_max_active",
        "clusters_launched",
        "cluster_residency",
        "duration",
    ] {
        assert!(tensor.iter().any(|d| d.name == name), "{name}");
    }
    // Every metric of the set is defined (none falls back to a raw counter).
    assert!(tensor.iter().all(|d| !is_raw_metric(d)));
    let compute = c.resolve(&["compute".into()]).unwrap();
    assert!(compute.iter().any(|d| d.name == TENSOR_PIPE_METRIC));
    let needed = counters_needed(&compute);
    assert!(needed.contains(
        &"sm__pipe_tensor_type_hmma_hgmma_qgmma_imma_igmma_bmma_bgmma_cycles_active.avg.pct_of_peak_sustained_active".to_string()
    ));
}

#[test]
fn tensor_pipe_utilization_adds_matrix_and_dmma_work_and_is_na_without_either() {
    let c = builtin();
    let def = &c.metrics[TENSOR_PIPE_METRIC];
    let mma = "sm__pipe_tensor_type_hmma_hgmma_qgmma_imma_igmma_bmma_bgmma_cycles_active.avg.pct_of_peak_sustained_active";
    let dmma = "sm__pipe_tensor_op_dmma_cycles_active.avg.pct_of_peak_sustained_active";
    assert_eq!(
        evaluate(def, &values(&[(mma, 42.5), (dmma, 0.0)])),
        Ok(LaunchValue::Value(42.5))
    );
    assert_eq!(
        evaluate(def, &values(&[(mma, 70.0), (dmma, 40.0)])),
        Ok(LaunchValue::Value(100.0))
    );
    let simt = evaluate(def, &values(&[(mma, 0.0), (dmma, 0.0)])).unwrap();
    assert_eq!(simt, LaunchValue::NotApplicable(Some(0)));
    assert_eq!(
        def.not_applicable_reason(Some(0)),
        Some("no tensor-core work")
    );
    // An export with only the whole pipe's counter: the alternative.
    let whole = values(&[(
        "sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_active",
        12.0,
    )]);
    assert_eq!(evaluate(def, &whole), Ok(LaunchValue::Value(12.0)));
    assert!(is_notable(def, 12.0) && !is_notable(def, 95.0));
}

#[test]
fn wgmma_share_and_cluster_residency_read_their_counters() {
    let c = builtin();
    let share = &c.metrics["wgmma_share"];
    // 800 HMMA-pipe instructions of which 100 are HFMA2.MMA, 100 IMMA: 600 of the 800 matrix ones wgmma.
    let counts = |gmma: f64| {
        values(&[
            ("sm__inst_executed_pipe_tensor_op_gmma.sum", gmma),
            ("sm__inst_executed_pipe_tensor_op_hmma.sum", 800.0),
            (
                "sm__inst_executed_pipe_tensor_op_hmma_type_hfma2.sum",
                100.0,
            ),
            ("sm__inst_executed_pipe_tensor_op_imma.sum", 100.0),
            ("sm__inst_executed_pipe_tensor_op_dmma.sum", 0.0),
        ])
    };
    assert_eq!(
        evaluate(share, &counts(600.0)),
        Ok(LaunchValue::Value(75.0))
    );
    assert!(is_notable(share, 0.0) && !is_notable(share, 75.0));
    let none = values(&[
        ("sm__inst_executed_pipe_tensor_op_gmma.sum", 0.0),
        ("sm__inst_executed_pipe_tensor_op_hmma.sum", 64.0),
        ("sm__inst_executed_pipe_tensor_op_hmma_type_hfma2.sum", 64.0),
        ("sm__inst_executed_pipe_tensor_op_imma.sum", 0.0),
        ("sm__inst_executed_pipe_tensor_op_dmma.sum", 0.0),
    ]);
    assert_eq!(
        evaluate(share, &none),
        Ok(LaunchValue::NotApplicable(Some(0)))
    );
    let residency = &c.metrics["cluster_residency"];
    let launch = |size: f64| {
        values(&[
            ("gpc__cgas_active.sum", 8.0 * 1000.0),
            ("gpc__cycles_elapsed.max", 1000.0),
            ("launch__cluster_max_active", 16.0),
            ("launch__cluster_size", size),
        ])
    };
    assert_eq!(
        evaluate(residency, &launch(8.0)),
        Ok(LaunchValue::Value(50.0))
    );
    assert_eq!(
        evaluate(residency, &launch(0.0)),
        Ok(LaunchValue::NotApplicable(Some(0)))
    );
}

/// Issue 32: cuBLAS's sm80 FP32 GEMM (cp.async loads plus a few LDG) read gld_efficiency 0.00%.
/// No ncu capture of that kernel exists here: the counters below are built from the counters'
/// documented meaning (`ncu --query-metrics` on an H200, tests/fixtures/ncu-h200): a few LDG
/// requests with their bytes, LDGSTS instructions, and op_ld sectors that also hold the
/// LDGSTS.BYPASS loads' (ncu has no T-stage counter of its own for those), which made the 0.00%.
#[test]
fn ordinary_loads_mixed_with_cp_async_read_n_a_with_the_reason_never_zero() {
    let c = Catalog::builtin().unwrap();
    let sgemm_like = values(&[
        ("smsp__sass_data_bytes_mem_global_op_ld.sum", 2_048.0),
        (
            "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum",
            16_777_216.0,
        ),
        ("l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum", 16.0),
        ("smsp__inst_executed_op_ldgsts.sum", 1_048_576.0),
        ("smsp__inst_executed_op_tma_ld.sum", 0.0),
        (
            "smsp__sass_average_data_bytes_per_sector_mem_global_op_ld.pct",
            100.0,
        ),
    ]);
    for name in ["gld_efficiency", "gld_transactions_per_request"] {
        let def = &c.metrics[name];
        match evaluate(def, &sgemm_like) {
            Ok(LaunchValue::NotApplicable(rule)) => assert!(
                def.not_applicable_reason(rule)
                    .is_some_and(|r| r.contains("LD loads mixed with cp.async")),
                "{name}: {rule:?}"
            ),
            other => panic!("{name}: {other:?}"),
        }
    }
    // NVIDIA's own ratio counts LD/LDG instructions alone (its LDGSTS twin is another counter).
    assert_eq!(
        evaluate(&c.metrics["gld_efficiency_ncu"], &sgemm_like),
        Ok(LaunchValue::Value(100.0))
    );
}
