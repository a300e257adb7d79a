//! The hidden child subcommands (`__job`, `__jobs`, `__build`, `__profile`, `__cupti`, `__bounds`, `__compute_bound`, `__roofs`) the parent starts to run one piece of GPU work in a process of its own; their names are `executor::child`'s.

use std::path::PathBuf;

use clap::{Args, Subcommand};

/// The children, flattened into `Command` (so each is a top-level hidden subcommand).
#[derive(Debug, Subcommand)]
pub enum ChildCommand {
    /// Child process: run one job and write its outcome (used by run/profile).
    #[command(name = "__job", hide = true)]
    Job {
        #[arg(long)]
        spec: PathBuf,
        #[arg(long)]
        out: PathBuf,
        #[command(flatten)]
        child: ChildArgs,
        #[arg(long)]
        seed: u64,
    },
    /// Child process: run jobs one after another, each asked for as a line of JSON on stdin
    /// (`executor::job_server`); ends at the end of stdin or at the first job that fails.
    #[command(name = "__jobs", hide = true)]
    Jobs {
        #[command(flatten)]
        child: ChildArgs,
    },
    /// Child process: compile every program of the jobs in `specs` into the build cache, on all
    /// cores (ahead of a suite's first job).
    #[command(name = "__build", hide = true)]
    Build {
        #[arg(long)]
        specs: PathBuf,
        #[command(flatten)]
        child: ChildArgs,
    },
    /// Child process: launch each job once, for ncu to profile.
    #[command(name = "__profile", hide = true)]
    ProfilePass {
        #[arg(long)]
        specs: PathBuf,
        #[command(flatten)]
        child: ChildArgs,
        #[arg(long)]
        seed: u64,
        /// With N > 0: run each job once unprofiled, then N times inside cuProfilerStart/Stop (as `--duration-runs`, at most 100).
        #[arg(long, default_value_t = 0, value_parser = clap::value_parser!(u32).range(0..=100))]
        profiled_runs: u32,
        /// After each job, the number of jobs finished is written here (a sanitized batch's
        /// parent reads how far the child got).
        #[arg(long)]
        progress: Option<PathBuf>,
    },
    /// Child process: collect counters in process through CUPTI, each job replayed once per pass.
    #[command(name = "__cupti", hide = true)]
    CuptiPass {
        #[arg(long)]
        specs: PathBuf,
        /// A JSON list of the raw counter names to collect.
        #[arg(long)]
        counters: PathBuf,
        #[arg(long)]
        out: PathBuf,
        #[command(flatten)]
        child: ChildArgs,
        #[arg(long)]
        seed: u64,
    },
    /// Child process: measure the copy bounds for a byte count.
    #[command(name = "__bounds", hide = true)]
    Bounds {
        #[arg(long)]
        bytes: u64,
        #[arg(long)]
        out: PathBuf,
        #[command(flatten)]
        child: ChildArgs,
        #[arg(long)]
        timing: PathBuf,
        /// Also measure the FP32 multiply-add rate.
        #[arg(long)]
        fma: bool,
        /// Also measure the host link (pinned and pageable copies each way).
        #[arg(long)]
        host_link: bool,
    },
    /// Child process: time a vendor compute bound (cuBLAS) at a job's shape.
    #[command(name = "__compute_bound", hide = true)]
    ComputeBound {
        /// The bound (JSON, as a job spec holds it).
        #[arg(long)]
        bound: PathBuf,
        #[arg(long)]
        out: PathBuf,
        #[command(flatten)]
        child: ChildArgs,
        #[arg(long)]
        timing: PathBuf,
    },
    /// Child process: measure one math's compute roofs (library GEMM and peak kernel).
    #[command(name = "__roofs", hide = true)]
    Roofs {
        /// The math, by its manifest name (`bf16-tensor`).
        #[arg(long)]
        math: String,
        #[arg(long)]
        out: PathBuf,
        #[command(flatten)]
        child: ChildArgs,
        #[arg(long)]
        timing: PathBuf,
    },
}

/// What every child needs: its GPU and the compile cache.
#[derive(Debug, Args, Clone)]
pub struct ChildArgs {
    #[arg(long)]
    pub gpu: usize,
    #[arg(long)]
    pub cache: Option<PathBuf>,
}
