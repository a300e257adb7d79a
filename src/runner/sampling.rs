//! What every timing loop shares: the warm-up before the samples (until the SM clock is steady), the sampling clock that keeps the checks between samples out of the time cap, and what a loop asks of the job it times (`SampleChecks`, made by `timed_checks`).

use std::time::Instant;

use super::buffers::Buffers;
use super::device::Gpu;
use super::error::RunError;
use super::timing_rules::{keep_settling, verify_due, warming_up};
use crate::records::TimingConfig;

/// Runs `once` (a run that waits for itself) at least 3 times and for `cfg.warmup_ms`, then on
/// until the SM clock is steady (without NVML, for the set time only): module load, first touch
/// and a ramping clock stay out of the samples. Returns the runs and the ms it took.
pub(super) fn warm_up(
    gpu: &Gpu,
    cfg: &TimingConfig,
    mut once: impl FnMut() -> Result<(), RunError>,
) -> Result<(u32, f64), RunError> {
    let (wall, mut runs, mut readings) = (Instant::now(), 0u32, Vec::<u32>::new());
    loop {
        once()?;
        runs += 1;
        let elapsed = wall.elapsed().as_secs_f64() * 1e3;
        if warming_up(runs, elapsed, cfg) {
            continue;
        }
        match gpu.clock() {
            Some(c) if keep_settling(&readings, elapsed) => readings.push(c.sm_mhz),
            _ => break,
        }
    }
    Ok((runs, wall.elapsed().as_secs_f64() * 1e3))
}

/// Sampling time, without the time spent verifying between samples.
pub(super) struct SamplingClock {
    started: Instant,
    paused: std::time::Duration,
}

impl SamplingClock {
    pub(super) fn start() -> Self {
        SamplingClock {
            started: Instant::now(),
            paused: std::time::Duration::ZERO,
        }
    }

    pub(super) fn seconds(&self) -> f64 {
        (self.started.elapsed() - self.paused).as_secs_f64()
    }

    /// `--verify-every K`: after every K-th sample, the check runs (its time not counted).
    pub(super) fn verify_every(
        &mut self,
        cfg: &TimingConfig,
        samples: usize,
        check: &mut impl FnMut() -> Result<(), RunError>,
    ) -> Result<(), RunError> {
        if verify_due(cfg, samples) {
            let t = Instant::now();
            check()?;
            self.paused += t.elapsed();
        }
        Ok(())
    }
}

/// One run of the variant timed exactly as a sample's run is (the L2 flushed first where the
/// samples' were, the same launch path, between events), on the buffers it is given; its ms.
pub(super) type TimeOne<'t> = dyn FnMut(&mut Buffers) -> Result<f64, RunError> + 't;

/// What a timing loop asks of the job it times.
pub(super) trait SampleChecks {
    /// `--verify-every K`: a verified launch between samples (inputs restored after it).
    fn between_samples(&mut self) -> Result<(), RunError>;
    /// After the last sample: the verified timed runs, each timed by `time_one`.
    fn after_samples(&mut self, time_one: &mut TimeOne) -> Result<(), RunError>;
    /// A part of the timing that took `seconds` (the job's phases show it apart from the samples).
    fn took(&mut self, _part: &'static str, _seconds: f64) {}
}

/// What a timing loop that runs on a job's buffers (a host program) asks of the job too.
pub(super) trait CheckedBuffers: SampleChecks {
    fn buffers(&mut self) -> &mut Buffers;
}

/// What is timed without a check (the bounds, the roofs).
pub(super) struct NoChecks;

impl SampleChecks for NoChecks {
    fn between_samples(&mut self) -> Result<(), RunError> {
        Ok(())
    }
    fn after_samples(&mut self, _: &mut TimeOne) -> Result<(), RunError> {
        Ok(())
    }
}
