//! `gpu-lab check`: judge a run against a baseline (a stored run, or the suite run now) and exit 3 on a regression.

use std::path::{Path, PathBuf};

use anyhow::{Context, bail};

use super::run::{self, Mock};
use crate::cli::{CheckArgs, SuiteArgs};
use crate::compare::{self, Comparison, Settings, counters};
use crate::config::Config;
use crate::exit;
use crate::metrics::MetricDef;
use crate::profiler::ClockControl;
use crate::records::{DURATION_RUNS, RunData};
use crate::scheduler::ProfileRequest;
use crate::store::{self, baseline};

/// A stored run with at least one job; warnings about unreadable records go to stderr.
pub fn load_run(dir: &Path) -> anyhow::Result<RunData> {
    let (run, warnings) = store::load_run(dir)?;
    for w in warnings {
        eprintln!("warning: {w}");
    }
    if run.jobs.is_empty() {
        bail!(
            "{} holds no job results\n  fix: pick a run that measured at least one job",
            dir.display()
        );
    }
    Ok(run)
}

/// Runs the baseline's suite now: profiled with the baseline's metrics when it has counters.
fn run_suite(
    config: &Config,
    args: &SuiteArgs,
    base: &RunData,
    no_profile: bool,
    mock: &Mock,
    command_line: String,
) -> anyhow::Result<PathBuf> {
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
        let catalog = config.catalog()?;
        let (known, unknown): (Vec<String>, Vec<String>) = base
            .info
            .metrics
            .iter()
            .map(|m| m.name.clone())
            .partition(|n| catalog.resolve(std::slice::from_ref(n)).is_ok());
        if !unknown.is_empty() {
            eprintln!(
                "warning: the baseline's metrics {} are not defined here and are not collected",
                unknown.join(", ")
            );
        }
        // Durations are never judged as counters (the timing verdict covers time), so the
        // duration's own session keeps its default whatever the baseline used.
        Some(ProfileRequest {
            names: known,
            clock_control: ClockControl::from_policy(&base.info.clock_policy),
            duration_runs: DURATION_RUNS,
            // CUPTI's counters are ncu's (the same Perfworks names); a pass it cannot collect
            // goes to ncu.
            profiler: crate::profiler::ProfilerChoice::default(),
            hotspots: None,
            counters_only: false,
        })
    } else {
        None
    };
    // Timed in the baseline's L2 state unless the command line says otherwise.
    let args = SuiteArgs {
        cache: args.cache.or(Some(base.info.timing.cache)),
        ..args.clone()
    };
    let mut dirs = Vec::new();
    run::run_with(config, &args, profile, mock, command_line, &mut |d| {
        dirs.push(d.to_path_buf())
    })?;
    dirs.pop()
        .context("the suite ran no job (are the --variant names right?)")
}

fn settings(args: &CheckArgs, relative_to_copy: bool) -> Settings {
    Settings {
        noise_threshold: args.noise_threshold / 100.0,
        noise_floor_ms: args.noise_floor_us / 1000.0,
        normalize: args.normalize,
        relative_to_copy,
        ..Settings::default()
    }
}

/// Why a mock run and a measured one cannot be judged against each other.
fn mixed_mock(baseline: &str, baseline_is_mock: bool) -> String {
    let (mocked, measured) = if baseline_is_mock {
        (format!("the baseline {baseline}"), "this run")
    } else {
        ("this run".to_string(), "the baseline")
    };
    format!(
        "{mocked} is a MOCK run (stand-in numbers) and {measured} is measured: they cannot be judged against each other"
    )
}

/// The definitions of the metrics the two runs hold: as they stored them, else as defined here.
pub fn definitions(
    config: &Config,
    base: &RunData,
    new: &RunData,
) -> anyhow::Result<Vec<MetricDef>> {
    Ok(counters::definitions(
        &[&new.info.metrics, &base.info.metrics],
        &config.catalog()?.metrics,
    ))
}

fn other_gpu_error(baseline: &Path, (a, b): (String, String)) -> anyhow::Error {
    anyhow::anyhow!(
        "the baseline {} was taken on an {a}, this run is on an {b}: their times do not compare\n  fix: check against a baseline from an {b}, or pass --allow-other-gpu to compare each job's % of the copy bound measured in its own run",
        baseline.display()
    )
}

/// The comparison in `format`, with the extension a file of it takes.
pub fn render(c: &Comparison, format: compare::Format) -> anyhow::Result<(String, &'static str)> {
    let e = compare::exporter(format);
    Ok((e.render(c)?, e.file_name()))
}

/// What a run is judged against: the baseline run, where it came from (for messages), its
/// label in the verdicts and the name its verdicts are saved under beside the run.
struct Against {
    base: RunData,
    origin: PathBuf,
    label: String,
    name: String,
}

/// `gpu-lab check`: the run (stored, or the suite run now) judged against the baseline; exit 3 on a regression.
pub fn check(
    config: &Config,
    args: &CheckArgs,
    mock: &Mock,
    command_line: String,
) -> anyhow::Result<i32> {
    if let Some(k) = super::history::last_k(&args.baseline)? {
        return check_last(config, args, k, mock, command_line);
    }
    let path = baseline::resolve(&args.baseline_dir, &args.baseline);
    let stored = baseline::load(&path)?;
    let base = stored.to_run();
    let run_dir = run_to_check(config, args, &path, &base, mock, command_line)?;
    let against = Against {
        base,
        origin: path,
        label: format!("baseline {} (from {})", stored.name, stored.source_run),
        name: stored.name,
    };
    judge(config, args, &against, &run_dir)
}

/// `check --baseline last:K`: the run (stored, or the suite run now and appended to the
/// history) judged against the last K runs of its suite and fingerprint in the history.
fn check_last(
    config: &Config,
    args: &CheckArgs,
    k: usize,
    mock: &Mock,
    command_line: String,
) -> anyhow::Result<i32> {
    let run_dir = match (&args.from, &args.run) {
        (Some(from), _) => from.clone(),
        (None, Some(suite)) => {
            if suite.suite.len() != 1 {
                bail!(
                    "--baseline last:K judges one suite; `--suite {}` names {}\n  fix: pass one suite",
                    suite.suite.join(","),
                    suite.suite.len()
                );
            }
            let mut dirs = Vec::new();
            run::run_with(config, suite, None, mock, command_line, &mut |d| {
                dirs.push(d.to_path_buf())
            })?;
            let dir = dirs
                .pop()
                .context("the suite ran no job (are the --variant names right?)")?;
            eprintln!("run: {}", dir.display());
            dir
        }
        (None, None) => bail!(
            "nothing to check\n  fix: pass --from RUN (a stored run) or --suite S (run it now)"
        ),
    };
    let new = load_run(&run_dir)?;
    let (base, label) = super::history::last_runs_baseline(config, k, &run_dir, &new)?;
    let against = Against {
        base,
        origin: config.history_dir()?,
        label,
        name: format!("last-{k}"),
    };
    judge(config, args, &against, &run_dir)
}

/// The run in `run_dir` judged against `against`: the verdicts printed and saved beside the
/// run; exit 3 on a regression or an unfinished run.
fn judge(
    config: &Config,
    args: &CheckArgs,
    against: &Against,
    run_dir: &Path,
) -> anyhow::Result<i32> {
    let (path, base) = (&against.origin, &against.base);
    let new = load_run(run_dir)?;
    let unfinished = new.info.finished.is_none();
    if unfinished {
        eprintln!(
            "error: {} did not finish (no end time in run.json: killed, or a merge that is not complete): it cannot pass the gate, and every baseline job it lacks counts as Regressed\n  fix: run the suite again (or merge every shard) and check the finished run",
            run_dir.display()
        );
    }
    refuse_incomparable(args, path, base, run_dir, &new)?;
    let other = compare::other_gpu(base, &new);
    if let Some(models) = other.clone()
        && !args.allow_other_gpu
    {
        return Err(other_gpu_error(path, models));
    }
    let defs = definitions(config, base, &new)?;
    let c = compare::compare(
        base,
        &against.label,
        &new,
        &run_dir.display().to_string(),
        &defs,
        &settings(args, other.is_some()),
        true,
    );
    let (text, ext) = render(&c, args.format)?;
    print!("{text}");
    let beside = run_dir.join(format!("check-{}.{ext}", against.name));
    match store::write_atomic(&beside, text.as_bytes()) {
        Ok(()) if !config.quiet => eprintln!("verdicts saved: {}", beside.display()),
        Ok(()) => {}
        Err(e) => eprintln!(
            "warning: could not save the verdicts beside the run ({}: {e}); they are on stdout above",
            beside.display()
        ),
    }
    // A run that stopped early never passes, even holding every baseline job: what it lacks
    // (rounds, records after the last job) is not known.
    Ok(if c.regressed() || unfinished {
        exit::REGRESSION
    } else {
        exit::OK
    })
}

/// The run to judge: `--from`'s, or the baseline's suite run now (after refusing, before any
/// running, a mock run against a measured baseline or the other way round, and another GPU).
fn run_to_check(
    config: &Config,
    args: &CheckArgs,
    path: &Path,
    base: &RunData,
    mock: &Mock,
    command_line: String,
) -> anyhow::Result<PathBuf> {
    match (&args.from, &args.run) {
        (Some(from), _) => Ok(from.clone()),
        (None, Some(suite)) => {
            // Stand-ins and measurements never meet: refused before minutes of running, not after.
            if base.info.mock != mock.on {
                bail!(
                    "{}\n  fix: check a GPU run against a GPU baseline (mock runs only test gpu-lab itself)",
                    mixed_mock(&path.display().to_string(), base.info.mock)
                );
            }
            // A different GPU is refused before minutes of measuring, not after.
            let here = if mock.on {
                None
            } else {
                crate::device::NvmlSession::open().info(suite.gpu).ok()
            };
            if let (Some(b), Some(h)) = (&base.info.device, here)
                && b.name != h.name
                && !args.allow_other_gpu
            {
                return Err(other_gpu_error(path, (b.name.clone(), h.name)));
            }
            let dir = run_suite(config, suite, base, args.no_profile, mock, command_line)?;
            eprintln!("run: {}", dir.display());
            Ok(dir)
        }
        (None, None) => bail!(
            "nothing to check\n  fix: pass --from RUN (a stored run) or --suite S (run it now)"
        ),
    }
}

/// Refuses a run that cannot be judged against the baseline: another suite, a mock run beside a
/// measured one, or another L2 state (unless allowed).
fn refuse_incomparable(
    args: &CheckArgs,
    path: &Path,
    base: &RunData,
    run_dir: &Path,
    new: &RunData,
) -> anyhow::Result<()> {
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
    if base.info.mock != new.info.mock {
        bail!(
            "{}\n  fix: check a GPU run against a GPU baseline (mock runs only test gpu-lab itself)",
            mixed_mock(&path.display().to_string(), base.info.mock)
        );
    }
    let (was, now) = (base.info.timing.cache, new.info.timing.cache);
    if was != now && !args.allow_cache_mismatch {
        bail!(
            "the baseline {} was timed with the L2 {was:?} and {} with it {now:?}: their times do not compare\n  fix: run the suite with --cache {} (check --suite does so by itself), or pass --allow-cache-mismatch to compare anyway",
            path.display(),
            run_dir.display(),
            format!("{was:?}").to_lowercase()
        );
    }
    Ok(())
}
