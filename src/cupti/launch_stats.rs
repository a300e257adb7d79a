//! ncu's launch statistics and occupancy figures (`launch__*`, `sm__maximum_warps_*`) computed by gpu-lab for the in-process pass (pure): the Profiler Host API has no metric of these names, so the `__cupti` child records each launch's facts (function attributes, launch shape, device limits, the carveout the driver configured) and the rows get ncu's values from them, marked as computed.
//!
//! What each name means is ncu's (Kernel Profiling Guide, "Launch Statistics" and "Occupancy"
//! sections; checked against the committed ncu pages in tests/fixtures, H100 and H200):
//! `launch__occupancy_limit_shared_mem` divides the shared memory the driver configured for the
//! launch (`launch__shared_mem_config_size`, CUPTI's `sharedMemoryExecuted`) by the block's
//! allocation (static + dynamic + the driver's reservation, in 128-byte units), not the SM's whole
//! shared memory as `cuOccupancyMaxActiveBlocksPerMultiprocessor` does; the theoretical occupancy
//! (`sm__maximum_warps_per_active_cycle_pct`) and the waves follow from that limit.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::occupancy::{AllocationRules, SmLimits};
use crate::records::LaunchOccupancy;

/// What the `__cupti` child knows of one launch: the occupancy record the timing child keeps too,
/// the grid, the device, and the shared-memory carveout the driver configured for it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LaunchFacts {
    pub occupancy: LaunchOccupancy,
    pub grid: [u32; 3],
    pub sm: SmLimits,
    /// `CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT`.
    pub sm_count: u32,
    /// `sharedMemoryExecuted` of the launch's CUPTI kernel activity record (bytes), taken in the
    /// job's unprofiled run; None where the record was not had (`carveout_error` says why).
    pub carveout_bytes: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub carveout_error: Option<String>,
}

/// Names gpu-lab computes in place of ncu; the metric files use the first nine (the others are
/// computed with them, for the cross-check and for anyone who adds a metric).
pub const COMPUTED: [&str; 19] = [
    "launch__registers_per_thread",
    "launch__occupancy_limit_registers",
    "launch__occupancy_limit_shared_mem",
    "launch__occupancy_limit_warps",
    "launch__occupancy_limit_blocks",
    "sm__maximum_warps_per_active_cycle_pct",
    "launch__cluster_size",
    "launch__cluster_max_active",
    "launch__waves_per_multiprocessor",
    "sm__maximum_warps_avg_per_active_cycle",
    "launch__block_size",
    "launch__grid_size",
    "launch__thread_count",
    "launch__sm_count",
    "launch__shared_mem_per_block_static",
    "launch__shared_mem_per_block_dynamic",
    "launch__shared_mem_per_block_driver",
    "launch__shared_mem_per_block",
    "launch__shared_mem_config_size",
];

/// What a record's `profiler` says where some of its values were computed, not measured.
pub const COMPUTED_NOTE: &str = "launch statistics and theoretical occupancy (launch__*, sm__maximum_warps_*) computed by gpu-lab from the driver's function and device attributes, the launch's shape and CUPTI's kernel record (carveout), not measured";

/// Whether gpu-lab computes `counter` itself (ncu's launch statistics and occupancy figures).
pub fn computed(counter: &str) -> bool {
    COMPUTED.contains(&counter)
}

/// ncu's values of one launch, by ncu's names. A value that needs what is missing (the carveout,
/// the model's limits) is left out, so a metric of it is missing rather than invented.
pub fn ncu_values(f: &LaunchFacts) -> BTreeMap<String, f64> {
    let o = &f.occupancy;
    let mut v: BTreeMap<String, f64> = BTreeMap::new();
    let mut put = |name: &str, value: f64| {
        v.insert(name.to_string(), value);
    };
    let grid_size: u64 = f.grid.iter().map(|&d| d as u64).product();
    let driver = f.sm.reserved_shared_bytes_per_block;
    put("launch__registers_per_thread", ncu_registers(f) as f64);
    put("launch__block_size", o.threads_per_block as f64);
    put("launch__grid_size", grid_size as f64);
    put(
        "launch__thread_count",
        (grid_size * o.threads_per_block as u64) as f64,
    );
    put("launch__sm_count", f.sm_count as f64);
    put(
        "launch__shared_mem_per_block_static",
        o.static_shared_bytes as f64,
    );
    put(
        "launch__shared_mem_per_block_dynamic",
        o.dynamic_shared_bytes as f64,
    );
    put("launch__shared_mem_per_block_driver", driver as f64);
    put(
        "launch__shared_mem_per_block",
        (o.shared_bytes() + driver as u64) as f64,
    );
    let cluster = o.cluster.map(|c| c.iter().product::<u32>()).unwrap_or(0);
    put("launch__cluster_size", cluster as f64);
    if o.cluster.is_none() {
        put("launch__cluster_max_active", 0.0);
    } else if let Some(n) = o.active_clusters {
        put("launch__cluster_max_active", n as f64);
    }
    let Some(model) = o.model else { return v };
    put("launch__occupancy_limit_warps", model.warps as f64);
    put("launch__occupancy_limit_blocks", model.blocks as f64);
    if let Some(n) = model.registers {
        put("launch__occupancy_limit_registers", n as f64);
    }
    let Some(carveout) = f.carveout_bytes else {
        return v;
    };
    put("launch__shared_mem_config_size", carveout as f64);
    let Some(shared) = shared_limit(f, carveout) else {
        return v;
    };
    put("launch__occupancy_limit_shared_mem", shared as f64);
    let active = [
        Some(model.warps),
        Some(model.blocks),
        model.registers,
        Some(shared),
    ]
    .into_iter()
    .flatten()
    .min()
    .unwrap_or(0);
    let warps = active as u64 * f.sm.warps_per_block(o.threads_per_block) as u64;
    put("sm__maximum_warps_avg_per_active_cycle", warps as f64);
    if let Some(pct) = f.sm.occupancy_pct(active, o.threads_per_block) {
        put("sm__maximum_warps_per_active_cycle_pct", pct);
    }
    if active > 0 && f.sm_count > 0 {
        put(
            "launch__waves_per_multiprocessor",
            grid_size as f64 / (active as f64 * f.sm_count as f64),
        );
    }
    v
}

/// The fewest registers per thread ncu reports on Hopper: an H200 round (2026-11-26,
/// docs/evidence/h200-2026-11-26-launch) gave 16 for each of 12 launches that
/// `CU_FUNC_ATTRIBUTE_NUM_REGS` put at 10 to 15, and NUM_REGS itself for every launch of 16 or more
/// (98). The register limit is the same either way (a warp's registers are allocated in units of
/// 256, 16 × 32 = 512 for both); other architectures were not compared, so keep NUM_REGS there.
pub const NCU_MIN_REGISTERS_HOPPER: u32 = 16;

/// ncu's `launch__registers_per_thread` of a launch (see `NCU_MIN_REGISTERS_HOPPER`).
fn ncu_registers(f: &LaunchFacts) -> u32 {
    let regs = f.occupancy.registers_per_thread;
    if f.sm.compute_capability[0] == 9 {
        regs.max(NCU_MIN_REGISTERS_HOPPER)
    } else {
        regs
    }
}

/// Blocks the configured carveout holds: the block's static + dynamic shared memory and the
/// driver's reservation, rounded up to the architecture's unit (None where the rules are unknown
/// or the block takes none).
fn shared_limit(f: &LaunchFacts, carveout: u32) -> Option<u32> {
    let rules = AllocationRules::of(f.sm.compute_capability).ok()?;
    let per_block = (f.occupancy.shared_bytes() + f.sm.reserved_shared_bytes_per_block as u64)
        .next_multiple_of(rules.shared_unit as u64);
    (per_block > 0).then(|| (carveout as u64 / per_block).min(u32::MAX as u64) as u32)
}

#[cfg(test)]
#[path = "launch_stats_tests.rs"]
pub(crate) mod tests;
