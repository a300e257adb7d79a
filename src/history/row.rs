//! A history row (one measure of one job in one run), the measures, the environment fingerprint, and the rows a run adds (pure).

use crate::records::{JobStatus, RunData};

/// One measure of one job in one run: the unit of the history.
#[derive(Debug, Clone, PartialEq)]
pub struct HistoryRow {
    /// The run directory's name: unique within a data directory, and it sorts by start time.
    pub run_id: String,
    pub started: String,
    pub suite: String,
    /// [`EnvFingerprint::key`] of the run.
    pub fingerprint: String,
    pub gpu: String,
    pub driver: String,
    pub cuda: String,
    pub cache: String,
    pub clock_policy: String,
    pub mock: bool,
    /// The gpu-lab commit that measured it (absent: built outside a git checkout, or an old run).
    pub commit: Option<String>,
    pub dirty: bool,
    pub gpu_lab_version: String,
    pub job_id: String,
    pub variant: String,
    pub group: String,
    /// The variant with its own parameters, as reports show it.
    pub label: String,
    pub measure: Measure,
    pub median: f64,
    pub ci_low: f64,
    pub ci_high: f64,
    /// The samples the median and interval are of, in the measure's unit.
    pub samples: Vec<f64>,
}

/// What a row measures.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Measure {
    /// The job's time per run, ms (smaller is better).
    TimeMs,
    /// Its declared bytes over its time, GB/s (bigger is better).
    Gbs,
    /// Its declared flops over its time, GFLOP/s (bigger is better).
    Gflops,
}

impl Measure {
    pub const ALL: [Measure; 3] = [Measure::TimeMs, Measure::Gbs, Measure::Gflops];

    /// The name stored in the history and shown in outputs.
    pub fn name(self) -> &'static str {
        match self {
            Measure::TimeMs => "time_ms",
            Measure::Gbs => "gb_per_s",
            Measure::Gflops => "gflop_per_s",
        }
    }

    pub fn unit(self) -> &'static str {
        match self {
            Measure::TimeMs => "ms",
            Measure::Gbs => "GB/s",
            Measure::Gflops => "GFLOP/s",
        }
    }

    pub fn smaller_is_better(self) -> bool {
        self == Measure::TimeMs
    }

    pub fn parse(name: &str) -> Option<Measure> {
        Measure::ALL.into_iter().find(|m| m.name() == name)
    }
}

/// The facts that make two runs' times comparable; see the module's note for what is left out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EnvFingerprint {
    pub gpu: String,
    pub driver: String,
    pub cuda: String,
    pub cache: String,
    pub clock_policy: String,
    pub mock: bool,
}

impl EnvFingerprint {
    pub fn of(run: &RunData) -> EnvFingerprint {
        let d = run.info.device.as_ref();
        let field =
            |f: &dyn Fn(&crate::records::DeviceInfo) -> String| d.map(f).unwrap_or_default();
        EnvFingerprint {
            gpu: field(&|d| d.name.clone()),
            driver: field(&|d| d.driver.clone()),
            cuda: field(&|d| d.cuda_driver.clone()),
            cache: format!("{:?}", run.info.timing.cache).to_lowercase(),
            clock_policy: run.info.clock_policy.clone(),
            mock: run.info.mock,
        }
    }

    /// The fingerprint a history row was stored with.
    pub fn of_row(r: &HistoryRow) -> EnvFingerprint {
        EnvFingerprint {
            gpu: r.gpu.clone(),
            driver: r.driver.clone(),
            cuda: r.cuda.clone(),
            cache: r.cache.clone(),
            clock_policy: r.clock_policy.clone(),
            mock: r.mock,
        }
    }

    /// 16 hex digits of the sha256 of the fields: the partition a run's rows go to.
    pub fn key(&self) -> String {
        use sha2::{Digest, Sha256};
        let mut h = Sha256::new();
        for part in [
            &self.gpu,
            &self.driver,
            &self.cuda,
            &self.cache,
            &self.clock_policy,
        ] {
            h.update(part.as_bytes());
            h.update([0u8]);
        }
        h.update([u8::from(self.mock)]);
        h.finalize()
            .iter()
            .take(8)
            .map(|b| format!("{b:02x}"))
            .collect()
    }

    /// `H100 80GB HBM3, driver 570.1, CUDA 12.8, cold L2`.
    pub fn describe(&self) -> String {
        let gpu = if self.gpu.is_empty() {
            "unknown GPU"
        } else {
            &self.gpu
        };
        format!(
            "{gpu}, driver {}, CUDA {}, {} L2, clocks {}{}",
            or_unknown(&self.driver),
            or_unknown(&self.cuda),
            self.cache,
            or_unknown(&self.clock_policy),
            if self.mock { " (MOCK)" } else { "" }
        )
    }
}

fn or_unknown(s: &str) -> &str {
    if s.is_empty() { "unknown" } else { s }
}

/// The rows a run adds to the history: every correct job's time, and its GB/s and GFLOP/s where
/// it declares bytes or flops. Wrong, failed and unmeasured jobs add none (a trend of wrong
/// results would mislead).
pub fn rows_of(run_id: &str, run: &RunData) -> Vec<HistoryRow> {
    let env = EnvFingerprint::of(run);
    let key = env.key();
    let build = run.info.build.as_ref();
    let mut rows = Vec::new();
    for job in &run.jobs {
        let Some(summary) = job.summary.as_ref().filter(|_| job.status == JobStatus::Ok) else {
            continue;
        };
        if job.samples_ms.is_empty() || summary.median.is_nan() || summary.median <= 0.0 {
            continue;
        }
        for measure in Measure::ALL {
            let per_ms = match measure {
                Measure::TimeMs => None,
                // bytes / (ms * 1e-3) / 1e9 = bytes / ms / 1e6
                Measure::Gbs => match job.work.bytes {
                    Some(b) if b > 0.0 => Some(b / 1e6),
                    _ => continue,
                },
                Measure::Gflops => match job.work.flops {
                    Some(f) if f > 0.0 => Some(f / 1e6),
                    _ => continue,
                },
            };
            // A rate is the work over the time: the interval's ends swap.
            let of = |ms: f64| per_ms.map_or(ms, |w| w / ms);
            if per_ms.is_some()
                && (summary.ci_low <= 0.0
                    || job.samples_ms.iter().any(|&ms| ms.is_nan() || ms <= 0.0))
            {
                continue;
            }
            let (low, high) = match per_ms {
                None => (summary.ci_low, summary.ci_high),
                Some(_) => (summary.ci_high, summary.ci_low),
            };
            rows.push(HistoryRow {
                run_id: run_id.to_string(),
                started: run.info.started.clone(),
                suite: run.info.suite.clone(),
                fingerprint: key.clone(),
                gpu: env.gpu.clone(),
                driver: env.driver.clone(),
                cuda: env.cuda.clone(),
                cache: env.cache.clone(),
                clock_policy: env.clock_policy.clone(),
                mock: env.mock,
                commit: build.and_then(|b| b.commit.clone()),
                dirty: build.is_some_and(|b| b.dirty),
                gpu_lab_version: run.info.gpu_lab_version.clone(),
                job_id: job.key.id.clone(),
                variant: job.key.variant.clone(),
                group: job.key.group.clone(),
                label: job.key.label(),
                measure,
                median: of(summary.median),
                ci_low: of(low),
                ci_high: of(high),
                samples: job.samples_ms.iter().map(|&ms| of(ms)).collect(),
            });
        }
    }
    rows
}
