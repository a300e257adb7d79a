//! Tests of the computed launch statistics (`launch_stats.rs`): each launch of the committed ncu pages (H100 and H200) rebuilt from what the `__cupti` child reads (registers, block, grid, static and dynamic shared memory, the carveout), its computed values against ncu's own.

use super::*;
use crate::occupancy::{self, KernelUse};
use crate::parse::{KernelRow, parse_ncu_csv};

/// Committed ncu pages with ncu's launch statistics: H100 and H200, 16 to 30 registers, 64 to
/// 1024 threads, no, static or dynamic shared memory, carveouts of 8 to 132 KiB.
const PAGES: [(&str, &str); 7] = [
    (
        "h100 transpose",
        include_str!("../../tests/fixtures/h100/transpose-raw-2048x1024.csv"),
    ),
    (
        "h200 transpose",
        include_str!("../../tests/fixtures/h200/transpose-raw-8192x8192.csv"),
    ),
    (
        "h100 nvprof probes",
        include_str!("../../tests/fixtures/h100/nvprof-probe-raw.csv"),
    ),
    (
        "h100 shared-memory",
        include_str!(
            "../../tests/fixtures/runs/20261122T053910Z-shared-memory-h100-80gb-hbm3/profile-0.csv"
        ),
    ),
    (
        "h100 global-memory",
        include_str!(
            "../../tests/fixtures/runs/20261122T054022Z-global-memory-h100-80gb-hbm3/profile-0.csv"
        ),
    ),
    (
        "h100 warp-divergence",
        include_str!(
            "../../tests/fixtures/runs/20261122T054102Z-warp-divergence-h100-80gb-hbm3/profile-0.csv"
        ),
    ),
    (
        "h200 shared-memory both",
        include_str!("../../tests/fixtures/cupti/both-shared-memory-h200.ncu.csv"),
    ),
];

fn dims(text: &str) -> [u32; 3] {
    let v: Vec<u32> = text
        .trim_matches(|c| c == '(' || c == ')')
        .split(',')
        .map(|d| d.trim().parse().unwrap())
        .collect();
    [v[0], v[1], v[2]]
}

/// What the child would have recorded for ncu's launch `row`: the function's registers and
/// shared memory, the launch's shape, a Hopper SM, and the carveout CUPTI's record gives.
pub(crate) fn facts_of(row: &KernelRow) -> LaunchFacts {
    let get = |name: &str| row.values[name] as u32;
    let sm = SmLimits::hopper();
    let kernel = KernelUse {
        threads_per_block: dims(&row.block_size).iter().product(),
        registers_per_thread: get("launch__registers_per_thread"),
        static_shared_bytes: get("launch__shared_mem_per_block_static"),
        dynamic_shared_bytes: get("launch__shared_mem_per_block_dynamic"),
        max_threads_per_block: 1024,
        max_dynamic_shared_bytes: 48 * 1024 - get("launch__shared_mem_per_block_static"),
    };
    let model = occupancy::block_limits(&sm, &kernel).unwrap();
    LaunchFacts {
        occupancy: LaunchOccupancy {
            kernel: row.kernel_name.clone(),
            threads_per_block: kernel.threads_per_block,
            registers_per_thread: kernel.registers_per_thread,
            static_shared_bytes: kernel.static_shared_bytes,
            dynamic_shared_bytes: kernel.dynamic_shared_bytes,
            local_bytes_per_thread: 0,
            max_threads_per_block: 1024,
            max_warps_per_sm: sm.max_warps(),
            active_blocks_per_sm: Some(model.active_blocks()),
            predicted_occupancy_pct: None,
            driver_error: None,
            model: Some(model),
            limiters: model.limiters(),
            model_error: None,
            cluster: None,
            active_clusters: None,
            cluster_error: None,
        },
        grid: dims(&row.grid_size),
        sm,
        sm_count: get("launch__sm_count"),
        carveout_bytes: Some(get("launch__shared_mem_config_size")),
        carveout_error: None,
    }
}

#[test]
fn every_computed_value_equals_ncus_on_every_committed_launch() {
    let mut launches = 0;
    for (page, text) in PAGES {
        let rows = parse_ncu_csv(text).unwrap().kernels;
        assert!(!rows.is_empty(), "{page}");
        for row in &rows {
            let computed = ncu_values(&facts_of(row));
            assert_eq!(computed.len(), COMPUTED.len(), "{page}: {computed:?}");
            for (name, value) in &computed {
                let ncu = row.values[name];
                // ncu prints the waves with two decimals; everything else is a whole number.
                let tolerance = if name == "launch__waves_per_multiprocessor" {
                    0.005
                } else {
                    0.0
                };
                assert!(
                    (value - ncu).abs() <= tolerance,
                    "{page} {} {name}: computed {value}, ncu {ncu}",
                    row.kernel_name
                );
            }
            launches += 1;
        }
    }
    assert!(launches > 60, "{launches}");
}

#[test]
fn the_shared_memory_limit_divides_the_configured_carveout_not_the_sm() {
    // tests/fixtures/runs/…global-memory…: aos_sum_x, 256 threads, 32 bytes static: 32 + 1024
    // reserved = 1056, rounded up to 1152; the driver configured 32 KiB: 28 blocks (ncu: 28),
    // where the SM's 228 KiB would hold 202.
    let rows = parse_ncu_csv(PAGES[4].1).unwrap().kernels;
    let row = rows.iter().find(|r| r.kernel_name == "aos_sum_x").unwrap();
    let f = facts_of(row);
    assert_eq!(f.occupancy.model.unwrap().shared_memory, Some(202));
    let v = ncu_values(&f);
    assert_eq!(v["launch__occupancy_limit_shared_mem"], 28.0);
    assert_eq!(v["sm__maximum_warps_per_active_cycle_pct"], 100.0);
}

#[test]
fn without_the_carveout_its_figures_are_missing_not_guessed() {
    let rows = parse_ncu_csv(PAGES[0].1).unwrap().kernels;
    let mut f = facts_of(&rows[0]);
    f.carveout_bytes = None;
    f.carveout_error = Some("no kernel record".into());
    let v = ncu_values(&f);
    for name in [
        "launch__shared_mem_config_size",
        "launch__occupancy_limit_shared_mem",
        "sm__maximum_warps_per_active_cycle_pct",
        "sm__maximum_warps_avg_per_active_cycle",
        "launch__waves_per_multiprocessor",
    ] {
        assert!(!v.contains_key(name), "{name}");
    }
    assert_eq!(v["launch__occupancy_limit_registers"], 16.0);
    assert_eq!(v["launch__registers_per_thread"], 16.0);
    // No model (a device the rules do not know): only what the attributes say directly.
    f.occupancy.model = None;
    let v = ncu_values(&f);
    assert!(!v.contains_key("launch__occupancy_limit_warps"));
    assert_eq!(v["launch__block_size"], 256.0);
}

#[test]
fn a_cluster_launch_gives_its_size_and_the_drivers_clusters() {
    let rows = parse_ncu_csv(PAGES[0].1).unwrap().kernels;
    let mut f = facts_of(&rows[0]);
    f.occupancy.cluster = Some([2, 1, 1]);
    f.occupancy.active_clusters = Some(66);
    let v = ncu_values(&f);
    assert_eq!(
        (v["launch__cluster_size"], v["launch__cluster_max_active"]),
        (2.0, 66.0)
    );
    // The driver would not say: the figure is missing, the size is not.
    f.occupancy.active_clusters = None;
    let v = ncu_values(&f);
    assert!(!v.contains_key("launch__cluster_max_active"));
    assert_eq!(v["launch__cluster_size"], 2.0);
}

#[test]
fn only_ncus_launch_and_occupancy_names_are_computed() {
    assert!(computed("launch__occupancy_limit_shared_mem"));
    assert!(computed("sm__maximum_warps_per_active_cycle_pct"));
    assert!(!computed("launch__barrier_count"));
    assert!(!computed(
        "sm__warps_active.avg.pct_of_peak_sustained_active"
    ));
}

#[test]
fn the_h200_passes_facts_give_ncus_values_fewer_than_16_registers_included() {
    // `gpu-lab profile --suite intrinsics --shape smallest --counters-only --profiler both` on an
    // H200, 2026-11-26 (docs/evidence/h200-2026-11-26-launch): what the `__cupti` child recorded
    // of each launch, and ncu's page of the same 16 jobs right after. NUM_REGS is 10 to 29 there;
    // ncu reports 16 for the 12 launches under 16.
    let pass: crate::cupti::rows::CuptiPass = serde_json::from_str(include_str!(
        "../../tests/fixtures/cupti/intrinsics-h200.cupti.json"
    ))
    .unwrap();
    let ncu = parse_ncu_csv(include_str!(
        "../../tests/fixtures/cupti/intrinsics-h200.ncu.csv"
    ))
    .unwrap()
    .kernels;
    assert_eq!((pass.jobs.len(), ncu.len()), (16, 16));
    let mut under_16 = 0;
    for (job, row) in pass.jobs.iter().zip(&ncu) {
        let facts = &job.launches[0];
        assert_eq!(facts.occupancy.kernel, row.kernel_name, "{}", job.job_id);
        under_16 += usize::from(facts.occupancy.registers_per_thread < 16);
        let computed = ncu_values(facts);
        assert_eq!(computed.len(), COMPUTED.len(), "{}", job.job_id);
        for (name, value) in &computed {
            let tolerance = if name == "launch__waves_per_multiprocessor" {
                0.005
            } else {
                0.0
            };
            assert!(
                (value - row.values[name]).abs() <= tolerance,
                "{} {name}: computed {value}, ncu {}",
                job.job_id,
                row.values[name]
            );
        }
    }
    assert_eq!(under_16, 12);
}
