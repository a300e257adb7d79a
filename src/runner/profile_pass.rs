//! The profile pass: each job's launches run once, in order, for `ncu` to profile (no check, no timing), the profiled runs between cuProfilerStart and cuProfilerStop.

use super::buffers::Buffers;
use super::checking::run_checked;
use super::device::{Gpu, set_pending_launches};
use super::error::{Doing, RunError};
use super::loading::load;
use crate::suite::tensor_map::TensorMapSpec;
use crate::suite::{BufferSpec, JobSpec};

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
) -> Result<(), RunError> {
    set_pending_launches(gpu, &specs.iter().collect::<Vec<_>>())?;
    // The buffers kept from the previous job, with the tensor maps encoded for them: a job that
    // passes other maps over the same buffers gets buffers (and maps) of its own.
    let mut kept: Option<(&[BufferSpec], &[TensorMapSpec], Buffers)> = None;
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
        let bufs = match kept.take() {
            Some((buffers, maps, bufs))
                if buffers == spec.buffers.as_slice()
                    && maps == spec.tensor_maps.as_slice()
                    && buffers.iter().all(|b| b.memory.is_device()) =>
            {
                bufs
            }
            other => {
                drop(other); // the previous group's buffers go before this one's are made
                Buffers::new(gpu, spec, seed)?
            }
        };
        let (_, _, bufs) = kept.insert((&spec.buffers, &spec.tensor_maps, bufs));
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
        for _ in 0..profiled_runs {
            bufs.reset(gpu, spec)?;
            profiler_range(gpu, true)?;
            run_checked(
                gpu,
                &loaded,
                &spec.launches,
                spec.steps.as_ref(),
                &spec.buffers,
                bufs,
                spec.id(),
            )?;
            profiler_range(gpu, false)?;
        }
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
