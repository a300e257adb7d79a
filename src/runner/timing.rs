//! Timing a variant's runs with CUDA events: warm-up, a calibration of one run's time, then samples until the stopping rule is met; a cold short run is timed in CUDA graphs (`graph_timing`). The rules are in `timing_rules`.

use std::sync::Arc;

use cudarc::driver::CudaStream;

use super::activity::Probe;
use super::device::Gpu;
use super::error::{Doing, RunError};
use super::graph_timing::{GraphError, time_graphs};
use super::sampling::{NoChecks, SampleChecks, SamplingClock, warm_up};
use super::timing_rules::{
    Capture, SamplingPlan, Timed, activity_samples, calibration_runs, graph_capture_failed,
    per_run_ms, runs_per_sample, sampling_plan, stop_sampling,
};
use crate::records::{CacheState, TimingConfig};

/// Times `run` (one run of the variant, on the stream it is given) with CUDA events until the
/// stopping rule is met; then the verified timed runs `checks` makes, each one run between the
/// same events after the same L2 flush as a cold sample's (issue 32).
pub(super) fn time_runs(
    gpu: &Gpu,
    cfg: &TimingConfig,
    capture: Capture,
    mut run: impl FnMut(&Arc<CudaStream>) -> Result<(), RunError>,
    checks: &mut dyn SampleChecks,
) -> Result<Timed, RunError> {
    let stream = gpu.stream.clone();
    // Cold: a buffer of twice the L2 is read before every sample, outside the timed region.
    let flush = match cfg.cache {
        CacheState::Warm => None,
        CacheState::Cold => Some(gpu.flush()?),
    };
    // CUPTI's kernel records in extra samples of their own after the event samples (its kernel
    // instrumentation slowed them ~5% on an H100), or (`--activity-during`) around the samples.
    let mut probe = match cfg.activity_after {
        true => Probe::Off,
        false => Probe::start(gpu, cfg),
    };
    let timed = sample_runs(gpu, cfg, capture, &mut run, flush, &mut probe, &mut || {
        checks.between_samples()
    });
    let activity = probe.finish(cfg);
    let mut timed = Timed { activity, ..timed? };
    if cfg.activity_after && !cfg.no_activity {
        let t0 = std::time::Instant::now();
        timed.activity = activity_after(gpu, cfg, flush, &timed, &mut run)?;
        checks.took("activity", t0.elapsed().as_secs_f64());
    }
    let (start, stop) = (timing_event(gpu)?, timing_event(gpu)?);
    checks.after_samples(&mut |_| {
        if let Some(f) = flush {
            f.evict(&stream)?;
        }
        start.record(&stream).doing("recording an event")?;
        run(&stream)?;
        stop.record(&stream).doing("recording an event")?;
        stop.synchronize().doing("timing a verified run")?;
        Ok(start.elapsed_ms(&stop).doing("reading event time")? as f64)
    })?;
    Ok(timed)
}

/// Kernel records over extra samples after the event samples, made as a cold
/// plain sample is (the L2 flushed, one run) or a warm one (its runs back to back), no events.
fn activity_after(
    gpu: &Gpu,
    cfg: &TimingConfig,
    flush: Option<&super::l2_flush::Flush>,
    timed: &Timed,
    run: &mut impl FnMut(&Arc<CudaStream>) -> Result<(), RunError>,
) -> Result<Option<crate::records::ActivityRecord>, RunError> {
    let stream = gpu.stream.clone();
    let runs = if flush.is_some() {
        1
    } else {
        timed.runs_per_sample
    };
    let mut probe = Probe::start(gpu, cfg);
    for _ in 0..activity_samples(timed.samples_ms.len()) {
        probe.begin();
        if let Some(f) = flush {
            f.evict(&stream)?;
        }
        for _ in 0..runs {
            run(&stream)?;
        }
        stream.synchronize().doing("an activity sample")?;
        probe.end(runs);
    }
    Ok(probe.finish(cfg).map(|mut a| {
        a.after_timing = true;
        a
    }))
}

/// An event that times (cudarc's default event flags disable timing; these need CU_EVENT_DEFAULT).
fn timing_event(gpu: &Gpu) -> Result<cudarc::driver::CudaEvent, RunError> {
    gpu.ctx
        .new_event(Some(cudarc::driver::sys::CUevent_flags::CU_EVENT_DEFAULT))
        .doing("creating a CUDA event")
}

/// The warm-up, the calibration and the samples of `time_runs` (`check` between samples).
fn sample_runs(
    gpu: &Gpu,
    cfg: &TimingConfig,
    capture: Capture,
    run: &mut impl FnMut(&Arc<CudaStream>) -> Result<(), RunError>,
    flush: Option<&super::l2_flush::Flush>,
    probe: &mut Probe,
    check: &mut impl FnMut() -> Result<(), RunError>,
) -> Result<Timed, RunError> {
    let stream = gpu.stream.clone();
    let event = || timing_event(gpu);
    let (start, stop) = (event()?, event()?);
    // Warm-up: module load, first-touch and clocks ramping stay out of the samples; it goes on
    // until the SM clock is steady (without NVML, for the set time only).
    let (warmup_runs, warmup_ms) = warm_up(gpu, cfg, || {
        run(&stream)?;
        stream.synchronize().doing("warming up")
    })?;
    // Calibrate back to back, as samples run: the warm-up's syncs would add host gaps to short kernels.
    let calibration_runs = calibration_runs(warmup_runs);
    start.record(&stream).doing("recording an event")?;
    for _ in 0..calibration_runs {
        run(&stream)?;
    }
    stop.record(&stream).doing("recording an event")?;
    stop.synchronize().doing("calibrating")?;
    let per_run = per_run_ms(
        start.elapsed_ms(&stop).doing("reading calibration time")? as f64,
        calibration_runs,
    );
    let SamplingPlan {
        in_graph,
        mut method,
    } = sampling_plan(flush.is_some(), capture, per_run);
    if let (Some(f), true) = (flush, in_graph) {
        match time_graphs(gpu, cfg, f, per_run, run, probe, check) {
            Ok(timed) => {
                return Ok(Timed {
                    warmup_runs,
                    warmup_ms,
                    ..timed
                });
            }
            // A kernel that cannot be captured is still timed, the plain way, and says why;
            // any other error (a fault, a failed verification) is the job's.
            Err(GraphError::Capture(e)) => method = graph_capture_failed(&method, &e.to_string()),
            Err(GraphError::Run(e)) => return Err(e),
        }
    }
    // Cold: one run a sample (a second run would find the first one's data in L2).
    let runs_per_sample = runs_per_sample(flush.is_some(), cfg, per_run);
    let mut samples = Vec::new();
    let mut clocks = Vec::new();
    let mut clock = SamplingClock::start();
    let stopped_by = loop {
        probe.begin();
        if let Some(f) = flush {
            f.evict(&stream)?;
        }
        start.record(&stream).doing("recording an event")?;
        for _ in 0..runs_per_sample {
            run(&stream)?;
        }
        stop.record(&stream).doing("recording an event")?;
        stop.synchronize().doing("timing the variant")?;
        probe.end(runs_per_sample);
        samples.push(
            start.elapsed_ms(&stop).doing("reading event time")? as f64 / runs_per_sample as f64,
        );
        clocks.push(gpu.clock());
        clock.verify_every(cfg, samples.len(), check)?;
        if let Some(why) = stop_sampling(cfg, &samples, clock.seconds()) {
            break why;
        }
    };
    Ok(Timed {
        samples_ms: samples,
        runs_per_sample,
        warmup_runs,
        stopped_by,
        method,
        clocks,
        warmup_ms,
        activity: None,
    })
}

/// `time_runs` with nothing to verify between samples (the bounds).
pub(super) fn time_runs_plain(
    gpu: &Gpu,
    cfg: &TimingConfig,
    capture: Capture,
    run: impl FnMut(&Arc<CudaStream>) -> Result<(), RunError>,
) -> Result<Timed, RunError> {
    // A bound's kernel durations are not recorded: nothing reads them, and CUPTI is left out of its timing.
    let cfg = TimingConfig {
        no_activity: true,
        ..cfg.clone()
    };
    time_runs(gpu, &cfg, capture, run, &mut NoChecks)
}
