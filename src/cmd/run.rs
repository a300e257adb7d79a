//! `gpu-lab run` and `gpu-lab profile` (also what `check --suite` runs): suites -> plans -> the executor -> run directories.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::cli::SuiteArgs;
use crate::config::Config;
use crate::exit;
use crate::executor::{ChildExecutor, Executor, MockExecutor};
use crate::profiler;
use crate::records::TimingConfig;
use crate::scheduler::{self, ProfileRequest, RunSettings};
use crate::suite;

/// The hidden `--mock-gpu` choice and its stand-in slowdowns.
#[derive(Debug, Clone, Default)]
pub struct Mock {
    pub on: bool,
    pub slowdown: BTreeMap<String, f64>,
}

/// The executor the command line asks for: the mock, or children on GPU `gpu` (with ncu when profiling).
pub fn executor(config: &Config, gpu: u32, profile: bool, mock: &Mock) -> anyhow::Result<Box<dyn Executor>> {
    if mock.on {
        return Ok(Box::new(MockExecutor { slowdown: mock.slowdown.clone() }));
    }
    let children = ChildExecutor::start(config.exe.clone(), gpu, config.cache_dir.clone())?;
    Ok(Box::new(if profile { children.with_ncu(profiler::find(&config.ncu)?) } else { children }))
}

pub fn settings(config: &Config, args: &SuiteArgs, profile: Option<ProfileRequest>, command_line: String) -> RunSettings {
    RunSettings {
        out: args.out.clone(),
        timing: TimingConfig { max_seconds: args.max_seconds, target_rel_ci: args.noise / 100.0, rounds: args.rounds, verify_every: args.verify_every, ..TimingConfig::default() },
        cache: args.cache,
        seed: args.seed,
        timeout: Duration::from_secs(args.timeout),
        profile,
        command_line,
        quiet: config.quiet,
        shard: None,
    }
}

/// Prints how the suites' jobs split into `shards`: what `run --shard I/N` will run.
pub fn plan(config: &Config, names: &[String], variants: &[String], suite_dirs: &[PathBuf], shards: usize) -> anyhow::Result<i32> {
    let suites = suite::load_named(names, &config.suite_search(suite_dirs))?;
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
    Ok(exit::OK)
}

/// Runs the suites and prints each run directory; returns the exit code.
pub fn run(config: &Config, args: &SuiteArgs, profile: Option<ProfileRequest>, mock: &Mock, command_line: String) -> anyhow::Result<i32> {
    run_with(config, args, profile, mock, command_line, &mut |dir| println!("{}", dir.display()))
}

/// As `run`, handing each finished run directory to `finished`.
pub fn run_with(config: &Config, args: &SuiteArgs, profile: Option<ProfileRequest>, mock: &Mock, command_line: String, finished: &mut dyn FnMut(&Path)) -> anyhow::Result<i32> {
    let suites = suite::load_named(&args.suite, &config.suite_search(&args.suite_dir))?;
    let mut plans = scheduler::plan(&suites, &args.variant, profile.as_ref(), config.catalog()?)?;
    let shard = args.shard.map(|s| scheduler::keep_shard(&mut plans, s));
    let executor = executor(config, args.gpu, profile.is_some(), mock)?;
    scheduler::screen(&mut plans, executor.as_ref())?;
    let settings = RunSettings { shard, ..settings(config, args, profile, command_line) };
    scheduler::run(executor.as_ref(), &plans, &settings, finished)
}
