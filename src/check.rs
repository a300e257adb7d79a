//! The regression commands: `baseline save|list`, `check` (exit 3 on a regression) and `compare`; disk and scheduler on one side, `compare::` verdicts on the other.

use std::path::{Path, PathBuf};

use anyhow::{bail, Context};

use crate::baseline::{self, Baseline};
use crate::cli::{BaselineAction, CheckArgs, SuiteArgs};
use crate::compare::{self, clocks::Normalize, counters, Comparison, Settings};
use crate::model::{JobStatus, RunData};
use crate::scheduler::{self, ProfileOptions};
use crate::store;

/// Exit code of `check` when a job regressed (documented in `gpu-lab --help`).
pub const EXIT_REGRESSED: i32 = 3;

fn load_run(dir: &Path) -> anyhow::Result<RunData> {
    let (run, warnings) = store::load_run(dir)?;
    for w in warnings {
        eprintln!("warning: {w}");
    }
    if run.jobs.is_empty() {
        bail!("{} holds no job results\n  fix: pick a run that measured at least one job", dir.display());
    }
    Ok(run)
}

pub fn baseline(action: BaselineAction) -> anyhow::Result<i32> {
    match action {
        BaselineAction::Save { name, from, runs, force, dir } => save(&name, from, &runs, force, &dir),
        BaselineAction::List { dir } => list(&dir),
    }
}

fn save(name: &str, from: Option<PathBuf>, runs: &Path, force: bool, dir: &Path) -> anyhow::Result<i32> {
    baseline::validate_name(name)?;
    let from = match from {
        Some(f) => f,
        None => {
            let newest = baseline::newest_run(runs)?;
            eprintln!("no --from: taking the newest run, {}", newest.display());
            newest
        }
    };
    let run = load_run(&from)?;
    if run.info.finished.is_none() {
        eprintln!("warning: {} did not finish (no end time in run.json): only the jobs it recorded are stored", from.display());
    }
    let not_ok = run.jobs.iter().filter(|j| j.status != JobStatus::Ok).count();
    if not_ok > 0 {
        eprintln!("warning: {not_ok} jobs of this run are not correct: they are stored as recorded, but a job is timed against the baseline only where it was correct in both runs");
    }
    let saved = chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true);
    let b = Baseline::from_run(name, &from.display().to_string(), &run, saved);
    let path = baseline::save(dir, &b, force)?;
    println!(
        "saved {} from {}: suite {}, {} jobs, {}",
        path.display(),
        from.display(),
        b.run.suite,
        b.jobs.len(),
        b.fingerprint.gpu.as_deref().unwrap_or("unknown GPU")
    );
    Ok(0)
}

fn list(dir: &Path) -> anyhow::Result<i32> {
    let found = baseline::list(dir)?;
    if found.is_empty() {
        println!("no baselines in {} (`gpu-lab baseline save NAME` stores one)", dir.display());
        return Ok(0);
    }
    let mut rows: Vec<Vec<String>> = vec![["name", "suite", "GPU", "jobs", "counters", "saved", "from run", "suite sha256"].map(String::from).to_vec()];
    for (path, loaded) in &found {
        rows.push(match loaded {
            Ok(x) => vec![
                x.name.clone(),
                x.run.suite.clone(),
                x.fingerprint.gpu.clone().unwrap_or_else(|| "unknown".into()),
                x.jobs.len().to_string(),
                if x.jobs.iter().any(|j| j.profile.is_some()) { "yes".into() } else { "no".into() },
                x.saved.clone(),
                x.source_run.clone(),
                x.run.suite_source_hash.chars().take(12).collect(),
            ],
            Err(e) => vec![path.display().to_string(), format!("unreadable: {}", format!("{e}").lines().next().unwrap_or(""))],
        });
    }
    println!("{}", crate::report::markdown::table(rows));
    Ok(0)
}

/// Runs the baseline's suite now: profiled with the baseline's metrics when it has counters.
fn run_suite(args: &SuiteArgs, base: &RunData, no_profile: bool, metrics_files: &[PathBuf], quiet: bool, command_line: String) -> anyhow::Result<PathBuf> {
    if args.suite.len() != 1 || args.suite[0] != base.info.suite {
        bail!(
            "the baseline holds suite `{}`; `--suite {}` cannot be checked against it\n  fix: pass --suite {}",
            base.info.suite,
            args.suite.join(","),
            base.info.suite
        );
    }
    let has_counters = base.profiles.values().any(|p| !p.metrics.is_empty());
    let profile = if has_counters && !no_profile {
        let catalog = scheduler::catalog(metrics_files)?;
        let (known, unknown): (Vec<String>, Vec<String>) = base.info.metrics.iter().map(|m| m.name.clone()).partition(|n| catalog.resolve(std::slice::from_ref(n)).is_ok());
        if !unknown.is_empty() {
            eprintln!("warning: the baseline's metrics {} are not defined here and are not collected", unknown.join(", "));
        }
        let clock_control = if base.info.clock_policy == "base" { "base" } else { "none" };
        Some(ProfileOptions { set: None, metrics_files: metrics_files.to_vec(), metrics: known, clock_control: clock_control.into() })
    } else {
        None
    };
    let mut dirs = Vec::new();
    scheduler::execute_with(args, profile, quiet, command_line, &mut |d| dirs.push(d.to_path_buf()))?;
    dirs.pop().context("the suite ran no job (are the --variant names right?)")
}

fn settings(args: &CheckArgs, relative_to_copy: bool) -> Settings {
    Settings {
        noise_threshold: args.noise_threshold / 100.0,
        noise_floor_ms: args.noise_floor_us / 1000.0,
        // clap allows only the four names Normalize::parse knows.
        normalize: Normalize::parse(&args.normalize).unwrap_or(Normalize::Auto),
        relative_to_copy,
        ..Settings::default()
    }
}

fn definitions(base: &RunData, new: &RunData, metrics_files: &[PathBuf]) -> anyhow::Result<Vec<crate::metrics::MetricDef>> {
    let catalog = scheduler::catalog(metrics_files)?;
    Ok(counters::definitions(&[&new.info.metrics, &base.info.metrics], &catalog.metrics))
}

fn other_gpu_error(baseline: &Path, (a, b): (String, String)) -> anyhow::Error {
    anyhow::anyhow!(
        "the baseline {} was taken on an {a}, this run is on an {b}: their times do not compare\n  fix: check against a baseline from an {b}, or pass --allow-other-gpu to compare each job's % of the copy bound measured in its own run",
        baseline.display()
    )
}

fn render(c: &Comparison, format: &str, verdicts: bool) -> anyhow::Result<(String, &'static str)> {
    let e = compare::exporter(format)?;
    Ok((e.render(c, verdicts)?, e.extension()))
}

pub fn check(args: &CheckArgs, metrics_files: &[PathBuf], quiet: bool, command_line: String) -> anyhow::Result<i32> {
    let path = baseline::resolve(&args.baseline_dir, &args.baseline);
    let stored = baseline::load(&path)?;
    let base = stored.to_run();
    let run_dir = match (&args.from, &args.run) {
        (Some(from), _) => from.clone(),
        (None, Some(suite)) => {
            // A different GPU is refused before minutes of measuring, not after.
            let here = crate::device::NvmlSession::open().info(suite.gpu).ok();
            if let (Some(b), Some(h)) = (&base.info.device, here)
                && b.name != h.name
                && !args.allow_other_gpu
            {
                return Err(other_gpu_error(&path, (b.name.clone(), h.name)));
            }
            let dir = run_suite(suite, &base, args.no_profile, metrics_files, quiet, command_line)?;
            eprintln!("run: {}", dir.display());
            dir
        }
        (None, None) => bail!("nothing to check\n  fix: pass --from RUN (a stored run) or --suite S (run it now)"),
    };
    let new = load_run(&run_dir)?;
    if new.info.finished.is_none() {
        eprintln!("warning: {} did not finish (no end time in run.json): every baseline job it lacks counts as Regressed", run_dir.display());
    }
    if new.info.suite != base.info.suite {
        bail!(
            "the baseline {} holds suite `{}` but {} is a run of `{}`\n  fix: check a run of `{}`, or use a baseline of `{}`",
            path.display(),
            base.info.suite,
            run_dir.display(),
            new.info.suite,
            base.info.suite,
            new.info.suite
        );
    }
    let other = compare::other_gpu(&base, &new);
    if let Some(models) = other.clone()
        && !args.allow_other_gpu
    {
        return Err(other_gpu_error(&path, models));
    }
    let defs = definitions(&base, &new, metrics_files)?;
    let label = format!("baseline {} (from {})", stored.name, stored.source_run);
    let c = compare::compare(&base, &label, &new, &run_dir.display().to_string(), &defs, &settings(args, other.is_some()));
    let (text, ext) = render(&c, &args.format, true)?;
    print!("{text}");
    let beside = run_dir.join(format!("check-{}.{ext}", stored.name));
    match store::write_atomic(&beside, text.as_bytes()) {
        Ok(()) if !quiet => eprintln!("verdicts saved: {}", beside.display()),
        Ok(()) => {}
        Err(e) => eprintln!("warning: could not save the verdicts beside the run ({}: {e}); they are on stdout above", beside.display()),
    }
    Ok(if c.regressed() { EXIT_REGRESSED } else { 0 })
}

pub fn compare_runs(a: &Path, b: &Path, format: &str, metrics_files: &[PathBuf]) -> anyhow::Result<i32> {
    let (base, new) = (load_run(a)?, load_run(b)?);
    let defs = definitions(&base, &new, metrics_files)?;
    // As measured: no clock normalisation, plain times; % of copy shows the cross-GPU view beside them.
    let s = Settings { normalize: Normalize::None, ..Settings::default() };
    let c = compare::compare(&base, &a.display().to_string(), &new, &b.display().to_string(), &defs, &s);
    print!("{}", render(&c, format, false)?.0);
    Ok(0)
}
