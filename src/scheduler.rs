//! The only place that knows every stage: suites -> plans -> jobs through an executor -> records, saved after every job, and the reports re-rendered from disk.

use std::collections::VecDeque;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Condvar, Mutex, OnceLock};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use indicatif::{ProgressBar, ProgressStyle};

use crate::executor::{Environment, Executor, Failure, RunContext};
use crate::exit;
use crate::metrics::{Catalog, MetricDef};
use crate::profiler::ClockControl;
use crate::records::{
    BoundSpec, BoundsRecord, CacheState, ComputeBoundRecord, FmaRate, HostLinkBounds, JobRecord,
    JobStatus, ProfileRecord, Record, RunInfo, ShardInfo, TimingConfig, groups_in_order,
};
use crate::report;
use crate::stats;
use crate::store;
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
    pub quiet: bool,
    /// `--shard I/N`: recorded in each run, for `merge`.
    pub shard: Option<ShardInfo>,
}

/// One shard of a plan: `index` of `count`, counted from 0.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shard {
    pub index: usize,
    pub count: usize,
}

impl Shard {
    /// `I/N` with 0 <= I < N.
    pub fn parse(text: &str) -> Result<Shard, String> {
        let (i, n) = text.split_once('/').ok_or_else(|| format!("`{text}` is not a shard: write I/N, for example 0/4 (shards count from 0, as SLURM_ARRAY_TASK_ID does)"))?;
        let (index, count): (usize, usize) = (
            i.trim()
                .parse()
                .map_err(|_| format!("shard index `{i}` is not a whole number"))?,
            n.trim()
                .parse()
                .map_err(|_| format!("shard count `{n}` is not a whole number"))?,
        );
        if count == 0 || index >= count {
            return Err(format!(
                "shard {index}/{count}: the index must be below the count (0/{count} to {}/{count})",
                count.max(1) - 1
            ));
        }
        Ok(Shard { index, count })
    }
}

/// What a job is expected to cost, for balancing shards: its declared bytes and flops (a memory
/// pass or a multiply-add is cheap; the child process and its checks are not, hence the constant).
pub fn expected_cost(job: &JobSpec) -> f64 {
    1e9 + job.work.bytes.unwrap_or(0.0).max(0.0) + job.work.flops.unwrap_or(0.0).max(0.0) / 16.0
}

/// Which shard each job goes to: the most expensive first, each to the shard with the least
/// cost so far (ties by suite and job id, so the split depends only on the jobs, not their order).
pub fn shard_of(jobs: &[&JobSpec], count: usize) -> Vec<usize> {
    let mut order: Vec<usize> = (0..jobs.len()).collect();
    order.sort_by(|&a, &b| {
        expected_cost(jobs[b])
            .total_cmp(&expected_cost(jobs[a]))
            .then_with(|| (&jobs[a].suite, jobs[a].id()).cmp(&(&jobs[b].suite, jobs[b].id())))
    });
    let mut load = vec![0.0f64; count.max(1)];
    let mut shard = vec![0usize; jobs.len()];
    for j in order {
        let lightest = (0..load.len())
            .min_by(|&a, &b| load[a].total_cmp(&load[b]))
            .unwrap_or(0);
        shard[j] = lightest;
        load[lightest] += expected_cost(jobs[j]);
    }
    shard
}

/// The GPUs of a host grouped by model, in the order first seen (`models[i]` is GPU i's model):
/// GPUs of one model share a run's jobs; each model runs every job.
pub fn pools_by_model(models: &[String]) -> Vec<Vec<usize>> {
    let mut pools: Vec<(&String, Vec<usize>)> = Vec::new();
    for (i, m) in models.iter().enumerate() {
        match pools.iter_mut().find(|(name, _)| *name == m) {
            Some((_, pool)) => pool.push(i),
            None => pools.push((m, vec![i])),
        }
    }
    pools.into_iter().map(|(_, pool)| pool).collect()
}

/// Keeps in each plan only the jobs of `shard`; returns what the runs record of it (the plan's
/// identity: a hash over every job of every plan, before the split).
pub fn keep_shard(plans: &mut [SuitePlan], shard: Shard) -> ShardInfo {
    use sha2::{Digest, Sha256};
    let all: Vec<&JobSpec> = plans.iter().flat_map(|p| p.jobs.iter()).collect();
    let mut ids: Vec<String> = plans
        .iter()
        .flat_map(|p| {
            p.jobs
                .iter()
                .map(move |j| format!("{}\u{0}{}\u{0}{}", p.suite.source_hash, j.suite, j.id()))
        })
        .collect();
    ids.sort();
    let mut h = Sha256::new();
    for id in &ids {
        h.update(id.as_bytes());
        h.update([1u8]);
    }
    let info = ShardInfo {
        index: shard.index,
        count: shard.count,
        plan: crate::suite::sources::hex(&h.finalize()),
    };
    let assigned = shard_of(&all, shard.count);
    let mut keep = assigned.iter().map(|&s| s == shard.index);
    for plan in plans.iter_mut() {
        plan.jobs = std::mem::take(&mut plan.jobs)
            .into_iter()
            .filter(|_| keep.next().unwrap_or(false))
            .collect();
    }
    info
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
                catalog
                    .resolve(&names)
                    .with_context(|| format!("suite `{}`", suite.name()))?
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
    Ok(plans)
}

/// Leaves out of each plan the metrics this GPU cannot collect, saying why in the run.
pub fn screen(plans: &mut [SuitePlan], executor: &dyn Executor) -> anyhow::Result<()> {
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

/// Rewrites the reports from what is on disk: partial results stay readable.
pub fn render_reports(dir: &Path) -> anyhow::Result<()> {
    let (run, _) = store::load_run(dir)?;
    let roofline = run
        .jobs
        .iter()
        .any(report::markdown::is_compute)
        .then_some(report::Format::Roofline);
    for format in [
        report::Format::Md,
        report::Format::Csv,
        report::Format::Svg,
        report::Format::Frame,
    ]
    .into_iter()
    .chain(roofline)
    {
        let e = report::exporter(format);
        store::write_atomic(&dir.join(e.file_name()), e.render(&run)?.as_bytes())?;
    }
    write_timelines(dir, &run)
}

/// The host programs' timelines, which report.md links, beside it.
pub fn write_timelines(dir: &Path, run: &crate::records::RunData) -> anyhow::Result<()> {
    for (file, svg) in report::timeline::timeline_files(run) {
        let path = dir.join(file);
        store::write_atomic(&path, svg.as_bytes())
            .with_context(|| format!("writing {}", path.display()))?;
    }
    Ok(())
}

/// A report that cannot be rendered must not stop the measuring: the results are on disk and
/// `gpu-lab report RUN` can render them later.
fn warn_on_error(result: anyhow::Result<()>) {
    if let Err(e) = result {
        eprintln!("warning: could not write the reports: {e:#}");
    }
}

fn now() -> String {
    chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
}

/// One suite's run directory and what its steps share.
struct SuiteRun<'p> {
    plan: &'p SuitePlan<'p>,
    dir: PathBuf,
    work: PathBuf,
    timing: TimingConfig,
    clock_control: ClockControl,
    duration_runs: u32,
    fma: bool,
    host_link: bool,
    timeout: Duration,
    groups: Vec<String>,
    group_jobs: Vec<Vec<&'p JobSpec>>,
    /// When its first job started (its `started` and wall time).
    began: OnceLock<(Instant, String)>,
}

impl<'p> SuiteRun<'p> {
    /// Creates the run directory and writes its `run.json`.
    fn open(
        plan: &'p SuitePlan<'p>,
        settings: &RunSettings,
        envs: &[Environment],
    ) -> anyhow::Result<(SuiteRun<'p>, RunInfo)> {
        let env = envs[0].clone();
        let dir = store::new_run_dir(&settings.out, plan.suite.name(), &env.label).with_context(
            || format!("creating a run directory under {}", settings.out.display()),
        )?;
        // The run's cache state: the command line's, else the suite's, else warm.
        let timing = TimingConfig {
            cache: settings
                .cache
                .or(plan.suite.manifest.suite.cache)
                .unwrap_or_default(),
            ..settings.timing.clone()
        };
        let clock_control = settings
            .profile
            .as_ref()
            .map(|p| p.clock_control)
            .unwrap_or_default();
        let info = RunInfo {
            gpu_lab_version: env!("CARGO_PKG_VERSION").into(),
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
        let work = dir.join("work");
        std::fs::create_dir_all(&work).with_context(|| format!("creating {}", work.display()))?;
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
        Ok((
            SuiteRun {
                plan,
                dir,
                work,
                timing,
                clock_control,
                duration_runs,
                fma,
                host_link,
                timeout: settings.timeout,
                groups,
                group_jobs,
                began: OnceLock::new(),
            },
            info,
        ))
    }

    fn ctx(&self, seed: u64) -> RunContext<'_> {
        RunContext {
            dir: &self.dir,
            work: &self.work,
            timing: &self.timing,
            seed,
            timeout: self.timeout,
            metrics: &self.plan.metrics,
            clock_control: self.clock_control,
            duration_runs: self.duration_runs,
            fma: self.fma,
            host_link: self.host_link,
        }
    }
}

/// What the lanes share, by suite: each job's record so far, the timing tasks and ncu passes
/// left, the passes ready to run, each run's `run.json`, and its exit code once it is finished.
struct Shared<'p, 'f> {
    so_far: Vec<Vec<Vec<Option<JobRecord>>>>,
    /// Timing tasks left, by suite and group.
    left: Vec<Vec<usize>>,
    /// Groups not yet fully timed, by suite, and in all.
    open_groups: Vec<usize>,
    groups_timing: usize,
    /// Passes queued or running, by suite.
    open_passes: Vec<usize>,
    /// Each pass ready to run.
    passes: VecDeque<Pass<'p>>,
    /// The next timing task to hand out.
    next_task: usize,
    pass_failed: Vec<bool>,
    infos: Vec<RunInfo>,
    codes: Vec<Option<i32>>,
    finished: &'f mut (dyn FnMut(&Path) + Send),
}

/// An ncu pass: suite, group, tag and the group's jobs that ran.
type Pass<'p> = (usize, usize, String, Vec<&'p JobSpec>);

/// What a lane does next: time a task (suite, group, round, job), or run a pass holding the host's ncu slot.
enum Work<'p, 's> {
    Time((usize, usize, u32, usize)),
    Profile(Pass<'p>, HeldSlot<'s>),
}

/// Runs every plan with a job in it on `lanes`, the executors of one GPU each (one for a plain
/// run; every GPU of one model for `--gpus`); hands each finished run directory to `finished`.
/// Returns the exit code: 0, or `exit::JOBS_FAILED` when some job failed, was wrong or went unprofiled.
///
/// On one GPU every job of every suite is timed before the first ncu pass: jobs timed right after
/// a profile pass drifted by up to 6% against a run without ncu, while the group timed before any
/// pass agreed within 0.4% (transpose, H100: reports/noise-h100 against reports/rounds-h100,
/// docs/design-notes.md). On several GPUs one lane at a time runs the pass of a group already
/// timed while the others time (ncu could not use a second GPU anyway). Timing tasks are (suite,
/// group, round, job), in that order, so rounds interleave the variants (A B C A B C …) and drift
/// hits all of them alike; on several GPUs, suites that time the host link come first. Each lane takes the next
/// task when its GPU is free, so no two jobs share a card, and a task that times the host link
/// when every other GPU of the host is idle; before its first job of a group a lane measures that
/// group's bounds on its own GPU. After every job and pass the record is saved.
pub fn run(
    lanes: &[&dyn Executor],
    plans: &[SuitePlan],
    settings: &RunSettings,
    finished: &mut (dyn FnMut(&Path) + Send),
) -> anyhow::Result<i32> {
    run_sharing(lanes, plans, settings, &HostShare::default(), finished)
}

/// What the lanes of one host share, also across the side-by-side runs of one process (a mixed
/// host runs one per GPU model): the one ncu session it runs at a time (a pass waits for it
/// instead of queueing in the driver, where its GPU would idle and its timeout would run), and
/// the host link, which a job that crosses it has to itself (see `HostShare::try_exclusive`).
#[derive(Default)]
pub struct HostShare {
    ncu: AtomicBool,
    lanes: Mutex<LaneCount>,
    /// Signalled whenever a lane's work ends, for a lane waiting to have the host alone.
    work_ended: Condvar,
}

/// Lanes running work now, and whether one holds (or is waiting to hold) the host alone.
#[derive(Default)]
struct LaneCount {
    busy: usize,
    exclusive: bool,
}

impl HostShare {
    /// The ncu slot, if free, held until the returned guard drops (an error or a panic lets it go too).
    fn try_take_ncu(&self) -> Option<HeldSlot<'_>> {
        self.ncu
            .compare_exchange(false, true, Ordering::SeqCst, Ordering::SeqCst)
            .is_ok()
            .then_some(HeldSlot(&self.ncu))
    }

    fn count(&self) -> std::sync::MutexGuard<'_, LaneCount> {
        self.lanes.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A lane's turn at ordinary work, unless a lane holds or awaits the host alone.
    fn try_share(&self) -> Option<Busy<'_>> {
        let mut c = self.count();
        (!c.exclusive).then(|| {
            c.busy += 1;
            Busy {
                host: self,
                exclusive: false,
            }
        })
    }

    /// Claims the host for one lane alone, unless another lane has; `Busy::wait_alone` then waits
    /// for the others' work in hand to end. A host-link job is timed with every other GPU of the
    /// host idle: beside another GPU's job its copies shared the host's memory and links and
    /// moved by up to 36% (transfers, streams on two H200s, reports/gpus-h200x2/suite-all), while
    /// device-only jobs timed side by side agreed with a one-GPU run to 0.78% at p90.
    fn try_exclusive(&self) -> Option<Busy<'_>> {
        let mut c = self.count();
        (!c.exclusive).then(|| {
            c.exclusive = true;
            c.busy += 1;
            Busy {
                host: self,
                exclusive: true,
            }
        })
    }
}

/// A lane's work in hand, counted until it drops (an error or a panic ends it too).
struct Busy<'h> {
    host: &'h HostShare,
    exclusive: bool,
}

impl Busy<'_> {
    /// For exclusive work, returns once it is the only work running on the host (later work waits
    /// for it to drop); shared work goes at once.
    fn wait_alone(&self, stop: &AtomicBool) {
        if !self.exclusive {
            return;
        }
        let mut c = self.host.count();
        // The timeout only bounds how late a stop (another lane's failure) is seen.
        while c.busy > 1 && !stop.load(Ordering::SeqCst) {
            c = self
                .host
                .work_ended
                .wait_timeout(c, Duration::from_millis(100))
                .map(|(g, _)| g)
                .unwrap_or_else(|e| e.into_inner().0);
        }
    }
}

impl Drop for Busy<'_> {
    fn drop(&mut self) {
        let mut c = self.host.count();
        c.busy -= 1;
        if self.exclusive {
            c.exclusive = false;
        }
        drop(c);
        self.host.work_ended.notify_all();
    }
}

struct HeldSlot<'a>(&'a AtomicBool);

impl Drop for HeldSlot<'_> {
    fn drop(&mut self) {
        self.0.store(false, Ordering::SeqCst);
    }
}

/// `run`, with the host's ncu slot and host link shared with other runs of this process.
pub fn run_sharing(
    lanes: &[&dyn Executor],
    plans: &[SuitePlan],
    settings: &RunSettings,
    host: &HostShare,
    finished: &mut (dyn FnMut(&Path) + Send),
) -> anyhow::Result<i32> {
    if lanes.is_empty() {
        bail!("no GPU to run on");
    }
    let envs: Vec<Environment> = lanes.iter().map(|l| l.environment()).collect();
    let mut suites = Vec::new();
    let mut infos = Vec::new();
    for plan in plans.iter().filter(|p| !p.jobs.is_empty()) {
        let (suite, info) = SuiteRun::open(plan, settings, &envs)?;
        suites.push(suite);
        infos.push(info);
    }
    let profiling = settings.profile.is_some();
    let mut tasks: Vec<(usize, usize, u32, usize)> = Vec::new();
    // On several GPUs, suites that time the host link go first: their tasks take the host alone,
    // and at the start no other GPU is in an ncu pass that they would wait out. (One GPU keeps
    // the suites' order, and with it the conditions its earlier runs were timed in.)
    let mut order: Vec<usize> = (0..suites.len()).collect();
    if lanes.len() > 1 {
        order.sort_by_key(|&si| !suites[si].host_link);
    }
    for si in order {
        let sr = &suites[si];
        for (gi, jobs) in sr.group_jobs.iter().enumerate() {
            for round in 0..sr.timing.rounds.max(1) {
                tasks.extend((0..jobs.len()).map(|ji| (si, gi, round, ji)));
            }
        }
    }
    let steps = tasks.len() as u64
        + if profiling {
            suites.iter().map(|s| s.plan.jobs.len() as u64).sum()
        } else {
            0
        };
    let bar = if settings.quiet {
        ProgressBar::hidden()
    } else {
        ProgressBar::new(steps)
    };
    bar.set_style(
        ProgressStyle::with_template("{elapsed_precise} [{bar:30}] {pos}/{len} {msg}")
            .unwrap_or_else(|_| ProgressStyle::default_bar())
            .progress_chars("=> "),
    );
    let shared = Mutex::new(Shared {
        so_far: suites
            .iter()
            .map(|s| s.group_jobs.iter().map(|g| vec![None; g.len()]).collect())
            .collect(),
        left: suites
            .iter()
            .map(|s| {
                s.group_jobs
                    .iter()
                    .map(|g| g.len() * s.timing.rounds.max(1) as usize)
                    .collect()
            })
            .collect(),
        open_groups: suites.iter().map(|s| s.groups.len()).collect(),
        groups_timing: suites.iter().map(|s| s.groups.len()).sum(),
        open_passes: vec![0; suites.len()],
        passes: VecDeque::new(),
        next_task: 0,
        pass_failed: vec![false; suites.len()],
        infos,
        codes: vec![None; suites.len()],
        finished,
    });
    let lock = || shared.lock().unwrap_or_else(|e| e.into_inner());
    let pass_ready = Condvar::new();
    let append = |sr: &SuiteRun, r: &Record| {
        let results = sr.dir.join(store::RESULTS);
        store::append_jsonl(&results, r)
            .with_context(|| format!("appending to {}", results.display()))
    };
    // A suite is finished when every group is timed and every pass has run: its `run.json` gets
    // its end, its reports their last rendering, and `finished` its directory.
    let finish_if_done = |p: &mut Shared, si: usize| -> anyhow::Result<()> {
        if p.open_groups[si] > 0 || p.open_passes[si] > 0 || p.codes[si].is_some() {
            return Ok(());
        }
        let sr = &suites[si];
        let wrong = p.so_far[si]
            .iter()
            .flatten()
            .flatten()
            .any(|r| r.status != JobStatus::Ok);
        p.codes[si] = Some(if wrong || p.pass_failed[si] {
            exit::JOBS_FAILED
        } else {
            exit::OK
        });
        let info = &mut p.infos[si];
        if let Some((t0, started)) = sr.began.get() {
            info.started = started.clone();
            info.wall_seconds = Some(t0.elapsed().as_secs_f64());
        }
        info.finished = Some(now());
        store::save_info(&sr.dir, info)?;
        warn_on_error(render_reports(&sr.dir));
        let _ = std::fs::remove_dir_all(&sr.work);
        if !settings.quiet {
            bar.suspend(|| eprintln!("report: {}", sr.dir.join("report.md").display()));
        }
        (p.finished)(&sr.dir);
        Ok(())
    };
    let stop = AtomicBool::new(false);
    // ncu sessions of one host run one at a time whatever GPU they profile (a driver-wide lock:
    // scripts/ncu-lock-probe, docs/fleet.md), so a lane profiles only holding the host's `ncu`
    // slot, and a free lane of a several-GPU run takes a ready pass before its next job: the
    // passes then run beside the other GPUs' timing instead of after it. A task that times the
    // host link (a job crossing it, or the first job of a group whose bounds measure it) waits
    // for the host to itself (`HostShare::try_exclusive`).
    let interleave = lanes.len() > 1;
    let lane_work = |li: usize, lane: &dyn Executor, gpu: Option<String>| -> anyhow::Result<()> {
        let mut measured: Vec<(usize, usize)> = Vec::new();
        loop {
            let (work, busy) = {
                let mut p = lock();
                loop {
                    if stop.load(Ordering::SeqCst) {
                        return Ok(());
                    }
                    let timing_left = p.next_task < tasks.len();
                    let next_alone = timing_left && {
                        let (si, gi, _, ji) = tasks[p.next_task];
                        let sr = &suites[si];
                        sr.group_jobs[gi][ji].crosses_host_link()
                            || (sr.host_link && !measured.contains(&(si, gi)))
                    };
                    // A pass started now would hold up the next task, which needs the host alone.
                    if (interleave || !timing_left)
                        && !next_alone
                        && !p.passes.is_empty()
                        && let Some(busy) = host.try_share()
                        && let Some(held) = host.try_take_ncu()
                        && let Some(pass) = p.passes.pop_front()
                    {
                        break (Work::Profile(pass, held), busy);
                    }
                    if timing_left {
                        let task = tasks[p.next_task];
                        if let Some(busy) = if next_alone {
                            host.try_exclusive()
                        } else {
                            host.try_share()
                        } {
                            p.next_task += 1;
                            break (Work::Time(task), busy);
                        }
                    }
                    if p.groups_timing == 0 && p.passes.is_empty() {
                        return Ok(());
                    }
                    p = pass_ready
                        .wait_timeout(p, Duration::from_millis(200))
                        .map(|(g, _)| g)
                        .unwrap_or_else(|e| e.into_inner().0);
                }
            };
            busy.wait_alone(&stop);
            if stop.load(Ordering::SeqCst) {
                return Ok(());
            }
            match work {
                Work::Time((si, gi, round, ji)) => {
                    let sr = &suites[si];
                    sr.began.get_or_init(|| (Instant::now(), now()));
                    let group = &sr.groups[gi];
                    if !measured.contains(&(si, gi)) {
                        bar.set_message(format!("{group}: copy bounds"));
                        // Each lane's own file names in the shared work directory.
                        let tag = if lanes.len() > 1 {
                            format!("{gi}-gpu{li}")
                        } else {
                            gi.to_string()
                        };
                        let ctx = sr.ctx(settings.seed);
                        let bounds = BoundsRecord {
                            gpu: gpu.clone(),
                            ..bounds(lane, &ctx, &tag, group, &sr.group_jobs[gi])?
                        };
                        let computes = compute_bounds(lane, &ctx, &tag, group, &sr.group_jobs[gi])?;
                        let _saving = lock();
                        append(sr, &Record::Bounds(bounds))?;
                        for record in computes {
                            append(
                                sr,
                                &Record::Compute(ComputeBoundRecord {
                                    gpu: gpu.clone(),
                                    ..record
                                }),
                            )?;
                        }
                        measured.push((si, gi));
                    }
                    let job = sr.group_jobs[gi][ji];
                    let rounds = sr.timing.rounds.max(1);
                    bar.set_message(format!(
                        "{group}: {}{}",
                        job.label(),
                        if rounds > 1 {
                            format!(" (round {}/{rounds})", round + 1)
                        } else {
                            String::new()
                        }
                    ));
                    // Each round draws its own inputs: seed, seed + 1 (the second check), seed + 2, …
                    let ctx = sr.ctx(settings.seed.wrapping_add(2 * round as u64));
                    let tag = if round == 0 {
                        format!("job-{gi}-{ji}")
                    } else {
                        format!("job-{gi}-{ji}-r{round}")
                    };
                    let record = JobRecord {
                        gpu: gpu.clone(),
                        ..run_job(lane, &ctx, sr.plan.suite, job, &tag)?
                    };
                    let mut p = lock();
                    let record = if rounds > 1 {
                        JobRecord::with_round(p.so_far[si][gi][ji].take(), record)
                    } else {
                        record
                    };
                    append(sr, &Record::Job(record.clone()))?;
                    p.so_far[si][gi][ji] = Some(record);
                    p.left[si][gi] -= 1;
                    bar.inc(1);
                    if p.left[si][gi] == 0 {
                        // The group is timed: its pass (one per group: a second session would only
                        // queue behind the first) may start.
                        if profiling {
                            let ran: Vec<&JobSpec> = sr.group_jobs[gi]
                                .iter()
                                .zip(p.so_far[si][gi].iter().flatten())
                                .filter(|(_, r)| {
                                    r.status != JobStatus::Failed && r.status != JobStatus::TimedOut
                                })
                                .map(|(j, _)| *j)
                                .collect();
                            if !ran.is_empty() {
                                p.open_passes[si] += 1;
                                p.passes.push_back((si, gi, format!("profile-{gi}"), ran));
                            }
                        }
                        p.open_groups[si] -= 1;
                        p.groups_timing -= 1;
                        pass_ready.notify_all();
                        warn_on_error(render_reports(&sr.dir));
                        finish_if_done(&mut p, si)?;
                    }
                }
                Work::Profile((si, gi, tag, jobs), held) => {
                    let sr = &suites[si];
                    bar.set_message(format!("{}: ncu ({} variants)", sr.groups[gi], jobs.len()));
                    let records = lane.profile(&sr.ctx(settings.seed), &tag, &jobs);
                    let mut p = lock();
                    for r in records {
                        p.pass_failed[si] |= r.error.is_some() || !r.missing.is_empty();
                        append(
                            sr,
                            &Record::Profile(ProfileRecord {
                                gpu: gpu.clone(),
                                ..r
                            }),
                        )?;
                    }
                    p.open_passes[si] -= 1;
                    drop(held);
                    pass_ready.notify_all();
                    bar.inc(jobs.len() as u64);
                    warn_on_error(render_reports(&sr.dir));
                    finish_if_done(&mut p, si)?;
                }
            }
            // A lane waiting for the host (or for it alone) need not sleep out its timeout. Taking
            // the lock first: a lane between a failed claim and its wait holds it, so it is either
            // waiting already or will see the host free. (Runs of other models side by side have
            // their own Condvar and find out at their next timeout, 200 ms at most.)
            drop(busy);
            drop(lock());
            pass_ready.notify_all();
        }
    };
    on_every_lane(lanes, &envs, &stop, &lane_work)?;
    bar.finish_and_clear();
    let p = shared.into_inner().unwrap_or_else(|e| e.into_inner());
    Ok(p.codes.iter().flatten().copied().max().unwrap_or(exit::OK))
}

/// What a lane does: given its index, its executor and its GPU's UUID.
type LaneWork<'a> = dyn Fn(usize, &dyn Executor, Option<String>) -> anyhow::Result<()> + Sync + 'a;

/// Raises the stop flag if its thread unwinds.
struct StopOnPanic<'a>(&'a AtomicBool);

impl Drop for StopOnPanic<'_> {
    fn drop(&mut self) {
        if std::thread::panicking() {
            self.0.store(true, Ordering::SeqCst);
        }
    }
}

/// Runs `work` once per lane, each on its own thread (a lane is one GPU), and waits for all;
/// the first error stops the others before their next task and is returned.
fn on_every_lane(
    lanes: &[&dyn Executor],
    envs: &[Environment],
    stop: &AtomicBool,
    work: &LaneWork,
) -> anyhow::Result<()> {
    let results: Vec<anyhow::Result<()>> = std::thread::scope(|s| {
        let handles: Vec<_> = lanes
            .iter()
            .zip(envs)
            .enumerate()
            .map(|(li, (lane, env))| {
                let gpu = env.device.as_ref().map(|d| d.uuid.clone());
                s.spawn(move || {
                    // A lane that panics stops the others too: they would wait for its group forever.
                    let _stop_on_panic = StopOnPanic(stop);
                    let result = work(li, *lane, gpu);
                    if result.is_err() {
                        stop.store(true, Ordering::SeqCst);
                    }
                    result
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|_| Err(anyhow::anyhow!("a lane's thread panicked")))
            })
            .collect()
    });
    results.into_iter().collect()
}

/// The copy bounds of a group: a copy of as many bytes as the group's largest buffer, read once and written once.
fn bounds(
    executor: &dyn Executor,
    ctx: &RunContext,
    tag: &str,
    group: &str,
    jobs: &[&JobSpec],
) -> anyhow::Result<BoundsRecord> {
    let bytes = jobs
        .iter()
        .flat_map(|j| j.buffers.iter().map(|b| b.bytes()))
        .max()
        .unwrap_or(0);
    let failed = |e: String| BoundsRecord {
        group: group.to_string(),
        bytes,
        memcpy: None,
        copy_kernel: None,
        error: Some(e),
        fma: None,
        gpu: None,
        host: None,
    };
    if bytes == 0 {
        return Ok(failed("the group has no buffers to copy".into()));
    }
    Ok(
        match executor.bounds(ctx, &format!("bounds-{tag}"), bytes) {
            Ok(o) => BoundsRecord {
                group: group.to_string(),
                bytes: o.bytes,
                memcpy: stats::summarize(&o.memcpy_samples_ms),
                copy_kernel: stats::summarize(&o.kernel_samples_ms),
                error: None,
                fma: o.fma.and_then(|(samples, flops, sm_count)| {
                    Some(FmaRate {
                        flops,
                        summary: stats::summarize(&samples)?,
                        sm_count,
                    })
                }),
                gpu: None,
                host: o.host.as_ref().map(HostLinkBounds::from_samples),
            },
            Err(Failure::Fatal(why)) => bail!("{why}"),
            Err(f) => failed(f.message()),
        },
    )
}

/// The vendor compute bounds of a group: cuBLAS once per distinct shape its jobs ask for.
fn compute_bounds(
    executor: &dyn Executor,
    ctx: &RunContext,
    tag: &str,
    group: &str,
    jobs: &[&JobSpec],
) -> anyhow::Result<Vec<ComputeBoundRecord>> {
    let mut wanted: Vec<(&BoundSpec, String, f64)> = Vec::new();
    for j in jobs {
        if let (BoundSpec::Cublas { shape, .. }, Some(key)) = (&j.bound, j.bound.key())
            && !wanted.iter().any(|(_, k, _)| *k == key)
        {
            wanted.push((&j.bound, key, shape.flops()));
        }
    }
    let mut out = Vec::new();
    for (bi, (bound, key, flops)) in wanted.into_iter().enumerate() {
        let record = |summary, samples_ms, math_mode, error| ComputeBoundRecord {
            group: group.to_string(),
            key: key.clone(),
            math_mode,
            flops,
            summary,
            samples_ms,
            error,
            gpu: None,
        };
        out.push(
            match executor.compute_bound(ctx, &format!("compute-{tag}-{bi}"), bound) {
                Ok(o) => record(
                    stats::summarize(&o.samples_ms),
                    o.samples_ms,
                    o.math_mode,
                    None,
                ),
                Err(Failure::Fatal(why)) => bail!("{why}"),
                Err(f) => record(None, Vec::new(), String::new(), Some(f.message())),
            },
        );
    }
    Ok(out)
}

/// Runs one job and makes its record; a failed job keeps its whole log in the run's `logs/`.
fn run_job(
    executor: &dyn Executor,
    ctx: &RunContext,
    suite: &Suite,
    job: &JobSpec,
    tag: &str,
) -> anyhow::Result<JobRecord> {
    let t0 = Instant::now();
    let nvml_before = executor.snapshot();
    let outcome = executor.job(ctx, tag, job);
    let nvml_after = executor.snapshot();
    let description = suite
        .manifest
        .variants
        .iter()
        .find(|v| v.name == job.key.variant)
        .map(|v| v.description.clone())
        .unwrap_or_default();
    // Failed until the outcome says otherwise.
    let mut record = JobRecord {
        key: job.key.clone(),
        label: job.label(),
        description,
        work: job.work,
        bound: job.bound.clone(),
        launches: job.launches.len(),
        host_link: job.crosses_host_link(),
        noise_threshold_pct: job.noise_threshold_pct,
        nvml_before,
        nvml_after,
        ..Default::default()
    };
    match outcome {
        Ok(o) => {
            let passed =
                |c: &Option<crate::verify::Correctness>| c.as_ref().is_none_or(|c| c.passed);
            record.status = if passed(&o.correctness)
                && passed(&o.correctness_after)
                && passed(&o.correctness_during)
            {
                JobStatus::Ok
            } else {
                JobStatus::Wrong
            };
            record.summary = stats::summarize(&o.samples_ms);
            record.correctness = o.correctness;
            record.correctness_after = o.correctness_after;
            record.samples_ms = o.samples_ms;
            record.runs_per_sample = o.runs_per_sample;
            record.stopped_by = o.stopped_by;
            record.timing_method = o.timing_method;
            record.correctness_during = o.correctness_during;
            record.verified_during = o.verified_during;
            record.excluded_samples = o.excluded_samples;
            record.warmup_ms = o.warmup_ms;
            record.sample_clock_mhz = o.sample_clock_mhz;
            record.occupancy = o.occupancy;
            record.occupancy_error = o.occupancy_error;
            record.timeline = o.timeline;
            record.compilers = o
                .compile
                .iter()
                .map(|c| c.compiler.clone())
                .filter(|c| !c.is_empty())
                .collect();
            record.compilers.dedup();
        }
        Err(Failure::Fatal(why)) => bail!("{why}"),
        Err(failure) => {
            if matches!(failure, Failure::TimedOut { .. }) {
                record.status = JobStatus::TimedOut;
            }
            let mut message = failure.message();
            if let Some(log) = failure.log() {
                // work/ goes when the run ends; a failed job's whole log stays.
                let kept = ctx.dir.join("logs").join(format!("{tag}.log"));
                if std::fs::create_dir_all(ctx.dir.join("logs"))
                    .and_then(|_| std::fs::copy(log, &kept))
                    .is_ok()
                {
                    message.push_str(&format!("\n(full log: logs/{tag}.log)"));
                }
            }
            record.error = Some(message);
        }
    }
    record.wall_seconds = t0.elapsed().as_secs_f64();
    Ok(record)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::executor::MockExecutor;

    fn settings(out: &Path, profile: bool) -> RunSettings {
        RunSettings {
            out: out.to_path_buf(),
            timing: TimingConfig::default(),
            cache: None,
            seed: 1,
            timeout: Duration::from_secs(5),
            profile: profile.then(|| ProfileRequest {
                names: vec![],
                clock_control: ClockControl::None,
                duration_runs: crate::records::DURATION_RUNS,
            }),
            command_line: "test".into(),
            quiet: true,
            shard: None,
        }
    }

    /// A suite of this repository, by its manifest's path from the crate root.
    fn repo_suite(manifest: &str) -> Suite {
        crate::suite::load(&Path::new(env!("CARGO_MANIFEST_DIR")).join(manifest)).unwrap()
    }

    /// Every run directory is one of `suites`, finished, with each job timed once and profiled once.
    fn assert_each_run_complete(dirs: &[PathBuf], suites: &[Suite]) {
        for dir in dirs {
            let (run, _) = store::load_run(dir).unwrap();
            let suite = suites.iter().find(|s| s.name() == run.info.suite).unwrap();
            assert!(run.info.finished.is_some() && run.info.wall_seconds.is_some());
            assert_eq!(
                (run.jobs.len(), run.profiles.len()),
                (suite.jobs.len(), suite.jobs.len())
            );
        }
    }

    // Orchestration only, through the mock: every job of a built-in suite gets a record, saved as it goes.
    #[test]
    fn a_mock_run_records_every_job_bound_and_profile_and_says_mock() {
        let d = tempfile::tempdir().unwrap();
        let suite = repo_suite("kernels/shared-memory/suite.toml");
        let suites = [suite];
        let mock = MockExecutor::default();
        let s = settings(d.path(), true);
        let mut plans = plan(
            &suites,
            &[],
            s.profile.as_ref(),
            &Catalog::builtin().unwrap(),
        )
        .unwrap();
        screen(&mut plans, &mock).unwrap();
        let mut dirs = Vec::new();
        let code = run(&[&mock], &plans, &s, &mut |p| dirs.push(p.to_path_buf())).unwrap();
        assert_eq!(code, exit::OK);
        let (run, warnings) = store::load_run(&dirs[0]).unwrap();
        assert!(warnings.is_empty());
        assert!(run.info.mock && run.info.finished.is_some());
        assert_eq!(run.jobs.len(), suites[0].jobs.len());
        assert_eq!(run.profiles.len(), run.jobs.len());
        assert_eq!(run.bounds.len(), run.groups().len());
        assert!(run.jobs.iter().all(|j| j.status == JobStatus::Ok
            && j.correctness.is_none()
            && j.nvml_after.is_none()));
        let md = std::fs::read_to_string(dirs[0].join("report.md")).unwrap();
        assert!(md.contains("MOCK"), "{md}");
        assert!(!dirs[0].join("work").exists());
        // The mock loads no kernel: no occupancy is recorded or shown.
        assert!(run.jobs.iter().all(|j| j.occupancy.is_empty()) && !md.contains("### Occupancy"));
    }

    /// The mock, except that each job's outcome carries what a child reads about its launches.
    struct Occupied;

    impl Executor for Occupied {
        fn environment(&self) -> crate::executor::Environment {
            MockExecutor::default().environment()
        }
        fn screen(
            &self,
            defs: Vec<MetricDef>,
        ) -> anyhow::Result<crate::parse::query_metrics::Screened> {
            MockExecutor::default().screen(defs)
        }
        fn snapshot(&self) -> Option<crate::records::Snapshot> {
            None
        }
        fn bounds(
            &self,
            ctx: &RunContext,
            tag: &str,
            bytes: u64,
        ) -> Result<crate::records::BoundsOutcome, Failure> {
            MockExecutor::default().bounds(ctx, tag, bytes)
        }
        fn compute_bound(
            &self,
            ctx: &RunContext,
            tag: &str,
            bound: &BoundSpec,
        ) -> Result<crate::records::ComputeOutcome, Failure> {
            MockExecutor::default().compute_bound(ctx, tag, bound)
        }
        fn job(
            &self,
            ctx: &RunContext,
            tag: &str,
            job: &JobSpec,
        ) -> Result<crate::records::JobOutcome, Failure> {
            let mut outcome = MockExecutor::default().job(ctx, tag, job)?;
            outcome.occupancy = job
                .launches
                .iter()
                .map(|l| crate::records::LaunchOccupancy {
                    kernel: l.kernel.clone(),
                    threads_per_block: l.block.iter().product(),
                    registers_per_thread: 40,
                    static_shared_bytes: 0,
                    dynamic_shared_bytes: l.shared_bytes,
                    local_bytes_per_thread: 8,
                    max_threads_per_block: 1024,
                    max_warps_per_sm: 64,
                    active_blocks_per_sm: Some(3),
                    predicted_occupancy_pct: Some(37.5),
                    driver_error: None,
                    model: None,
                    limiters: vec![crate::occupancy::Limiter::Registers],
                    model_error: Some("test: no model".into()),
                })
                .collect();
            Ok(outcome)
        }
        fn profile(
            &self,
            ctx: &RunContext,
            tag: &str,
            jobs: &[&JobSpec],
        ) -> Vec<crate::records::ProfileRecord> {
            MockExecutor::default().profile(ctx, tag, jobs)
        }
    }

    #[test]
    fn a_jobs_occupancy_is_stored_with_its_record_and_reported() {
        let d = tempfile::tempdir().unwrap();
        let suite = repo_suite("kernels/occupancy/suite.toml");
        let suites = [suite];
        let plans = plan(&suites, &[], None, &Catalog::builtin().unwrap()).unwrap();
        let mut dirs = Vec::new();
        assert_eq!(
            run(&[&Occupied], &plans, &settings(d.path(), false), &mut |p| {
                dirs.push(p.to_path_buf())
            })
            .unwrap(),
            exit::OK
        );
        let (data, warnings) = store::load_run(&dirs[0]).unwrap();
        assert!(warnings.is_empty(), "{warnings:?}");
        assert!(data.jobs.iter().all(|j| j.occupancy.len() == 1
            && j.occupancy[0].registers_per_thread == 40
            && j.occupancy[0].limiter() == Some(crate::occupancy::Limiter::Registers)));
        let md = std::fs::read_to_string(dirs[0].join("report.md")).unwrap();
        assert!(
            md.contains("### Occupancy")
                && md.contains("| 37.5%")
                && md.contains("no limiter: test: no model"),
            "{md}"
        );
    }

    /// What the lanes of one test run share: how many jobs run at once (and the most seen), how
    /// many lanes have started a job, and every tag used (they name files in the one work
    /// directory), in call order.
    #[derive(Default)]
    struct Watch {
        running: std::sync::atomic::AtomicUsize,
        most: std::sync::atomic::AtomicUsize,
        started: std::sync::atomic::AtomicUsize,
        tags: Mutex<Vec<String>>,
        /// Passes running now, and the most that ever ran at once.
        profiling: std::sync::atomic::AtomicUsize,
        most_passes: std::sync::atomic::AtomicUsize,
        /// Steps (bounds, jobs, passes) running now, those of them that use the host link, and
        /// the tags of steps that had company they must not have.
        steps: std::sync::atomic::AtomicUsize,
        linked: std::sync::atomic::AtomicUsize,
        crowded: Mutex<Vec<String>>,
        /// For each job in start order, whether it crosses the host link.
        jobs_linked: Mutex<Vec<bool>>,
    }

    /// The mock of GPU `mock.index`, watched: its jobs take `job_ms` of wall time, or end as
    /// `failure` says; a lane's first device-only job waits (up to 5 s) until `lanes` lanes have
    /// started one.
    struct Watched<'w> {
        mock: MockExecutor,
        watch: &'w Watch,
        job_ms: u64,
        lanes: usize,
        failure: Option<Failure>,
        mine: std::sync::atomic::AtomicUsize,
    }

    impl<'w> Watched<'w> {
        fn new(index: u32, watch: &'w Watch, job_ms: u64, lanes: usize) -> Self {
            Watched {
                mock: MockExecutor {
                    index,
                    ..Default::default()
                },
                watch,
                job_ms,
                lanes,
                failure: None,
                mine: Default::default(),
            }
        }
        fn failing(watch: &'w Watch, failure: Failure) -> Self {
            Watched {
                failure: Some(failure),
                ..Watched::new(0, watch, 0, 1)
            }
        }
        fn log(&self, tag: &str) {
            self.watch.tags.lock().unwrap().push(tag.to_string());
        }
        /// Runs `step`, noting it as crowded if it uses the host link (`linked`) while another
        /// step runs, or starts while one that does runs. (A linked step counts itself in
        /// `linked` before `steps`, any step the other way round: of two starting together, one
        /// sees the other.)
        fn step<T>(&self, tag: &str, linked: bool, step: impl FnOnce() -> T) -> T {
            let w = self.watch;
            if linked {
                w.linked.fetch_add(1, Ordering::SeqCst);
            }
            let others = w.steps.fetch_add(1, Ordering::SeqCst);
            if w.linked.load(Ordering::SeqCst) > usize::from(linked) || (linked && others > 0) {
                w.crowded.lock().unwrap().push(tag.to_string());
            }
            let out = step();
            w.steps.fetch_sub(1, Ordering::SeqCst);
            if linked {
                w.linked.fetch_sub(1, Ordering::SeqCst);
            }
            out
        }
    }

    impl Executor for Watched<'_> {
        fn environment(&self) -> crate::executor::Environment {
            self.mock.environment()
        }
        fn screen(
            &self,
            defs: Vec<MetricDef>,
        ) -> anyhow::Result<crate::parse::query_metrics::Screened> {
            self.mock.screen(defs)
        }
        fn snapshot(&self) -> Option<crate::records::Snapshot> {
            None
        }
        fn bounds(
            &self,
            ctx: &RunContext,
            tag: &str,
            bytes: u64,
        ) -> Result<crate::records::BoundsOutcome, Failure> {
            self.log(tag);
            self.step(tag, ctx.host_link, || self.mock.bounds(ctx, tag, bytes))
        }
        fn compute_bound(
            &self,
            ctx: &RunContext,
            tag: &str,
            bound: &BoundSpec,
        ) -> Result<crate::records::ComputeOutcome, Failure> {
            self.log(tag);
            self.mock.compute_bound(ctx, tag, bound)
        }
        fn job(
            &self,
            ctx: &RunContext,
            tag: &str,
            job: &JobSpec,
        ) -> Result<crate::records::JobOutcome, Failure> {
            self.log(tag);
            if matches!(&self.failure, Some(Failure::Fatal(why)) if why == "panic") {
                panic!("this mock lane panics");
            }
            if let Some(f) = &self.failure {
                return Err(f.clone());
            }
            let w = self.watch;
            let now = w.running.fetch_add(1, Ordering::SeqCst) + 1;
            w.most.fetch_max(now, Ordering::SeqCst);
            // (A host-link job runs alone by design: it neither waits for nor counts as company.)
            if !job.crosses_host_link() && self.mine.fetch_add(1, Ordering::SeqCst) == 0 {
                w.started.fetch_add(1, Ordering::SeqCst);
                let t0 = Instant::now();
                while w.started.load(Ordering::SeqCst) < self.lanes
                    && t0.elapsed() < Duration::from_secs(5)
                {
                    std::thread::sleep(Duration::from_millis(1));
                }
            }
            w.jobs_linked.lock().unwrap().push(job.crosses_host_link());
            self.step(tag, job.crosses_host_link(), || {
                std::thread::sleep(Duration::from_millis(self.job_ms))
            });
            w.running.fetch_sub(1, Ordering::SeqCst);
            self.mock.job(ctx, tag, job)
        }
        fn profile(
            &self,
            ctx: &RunContext,
            tag: &str,
            jobs: &[&JobSpec],
        ) -> Vec<crate::records::ProfileRecord> {
            self.log(tag);
            let w = self.watch;
            let now = w.profiling.fetch_add(1, Ordering::SeqCst) + 1;
            w.most_passes.fetch_max(now, Ordering::SeqCst);
            self.step(tag, false, || {
                std::thread::sleep(Duration::from_millis(self.job_ms))
            });
            w.profiling.fetch_sub(1, Ordering::SeqCst);
            self.mock.profile(ctx, tag, jobs)
        }
    }

    #[test]
    fn two_gpus_share_a_suites_jobs_one_job_per_gpu_at_a_time_each_with_its_own_bounds() {
        let watch = Watch::default();
        let d = tempfile::tempdir().unwrap();
        let suite = repo_suite("kernels/shared-memory/suite.toml");
        let suites = [suite];
        let (a, b) = (Watched::new(0, &watch, 5, 2), Watched::new(1, &watch, 5, 2));
        let s = settings(d.path(), true);
        let mut plans = plan(
            &suites,
            &[],
            s.profile.as_ref(),
            &Catalog::builtin().unwrap(),
        )
        .unwrap();
        screen(&mut plans, &a).unwrap();
        let mut dirs = Vec::new();
        assert_eq!(
            run(&[&a, &b], &plans, &s, &mut |p| dirs.push(p.to_path_buf())).unwrap(),
            exit::OK
        );
        assert_eq!(
            watch.most.load(Ordering::SeqCst),
            2,
            "both GPUs ran jobs at once, and never more than one each"
        );
        let mut tags = watch.tags.lock().unwrap().clone();
        let all = tags.len();
        tags.sort();
        tags.dedup();
        assert_eq!(
            tags.len(),
            all,
            "no two steps share a tag (their files in the work directory): {tags:?}"
        );
        let (run, warnings) = store::load_run(&dirs[0]).unwrap();
        assert!(warnings.is_empty());
        let uuids: Vec<String> = run.info.gpus.iter().map(|g| g.uuid.clone()).collect();
        assert_eq!(uuids, ["MOCK-GPU-0", "MOCK-GPU-1"]);
        // Every job once, tagged with the GPU that ran it; both GPUs ran some.
        let mut ids: Vec<&str> = run.jobs.iter().map(|j| j.id()).collect();
        ids.sort();
        ids.dedup();
        assert_eq!(ids.len(), suites[0].jobs.len());
        assert_eq!(run.jobs.len(), suites[0].jobs.len());
        for uuid in &uuids {
            assert!(
                run.jobs.iter().any(|j| j.gpu.as_ref() == Some(uuid)),
                "GPU {uuid} ran no job"
            );
        }
        // Each GPU measured the bounds of every group it ran a job of, and each job is compared with its own GPU's.
        for j in &run.jobs {
            let gpu = j.gpu.clone().unwrap();
            let own = run
                .gpu_bounds
                .get(&(j.key.group.clone(), gpu.clone()))
                .unwrap_or_else(|| panic!("no bound of {} on {gpu}", j.key.group));
            assert_eq!(run.bound_of(j), Some(own));
        }
        assert_eq!(run.profiles.len(), run.jobs.len());
        assert!(
            run.profiles
                .values()
                .all(|p| p.gpu.as_ref().is_some_and(|g| uuids.contains(g)))
        );
        let md = std::fs::read_to_string(dirs[0].join("report.md")).unwrap();
        assert!(
            md.contains("GPU 1: MOCK GPU") && md.contains("Copy bound measured on each GPU"),
            "{md}"
        );
        assert!(
            md.lines()
                .any(|l| l.starts_with("| variant") && l.contains("| GPU ")),
            "a column says which GPU timed each job: {md}"
        );
    }

    #[test]
    fn one_gpu_times_every_job_of_every_suite_before_its_first_ncu_pass() {
        let watch = Watch::default();
        let d = tempfile::tempdir().unwrap();
        let suites = [
            repo_suite("kernels/shared-memory/suite.toml"),
            repo_suite("kernels/warp-divergence/suite.toml"),
        ];
        let lane = Watched::new(0, &watch, 0, 1);
        let s = settings(d.path(), true);
        let plans = plan(
            &suites,
            &[],
            s.profile.as_ref(),
            &Catalog::builtin().unwrap(),
        )
        .unwrap();
        let mut dirs = Vec::new();
        assert_eq!(
            run(&[&lane], &plans, &s, &mut |p| dirs.push(p.to_path_buf())).unwrap(),
            exit::OK
        );
        let tags = watch.tags.lock().unwrap().clone();
        let last_job = tags.iter().rposition(|t| t.starts_with("job-")).unwrap();
        let first_pass = tags.iter().position(|t| t.starts_with("profile-")).unwrap();
        assert!(last_job < first_pass, "{tags:?}");
        assert_eq!(watch.most.load(Ordering::SeqCst), 1);
        // Both runs finished, in suite order, each complete.
        assert_eq!(dirs.len(), 2);
        for (dir, suite) in dirs.iter().zip(&suites) {
            assert_eq!(store::load_run(dir).unwrap().0.info.suite, suite.name());
        }
        assert_each_run_complete(&dirs, &suites);
    }

    #[test]
    fn on_two_gpus_passes_run_beside_the_timing_one_at_a_time() {
        let watch = Watch::default();
        let d = tempfile::tempdir().unwrap();
        let suites = [
            repo_suite("kernels/shared-memory/suite.toml"),
            repo_suite("kernels/warp-divergence/suite.toml"),
        ];
        let (a, b) = (Watched::new(0, &watch, 5, 2), Watched::new(1, &watch, 5, 2));
        let s = settings(d.path(), true);
        let plans = plan(
            &suites,
            &[],
            s.profile.as_ref(),
            &Catalog::builtin().unwrap(),
        )
        .unwrap();
        let mut dirs = Vec::new();
        assert_eq!(
            run(&[&a, &b], &plans, &s, &mut |p| dirs.push(p.to_path_buf())).unwrap(),
            exit::OK
        );
        let tags = watch.tags.lock().unwrap().clone();
        let last_job = tags.iter().rposition(|t| t.starts_with("job-")).unwrap();
        let first_pass = tags.iter().position(|t| t.starts_with("profile-")).unwrap();
        assert!(
            first_pass < last_job,
            "no pass ran before the last job was timed: {tags:?}"
        );
        assert_eq!(
            watch.most_passes.load(Ordering::SeqCst),
            1,
            "one ncu session at a time"
        );
        // One pass per group, each once; every job timed once and profiled once.
        let passes: Vec<&String> = tags.iter().filter(|t| t.starts_with("profile-")).collect();
        let groups: usize = plans
            .iter()
            .map(|p| {
                p.jobs
                    .iter()
                    .map(|j| &j.key.group)
                    .collect::<std::collections::BTreeSet<_>>()
                    .len()
            })
            .sum();
        assert_eq!(passes.len(), groups, "{passes:?}");
        assert_eq!(dirs.len(), suites.len(), "every suite's run finished");
        assert_each_run_complete(&dirs, &suites);
    }

    #[test]
    fn a_job_that_crosses_the_host_link_is_timed_with_every_other_gpu_idle() {
        // Profiled (passes must keep off the host too) and not (device-only jobs, each lane's
        // first waiting for the other's, must still run side by side).
        for profile in [true, false] {
            let watch = Watch::default();
            let d = tempfile::tempdir().unwrap();
            let suites = [
                repo_suite("kernels/warp-divergence/suite.toml"),
                repo_suite("kernels/transfers/suite.toml"),
            ];
            let (a, b) = (Watched::new(0, &watch, 3, 2), Watched::new(1, &watch, 3, 2));
            let s = settings(d.path(), profile);
            let plans = plan(
                &suites,
                &[],
                s.profile.as_ref(),
                &Catalog::builtin().unwrap(),
            )
            .unwrap();
            assert!(
                !plans[0].jobs.iter().any(JobSpec::crosses_host_link)
                    && plans[1].jobs.iter().all(JobSpec::crosses_host_link)
            );
            let mut dirs = Vec::new();
            assert_eq!(
                run(&[&a, &b], &plans, &s, &mut |p| dirs.push(p.to_path_buf())).unwrap(),
                exit::OK
            );
            assert_eq!(
                *watch.crowded.lock().unwrap(),
                Vec::<String>::new(),
                "steps that shared the host with a host-link step"
            );
            let linked = watch.jobs_linked.lock().unwrap().clone();
            assert!(
                linked.windows(2).all(|w| w[0] >= w[1]),
                "the host-link suite (listed second) ran first: {linked:?}"
            );
            if profile {
                assert_each_run_complete(&dirs, &suites);
            } else {
                assert_eq!(
                    watch.most.load(Ordering::SeqCst),
                    2,
                    "device-only jobs still ran on both GPUs at once"
                );
                assert_eq!(
                    linked.len(),
                    suites.iter().map(|s| s.jobs.len()).sum::<usize>()
                );
            }
        }
    }

    /// Two one-GPU runs of `suites` side by side, as a host of two GPU models runs them, sharing
    /// one `HostShare`; both must end well.
    fn two_models_side_by_side(watch: &Watch, suites: &[Suite], profile: bool) {
        let d = tempfile::tempdir().unwrap();
        let (a, b) = (Watched::new(0, watch, 2, 1), Watched::new(1, watch, 2, 1));
        let request = ProfileRequest {
            names: vec![],
            clock_control: ClockControl::None,
            duration_runs: crate::records::DURATION_RUNS,
        };
        let plans = plan(
            suites,
            &[],
            profile.then_some(&request),
            &Catalog::builtin().unwrap(),
        )
        .unwrap();
        let host = HostShare::default();
        let (sa, sb) = (
            settings(&d.path().join("a"), profile),
            settings(&d.path().join("b"), profile),
        );
        let codes: Vec<i32> = std::thread::scope(|s| {
            let one = s.spawn(|| run_sharing(&[&a], &plans, &sa, &host, &mut |_| {}).unwrap());
            let two = s.spawn(|| run_sharing(&[&b], &plans, &sb, &host, &mut |_| {}).unwrap());
            vec![one.join().unwrap(), two.join().unwrap()]
        });
        assert_eq!(codes, [exit::OK, exit::OK]);
    }

    #[test]
    fn runs_of_two_gpu_models_time_host_link_jobs_with_the_other_model_idle_too() {
        let watch = Watch::default();
        let suites = [
            repo_suite("kernels/transfers/suite.toml"),
            repo_suite("kernels/warp-divergence/suite.toml"),
        ];
        two_models_side_by_side(&watch, &suites, false);
        assert_eq!(
            *watch.crowded.lock().unwrap(),
            Vec::<String>::new(),
            "steps that shared the host with a host-link step"
        );
        let jobs = suites.iter().map(|s| s.jobs.len()).sum::<usize>();
        assert_eq!(
            watch.jobs_linked.lock().unwrap().len(),
            2 * jobs,
            "each model ran every job"
        );
    }

    #[test]
    fn runs_of_two_gpu_models_share_the_hosts_one_ncu_session() {
        let watch = Watch::default();
        two_models_side_by_side(
            &watch,
            &[repo_suite("kernels/warp-divergence/suite.toml")],
            true,
        );
        assert_eq!(
            watch.most_passes.load(Ordering::SeqCst),
            1,
            "one ncu session on the host at a time"
        );
        let passes = watch
            .tags
            .lock()
            .unwrap()
            .iter()
            .filter(|t| t.starts_with("profile-"))
            .count();
        assert!(passes >= 2, "both runs profiled: {passes}");
    }

    #[test]
    fn a_lane_that_panics_stops_the_others_instead_of_leaving_them_waiting() {
        let watch = Watch::default();
        let d = tempfile::tempdir().unwrap();
        let suite = repo_suite("kernels/shared-memory/suite.toml");
        let suites = [suite];
        let healthy = Watched::new(0, &watch, 5, 1);
        let panicking = Watched::failing(&watch, Failure::Fatal("panic".into()));
        let s = settings(d.path(), true);
        let plans = plan(
            &suites,
            &[],
            s.profile.as_ref(),
            &Catalog::builtin().unwrap(),
        )
        .unwrap();
        let e = run(&[&healthy, &panicking], &plans, &s, &mut |_| {}).unwrap_err();
        assert!(e.to_string().contains("panicked"), "{e}");
    }

    #[test]
    fn gpus_are_pooled_by_model_in_the_order_first_seen() {
        let models: Vec<String> = ["H100", "H200", "H100", "H200", "L4"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        assert_eq!(
            pools_by_model(&models),
            vec![vec![0, 2], vec![1, 3], vec![4]]
        );
        assert!(pools_by_model(&[]).is_empty());
    }

    #[test]
    fn a_hung_job_keeps_its_log_and_a_fatal_failure_stops_the_run_unfinished() {
        let d = tempfile::tempdir().unwrap();
        let suite = repo_suite("tests/gpu/faults/suite.toml");
        let suites = [suite];
        let plans = plan(&suites, &[], None, &Catalog::builtin().unwrap()).unwrap();
        let log = d.path().join("hung.log");
        std::fs::write(&log, "started, then nothing").unwrap();
        let watch = Watch::default();
        let hung = Watched::failing(
            &watch,
            Failure::TimedOut {
                after: Duration::from_secs(20),
                log: Some(log),
            },
        );
        let mut dirs = Vec::new();
        assert_eq!(
            run(&[&hung], &plans, &settings(d.path(), false), &mut |p| dirs
                .push(p.to_path_buf()))
            .unwrap(),
            exit::JOBS_FAILED
        );
        let (data, _) = store::load_run(&dirs[0]).unwrap();
        assert!(data.jobs.iter().all(|j| j.status == JobStatus::TimedOut
            && j.error.as_deref().unwrap().contains("(full log: logs/job-")));
        assert_eq!(
            std::fs::read_dir(dirs[0].join("logs")).unwrap().count(),
            data.jobs.len()
        );

        let fatal = Watched::failing(&watch, Failure::Fatal("could not start gpu-lab".into()));
        let out = d.path().join("fatal");
        let e = run(&[&fatal], &plans, &settings(&out, false), &mut |_| {}).unwrap_err();
        assert!(e.to_string().contains("could not start gpu-lab"));
        let dir = std::fs::read_dir(&out)
            .unwrap()
            .next()
            .unwrap()
            .unwrap()
            .path();
        let (data, _) = store::load_run(&dir).unwrap();
        assert!(
            data.info.finished.is_none() && data.jobs.is_empty(),
            "an unfinished run, as a killed one"
        );
    }

    #[test]
    fn a_variant_no_suite_has_is_an_error_with_the_fix() {
        let suite = repo_suite("kernels/transpose/suite.toml");
        let suites = [suite];
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
