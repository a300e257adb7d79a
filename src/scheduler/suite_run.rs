//! One suite's run: its directory and `run.json`, opened before its first job, and what its steps share (timing settings, groups, the context each step runs in).

use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use anyhow::Context;

use crate::executor::{Environment, RunContext};
use crate::profiler::ClockControl;
use crate::profiler::hotspots::HotspotRequest;
use crate::records::{CacheState, Record, RunInfo, TimingConfig, groups_in_order};
use crate::store;
use crate::suite::JobSpec;

use super::planning::{RunSettings, SuitePlan};
use super::rules::SuiteShape;

/// The time now, as `run.json` writes it.
pub(super) fn now() -> String {
    chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
}

/// One suite's run directory and what its steps share.
pub(super) struct SuiteRun<'p> {
    pub(super) plan: &'p SuitePlan<'p>,
    pub(super) dir: PathBuf,
    pub(super) work: PathBuf,
    pub(super) timing: TimingConfig,
    clock_control: ClockControl,
    duration_runs: u32,
    hotspots: Option<HotspotRequest>,
    fma: bool,
    pub(super) host_link: bool,
    timeout: Duration,
    pub(super) groups: Vec<String>,
    pub(super) group_jobs: Vec<Vec<&'p JobSpec>>,
    /// When its first job started (its `started` and wall time).
    pub(super) began: OnceLock<(Instant, String)>,
    /// Set once its programs were compiled ahead of its first job.
    pub(super) prebuilt: OnceLock<()>,
}

impl<'p> SuiteRun<'p> {
    /// Creates the run directory and writes its `run.json`.
    pub(super) fn open(
        plan: &'p SuitePlan<'p>,
        settings: &RunSettings,
        envs: &[Environment],
    ) -> anyhow::Result<(SuiteRun<'p>, RunInfo)> {
        let env = envs[0].clone();
        let dir = store::new_run_dir(&settings.out, plan.suite.name(), &env.label).with_context(
            || format!("creating a run directory under {}", settings.out.display()),
        )?;
        // The run's cache state: the command line's, else the suite's, else cold, as nvbench
        // does: a warm L2 serves what fits in it and reads faster than memory (a 32 MB copy read
        // 116% of the copy bound warm on an H100). Old runs that stored no state were warm.
        let timing = TimingConfig {
            cache: settings
                .cache
                .or(plan.suite.manifest.suite.cache)
                .unwrap_or(CacheState::Cold),
            ..settings.timing.clone()
        };
        let clock_control = settings
            .profile
            .as_ref()
            .map(|p| p.clock_control)
            .unwrap_or_default();
        let info = RunInfo {
            gpu_lab_version: env!("CARGO_PKG_VERSION").into(),
            build: Some(settings.build.clone()),
            command: settings.command_line.clone(),
            started: now(),
            suite: plan.suite.name().into(),
            suite_description: plan.suite.manifest.suite.description.clone(),
            suite_source_hash: plan.suite.source_hash.clone(),
            device: env.device,
            nvml_error: env.nvml_error,
            ncu_version: settings.profile.as_ref().and(env.ncu_version),
            clock_policy: clock_control.as_str().into(),
            timing: timing.clone(),
            cache_state: timing.cache.describe().into(),
            seed: settings.seed,
            metrics: plan.metrics.clone(),
            unavailable_metrics: plan.unavailable_metrics.clone(),
            mock: env.mock,
            shard: settings.shard.clone(),
            gpus: if envs.len() > 1 {
                envs.iter().filter_map(|e| e.device.clone()).collect()
            } else {
                Vec::new()
            },
            ..Default::default()
        };
        store::save_info(&dir, &info)?;
        let work = store::real_subdir(&dir, Path::new("work"))
            .with_context(|| format!("creating {}", dir.join("work").display()))?;
        let groups = groups_in_order(plan.jobs.iter().map(|j| &j.key.group));
        let group_jobs = groups
            .iter()
            .map(|g| plan.jobs.iter().filter(|j| &j.key.group == g).collect())
            .collect();
        let fma = plan
            .jobs
            .iter()
            .any(|j| j.work.flops.is_some_and(|f| f > 0.0));
        let host_link = plan.jobs.iter().any(JobSpec::crosses_host_link);
        let duration_runs = settings.profile.as_ref().map_or(0, |p| p.duration_runs);
        let hotspots = settings.profile.as_ref().and_then(|p| p.hotspots.clone());
        Ok((
            SuiteRun {
                plan,
                dir,
                work,
                timing,
                clock_control,
                duration_runs,
                hotspots,
                fma,
                host_link,
                timeout: settings.timeout,
                groups,
                group_jobs,
                began: OnceLock::new(),
                prebuilt: OnceLock::new(),
            },
            info,
        ))
    }

    /// The context its steps run in, drawing inputs from `seed`.
    pub(super) fn ctx(&self, seed: u64) -> RunContext<'_> {
        RunContext {
            dir: &self.dir,
            work: &self.work,
            timing: &self.timing,
            seed,
            timeout: self.timeout,
            metrics: &self.plan.metrics,
            clock_control: self.clock_control,
            duration_runs: self.duration_runs,
            hotspots: self.hotspots.as_ref(),
            fma: self.fma,
            host_link: self.host_link,
        }
    }

    /// Saves one record at the end of its `results.jsonl`.
    pub(super) fn append(&self, record: &Record) -> anyhow::Result<()> {
        let results = self.dir.join(store::RESULTS);
        store::append_jsonl(&results, record)
            .with_context(|| format!("appending to {}", results.display()))
    }

    /// What the order of its timing tasks depends on.
    pub(super) fn shape(&self) -> SuiteShape {
        SuiteShape {
            host_link: self.host_link,
            rounds: self.timing.rounds,
            group_sizes: self.group_jobs.iter().map(Vec::len).collect(),
        }
    }
}
