//! The hidden child commands the executor starts: each opens the GPU itself, so a fault or hang costs only that child.

use std::path::Path;

use anyhow::Context;

use crate::cli::{ChildArgs, ChildCommand};
use crate::executor::job_server;
use crate::exit;
use crate::records::{BoundSpec, Math, TimingConfig};
use crate::runner::{self, Gpu};
use crate::store::{FileKind, read_regular_text, write_json};
use crate::suite::JobSpec;

/// Runs the child the command line names; returns its exit code.
pub fn serve(command: &ChildCommand) -> anyhow::Result<i32> {
    match command {
        ChildCommand::Job {
            spec,
            out,
            child,
            seed,
        } => job(spec, out, child, *seed),
        ChildCommand::Jobs { child } => jobs(child),
        ChildCommand::Build { specs, child } => {
            let specs: Vec<JobSpec> = read_json(specs)?;
            let built = runner::prebuild(&open(child)?, &specs);
            eprintln!("compiled {} programs ahead of their jobs", built);
            Ok(exit::OK)
        }
        ChildCommand::ProfilePass {
            specs,
            child,
            seed,
            profiled_runs,
            progress,
        } => profile_pass(specs, child, *seed, *profiled_runs, progress.as_deref()),
        ChildCommand::CuptiPass {
            specs,
            counters,
            out,
            child,
            seed,
        } => cupti_pass(specs, counters, out, child, *seed),
        ChildCommand::Bounds {
            bytes,
            out,
            child,
            timing,
            fma,
            host_link,
        } => bounds(&open(child)?, (*bytes, *fma, *host_link), out, timing).map(|()| exit::OK),
        ChildCommand::ComputeBound {
            bound,
            out,
            child,
            timing,
        } => compute_bound(&open(child)?, bound, out, timing).map(|()| exit::OK),
        ChildCommand::Roofs {
            math,
            out,
            child,
            timing,
        } => roofs(&open(child)?, math, out, timing).map(|()| exit::OK),
    }
}

fn read_json<T: serde::de::DeserializeOwned>(path: &Path) -> anyhow::Result<T> {
    let text = read_regular_text(path, FileKind::CHILD_MESSAGE)
        .with_context(|| format!("reading {}", path.display()))?;
    serde_json::from_str(&text).with_context(|| format!("parsing {}", path.display()))
}

fn open(child: &ChildArgs) -> anyhow::Result<Gpu> {
    Ok(Gpu::open(
        child.gpu,
        child.cache.clone(),
        crate::config::toolkit(&crate::config::Environment::current()),
    )?)
}

fn job(spec: &Path, out: &Path, child: &ChildArgs, seed: u64) -> anyhow::Result<i32> {
    run_one(&open(child)?, spec, out, seed)?;
    Ok(exit::OK)
}

fn run_one(gpu: &Gpu, spec: &Path, out: &Path, seed: u64) -> anyhow::Result<()> {
    let (spec, timing): (JobSpec, TimingConfig) = read_json(spec)?;
    let outcome = runner::run_job(gpu, &spec, &timing, seed)?;
    write_json(out, &outcome)
}

/// Serves jobs and CUPTI passes asked for on stdin, one line each, on one GPU context: after
/// each, the reply line on stdout. The first request that fails ends the child with its error
/// (its context may be broken); the parent starts another for the next request.
fn jobs(child: &ChildArgs) -> anyhow::Result<i32> {
    use std::io::{BufRead, Write};
    let gpu = open(child)?;
    for line in std::io::stdin().lock().lines() {
        let line = line.context("reading the next request")?;
        let request: job_server::Request =
            serde_json::from_str(&line).with_context(|| format!("parsing the request {line:?}"))?;
        serve_one(&gpu, &request)?;
        let mut stdout = std::io::stdout().lock();
        writeln!(stdout, "{}", job_server::REPLY).and_then(|_| stdout.flush())?;
    }
    Ok(exit::OK)
}

/// One request of the serving child, on its GPU.
fn serve_one(gpu: &Gpu, request: &job_server::Request) -> anyhow::Result<()> {
    use job_server::Request as R;
    match request {
        R::Job(job) => run_one(gpu, &job.spec, &job.out, job.seed),
        R::CuptiPass(p) => collect_counters(gpu, &p.specs, &p.counters, &p.out, p.seed),
        R::Bounds {
            bytes,
            out,
            timing,
            fma,
            host_link,
        } => bounds(gpu, (*bytes, *fma, *host_link), out, timing),
        R::ComputeBound { bound, out, timing } => compute_bound(gpu, bound, out, timing),
        R::Roofs { math, out, timing } => roofs(gpu, math, out, timing),
    }
}

/// Launches each job once (and `profiled_runs` more times in a profiler range); with `progress`,
/// the count of jobs finished is written there after each.
fn profile_pass(
    specs: &Path,
    child: &ChildArgs,
    seed: u64,
    profiled_runs: u32,
    progress: Option<&Path>,
) -> anyhow::Result<i32> {
    let specs: Vec<JobSpec> = read_json(specs)?;
    let mut unwritten: Option<anyhow::Error> = None;
    let mut finished = |done: usize| {
        if let Some(p) = progress.filter(|_| unwritten.is_none()) {
            unwritten = write_json(p, &done).err();
        }
    };
    runner::run_profile_pass(&open(child)?, &specs, seed, profiled_runs, &mut finished)?;
    // A parent that cannot read how far the child got sanitizes every job again on its own.
    if let Some(e) = unwritten {
        return Err(e.context("writing the progress file"));
    }
    Ok(exit::OK)
}

/// Collects the counters named in `counters` (a JSON list) for every job, in process.
fn cupti_pass(
    specs: &Path,
    counters: &Path,
    out: &Path,
    child: &ChildArgs,
    seed: u64,
) -> anyhow::Result<i32> {
    collect_counters(&open(child)?, specs, counters, out, seed)?;
    Ok(exit::OK)
}

fn collect_counters(
    gpu: &Gpu,
    specs: &Path,
    counters: &Path,
    out: &Path,
    seed: u64,
) -> anyhow::Result<()> {
    let specs: Vec<JobSpec> = read_json(specs)?;
    let counters: Vec<String> = read_json(counters)?;
    let per_pass = crate::config::cupti_jobs_per_pass(&crate::config::Environment::current())?;
    write_json(
        out,
        &runner::run_cupti_pass(gpu, &specs, seed, &counters, per_pass)?,
    )
}

fn bounds(
    gpu: &Gpu,
    (bytes, fma, host_link): (u64, bool, bool),
    out: &Path,
    timing: &Path,
) -> anyhow::Result<()> {
    let timing: TimingConfig = read_json(timing)?;
    let outcome = runner::run_bounds(gpu, bytes, &timing, fma, host_link)?;
    write_json(out, &outcome)
}

fn compute_bound(gpu: &Gpu, bound: &Path, out: &Path, timing: &Path) -> anyhow::Result<()> {
    let (bound, timing): (BoundSpec, TimingConfig) = (read_json(bound)?, read_json(timing)?);
    write_json(out, &runner::run_gemm_bound(gpu, &bound, &timing)?)
}

/// Measures one math's roofs (library GEMM and peak kernel); each roof carries its own error.
fn roofs(gpu: &Gpu, math: &str, out: &Path, timing: &Path) -> anyhow::Result<()> {
    let math = Math::parse(math).map_err(anyhow::Error::msg)?;
    let timing: TimingConfig = read_json(timing)?;
    write_json(out, &runner::run_roofs(gpu, math, &timing))
}

#[cfg(test)]
mod tests {
    use crate::cli::{ChildCommand, Cli, Command};
    use crate::executor::job_server::Request;
    use crate::executor::job_server::{CuptiRequest, JobRequest};
    use crate::executor::protocol::own_child;
    use clap::Parser;
    use std::ffi::OsString;
    use std::path::PathBuf;

    /// What a child of its own would parse from `own_child`'s arguments (the serving child's
    /// requests and `--child-per-job`'s children must mean the same).
    fn parsed(request: &Request) -> ChildCommand {
        let (subcommand, args) = own_child(request);
        let line = [
            "gpu-lab".into(),
            subcommand.into(),
            "--gpu".into(),
            "0".into(),
        ]
        .into_iter()
        .chain(args)
        .collect::<Vec<OsString>>();
        match Cli::try_parse_from(line).map(|c| c.command) {
            Ok(Command::Child(child)) => child,
            other => panic!("{request:?} parsed as {other:?}"),
        }
    }

    #[test]
    fn every_request_is_what_a_child_of_its_own_parses_from_its_arguments() {
        let p = |s: &str| PathBuf::from(format!("/w/{s}"));
        let job = Request::Job(JobRequest {
            spec: p("s.json"),
            out: p("o.json"),
            seed: 9,
        });
        assert!(matches!(parsed(&job),
            ChildCommand::Job { spec, out, seed: 9, .. } if spec == p("s.json") && out == p("o.json")));
        let pass = Request::CuptiPass(CuptiRequest {
            specs: p("specs"),
            counters: p("c"),
            out: p("o"),
            seed: 3,
        });
        assert!(matches!(parsed(&pass),
            ChildCommand::CuptiPass { specs, counters, seed: 3, .. } if specs == p("specs") && counters == p("c")));
        let bounds = Request::Bounds {
            bytes: 64,
            out: p("o"),
            timing: p("t"),
            fma: true,
            host_link: false,
        };
        assert!(matches!(parsed(&bounds),
            ChildCommand::Bounds { bytes: 64, fma: true, host_link: false, timing, .. } if timing == p("t")));
        let gemm = Request::ComputeBound {
            bound: p("b"),
            out: p("o"),
            timing: p("t"),
        };
        assert!(
            matches!(parsed(&gemm), ChildCommand::ComputeBound { bound, .. } if bound == p("b"))
        );
        let roofs = Request::Roofs {
            math: "bf16-tensor".into(),
            out: p("o"),
            timing: p("t"),
        };
        assert!(
            matches!(parsed(&roofs), ChildCommand::Roofs { math, .. } if math == "bf16-tensor")
        );
    }
}
