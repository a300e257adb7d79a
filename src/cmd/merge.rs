//! `gpu-lab merge`: the shard runs of one plan (`--shard I/N` on several machines) joined into one run directory, its reports rendered as for any run.

use std::path::{Path, PathBuf};

use anyhow::Context;

use crate::exit;
use crate::records::{merge_refusal, Record, RunInfo};
use crate::scheduler;
use crate::store;

/// Joins `runs` (every shard of one plan) into a new run under `out`; prints its directory.
pub fn merge(runs: &[PathBuf], out: &Path) -> anyhow::Result<i32> {
    let mut infos: Vec<(String, RunInfo)> = Vec::new();
    for dir in runs {
        let text = std::fs::read_to_string(dir.join(store::RUN_JSON)).with_context(|| format!("{} is not a gpu-lab run directory (no readable {})", dir.display(), store::RUN_JSON))?;
        let info: RunInfo = serde_json::from_str(&text).with_context(|| format!("{} holds no valid run information", dir.join(store::RUN_JSON).display()))?;
        infos.push((dir.display().to_string(), info));
    }
    if let Some(why) = merge_refusal(&infos) {
        anyhow::bail!("cannot merge: {why}\n  fix: give every shard run of one plan (`gpu-lab plan --suite S --shards N` shows it), each once");
    }
    let (_, first) = &infos[0];
    let mut info = first.clone();
    info.shard = None;
    info.merged_from = runs.iter().map(|d| d.file_name().map_or_else(|| d.display().to_string(), |n| n.to_string_lossy().to_string())).collect();
    info.started = infos.iter().map(|(_, i)| i.started.clone()).min().unwrap_or_default();
    info.finished = infos.iter().filter_map(|(_, i)| i.finished.clone()).max();
    info.wall_seconds = infos.iter().map(|(_, i)| i.wall_seconds).sum::<Option<f64>>();
    info.command = format!("gpu-lab merge {}", runs.iter().map(|d| d.display().to_string()).collect::<Vec<_>>().join(" "));
    let label = info.device.as_ref().map_or_else(|| "merged".to_string(), |d| format!("{} merged", d.name));
    let dir = store::new_run_dir(out, &info.suite, &label).with_context(|| format!("creating a run directory under {}", out.display()))?;
    store::save_info(&dir, &info)?;
    // Every shard's records, in shard order; one that cannot be read costs that record only.
    let results = dir.join(store::RESULTS);
    let mut order: Vec<usize> = (0..runs.len()).collect();
    order.sort_by_key(|&i| infos[i].1.shard.as_ref().map_or(0, |s| s.index));
    for i in order {
        let path = runs[i].join(store::RESULTS);
        let body = std::fs::read(&path).with_context(|| format!("reading {}", path.display()))?;
        for (n, line) in body.split(|&b| b == b'\n').enumerate().filter(|(_, l)| !l.iter().all(u8::is_ascii_whitespace)) {
            match serde_json::from_slice::<Record>(line) {
                Ok(record) => store::append_jsonl(&results, &record).with_context(|| format!("appending to {}", results.display()))?,
                Err(e) => eprintln!("warning: {}:{}: skipped an unreadable record ({e})", path.display(), n + 1),
            }
        }
    }
    scheduler::render_reports(&dir)?;
    println!("{}", dir.display());
    Ok(exit::OK)
}
