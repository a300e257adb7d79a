//! What a run records: its environment, one record per job, bounds and profiles, and the derived figures reports show (pure data).
//!
//! These types are the files of a run directory (`run.json`, `results.jsonl`) and of a baseline;
//! their serialised field names are a stored format and do not change with Rust names.

use std::collections::{BTreeMap, HashMap};

use serde::{Deserialize, Serialize};

use crate::metrics::MetricDef;
use crate::stats::Summary;
use crate::verify::{Correctness, ElemType, MatmulShape};

mod environment;
mod outcome;
mod timeline;

pub use environment::{DeviceInfo, Fingerprint, Snapshot, peak_bandwidth_gbs};
pub use outcome::{
    BoundsOutcome, CLOCK_FLOOR, CacheState, ClockSample, CompileInfo, ComputeOutcome,
    ExcludedSample, HostLink, HostLinkSamples, JobOutcome, LaunchOccupancy, TimingConfig,
    kept_by_clock, split_by_clock,
};
pub use timeline::{Overlap, StepInfo, StepKind, StepTime, Timeline, busy_ms, without_chunk};

/// The run's environment fingerprint and configuration (`run.json`).
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct RunInfo {
    pub gpu_lab_version: String,
    pub command: String,
    pub started: String,
    pub finished: Option<String>,
    pub suite: String,
    pub suite_description: String,
    pub suite_source_hash: String,
    pub device: Option<DeviceInfo>,
    /// Why there is no device information, when there is none.
    pub nvml_error: Option<String>,
    pub ncu_version: Option<String>,
    /// `none` (clocks as found) unless the owner asked otherwise.
    pub clock_policy: String,
    pub timing: TimingConfig,
    /// L2 state during timing: repeated launches over the same buffers keep them warm.
    pub cache_state: String,
    pub seed: u64,
    pub metrics: Vec<MetricDef>,
    /// Metrics asked for that this GPU cannot collect, with why (checked against `ncu --query-metrics`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unavailable_metrics: Vec<String>,
    pub wall_seconds: Option<f64>,
    /// Made by the mock executor (`--mock-gpu`): no GPU ran, every number is a stand-in.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub mock: bool,
    /// The shard of a plan this run holds (`--shard I/N`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shard: Option<ShardInfo>,
    /// For a run made by `gpu-lab merge`: the shard runs it joins (directory names).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub merged_from: Vec<String>,
    /// For a run over several GPUs of one host (`--gpus`): each of them; `device` is the first.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub gpus: Vec<DeviceInfo>,
}

/// Which shard of which plan a run is.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct ShardInfo {
    pub index: usize,
    pub count: usize,
    /// sha256 over every job of the plan before it was split: shards of one plan share it.
    pub plan: String,
}

/// Why shard runs cannot be merged into one run, if they cannot (pure): they must be shards of
/// one plan, each once, all of them, of one suite source and cache state, all mock or none.
pub fn merge_refusal(runs: &[(String, RunInfo)]) -> Option<String> {
    let (first_name, first) = runs.first()?;
    let Some(shard) = &first.shard else {
        return Some(format!(
            "{first_name} is not a shard (it was not run with --shard I/N)"
        ));
    };
    let mut seen = vec![false; shard.count];
    for (name, info) in runs {
        let Some(s) = &info.shard else {
            return Some(format!(
                "{name} is not a shard (it was not run with --shard I/N)"
            ));
        };
        if s.plan != shard.plan || s.count != shard.count {
            return Some(format!(
                "{name} is shard {}/{} of another plan than {first_name} ({}/{}): the suites, variants or suite sources differ",
                s.index, s.count, shard.index, shard.count
            ));
        }
        if info.suite != first.suite {
            return Some(format!(
                "{name} holds suite `{}`, {first_name} suite `{}`: merge the shards of one suite at a time",
                info.suite, first.suite
            ));
        }
        if info.suite_source_hash != first.suite_source_hash {
            return Some(format!(
                "{name} measured another version of suite `{}` than {first_name} (suite source hash differs)",
                info.suite
            ));
        }
        if info.timing.cache != first.timing.cache {
            return Some(format!(
                "{name} was timed with the L2 {:?} and {first_name} with it {:?}: their times do not belong in one report",
                info.timing.cache, first.timing.cache
            ));
        }
        if info.mock != first.mock {
            return Some(format!(
                "{name} and {first_name}: one is a MOCK run and the other measured"
            ));
        }
        if std::mem::replace(&mut seen[s.index.min(shard.count - 1)], true) {
            return Some(format!(
                "shard {}/{} is given twice ({name})",
                s.index, s.count
            ));
        }
    }
    let missing: Vec<String> = seen
        .iter()
        .enumerate()
        .filter(|(_, s)| !**s)
        .map(|(i, _)| format!("{i}/{}", shard.count))
        .collect();
    (!missing.is_empty()).then(|| {
        format!(
            "shard(s) {} of the plan are missing: a merged run would silently lack their jobs",
            missing.join(", ")
        )
    })
}

#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq, Default)]
#[serde(rename_all = "snake_case")]
pub enum JobStatus {
    Ok,
    /// Ran, but its output is wrong: shown, never ranked or baselined.
    Wrong,
    /// Also a record's state until an outcome says otherwise.
    #[default]
    Failed,
    TimedOut,
}

/// Which job: one variant at one point of the sweep. A job spec and its record share it.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq, Default)]
pub struct JobKey {
    /// Unique within a run: `variant[params] @ group`.
    pub id: String,
    pub variant: String,
    /// The variant's own parameters (fixed and swept), shown beside its name.
    pub variant_params: BTreeMap<String, i64>,
    /// The suite-wide sweep point (for example the matrix shape); report tables are per group.
    pub group: String,
    pub group_params: BTreeMap<String, i64>,
}

impl JobKey {
    /// `name[K=V,…]`: the variant with its own parameters, as reports show it.
    pub fn label(&self) -> String {
        if self.variant_params.is_empty() {
            self.variant.clone()
        } else {
            format!("{}[{}]", self.variant, format_params(&self.variant_params))
        }
    }
}

/// `K=V,K=V`, in key order.
pub fn format_params(params: &BTreeMap<String, i64>) -> String {
    params
        .iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join(",")
}

/// What a job's throughput is compared with: the suite's `bound`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum BoundSpec {
    /// The device-to-device copy of the group's bytes (data movement).
    #[default]
    Copy,
    /// cuBLAS GEMM (GEMV where n = 1) at the job's matmul shape, measured in the same run.
    Cublas { shape: MatmulShape, elem: ElemType },
    /// Another variant of the suite in the same group (a user's own reference).
    Variant { name: String },
}

impl BoundSpec {
    pub fn is_copy(&self) -> bool {
        *self == BoundSpec::Copy
    }

    /// What the bound is called in reports: `cuBLAS SGEMM`, `variant naive`, `copy`.
    pub fn name(&self) -> String {
        match self {
            BoundSpec::Copy => "copy".into(),
            BoundSpec::Cublas { shape, elem } => format!(
                "cuBLAS {}{}",
                if *elem == ElemType::F64 { "D" } else { "S" },
                if shape.n == 1 && !shape.trans_b {
                    "GEMV"
                } else {
                    "GEMM"
                }
            ),
            BoundSpec::Variant { name } => format!("`{name}`"),
        }
    }

    /// The key that joins a job to the compute bound measured for it in its group.
    pub fn key(&self) -> Option<String> {
        match self {
            BoundSpec::Cublas { shape, elem } => Some(
                format!(
                    "{} {} alpha {} beta {}",
                    self.name(),
                    shape.label(),
                    shape.alpha,
                    shape.beta
                )
                .replace("  ", " ")
                    + if *elem == ElemType::F64 { " f64" } else { "" },
            ),
            _ => None,
        }
    }
}

/// The work a job declares, for throughput: bytes it must move and operations it performs.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Default)]
pub struct Work {
    pub bytes: Option<f64>,
    pub flops: Option<f64>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
pub struct JobRecord {
    #[serde(flatten)]
    pub key: JobKey,
    pub label: String,
    pub description: String,
    pub status: JobStatus,
    pub error: Option<String>,
    /// What the correctness verification found (stored as `check`).
    #[serde(rename = "check")]
    pub correctness: Option<Correctness>,
    /// The verification after timing, on fresh inputs of another seed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub correctness_after: Option<Correctness>,
    pub samples_ms: Vec<f64>,
    pub runs_per_sample: u32,
    pub stopped_by: String,
    pub summary: Option<Summary>,
    #[serde(flatten)]
    pub work: Work,
    /// What its throughput is compared with (absent: the copy bound).
    #[serde(default, skip_serializing_if = "BoundSpec::is_copy")]
    pub bound: BoundSpec,
    pub launches: usize,
    pub nvml_before: Option<Snapshot>,
    pub nvml_after: Option<Snapshot>,
    pub wall_seconds: f64,
    /// The compilers that built its program (and its `same_as` reference), with versions.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub compilers: Vec<String>,
    /// How its samples were taken (empty in runs made before it was recorded).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub timing_method: String,
    /// `--verify-every K`: the first wrong verification between timed samples, else the last; and how many were made.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub correctness_during: Option<Correctness>,
    #[serde(default, skip_serializing_if = "is_zero")]
    pub verified_during: u32,
    /// Samples left out of the median (throttled, or below the clock floor), with their clocks.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub excluded_samples: Vec<ExcludedSample>,
    /// How long the warm-up ran until the SM clock was steady, in ms (0 in runs before it was recorded).
    #[serde(default, skip_serializing_if = "is_zero_f64")]
    pub warmup_ms: f64,
    /// The lowest and highest SM clock NVML read after the job's samples.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sample_clock_mhz: Option<[u32; 2]>,
    /// For a run of several rounds (`--rounds`): each round's own samples. `samples_ms` then holds
    /// one median per timed round, so the summary's interval is across rounds (run-to-run drift
    /// included), not within one.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub rounds: Vec<RoundRecord>,
    /// The UUID of the GPU that timed it (absent in runs made before it was recorded).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gpu: Option<String>,
    /// Each launch's registers, shared memory, blocks per SM and predicted occupancy, as the child
    /// read them (absent in runs made before they were recorded, and in mock runs).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub occupancy: Vec<LaunchOccupancy>,
    /// Why the child could not read the occupancy, where it could not.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub occupancy_error: Option<String>,
    /// A host program with host or managed buffers: its data crosses the host link.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub host_link: bool,
    /// Its suite's or variant's own noise threshold for `check`, percent (`noise_threshold`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub noise_threshold_pct: Option<f64>,
    /// A host program's steps in its median sample (`crate::records::Timeline`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeline: Option<Timeline>,
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

fn is_zero_f64(x: &f64) -> bool {
    *x == 0.0
}

/// One round of a job in a multi-round run.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct RoundRecord {
    pub status: JobStatus,
    pub samples_ms: Vec<f64>,
    pub runs_per_sample: u32,
    pub stopped_by: String,
    /// The UUID of the GPU that timed this round (rounds of a `--gpus` run may differ).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gpu: Option<String>,
}

impl JobStatus {
    /// Which of two outcomes of one job counts: a failure over a wrong output over success.
    fn severity(self) -> u8 {
        match self {
            JobStatus::Ok => 0,
            JobStatus::Wrong => 1,
            JobStatus::TimedOut => 2,
            JobStatus::Failed => 3,
        }
    }
}

/// A noise threshold in percent that a suite may declare: above 0 and below 100.
pub fn usable_noise_threshold_pct(pct: f64) -> bool {
    pct.is_finite() && pct > 0.0 && pct < 100.0
}

impl JobRecord {
    /// Its suite's own noise threshold as a fraction, where the record holds a usable one (a
    /// percentage above 0 and below 100, as the manifest requires; anything else in a stored
    /// record is ignored rather than let it widen or narrow a check).
    pub fn own_noise_threshold(&self) -> Option<f64> {
        self.noise_threshold_pct
            .filter(|&p| usable_noise_threshold_pct(p))
            .map(|p| p / 100.0)
    }

    /// Adds one more round's record of the same job to the rounds so far (`None` before the
    /// first). The combined record's samples are the round medians, its status the worst round's.
    pub fn with_round(so_far: Option<JobRecord>, round: JobRecord) -> JobRecord {
        let this = RoundRecord {
            status: round.status,
            samples_ms: round.samples_ms.clone(),
            runs_per_sample: round.runs_per_sample,
            stopped_by: round.stopped_by.clone(),
            gpu: round.gpu.clone(),
        };
        let mut merged = match so_far {
            None => JobRecord {
                rounds: Vec::new(),
                ..round.clone()
            },
            Some(mut m) => {
                if round.status.severity() > m.status.severity() {
                    m.status = round.status;
                    m.error = round
                        .error
                        .clone()
                        .map(|e| format!("round {}: {e}", m.rounds.len() + 1));
                }
                // A check that failed in any round is the one to show.
                if round.correctness.as_ref().is_some_and(|c| !c.passed) || m.correctness.is_none()
                {
                    m.correctness = round.correctness.clone();
                }
                if round.correctness_after.as_ref().is_some_and(|c| !c.passed)
                    || m.correctness_after.is_none()
                {
                    m.correctness_after = round.correctness_after.clone();
                }
                if round.correctness_during.as_ref().is_some_and(|c| !c.passed)
                    || m.correctness_during.is_none()
                {
                    m.correctness_during = round.correctness_during.clone();
                }
                m.verified_during += round.verified_during;
                m.excluded_samples
                    .extend(round.excluded_samples.iter().cloned());
                m.nvml_after = round.nvml_after.clone();
                m.wall_seconds += round.wall_seconds;
                m
            }
        };
        merged.rounds.push(this);
        let medians: Vec<f64> = merged
            .rounds
            .iter()
            .filter_map(|r| crate::stats::summarize(&r.samples_ms).map(|s| s.median))
            .collect();
        merged.summary = crate::stats::summarize(&medians);
        merged.samples_ms = medians;
        merged.stopped_by = format!("{} rounds (interval across rounds)", merged.rounds.len());
        merged
    }
}

/// Giga-units per second of `amount` done in `ms` milliseconds (bytes -> GB/s, flops -> GFLOP/s).
pub fn per_second_g(amount: f64, ms: f64) -> f64 {
    amount / (ms * 1e-3) / 1e9
}

/// `per_second_g` where it means something: a positive amount over a positive time.
fn rate(amount: f64, ms: f64) -> Option<f64> {
    (amount > 0.0 && ms > 0.0 && amount.is_finite() && ms.is_finite())
        .then(|| per_second_g(amount, ms))
}

impl JobRecord {
    pub fn id(&self) -> &str {
        &self.key.id
    }
    pub fn group(&self) -> &str {
        &self.key.group
    }
    pub fn gbs(&self) -> Option<f64> {
        rate(self.work.bytes?, self.summary?.median)
    }
    pub fn gflops(&self) -> Option<f64> {
        rate(self.work.flops?, self.summary?.median)
    }
}

/// The bandwidth bounds measured for one group, in the same run.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct BoundsRecord {
    pub group: String,
    /// Bytes copied (each is read once and written once).
    pub bytes: u64,
    pub memcpy: Option<Summary>,
    pub copy_kernel: Option<Summary>,
    pub error: Option<String>,
    /// The FP32 multiply-add rate, for suites that declare flops: a kernel of independent FMA
    /// chains over every SM, `fma_flops` per launch (absent for data-movement suites).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fma: Option<FmaRate>,
    /// The UUID of the GPU it was measured on: each GPU of a `--gpus` run has its own bounds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gpu: Option<String>,
    /// The host link's copies of `bytes`, for suites whose variants copy between host and device.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host: Option<HostLinkBounds>,
}

/// The host link measured in the same run: copies of `BoundsRecord::bytes` each way.
pub type HostLinkBounds = HostLink<Option<Summary>>;

impl HostLinkBounds {
    pub fn from_samples(s: &HostLinkSamples) -> Self {
        s.map(|samples| crate::stats::summarize(samples))
    }

    /// GB/s of a copy of `bytes` timed as `s` (a bidirectional copy moves `bytes` each way).
    pub fn gbs(bytes: u64, s: &Option<Summary>, ways: f64) -> Option<f64> {
        s.as_ref()
            .filter(|s| s.median > 0.0)
            .map(|s| per_second_g(ways * bytes as f64, s.median))
    }

    /// The pinned bandwidth a copy of this kind is compared with.
    pub fn pinned_gbs(&self, bytes: u64, kind: StepKind) -> Option<f64> {
        match kind {
            StepKind::H2d => Self::gbs(bytes, &self.h2d_pinned, 1.0),
            StepKind::D2h => Self::gbs(bytes, &self.d2h_pinned, 1.0),
            _ => None,
        }
    }
}

/// The measured FP32 FMA rate of the card and what it says about its peak.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct FmaRate {
    pub flops: f64,
    pub summary: Summary,
    pub sm_count: u32,
}

impl FmaRate {
    pub fn gflops(&self) -> f64 {
        per_second_g(self.flops, self.summary.median)
    }

    /// FP32 lanes per SM: the measured rate over 2 flops per lane per cycle at `sm_mhz`, rounded
    /// to the power of two it must be (a rate a little under the peak still names the lanes).
    pub fn lanes_per_sm(&self, sm_mhz: u32) -> Option<u32> {
        let per_cycle = self.gflops() * 1e3 / (2.0 * self.sm_count as f64 * sm_mhz as f64);
        (per_cycle.is_finite() && per_cycle >= 1.0).then(|| 1u32 << per_cycle.log2().round() as u32)
    }

    /// The FP32 peak: SMs x lanes per SM x 2 x the SM clock, GFLOP/s.
    pub fn peak_gflops(&self, sm_mhz: u32) -> Option<f64> {
        Some(self.sm_count as f64 * self.lanes_per_sm(sm_mhz)? as f64 * 2.0 * sm_mhz as f64 / 1e3)
    }
}

/// A job above this multiple of the copy bound measured in its run is impossible. Read-only kernels
/// legitimately pass the copy bound a little (a read alone is faster than a copy): up to 107% in the
/// committed runs (global-memory `soa_sum_x`, reduction 102.6%); a wrong `bytes` expression is off
/// by whole factors.
pub const IMPOSSIBLE_COPY: f64 = 1.25;
/// A job above this multiple of the FP32 peak is impossible (the peak's clock is NVML's reading).
pub const IMPOSSIBLE_PEAK: f64 = 1.05;

/// A job's place on its group's roofline.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Roofline {
    pub intensity: f64,
    pub attainable_gflops: f64,
    /// The compute roof (FP32 peak) is the lower one at this intensity.
    pub compute_bound: bool,
}

/// A compute bound measured for one group and one shape (cuBLAS at a job's matmul shape).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct ComputeBoundRecord {
    pub group: String,
    /// `BoundSpec::key` of the jobs it bounds.
    pub key: String,
    /// How cuBLAS was asked to compute (`CUBLAS_DEFAULT_MATH`: FP32 without TF32 tensor cores).
    pub math_mode: String,
    pub flops: f64,
    pub summary: Option<Summary>,
    pub samples_ms: Vec<f64>,
    pub error: Option<String>,
    /// The UUID of the GPU it was measured on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gpu: Option<String>,
}

impl ComputeBoundRecord {
    pub fn gflops(&self) -> Option<f64> {
        Some(per_second_g(self.flops, self.summary?.median))
    }
}

impl BoundsRecord {
    /// The faster of the two copies (a timing with a positive median).
    pub fn best_copy(&self) -> Option<&Summary> {
        [&self.memcpy, &self.copy_kernel]
            .into_iter()
            .flatten()
            .filter(|s| s.median > 0.0)
            .min_by(|a, b| a.median.total_cmp(&b.median))
    }
    /// GB/s of a copy of `bytes` timed as `s`: every byte is read once and written once.
    fn gbs_of(&self, s: &Summary) -> f64 {
        per_second_g(2.0 * self.bytes as f64, s.median)
    }
    /// The better of the two copies, in GB/s of bytes read plus written.
    pub fn copy_gbs(&self) -> Option<f64> {
        self.best_copy().map(|s| self.gbs_of(s))
    }
    pub fn memcpy_gbs(&self) -> Option<f64> {
        self.memcpy.as_ref().map(|s| self.gbs_of(s))
    }
    pub fn kernel_gbs(&self) -> Option<f64> {
        self.copy_kernel.as_ref().map(|s| self.gbs_of(s))
    }
}

/// ncu's view of one job.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct ProfileRecord {
    pub job_id: String,
    /// Metric name -> value; `None` where the ratio is undefined (e.g. no shared loads at all).
    pub metrics: BTreeMap<String, Option<f64>>,
    /// Metrics whose counters ncu did not report.
    pub missing: Vec<String>,
    pub kernels: Vec<String>,
    /// Replay passes ncu needed (profiler__replayer_passes), when it says.
    pub passes: Option<f64>,
    pub report_file: Option<String>,
    pub error: Option<String>,
    /// Metric name -> why it is n/a, where its definition says (`loads via cp.async/TMA`).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub not_applicable: BTreeMap<String, String>,
    /// The UUID of the GPU ncu profiled it on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gpu: Option<String>,
    /// Which ncu session the `duration` metric comes from (`profiler::pass::take_durations`,
    /// `keep_metric_set_durations`); absent in runs made before the duration had a session.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duration_from: Option<String>,
}

/// How many runs of a job the duration's own session profiles unless told otherwise; its duration
/// is their median, since one profiled launch of a 20 µs kernel varies by a few percent from run
/// to run.
pub const DURATION_RUNS: u32 = 5;

/// How a profile record's `duration_from` begins when its duration came from the session of its own.
pub const DURATION_OWN_SESSION: &str = "own session";

impl ProfileRecord {
    /// What `duration_from` says of a duration from the session of its own, over `runs` runs.
    pub fn own_session_duration(runs: usize) -> String {
        format!(
            "{DURATION_OWN_SESSION}: gpu__time_duration alone, the median of {runs} profiled runs after one unprofiled run of the job"
        )
    }

    /// What `duration_from` says where no session of its own was asked for.
    pub const METRIC_SET_DURATION_ASKED: &str = "the metric set's session, as asked (--duration-runs 0): read under its replay, up to 6% longer than alone";

    /// Whether the record's `duration` is the metric set's reading because the run asked for no
    /// session of its own (as against one that failed).
    pub fn duration_from_metric_set_as_asked(&self) -> bool {
        self.duration_from.as_deref() == Some(Self::METRIC_SET_DURATION_ASKED)
    }

    /// Whether the record's `duration` came from the session of its own.
    pub fn duration_from_own_session(&self) -> bool {
        self.duration_from
            .as_deref()
            .is_some_and(|f| f.starts_with(DURATION_OWN_SESSION))
    }

    /// A job ncu could not give numbers for, and why.
    pub fn failed(job_id: &str, error: String, report_file: Option<String>) -> Self {
        ProfileRecord {
            job_id: job_id.to_string(),
            metrics: Default::default(),
            missing: Vec::new(),
            kernels: Vec::new(),
            passes: None,
            report_file,
            error: Some(error),
            not_applicable: BTreeMap::new(),
            gpu: None,
            duration_from: None,
        }
    }
}

/// One line of `results.jsonl`. Lines are read and written one at a time, so the size of the
/// largest variant costs nothing worth a box.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Record {
    Job(JobRecord),
    Bounds(BoundsRecord),
    Profile(ProfileRecord),
    Compute(ComputeBoundRecord),
}

/// Why each impossible job of a run is impossible, by job id (`RunData::impossible_jobs`).
pub type Impossible = HashMap<String, String>;

/// A run as read back: the latest record of each kind per job or group wins.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RunData {
    pub info: RunInfo,
    pub jobs: Vec<JobRecord>,
    /// Each group's copy bound (in a run over several GPUs, the one recorded last).
    pub bounds: BTreeMap<String, BoundsRecord>,
    /// Each group's copy bound on each GPU, by (group, GPU UUID): a job is compared with its own GPU's.
    pub gpu_bounds: BTreeMap<(String, String), BoundsRecord>,
    pub profiles: BTreeMap<String, ProfileRecord>,
    /// Compute bounds by (group, bound key).
    pub compute_bounds: BTreeMap<(String, String), ComputeBoundRecord>,
    /// Compute bounds by (group, bound key, GPU UUID).
    pub gpu_compute_bounds: BTreeMap<(String, String, String), ComputeBoundRecord>,
}

impl RunData {
    pub fn from_records(info: RunInfo, records: Vec<Record>) -> Self {
        let mut run = RunData {
            info,
            ..Default::default()
        };
        // A job recorded again (a re-run) replaces the earlier record and takes its place at the
        // end; an index keeps this linear in the number of records.
        let mut jobs: Vec<Option<JobRecord>> = Vec::new();
        let mut at: std::collections::HashMap<String, usize> = std::collections::HashMap::new();
        for r in records {
            match r {
                Record::Job(j) => {
                    if let Some(i) = at.insert(j.key.id.clone(), jobs.len()) {
                        jobs[i] = None;
                    }
                    jobs.push(Some(j));
                }
                Record::Bounds(b) => {
                    if let Some(gpu) = &b.gpu {
                        run.gpu_bounds
                            .insert((b.group.clone(), gpu.clone()), b.clone());
                    }
                    run.bounds.insert(b.group.clone(), b);
                }
                Record::Profile(p) => {
                    run.profiles.insert(p.job_id.clone(), p);
                }
                Record::Compute(c) => {
                    if let Some(gpu) = &c.gpu {
                        run.gpu_compute_bounds
                            .insert((c.group.clone(), c.key.clone(), gpu.clone()), c.clone());
                    }
                    run.compute_bounds
                        .insert((c.group.clone(), c.key.clone()), c);
                }
            }
        }
        run.jobs = jobs.into_iter().flatten().collect();
        run
    }

    /// The compute bound of a job, as measured in this run, with its name: cuBLAS at its shape, or
    /// the named variant in its group (its median and the job's own flops). `None` for the copy bound.
    pub fn compute_bound_gflops(&self, job: &JobRecord) -> Option<(String, Option<f64>)> {
        match &job.bound {
            BoundSpec::Copy => None,
            b @ BoundSpec::Cublas { .. } => {
                let key = (job.key.group.clone(), b.key()?);
                let own_gpu = job.gpu.as_ref().and_then(|g| {
                    self.gpu_compute_bounds
                        .get(&(key.0.clone(), key.1.clone(), g.clone()))
                });
                Some((
                    b.name(),
                    own_gpu.or_else(|| self.compute_bounds.get(&key))?.gflops(),
                ))
            }
            b @ BoundSpec::Variant { name } => {
                let other = self.jobs.iter().find(|o| {
                    o.key.variant == *name
                        && o.key.group == job.key.group
                        && o.status == JobStatus::Ok
                });
                Some((b.name(), other.and_then(|o| o.gflops())))
            }
        }
    }

    /// The copy bound a job is compared with: its own GPU's, measured in the same run, else its group's.
    pub fn bound_of(&self, job: &JobRecord) -> Option<&BoundsRecord> {
        job.gpu
            .as_ref()
            .and_then(|g| self.gpu_bounds.get(&(job.key.group.clone(), g.clone())))
            .or_else(|| self.bounds.get(&job.key.group))
    }

    /// The SM clock a group's jobs ran at: the median of NVML's readings after them, else the card's maximum.
    pub fn sm_clock_mhz(&self, group: &str) -> Option<u32> {
        let seen: Vec<u32> = self
            .jobs
            .iter()
            .filter(|j| j.key.group == group)
            .filter_map(|j| j.nvml_after.as_ref()?.sm_clock_mhz)
            .filter(|&c| c > 0)
            .collect();
        self.median_clock(seen)
    }

    /// The median of the clocks seen, else the device's maximum SM clock.
    fn median_clock(&self, mut seen: Vec<u32>) -> Option<u32> {
        seen.sort_unstable();
        seen.get(seen.len() / 2).copied().or_else(|| {
            self.info
                .device
                .as_ref()
                .map(|d| d.max_sm_clock_mhz)
                .filter(|&c| c > 0)
        })
    }

    /// The FP32 peak of a group, GFLOP/s: SMs x lanes per SM (from the measured FMA rate) x 2 x
    /// the SM clock the jobs ran at; with the lanes and the clock.
    pub fn fp32_peak(&self, group: &str) -> Option<(f64, u32, u32)> {
        let fma = self.bounds.get(group)?.fma.as_ref()?;
        let mhz = self.sm_clock_mhz(group)?;
        Some((fma.peak_gflops(mhz)?, fma.lanes_per_sm(mhz)?, mhz))
    }

    /// Where a job sits on the roofline of its group: its intensity (flops per byte), the
    /// attainable rate min(FP32 peak, intensity x copy bound), and whether the roof there is compute.
    pub fn roofline(&self, job: &JobRecord) -> Option<Roofline> {
        self.roofline_under(job, self.fp32_peak(&job.key.group).map(|p| p.0))
    }

    /// `roofline` under the group's FP32 peak already computed (`fp32_peak` scans every job of the run).
    pub fn roofline_under(&self, job: &JobRecord, peak: Option<f64>) -> Option<Roofline> {
        let intensity =
            job.work.flops.filter(|f| *f > 0.0)? / job.work.bytes.filter(|b| *b > 0.0)?;
        let peak = peak?;
        let copy = self.bound_of(job)?.copy_gbs()?;
        let memory_roof = intensity * copy;
        Some(Roofline {
            intensity,
            attainable_gflops: peak.min(memory_roof),
            compute_bound: peak <= memory_roof,
        })
    }

    /// Why a job's throughput cannot be real, if it cannot: more than `IMPOSSIBLE_COPY` times the
    /// copy bound measured in the same run and state, or more than `IMPOSSIBLE_PEAK` times the FP32
    /// peak. The declared bytes or flops are wrong, or the kernel skips work.
    pub fn impossible(&self, job: &JobRecord) -> Option<String> {
        self.impossible_at(job, || self.fp32_peak(&job.key.group).map(|p| p.0))
    }

    fn impossible_at(&self, job: &JobRecord, peak: impl FnOnce() -> Option<f64>) -> Option<String> {
        if job.status != JobStatus::Ok {
            return None;
        }
        let copy = self.bound_of(job).and_then(|b| b.copy_gbs());
        if let (Some(g), Some(c)) = (job.gbs(), copy)
            && g > IMPOSSIBLE_COPY * c
        {
            return Some(format!(
                "{g:.0} GB/s is {:.0}% of the copy bound measured in this run ({c:.0} GB/s): the `bytes` expression overstates the traffic, or the kernel skips work",
                100.0 * g / c
            ));
        }
        if let Some(g) = job.gflops()
            && let Some(peak) = peak()
            && g > IMPOSSIBLE_PEAK * peak
        {
            return Some(format!(
                "{g:.0} GFLOP/s is {:.0}% of the FP32 peak ({peak:.0} GFLOP/s): the `flops` expression overstates the work, or the kernel skips it",
                100.0 * g / peak
            ));
        }
        None
    }

    /// `impossible` of every job, by job id, with each group's FP32 peak computed once: asking
    /// job by job recomputes the peak over all jobs each time (quadratic in a compute run).
    pub fn impossible_jobs(&self) -> Impossible {
        let mut clocks: HashMap<&str, Vec<u32>> = HashMap::new();
        for j in &self.jobs {
            let seen = clocks.entry(j.key.group.as_str()).or_default();
            seen.extend(
                j.nvml_after
                    .as_ref()
                    .and_then(|s| s.sm_clock_mhz)
                    .filter(|&c| c > 0),
            );
        }
        let peaks: HashMap<&str, Option<f64>> = clocks
            .into_iter()
            .map(|(group, seen)| {
                let peak = self
                    .bounds
                    .get(group)
                    .and_then(|b| b.fma.as_ref())
                    .zip(self.median_clock(seen))
                    .and_then(|(fma, mhz)| fma.lanes_per_sm(mhz).and(fma.peak_gflops(mhz)));
                (group, peak)
            })
            .collect();
        self.jobs
            .iter()
            .filter_map(|j| {
                Some((
                    j.key.id.clone(),
                    self.impossible_at(j, || peaks.get(j.key.group.as_str()).copied().flatten())?,
                ))
            })
            .collect()
    }

    /// A job that may be ranked and serve as the speedup reference: correct by its verification
    /// (before and, where recorded, after timing), and possible. Unchecked jobs are never ranked.
    pub fn rankable(&self, job: &JobRecord) -> bool {
        self.verified_and_timed(job) && self.impossible(job).is_none()
    }

    /// `rankable` with every job's impossibility already known (`impossible_jobs`).
    pub fn rankable_in(&self, job: &JobRecord, impossible: &Impossible) -> bool {
        self.verified_and_timed(job) && !impossible.contains_key(job.id())
    }

    fn verified_and_timed(&self, job: &JobRecord) -> bool {
        let verified = |c: &Option<Correctness>| c.as_ref().is_some_and(|c| c.passed);
        job.status == JobStatus::Ok
            && job.summary.is_some_and(|s| s.median > 0.0)
            && verified(&job.correctness)
            && (job.correctness_after.is_none() || verified(&job.correctness_after))
    }

    /// Groups in the order their first job ran.
    pub fn groups(&self) -> Vec<String> {
        groups_in_order(self.jobs.iter().map(|j| &j.key.group))
    }

    /// Range of the SM and memory clocks NVML saw before and after the jobs, and throttled snapshots.
    pub fn clocks_seen(&self) -> String {
        let snaps: Vec<&Snapshot> = self
            .jobs
            .iter()
            .flat_map(|j| [&j.nvml_before, &j.nvml_after])
            .flatten()
            .collect();
        let range = |f: &dyn Fn(&Snapshot) -> Option<u32>| {
            let v: Vec<u32> = snaps.iter().filter_map(|s| f(s)).collect();
            match (v.iter().min(), v.iter().max()) {
                (Some(a), Some(b)) if a == b => format!("{a} MHz"),
                (Some(a), Some(b)) => format!("{a}–{b} MHz"),
                _ => "not read".into(),
            }
        };
        let throttled = snaps.iter().filter(|s| s.is_throttled()).count();
        format!(
            "SM {}, memory {}{}",
            range(&|s| s.sm_clock_mhz),
            range(&|s| s.mem_clock_mhz),
            if throttled > 0 {
                format!("; **{throttled} snapshots throttled**")
            } else {
                String::new()
            }
        )
    }
}

/// Distinct group names in order of first appearance.
pub fn groups_in_order<'a>(names: impl Iterator<Item = &'a String>) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for g in names {
        if !out.contains(g) {
            out.push(g.clone());
        }
    }
    out
}

#[cfg(test)]
mod round_tests {
    use super::*;

    fn record(status: JobStatus, samples: &[f64]) -> JobRecord {
        JobRecord {
            key: JobKey {
                id: "j".into(),
                variant: "v".into(),
                ..Default::default()
            },
            label: "v".into(),
            status,
            error: (status == JobStatus::Failed).then(|| "boom".to_string()),
            samples_ms: samples.to_vec(),
            runs_per_sample: 1,
            stopped_by: "noise target".into(),
            summary: crate::stats::summarize(samples),
            launches: 1,
            wall_seconds: 1.0,
            ..Default::default()
        }
    }

    #[test]
    fn rounds_combine_into_round_medians_and_the_worst_status() {
        let one = JobRecord::with_round(None, record(JobStatus::Ok, &[1.0, 1.0, 1.2]));
        let two = JobRecord::with_round(Some(one), record(JobStatus::Ok, &[2.0, 2.0, 2.2]));
        let three = JobRecord::with_round(Some(two.clone()), record(JobStatus::Ok, &[1.5, 1.5]));
        assert_eq!(three.samples_ms, vec![1.0, 2.0, 1.5]);
        let s = three.summary.unwrap();
        // Three round medians 1.0, 2.0, 1.5: Student's t across them (mean 1.5, s = 0.5), which
        // is wider than any one round's samples.
        let half = 4.302_652_730 * 0.5 / 3f64.sqrt();
        assert_eq!(s.median, 1.5);
        assert!(
            (s.ci_low - (1.5 - half)).abs() < 1e-9 && (s.ci_high - (1.5 + half)).abs() < 1e-9,
            "the interval spans the rounds, not one round's samples: {s:?}"
        );
        assert_eq!(three.rounds.len(), 3);
        assert_eq!(three.rounds[1].samples_ms, vec![2.0, 2.0, 2.2]);
        assert_eq!(three.wall_seconds, 3.0);
        // A round that failed makes the job failed, saying which round.
        let failed = JobRecord::with_round(Some(two), record(JobStatus::Failed, &[]));
        assert_eq!(failed.status, JobStatus::Failed);
        assert_eq!(failed.error.as_deref(), Some("round 3: boom"));
        assert_eq!(
            failed.samples_ms,
            vec![1.0, 2.0],
            "a round without samples adds no median"
        );
    }

    #[test]
    fn a_record_without_occupancy_is_stored_as_before() {
        // Runs made before occupancy was recorded, and mock runs, keep their stored format.
        let text = serde_json::to_string(&record(JobStatus::Ok, &[1.0])).unwrap();
        assert!(!text.contains("occupancy"), "{text}");
        let back: JobRecord = serde_json::from_str(&text).unwrap();
        assert!(back.occupancy.is_empty());
    }
}
