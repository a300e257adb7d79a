//! Dispatch: the suites' jobs handed to the lanes (a GPU each) of one host, one job per GPU at a time, the ncu passes one at a time; every record saved as it comes and each suite's run finished when its last step ends.

use std::collections::VecDeque;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use anyhow::bail;
use indicatif::{ProgressBar, ProgressStyle};

use crate::executor::{Environment, Executor};
use crate::profiler::activity_duration::take_activity_durations;
use crate::records::{BoundsRecord, ComputeBoundRecord, JobRecord, ProfileRecord, Record, RunInfo};
use crate::store;
use crate::suite::JobSpec;

use super::host_share::{Busy, HeldSlot, HostShare};
use super::lanes::on_every_lane;
use super::measure;
use super::planning::{RunSettings, SuitePlan};
use super::reports::{render_reports, warn_on_error};
use super::rules::{self, Queue, Task};
use super::suite_run::{SuiteRun, now};

/// Runs every plan with a job in it on `lanes`, the executors of one GPU each (one for a plain
/// run; every GPU of one model for `--gpus`); hands each finished run directory to `finished`.
/// Returns the exit code: 0, or `exit::JOBS_FAILED` when some job failed, was wrong or went unprofiled.
///
/// On one GPU every job of every suite is timed before the first ncu pass: jobs timed right after
/// a profile pass drifted by up to 6% against a run without ncu, while the group timed before any
/// pass agreed within 0.4% (transpose, H100: noise-h100 against rounds-h100,
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
    let (suites, infos) = open_suites(plans, settings, &envs)?;
    // Sanitized before any timing, on the first GPU: a CI run finds memory errors first.
    let sanitize_failed = suites
        .iter()
        .map(|s| {
            if settings.sanitize.is_empty() {
                Ok(Default::default())
            } else {
                super::sanitize::sanitize_suite(lanes[0], s, settings)
            }
        })
        .collect::<anyhow::Result<Vec<super::sanitize::Failed>>>()?;
    let counters_only = settings.profile.as_ref().is_some_and(|p| p.counters_only);
    let shapes: Vec<rules::SuiteShape> = suites
        .iter()
        .map(|s| rules::SuiteShape {
            // --sanitize-only, --counters-only: no group to time.
            group_sizes: if settings.sanitize_only || counters_only {
                Vec::new()
            } else {
                s.shape().group_sizes
            },
            ..s.shape()
        })
        .collect();
    let tasks = rules::timing_tasks(&shapes, lanes.len() > 1);
    let bar = progress_bar(settings, &suites, tasks.len());
    let mut shared = Shared::new(&shapes, infos, finished);
    shared.pass_failed = sanitize_failed.iter().map(|f| !f.is_empty()).collect();
    if counters_only {
        queue_every_pass(&mut shared, &suites);
    }
    let shared = Mutex::new(shared);
    let dispatch = Dispatch {
        sanitize_failed,
        suites,
        tasks,
        settings,
        host,
        several_gpus: lanes.len() > 1,
        bar,
        shared,
        pass_ready: Condvar::new(),
        stop: AtomicBool::new(false),
    };
    dispatch.finish_empty_shards()?;
    on_every_lane(
        lanes,
        &envs,
        &dispatch.stop,
        &|index: usize, executor: &dyn Executor, gpu: Option<String>| {
            dispatch.lane(&Lane {
                index,
                executor,
                gpu,
            })
        },
    )?;
    dispatch.bar.finish_and_clear();
    let p = dispatch
        .shared
        .into_inner()
        .unwrap_or_else(|e| e.into_inner());
    Ok(rules::run_exit_code(&p.codes))
}

/// Opens the run directory of every plan with a job in it, in plan order; in a shard run, of
/// every plan (a shard without a job of a suite still records that it ran: see
/// `Dispatch::finish_empty_shards`).
fn open_suites<'p>(
    plans: &'p [SuitePlan<'p>],
    settings: &RunSettings,
    envs: &[Environment],
) -> anyhow::Result<(Vec<SuiteRun<'p>>, Vec<RunInfo>)> {
    let mut suites = Vec::new();
    let mut infos = Vec::new();
    for plan in plans
        .iter()
        .filter(|p| settings.shard.is_some() || !p.jobs.is_empty())
    {
        let (suite, info) = SuiteRun::open(plan, settings, envs)?;
        suites.push(suite);
        infos.push(info);
    }
    Ok((suites, infos))
}

/// `--counters-only`: every group's pass is ready at once, with all its jobs (none is timed, so
/// none has failed its timing).
fn queue_every_pass<'p>(shared: &mut Shared<'p, '_>, suites: &[SuiteRun<'p>]) {
    for (si, sr) in suites.iter().enumerate() {
        for (gi, jobs) in sr.group_jobs.iter().enumerate() {
            if jobs.is_empty() {
                continue;
            }
            shared.open_passes[si] += 1;
            shared.passes.push_back(Pass {
                suite: si,
                group: gi,
                tag: rules::pass_tag(gi),
                jobs: jobs.clone(),
            });
        }
    }
}

/// The progress bar: a step per timing task, and per job profiled.
fn progress_bar(settings: &RunSettings, suites: &[SuiteRun], tasks: usize) -> ProgressBar {
    let steps = tasks as u64
        + if settings.profile.is_some() {
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
    bar
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

impl<'p, 'f> Shared<'p, 'f> {
    /// Nothing done yet: every task and group of `suites` left.
    fn new(
        suites: &[rules::SuiteShape],
        infos: Vec<RunInfo>,
        finished: &'f mut (dyn FnMut(&Path) + Send),
    ) -> Self {
        Shared {
            so_far: suites
                .iter()
                .map(|s| s.group_sizes.iter().map(|&g| vec![None; g]).collect())
                .collect(),
            left: suites
                .iter()
                .map(rules::SuiteShape::tasks_per_group)
                .collect(),
            open_groups: suites.iter().map(|s| s.group_sizes.len()).collect(),
            groups_timing: suites.iter().map(|s| s.group_sizes.len()).sum(),
            open_passes: vec![0; suites.len()],
            passes: VecDeque::new(),
            next_task: 0,
            pass_failed: vec![false; suites.len()],
            infos,
            codes: vec![None; suites.len()],
            finished,
        }
    }
}

/// An ncu pass: a group of a suite, its tag, and the group's jobs that ran.
struct Pass<'p> {
    suite: usize,
    group: usize,
    tag: String,
    jobs: Vec<&'p JobSpec>,
}

/// What a lane does next: time a task, or run a pass holding the host's ncu slot.
enum Work<'p, 's> {
    Time(Task),
    Profile(Pass<'p>, HeldSlot<'s>),
}

/// One lane: its index, its GPU's executor and UUID.
struct Lane<'l> {
    index: usize,
    executor: &'l dyn Executor,
    gpu: Option<String>,
}

/// One dispatch: the suites' runs, the timing tasks in order, and what the lanes share.
struct Dispatch<'p, 's, 'f> {
    /// By suite: the variants compute-sanitizer failed (their jobs are recorded wrong).
    sanitize_failed: Vec<super::sanitize::Failed>,
    suites: Vec<SuiteRun<'p>>,
    tasks: Vec<Task>,
    settings: &'s RunSettings,
    host: &'s HostShare,
    several_gpus: bool,
    bar: ProgressBar,
    shared: Mutex<Shared<'p, 'f>>,
    /// Signalled when a pass is queued or a lane's work ends.
    pass_ready: Condvar,
    /// Raised by a lane's error or panic: the others stop before their next step.
    stop: AtomicBool,
}

impl<'p, 's, 'f> Dispatch<'p, 's, 'f> {
    /// The shared state, also after a lane panicked holding it (the stop flag ends the run then).
    fn lock(&self) -> MutexGuard<'_, Shared<'p, 'f>> {
        self.shared.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn stopped(&self) -> bool {
        self.stop.load(Ordering::SeqCst)
    }

    /// A lane's life: takes work until none is left (or another lane stopped the run), each step
    /// once the host lets it run.
    fn lane(&self, lane: &Lane) -> anyhow::Result<()> {
        // The groups whose bounds this lane has measured, by suite and group.
        let mut measured: Vec<(usize, usize)> = Vec::new();
        while let Some((work, busy)) = self.next_work(&measured) {
            busy.wait_alone(&self.stop);
            if self.stopped() {
                return Ok(());
            }
            match work {
                Work::Time(task) => self.time(lane, task, &mut measured)?,
                Work::Profile(pass, held) => self.profile(lane, pass, held)?,
            }
            self.work_ended(busy);
        }
        Ok(())
    }

    /// The lane's next work, with its claim on the host; `None` once there is none left or the
    /// run stopped. ncu sessions of one host run one at a time whatever GPU they profile (a
    /// driver-wide lock: scripts/ncu-lock-probe, docs/fleet.md), so a lane profiles only holding
    /// the host's `ncu` slot, and a free lane of a several-GPU run takes a ready pass before its
    /// next job: the passes then run beside the other GPUs' timing instead of after it. A task
    /// that times the host link (a job crossing it, or the first job of a group whose bounds
    /// measure it) waits for the host to itself (`HostShare::try_exclusive`).
    fn next_work(&self, measured: &[(usize, usize)]) -> Option<(Work<'p, 's>, Busy<'s>)> {
        let mut p = self.lock();
        loop {
            if self.stopped() {
                return None;
            }
            let next = self.tasks.get(p.next_task).copied();
            let queue = Queue {
                several_gpus: self.several_gpus,
                next_task_alone: next.map(|t| self.needs_host_alone(t, measured)),
                pass_ready: !p.passes.is_empty(),
                groups_timing: p.groups_timing,
            };
            if queue.pass_first()
                && let Some(busy) = self.host.try_share()
                && let Some(held) = self.host.try_take_ncu()
                && let Some(pass) = p.passes.pop_front()
            {
                return Some((Work::Profile(pass, held), busy));
            }
            if let (Some(task), Some(alone)) = (next, queue.next_task_alone)
                && let Some(busy) = if alone {
                    self.host.try_exclusive()
                } else {
                    self.host.try_share()
                }
            {
                p.next_task += 1;
                return Some((Work::Time(task), busy));
            }
            if queue.lane_done() {
                return None;
            }
            p = self
                .pass_ready
                .wait_timeout(p, Duration::from_millis(200))
                .map(|(g, _)| g)
                .unwrap_or_else(|e| e.into_inner().0);
        }
    }

    /// Whether `task` needs the host to itself, given the groups this lane has measured.
    fn needs_host_alone(&self, task: Task, measured: &[(usize, usize)]) -> bool {
        let sr = &self.suites[task.suite];
        rules::needs_host_alone(
            sr.group_jobs[task.group][task.job].crosses_host_link(),
            sr.host_link,
            measured.contains(&(task.suite, task.group)),
        )
    }

    /// Times one task on the lane's GPU, after the group's bounds if the lane has none yet.
    fn time(
        &self,
        lane: &Lane,
        task: Task,
        measured: &mut Vec<(usize, usize)>,
    ) -> anyhow::Result<()> {
        let sr = &self.suites[task.suite];
        sr.began.get_or_init(|| (Instant::now(), now()));
        // Every program of the suite compiled at once, on all cores, before its first job: the
        // jobs then load from the cache instead of compiling one by one.
        sr.prebuilt.get_or_init(|| {
            self.bar
                .set_message(format!("{}: compiling", sr.plan.suite.name()));
            let jobs: Vec<&JobSpec> = sr.group_jobs.iter().flatten().copied().collect();
            lane.executor
                .prebuild(&sr.ctx(self.settings.seed), "prebuild", &jobs);
        });
        if !measured.contains(&(task.suite, task.group)) {
            self.measure_bounds(lane, task.suite, task.group)?;
            measured.push((task.suite, task.group));
        }
        let job = sr.group_jobs[task.group][task.job];
        let rounds = sr.timing.rounds.max(1);
        self.bar.set_message(rules::job_message(
            &sr.groups[task.group],
            &job.label(),
            task.round,
            rounds,
        ));
        let ctx = sr.ctx(rules::round_seed(self.settings.seed, task.round));
        let tag = rules::job_tag(task.group, task.job, task.round);
        let record = JobRecord {
            gpu: lane.gpu.clone(),
            ..measure::run_job(lane.executor, &ctx, sr.plan.suite, job, &tag)?
        };
        self.save_job(task, rounds, record)
    }

    /// Measures a group's copy and compute bounds on the lane's GPU and saves them.
    fn measure_bounds(&self, lane: &Lane, si: usize, gi: usize) -> anyhow::Result<()> {
        let sr = &self.suites[si];
        let group = &sr.groups[gi];
        self.bar.set_message(format!("{group}: copy bounds"));
        let tag = rules::bounds_tag(gi, lane.index, self.several_gpus);
        let ctx = sr.ctx(self.settings.seed);
        let jobs = &sr.group_jobs[gi];
        let bounds = BoundsRecord {
            gpu: lane.gpu.clone(),
            ..measure::bounds(lane.executor, &ctx, &tag, group, jobs)?
        };
        let computes = measure::compute_bounds(lane.executor, &ctx, &tag, group, jobs)?;
        let _saving = self.lock();
        sr.append(&Record::Bounds(bounds))?;
        for record in computes {
            sr.append(&Record::Compute(ComputeBoundRecord {
                gpu: lane.gpu.clone(),
                ..record
            }))?;
        }
        Ok(())
    }

    /// Saves a task's record (merged with the job's earlier rounds); the last task of a group
    /// queues its pass, renders the reports and may finish the suite.
    fn save_job(&self, task: Task, rounds: u32, record: JobRecord) -> anyhow::Result<()> {
        let Task {
            suite: si,
            group: gi,
            job: ji,
            ..
        } = task;
        let sr = &self.suites[si];
        let mut p = self.lock();
        let mut record = if rounds > 1 {
            JobRecord::with_round(p.so_far[si][gi][ji].take(), record)
        } else {
            record
        };
        // A variant compute-sanitizer failed is wrong, however its checks went.
        if let Some(said) = self.sanitize_failed[si].get(&record.key.label())
            && record.status == crate::records::JobStatus::Ok
        {
            record.status = crate::records::JobStatus::Wrong;
            record.error = Some(said.clone());
        }
        sr.append(&Record::Job(record.clone()))?;
        p.so_far[si][gi][ji] = Some(record);
        p.left[si][gi] -= 1;
        self.bar.inc(1);
        if p.left[si][gi] > 0 {
            return Ok(());
        }
        // The group is timed: its pass (one per group: a second session would only queue behind
        // the first) may start.
        if self.settings.profile.is_some() {
            let ran: Vec<&JobSpec> = sr.group_jobs[gi]
                .iter()
                .zip(p.so_far[si][gi].iter().flatten())
                .filter(|(_, r)| rules::worth_profiling(r.status))
                .map(|(j, _)| *j)
                .collect();
            if !ran.is_empty() {
                p.open_passes[si] += 1;
                p.passes.push_back(Pass {
                    suite: si,
                    group: gi,
                    tag: rules::pass_tag(gi),
                    jobs: ran,
                });
            }
        }
        p.open_groups[si] -= 1;
        p.groups_timing -= 1;
        self.pass_ready.notify_all();
        warn_on_error(render_reports(&sr.dir));
        self.finish_if_done(&mut p, si)
    }

    /// Runs a group's ncu pass on the lane's GPU, holding the host's ncu slot, and saves its records.
    fn profile(&self, lane: &Lane, pass: Pass, held: HeldSlot) -> anyhow::Result<()> {
        let si = pass.suite;
        let sr = &self.suites[si];
        // A counters-only run starts with its first pass (no job is timed before it).
        sr.began.get_or_init(|| (Instant::now(), now()));
        self.bar.set_message(format!(
            "{}: ncu ({} variants)",
            sr.groups[pass.group],
            pass.jobs.len()
        ));
        let mut records = lane
            .executor
            .profile(&sr.ctx(self.settings.seed), &pass.tag, &pass.jobs);
        let mut p = self.lock();
        // `--duration-runs 0` (no ncu duration session): the group is timed, and its jobs'
        // activity durations give the profile its `duration`.
        if self
            .settings
            .profile
            .as_ref()
            .is_some_and(|r| r.duration_runs == 0)
        {
            // `--counters-only` times nothing: no group, no activity durations to take.
            let timed: Vec<&JobRecord> = p.so_far[si]
                .get(pass.group)
                .into_iter()
                .flatten()
                .flatten()
                .collect();
            take_activity_durations(&mut records, &timed);
        }
        for r in records {
            p.pass_failed[si] |= rules::profile_failed(&r);
            sr.append(&Record::Profile(ProfileRecord {
                gpu: lane.gpu.clone(),
                ..r
            }))?;
        }
        p.open_passes[si] -= 1;
        drop(held);
        self.pass_ready.notify_all();
        self.bar.inc(pass.jobs.len() as u64);
        warn_on_error(render_reports(&sr.dir));
        self.finish_if_done(&mut p, si)
    }

    /// Ends a lane's work in hand. A lane waiting for the host (or for it alone) need not sleep
    /// out its timeout. Taking the lock first: a lane between a failed claim and its wait holds
    /// it, so it is either waiting already or will see the host free. (Runs of other models side
    /// by side have their own Condvar and find out at their next timeout, 200 ms at most.)
    fn work_ended(&self, busy: Busy) {
        drop(busy);
        drop(self.lock());
        self.pass_ready.notify_all();
    }

    /// Finishes at once the run of each suite this shard holds no job of: `merge` needs a run of
    /// every shard of a plan, so a plan of more shards than jobs (a Slurm array sized for the
    /// cluster, not the suite) still merges, and the array's tasks all succeed.
    fn finish_empty_shards(&self) -> anyhow::Result<()> {
        let mut p = self.lock();
        for (si, sr) in self.suites.iter().enumerate() {
            if !sr.plan.jobs.is_empty() {
                // --sanitize-only: nothing to time, the sanitizer's records already saved.
                if self.settings.sanitize_only {
                    self.finish_if_done(&mut p, si)?;
                }
                continue;
            }
            sr.began.get_or_init(|| (Instant::now(), now()));
            // An empty results file: a run that recorded nothing because it held nothing, not
            // one that stopped before its first record.
            store::write_atomic(&sr.dir.join(store::RESULTS), b"")?;
            if let (false, Some(shard)) = (self.settings.quiet, &self.settings.shard) {
                eprintln!(
                    "note: shard {}/{} holds no job of suite {}: its run records the shard with no job, so `merge` finds every shard",
                    shard.index,
                    shard.count,
                    sr.plan.suite.name()
                );
            }
            self.finish_if_done(&mut p, si)?;
        }
        Ok(())
    }

    /// A suite is finished when every group is timed and every pass has run: its `run.json` gets
    /// its end, its reports their last rendering, and `finished` its directory.
    fn finish_if_done(&self, p: &mut Shared, si: usize) -> anyhow::Result<()> {
        if p.open_groups[si] > 0 || p.open_passes[si] > 0 || p.codes[si].is_some() {
            return Ok(());
        }
        let sr = &self.suites[si];
        let statuses = p.so_far[si].iter().flatten().flatten().map(|r| r.status);
        p.codes[si] = Some(rules::suite_exit_code(statuses, p.pass_failed[si]));
        let info = &mut p.infos[si];
        if let Some((t0, started)) = sr.began.get() {
            info.started = started.clone();
            info.wall_seconds = Some(t0.elapsed().as_secs_f64());
        }
        info.finished = Some(now());
        store::save_info(&sr.dir, info)?;
        warn_on_error(render_reports(&sr.dir));
        let _ = std::fs::remove_dir_all(&sr.work);
        if !self.settings.quiet {
            self.bar
                .suspend(|| eprintln!("report: {}", sr.dir.join("report.md").display()));
        }
        (p.finished)(&sr.dir);
        Ok(())
    }
}

#[cfg(test)]
mod mocks;
#[cfg(test)]
mod tests;
