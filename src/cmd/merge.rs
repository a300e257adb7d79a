//! `gpu-lab merge`: the shard runs of one plan (`--shard I/N` on several machines) joined into one run directory, its reports rendered as for any run.

use std::path::{Path, PathBuf};

use anyhow::Context;

use crate::exit;
use crate::records::{RunInfo, merge_refusal, plan_job_key};
use crate::scheduler;
use crate::store;

/// Joins `runs` (every shard of one plan) into a new run under `out`; prints its directory.
pub fn merge(
    config: &crate::config::Config,
    runs: &[PathBuf],
    out: Option<&Path>,
) -> anyhow::Result<i32> {
    let out = &config.runs_dir(out)?;
    let infos: Vec<(String, RunInfo)> = runs
        .iter()
        .map(|dir| Ok((dir.display().to_string(), store::load_info(dir)?)))
        .collect::<anyhow::Result<_>>()?;
    if let Some(why) = merge_refusal(&infos) {
        anyhow::bail!(
            "cannot merge: {why}\n  fix: give every shard run of one plan (`gpu-lab plan --suite S --shards N` shows it), each once, all run with the same settings on one GPU model"
        );
    }
    let (_, first) = &infos[0];
    // The suite's name becomes part of the merged directory's name: it must not lead out of --out.
    if let Some(why) = crate::suite::names::name_problem(
        "suite name in run.json",
        &first.suite,
        crate::suite::names::MAX_SUITE_NAME,
    ) {
        anyhow::bail!(
            "cannot merge: {why}\n  fix: the shard runs' run.json was edited or damaged; run the shards again"
        );
    }
    // Every shard's records, read before anything is written, each checked against the jobs the
    // shard owns.
    let mut order: Vec<usize> = (0..runs.len()).collect();
    order.sort_by_key(|&i| infos[i].1.shard.as_ref().map_or(0, |s| s.index));
    let mut all_records = Vec::new();
    for &i in &order {
        let (records, warnings) = store::load_records(&runs[i])?;
        for w in warnings {
            eprintln!("warning: {w}");
        }
        check_owned(&runs[i], &infos[i].1, &records)?;
        all_records.extend(records);
    }
    let mut info = first.clone();
    info.shard = None;
    info.merged_from = runs
        .iter()
        .map(|d| {
            d.file_name().map_or_else(
                || d.display().to_string(),
                |n| n.to_string_lossy().to_string(),
            )
        })
        .collect();
    info.started = infos
        .iter()
        .map(|(_, i)| i.started.clone())
        .min()
        .unwrap_or_default();
    // Finished only when every shard finished: a shard killed mid-run leaves jobs out, which
    // `check` must count as failures, never as merely missing.
    let unfinished: Vec<&str> = infos
        .iter()
        .filter(|(_, i)| i.finished.is_none())
        .map(|(name, _)| name.as_str())
        .collect();
    if !unfinished.is_empty() {
        eprintln!(
            "warning: {} did not finish (no end time in run.json): the merged run is marked unfinished, and `check` fails every job it lacks",
            unfinished.join(", ")
        );
    }
    let finished = if unfinished.is_empty() {
        infos.iter().filter_map(|(_, i)| i.finished.clone()).max()
    } else {
        None
    };
    info.finished = None;
    info.wall_seconds = infos
        .iter()
        .map(|(_, i)| i.wall_seconds)
        .sum::<Option<f64>>();
    info.command = format!(
        "gpu-lab merge {}",
        runs.iter()
            .map(|d| d.display().to_string())
            .collect::<Vec<_>>()
            .join(" ")
    );
    let label = info
        .device
        .as_ref()
        .map_or_else(|| "merged".to_string(), |d| format!("{} merged", d.name));
    let dir = store::new_run_dir(out, &info.suite, &label)
        .with_context(|| format!("creating a run directory under {}", out.display()))?;
    // Unfinished until every record is in: a merge killed midway, or one that hits a full disk,
    // leaves a run that `check` fails. run.json is rewritten (atomically) last.
    store::save_info(&dir, &info)?;
    let results = dir.join(store::RESULTS);
    for record in &all_records {
        store::append_jsonl(&results, record)
            .with_context(|| format!("appending to {}", results.display()))?;
    }
    info.finished = finished;
    store::save_info(&dir, &info)?;
    scheduler::render_reports(&dir)?;
    super::history::append_run(config, &dir);
    println!("{}", dir.display());
    Ok(exit::OK)
}

/// Every job record of a shard is one of the jobs it owns: a shard whose results are another
/// shard's (a copy relabelled, its job list edited to match) is refused.
fn check_owned(
    dir: &Path,
    info: &RunInfo,
    records: &[crate::records::Record],
) -> anyhow::Result<()> {
    let Some(shard) = &info.shard else {
        return Ok(());
    };
    let owned: std::collections::HashSet<&str> = shard.jobs.iter().map(String::as_str).collect();
    for r in records {
        if let crate::records::Record::Job(j) = r {
            let key = plan_job_key(&info.suite_source_hash, &info.suite, &j.key.id);
            if !owned.contains(key.as_str()) {
                anyhow::bail!(
                    "cannot merge: {} (shard {}/{}) holds a record of job `{}`, which is not one of the jobs that shard owns\n  fix: the shard's results or run.json were edited or copied from another shard; run that shard again",
                    dir.display(),
                    shard.index,
                    shard.count,
                    j.key.id.escape_debug()
                );
            }
        }
    }
    Ok(())
}
