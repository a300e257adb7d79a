//! `gpu-lab run` and `gpu-lab profile` (also what `check --suite` runs): suites -> plans -> the executor -> run directories.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::cli::{ColorChoice, GpuSelection, SuiteArgs};
use crate::config::Config;
use crate::executor::{ChildExecutor, Executor, MockExecutor};
use crate::exit;
use crate::profiler;
use crate::records::TimingConfig;
use crate::scheduler::{self, ProfileRequest, RunSettings};
use crate::suite;

/// The hidden `--mock-gpu` choice, its stand-in slowdowns and the mock host's GPU models.
#[derive(Debug, Clone, Default)]
pub struct Mock {
    pub on: bool,
    pub slowdown: BTreeMap<String, f64>,
    /// One model name per mock GPU (`--mock-gpus`); empty: two GPUs of the one mock model.
    pub models: Vec<String>,
}

impl Mock {
    fn gpu_count(&self) -> u32 {
        if self.models.is_empty() {
            2
        } else {
            self.models.len() as u32
        }
    }
}

/// The executor the command line asks for: the mock, or children on GPU `gpu` (with ncu when
/// profiling).
pub fn executor(
    config: &Config,
    gpu: u32,
    (profile, sanitize, child_per_job): (Option<profiler::ProfilerChoice>, bool, bool),
    mock: &Mock,
) -> anyhow::Result<Box<dyn Executor>> {
    if mock.on {
        if gpu >= mock.gpu_count() {
            anyhow::bail!(
                "the mock host has {} GPUs (0 to {}); there is no GPU {gpu}",
                mock.gpu_count(),
                mock.gpu_count() - 1
            );
        }
        return Ok(Box::new(MockExecutor {
            slowdown: mock.slowdown.clone(),
            index: gpu,
            model: mock.models.get(gpu as usize).cloned(),
        }));
    }
    let mut children = ChildExecutor::start(config.exe.clone(), gpu, config.cache_dir.clone())?
        .with_child_per_job(child_per_job);
    if sanitize {
        children = children.with_sanitizer(crate::sanitizer::find(&config.sanitizer)?);
    }
    let Some(choice) = profile else {
        return Ok(Box::new(children));
    };
    let children = children.with_profiler(choice);
    match (choice, profiler::find(&config.ncu)) {
        (_, Ok(ncu)) => Ok(Box::new(children.with_ncu(ncu))),
        // CUPTI needs no ncu; without one, a pass CUPTI cannot collect says so.
        (profiler::ProfilerChoice::Cupti, Err(_)) => Ok(Box::new(children)),
        // `both` compares CUPTI with ncu: without ncu there is nothing to compare with.
        (profiler::ProfilerChoice::Ncu | profiler::ProfilerChoice::Both, Err(e)) => Err(e.into()),
    }
}

/// The GPUs a run uses: `--gpus` (all of the host's, or those named), else `--gpu`.
fn selected_gpus(args: &SuiteArgs, mock: &Mock) -> anyhow::Result<Vec<u32>> {
    Ok(match &args.gpus {
        None => vec![args.gpu],
        Some(GpuSelection::Indices(list)) => list.clone(),
        Some(GpuSelection::All) if mock.on => (0..mock.gpu_count()).collect(),
        Some(GpuSelection::All) => {
            let n = crate::device::cuda_device_count()?;
            if n == 0 {
                anyhow::bail!(
                    "--gpus all: CUDA sees no GPU on this host\n  fix: `gpu-lab doctor` says why"
                );
            }
            (0..n as u32).collect()
        }
    })
}

pub fn settings(
    config: &Config,
    args: &SuiteArgs,
    profile: Option<ProfileRequest>,
    command_line: String,
) -> anyhow::Result<RunSettings> {
    Ok(RunSettings {
        out: config.runs_dir(args.out.as_deref())?,
        timing: TimingConfig {
            max_seconds: args.max_seconds,
            target_rel_ci: args.noise / 100.0,
            rounds: args.rounds,
            verify_every: args.verify_every,
            energy: args.energy,
            no_activity: args.no_activity,
            activity_after: !args.activity_during,
            activity_dump: args
                .activity_dump
                .as_deref()
                .map(std::path::absolute)
                .transpose()
                .map_err(|e| anyhow::anyhow!("resolving --activity-dump: {e}"))?,
            ..TimingConfig::default()
        },
        cache: args.cache,
        seed: args.seed,
        timeout: Duration::from_secs(args.timeout),
        profile,
        command_line,
        build: super::provenance::this_build(),
        quiet: config.quiet,
        shard: None,
        sanitize: args.sanitize.clone(),
        sanitize_only: args.sanitize_only,
        sanitize_timeout: Duration::from_secs(args.sanitize_timeout),
        sanitize_each: args.sanitize_each,
    })
}

/// Prints how the suites' jobs split into `shards`: what `run --shard I/N` will run.
pub fn plan(
    config: &Config,
    names: &[String],
    variants: &[String],
    suite_dirs: &[PathBuf],
    shards: usize,
) -> anyhow::Result<i32> {
    let suites = suite::load_named(names, &config.suite_search(suite_dirs)?)?;
    let plans = scheduler::plan(&suites, variants, None, config.catalog()?)?;
    let jobs: Vec<&crate::suite::JobSpec> = plans.iter().flat_map(|p| p.jobs.iter()).collect();
    let assigned = scheduler::shard_of(&jobs, shards);
    let mut totals = vec![(0usize, 0.0f64); shards];
    for (job, &s) in jobs.iter().zip(&assigned) {
        let cost = scheduler::expected_cost(job);
        totals[s].0 += 1;
        totals[s].1 += cost;
        println!("{s}\t{cost:.3e}\t{}\t{}", job.suite, job.id());
    }
    for (s, (n, cost)) in totals.iter().enumerate() {
        eprintln!("shard {s}/{shards}: {n} jobs, expected cost {cost:.3e}");
    }
    if shards > jobs.len() {
        eprintln!(
            "note: {shards} shards for {} jobs: shards {} to {} hold none; each still writes a run with no job, which `merge` accepts",
            jobs.len(),
            jobs.len(),
            shards - 1
        );
    }
    Ok(exit::OK)
}

/// Colour in the summary tables: `--color always`, or `auto` where stderr (where they go) is a
/// terminal and `NO_COLOR` is unset or empty (no-color.org).
pub fn wants_colour(choice: ColorChoice) -> bool {
    use std::io::IsTerminal;
    match choice {
        ColorChoice::Always => true,
        ColorChoice::Never => false,
        ColorChoice::Auto => {
            std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
                && std::io::stderr().is_terminal()
        }
    }
}

/// Runs the suites and prints each run directory on stdout (for scripts: `dir=$(gpu-lab run …)`),
/// and unless `--quiet`, its summary tables on stderr, where the progress bar was; returns the
/// exit code.
pub fn run(
    config: &Config,
    args: &SuiteArgs,
    profile: Option<ProfileRequest>,
    mock: &Mock,
    command_line: String,
) -> anyhow::Result<i32> {
    let both = profile
        .as_ref()
        .is_some_and(|p| p.profiler == profiler::ProfilerChoice::Both);
    run_with(config, args, profile, mock, command_line, &mut |dir| {
        println!("{}", dir.display());
        if !config.quiet {
            print_summary(dir, config.colour);
        }
        if both && let Err(e) = super::crosscheck::write_and_print(dir) {
            eprintln!("warning: no comparison of CUPTI with ncu: {e:#}");
        }
    })
}

/// The run's summary tables on stderr; a run that cannot be read back is named, not fatal (its
/// results are on disk and the report says the rest).
fn print_summary(dir: &Path, colour: bool) {
    match crate::store::load_run(dir) {
        Ok((data, _)) => eprint!("\n{}", crate::report::terminal::render(&data, colour)),
        Err(e) => eprintln!("warning: no summary of {}: {e:#}", dir.display()),
    }
}

/// As `run`, handing each finished run directory to `finished`. The GPUs of one model share
/// each suite's jobs (one run directory); GPUs of different models each run every job, side by
/// side (one run directory per model: `gpu-lab compare` puts them in one table).
pub fn run_with(
    config: &Config,
    args: &SuiteArgs,
    profile: Option<ProfileRequest>,
    mock: &Mock,
    command_line: String,
    finished: &mut (dyn FnMut(&Path) + Send),
) -> anyhow::Result<i32> {
    let suites = suite::load_named(&args.suite, &config.suite_search(&args.suite_dir)?)?;
    // Where the runs go, known before any GPU starts: no data directory fails here.
    config.runs_dir(args.out.as_deref())?;
    // Planned once, before any GPU starts (a typo in a variant name fails here); each model's
    // GPUs then screen their own copy of the plans against what their ncu can collect.
    let mut plans = scheduler::plan(&suites, &args.variant, profile.as_ref(), config.catalog()?)?;
    scheduler::keep_shapes(&mut plans, &args.shape)?;
    let shard = args.shard.map(|s| scheduler::keep_shard(&mut plans, s));
    let gpus = selected_gpus(args, mock)?;
    let executors = gpus
        .iter()
        .map(|&g| {
            executor(
                config,
                g,
                (
                    profile.as_ref().map(|p| p.profiler),
                    !args.sanitize.is_empty(),
                    args.child_per_job,
                ),
                mock,
            )
        })
        .collect::<anyhow::Result<Vec<_>>>()?;
    let models: Vec<String> = executors
        .iter()
        .map(|e| {
            let env = e.environment();
            env.device.map(|d| d.name).unwrap_or(env.label)
        })
        .collect();
    let finished = std::sync::Mutex::new(finished);
    let host = scheduler::HostShare::default();
    let run_pool = |pool: &[usize]| -> anyhow::Result<i32> {
        let lanes: Vec<&dyn Executor> = pool.iter().map(|&i| executors[i].as_ref()).collect();
        let mut plans = plans.clone();
        scheduler::screen(&mut plans, lanes[0])?;
        let settings = RunSettings {
            shard: shard.clone(),
            ..settings(config, args, profile.clone(), command_line.clone())?
        };
        scheduler::run_sharing(&lanes, &plans, &settings, &host, &mut |dir| {
            super::history::append_run(config, dir);
            (finished.lock().unwrap_or_else(|e| e.into_inner()))(dir)
        })
    };
    let pools = scheduler::pools_by_model(&models);
    let codes: Vec<anyhow::Result<i32>> = std::thread::scope(|s| {
        let handles: Vec<_> = pools
            .iter()
            .map(|pool| s.spawn(|| run_pool(pool)))
            .collect();
        handles
            .into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|_| Err(anyhow::anyhow!("the run of one GPU model panicked")))
            })
            .collect()
    });
    let mut code = exit::OK;
    for c in codes {
        code = code.max(c?);
    }
    Ok(code)
}
