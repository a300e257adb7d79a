//! The in-process profile pass: each job's launches replayed once per CUPTI pass (user replay), its inputs put back and the L2 flushed before each pass as ncu's `--cache-control all` does, one auto range a kernel.

use super::buffers::Buffers;
use super::checking::run_checked;
use super::device::{Gpu, set_pending_launches};
use super::error::{Doing, RunError};
use super::loading::load;
use crate::cupti::rows::{CuptiJob, CuptiPass};
use crate::cupti::session::Session;
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
) -> Result<CuptiPass, RunError> {
    set_pending_launches(gpu, &specs.iter().collect::<Vec<_>>())?;
    let cupti_err = |e: cupti::CuptiError| RunError::Invalid(format!("CUPTI: {e}"));
    let api = cupti::load(gpu.toolkit.root.as_deref()).map_err(cupti_err)?;
    gpu.ctx
        .bind_to_thread()
        .doing("making the device's context current")?;
    let mut session = Session::open(
        &api,
        gpu.ctx.cu_ctx(),
        gpu.ordinal as usize,
        Counters::new(counters).map_err(cupti_err)?,
    )
    .map_err(cupti_err)?;
    let flush = gpu.flush()?;
    let mut jobs = Vec::with_capacity(specs.len());
    let mut kept: Option<(&JobSpec, Buffers)> = None;
    for spec in specs {
        let mut compile = Vec::new();
        let loaded = load(
            gpu,
            &spec.program,
            &spec.key.variant,
            &spec.launches,
            &spec.buffers,
            &mut compile,
        )?;
        let bufs = super::profile_pass::kept_or_new(gpu, kept.take(), spec, seed)?;
        let (_, bufs) = kept.insert((spec, bufs));
        // One unprofiled run first: the module's first launch pays for loading, as in ncu's pass.
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
        });
    }
    Ok(CuptiPass {
        chip: session.chip.clone(),
        counters: counters.to_vec(),
        passes: session.passes,
        jobs,
    })
}
