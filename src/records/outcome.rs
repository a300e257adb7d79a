//! What a child reports for one job or one copy bound, and the sampling rule it follows (pure data).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::clock_events::ClockEvents;

use crate::occupancy::{BlockLimits, Limiter};
use crate::verify::Correctness;

/// The L2 state a kernel is timed in.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq, Default, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum CacheState {
    /// Repeated launches over the same buffers: what fits in L2 is served from it.
    #[default]
    Warm,
    /// L2 flushed before every sample (a write of twice its size, outside the timed region), one run a sample.
    Cold,
}

impl CacheState {
    /// How a report says it (the warm text is what every run before the setting said).
    pub fn describe(self) -> &'static str {
        match self {
            CacheState::Warm => "L2 warm (repeated launches over the same buffers)",
            CacheState::Cold => {
                "L2 cold (before every sample a kernel reads twice the L2 size, leaving it clean, outside the timed region; one run a sample)"
            }
        }
    }

    /// A heading or caption of timed values, marked ` (L2 warm)` in a warm run: a warm time
    /// includes what L2 kept between launches, and a row or chart read on its own must not pass
    /// for cold (the run's header is not always in view).
    pub fn marked(self, heading: &str) -> String {
        match self {
            CacheState::Warm => format!("{heading} (L2 warm)"),
            CacheState::Cold => heading.to_string(),
        }
    }
}

/// When to stop sampling (nvbench's defaults are the model: at least 10 samples, 0.5% noise).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct TimingConfig {
    pub min_samples: usize,
    pub max_samples: usize,
    /// Stop once the median's 95% interval half-width is below this fraction of it.
    pub target_rel_ci: f64,
    /// Stop after this many seconds of sampling even if the target is not met.
    pub max_seconds: f64,
    pub warmup_ms: f64,
    /// Each sample lasts at least this long (short kernels are batched between one pair of events; warm only).
    pub min_sample_ms: f64,
    #[serde(default)]
    pub cache: CacheState,
    /// Rounds the run made (`--rounds`): each job timed once a round, the variants interleaved.
    #[serde(default = "one_round")]
    pub rounds: u32,
    /// `--verify-every K`: verify a launch between every K timed samples (0: only before and after timing).
    #[serde(default)]
    pub verify_every: u32,
    /// `--energy`: after timing, each job runs back to back for at least a second while NVML's
    /// total-energy counter is read (`EnergyRecord`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub energy: bool,
    /// `--no-activity`: no CUPTI kernel records around the samples (events only).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub no_activity: bool,
    /// The kernel records in extra samples after the event samples (the CLI's default; false with
    /// the hidden `--activity-during`): CUPTI's instrumentation slows kernels on Hopper.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub activity_after: bool,
    /// `--activity-dump DIR` (hidden): the timing child writes each job's first raw kernel
    /// records there (test fixtures).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub activity_dump: Option<std::path::PathBuf>,
}

fn one_round() -> u32 {
    1
}

impl Default for TimingConfig {
    fn default() -> Self {
        TimingConfig {
            min_samples: 10,
            max_samples: 300,
            target_rel_ci: 0.005,
            max_seconds: 1.5,
            warmup_ms: 25.0,
            min_sample_ms: 0.5,
            cache: CacheState::Warm,
            rounds: 1,
            verify_every: 0,
            energy: false,
            no_activity: false,
            activity_after: false,
            activity_dump: None,
        }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct CompileInfo {
    pub source: String,
    pub cached: bool,
    pub millis: f64,
    /// The compiler and its version (`nvrtc 13.0`, `nvcc 13.0.88`); empty in runs made before it was recorded.
    #[serde(default)]
    pub compiler: String,
}

/// What the child reports back for one job.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct JobOutcome {
    /// Stored as `check`.
    #[serde(rename = "check")]
    pub correctness: Option<Correctness>,
    /// Milliseconds per run of the variant (all its launches), one per sample.
    pub samples_ms: Vec<f64>,
    pub runs_per_sample: u32,
    pub warmup_runs: u32,
    pub stopped_by: String,
    pub compile: Vec<CompileInfo>,
    pub seed: u64,
    /// The same verification after timing, on fresh inputs of another seed (`seed + 1`).
    #[serde(default)]
    pub correctness_after: Option<Correctness>,
    /// How the samples were taken (events around runs, or CUDA graphs for short cold kernels).
    #[serde(default)]
    pub timing_method: String,
    /// `--verify-every K`: the first wrong verification made between timed samples, else the last.
    #[serde(default)]
    pub correctness_during: Option<Correctness>,
    /// How many verifications were made between timed samples.
    #[serde(default)]
    pub verified_during: u32,
    /// The verified timed runs after the samples (issue 32): each timed as a sample's run is, its
    /// output checked (None: the job has no check, or nothing ran).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timed_checks: Option<super::verified::TimedChecks>,
    /// Samples left out of `samples_ms`: taken while the GPU throttled or below the clock floor.
    #[serde(default)]
    pub excluded_samples: Vec<ExcludedSample>,
    /// How long the warm-up ran (it goes on until the SM clock is steady), in ms.
    #[serde(default)]
    pub warmup_ms: f64,
    /// The lowest and highest SM clock NVML read after the samples (None without NVML).
    #[serde(default)]
    pub sample_clock_mhz: Option<[u32; 2]>,
    /// Each launch's kernel resources and predicted occupancy (empty where nothing was loaded: the mock).
    #[serde(default)]
    pub occupancy: Vec<LaunchOccupancy>,
    /// Why the occupancy could not be read (a device or function attribute the driver refused);
    /// the job runs on without it.
    #[serde(default)]
    pub occupancy_error: Option<String>,
    /// A host program's steps in one sample (the one nearest the median), with each step's median.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeline: Option<super::timeline::Timeline>,
    /// How many samples NVML read each clock-event reason after (kept and left out alike).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub sample_clock_events: BTreeMap<String, u32>,
    /// Samples read under a clock-lowering reason that stayed in the median because every sample was.
    #[serde(default)]
    pub clock_lowered_kept: u32,
    /// `--energy`: the job's energy over repeated runs after timing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub energy: Option<super::energy::EnergyRecord>,
    /// The samples' kernel durations from CUPTI's Activity API (absent with `--no-activity`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub activity: Option<super::activity::ActivityRecord>,
    /// Where the child's time for the job went, phase by phase, in order (absent in runs before
    /// it was recorded).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub phases: Vec<JobPhase>,
}

/// One phase of a job in its timing child (loading, inputs, checks, timing …) and its wall time.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct JobPhase {
    pub phase: String,
    pub seconds: f64,
}

/// One launch of a job as the SM sees it: the kernel's resources (function attributes read by the
/// child after loading it), how many of its blocks the driver says fit on an SM
/// (`cuOccupancyMaxActiveBlocksPerMultiprocessor`), and the occupancy model's blocks under each
/// limit (`crate::occupancy`), whose smallest names the limiter.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct LaunchOccupancy {
    /// The kernel as the manifest names it.
    pub kernel: String,
    pub threads_per_block: u32,
    /// `CU_FUNC_ATTRIBUTE_NUM_REGS`.
    pub registers_per_thread: u32,
    /// `CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES`: `__shared__` arrays.
    pub static_shared_bytes: u32,
    /// The launch's `shared_bytes`.
    pub dynamic_shared_bytes: u32,
    /// `CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES`: local memory per thread (register spills, local arrays).
    pub local_bytes_per_thread: u32,
    /// `CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK`: the kernel's `__launch_bounds__`, else the device's.
    pub max_threads_per_block: u32,
    /// Warp slots of one SM (`CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR` / warp size).
    pub max_warps_per_sm: u32,
    /// Blocks resident on one SM, by the driver (absent where it would not say: `driver_error`).
    pub active_blocks_per_sm: Option<u32>,
    /// The driver's blocks times the block's warps over the SM's warp slots, in %.
    pub predicted_occupancy_pct: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub driver_error: Option<String>,
    /// The model's blocks under each limit (absent where it cannot answer: `model_error`).
    pub model: Option<BlockLimits>,
    /// The limits that allow the fewest blocks in the model, the one reports name first.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub limiters: Vec<Limiter>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model_error: Option<String>,
    /// Blocks per cluster: the launch's `cluster`, or the kernel's compiled `__cluster_dims__`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cluster: Option<[u32; 3]>,
    /// Clusters of that shape resident on the whole GPU at once (`cuOccupancyMaxActiveClusters`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub active_clusters: Option<u32>,
    /// Why the driver gave no cluster occupancy.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cluster_error: Option<String>,
}

impl LaunchOccupancy {
    /// Static and dynamic shared memory of one block (without the driver's reservation).
    pub fn shared_bytes(&self) -> u64 {
        self.static_shared_bytes as u64 + self.dynamic_shared_bytes as u64
    }

    /// The limiter reports name: the model's first smallest limit.
    pub fn limiter(&self) -> Option<Limiter> {
        self.limiters.first().copied()
    }

    /// Where the model and the driver differ on the blocks per SM: the model's count, which the
    /// report puts beside the driver's (the driver's is the one shown; the limiter is then a guess).
    pub fn model_disagrees(&self) -> Option<u32> {
        let model = self.model?.active_blocks();
        (Some(model) != self.active_blocks_per_sm && self.active_blocks_per_sm.is_some())
            .then_some(model)
    }
}

/// The SM clock and throttling NVML read right after one sample.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq)]
pub struct ClockSample {
    pub sm_mhz: u32,
    /// A clock-lowering reason was active (power, thermal, hardware slowdown; idle does not count).
    pub throttled: bool,
    /// NVML's clock-event reasons at the reading (absent in runs made before they were recorded).
    #[serde(default, skip_serializing_if = "ClockEvents::is_empty")]
    pub events: ClockEvents,
}

/// A sample left out of a job's median, with why.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct ExcludedSample {
    pub ms: f64,
    pub clock: ClockSample,
}

/// Samples taken below this fraction of the job's highest SM clock are left out: a clock dip (a
/// boost transition, another process) is not the kernel's speed.
pub const CLOCK_FLOOR: f64 = 0.95;

/// Splits samples into those kept and those taken while throttled or below `CLOCK_FLOOR` of the
/// highest SM clock seen (pure). Samples without a clock reading (no NVML) are all kept.
pub fn split_by_clock(
    samples: &[f64],
    clocks: &[Option<ClockSample>],
) -> (Vec<f64>, Vec<ExcludedSample>) {
    let keep = kept_by_clock(clocks, samples.len());
    let mut kept = Vec::with_capacity(samples.len());
    let mut excluded = Vec::new();
    for (i, &ms) in samples.iter().enumerate() {
        match (keep[i], clocks.get(i).copied().flatten()) {
            (false, Some(clock)) => excluded.push(ExcludedSample { ms, clock }),
            _ => kept.push(ms),
        }
    }
    (kept, excluded)
}

/// Which of `samples` samples the median keeps: each not throttled and within `CLOCK_FLOOR` of the
/// highest clock read (a sample without a reading stays). A job whose every sample would go is
/// measured as found rather than not at all.
pub fn kept_by_clock(clocks: &[Option<ClockSample>], samples: usize) -> Vec<bool> {
    let top = clocks.iter().flatten().map(|c| c.sm_mhz).max().unwrap_or(0) as f64;
    let keep: Vec<bool> = (0..samples).map(|i| !matches!(clocks.get(i).copied().flatten(), Some(c) if c.throttled || (c.sm_mhz as f64) < CLOCK_FLOOR * top)).collect();
    if keep.contains(&true) {
        keep
    } else {
        vec![true; samples]
    }
}

/// How many samples NVML read each clock-event reason after, and how many samples read under a
/// clock-lowering reason the median keeps anyway (every sample was lowered: `kept_by_clock`) —
/// what makes a power-capped job visible in the report (pure).
pub fn sample_clock_events(
    clocks: &[Option<ClockSample>],
    samples: usize,
) -> (BTreeMap<String, u32>, u32) {
    let counts = super::clock_events::count_clock_events(clocks.iter().flatten().map(|c| c.events));
    let keep = kept_by_clock(clocks, samples);
    let lowered_kept = (0..samples)
        .filter(|&i| {
            keep[i]
                && clocks
                    .get(i)
                    .copied()
                    .flatten()
                    .is_some_and(|c| c.throttled)
        })
        .count() as u32;
    (counts, lowered_kept)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_kept_mask_matches_the_split_and_keeps_all_when_none_would_stay() {
        let c = |mhz, throttled| {
            Some(ClockSample {
                sm_mhz: mhz,
                throttled,
                events: ClockEvents::default(),
            })
        };
        assert_eq!(
            kept_by_clock(&[c(1980, false), c(1980, true), c(1700, false), None], 5),
            vec![true, false, false, true, true]
        );
        assert_eq!(
            kept_by_clock(&[c(1980, true), c(1980, true)], 2),
            vec![true, true]
        );
        assert!(kept_by_clock(&[], 0).is_empty());
    }

    #[test]
    fn throttled_and_low_clock_samples_are_left_out() {
        let c = |mhz, throttled| {
            Some(ClockSample {
                sm_mhz: mhz,
                throttled,
                events: ClockEvents::default(),
            })
        };
        let (kept, out) = split_by_clock(
            &[1.0, 2.0, 1.1, 1.05, 0.9],
            &[
                c(1980, false),
                c(1980, true),
                c(1700, false),
                c(1900, false),
                None,
            ],
        );
        assert_eq!(
            kept,
            vec![1.0, 1.05, 0.9],
            "1900 is within 5% of 1980; a sample without a reading stays"
        );
        assert_eq!(out.iter().map(|e| e.ms).collect::<Vec<_>>(), vec![2.0, 1.1]);
        // Every sample throttled: the job is measured as found.
        let (kept, out) = split_by_clock(&[1.0, 2.0], &[c(1500, true), c(1500, true)]);
        assert_eq!((kept.len(), out.len()), (2, 0));
    }

    #[test]
    fn power_capped_samples_are_counted_and_those_kept_anyway_too() {
        let capped = |mhz| {
            Some(ClockSample {
                sm_mhz: mhz,
                throttled: true,
                events: ClockEvents::from_names(&["SW_POWER_CAP"]).unwrap(),
            })
        };
        let free = Some(ClockSample {
            sm_mhz: 1980,
            throttled: false,
            events: ClockEvents::default(),
        });
        // Some samples free: the capped ones leave the median, none is kept capped.
        let (counts, kept) = sample_clock_events(&[capped(1410), free, capped(1500)], 3);
        assert_eq!((counts.get("SW_POWER_CAP"), kept), (Some(&2), 0));
        // Every sample capped (a sustained tensor-core GEMM): all kept, all counted as kept capped.
        let (counts, kept) = sample_clock_events(&[capped(1410), capped(1410)], 2);
        assert_eq!((counts.get("SW_POWER_CAP"), kept), (Some(&2), 2));
        let (counts, kept) = sample_clock_events(&[None, free], 2);
        assert!(counts.is_empty() && kept == 0);
    }

    fn launch(driver_blocks: Option<u32>, model: Option<BlockLimits>) -> LaunchOccupancy {
        LaunchOccupancy {
            kernel: "occ::chase_free".into(),
            threads_per_block: 256,
            registers_per_thread: 32,
            static_shared_bytes: 16,
            dynamic_shared_bytes: 4096,
            local_bytes_per_thread: 0,
            max_threads_per_block: 1024,
            max_warps_per_sm: 64,
            active_blocks_per_sm: driver_blocks,
            predicted_occupancy_pct: driver_blocks.map(|b| b as f64 * 8.0 / 64.0 * 100.0),
            driver_error: None,
            limiters: model.map(|m| m.limiters()).unwrap_or_default(),
            model,
            model_error: None,
            cluster: None,
            active_clusters: None,
            cluster_error: None,
        }
    }

    #[test]
    fn a_launch_names_its_limiter_and_where_the_model_and_the_driver_disagree() {
        let model = BlockLimits {
            warps: 8,
            blocks: 32,
            registers: Some(8),
            shared_memory: Some(45),
        };
        let agreed = launch(Some(8), Some(model));
        assert_eq!(
            (
                agreed.limiter(),
                agreed.model_disagrees(),
                agreed.shared_bytes()
            ),
            (Some(Limiter::Warps), None, 4112)
        );
        assert_eq!(launch(Some(7), Some(model)).model_disagrees(), Some(8));
        // Nothing to compare without both answers.
        assert_eq!(
            (
                launch(None, Some(model)).model_disagrees(),
                launch(Some(8), None).model_disagrees(),
                launch(Some(8), None).limiter()
            ),
            (None, None, None)
        );
    }

    #[test]
    fn outcomes_without_occupancy_still_load_and_the_field_round_trips() {
        // A child of an older gpu-lab wrote no `occupancy`.
        let old = serde_json::json!({"check": null, "samples_ms": [1.0], "runs_per_sample": 1, "warmup_runs": 0, "stopped_by": "x", "compile": [], "seed": 1});
        let o: JobOutcome = serde_json::from_value(old).unwrap();
        assert!(o.occupancy.is_empty());
        let l = launch(
            Some(8),
            Some(BlockLimits {
                warps: 8,
                blocks: 32,
                registers: None,
                shared_memory: Some(45),
            }),
        );
        let back: LaunchOccupancy =
            serde_json::from_str(&serde_json::to_string(&l).unwrap()).unwrap();
        assert_eq!(back, l);
        assert!(
            !serde_json::to_string(&l).unwrap().contains("model_error"),
            "absent errors are left out"
        );
    }
}

/// The memory bounds of one size: a device-to-device copy and a plain copy kernel over `bytes` bytes.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct BoundsOutcome {
    pub bytes: u64,
    pub memcpy_samples_ms: Vec<f64>,
    pub kernel_samples_ms: Vec<f64>,
    /// Asked for suites with flops: the FMA kernel's samples, its flops per launch and the SM count.
    #[serde(default)]
    pub fma: Option<(Vec<f64>, f64, u32)>,
    /// Asked for suites whose variants copy between host and device: the host link's copies of `bytes`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host: Option<HostLinkSamples>,
}

/// The host link's copies of one size, each way: what the child measures (`HostLinkSamples`) and
/// what a run keeps of it (`HostLinkBounds`, in `bounds.rs`).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
pub struct HostLink<T> {
    /// Pinned host to device.
    pub h2d_pinned: T,
    /// Device to pinned host.
    pub d2h_pinned: T,
    /// Both at once on two streams, the size each way: the time until both are done.
    pub bidirectional_pinned: T,
    /// Pageable (malloc'd) host to device.
    pub h2d_pageable: T,
    /// Device to pageable host.
    pub d2h_pageable: T,
}

impl<T> HostLink<T> {
    pub fn map<U>(&self, f: impl Fn(&T) -> U) -> HostLink<U> {
        HostLink {
            h2d_pinned: f(&self.h2d_pinned),
            d2h_pinned: f(&self.d2h_pinned),
            bidirectional_pinned: f(&self.bidirectional_pinned),
            h2d_pageable: f(&self.h2d_pageable),
            d2h_pageable: f(&self.d2h_pageable),
        }
    }
}

/// Samples (ms) of the host link's copies.
pub type HostLinkSamples = HostLink<Vec<f64>>;

/// What a child reports for one compute bound: the samples of the vendor routine.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct ComputeOutcome {
    pub samples_ms: Vec<f64>,
    pub math_mode: String,
}
