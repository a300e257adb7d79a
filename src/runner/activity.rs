//! CUPTI kernel activity around a job's timed samples (`cupti::activity`), made into the job's `ActivityRecord`: on unless `--no-activity`; where CUPTI cannot, the record says why and event timing proceeds.

use super::device::Gpu;
use crate::cupti::activity::{Collector, Finished};
use crate::records::{ActivityRecord, TimingConfig};

/// The activity collection of one timing loop.
pub(super) enum Probe {
    Off,
    Failed(String),
    On(Collector),
}

impl Probe {
    /// Starts collecting, unless the run said `--no-activity`.
    pub(super) fn start(gpu: &Gpu, cfg: &TimingConfig) -> Probe {
        if cfg.no_activity {
            return Probe::Off;
        }
        match Collector::start(gpu.toolkit.root.as_deref(), cfg.activity_dump.is_some()) {
            Ok(c) => Probe::On(c),
            Err(why) => Probe::Failed(why),
        }
    }

    /// Before a sample's work is enqueued.
    pub(super) fn begin(&mut self) {
        if let Probe::On(c) = self {
            c.begin_sample();
        }
    }

    /// After the host waited for the sample of `runs` runs.
    pub(super) fn end(&mut self, runs: u32) {
        if let Probe::On(c) = self {
            c.end_sample(runs);
        }
    }

    /// The job's record (None with `--no-activity`); raw records to `--activity-dump`'s folder.
    pub(super) fn finish(self, cfg: &TimingConfig) -> Option<ActivityRecord> {
        match self {
            Probe::Off => None,
            Probe::Failed(why) => Some(ActivityRecord::failed(why)),
            Probe::On(c) => {
                let finished = c.finish();
                let mut record = record_of(&finished);
                if let Some(dir) = &cfg.activity_dump
                    && let Err(e) = dump(dir, &finished)
                {
                    record.error.get_or_insert(format!(
                        "writing raw activity records to {}: {e}",
                        dir.display()
                    ));
                }
                Some(record)
            }
        }
    }
}

fn record_of(f: &Finished) -> ActivityRecord {
    let s = &f.samples;
    let error = f.error.clone().or_else(|| {
        s.summary
            .is_none()
            .then(|| "no kernel of the job was recorded in any sample".to_string())
    });
    ActivityRecord {
        samples_ms: s.samples_ms.clone(),
        summary: s.summary,
        kernels_per_run: s.kernels_per_run,
        missing_samples: s.missing,
        dropped_records: f.dropped,
        after_timing: false,
        error,
    }
}

/// Raw records dumped per job: the first few (warm-up), and every one in the first samples.
const DUMP_FIRST: usize = 16;
const DUMP_SAMPLES: usize = 5;

/// A first JSON line with the first samples' windows and their activity ms, then one line a
/// record: its bytes in hex (the name pointer zeroed) and its kernel's name.
fn dump(dir: &std::path::Path, f: &Finished) -> std::io::Result<()> {
    use std::fmt::Write;
    if f.dump.is_empty() {
        return Ok(());
    }
    let windows = &f.windows[..f.windows.len().min(DUMP_SAMPLES)];
    let in_windows = |bytes: &[u8]| match crate::cupti::activity_records::parse_kernel(bytes) {
        Ok(Some(k)) => {
            let mid = k.start_ns / 2 + k.end_ns / 2;
            windows.iter().any(|w| w.begin_ns <= mid && mid <= w.end_ns)
        }
        _ => false,
    };
    let head = serde_json::json!({
        "windows": windows.iter().map(|w| [w.begin_ns, w.end_ns, w.runs as u64]).collect::<Vec<_>>(),
        "samples_ms": f.samples.samples_ms.iter().take(DUMP_SAMPLES).collect::<Vec<_>>(),
    });
    let mut text = format!("{head}\n");
    for (i, (bytes, name)) in f.dump.iter().enumerate() {
        if i >= DUMP_FIRST && !in_windows(bytes) {
            continue;
        }
        let hex = bytes.iter().fold(String::new(), |mut h, b| {
            let _ = write!(h, "{b:02x}");
            h
        });
        let line = serde_json::json!({ "bytes": bytes.len(), "hex": hex, "name": name });
        text.push_str(&line.to_string());
        text.push('\n');
    }
    std::fs::create_dir_all(dir)?;
    let name = format!(
        "kernel-records-{}-{}.jsonl",
        std::process::id(),
        next_dump()
    );
    crate::store::write_atomic(&dir.join(name), text.as_bytes())
}

fn next_dump() -> u32 {
    use std::sync::atomic::{AtomicU32, Ordering};
    static N: AtomicU32 = AtomicU32::new(0);
    N.fetch_add(1, Ordering::Relaxed)
}
