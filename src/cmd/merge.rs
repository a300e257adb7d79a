//! `gpu-lab merge`: the shard runs of one plan (`--shard I/N` on several machines) joined into one run directory, its reports rendered as for any run.

use std::path::{Path, PathBuf};

use anyhow::Context;

use crate::exit;
use crate::records::{RunInfo, merge_refusal};
use crate::scheduler;
use crate::store;

/// Joins `runs` (every shard of one plan) into a new run under `out`; prints its directory.
pub fn merge(runs: &[PathBuf], out: &Path) -> anyhow::Result<i32> {
    let infos: Vec<(String, RunInfo)> = runs
        .iter()
        .map(|dir| Ok((dir.display().to_string(), store::load_info(dir)?)))
        .collect::<anyhow::Result<_>>()?;
    if let Some(why) = merge_refusal(&infos) {
        anyhow::bail!(
            "cannot merge: {why}\n  fix: give every shard run of one plan (`gpu-lab plan --suite S --shards N` shows it), each once"
        );
    }
    let (_, first) = &infos[0];
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
    info.finished = infos.iter().filter_map(|(_, i)| i.finished.clone()).max();
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
    store::save_info(&dir, &info)?;
    // Every shard's records, in shard order; one that cannot be read costs that record only.
    let results = dir.join(store::RESULTS);
    let mut order: Vec<usize> = (0..runs.len()).collect();
    order.sort_by_key(|&i| infos[i].1.shard.as_ref().map_or(0, |s| s.index));
    for i in order {
        let (records, warnings) = store::load_records(&runs[i])?;
        for w in warnings {
            eprintln!("warning: {w}");
        }
        for record in &records {
            store::append_jsonl(&results, record)
                .with_context(|| format!("appending to {}", results.display()))?;
        }
    }
    scheduler::render_reports(&dir)?;
    println!("{}", dir.display());
    Ok(exit::OK)
}
