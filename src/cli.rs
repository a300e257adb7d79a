//! Command-line interface (clap): the public commands and their choices as value enums; the hidden ones the parent uses to run a child are in `cli/child.rs`, the flags' value parsers in `cli/values.rs`; only `cmd/` reads it.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};

use crate::compare::clocks::Normalize;
use crate::profiler::ClockControl;

mod child;
mod values;

pub use child::{ChildArgs, ChildCommand};
pub use values::{GpuSelection, MAX_GPU_INDEX};
use values::{
    gpu_selection, max_seconds, measure, noise_floor_us, noise_threshold, parse_shard, percent,
    since_date, slowdown,
};

#[derive(Debug, Parser)]
#[command(
    name = "gpu-lab",
    version,
    about = "Compare CUDA kernel variants: check, time, profile with ncu (nvprof metric names included), report."
)]
#[command(after_help = crate::exit::HELP)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
    /// No progress bar and no summary table; only errors and the final path.
    #[arg(long, short, global = true)]
    pub quiet: bool,
    /// Colour in the summary tables: `auto` when stderr is a terminal and NO_COLOR is unset.
    #[arg(long, global = true, value_enum, default_value_t = ColorChoice::Auto)]
    pub color: ColorChoice,
    /// Extra metric definitions (TOML, format in docs/metrics.md); they add to or override the built-ins.
    #[arg(long, global = true)]
    pub metrics_file: Vec<PathBuf>,
    /// Run without a GPU: a mock executor with deterministic stand-in timings and counters, for
    /// testing gpu-lab itself. Every output says MOCK; nothing it makes is a measurement.
    /// Also set by GPU_LAB_MOCK_GPU=1, so that a script run as written (docs/fleet.md under the
    /// Slurm test) runs on the mock.
    #[arg(long, global = true, hide = true, env = "GPU_LAB_MOCK_GPU", value_parser = clap::builder::FalseyValueParser::new())]
    pub mock_gpu: bool,
    /// With --mock-gpu: the mock host's GPUs, one model name each (`A,A,B`); without it, two of one model.
    #[arg(
        long,
        global = true,
        hide = true,
        value_delimiter = ',',
        requires = "mock_gpu"
    )]
    pub mock_gpus: Vec<String>,
    /// With --mock-gpu: multiply the stand-in time of a variant (`VARIANT=FACTOR`, repeatable), to test the regression gate.
    #[arg(long, global = true, hide = true, value_parser = slowdown, requires = "mock_gpu")]
    pub mock_slow: Vec<(String, f64)>,
}

/// The command line as a run records it (`run.json`'s `command`): the arguments joined by
/// spaces, a byte that is not UTF-8 shown as U+FFFD.
pub fn command_line(args: impl IntoIterator<Item = std::ffi::OsString>) -> String {
    args.into_iter()
        .map(|a| a.to_string_lossy().into_owned())
        .collect::<Vec<_>>()
        .join(" ")
}

/// `gpu-lab compare --format`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum CompareFormat {
    Md,
    /// Two runs only.
    Json,
    /// The runs' frame.
    Csv,
    /// A chart: per job, one bar per run of its % of that run's own copy bound.
    Svg,
}

/// What `gpu-lab list` shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ListWhat {
    Suites,
    Variants,
    Metrics,
    Sets,
}

#[derive(Debug, Args, Clone)]
pub struct SuiteArgs {
    /// Suite name(s), comma-separated, or `all`.
    #[arg(long, short, value_delimiter = ',', required = true)]
    pub suite: Vec<String>,
    /// Only these variants (comma-separated names).
    #[arg(long, value_delimiter = ',')]
    pub variant: Vec<String>,
    /// Only these sweep points (repeatable): `first`, `smallest`, or a point's `NX=8192,NY=8192`.
    #[arg(long, value_parser = crate::scheduler::ShapeChoice::parse)]
    pub shape: Vec<crate::scheduler::ShapeChoice>,
    /// Extra directories holding user suites (DIR/<suite>/suite.toml).
    #[arg(long)]
    pub suite_dir: Vec<PathBuf>,
    /// GPU index (PCI bus order, as nvidia-smi numbers them), 0 to 1023.
    #[arg(long, default_value_t = 0, value_parser = clap::value_parser!(u32).range(0..=MAX_GPU_INDEX as i64))]
    pub gpu: u32,
    /// Several GPUs of this host: `all` or indices (`0,2`). Jobs go to whichever GPU is free, one
    /// at a time per GPU; each GPU measures its own bounds; ncu passes run side by side. GPUs of
    /// different models each run every job, one run directory per model.
    #[arg(long, conflicts_with = "gpu", value_parser = gpu_selection)]
    pub gpus: Option<GpuSelection>,
    /// Root directory for run directories (default: the data directory's `runs/`:
    /// $GPU_LAB_DATA/runs, else $XDG_DATA_HOME/gpu-lab/runs, else ~/.local/share/gpu-lab/runs).
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Seconds before a job's child process is killed as hung.
    #[arg(long, default_value_t = 120, value_parser = clap::value_parser!(u64).range(1..=86_400))]
    pub timeout: u64,
    /// Seed of the random inputs (recorded in the run).
    #[arg(long, default_value_t = 20261122)]
    pub seed: u64,
    /// Most seconds of sampling per job (over 0, at most 3600).
    #[arg(long, default_value_t = 1.5, value_parser = max_seconds)]
    pub max_seconds: f64,
    /// Noise target: stop once the median's 95% CI half-width is under this percentage (over 0, at most 100).
    #[arg(long, default_value_t = 0.5, value_parser = percent)]
    pub noise: f64,
    /// L2 state while timing: `cold` flushes it before every sample, `warm` reuses it (default: the suite's `cache`, else cold).
    #[arg(long, value_enum)]
    pub cache: Option<crate::records::CacheState>,
    /// Time every job this many times, the variants interleaved (A B C A B C …), each time as a
    /// job of its own; a job's interval is then across rounds (run-to-run noise included).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=100))]
    pub rounds: u32,
    /// Also verify a launch between every K timed samples (same module state, inputs restored): a kernel
    /// that goes wrong while timed is caught. 0: only before and after timing; at most 300 (samples' most).
    #[arg(long, default_value_t = 0, value_parser = clap::value_parser!(u32).range(0..=300))]
    pub verify_every: u32,
    /// After timing, run each job back to back for at least a second while NVML's total-energy counter
    /// is read: J/run, mean W, J/TFLOP or J/GB, power limit and state, clock-event reasons seen.
    #[arg(long)]
    pub energy: bool,
    /// Events only: no CUPTI Activity kernel durations after the samples (docs/profilers.md).
    #[arg(long)]
    pub no_activity: bool,
    /// Each job's first raw CUPTI kernel records, as JSON lines, into this folder (test fixtures).
    #[arg(long, hide = true)]
    pub activity_dump: Option<PathBuf>,
    /// CUPTI kernel records during the event samples (CUPTI's instrumentation then slows them).
    #[arg(long, hide = true, conflicts_with = "no_activity")]
    pub activity_during: bool,
    /// Every job in a child process of its own, not served in turn by one child per suite (to
    /// measure what the serving child saves).
    #[arg(long, hide = true)]
    pub child_per_job: bool,
    /// Run only shard I of N (`0/4` … `3/4`, as a Slurm array's SLURM_ARRAY_TASK_ID counts): every
    /// job of the selected suites lands in exactly one shard, balanced by its expected cost.
    #[arg(long, value_parser = parse_shard)]
    pub shard: Option<crate::scheduler::Shard>,
    /// Run each variant once under compute-sanitizer with these tools (memcheck, initcheck, synccheck,
    /// racecheck; comma-separated), at the cheapest job of its sweep, before timing. A finding fails the
    /// variant as a wrong result does. racecheck only where it uses shared memory. See docs/sanitize.md.
    #[arg(long, value_enum, value_delimiter = ',')]
    pub sanitize: Vec<crate::records::SanitizerTool>,
    /// With --sanitize: only sanitize (no timing, no bounds): cheap enough for CI on a GPU runner.
    #[arg(long, requires = "sanitize")]
    pub sanitize_only: bool,
    /// Seconds before one sanitized child is killed (racecheck can take 1000x a launch), per variant.
    #[arg(long, default_value_t = 1800, value_parser = clap::value_parser!(u64).range(1..=86_400))]
    pub sanitize_timeout: u64,
    /// With --sanitize: one sanitized child per variant and tool, instead of one per tool for a
    /// suite's variants together (slower: each child starts compute-sanitizer and the GPU).
    #[arg(long, requires = "sanitize")]
    pub sanitize_each: bool,
}

/// `--color`: whether the summary tables are coloured.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ColorChoice {
    Auto,
    Always,
    Never,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// GPUs seen by CUDA and NVML: name, UUID, CC, memory, bus width, clocks, peak bandwidth; ncu and counter access.
    Devices,
    /// Preflight: driver, libcuda, libnvrtc, NVML, ncu, counter permission, clocks; each failure with its fix.
    Doctor,
    /// What exists: suites, variants, metrics (with their ncu counters) or sets.
    List {
        #[arg(value_enum, default_value_t = ListWhat::Suites)]
        what: ListWhat,
        #[arg(long)]
        suite_dir: Vec<PathBuf>,
        /// Only these suites (comma-separated), for `suites` and `variants`.
        #[arg(long, short, value_delimiter = ',')]
        suite: Vec<String>,
    },
    /// How the jobs of the suites split into N shards (for `run --shard I/N` on N machines, e.g. a
    /// Slurm job array): one line a job, `shard<TAB>expected cost<TAB>suite<TAB>job`, then each shard's total.
    Plan {
        #[arg(long, short, value_delimiter = ',', required = true)]
        suite: Vec<String>,
        #[arg(long, value_delimiter = ',')]
        variant: Vec<String>,
        #[arg(long)]
        suite_dir: Vec<PathBuf>,
        /// Number of shards (1 to 10000).
        #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=crate::scheduler::MAX_SHARDS as i64))]
        shards: u32,
    },
    /// Join the shard runs of one plan (`run --shard I/N` on several machines) into one run
    /// directory, its reports rendered; it can be baselined and checked like any run.
    Merge {
        /// Every shard run directory of the plan.
        #[arg(required = true)]
        runs: Vec<PathBuf>,
        /// Root directory for the merged run directory (default: the data directory's `runs/`, as for `run`).
        #[arg(long)]
        out: Option<PathBuf>,
    },
    /// Check and time every variant (no ncu).
    Run(SuiteArgs),
    /// Check, time and profile every variant with ncu, then write the report.
    Profile {
        #[command(flatten)]
        suite: SuiteArgs,
        /// Metric set (default: the suite's).
        #[arg(long)]
        set: Option<String>,
        /// Metrics: legacy nvprof names, gpu-lab names or raw ncu counters (comma-separated).
        #[arg(long, value_delimiter = ',')]
        metrics: Vec<String>,
        /// ncu clock control: `none` measures the card as found; `base` locks base clocks (owners only).
        #[arg(long, value_enum, default_value_t = ClockControl::None)]
        clock_control: ClockControl,
        /// ncu's `duration`: the median of N profiled runs in a session of its own. 0: no session; the
        /// job's CUPTI activity median instead (about 4% long on Hopper), else the set's reading.
        #[arg(long, default_value_t = crate::records::DURATION_RUNS, value_parser = clap::value_parser!(u32).range(0..=100))]
        duration_runs: u32,
        /// Who collects the counters: `cupti` in process (a pass it cannot do goes to ncu, the report
        /// says why), `ncu`, or `both`: CUPTI's, and ncu's compared with them (the run's crosscheck.md).
        #[arg(long, value_enum, default_value_t = crate::profiler::ProfilerChoice::Cupti)]
        profiler: crate::profiler::ProfilerChoice,
        /// Source hot spots of these variants (comma-separated; alone: every variant): an extra ncu
        /// session (SourceCounters, WarpStateStats) puts each kernel's top source lines by warp
        /// samples in the report, with stall reason, excess sectors and bank conflicts.
        #[arg(long, value_name = "VARIANTS", num_args = 0..=1, default_missing_value = "", value_delimiter = ',')]
        hotspots: Option<Vec<String>>,
        /// Each group's profile pass at once: no timing, no copy bounds, no checks (docs/profilers.md).
        #[arg(long, conflicts_with_all = ["rounds", "energy", "verify_every", "max_seconds", "noise"])]
        counters_only: bool,
    },
    /// Profile any CUDA program under ncu and print nvprof's `--metrics` table, per kernel.
    #[command(after_help = NCU_HELP)]
    Ncu(NcuArgs),
    /// Read an .ncu-rep or an ncu CSV export and print named metrics per kernel (a CSV needs no GPU and no ncu).
    #[command(after_help = IMPORT_HELP)]
    Import(ImportArgs),
    /// Shell completions for gpu-lab, from its command-line definition, on stdout (docs/install.md).
    Completions {
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
    /// gpu-lab's man page (roff), from its command-line definition, on stdout:
    /// `gpu-lab man > ~/.local/share/man/man1/gpu-lab.1` (docs/install.md).
    Man,
    /// Re-render a stored run (no GPU needed).
    Report {
        run: PathBuf,
        #[arg(long, value_enum, default_value_t = crate::report::Format::Md)]
        format: crate::report::Format,
        /// Also rewrite the run's own report file.
        #[arg(long)]
        write: bool,
    },
    /// Store a run as a baseline (`baselines/NAME.json`), or list the stored baselines.
    Baseline {
        #[command(subcommand)]
        action: BaselineAction,
    },
    /// Judge a run against a baseline, job by job: exit 0 when nothing regressed, 3 when something did.
    Check(CheckArgs),
    /// The trend of each job of a suite over the runs in the history (one environment
    /// fingerprint): median and interval per run, as a table, a chart or CSV.
    #[command(after_help = HISTORY_HELP)]
    History(HistoryArgs),
    /// Stored runs side by side, also across GPUs, without verdicts.
    #[command(
        after_help = "Two runs: every job's change with its interval, clocks, counters and correctness (md or json). More runs: one table of medians and % of copy per run, from the runs' polars frame. --format csv: the frame of every run (one row per job of each run; schema in docs/frame.md), for polars or pandas."
    )]
    Compare {
        /// Run directories, two or more.
        #[arg(num_args = 2.., required = true)]
        runs: Vec<PathBuf>,
        #[arg(long, value_enum, default_value_t = CompareFormat::Md)]
        format: CompareFormat,
    },
    // The hidden children (`cli/child.rs`), each a top-level subcommand of its own.
    #[command(flatten)]
    Child(ChildCommand),
}

#[derive(Debug, Subcommand)]
pub enum BaselineAction {
    /// Store a run's jobs, samples, counters and environment as `DIR/NAME.json`.
    Save {
        name: String,
        /// The run directory to store (default: the newest under --runs).
        #[arg(long)]
        from: Option<PathBuf>,
        /// Where to look for the newest run when --from is not given (default: the data directory's `runs/`, as for `run`).
        #[arg(long)]
        runs: Option<PathBuf>,
        /// Replace an existing baseline of that name.
        #[arg(long)]
        force: bool,
        /// Store a mock run (`--mock-gpu`) anyway: only for testing gpu-lab itself; the baseline says MOCK.
        #[arg(long, hide = true)]
        allow_mock: bool,
        #[arg(long, default_value = crate::store::baseline::DEFAULT_DIR)]
        dir: PathBuf,
    },
    /// A baseline as ReFrame performance references (a Python module on stdout): per GPU model,
    /// each job's median time with the bounds `check`'s noise threshold allows.
    Export {
        name: String,
        #[arg(long, default_value = crate::store::baseline::DEFAULT_DIR)]
        dir: PathBuf,
        /// Noise threshold in percent (as `check --noise-threshold`).
        #[arg(long, default_value_t = crate::compare::DEFAULT_NOISE_THRESHOLD_PCT, value_parser = noise_threshold)]
        noise_threshold: f64,
        /// Noise floor in microseconds (as `check --noise-floor-us`).
        #[arg(long, default_value_t = crate::compare::DEFAULT_NOISE_FLOOR_US, value_parser = noise_floor_us)]
        noise_floor_us: f64,
    },
    /// The stored baselines: suite, GPU, jobs, when and from which run.
    List {
        #[arg(long, default_value = crate::store::baseline::DEFAULT_DIR)]
        dir: PathBuf,
    },
}

#[derive(Debug, Args)]
#[command(
    override_usage = "gpu-lab check --baseline NAME (--from RUN | --suite S [run options]) [OPTIONS]"
)]
pub struct CheckArgs {
    /// Baseline name (`DIR/NAME.json`), a path to a baseline file, or `last:K`: the last K runs
    /// of the same suite and environment fingerprint in the history (their medians pooled).
    #[arg(long)]
    pub baseline: String,
    /// Directory of stored baselines.
    #[arg(long, default_value = crate::store::baseline::DEFAULT_DIR)]
    pub baseline_dir: PathBuf,
    /// Check this stored run directory; or, with --suite S instead, run the suite now (as `profile` does when the baseline has ncu counters, as `run` does otherwise) and check that run.
    #[arg(long, conflicts_with = "suite", required_unless_present = "suite")]
    pub from: Option<PathBuf>,
    #[command(flatten)]
    pub run: Option<SuiteArgs>,
    /// With --suite: time only, even when the baseline has counters (they are then not compared).
    #[arg(long)]
    pub no_profile: bool,
    /// Noise threshold in percent (over 0, at most 1000): a time change counts only when its whole 95% interval lies beyond it.
    #[arg(long, default_value_t = crate::compare::DEFAULT_NOISE_THRESHOLD_PCT, value_parser = noise_threshold)]
    pub noise_threshold: f64,
    /// Noise floor in microseconds (0 to 3.6e9): the threshold of a job is at least this over its baseline median.
    #[arg(long, default_value_t = crate::compare::DEFAULT_NOISE_FLOOR_US, value_parser = noise_floor_us)]
    pub noise_floor_us: f64,
    /// Clock a job's time is normalised by where clocks differ: auto = memory clock for data movement (bytes, no flops), SM clock otherwise.
    #[arg(long, value_enum, default_value_t = Normalize::Auto)]
    pub normalize: Normalize,
    /// Accept a baseline from another GPU model: then each job is compared by its % of the copy bound measured in its own run.
    #[arg(long)]
    pub allow_other_gpu: bool,
    /// Judge a run timed in another L2 state (cold against warm) anyway; the verdicts say so.
    #[arg(long)]
    pub allow_cache_mismatch: bool,
    #[arg(long, value_enum, default_value_t = crate::compare::Format::Md)]
    pub format: crate::compare::Format,
}

pub const NCU_HELP: &str = "The program's own output and ncu's messages go to stderr, between two marker lines; the table goes to stdout.
ncu runs with --clock-control none (the GPU's clocks are never changed).

Exit codes: 0 the table was printed and the program exited 0; 1 error (no such program, ncu missing,
counters not permitted, unknown metric, nothing profiled); 2 usage; 4 the program failed (non-zero
exit or a signal: its code is printed) or a kernel faulted (the table of what was profiled is still printed).";

pub const IMPORT_HELP: &str = "FILE: an .ncu-rep (read through `ncu -i`, so ncu must be installed) or what `ncu --csv` printed,
raw page (`--page raw`) or details page, program output and ncu messages mixed in or not.
Without --metrics/--set: every gpu-lab metric whose counters the file holds. Names found in the
file (raw ncu names, or the details page's display names such as `Duration`) are accepted too.

Exit codes: 0 the table was printed; 1 error (unreadable file, ncu missing for an .ncu-rep, no
requested metric computable); 2 usage; 4 the table was printed but some kernels faulted (nan values).";

pub const HISTORY_HELP: &str =
    "Every run, profile, check --suite and merge appends its correct jobs to the history
(DATA/history/<suite>/<fingerprint>/<run>.parquet, DATA as for --out). Runs compare when their
fingerprint matches: GPU model, driver, CUDA, L2 state, clock policy, mock or not; the gpu-lab
commit is not part of it (each row carries it: the trend over commits is the point).
Without --fingerprint: that of the suite's newest run; the others are listed on stderr.";

/// `gpu-lab history`.
#[derive(Debug, Args, Clone)]
pub struct HistoryArgs {
    /// The suite whose history to show.
    #[arg(long, short)]
    pub suite: String,
    /// Only these variants (comma-separated names).
    #[arg(long, value_delimiter = ',')]
    pub variant: Vec<String>,
    /// Only runs started on or after this UTC date (`2026-11-25`) or time (`2026-11-25T10:00:00Z`).
    #[arg(long, value_parser = since_date)]
    pub since: Option<String>,
    /// The environment fingerprint (16 hex digits, as the outputs print it); default: the newest run's.
    #[arg(long)]
    pub fingerprint: Option<String>,
    /// What to follow: time_ms, gb_per_s or gflop_per_s.
    #[arg(long, default_value = "time_ms", value_parser = measure)]
    pub measure: crate::history::Measure,
    #[arg(long, value_enum, default_value_t = crate::report::history::Format::Md)]
    pub format: crate::report::history::Format,
}

/// Which metrics to show and how.
#[derive(Debug, Args, Clone)]
pub struct MetricChoice {
    /// Metrics: nvprof names, gpu-lab names or raw ncu names (comma-separated).
    #[arg(long, value_delimiter = ',')]
    pub metrics: Vec<String>,
    /// A named metric set (`gpu-lab list sets`).
    #[arg(long)]
    pub set: Option<String>,
    #[arg(long, value_enum, default_value_t = crate::report::nvprof::Format::Table)]
    pub format: crate::report::nvprof::Format,
}

impl MetricChoice {
    /// The set first, then the metrics, as given.
    pub fn names(&self) -> Vec<String> {
        self.set.iter().chain(&self.metrics).cloned().collect()
    }
}

#[derive(Debug, Args, Clone)]
pub struct NcuArgs {
    #[command(flatten)]
    pub choice: MetricChoice,
    /// Only kernels whose function name matches this regular expression (ncu --kernel-name regex:REGEX).
    #[arg(long, short = 'k')]
    pub kernel: Option<String>,
    /// Profile at most this many kernel launches (ncu --launch-count).
    #[arg(long, short = 'c', value_parser = clap::value_parser!(u64).range(1..))]
    pub launch_count: Option<u64>,
    /// Keep ncu's report at this path (.ncu-rep added), for the Nsight Compute GUI or `gpu-lab import`.
    #[arg(long)]
    pub export: Option<PathBuf>,
    /// Source hot spots of these kernels (comma-separated names, `copy_row,transpose_tile<1, 0>`; alone: every kernel):
    /// the same session also collects SourceCounters and WarpStateStats, and after the table
    /// each kernel's top source lines by warp samples follow, with stall reason, excess sectors
    /// and bank conflicts (the program needs `nvcc -lineinfo`; docs/hotspots.md).
    #[arg(long, value_name = "KERNELS", num_args = 0..=1, default_missing_value = "")]
    pub hotspots: Option<String>,
    /// The program to profile and its arguments, after `--`.
    #[arg(last = true, required = true, value_name = "PROGRAM [ARGS]")]
    pub program: Vec<String>,
}

#[derive(Debug, Args, Clone)]
pub struct ImportArgs {
    /// An .ncu-rep report or an ncu CSV export.
    pub file: PathBuf,
    #[command(flatten)]
    pub choice: MetricChoice,
}
