//! The lanes' threads: one per GPU, all started together, where the first error or panic stops the others.

use std::sync::atomic::{AtomicBool, Ordering};

use crate::executor::{Environment, Executor};

/// What a lane does: given its index, its executor and its GPU's UUID.
pub(super) type LaneWork<'a> =
    dyn Fn(usize, &dyn Executor, Option<String>) -> anyhow::Result<()> + Sync + 'a;

/// Raises the stop flag if its thread unwinds.
struct StopOnPanic<'a>(&'a AtomicBool);

impl Drop for StopOnPanic<'_> {
    fn drop(&mut self) {
        if std::thread::panicking() {
            self.0.store(true, Ordering::SeqCst);
        }
    }
}

/// Runs `work` once per lane, each on its own thread (a lane is one GPU), and waits for all;
/// the first error stops the others before their next task and is returned.
pub(super) fn on_every_lane(
    lanes: &[&dyn Executor],
    envs: &[Environment],
    stop: &AtomicBool,
    work: &LaneWork,
) -> anyhow::Result<()> {
    let results: Vec<anyhow::Result<()>> = std::thread::scope(|s| {
        let handles: Vec<_> = lanes
            .iter()
            .zip(envs)
            .enumerate()
            .map(|(li, (lane, env))| {
                let gpu = env.device.as_ref().map(|d| d.uuid.clone());
                s.spawn(move || {
                    // A lane that panics stops the others too: they would wait for its group forever.
                    let _stop_on_panic = StopOnPanic(stop);
                    let result = work(li, *lane, gpu);
                    if result.is_err() {
                        stop.store(true, Ordering::SeqCst);
                    }
                    result
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|_| Err(anyhow::anyhow!("a lane's thread panicked")))
            })
            .collect()
    });
    results.into_iter().collect()
}
