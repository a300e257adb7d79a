//! `--energy` on the GPU: after timing, a job's runs back to back (two batches in flight, so the GPU never waits for the host) while NVML's total-energy counter is read after each batch; `energy_rules` decides the window, this file makes the calls.

use std::sync::Arc;
use std::time::Instant;

use cudarc::driver::{CudaEvent, CudaStream};

use super::device::Gpu;
use super::energy_rules::{EnergyNext, EnergyRule, batch_runs};
use super::error::{Doing, RunError};
use crate::records::{ClockEvents, EnergyRecord};

/// What the counter's steps saw of the clock: its range, every reason, and the steps read while a
/// reason lowered it.
#[derive(Default)]
struct ClocksAtSteps {
    range: Option<[u32; 2]>,
    events: ClockEvents,
    lowered: u32,
}

impl ClocksAtSteps {
    fn read(&mut self, gpu: &Gpu) {
        let Some(c) = gpu.clock() else { return };
        let [lo, hi] = self.range.unwrap_or([c.sm_mhz, c.sm_mhz]);
        self.range = Some([lo.min(c.sm_mhz), hi.max(c.sm_mhz)]);
        self.events = self.events.union(c.events);
        self.lowered += u32::from(c.throttled);
    }
}

/// Runs `run` back to back in batches of about 10 ms (from `per_run_ms`, the timing's median)
/// until the energy rule's window is complete. A GPU or driver without the counter gives a record
/// that says why; a failing run is the job's error.
pub(super) fn measure_energy(
    gpu: &Gpu,
    per_run_ms: f64,
    mut run: impl FnMut(&Arc<CudaStream>) -> Result<(), RunError>,
) -> Result<EnergyRecord, RunError> {
    let stream = gpu.stream.clone();
    let first_mj = match gpu.energy_mj() {
        Ok(mj) => mj,
        Err(why) => return Ok(EnergyRecord::failed(why)),
    };
    let batch = batch_runs(per_run_ms);
    let event = || gpu.ctx.new_event(None).doing("creating a CUDA event");
    let events = [event()?, event()?];
    let mut rule = EnergyRule::new();
    rule.observe(first_mj, 0.0, 0);
    let mut clocks = ClocksAtSteps::default();
    let started = Instant::now();
    enqueue(&stream, &mut run, batch, &events[0])?;
    let mut batches_done = 0u64;
    let outcome = loop {
        enqueue(
            &stream,
            &mut run,
            batch,
            &events[(batches_done as usize + 1) % 2],
        )?;
        events[batches_done as usize % 2]
            .synchronize()
            .doing("running the variant back to back for --energy")?;
        batches_done += 1;
        let mj = match gpu.energy_mj() {
            Ok(mj) => mj,
            Err(why) => break Err(why),
        };
        match rule.observe(mj, started.elapsed().as_secs_f64(), batches_done * batch) {
            EnergyNext::Continue => {}
            EnergyNext::Stepped => clocks.read(gpu),
            EnergyNext::Done(window) => {
                clocks.read(gpu);
                break Ok(window);
            }
            EnergyNext::GiveUp(why) => break Err(why),
        }
    };
    stream
        .synchronize()
        .doing("finishing the runs of --energy")?;
    let (power_limit_w, power_state) = gpu.power_state();
    let method = format!(
        "back to back, {batch} runs a batch, two batches in flight, L2 warm; the window cut at the counter's steps"
    );
    Ok(match outcome {
        Ok(w) => EnergyRecord {
            runs: w.runs,
            seconds: w.seconds,
            joules: w.joules,
            counter_steps: w.steps,
            power_limit_w,
            power_state,
            sm_clock_mhz: clocks.range,
            clock_events: clocks.events,
            clock_lowered_steps: clocks.lowered,
            method,
            mock: false,
            error: None,
        },
        Err(why) => EnergyRecord {
            power_limit_w,
            power_state,
            method,
            ..EnergyRecord::failed(why)
        },
    })
}

/// Queues `batch` runs, then `done` after them.
fn enqueue(
    stream: &Arc<CudaStream>,
    run: &mut impl FnMut(&Arc<CudaStream>) -> Result<(), RunError>,
    batch: u64,
    done: &CudaEvent,
) -> Result<(), RunError> {
    for _ in 0..batch {
        run(stream)?;
    }
    done.record(stream).doing("recording an event")
}
