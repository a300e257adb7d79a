//! The profile pass: each job's launches run once, in order, for `ncu` to profile (no check, no timing), the profiled runs between cuProfilerStart and cuProfilerStop.

use super::buffers::Buffers;
use super::checking::run_spec;
use super::device::{Gpu, set_pending_launches};
use super::error::{Doing, RunError};
use super::loading::load_job;
use crate::suite::JobSpec;

/// Runs each job's launches once, in order, for `ncu` to profile: no check, no timing, so that
/// the n-th profiled kernel is the n-th launch listed here. Jobs of one group declare the same
/// buffers: device buffers are made and filled once and put back to their start before each job.
/// Host-resident and managed ones are made afresh for each job, since where their pages are after
/// a reset is the driver's choice and would change what the next job's kernel is profiled on.
///
/// With `profiled_runs` > 0, each job first runs once unprofiled, then that many times between
/// cuProfilerStart and cuProfilerStop (for ncu's `--profile-from-start off`), its buffers reset
/// before each: a process's first launch of a kernel reads up to 14% long under ncu
/// (gap-probe-h200), while every timed sample follows warm-up launches. Within one job
/// the buffers are kept, as the timed samples keep them: the profiled runs find managed pages
/// where the job's own earlier runs left them, as every sample after the first does.
pub fn run_profile_pass(
    gpu: &Gpu,
    specs: &[JobSpec],
    seed: u64,
    profiled_runs: u32,
    finished: &mut dyn FnMut(usize),
) -> Result<(), RunError> {
    set_pending_launches(gpu, &specs.iter().collect::<Vec<_>>())?;
    let mut kept: Option<(&JobSpec, Buffers)> = None;
    for (done, spec) in specs.iter().enumerate() {
        let mut compile = Vec::new();
        let loaded = load_job(gpu, spec, &mut compile)?;
        let bufs = kept_or_new(gpu, kept.take(), spec, seed)?;
        let (_, bufs) = kept.insert((spec, bufs));
        bufs.reset(gpu, spec)?;
        run_spec(gpu, &loaded, spec, bufs, spec.id())?;
        for _ in 0..profiled_runs {
            bufs.reset(gpu, spec)?;
            profiler_range(gpu, true)?;
            run_spec(gpu, &loaded, spec, bufs, spec.id())?;
            profiler_range(gpu, false)?;
        }
        finished(done + 1);
    }
    Ok(())
}

/// Opens (cuProfilerStart) or closes (cuProfilerStop) the range of launches that ncu profiles
/// under `--profile-from-start off`.
fn profiler_range(gpu: &Gpu, open: bool) -> Result<(), RunError> {
    gpu.ctx
        .bind_to_thread()
        .doing("making the device's context current")?;
    // SAFETY: neither call takes arguments; both act on the context made current above.
    let status = unsafe {
        if open {
            cudarc::driver::sys::cuProfilerStart()
        } else {
            cudarc::driver::sys::cuProfilerStop()
        }
    };
    status.result().doing(if open {
        "opening the profiled range (cuProfilerStart)"
    } else {
        "closing the profiled range (cuProfilerStop)"
    })
}

/// The buffers for `spec`: those kept from the job before where it declared the same buffers and
/// tensor maps, all in device memory (the caller puts them back to their start), else new ones.
/// Host and managed buffers are always made afresh; the previous job's buffers are dropped before
/// the new ones are made.
pub(super) fn kept_or_new(
    gpu: &Gpu,
    kept: Option<(&JobSpec, Buffers)>,
    spec: &JobSpec,
    seed: u64,
) -> Result<Buffers, RunError> {
    match kept {
        Some((before, bufs))
            if before.buffers == spec.buffers
                && before.tensor_maps == spec.tensor_maps
                && spec.buffers.iter().all(|b| b.memory.is_device()) =>
        {
            Ok(bufs)
        }
        other => {
            drop(other);
            Buffers::new(gpu, spec, seed)
        }
    }
}
