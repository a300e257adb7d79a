//! What every timing loop shares: the warm-up before the samples (until the SM clock is steady), and the sampling clock that keeps the checks between samples out of the time cap.

use std::time::Instant;

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
