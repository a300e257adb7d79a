//! The timing rules, apart from the CUDA calls that follow them: how long warm-up goes on, how many runs make a sample, when a cold sample is a CUDA graph, when to verify between samples, when sampling stops, and the words that say how samples were taken. Pure: tested without a GPU.

use crate::records::{ClockSample, TimingConfig};
use crate::stats;

/// What timing found: per-run times and how they were taken.
pub struct Timed {
    pub samples_ms: Vec<f64>,
    pub runs_per_sample: u32,
    pub warmup_runs: u32,
    pub stopped_by: String,
    /// How the samples were taken, in words for the report.
    pub method: String,
    /// The SM clock NVML read after each sample.
    pub clocks: Vec<Option<ClockSample>>,
    /// How long the warm-up ran, in ms.
    pub warmup_ms: f64,
    /// The samples' kernel durations from CUPTI's Activity API (None with `--no-activity`).
    pub activity: Option<crate::records::ActivityRecord>,
}

/// Warm-up goes on until the last three SM clock readings are within 1% of each other, for at
/// most this long: a clock still ramping would slow the first samples.
const MAX_CLOCK_SETTLE_MS: f64 = 2000.0;

/// Whether the last three SM clock readings are within 1% of each other.
fn clock_settled(readings: &[u32]) -> bool {
    match readings {
        [.., a, b, c] => {
            let (lo, hi) = (*a.min(b).min(c) as f64, *a.max(b).max(c) as f64);
            hi <= lo * 1.01
        }
        _ => false,
    }
}

/// Below this per-run time a cold sample is a CUDA graph of many (eviction, event, run, event)
/// in a row, each run read between its event nodes. Timed one launch at a time between events, a cold kernel reads
/// 1 to 8 µs more than ncu's `gpu__time_duration` whatever its length (the launch and the events;
/// 92 transpose jobs on an H100, cold-h100, 2026-11-22): 3% of 0.25 ms is 7.5 µs, so
/// shorter kernels are timed in graphs.
pub const GRAPH_BELOW_MS: f64 = 0.25;

/// Whether the runs may be captured into a CUDA graph (a library call bound to the default stream
/// may not), and if not, why (said in the job's timing method where a graph would have been used).
#[derive(Clone, Copy, PartialEq)]
pub enum Capture {
    Allowed,
    Never(&'static str),
}

/// Whether warm-up must go on before the clock is looked at: at least 3 runs, and `cfg.warmup_ms`.
pub(super) fn warming_up(runs: u32, elapsed_ms: f64, cfg: &TimingConfig) -> bool {
    runs < 3 || elapsed_ms < cfg.warmup_ms
}

/// Whether warm-up goes on past its set time for the SM clock to settle (`readings`: the clock
/// read so far after the set time), for at most `MAX_CLOCK_SETTLE_MS`.
pub(super) fn keep_settling(readings: &[u32], elapsed_ms: f64) -> bool {
    !clock_settled(readings) && elapsed_ms < MAX_CLOCK_SETTLE_MS
}

/// How many runs the calibration times back to back: as many as warm-up made, at most 100.
pub(super) fn calibration_runs(warmup_runs: u32) -> u32 {
    warmup_runs.min(100)
}

/// One run's time from the calibration's total, never below 0.1 µs (it divides the sample length).
pub(super) fn per_run_ms(elapsed_ms: f64, runs: u32) -> f64 {
    (elapsed_ms / runs as f64).max(1e-4)
}

/// How the samples of `time_runs` are taken: in a CUDA graph or between events, and that in words.
pub(super) struct SamplingPlan {
    pub in_graph: bool,
    pub method: String,
}

/// A cold run shorter than `GRAPH_BELOW_MS` is timed in CUDA graphs where it may be captured
/// (the method says why not where it may not); every other run between events.
pub(super) fn sampling_plan(cold: bool, capture: Capture, per_run_ms: f64) -> SamplingPlan {
    let short = per_run_ms < GRAPH_BELOW_MS;
    let mut method = if cold {
        "events around one run after an L2 flush".to_string()
    } else {
        "events around back-to-back runs".to_string()
    };
    if let (true, Capture::Never(why), true) = (cold, capture, short) {
        method = format!("{method} (not in a CUDA graph: {why})");
    }
    SamplingPlan {
        in_graph: cold && capture == Capture::Allowed && short,
        method,
    }
}

/// The method of a run whose graph could not be captured (timed between events instead), with the
/// first line of the capture's error.
pub(super) fn graph_capture_failed(method: &str, error: &str) -> String {
    format!(
        "{method} (a CUDA graph could not be captured: {})",
        error.lines().next().unwrap_or_default()
    )
}

/// Runs a sample between events: cold, one (a second run would find the first one's data in L2);
/// warm, enough for `cfg.min_sample_ms`, 1 to 10,000.
pub(super) fn runs_per_sample(cold: bool, cfg: &TimingConfig, per_run_ms: f64) -> u32 {
    if cold {
        1
    } else {
        ((cfg.min_sample_ms / per_run_ms).ceil() as u32).clamp(1, 10_000)
    }
}

/// `--verify-every K`: whether the check runs after sample number `samples` (every K-th; never with 0).
pub(super) fn verify_due(cfg: &TimingConfig, samples: usize) -> bool {
    cfg.verify_every > 0 && samples.is_multiple_of(cfg.verify_every as usize)
}

/// The stopping rule: enough samples and the noise target met, or a cap reached.
pub(super) fn stop_sampling(cfg: &TimingConfig, samples: &[f64], seconds: f64) -> Option<String> {
    if samples.len() < cfg.min_samples {
        return None;
    }
    if stats::summarize(samples).is_some_and(|s| s.relative_half_width() <= cfg.target_rel_ci) {
        return Some(format!(
            "noise target {:.2}% met",
            cfg.target_rel_ci * 100.0
        ));
    }
    if samples.len() >= cfg.max_samples {
        return Some(format!("{} samples", cfg.max_samples));
    }
    (seconds >= cfg.max_seconds).then(|| format!("time cap {:.1}s", cfg.max_seconds))
}

/// Activity after the event samples: the extra samples whose kernel records are taken, as many as the event
/// samples, 10 to 30 (a median and its interval, at a bounded cost).
pub(super) fn activity_samples(event_samples: usize) -> usize {
    event_samples.clamp(10, 30)
}

/// The runs in one graph sample: about 0.2 ms of the kernel's own time per graph, 10 to 100 runs.
pub(super) fn graph_runs(per_run_ms: f64) -> usize {
    ((0.2 / per_run_ms).ceil() as usize).clamp(10, 100)
}

/// A graph sample from each run's (time between its events, time between the two empty events
/// after it): the mean over the `n` runs of the difference, what the event nodes cost taken off.
pub(super) fn graph_sample_ms(spans: &[(f64, f64)], n: usize) -> f64 {
    let mut total = 0.0;
    for (run, empty) in spans {
        total += run - empty;
    }
    total / n as f64
}

/// The method of graph timing with `n` runs a graph, in words for the report.
pub(super) fn graph_method(n: usize) -> String {
    format!(
        "CUDA graph of {n} (L2 eviction, event, run, event, event, event); a sample is the mean over the {n} runs of the time between a run's events less the time between the two events after it (runs under {} µs)",
        GRAPH_BELOW_MS * 1e3
    )
}

/// The method of a host program's timing, in words for the report.
pub(super) fn program_method(cold: bool) -> String {
    format!(
        "events around the whole host program on the NULL stream, every stream joined; each step between events on its stream; one run a sample{}",
        if cold { " after an L2 flush" } else { "" }
    )
}

/// The lowest and highest SM clock read after the samples (None: no reading).
pub(super) fn clock_range(clocks: &[Option<ClockSample>]) -> Option<[u32; 2]> {
    let mhz = clocks.iter().flatten().map(|c| c.sm_mhz);
    mhz.clone().min().zip(mhz.max()).map(|(lo, hi)| [lo, hi])
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg() -> TimingConfig {
        TimingConfig::default()
    }

    #[test]
    fn activity_after_timing_takes_as_many_samples_as_the_events_10_to_30() {
        assert_eq!(activity_samples(3), 10);
        assert_eq!(activity_samples(17), 17);
        assert_eq!(activity_samples(300), 30);
    }

    /// `n` samples spread evenly over 1.0 to 1.4 ms in no order: the median's interval is far
    /// wider than ±0.5%.
    fn spread(n: usize) -> Vec<f64> {
        (0..n)
            .map(|i| 1.0 + (i as f64 * 0.618_034).fract() * 0.4)
            .collect()
    }

    #[test]
    fn the_clock_is_settled_when_its_last_three_readings_are_within_one_percent() {
        assert!(!clock_settled(&[]));
        assert!(!clock_settled(&[1980, 1980]));
        assert!(clock_settled(&[1980, 1980, 1980]));
        assert!(clock_settled(&[1000, 1010, 1005]));
        assert!(!clock_settled(&[1000, 1011, 1005]));
        // Only the last three count: an early low reading is the ramp.
        assert!(clock_settled(&[600, 1200, 1980, 1980, 1975]));
        assert!(!clock_settled(&[1980, 1980, 1980, 1500]));
    }

    #[test]
    fn warm_up_lasts_three_runs_and_its_set_time_before_the_clock_is_read() {
        let cfg = cfg(); // 25 ms
        assert!(warming_up(2, 100.0, &cfg));
        assert!(warming_up(50, 24.9, &cfg));
        assert!(!warming_up(3, 25.0, &cfg));
    }

    #[test]
    fn warm_up_waits_for_a_ramping_clock_at_most_two_seconds() {
        assert!(keep_settling(&[1200, 1500], 100.0));
        assert!(keep_settling(&[1200, 1500, 1980], 1999.0));
        assert!(!keep_settling(&[1200, 1500, 1980], MAX_CLOCK_SETTLE_MS));
        assert!(!keep_settling(&[1980, 1980, 1980], 100.0));
    }

    #[test]
    fn calibration_is_the_warm_up_runs_capped_at_a_hundred() {
        assert_eq!(calibration_runs(3), 3);
        assert_eq!(calibration_runs(100), 100);
        assert_eq!(calibration_runs(4000), 100);
        assert_eq!(per_run_ms(5.0, 100), 0.05);
        // An empty run still divides the sample length by something.
        assert_eq!(per_run_ms(0.0, 10), 1e-4);
    }

    #[test]
    fn warm_runs_are_timed_back_to_back_between_events() {
        let plan = sampling_plan(false, Capture::Allowed, 0.001);
        assert!(!plan.in_graph);
        assert_eq!(plan.method, "events around back-to-back runs");
        // Not cold: a library call's refusal to be captured is not worth saying.
        let plan = sampling_plan(false, Capture::Never("cuBLAS"), 0.001);
        assert_eq!(plan.method, "events around back-to-back runs");
    }

    #[test]
    fn cold_runs_under_a_quarter_millisecond_are_timed_in_graphs_where_they_may_be() {
        let plan = sampling_plan(true, Capture::Allowed, 0.1);
        assert!(plan.in_graph);
        assert_eq!(plan.method, "events around one run after an L2 flush");
        let plan = sampling_plan(true, Capture::Allowed, GRAPH_BELOW_MS);
        assert!(
            !plan.in_graph,
            "at the threshold a run is timed between events"
        );
        let plan = sampling_plan(
            true,
            Capture::Never("cuBLAS is bound to the default stream"),
            0.1,
        );
        assert!(!plan.in_graph);
        assert_eq!(
            plan.method,
            "events around one run after an L2 flush (not in a CUDA graph: cuBLAS is bound to the default stream)"
        );
        // A long run would not be in a graph anyway: nothing to explain.
        let plan = sampling_plan(true, Capture::Never("cuBLAS"), 1.0);
        assert_eq!(plan.method, "events around one run after an L2 flush");
    }

    #[test]
    fn a_failed_capture_is_said_with_the_first_line_of_its_error() {
        assert_eq!(
            graph_capture_failed(
                "events around one run after an L2 flush",
                "not permitted\n  more"
            ),
            "events around one run after an L2 flush (a CUDA graph could not be captured: not permitted)"
        );
        assert_eq!(
            graph_capture_failed("m", ""),
            "m (a CUDA graph could not be captured: )"
        );
    }

    #[test]
    fn a_warm_sample_lasts_at_least_the_minimum_a_cold_one_is_one_run() {
        let cfg = cfg(); // 0.5 ms a sample
        assert_eq!(runs_per_sample(true, &cfg, 0.001), 1);
        assert_eq!(runs_per_sample(false, &cfg, 0.01), 50);
        assert_eq!(runs_per_sample(false, &cfg, 0.3), 2);
        assert_eq!(runs_per_sample(false, &cfg, 10.0), 1);
        assert_eq!(runs_per_sample(false, &cfg, 1e-6), 10_000);
    }

    #[test]
    fn verification_between_samples_runs_every_kth_sample_and_never_with_zero() {
        let mut cfg = cfg();
        assert!(!(1..=10).any(|n| verify_due(&cfg, n)));
        cfg.verify_every = 3;
        let due: Vec<usize> = (1..=10).filter(|&n| verify_due(&cfg, n)).collect();
        assert_eq!(due, [3, 6, 9]);
    }

    #[test]
    fn sampling_never_stops_before_the_minimum_of_samples() {
        let cfg = cfg(); // 10 samples at least
        assert_eq!(stop_sampling(&cfg, &[1.0; 9], 100.0), None);
    }

    #[test]
    fn sampling_stops_once_the_median_is_known_to_half_a_percent() {
        let cfg = cfg();
        assert_eq!(
            stop_sampling(&cfg, &[1.0; 10], 0.0).as_deref(),
            Some("noise target 0.50% met")
        );
        // Spread wide: the interval of the median is over ±0.5%, and sampling goes on.
        let noisy = spread(40);
        assert_eq!(stop_sampling(&cfg, &noisy, 0.1), None);
    }

    #[test]
    fn noisy_sampling_stops_at_the_sample_cap_then_the_time_cap() {
        let cfg = cfg(); // 300 samples, 1.5 s
        let noisy = spread(300);
        assert_eq!(
            stop_sampling(&cfg, &noisy, 0.1).as_deref(),
            Some("300 samples")
        );
        assert_eq!(
            stop_sampling(&cfg, &noisy[..40], 1.5).as_deref(),
            Some("time cap 1.5s")
        );
        assert_eq!(stop_sampling(&cfg, &noisy[..40], 1.49), None);
    }

    #[test]
    fn a_graph_holds_about_a_fifth_of_a_millisecond_of_runs() {
        assert_eq!(graph_runs(0.01), 20);
        assert_eq!(graph_runs(0.001), 100);
        assert_eq!(graph_runs(0.2), 10);
        // 0.2 / 0.03 is 7 runs: raised to the floor of 10.
        assert_eq!(graph_runs(0.03), 10);
    }

    #[test]
    fn a_graph_sample_is_the_mean_run_less_what_its_event_nodes_cost() {
        let spans = [(1.0, 0.25), (2.0, 0.5)];
        assert_eq!(graph_sample_ms(&spans, 2), 1.125);
        assert!(graph_method(20).starts_with("CUDA graph of 20 ("));
        assert!(graph_method(20).ends_with("(runs under 250 µs)"));
    }

    #[test]
    fn the_sample_clock_range_is_the_lowest_and_highest_reading() {
        let at = |sm_mhz| {
            Some(ClockSample {
                sm_mhz,
                throttled: false,
                events: Default::default(),
            })
        };
        assert_eq!(clock_range(&[None, None]), None);
        assert_eq!(
            clock_range(&[at(1980), None, at(1755), at(1830)]),
            Some([1755, 1980])
        );
    }

    #[test]
    fn a_host_program_says_whether_its_samples_follow_an_l2_flush() {
        assert!(program_method(true).ends_with("one run a sample after an L2 flush"));
        assert!(program_method(false).ends_with("one run a sample"));
    }
}
