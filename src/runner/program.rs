//! A host-program variant on the GPU: its streams and events created, its steps issued in order on raw driver calls, and its samples timed end to end with each step's own start and end.

use cudarc::driver::sys::{self, CUevent, CUstream};

use super::buffers::Buffers;
use super::device::Gpu;
use super::error::{Doing, RunError};
use super::events::{Events, check, elapsed_ms, record, wait};
use super::launching::launch;
use super::loading::Loaded;
use super::sampling::{CheckedBuffers, SamplingClock, warm_up};
use super::timing_rules::{Timed, program_method, stop_sampling};
use crate::records::{CacheState, ClockSample, StepInfo, Timeline, TimingConfig, kept_by_clock};
use crate::suite::{Action, BufferSpec, LaunchSpec, Location, Memory, StepProgram, SyncTarget};

/// Each step's start and end in one sample, in ms from the sample's start (`None`: the step records no events).
type StepSpans = Vec<Option<(f64, f64)>>;

/// A variant's host program, ready to issue: the streams it declares and the events its steps
/// record, created once and destroyed with it.
pub(super) struct HostProgram<'a> {
    gpu: &'a Gpu,
    program: &'a StepProgram,
    streams: Vec<CUstream>,
    /// The declared streams some step is issued on: only they are forked from the start and joined.
    used: Vec<usize>,
    events: Events,
}

impl Drop for HostProgram<'_> {
    fn drop(&mut self) {
        // After a failed step work may still be queued on the streams, over buffers about to be
        // freed: wait for it (best effort; the child is failing anyway).
        let _ = self.gpu.ctx.synchronize();
        for &s in &self.streams {
            // SAFETY: created by `new`, destroyed once.
            let _ = unsafe { sys::cuStreamDestroy_v2(s) };
        }
    }
}

/// The events of one timed sample: the start and end of the whole, and of each step that does work.
struct Marks {
    start: CUevent,
    stop: CUevent,
    /// Per used stream: recorded at its end, so that the stop waits for every stream.
    joins: Events,
    steps: Vec<Option<(CUevent, CUevent)>>,
    /// Owns `start`, `stop` and the steps' events.
    _timed: Events,
}

impl Marks {
    fn new(program: &StepProgram, used_streams: usize) -> Result<Marks, RunError> {
        let work = program
            .steps
            .iter()
            .filter(|s| s.action.kind().is_some())
            .count();
        let timed = Events::new(2 + 2 * work, true)?;
        let mut pairs = timed.0[2..].chunks(2).map(|p| (p[0], p[1]));
        let steps = program
            .steps
            .iter()
            .map(|s| s.action.kind().and_then(|_| pairs.next()))
            .collect();
        Ok(Marks {
            start: timed.0[0],
            stop: timed.0[1],
            joins: Events::new(used_streams, false)?,
            steps,
            _timed: timed,
        })
    }
}

impl<'a> HostProgram<'a> {
    pub fn new(gpu: &'a Gpu, program: &'a StepProgram) -> Result<HostProgram<'a>, RunError> {
        gpu.ctx
            .bind_to_thread()
            .doing("making the context current")?;
        let mut used: Vec<usize> = program.steps.iter().filter_map(|s| s.stream).collect();
        used.sort_unstable();
        used.dedup();
        let mut p = HostProgram {
            gpu,
            program,
            streams: Vec::new(),
            used,
            events: Events::new(program.events.len(), false)?,
        };
        for s in &program.streams {
            let mut stream: CUstream = std::ptr::null_mut();
            let flags = if s.non_blocking {
                sys::CUstream_flags::CU_STREAM_NON_BLOCKING as u32
            } else {
                0
            };
            // SAFETY: `stream` is written by the call.
            check(unsafe { sys::cuStreamCreate(&mut stream, flags) }, || {
                format!("creating stream `{}`", s.name)
            })?;
            p.streams.push(stream);
        }
        Ok(p)
    }

    fn stream(&self, index: Option<usize>) -> CUstream {
        // The NULL stream is the null handle: the legacy default stream, which blocking streams wait for.
        index.map_or(std::ptr::null_mut(), |i| self.streams[i])
    }

    /// Issues every step once, in order; with `marks`, each step that does work is bracketed by
    /// events on its stream, and the whole by events on the NULL stream that every stream joins.
    fn issue(
        &self,
        loaded: &Loaded,
        launches: &[LaunchSpec],
        buffers: &[BufferSpec],
        bufs: &Buffers,
        marks: Option<&Marks>,
    ) -> Result<(), RunError> {
        let null: CUstream = std::ptr::null_mut();
        if let Some(m) = marks {
            record(m.start, null)?;
            // Non-blocking streams do not wait for the NULL stream: they wait for the start.
            for &i in &self.used {
                wait(self.streams[i], m.start)?;
            }
        }
        for (i, step) in self.program.steps.iter().enumerate() {
            // A synchronous copy runs on the NULL stream whatever the step says (as cudaMemcpy does).
            let stream = match step.action {
                Action::Copy {
                    asynchronous: false,
                    ..
                } => null,
                _ => self.stream(step.stream),
            };
            let mark = marks.and_then(|m| m.steps[i]);
            if let Some((start, _)) = mark {
                record(start, stream)?;
            }
            self.issue_step(i, stream, loaded, launches, buffers, bufs)?;
            if let Some((_, end)) = mark {
                record(end, stream)?;
            }
        }
        if let Some(m) = marks {
            for (&i, &join) in self.used.iter().zip(&m.joins.0) {
                record(join, self.streams[i])?;
                wait(null, join)?;
            }
            record(m.stop, null)?;
        }
        Ok(())
    }

    /// Issues step `i` on `stream`: a copy, a kernel, a memset, a prefetch, an event recorded or
    /// waited on, or a sync.
    fn issue_step(
        &self,
        i: usize,
        stream: CUstream,
        loaded: &Loaded,
        launches: &[LaunchSpec],
        buffers: &[BufferSpec],
        bufs: &Buffers,
    ) -> Result<(), RunError> {
        let step = &self.program.steps[i];
        let doing = || format!("step {} `{}`", i + 1, step.label);
        match &step.action {
            Action::Copy {
                from,
                to,
                asynchronous,
                ..
            } => {
                let (dst, src) = (
                    bufs.copy_pointers.at(to.buffer, to.offset),
                    bufs.copy_pointers.at(from.buffer, from.offset),
                );
                let n = from.bytes(buffers) as usize;
                // SAFETY: both regions lie inside live allocations (checked at load); unified
                // addressing tells the driver which side each address is on.
                let r = unsafe {
                    if *asynchronous {
                        sys::cuMemcpyAsync(dst, src, n, stream)
                    } else {
                        sys::cuMemcpy(dst, src, n)
                    }
                };
                check(r, doing)?;
            }
            Action::Kernel { launch: l } => launch(loaded, &launches[*l], &bufs.pointers, stream)?,
            Action::Memset { region, value } => {
                let address = bufs.pointers.at(region.buffer, region.offset);
                // SAFETY: a device-visible region of a live allocation.
                check(
                    unsafe {
                        sys::cuMemsetD8Async(
                            address,
                            *value,
                            region.bytes(buffers) as usize,
                            stream,
                        )
                    },
                    doing,
                )?;
            }
            Action::Prefetch { region, to } => {
                let address = bufs.pointers.at(region.buffer, region.offset);
                let location = super::memory::location(self.gpu, *to == Location::Device);
                // SAFETY: a region of a live managed allocation (checked at load).
                check(
                    unsafe {
                        sys::cuMemPrefetchAsync_v2(
                            address,
                            region.bytes(buffers) as usize,
                            location,
                            0,
                            stream,
                        )
                    },
                    doing,
                )?;
            }
            Action::Record { event } => record(self.events.0[*event], stream)?,
            Action::Wait { event } => wait(stream, self.events.0[*event])?,
            Action::Sync { target } => {
                // SAFETY: live handles.
                let r = unsafe {
                    match target {
                        SyncTarget::Device => sys::cuCtxSynchronize(),
                        SyncTarget::Stream => sys::cuStreamSynchronize(stream),
                        SyncTarget::Event(e) => sys::cuEventSynchronize(self.events.0[*e]),
                    }
                };
                check(r, || {
                    format!(
                        "{} (a fault here is an illegal memory access or a trap in a kernel)",
                        doing()
                    )
                })?;
            }
        }
        Ok(())
    }

    /// Runs the program once and waits for all of it (its buffers are ready: `Buffers::reset` syncs).
    pub fn run(
        &self,
        loaded: &Loaded,
        launches: &[LaunchSpec],
        buffers: &[BufferSpec],
        bufs: &Buffers,
        what: &str,
    ) -> Result<(), RunError> {
        self.issue(loaded, launches, buffers, bufs, None)?;
        self.gpu.ctx.synchronize().doing(format!(
            "running {what} (a fault here is an illegal memory access or a trap in a kernel)"
        ))
    }
}

/// Buffers whose pages a sample must find on the host: managed ones (a kernel that touched them
/// pulled them to the device; the next sample would otherwise not migrate anything).
fn starts_on_host(b: &BufferSpec) -> bool {
    b.memory == Memory::Managed
}

/// Times a host program: warm-up until the SM clock is steady, then one run a sample between
/// events on the NULL stream that every stream joins (managed buffers written back from the host
/// and, cold, the L2 flushed before each, outside the timed region). Returns the samples and the
/// timeline of the sample nearest their median, with each step's median duration.
/// After the samples, the verified timed runs `checks` makes are each one such sample (issue 32).
pub(super) fn time_program(
    gpu: &Gpu,
    cfg: &TimingConfig,
    program: &HostProgram,
    loaded: &Loaded,
    spec: &crate::suite::JobSpec,
    checks: &mut dyn CheckedBuffers,
) -> Result<(Timed, Timeline), RunError> {
    let launches = &spec.launches;
    let flush = match cfg.cache {
        CacheState::Warm => None,
        CacheState::Cold => Some(gpu.flush()?),
    };
    let marks = Marks::new(program.program, program.used.len())?;
    let prepare = |bufs: &mut Buffers| -> Result<(), RunError> {
        bufs.reset_where(gpu, spec, starts_on_host)?;
        if let Some(f) = &flush {
            f.evict(&gpu.stream)?;
        }
        gpu.ctx
            .synchronize()
            .doing("finishing the preparation of a sample")
    };
    // One sample: the whole and each step, relative to the start.
    let sample = |bufs: &mut Buffers| -> Result<(f64, StepSpans), RunError> {
        prepare(bufs)?;
        program.issue(loaded, launches, &spec.buffers, bufs, Some(&marks))?;
        // SAFETY: a live event, recorded just above.
        check(unsafe { sys::cuEventSynchronize(marks.stop) }, || {
            "running the host program (a fault here is an illegal memory access or a trap in a kernel)".into()
        })?;
        let total = elapsed_ms(marks.start, marks.stop)?;
        let steps = marks
            .steps
            .iter()
            .map(|m| {
                m.map(|(a, b)| {
                    Ok::<_, RunError>((elapsed_ms(marks.start, a)?, elapsed_ms(marks.start, b)?))
                })
                .transpose()
            })
            .collect::<Result<Vec<_>, _>>()?;
        Ok((total, steps))
    };
    let (warmup_runs, warmup_ms) = warm_up(gpu, cfg, || sample(checks.buffers()).map(|_| ()))?;
    let (mut samples, mut per_step, mut clocks): (
        Vec<f64>,
        Vec<StepSpans>,
        Vec<Option<ClockSample>>,
    ) = (Vec::new(), Vec::new(), Vec::new());
    let mut clock = SamplingClock::start();
    let stopped_by = loop {
        let (total, steps) = sample(checks.buffers())?;
        samples.push(total);
        per_step.push(steps);
        clocks.push(gpu.clock());
        clock.verify_every(cfg, samples.len(), &mut || checks.between_samples())?;
        if let Some(why) = stop_sampling(cfg, &samples, clock.seconds()) {
            break why;
        }
    };
    checks.after_samples(&mut |bufs| sample(bufs).map(|(total, _)| total))?;
    // The timeline is drawn from the samples the median keeps.
    let keep = kept_by_clock(&clocks, samples.len());
    let (kept_totals, kept_steps): (Vec<f64>, Vec<StepSpans>) = samples
        .iter()
        .zip(per_step)
        .zip(keep)
        .filter(|(_, k)| *k)
        .map(|((&t, s), _)| (t, s))
        .unzip();
    let timeline = timeline_of(program.program, &spec.buffers, &kept_totals, &kept_steps);
    let method = program_method(flush.is_some());
    Ok((
        Timed {
            samples_ms: samples,
            runs_per_sample: 1,
            warmup_runs,
            stopped_by,
            method,
            clocks,
            warmup_ms,
            // A host program's copies and host steps are timed with events only.
            activity: None,
        },
        timeline,
    ))
}

/// The timeline of the sample nearest the median: the steps that do work (records, waits and
/// syncs are never timed), each with its spans in every sample.
fn timeline_of(
    program: &StepProgram,
    buffers: &[BufferSpec],
    totals: &[f64],
    per_step: &[Vec<Option<(f64, f64)>>],
) -> Timeline {
    let (work, infos): (Vec<usize>, Vec<StepInfo>) = program
        .steps
        .iter()
        .enumerate()
        // A synchronous copy has no stream of its own (the manifest refuses one): it is on NULL.
        .filter_map(|(i, step)| {
            Some((
                i,
                StepInfo {
                    label: step.label.clone(),
                    kind: step.action.kind()?,
                    stream: program.stream_name(step.stream),
                    bytes: step.action.bytes(buffers),
                },
            ))
        })
        .unzip();
    let spans: Vec<Vec<Option<(f64, f64)>>> = per_step
        .iter()
        .map(|sample| {
            work.iter()
                .map(|&i| sample.get(i).copied().flatten())
                .collect()
        })
        .collect();
    Timeline::nearest_median(&infos, totals, &spans)
}
