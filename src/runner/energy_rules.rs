//! The energy rule of `--energy`, apart from the CUDA and NVML calls that follow it: how many runs make a batch, and when NVML's total-energy counter has moved enough over long enough to give a job's joules per run. Pure: tested without a GPU.
//!
//! NVML's counter moves in steps (about every 100 ms on an H100), so a window cut at arbitrary
//! times would be off by up to a step at each end. The window is cut at the counter's steps
//! instead: it opens at the first step seen after the runs begin and closes at the first step
//! seen once it spans `MIN_ENERGY_SECONDS` and `MIN_COUNTER_STEPS`. Each step is seen after the
//! batch in which it happened, so both ends are late by under a batch (`BATCH_MS`), and the two
//! errors mostly cancel.

/// The window spans at least this long (the "at least 1 s of repeated launches").
pub const MIN_ENERGY_SECONDS: f64 = 1.0;
/// … and at least this many steps of the counter after the one that opened it.
pub const MIN_COUNTER_STEPS: u32 = 5;
/// The counter must move within this long of the runs starting, or it is taken as not counting.
pub const FIRST_STEP_WAIT_SECONDS: f64 = 2.0;
/// A window still short of `MIN_COUNTER_STEPS` after this long closes at its last step (a coarse
/// counter), or fails without one.
pub const MAX_ENERGY_SECONDS: f64 = 10.0;
/// A batch of runs lasts about this long: each step is seen at most a batch late.
pub const BATCH_MS: f64 = 10.0;

/// Runs in one batch, from one run's time (the timing's median): about `BATCH_MS` of them, at
/// least one, at most 100 000 (a run of nanoseconds would otherwise queue millions of launches).
pub fn batch_runs(per_run_ms: f64) -> u64 {
    if per_run_ms.is_finite() && per_run_ms > 0.0 {
        (BATCH_MS / per_run_ms).ceil().clamp(1.0, 100_000.0) as u64
    } else {
        1
    }
}

/// The counter, the time and the runs completed at one of its steps.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Step {
    mj: u64,
    seconds: f64,
    runs: u64,
}

/// What the window measured: the counter's change, the time and the runs between its two ends.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct EnergyWindow {
    pub joules: f64,
    pub seconds: f64,
    pub runs: u64,
    /// The counter's steps inside the window.
    pub steps: u32,
}

/// What to do after a reading of the counter.
#[derive(Debug, Clone, PartialEq)]
pub enum EnergyNext {
    /// Run another batch.
    Continue,
    /// The counter stepped now (read the clock and its reasons at it), and the window goes on.
    Stepped,
    /// The window is complete.
    Done(EnergyWindow),
    /// No measurement, and why.
    GiveUp(String),
}

/// The counter's readings after each batch, and where the window stands.
#[derive(Debug, Default)]
pub struct EnergyRule {
    last_mj: Option<u64>,
    first: Option<Step>,
    last_step: Option<Step>,
    steps: u32,
}

impl EnergyRule {
    pub fn new() -> Self {
        Self::default()
    }

    /// One reading: the counter `mj`, `seconds` since the runs began and the `runs` completed by then.
    pub fn observe(&mut self, mj: u64, seconds: f64, runs: u64) -> EnergyNext {
        let Some(last) = self.last_mj.replace(mj) else {
            return EnergyNext::Continue;
        };
        if mj < last {
            return EnergyNext::GiveUp(format!(
                "NVML's total-energy counter went backwards ({last} mJ, then {mj} mJ): the driver was reloaded or the counter wrapped; run again"
            ));
        }
        let stepped = mj > last;
        let now = Step { mj, seconds, runs };
        let Some(first) = self.first else {
            if stepped {
                self.first = Some(now);
                return EnergyNext::Stepped;
            }
            if seconds > FIRST_STEP_WAIT_SECONDS {
                return EnergyNext::GiveUp(format!(
                    "NVML's total-energy counter did not move in {FIRST_STEP_WAIT_SECONDS} s of runs: this GPU or driver does not count energy"
                ));
            }
            return EnergyNext::Continue;
        };
        if stepped {
            self.steps += 1;
            self.last_step = Some(now);
        }
        let span = seconds - first.seconds;
        if stepped && span >= MIN_ENERGY_SECONDS && self.steps >= MIN_COUNTER_STEPS {
            return EnergyNext::Done(window(first, now, self.steps));
        }
        if span > MAX_ENERGY_SECONDS {
            return match self.last_step {
                Some(end) => EnergyNext::Done(window(first, end, self.steps)),
                None => EnergyNext::GiveUp(format!(
                    "NVML's total-energy counter moved once and then not for {MAX_ENERGY_SECONDS} s: no window to measure"
                )),
            };
        }
        if stepped {
            EnergyNext::Stepped
        } else {
            EnergyNext::Continue
        }
    }
}

fn window(first: Step, end: Step, steps: u32) -> EnergyWindow {
    EnergyWindow {
        joules: (end.mj - first.mj) as f64 / 1000.0,
        seconds: end.seconds - first.seconds,
        runs: end.runs - first.runs,
        steps,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_batch_lasts_about_ten_milliseconds() {
        assert_eq!(batch_runs(1.0), 10);
        assert_eq!(batch_runs(0.3), 34);
        assert_eq!(batch_runs(25.0), 1, "a run longer than a batch is a batch");
        assert_eq!(batch_runs(1e-9), 100_000);
        assert_eq!(batch_runs(0.0), 1);
        assert_eq!(batch_runs(f64::NAN), 1);
    }

    /// A counter that steps every 100 ms by 70 J (700 W), read every 10 ms with 10 runs a batch.
    fn run_at_700_w(rule: &mut EnergyRule, until_s: f64) -> Vec<EnergyNext> {
        let mut seen = Vec::new();
        // Whole milliseconds: the steps fall exactly every 100 ms.
        for ms in (0u64..).step_by(10) {
            let t = ms as f64 / 1000.0;
            let mj = 5_000_000 + ms / 100 * 70_000;
            let next = rule.observe(mj, t, ms);
            let end = matches!(next, EnergyNext::Done(_) | EnergyNext::GiveUp(_));
            seen.push(next);
            if end || t > until_s {
                break;
            }
        }
        seen
    }

    #[test]
    fn the_window_opens_and_closes_at_counter_steps_after_a_second() {
        let mut rule = EnergyRule::new();
        let seen = run_at_700_w(&mut rule, 5.0);
        let EnergyNext::Done(w) = seen.last().unwrap() else {
            panic!("{seen:?}")
        };
        assert!((w.seconds - 1.0).abs() < 0.02, "{w:?}");
        assert_eq!(w.steps, 10);
        assert!((w.joules - 700.0).abs() < 1e-9, "{w:?}");
        assert!((w.joules / w.seconds - 700.0).abs() < 15.0, "{w:?}");
        assert_eq!(w.runs, 1000);
        let stepped = seen.iter().filter(|n| **n == EnergyNext::Stepped).count();
        assert_eq!(
            stepped, 10,
            "the opening step and nine more before the closing one"
        );
    }

    #[test]
    fn a_counter_that_never_moves_or_goes_back_is_no_measurement() {
        let mut rule = EnergyRule::new();
        let mut last = EnergyNext::Continue;
        for i in 0..=250 {
            last = rule.observe(42, i as f64 * 0.01, i * 10);
            if last != EnergyNext::Continue {
                break;
            }
        }
        let EnergyNext::GiveUp(why) = last else {
            panic!("{last:?}")
        };
        assert!(why.contains("did not move"), "{why}");
        let mut rule = EnergyRule::new();
        rule.observe(100, 0.0, 0);
        let EnergyNext::GiveUp(why) = rule.observe(50, 0.01, 10) else {
            panic!()
        };
        assert!(why.contains("backwards"), "{why}");
    }

    #[test]
    fn a_coarse_counter_closes_at_its_last_step_after_ten_seconds() {
        let mut rule = EnergyRule::new();
        assert_eq!(rule.observe(0, 0.0, 0), EnergyNext::Continue);
        assert_eq!(rule.observe(1000, 0.5, 5), EnergyNext::Stepped);
        assert_eq!(rule.observe(3000, 4.5, 45), EnergyNext::Stepped);
        assert_eq!(rule.observe(3000, 9.0, 90), EnergyNext::Continue);
        let EnergyNext::Done(w) = rule.observe(3000, 10.6, 106) else {
            panic!()
        };
        assert_eq!((w.joules, w.seconds, w.runs, w.steps), (2.0, 4.0, 40, 1));
        // Stepped once, then never again: nothing to measure.
        let mut rule = EnergyRule::new();
        rule.observe(0, 0.0, 0);
        rule.observe(10, 0.1, 1);
        assert!(matches!(rule.observe(10, 10.2, 102), EnergyNext::GiveUp(_)));
    }
}
