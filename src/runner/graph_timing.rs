//! Cold timing of a short kernel in CUDA graphs: a graph of many (L2 eviction, event, run, event) captured once, then launched for every sample.

use std::sync::Arc;

use cudarc::driver::CudaStream;

use super::activity::Probe;
use super::device::Gpu;
use super::error::{Doing, RunError};
use super::events::{Events, check, elapsed_ms};
use super::l2_flush::Flush;
use super::sampling::SamplingClock;
use super::timing_rules::{Timed, graph_method, graph_runs, graph_sample_ms, stop_sampling};
use crate::records::TimingConfig;

/// Why graph timing stopped: the capture failed (time the plain way) or the run did.
pub(super) enum GraphError {
    Capture(RunError),
    Run(RunError),
}

/// Cold timing of a short kernel: a sample is a CUDA graph of `n` (L2 eviction, event, run,
/// event) in a row, the mean of the `n` runs' times between their events: no launch gap, and
/// nothing subtracted.
pub(super) fn time_graphs(
    gpu: &Gpu,
    cfg: &TimingConfig,
    flush: &Flush,
    per_run: f64,
    run: &mut impl FnMut(&Arc<CudaStream>) -> Result<(), RunError>,
    probe: &mut Probe,
    check: &mut impl FnMut() -> Result<(), RunError>,
) -> Result<Timed, GraphError> {
    let graph = capture_graph(gpu, flush, per_run, run).map_err(GraphError::Capture)?;
    sample_graph(gpu, cfg, graph, probe, check).map_err(GraphError::Run)
}

/// The graph of a graph sample, the stream it was captured on, and its runs' (start, end) events.
struct RunGraph {
    stream: Arc<CudaStream>,
    graph: cudarc::driver::CudaGraph,
    events: Events,
    n: usize,
}

fn capture_graph(
    gpu: &Gpu,
    flush: &Flush,
    per_run: f64,
    run: &mut impl FnMut(&Arc<CudaStream>) -> Result<(), RunError>,
) -> Result<RunGraph, RunError> {
    use cudarc::driver::sys::{self, CUgraphInstantiate_flags, CUstreamCaptureMode};
    // The default (legacy) stream cannot be captured: a stream of its own, after the uploads.
    gpu.stream.synchronize().doing("finishing the uploads")?;
    let stream = gpu.ctx.new_stream().doing("creating a capture stream")?;
    let n = graph_runs(per_run);
    // Per run: its start and end, then a start and end with nothing between (what the event nodes cost).
    let events = Events::new(4 * n, true)?;
    // An event recorded with CU_EVENT_RECORD_EXTERNAL during capture becomes an event record node,
    // recorded each time the graph runs.
    // SAFETY: a live timing event and the capturing stream.
    let mark = |event: sys::CUevent| {
        check(
            unsafe {
                sys::cuEventRecordWithFlags(
                    event,
                    stream.cu_stream(),
                    sys::CUevent_record_flags::CU_EVENT_RECORD_EXTERNAL as u32,
                )
            },
            || "recording an event node in a graph".into(),
        )
    };
    stream
        .begin_capture(CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_THREAD_LOCAL)
        .doing("starting a graph capture")?;
    let body = (0..n).try_for_each(|i| {
        flush.evict(&stream)?;
        mark(events.0[4 * i])?;
        run(&stream)?;
        mark(events.0[4 * i + 1])?;
        mark(events.0[4 * i + 2])?;
        mark(events.0[4 * i + 3])
    });
    let graph = stream
        .end_capture(CUgraphInstantiate_flags(0))
        .doing("ending the graph capture");
    body?;
    let graph = graph?.ok_or_else(|| RunError::Invalid("the captured graph is empty".into()))?;
    Ok(RunGraph {
        stream,
        graph,
        events,
        n,
    })
}

fn sample_graph(
    gpu: &Gpu,
    cfg: &TimingConfig,
    g: RunGraph,
    probe: &mut Probe,
    check: &mut impl FnMut() -> Result<(), RunError>,
) -> Result<Timed, RunError> {
    let RunGraph {
        stream,
        graph,
        events,
        n,
    } = g;
    let time = || -> Result<f64, RunError> {
        graph.launch().doing("launching a graph")?;
        stream.synchronize().doing("timing a graph")?;
        let mut spans = Vec::with_capacity(n);
        for e in events.0.chunks(4) {
            spans.push((elapsed_ms(e[0], e[1])?, elapsed_ms(e[2], e[3])?));
        }
        Ok(graph_sample_ms(&spans, n))
    };
    for _ in 0..2 {
        time()?;
    }
    let mut samples = Vec::new();
    let mut clocks = Vec::new();
    let mut clock = SamplingClock::start();
    let stopped_by = loop {
        // A sample is a graph of n runs, each after its own L2 flush (left out by name).
        probe.begin();
        let sample = time()?;
        probe.end(n as u32);
        samples.push(sample);
        clocks.push(gpu.clock());
        clock.verify_every(cfg, samples.len(), check)?;
        // The check resets the buffers on the default stream; the capture stream does not wait for it.
        gpu.stream.synchronize().doing("finishing a verification")?;
        if let Some(why) = stop_sampling(cfg, &samples, clock.seconds()) {
            break why;
        }
    };
    // The graph's event nodes refer to the events: the graph goes first.
    drop(graph);
    drop(events);
    Ok(Timed {
        samples_ms: samples,
        runs_per_sample: n as u32,
        warmup_runs: 0,
        warmup_ms: 0.0,
        clocks,
        stopped_by,
        method: graph_method(n),
        activity: None,
    })
}
