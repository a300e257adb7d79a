//! Raw driver calls shared by the host programs, the graph timing and the host-link bound: a driver result with what was being done, CUDA events owned together, and recording, waiting on and reading them.

use cudarc::driver::sys::{self, CUevent, CUstream};

use super::error::RunError;

/// Wraps a raw driver result with what was being done.
pub(super) fn check(result: sys::CUresult, doing: impl FnOnce() -> String) -> Result<(), RunError> {
    result.result().map_err(|source| RunError::Driver {
        doing: doing(),
        source,
    })
}

/// CUDA events owned together, destroyed when dropped.
pub(super) struct Events(pub Vec<CUevent>);

impl Events {
    /// `n` events, with timing or without (events that only order work are cheaper without).
    pub fn new(n: usize, timing: bool) -> Result<Events, RunError> {
        let flags = if timing {
            sys::CUevent_flags::CU_EVENT_DEFAULT
        } else {
            sys::CUevent_flags::CU_EVENT_DISABLE_TIMING
        } as u32;
        let mut events = Events(Vec::with_capacity(n));
        for _ in 0..n {
            let mut event: CUevent = std::ptr::null_mut();
            // SAFETY: `event` is written by the call.
            check(unsafe { sys::cuEventCreate(&mut event, flags) }, || {
                "creating a CUDA event".into()
            })?;
            events.0.push(event);
        }
        Ok(events)
    }
}

impl Drop for Events {
    fn drop(&mut self) {
        for &e in &self.0 {
            // SAFETY: created by `Events::new`, destroyed once (the driver waits for pending records).
            let _ = unsafe { sys::cuEventDestroy_v2(e) };
        }
    }
}

pub(super) fn record(event: CUevent, stream: CUstream) -> Result<(), RunError> {
    // SAFETY: a live event and a live stream (or the NULL stream).
    check(unsafe { sys::cuEventRecord(event, stream) }, || {
        "recording an event".into()
    })
}

pub(super) fn wait(stream: CUstream, event: CUevent) -> Result<(), RunError> {
    // SAFETY: a live stream (or the NULL stream) and a live event.
    check(unsafe { sys::cuStreamWaitEvent(stream, event, 0) }, || {
        "making a stream wait for an event".into()
    })
}

pub(super) fn elapsed_ms(start: CUevent, end: CUevent) -> Result<f64, RunError> {
    let mut ms = 0f32;
    // SAFETY: two live timing events, both completed (the caller synchronised on the last).
    check(
        unsafe { sys::cuEventElapsedTime_v2(&mut ms, start, end) },
        || "reading the time between two events".into(),
    )?;
    Ok(ms as f64)
}
