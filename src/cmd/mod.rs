//! The command layer: one file per command family, the only users of `cli.rs`. Each turns its arguments and the `Config` into calls of the core and returns an exit code.

pub mod baseline;
pub mod check;
pub mod child;
pub mod compare;
pub mod crosscheck;
pub mod history;
pub mod import;
pub mod info;
pub mod install;
pub mod merge;
pub mod ncu;
pub mod provenance;
pub mod report;
pub mod run;

use crate::cli::{Cli, Command};
use crate::config::{Config, Environment};
use crate::profiler::hotspots::HotspotRequest;
use crate::scheduler::ProfileRequest;

/// Runs a parsed command line; returns the process exit code (`exit`).
pub fn dispatch(cli: Cli, command_line: String) -> anyhow::Result<i32> {
    if let Some(code) = without_config(&cli.command) {
        return code;
    }
    let mut config = Config::new(&Environment::current(), &cli.metrics_file, cli.quiet)?;
    config.colour = run::wants_colour(cli.color);
    let mock = run::Mock {
        on: cli.mock_gpu,
        slowdown: cli.mock_slow.into_iter().collect(),
        models: cli.mock_gpus,
    };
    match cli.command {
        Command::Devices => info::devices(&config),
        Command::Doctor => info::doctor(&config),
        Command::List {
            what,
            suite_dir,
            suite,
        } => info::list(&config, what, &suite_dir, &suite),
        Command::Run(args) => run::run(&config, &args, None, &mock, command_line),
        Command::Merge { runs, out } => merge::merge(&config, &runs, out.as_deref()),
        Command::Plan {
            suite,
            variant,
            suite_dir,
            shards,
        } => run::plan(&config, &suite, &variant, &suite_dir, shards as usize),
        Command::Profile {
            suite,
            set,
            metrics,
            clock_control,
            duration_runs,
            profiler,
            hotspots,
            counters_only,
        } => {
            let names = set.into_iter().chain(metrics).collect();
            run::run(
                &config,
                &suite,
                Some(ProfileRequest {
                    names,
                    clock_control,
                    duration_runs,
                    profiler,
                    hotspots: hotspots.map(HotspotRequest::new),
                    counters_only,
                }),
                &mock,
                command_line,
            )
        }
        Command::Report { run, format, write } => {
            report::report(&resolve_run(&config, &run)?, format, write)
        }
        Command::Baseline { action } => baseline::baseline(&config, action),
        Command::History(args) => history::history(&config, &args),
        Command::Check(mut args) => {
            args.from = args.from.map(|f| resolve_run(&config, &f)).transpose()?;
            check::check(&config, &args, &mock, command_line)
        }
        Command::Compare { runs, format } => {
            let runs = runs
                .iter()
                .map(|r| resolve_run(&config, r))
                .collect::<anyhow::Result<Vec<_>>>()?;
            compare::compare(&config, &runs, format)
        }
        Command::Ncu(args) => ncu::ncu(&config, &args),
        Command::Import(args) => import::import(&config, &args),
        Command::Child(_) | Command::Completions { .. } | Command::Man => {
            unreachable!("children, completions and man are served above")
        }
    }
}

/// The hidden children (told everything they need on their own command line), completions and
/// the man page: served before any configuration is read.
fn without_config(command: &Command) -> Option<anyhow::Result<i32>> {
    Some(match command {
        Command::Child(command) => child::serve(command),
        Command::Completions { shell } => install::completions(*shell),
        Command::Man => install::man(),
        _ => return None,
    })
}

/// A run directory as the command line names it: a path, or `last` (where no such path exists)
/// for the newest run of the data directory's `runs/`.
fn resolve_run(config: &Config, run: &std::path::Path) -> anyhow::Result<std::path::PathBuf> {
    if run != std::path::Path::new("last") || run.exists() {
        return Ok(run.to_path_buf());
    }
    let newest = crate::store::baseline::newest_run(&config.runs_dir(None)?)?;
    if !config.quiet {
        eprintln!("last: {}", newest.display());
    }
    Ok(newest)
}
