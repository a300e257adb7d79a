//! The in-process profile pass: jobs replayed once per CUPTI pass (user replay), one auto range a kernel, their inputs put back and the L2 flushed before each job as ncu's `--cache-control all` does; consecutive jobs that share their buffers share their passes.

use std::time::Instant;

use super::buffers::Buffers;
use super::checking::run_spec;
use super::device::{Gpu, set_pending_launches};
use super::error::{Doing, RunError};
use super::l2_flush::Flush;
use super::launch_occupancy::launch_facts;
use super::loading::{Loaded, load_job};
use crate::cupti::activity::Collector;
use crate::cupti::launch_stats::LaunchFacts;
use crate::cupti::rows::{CuptiJob, CuptiPass, JobPhases, PassPhases, split_batch};
use crate::cupti::session::Session;
use crate::cupti::{self, Counters};
use crate::suite::JobSpec;

/// Collects `counters` for every job of `specs`, in order, at most `jobs_per_pass` jobs a pass
/// (None: every run of consecutive jobs that can share). A job whose collection fails gets the
/// reason and the pass goes on; CUPTI that cannot load or configure stops the pass (the caller
/// falls back to ncu with that reason).
pub fn run_cupti_pass(
    gpu: &Gpu,
    specs: &[JobSpec],
    seed: u64,
    counters: &[String],
    jobs_per_pass: Option<usize>,
) -> Result<CuptiPass, RunError> {
    set_pending_launches(gpu, &specs.iter().collect::<Vec<_>>())?;
    let cupti_err = |e: cupti::CuptiError| RunError::Invalid(format!("CUPTI: {e}"));
    let mut phases = PassPhases {
        jobs_per_pass,
        ..PassPhases::default()
    };
    let clock = Instant::now();
    let api = cupti::load(gpu.toolkit.root.as_deref()).map_err(cupti_err)?;
    phases.load_cupti_s = clock.elapsed().as_secs_f64();
    gpu.ctx
        .bind_to_thread()
        .doing("making the device's context current")?;
    let clock = Instant::now();
    let mut session = Session::open(
        &api,
        gpu.ctx.cu_ctx(),
        gpu.ordinal as usize,
        Counters::new(counters).map_err(cupti_err)?,
    )
    .map_err(cupti_err)?;
    phases.session_s = clock.elapsed().as_secs_f64();
    let clock = Instant::now();
    let flush = gpu.flush()?;
    let mut jobs = Vec::with_capacity(specs.len());
    let mut kept: Option<(&JobSpec, Buffers)> = None;
    for batch in batches(specs, jobs_per_pass) {
        let mut loaded = Vec::with_capacity(batch.len());
        let mut costs = vec![JobPhases::default(); batch.len()];
        for (spec, cost) in batch.iter().zip(&mut costs) {
            let step = Instant::now();
            let mut compile = Vec::new();
            loaded.push(load_job(gpu, spec, &mut compile)?);
            cost.load_s = step.elapsed().as_secs_f64();
        }
        let step = Instant::now();
        let bufs = super::profile_pass::kept_or_new(gpu, kept.take(), &batch[0], seed)?;
        let (_, bufs) = kept.insert((&batch[batch.len() - 1], bufs));
        costs[0].buffers_s = step.elapsed().as_secs_f64();
        // One unprofiled run of each job first: a module's first launch pays for loading, as
        // in ncu's pass. Its kernel records give each launch's carveout, for the launch
        // statistics gpu-lab computes in ncu's place.
        let mut facts = Vec::with_capacity(batch.len());
        for ((spec, loaded), cost) in batch.iter().zip(&loaded).zip(&mut costs) {
            let step = Instant::now();
            bufs.reset(gpu, spec)?;
            let records = Collector::start(gpu.toolkit.root.as_deref(), false);
            run_spec(gpu, loaded, spec, bufs, spec.id())?;
            let carveouts = carveouts(gpu, records, spec.launches.len());
            facts.push(
                launch_facts(gpu, loaded, &spec.launches, carveouts).map_err(|e| e.to_string()),
            );
            cost.first_run_s = step.elapsed().as_secs_f64();
        }
        let batch = Batch {
            gpu,
            flush,
            jobs: batch,
            loaded: &loaded,
        };
        jobs.extend(batch.collect(&mut session, bufs, costs, facts));
    }
    phases.jobs_s = clock.elapsed().as_secs_f64();
    Ok(CuptiPass {
        chip: session.chip.clone(),
        counters: counters.to_vec(),
        passes: session.passes,
        jobs,
        computed: Vec::new(),
        phases,
    })
}

/// Each launch's carveout (`sharedMemoryExecuted`) from the kernel records of a job's run, in
/// launch order, or why there are none: CUPTI's activity would not start, or the job's kernels
/// (the L2 flush left out) are not its launches one for one (a host program's library kernels).
fn carveouts(
    gpu: &Gpu,
    records: Result<Collector, String>,
    launches: usize,
) -> Result<Vec<u32>, String> {
    let records = records.map_err(|why| format!("CUPTI's kernel activity: {why}"))?;
    gpu.ctx
        .synchronize()
        .map_err(|e| format!("waiting for the job's kernels: {e}"))?;
    let finished = records.finish();
    if let Some(why) = finished.error {
        return Err(format!("CUPTI's kernel activity: {why}"));
    }
    let kernels: Vec<Option<u32>> = finished
        .spans
        .iter()
        .filter(|s| !s.flush)
        .map(|s| s.shared_executed)
        .collect();
    if kernels.len() != launches {
        return Err(format!(
            "CUPTI recorded {} kernels in the job's run where it launches {launches}",
            kernels.len()
        ));
    }
    kernels
        .into_iter()
        .collect::<Option<Vec<u32>>>()
        .ok_or_else(|| "a kernel record too short to hold sharedMemoryExecuted".to_string())
}

/// Runs of consecutive jobs that can share passes, at most `cap` jobs each: jobs whose
/// buffers are the same, all in device memory (one set of buffers, put back before each job),
/// with no host program.
pub(super) fn batches(specs: &[JobSpec], cap: Option<usize>) -> Vec<&[JobSpec]> {
    let shareable = |a: &JobSpec, b: &JobSpec| {
        in_device_memory(a)
            && in_device_memory(b)
            && a.buffers == b.buffers
            && a.tensor_maps == b.tensor_maps
    };
    let mut out = Vec::new();
    let mut start = 0;
    for end in 1..=specs.len() {
        let full = cap.is_some_and(|c| end - start >= c);
        if end == specs.len() || full || !shareable(&specs[end - 1], &specs[end]) {
            out.push(&specs[start..end]);
            start = end;
        }
    }
    out
}

/// A job whose buffers are all in device memory and that has no host program: one whose
/// inputs can be put back and whose launches can run inside a pass, between other ranges.
fn in_device_memory(spec: &JobSpec) -> bool {
    spec.steps.is_none() && spec.buffers.iter().all(|b| b.memory.is_device())
}

/// Jobs collected together: their modules, and the GPU's L2 flush.
struct Batch<'a> {
    gpu: &'a Gpu,
    flush: &'a Flush,
    jobs: &'a [JobSpec],
    loaded: &'a [Loaded],
}

impl Batch<'_> {
    /// Each job's collection: all of them in the same passes, the flush a range before each
    /// job's launches and CUPTI's ranges split back into them, wherever the jobs run in device
    /// memory (one job too); otherwise (or where that fails) each alone, prepared outside the
    /// ranges. Alone, with the stream synchronized between the flush and the launch, durations
    /// agree with ncu's less often (H100, 2026-11-26: 11 of 43 within 1%, against 23 and 24
    /// shared; `docs/evidence/h100-2026-11-26-profilers/`), so a job goes alone only where it
    /// must.
    fn collect(
        &self,
        session: &mut Session,
        bufs: &mut Buffers,
        costs: Vec<JobPhases>,
        facts: Vec<Result<Vec<LaunchFacts>, String>>,
    ) -> Vec<CuptiJob> {
        let shared = self
            .jobs
            .iter()
            .all(in_device_memory)
            .then(|| self.collect_shared(session, bufs));
        let mut parts = match shared {
            Some(Ok(parts)) => parts.into_iter().map(Ok).collect(),
            Some(Err(why)) => {
                // Said in the pass's log; each job's numbers still come, one job a pass.
                eprintln!(
                    "note: the pass of {} job(s) with the flush as a range failed ({why}); each collected alone",
                    self.jobs.len()
                );
                self.collect_alone(session, bufs)
            }
            None => self.collect_alone(session, bufs),
        };
        parts
            .drain(..)
            .zip(self.jobs)
            .zip(costs)
            .zip(facts)
            .map(|(((collected, spec), phases), facts)| {
                let (launches, launches_error) = match facts {
                    Ok(f) => (f, None),
                    Err(why) => (Vec::new(), Some(why)),
                };
                CuptiJob {
                    job_id: spec.id().to_string(),
                    collected,
                    phases,
                    launches,
                    launches_error,
                }
            })
            .collect()
    }

    /// One collection over every job: in each pass, for each job, its inputs put back, the L2
    /// flushed (a kernel, so a range of its own) and its launches.
    fn collect_shared(
        &self,
        session: &mut Session,
        bufs: &mut Buffers,
    ) -> Result<Vec<cupti::Collection>, String> {
        let launches: Vec<usize> = self.jobs.iter().map(|j| j.launches.len()).collect();
        let ranges = launches.iter().map(|n| n + 1).sum();
        let mut run_pass = |prepare: bool| -> Result<(), String> {
            if prepare {
                return Ok(());
            }
            let mut every_job = || -> Result<(), RunError> {
                for (spec, loaded) in self.jobs.iter().zip(self.loaded) {
                    bufs.reset(self.gpu, spec)?;
                    self.flush.evict(&self.gpu.stream)?;
                    run_spec(self.gpu, loaded, spec, bufs, spec.id())?;
                }
                Ok(())
            };
            every_job().map_err(|e| e.to_string())
        };
        let batch = session
            .collect(ranges, &mut run_pass)
            .map_err(|e| e.to_string())?;
        split_batch(&batch, &launches)
    }

    /// Each job in passes of its own, its inputs put back and the L2 flushed outside the ranges.
    fn collect_alone(
        &self,
        session: &mut Session,
        bufs: &mut Buffers,
    ) -> Vec<Result<cupti::Collection, String>> {
        let mut out = Vec::with_capacity(self.jobs.len());
        for (spec, loaded) in self.jobs.iter().zip(self.loaded) {
            let mut run_pass = |prepare: bool| -> Result<(), String> {
                let mut step = || -> Result<(), RunError> {
                    if prepare {
                        bufs.reset(self.gpu, spec)?;
                        self.flush.evict(&self.gpu.stream)?;
                        self.gpu.stream.synchronize().doing("flushing the L2")
                    } else {
                        run_spec(self.gpu, loaded, spec, bufs, spec.id())
                    }
                };
                step().map_err(|e| e.to_string())
            };
            out.push(
                session
                    .collect(spec.launches.len(), &mut run_pass)
                    .map(|mut c| {
                        c.phases.jobs_in_pass = 1;
                        c
                    })
                    .map_err(|e| e.to_string()),
            );
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::profiler::assign::tests::job;

    fn ids(batches: &[&[JobSpec]]) -> Vec<Vec<String>> {
        batches
            .iter()
            .map(|b| b.iter().map(|j| j.id().to_string()).collect())
            .collect()
    }

    #[test]
    fn consecutive_jobs_with_the_same_buffers_share_passes_up_to_the_cap() {
        let mut specs: Vec<JobSpec> = ["a", "b", "c", "d"].iter().map(|id| job(id, 1)).collect();
        let buffer = |len: u64| {
            serde_json::from_value(serde_json::json!(
                {"name": "in", "elem": "f32", "len": len, "init": "random"}
            ))
            .unwrap()
        };
        for (i, spec) in specs.iter_mut().enumerate() {
            spec.buffers = vec![buffer(if i == 3 { 32 } else { 16 })];
        }
        assert_eq!(
            ids(&batches(&specs, None)),
            [vec!["a", "b", "c"], vec!["d"]]
        );
        assert_eq!(
            ids(&batches(&specs, Some(2))),
            [vec!["a", "b"], vec!["c"], vec!["d"]]
        );
        assert_eq!(ids(&batches(&specs, Some(1))).len(), 4);
        assert!(batches(&[], None).is_empty());
    }
}
