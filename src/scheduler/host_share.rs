//! What the GPUs of one host share: the one ncu session it runs at a time, and the host link, which a job that crosses it has to itself.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Condvar, Mutex};
use std::time::Duration;

/// What the lanes of one host share, also across the side-by-side runs of one process (a mixed
/// host runs one per GPU model): the one ncu session it runs at a time (a pass waits for it
/// instead of queueing in the driver, where its GPU would idle and its timeout would run), and
/// the host link, which a job that crosses it has to itself (see `HostShare::try_exclusive`).
#[derive(Default)]
pub struct HostShare {
    ncu: AtomicBool,
    lanes: Mutex<LaneCount>,
    /// Signalled whenever a lane's work ends, for a lane waiting to have the host alone.
    work_ended: Condvar,
}

/// Lanes running work now, and whether one holds (or is waiting to hold) the host alone.
#[derive(Default)]
struct LaneCount {
    busy: usize,
    exclusive: bool,
}

impl HostShare {
    /// The ncu slot, if free, held until the returned guard drops (an error or a panic lets it go too).
    pub(super) fn try_take_ncu(&self) -> Option<HeldSlot<'_>> {
        self.ncu
            .compare_exchange(false, true, Ordering::SeqCst, Ordering::SeqCst)
            .is_ok()
            .then_some(HeldSlot(&self.ncu))
    }

    fn count(&self) -> std::sync::MutexGuard<'_, LaneCount> {
        self.lanes.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A lane's turn at ordinary work, unless a lane holds or awaits the host alone.
    pub(super) fn try_share(&self) -> Option<Busy<'_>> {
        let mut c = self.count();
        (!c.exclusive).then(|| {
            c.busy += 1;
            Busy {
                host: self,
                exclusive: false,
            }
        })
    }

    /// Claims the host for one lane alone, unless another lane has; `Busy::wait_alone` then waits
    /// for the others' work in hand to end. A host-link job is timed with every other GPU of the
    /// host idle: beside another GPU's job its copies shared the host's memory and links and
    /// moved by up to 36% (transfers, streams on two H200s, gpus-h200x2/suite-all), while
    /// device-only jobs timed side by side agreed with a one-GPU run to 0.78% at p90.
    pub(super) fn try_exclusive(&self) -> Option<Busy<'_>> {
        let mut c = self.count();
        (!c.exclusive).then(|| {
            c.exclusive = true;
            c.busy += 1;
            Busy {
                host: self,
                exclusive: true,
            }
        })
    }
}

/// A lane's work in hand, counted until it drops (an error or a panic ends it too).
pub(super) struct Busy<'h> {
    host: &'h HostShare,
    exclusive: bool,
}

impl Busy<'_> {
    /// For exclusive work, returns once it is the only work running on the host (later work waits
    /// for it to drop); shared work goes at once.
    pub(super) fn wait_alone(&self, stop: &AtomicBool) {
        if !self.exclusive {
            return;
        }
        let mut c = self.host.count();
        // The timeout only bounds how late a stop (another lane's failure) is seen.
        while c.busy > 1 && !stop.load(Ordering::SeqCst) {
            c = self
                .host
                .work_ended
                .wait_timeout(c, Duration::from_millis(100))
                .map(|(g, _)| g)
                .unwrap_or_else(|e| e.into_inner().0);
        }
    }
}

impl Drop for Busy<'_> {
    fn drop(&mut self) {
        let mut c = self.host.count();
        c.busy -= 1;
        if self.exclusive {
            c.exclusive = false;
        }
        drop(c);
        self.host.work_ended.notify_all();
    }
}

/// The host's ncu slot, held until it drops.
pub(super) struct HeldSlot<'a>(&'a AtomicBool);

impl Drop for HeldSlot<'_> {
    fn drop(&mut self) {
        self.0.store(false, Ordering::SeqCst);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_ncu_slot_has_one_holder_at_a_time() {
        let host = HostShare::default();
        let held = host.try_take_ncu();
        assert!(held.is_some());
        assert!(host.try_take_ncu().is_none());
        drop(held);
        assert!(host.try_take_ncu().is_some());
    }

    #[test]
    fn a_lane_alone_shuts_out_every_other_claim_until_its_work_ends() {
        let host = HostShare::default();
        let shared = host.try_share().unwrap();
        let alone = host.try_exclusive().unwrap();
        assert!(host.try_share().is_none() && host.try_exclusive().is_none());
        drop(shared);
        // Alone now: its wait returns at once.
        alone.wait_alone(&AtomicBool::new(false));
        drop(alone);
        let again = [host.try_share(), host.try_share()];
        assert!(
            again.iter().all(Option::is_some),
            "shared work side by side"
        );
    }

    #[test]
    fn a_lane_waiting_to_be_alone_returns_on_a_stop_and_at_once_for_shared_work() {
        let host = HostShare::default();
        let _other = host.try_share().unwrap();
        let alone = host.try_exclusive().unwrap();
        alone.wait_alone(&AtomicBool::new(true));
        drop(alone);
        host.try_share()
            .unwrap()
            .wait_alone(&AtomicBool::new(false));
    }

    #[test]
    fn a_lane_waiting_to_be_alone_goes_when_the_others_work_ends() {
        let host = HostShare::default();
        let other = host.try_share().unwrap();
        let alone = host.try_exclusive().unwrap();
        std::thread::scope(|s| {
            s.spawn(move || {
                std::thread::sleep(Duration::from_millis(20));
                drop(other);
            });
            alone.wait_alone(&AtomicBool::new(false));
            assert_eq!(host.count().busy, 1);
        });
    }
}
