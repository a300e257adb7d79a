//! `gpu-lab history` (the trend of a suite's jobs over the runs in the history), the append of every finished run to the history, and the baseline `check --baseline last:K` judges against.

use std::path::Path;

use anyhow::bail;

use crate::cli::HistoryArgs;
use crate::config::Config;
use crate::exit;
use crate::history::{self, EnvFingerprint, HistoryRow, Selection};
use crate::records::RunData;
use crate::store;

/// The most runs `last:K` may pool.
const MAX_LAST: usize = 1000;

/// A run's id in the history: its directory's name (unique under one runs directory).
pub fn run_id(dir: &Path) -> String {
    dir.file_name().map_or_else(
        || dir.display().to_string(),
        |n| n.to_string_lossy().into_owned(),
    )
}

/// Appends a finished run to the history; a run that cannot be appended is named on stderr and
/// the run itself stands (its directory holds everything). Shard runs are left to their merge.
pub fn append_run(config: &Config, dir: &Path) {
    let appended = config.history_dir().and_then(|root| {
        let (run, _) = store::load_run(dir)?;
        if run.info.shard.is_some() {
            return Ok(None);
        }
        store::history::append(&root, &history::rows_of(&run_id(dir), &run))
    });
    match appended {
        Ok(Some(file)) if !config.quiet => eprintln!("history: {}", file.display()),
        Ok(_) => {}
        Err(e) => eprintln!(
            "warning: {} was not added to the history: {e:#}",
            dir.display()
        ),
    }
}

/// A suite's history rows, warnings about skipped files printed.
fn load_rows(config: &Config, suite: &str) -> anyhow::Result<Vec<HistoryRow>> {
    let root = config.history_dir()?;
    let (rows, warnings) = store::history::load_suite(&root, suite)?;
    for w in warnings {
        eprintln!("warning: {w}");
    }
    Ok(rows)
}

/// `gpu-lab history`: prints the trends of one suite on one fingerprint.
pub fn history(config: &Config, args: &HistoryArgs) -> anyhow::Result<i32> {
    let rows = load_rows(config, &args.suite)?;
    let known = history::fingerprints(&rows);
    let Some((newest, _, _)) = known.first() else {
        bail!(
            "the history holds no run of suite `{}` (under {})\n  fix: run it first (`gpu-lab run --suite {}`); runs made with --out and no data directory are not in the history",
            args.suite.escape_debug(),
            config.history_dir()?.display(),
            args.suite.escape_debug()
        );
    };
    let fingerprint = args.fingerprint.as_deref().unwrap_or(newest);
    if !known.iter().any(|(k, _, _)| k == fingerprint) {
        bail!(
            "the history of `{}` holds no run of fingerprint `{}`\n  fix: pass one of: {}",
            args.suite.escape_debug(),
            fingerprint.escape_debug(),
            known
                .iter()
                .map(|(k, env, n)| format!("{k} ({env}, {n} runs)"))
                .collect::<Vec<_>>()
                .join("; ")
        );
    }
    for (k, env, n) in known.iter().filter(|(k, _, _)| k != fingerprint) {
        eprintln!("note: {n} other runs on fingerprint {k} ({env}): --fingerprint {k}");
    }
    let trends = history::trends(
        &rows,
        &Selection {
            fingerprint,
            measure: args.measure,
            variants: &args.variant,
            since: args.since.as_deref(),
        },
    );
    if trends.runs.is_empty() {
        bail!(
            "no run of `{}` on fingerprint {fingerprint} matches --variant/--since/--measure\n  fix: widen them (`gpu-lab history --suite {}` shows every run)",
            args.suite.escape_debug(),
            args.suite.escape_debug()
        );
    }
    print!(
        "{}",
        crate::report::history::exporter(args.format).render(&trends)?
    );
    Ok(exit::OK)
}

/// `last:K` as K, or `None` for any other baseline name.
pub fn last_k(baseline: &str) -> anyhow::Result<Option<usize>> {
    let Some(k) = baseline.strip_prefix("last:") else {
        return Ok(None);
    };
    match k.trim().parse::<usize>() {
        Ok(k) if (1..=MAX_LAST).contains(&k) => Ok(Some(k)),
        _ => bail!(
            "`{}` is not a history baseline: write last:K with K a whole number from 1 to {MAX_LAST} (the last K runs of the same fingerprint)",
            baseline.escape_debug()
        ),
    }
}

/// The baseline of the last `k` runs before `new` (the run in `run_dir`) with its suite and
/// fingerprint, and a label naming them.
pub fn last_runs_baseline(
    config: &Config,
    k: usize,
    run_dir: &Path,
    new: &RunData,
) -> anyhow::Result<(RunData, String)> {
    let rows = load_rows(config, &new.info.suite)?;
    let env = EnvFingerprint::of(new);
    let runs = history::last_runs(&rows, &env.key(), k, &run_id(run_dir));
    if runs.is_empty() {
        bail!(
            "the history holds no earlier run of `{}` on this environment ({}; fingerprint {})\n  fix: run the suite on this machine first, or check against a saved baseline (--baseline NAME)",
            new.info.suite,
            env.describe(),
            env.key()
        );
    }
    if runs.len() < k {
        eprintln!(
            "note: the history holds {} earlier runs of this fingerprint, not {k}: judging against those",
            runs.len()
        );
    }
    let label = format!(
        "the last {} runs in the history ({} to {})",
        runs.len(),
        runs[0],
        runs[runs.len() - 1]
    );
    Ok((history::baseline_run(&rows, &runs, new), label))
}
