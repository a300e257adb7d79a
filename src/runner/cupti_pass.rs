//! The in-process profile pass: each job's launches replayed once per CUPTI pass (user replay), its inputs put back and the L2 flushed before each pass as ncu's `--cache-control all` does, one auto range a kernel.

use std::time::Instant;

use super::buffers::Buffers;
use super::checking::run_checked;
use super::device::{Gpu, set_pending_launches};
use super::error::{Doing, RunError};
use super::loading::load;
use crate::cupti::rows::{CuptiJob, CuptiPass, JobPhases, PassPhases};
use crate::cupti::session::{Options, Session};
use crate::cupti::{self, Counters};
use crate::suite::JobSpec;

/// Collects `counters` for every job of `specs`, in order. A job whose collection fails gets the
/// reason and the pass goes on; CUPTI that cannot load or configure stops the pass (the caller
/// falls back to ncu with that reason).
pub fn run_cupti_pass(
    gpu: &Gpu,
    specs: &[JobSpec],
    seed: u64,
    counters: &[String],
    options: Options,
) -> Result<CuptiPass, RunError> {
    set_pending_launches(gpu, &specs.iter().collect::<Vec<_>>())?;
    let cupti_err = |e: cupti::CuptiError| RunError::Invalid(format!("CUPTI: {e}"));
    let mut phases = PassPhases {
        kept_enabled: options.keep_enabled,
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
        options,
    )
    .map_err(cupti_err)?;
    phases.session_s = clock.elapsed().as_secs_f64();
    let clock = Instant::now();
    let flush = gpu.flush()?;
    let mut jobs = Vec::with_capacity(specs.len());
    let mut kept: Option<(&JobSpec, Buffers)> = None;
    for spec in specs {
        let mut job = JobPhases::default();
        let step = Instant::now();
        let mut compile = Vec::new();
        let loaded = load(
            gpu,
            &spec.program,
            &spec.key.variant,
            &spec.launches,
            &spec.buffers,
            &mut compile,
        )?;
        job.load_s = step.elapsed().as_secs_f64();
        let step = Instant::now();
        let bufs = super::profile_pass::kept_or_new(gpu, kept.take(), spec, seed)?;
        let (_, bufs) = kept.insert((spec, bufs));
        job.buffers_s = step.elapsed().as_secs_f64();
        // One unprofiled run first: the module's first launch pays for loading, as in ncu's pass.
        let step = Instant::now();
        bufs.reset(gpu, spec)?;
        run_checked(
            gpu,
            &loaded,
            &spec.launches,
            spec.steps.as_ref(),
            &spec.buffers,
            bufs,
            spec.id(),
        )?;
        job.first_run_s = step.elapsed().as_secs_f64();
        let mut run_pass = |prepare: bool| -> Result<(), String> {
            let mut step = || -> Result<(), RunError> {
                if prepare {
                    bufs.reset(gpu, spec)?;
                    flush.evict(&gpu.stream)?;
                    gpu.stream.synchronize().doing("flushing the L2")
                } else {
                    run_checked(
                        gpu,
                        &loaded,
                        &spec.launches,
                        spec.steps.as_ref(),
                        &spec.buffers,
                        bufs,
                        spec.id(),
                    )
                }
            };
            step().map_err(|e| e.to_string())
        };
        let collected = session
            .collect(spec.launches.len(), &mut run_pass)
            .map_err(|e| e.to_string());
        jobs.push(CuptiJob {
            job_id: spec.id().to_string(),
            collected,
            phases: job,
        });
    }
    phases.jobs_s = clock.elapsed().as_secs_f64();
    Ok(CuptiPass {
        chip: session.chip.clone(),
        counters: counters.to_vec(),
        passes: session.passes,
        jobs,
        phases,
    })
}
