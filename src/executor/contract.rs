//! What the scheduler and an executor agree on: the `Executor` trait, the context each step of a run shares, what a run is measured on, and why a job has no outcome.

use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::metrics::MetricDef;
use crate::parse::query_metrics::Screened;
use crate::process::FailureKind;
use crate::profiler::ClockControl;
use crate::profiler::hotspots::HotspotRequest;
use crate::records::{
    BatchRun, BoundSpec, BoundsOutcome, ComputeOutcome, DeviceInfo, JobOutcome, Math,
    ProfileRecord, RoofRecord, SanitizeRecord, SanitizerTool, Snapshot, TimingConfig,
};
use crate::suite::JobSpec;

/// What a run is measured on, as the executor knows it.
#[derive(Debug, Clone, Default)]
pub struct Environment {
    /// What run directories are named after: the GPU's name, `gpuN` when NVML cannot say, `mock`.
    pub label: String,
    pub device: Option<DeviceInfo>,
    /// Why there is no device information, when there is none.
    pub nvml_error: Option<String>,
    pub ncu_version: Option<String>,
    pub mock: bool,
}

/// What every step of one run shares.
pub struct RunContext<'a> {
    /// The run directory: ncu's reports and the logs of failed jobs stay here.
    pub dir: &'a Path,
    /// Scratch space, removed when the run ends.
    pub work: &'a Path,
    pub timing: &'a TimingConfig,
    pub seed: u64,
    /// Most time one job may take before it counts as hung.
    pub timeout: Duration,
    pub metrics: &'a [MetricDef],
    pub clock_control: ClockControl,
    /// Profiled runs a job's ncu duration is the median of (`ProfileRequest::duration_runs`).
    pub duration_runs: u32,
    /// `--hotspots`: whose source hot spots the profile pass also reads.
    pub hotspots: Option<&'a HotspotRequest>,
    /// Some job declares flops: the bounds include the FP32 multiply-add rate.
    pub fma: bool,
    /// Some job copies between host and device: the bounds include the host link's copies.
    pub host_link: bool,
}

/// Why a job (or a bound) has no outcome.
#[derive(Debug, Clone, PartialEq)]
pub enum Failure {
    /// It failed; `log` is its whole output, when there is one to keep.
    Failed {
        message: String,
        log: Option<PathBuf>,
    },
    /// It was still running at the timeout and was killed; `log` is what it printed until then.
    TimedOut {
        after: Duration,
        log: Option<PathBuf>,
    },
    /// Nothing can run at all (the executor's own program cannot be started): the run stops.
    Fatal(String),
}

impl Failure {
    /// How a child (`command`) that wrote no result failed. The end of its output holds its error
    /// chain; a child that could not start fails the run: this binary or its log cannot be had,
    /// so no later job could start either.
    pub fn of_child(command: &str, kind: FailureKind, log: Option<PathBuf>) -> Failure {
        match kind {
            FailureKind::TimedOut(after) => Failure::TimedOut { after, log },
            FailureKind::Exited { status, tail } => Failure::Failed {
                message: if tail.is_empty() {
                    format!("child exited with {status}")
                } else {
                    tail
                },
                log,
            },
            FailureKind::Start(why) => Failure::Fatal(format!(
                "could not start {command}: {why}\n  fix: check that the gpu-lab binary is still in place and the run directory writable"
            )),
        }
    }

    pub fn message(&self) -> String {
        match self {
            Failure::Failed { message, .. } | Failure::Fatal(message) => message.clone(),
            Failure::TimedOut { after, .. } => format!(
                "no result after {} s; the child was killed (raise --timeout if the kernel is just slow)",
                after.as_secs()
            ),
        }
    }

    /// The whole output of the failed child, to keep beside the run.
    pub fn log(&self) -> Option<&Path> {
        match self {
            Failure::Failed { log, .. } | Failure::TimedOut { log, .. } => log.as_deref(),
            Failure::Fatal(_) => None,
        }
    }
}

/// `Send + Sync`: the lanes of a `--gpus` run call their executors from one thread each.
pub trait Executor: Send + Sync {
    fn environment(&self) -> Environment;
    /// The requested metrics this GPU can collect, and why the others cannot be.
    fn screen(&self, defs: Vec<MetricDef>) -> anyhow::Result<Screened>;
    /// Clocks, temperature and power now.
    fn snapshot(&self) -> Option<Snapshot>;
    /// The copy bounds over `bytes` bytes (and the FMA rate where `ctx.fma`); `tag` names its files in the work directory.
    fn bounds(&self, ctx: &RunContext, tag: &str, bytes: u64) -> Result<BoundsOutcome, Failure>;
    /// A vendor compute bound (cuBLAS at a job's shape).
    fn compute_bound(
        &self,
        ctx: &RunContext,
        tag: &str,
        bound: &BoundSpec,
    ) -> Result<ComputeOutcome, Failure>;
    /// The compute roofs of one math (not FP32, whose roof is the FMA rate): cuBLAS/cuBLASLt at a
    /// large square GEMM and gpu-lab's peak kernel, each with its own error.
    fn roofs(&self, ctx: &RunContext, tag: &str, math: Math) -> Result<Vec<RoofRecord>, Failure>;
    /// Compiles the programs of `jobs` into the build cache ahead of them, as far as it can
    /// (a program that fails to build fails its own job later, with its own error).
    fn prebuild(&self, _ctx: &RunContext, _tag: &str, _jobs: &[&JobSpec]) {}
    /// Verifies and times one job.
    fn job(&self, ctx: &RunContext, tag: &str, job: &JobSpec) -> Result<JobOutcome, Failure>;
    /// Profiles jobs that already ran to completion, one record per job.
    fn profile(&self, ctx: &RunContext, tag: &str, jobs: &[&JobSpec]) -> Vec<ProfileRecord>;
    /// Runs `job` once under compute-sanitizer's `tool`, killed after `timeout` (no default: an
    /// executor that forgot it would fail every sanitized job on a GPU, found only there).
    fn sanitize(
        &self,
        ctx: &RunContext,
        tag: &str,
        job: &JobSpec,
        tool: SanitizerTool,
        timeout: Duration,
    ) -> SanitizeRecord;
    /// Runs `jobs` one after another under compute-sanitizer's `tool` in one child, killed after
    /// `timeout` per job: what the tool said of them together and how many the child finished.
    fn sanitize_batch(
        &self,
        ctx: &RunContext,
        tag: &str,
        jobs: &[&JobSpec],
        tool: SanitizerTool,
        timeout: Duration,
    ) -> BatchRun;
}
