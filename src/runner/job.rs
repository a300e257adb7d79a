//! One job, start to end: load, occupancy, check, time (with checks between samples where asked), its energy (`--energy`), check again on other inputs, and the outcome the child records.

use super::buffers::Buffers;
use super::checking::verify;
use super::device::{Gpu, set_pending_launches};
use super::energy::measure_energy;
use super::error::RunError;
use super::launch_occupancy::{occupancy_of, refuse_unrunnable_clusters};
use super::launching::launch_all;
use super::loading::{Loaded, load_job};
use super::program::{self, HostProgram};
use super::timed_checks::JobChecks;
use super::timing::time_runs;
use super::timing_rules::{Capture, Timed, clock_range};
use crate::records::{
    EnergyRecord, JobOutcome, JobPhase, Timeline, TimingConfig, sample_clock_events, split_by_clock,
};
use crate::suite::JobSpec;

/// Runs one job: check first, then time. A wrong variant is still timed (the report shows it, never ranks it).
pub fn run_job(
    gpu: &Gpu,
    spec: &JobSpec,
    cfg: &TimingConfig,
    seed: u64,
) -> Result<JobOutcome, RunError> {
    let mut compile = Vec::new();
    let mut clock = PhaseClock::new();
    set_pending_launches(gpu, &[spec])?;
    let loaded = load_job(gpu, spec, &mut compile)?;
    clock.mark("load");
    // What the SM can hold of each launch; a driver that refuses an attribute costs the job its
    // occupancy record, not its measurement.
    let (occupancy, occupancy_error) = match occupancy_of(gpu, &loaded, &spec.launches) {
        Ok(o) => (o, None),
        Err(e) => (Vec::new(), Some(e.to_string())),
    };
    refuse_unrunnable_clusters(&occupancy)?;
    let mut bufs = Buffers::new(gpu, spec, seed)?;
    clock.mark("inputs");
    let correctness = verify(gpu, spec, &loaded, &mut bufs, &mut compile)?;
    // The checked output stays on the device: the first verified run after the samples (the
    // same inputs) is compared with it there, and takes its verdict where they are the same.
    let checked = match (&correctness, spec.correctness.output()) {
        (Some(c), Some(output)) if bufs.keep_output(gpu, spec, output) => Some(c.clone()),
        _ => None,
    };
    bufs.reset(gpu, spec)?;
    clock.mark("check");
    // `--verify-every K` between samples; after them, the verified timed runs (issue 32).
    let mut checks = JobChecks {
        gpu,
        spec,
        loaded: &loaded,
        bufs: &mut bufs,
        compile: &mut compile,
        seed,
        checked,
        during: None,
        verified_during: 0,
        timed: None,
        took: Vec::new(),
    };
    let (timed, timeline) = time_variant(gpu, cfg, spec, &mut checks)?;
    let (during, verified_during, timed_checks) =
        (checks.during, checks.verified_during, checks.timed);
    clock.mark_with_parts("samples", &checks.took);
    let energy = cfg
        .energy
        .then(|| energy_of(gpu, spec, &loaded, &bufs, &timed))
        .transpose()?;
    clock.mark("energy");
    // Again after timing, on inputs of another seed: a kernel right only on its first launch, or
    // only on the data it was first given, is caught.
    let correctness_after = match correctness {
        Some(_) => {
            bufs.reseed(gpu, spec, seed.wrapping_add(1));
            verify(gpu, spec, &loaded, &mut bufs, &mut compile)?
        }
        None => None,
    };
    bufs.keep_spares(gpu);
    clock.mark("check after");
    // Samples taken while throttled or below the clock floor stay out of the median, counted.
    let (samples_ms, excluded_samples) = split_by_clock(&timed.samples_ms, &timed.clocks);
    // Every reason NVML gave after a sample is counted: a power-capped job is never silent.
    let (sample_clock_events, clock_lowered_kept) =
        sample_clock_events(&timed.clocks, timed.samples_ms.len());
    Ok(JobOutcome {
        correctness,
        samples_ms,
        excluded_samples,
        warmup_ms: timed.warmup_ms,
        sample_clock_mhz: clock_range(&timed.clocks),
        runs_per_sample: timed.runs_per_sample,
        warmup_runs: timed.warmup_runs,
        stopped_by: timed.stopped_by,
        compile,
        seed,
        correctness_after,
        timing_method: timed.method,
        correctness_during: during,
        verified_during,
        timed_checks,
        occupancy,
        occupancy_error,
        timeline,
        sample_clock_events,
        clock_lowered_kept,
        energy,
        activity: timed.activity,
        phases: clock.phases,
    })
}

/// The wall time of each phase of a job, each measured from the end of the one before.
struct PhaseClock {
    last: std::time::Instant,
    phases: Vec<JobPhase>,
}

impl PhaseClock {
    fn new() -> Self {
        PhaseClock {
            last: std::time::Instant::now(),
            phases: Vec::new(),
        }
    }

    /// Ends `phase` now (a phase that did not run, such as `energy` without `--energy`, is left out).
    fn mark(&mut self, phase: &str) {
        self.mark_with_parts(phase, &[]);
    }

    /// Ends a phase now whose `parts` were timed inside it: each part, and `phase` for the rest.
    fn mark_with_parts(&mut self, phase: &str, parts: &[(&str, f64)]) {
        let total = self.last.elapsed().as_secs_f64();
        self.last = std::time::Instant::now();
        let rest = total - parts.iter().map(|(_, s)| s).sum::<f64>();
        for (phase, seconds) in std::iter::once((phase, rest)).chain(parts.iter().copied()) {
            if seconds >= 1e-4 {
                self.phases.push(JobPhase {
                    phase: phase.to_string(),
                    seconds,
                });
            }
        }
    }
}

/// `--energy`: the variant's launches back to back after timing, at about the timing's median
/// per run. A host program is not repeated outside its timing loop, and says so.
fn energy_of(
    gpu: &Gpu,
    spec: &JobSpec,
    loaded: &Loaded,
    bufs: &Buffers,
    timed: &Timed,
) -> Result<EnergyRecord, RunError> {
    if spec.steps.is_some() {
        return Ok(EnergyRecord::failed(
            "--energy measures variants made of launches; a host program (its copies, syncs and host steps) is not repeated back to back, so its energy was not measured",
        ));
    }
    let per_run_ms = crate::stats::summarize(&timed.samples_ms).map_or(0.0, |s| s.median);
    let pointers = bufs.pointers.clone();
    measure_energy(gpu, per_run_ms, |stream| {
        launch_all(stream, loaded, &spec.launches, &pointers)
    })
}

/// Times the variant: its host program (with the timeline of its steps), or its launches;
/// `checks` are made between the samples and after them.
fn time_variant(
    gpu: &Gpu,
    cfg: &TimingConfig,
    spec: &JobSpec,
    checks: &mut JobChecks,
) -> Result<(Timed, Option<Timeline>), RunError> {
    Ok(match &spec.steps {
        Some(p) => {
            let program = HostProgram::new(gpu, p)?;
            let (timed, timeline) =
                program::time_program(gpu, cfg, &program, checks.loaded, spec, checks)?;
            (timed, Some(timeline))
        }
        None => {
            let (loaded, pointers) = (checks.loaded, checks.bufs.pointers.clone());
            // Kernels that launch kernels are timed with events: device-side launches inside a graph are
            // recent in the driver (CUDA 12.x, with known issues), and a graph that captured but ran its
            // children wrongly would fail the job instead of falling back.
            let capture = if spec.program.rdc {
                Capture::Never("kernels that launch kernels (rdc) are timed with events")
            } else {
                Capture::Allowed
            };
            (
                time_runs(
                    gpu,
                    cfg,
                    capture,
                    |stream| launch_all(stream, loaded, &spec.launches, &pointers),
                    checks,
                )?,
                None,
            )
        }
    })
}
