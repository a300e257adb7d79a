//! What a child reports for one job or one copy bound, and the sampling rule it follows (pure data).

use serde::{Deserialize, Serialize};

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
            CacheState::Cold => "L2 cold (flushed before every sample by writing twice the L2 size, outside the timed region; one run a sample)",
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
}

fn one_round() -> u32 {
    1
}

impl Default for TimingConfig {
    fn default() -> Self {
        TimingConfig { min_samples: 10, max_samples: 300, target_rel_ci: 0.005, max_seconds: 1.5, warmup_ms: 25.0, min_sample_ms: 0.5, cache: CacheState::Warm, rounds: 1, verify_every: 0 }
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
    /// Samples left out of `samples_ms`: taken while the GPU throttled or below the clock floor.
    #[serde(default)]
    pub excluded_samples: Vec<ExcludedSample>,
    /// How long the warm-up ran (it goes on until the SM clock is steady), in ms.
    #[serde(default)]
    pub warmup_ms: f64,
    /// The lowest and highest SM clock NVML read after the samples (None without NVML).
    #[serde(default)]
    pub sample_clock_mhz: Option<[u32; 2]>,
}

/// The SM clock and throttling NVML read right after one sample.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq)]
pub struct ClockSample {
    pub sm_mhz: u32,
    /// A clock-lowering reason was active (power, thermal, hardware slowdown; idle does not count).
    pub throttled: bool,
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
pub fn split_by_clock(samples: &[f64], clocks: &[Option<ClockSample>]) -> (Vec<f64>, Vec<ExcludedSample>) {
    let top = clocks.iter().flatten().map(|c| c.sm_mhz).max().unwrap_or(0) as f64;
    let mut kept = Vec::with_capacity(samples.len());
    let mut excluded = Vec::new();
    for (i, &ms) in samples.iter().enumerate() {
        match clocks.get(i).copied().flatten() {
            Some(c) if c.throttled || (c.sm_mhz as f64) < CLOCK_FLOOR * top => excluded.push(ExcludedSample { ms, clock: c }),
            _ => kept.push(ms),
        }
    }
    // A job whose every sample would go is measured as found rather than not at all.
    if kept.is_empty() {
        return (samples.to_vec(), Vec::new());
    }
    (kept, excluded)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn throttled_and_low_clock_samples_are_left_out() {
        let c = |mhz, throttled| Some(ClockSample { sm_mhz: mhz, throttled });
        let (kept, out) = split_by_clock(&[1.0, 2.0, 1.1, 1.05, 0.9], &[c(1980, false), c(1980, true), c(1700, false), c(1900, false), None]);
        assert_eq!(kept, vec![1.0, 1.05, 0.9], "1900 is within 5% of 1980; a sample without a reading stays");
        assert_eq!(out.iter().map(|e| e.ms).collect::<Vec<_>>(), vec![2.0, 1.1]);
        // Every sample throttled: the job is measured as found.
        let (kept, out) = split_by_clock(&[1.0, 2.0], &[c(1500, true), c(1500, true)]);
        assert_eq!((kept.len(), out.len()), (2, 0));
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
}

/// What a child reports for one compute bound: the samples of the vendor routine.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct ComputeOutcome {
    pub samples_ms: Vec<f64>,
    pub math_mode: String,
}

