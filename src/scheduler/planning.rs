//! Planning: which jobs of each suite run and with which metrics, settled for every suite before the first one starts, and how every suite of one command runs.

use std::path::PathBuf;
use std::time::Duration;

use anyhow::{Context, bail};

use crate::executor::Executor;
use crate::metrics::{self, Catalog, MetricDef};
use crate::profiler::ClockControl;
use crate::profiler::hotspots::HotspotRequest;
use crate::records::{CacheState, ShardInfo, TimingConfig};
use crate::suite::{JobSpec, Suite};

/// One suite, ready to run: its selected jobs and the metrics to profile them with.
#[derive(Clone)]
pub struct SuitePlan<'a> {
    pub suite: &'a Suite,
    pub jobs: Vec<JobSpec>,
    pub metrics: Vec<MetricDef>,
    /// Metrics asked for that this GPU cannot collect, with why.
    pub unavailable_metrics: Vec<String>,
}

/// What to profile with, when profiling: metric names (a set, metrics, or empty for the suite's own set).
#[derive(Debug, Clone)]
pub struct ProfileRequest {
    pub names: Vec<String>,
    pub clock_control: ClockControl,
    /// Profiled runs a job's duration is the median of, in a session of its own; 0: none, the
    /// duration is the metric set's reading.
    pub duration_runs: u32,
    /// CUPTI in process, or ncu (`--profiler`).
    pub profiler: crate::profiler::ProfilerChoice,
    /// `--hotspots`: the variants whose source hot spots an extra ncu session reads.
    pub hotspots: Option<HotspotRequest>,
    /// `--counters-only`: each group's pass right away, no timing, no bounds, no checks.
    pub counters_only: bool,
}

/// How every suite of one command runs.
pub struct RunSettings {
    pub out: PathBuf,
    pub timing: TimingConfig,
    /// `--cache`: overrides the suites' own `cache`.
    pub cache: Option<CacheState>,
    pub seed: u64,
    pub timeout: Duration,
    pub profile: Option<ProfileRequest>,
    pub command_line: String,
    /// The build of gpu-lab doing the run (its commit and binary), recorded in each run.
    pub build: crate::records::BuildInfo,
    pub quiet: bool,
    /// `--shard I/N`: recorded in each run, for `merge`.
    pub shard: Option<ShardInfo>,
    /// `--sanitize`: compute-sanitizer's tools, run over each variant once before timing.
    pub sanitize: Vec<crate::records::SanitizerTool>,
    /// `--sanitize-only`: no timing at all.
    pub sanitize_only: bool,
    pub sanitize_timeout: Duration,
    /// `--sanitize-each`: a sanitized child per variant and tool, not one per tool for a suite.
    pub sanitize_each: bool,
}

/// Plans every suite before the first one starts: a typo must not stop `--suite all` halfway.
pub fn plan<'a>(
    suites: &'a [Suite],
    variants: &[String],
    profile: Option<&ProfileRequest>,
    catalog: &Catalog,
) -> anyhow::Result<Vec<SuitePlan<'a>>> {
    let mut plans = Vec::new();
    for suite in suites {
        let mut jobs = suite.jobs.clone();
        // None may match: another suite may have the named variants.
        if !variants.is_empty() {
            jobs.retain(|j| variants.contains(&j.key.variant));
        }
        let metrics = match profile {
            None => Vec::new(),
            Some(p) => {
                let mut names = p.names.clone();
                if names.is_empty() {
                    names.push(
                        suite
                            .manifest
                            .suite
                            .metric_set
                            .clone()
                            .unwrap_or_else(|| "memory".into()),
                    );
                }
                let defs = catalog
                    .resolve(&names)
                    .with_context(|| format!("suite `{}`", suite.name()))?;
                if jobs.iter().any(|j| j.work.flops.is_some_and(|f| f > 0.0)) {
                    metrics::with_tensor_check(catalog, defs)
                } else {
                    defs
                }
            }
        };
        plans.push(SuitePlan {
            suite,
            jobs,
            metrics,
            unavailable_metrics: Vec::new(),
        });
    }
    if !variants.is_empty() && plans.iter().all(|p| p.jobs.is_empty()) {
        bail!(
            "no suite has a variant named {}\n  fix: `gpu-lab list variants` shows them",
            variants.join(", ")
        );
    }
    if let Some(h) = profile.and_then(|p| p.hotspots.as_ref()) {
        let unknown = h.unmatched(plans.iter().flat_map(|p| &p.jobs));
        if !unknown.is_empty() {
            bail!(
                "--hotspots names {}, which no selected job is a variant of\n  fix: name variants of the selected suites (`gpu-lab list variants` shows them), or give --hotspots alone for every variant",
                unknown.join(", ")
            );
        }
    }
    Ok(plans)
}

/// Leaves out of each plan the metrics this GPU cannot collect, saying why in the run.
pub fn screen(plans: &mut [SuitePlan], executor: &dyn Executor) -> anyhow::Result<()> {
    for plan in plans.iter_mut() {
        bind_device_grids(&mut plan.jobs, executor)
            .with_context(|| format!("suite `{}`", plan.suite.name()))?;
    }
    for plan in plans.iter_mut().filter(|p| !p.metrics.is_empty()) {
        let screened = executor
            .screen(std::mem::take(&mut plan.metrics))
            .with_context(|| format!("suite `{}`", plan.suite.name()))?;
        plan.metrics = screened.collectable;
        plan.unavailable_metrics = screened
            .unavailable
            .into_iter()
            .map(|(m, why)| format!("{m}: {why}"))
            .collect();
    }
    Ok(())
}

/// Evaluates the grids that name `SMS` at this executor's GPU's multiprocessor count (each GPU
/// model's pool binds its own copy of the jobs).
pub(super) fn bind_device_grids(
    jobs: &mut [JobSpec],
    executor: &dyn Executor,
) -> anyhow::Result<()> {
    if !crate::suite::any_sms_grid(jobs) {
        return Ok(());
    }
    let env = executor.environment();
    let sms = env.device.as_ref().and_then(|d| d.sm_count).ok_or_else(|| {
        anyhow::anyhow!(
            "a grid names SMS (the GPU's multiprocessor count), and the CUDA driver could not say {}'s{}\n  fix: `gpu-lab doctor` checks the driver; or write the grid without SMS",
            env.label,
            env.nvml_error.map(|e| format!(" ({e})")).unwrap_or_default()
        )
    })?;
    Ok(crate::suite::bind_sms(jobs, sms)?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    #[test]
    fn a_variant_no_suite_has_is_an_error_with_the_fix() {
        let manifest = Path::new(env!("CARGO_MANIFEST_DIR")).join("kernels/transpose/suite.toml");
        let suites = [crate::suite::load(&manifest).unwrap()];
        let e = plan(
            &suites,
            &["nope".into()],
            None,
            &Catalog::builtin().unwrap(),
        )
        .err()
        .unwrap()
        .to_string();
        assert!(
            e.contains("no suite has a variant named nope") && e.contains("fix:"),
            "{e}"
        );
    }
}
