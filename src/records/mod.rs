//! What a run records: its environment, one record per job, bounds and profiles, and the derived figures reports show (pure data).
//!
//! These types are the files of a run directory (`run.json`, `results.jsonl`) and of a baseline;
//! their serialised field names are a stored format and do not change with Rust names.
//!
//! The stored format: `run_info` (`run.json`), `job`, `bounds`, `profile` and `sanitize` (the lines of
//! `results.jsonl`), `hotspots` (a profile record's source lines), `run_data` (a line, and the run its lines make), `environment`, `outcome`,
//! `timeline`, `fingerprint`, `verified` and `activity` (CUPTI kernel durations) (the verified timed runs). The rules that judge a run, pure and tested without files:
//! `judge` (bounds, roofline, impossible throughput, ranking), `roofs` (the roof of each math),
//! `throughput` (GB/s, GFLOP/s, FP32 peak), `rounds` (how rounds combine) and `merge` (which shards merge).

mod activity;
mod bounds;
mod clock_events;
mod energy;
mod environment;
mod fingerprint;
mod gemm;
mod hotspots;
mod job;
mod judge;
mod math;
mod merge;
mod outcome;
mod profile;
mod roofs;
mod rounds;
mod run_data;
mod run_info;
mod sanitize;
mod throughput;
mod timeline;
mod verified;

pub use activity::ActivityRecord;
pub use bounds::{
    BoundsRecord, ComputeBoundRecord, FmaRate, HostLinkBounds, RoofRecord, RoofSource,
};
pub use clock_events::{
    ClockEvents, clock_event_lowers_clock, clock_event_words, count_clock_events,
};
pub use energy::EnergyRecord;
pub use environment::{DeviceInfo, Snapshot, peak_bandwidth_gbs};
pub use fingerprint::Fingerprint;
pub use gemm::{Accumulate, GemmTypes, SUPPORTED as SUPPORTED_GEMMS, tn_shape};
pub use hotspots::{HotLine, Hotspots, KernelHotspots, ProgramKernel, Stall};
pub use job::{BoundSpec, JobKey, JobRecord, JobStatus, RoundRecord, Work, format_params};
pub use judge::{IMPOSSIBLE_COPY, IMPOSSIBLE_PEAK, Impossible, Roofline};
pub use math::Math;
pub use merge::merge_refusal;
pub use outcome::{
    BoundsOutcome, CLOCK_FLOOR, CacheState, ClockSample, CompileInfo, ComputeOutcome,
    ExcludedSample, HostLink, HostLinkSamples, JobOutcome, JobPhase, LaunchOccupancy, TimingConfig,
    kept_by_clock, sample_clock_events, split_by_clock,
};
pub use profile::{DURATION_FROM_ACTIVITY, DURATION_OWN_SESSION, DURATION_RUNS, ProfileRecord};
#[cfg(test)]
pub(crate) use roofs::fixtures;
pub use roofs::{Roof, RoofOrigin, giga_unit, rate_text, roof_name};
pub use rounds::usable_noise_threshold_pct;
pub use run_data::{Record, RunData, groups_in_order};
pub use run_info::{BuildInfo, RunInfo, ShardInfo, plan_hash, plan_job_key};
pub use sanitize::{BatchRun, Finding, SanitizeRecord, SanitizerTool};
pub use throughput::per_second_g;
pub use timeline::{Overlap, StepInfo, StepKind, StepTime, Timeline, busy_ms, without_chunk};
pub use verified::{
    SLOWER_FACTOR, SLOWER_MARGIN_MS, TRIES, TimedChecks, TimedSetup, VerifiedRun, another_try,
    timed_wrong,
};
