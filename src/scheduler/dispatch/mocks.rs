//! Executors for the dispatch tests: the mock, watched (how many jobs and passes run at once, which steps shared the host, every tag), and one whose jobs report their occupancy.

use std::sync::Mutex;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use crate::executor::{Executor, Failure, MockExecutor, RunContext};
use crate::metrics::MetricDef;
use crate::records::BoundSpec;
use crate::suite::JobSpec;

/// The mock, except that each job's outcome carries what a child reads about its launches.
pub(super) struct Occupied;

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
    fn roofs(
        &self,
        ctx: &RunContext,
        tag: &str,
        math: crate::records::Math,
    ) -> Result<Vec<crate::records::RoofRecord>, Failure> {
        MockExecutor::default().roofs(ctx, tag, math)
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
                cluster: l.cluster,
                active_clusters: l.cluster.map(|_| 66),
                cluster_error: None,
            })
            .collect();
        Ok(outcome)
    }
    fn sanitize(
        &self,
        ctx: &RunContext,
        tag: &str,
        job: &JobSpec,
        tool: crate::records::SanitizerTool,
        timeout: Duration,
    ) -> crate::records::SanitizeRecord {
        MockExecutor::default().sanitize(ctx, tag, job, tool, timeout)
    }
    fn sanitize_batch(
        &self,
        ctx: &RunContext,
        tag: &str,
        jobs: &[&JobSpec],
        tool: crate::records::SanitizerTool,
        timeout: Duration,
    ) -> crate::records::BatchRun {
        MockExecutor::default().sanitize_batch(ctx, tag, jobs, tool, timeout)
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

/// What the lanes of one test run share: how many jobs run at once (and the most seen), how
/// many lanes have started a job, and every tag used (they name files in the one work
/// directory), in call order.
#[derive(Default)]
pub(super) struct Watch {
    pub(super) running: std::sync::atomic::AtomicUsize,
    pub(super) most: std::sync::atomic::AtomicUsize,
    pub(super) started: std::sync::atomic::AtomicUsize,
    pub(super) tags: Mutex<Vec<String>>,
    /// Passes running now, and the most that ever ran at once.
    pub(super) profiling: std::sync::atomic::AtomicUsize,
    pub(super) most_passes: std::sync::atomic::AtomicUsize,
    /// Steps (bounds, jobs, passes) running now, those of them that use the host link, and
    /// the tags of steps that had company they must not have.
    pub(super) steps: std::sync::atomic::AtomicUsize,
    pub(super) linked: std::sync::atomic::AtomicUsize,
    pub(super) crowded: Mutex<Vec<String>>,
    /// For each job in start order, whether it crosses the host link.
    pub(super) jobs_linked: Mutex<Vec<bool>>,
}

/// The mock of GPU `mock.index`, watched: its jobs take `job_ms` of wall time, or end as
/// `failure` says; a lane's first device-only job waits (up to 5 s) until `lanes` lanes have
/// started one.
pub(super) struct Watched<'w> {
    mock: MockExecutor,
    watch: &'w Watch,
    job_ms: u64,
    lanes: usize,
    failure: Option<Failure>,
    mine: std::sync::atomic::AtomicUsize,
}

impl<'w> Watched<'w> {
    pub(super) fn new(index: u32, watch: &'w Watch, job_ms: u64, lanes: usize) -> Self {
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
    pub(super) fn failing(watch: &'w Watch, failure: Failure) -> Self {
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
    fn roofs(
        &self,
        ctx: &RunContext,
        tag: &str,
        math: crate::records::Math,
    ) -> Result<Vec<crate::records::RoofRecord>, Failure> {
        self.log(tag);
        self.mock.roofs(ctx, tag, math)
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
    fn sanitize(
        &self,
        ctx: &RunContext,
        tag: &str,
        job: &JobSpec,
        tool: crate::records::SanitizerTool,
        timeout: Duration,
    ) -> crate::records::SanitizeRecord {
        MockExecutor::default().sanitize(ctx, tag, job, tool, timeout)
    }
    fn sanitize_batch(
        &self,
        ctx: &RunContext,
        tag: &str,
        jobs: &[&JobSpec],
        tool: crate::records::SanitizerTool,
        timeout: Duration,
    ) -> crate::records::BatchRun {
        MockExecutor::default().sanitize_batch(ctx, tag, jobs, tool, timeout)
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
