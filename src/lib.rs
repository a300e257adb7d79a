//! gpu-lab: compare CUDA kernel variants — check, time, profile with Nsight Compute, report.

pub mod baseline;
pub mod build;
pub mod check;
pub mod child;
pub mod cli;
pub mod commands;
pub mod compare;
pub mod device;
pub mod expr;
pub mod external;
pub mod metrics;
pub mod model;
pub mod parse;
pub mod profiler;
pub mod report;
pub mod runner;
pub mod scheduler;
pub mod stats;
pub mod store;
pub mod suite;

use cli::{Cli, Command};

/// Runs a parsed command line; returns the process exit code (see `gpu-lab --help`).
pub fn run(cli: Cli, command_line: String) -> anyhow::Result<i32> {
    match cli.command {
        Command::Devices => commands::devices(),
        Command::Doctor => commands::doctor(),
        Command::List { what, suite_dir } => commands::list(&what, &suite_dir, &cli.metrics_file),
        Command::Run(args) => scheduler::execute(&args, None, cli.quiet, command_line),
        Command::Profile { suite, set, metrics, clock_control } => {
            scheduler::execute(&suite, Some(scheduler::ProfileOptions { set, metrics_files: cli.metrics_file, metrics, clock_control }), cli.quiet, command_line)
        }
        Command::Report { run, format, write } => commands::report(&run, &format, write),
        Command::Baseline { action } => check::baseline(action),
        Command::Check(args) => check::check(&args, &cli.metrics_file, cli.quiet, command_line),
        Command::Compare { run_a, run_b, format } => check::compare_runs(&run_a, &run_b, &format, &cli.metrics_file),
        Command::Ncu(args) => external::ncu(&args, &cli.metrics_file, cli.quiet),
        Command::Import(args) => external::import(&args, &cli.metrics_file),
        Command::Job { spec, out, gpu, seed } => child::job(&spec, &out, gpu, seed).map(|_| 0),
        Command::ProfilePass { specs, gpu, seed } => child::profile_pass(&specs, gpu, seed).map(|_| 0),
        Command::Bounds { bytes, out, gpu, timing } => child::bounds(bytes, &out, gpu, &timing).map(|_| 0),
    }
}
