//! Verified timed runs (issue 32): after the samples, runs timed exactly as a sample's run is (same L2 flush, same launch path), each set up to defeat one family of cheats and its output checked; the rules that make a job WRONG from them. Pure.

use serde::{Deserialize, Serialize};

use crate::verify::Correctness;

/// How the buffers were set before a verified timed run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TimedSetup {
    /// Inputs as the samples had them (uploaded again, same values), outputs as the last run left
    /// them: what every timed run sees. The baseline of the timing comparison.
    AsTimed,
    /// Inputs as the samples had them, outputs poisoned: a kernel that remembers its inputs and
    /// rewrites only part of an output it expects to be still there leaves poison.
    OutputsPoisoned,
    /// Inputs of a seed the kernel never saw, outputs as the last run left them (the result for
    /// other inputs): a kernel that copies back a result it stashed, or that rewrites only part of
    /// an output unless it finds poison there, is wrong or slower.
    UnseenInputs,
    /// The third run's inputs again, uploaded again as before it, outputs as it left them: a
    /// stash is fast here, and an honest kernel as fast as on its first sight of them (the same
    /// host work before both), so a slow third run that the GPU's state explains is not taken
    /// for a stash.
    SeenAgain,
}

impl TimedSetup {
    /// The four runs of one try, in the order they run (consecutive launches of the variant: a
    /// kernel right only every other, third or fourth launch is wrong on one of them).
    pub const TRY: [TimedSetup; 4] = [
        TimedSetup::AsTimed,
        TimedSetup::OutputsPoisoned,
        TimedSetup::UnseenInputs,
        TimedSetup::SeenAgain,
    ];

    /// In words, for reports and WRONG reasons.
    pub fn words(self) -> &'static str {
        match self {
            TimedSetup::AsTimed => "inputs and outputs as timed",
            TimedSetup::OutputsPoisoned => "inputs as timed, outputs poisoned",
            TimedSetup::UnseenInputs => "inputs never seen before, outputs left from the last run",
            TimedSetup::SeenAgain => "the inputs of the run before again, outputs as it left them",
        }
    }
}

/// One verified timed run: how it was set up, its time, the seed of its inputs and its check.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct VerifiedRun {
    /// The try it belongs to, from 1.
    #[serde(rename = "try")]
    pub attempt: u32,
    pub setup: TimedSetup,
    /// Its time between events, in ms (one run, the L2 flushed before it where the samples' were).
    pub ms: f64,
    /// The seed its inputs were drawn from.
    pub seed: u64,
    pub check: Correctness,
    /// Its output was byte for byte the run before it's (same inputs; compared on the GPU, not
    /// downloaded), so that run's check is this one's; for a first try's first run, the run
    /// before it is the check before the samples.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub output_as_before: bool,
}

/// The verified timed runs of a job, and why they make it WRONG (None: they passed).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct TimedChecks {
    pub runs: Vec<VerifiedRun>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wrong: Option<String>,
}

impl TimedChecks {
    pub fn passed(&self) -> bool {
        self.wrong.is_none()
    }

    /// How many tries were made.
    pub fn tries(&self) -> u32 {
        self.runs.iter().map(|r| r.attempt).max().unwrap_or(0)
    }
}

/// A run on unseen inputs is "slower" when it takes over this many times the faster of the try's
/// two runs on seen inputs...
pub const SLOWER_FACTOR: f64 = 1.5;
/// ...plus this much (a short kernel's single run varies by a few µs with nothing wrong).
pub const SLOWER_MARGIN_MS: f64 = 0.005;
/// A kernel is judged faster on inputs it has seen only when every one of this many tries says
/// so: a random slow run (a clock dip, a preemption) does not repeat three times in a row.
pub const TRIES: u32 = 3;

/// The runs of try `attempt`, by setup.
fn run_of(runs: &[VerifiedRun], attempt: u32, setup: TimedSetup) -> Option<&VerifiedRun> {
    runs.iter()
        .find(|r| r.attempt == attempt && r.setup == setup)
}

/// Whether try `attempt`'s run on unseen inputs was slower than its runs on seen ones (see
/// `SLOWER_FACTOR`): than the faster of the first two, and than the same inputs seen again right
/// after; and by how much (unseen ms, seen ms).
fn unseen_slower(runs: &[VerifiedRun], attempt: u32) -> Option<(f64, f64)> {
    let unseen = run_of(runs, attempt, TimedSetup::UnseenInputs)?.ms;
    let slower = |seen: f64| unseen > seen * SLOWER_FACTOR + SLOWER_MARGIN_MS;
    let seen = [TimedSetup::AsTimed, TimedSetup::OutputsPoisoned]
        .iter()
        .filter_map(|&s| run_of(runs, attempt, s).map(|r| r.ms))
        .fold(f64::INFINITY, f64::min);
    let again = run_of(runs, attempt, TimedSetup::SeenAgain).map(|r| r.ms);
    (seen.is_finite() && slower(seen) && again.is_none_or(slower)).then_some((unseen, seen))
}

/// Whether another try is due after the runs so far: every check passed and every try's run on
/// unseen inputs was slower, fewer than `TRIES` times.
pub fn another_try(runs: &[VerifiedRun]) -> bool {
    let tries = runs.iter().map(|r| r.attempt).max().unwrap_or(0);
    tries > 0
        && tries < TRIES
        && runs.iter().all(|r| r.check.passed)
        && (1..=tries).all(|t| unseen_slower(runs, t).is_some())
}

/// Why the verified runs make the job WRONG: the first wrong output (which run, set up how, and
/// what differs), else a run on unseen inputs slower in all `TRIES` tries.
pub fn timed_wrong(runs: &[VerifiedRun]) -> Option<String> {
    if let Some(r) = runs.iter().find(|r| !r.check.passed) {
        let c = &r.check;
        let unwritten = if c.unwritten > 0 {
            format!(" ({} never written)", c.unwritten)
        } else {
            String::new()
        };
        return Some(format!(
            "timed run {} of try {} ({}; {:.4} ms) is wrong: {} of {} elements differ{unwritten}; first: {}",
            position(r.setup),
            r.attempt,
            r.setup.words(),
            r.ms,
            c.mismatches,
            c.checked,
            c.first_mismatch.clone().unwrap_or_default()
        ));
    }
    let tries = runs.iter().map(|r| r.attempt).max().unwrap_or(0);
    if tries < TRIES {
        return None;
    }
    let slower: Vec<(f64, f64)> = (1..=tries)
        .map(|t| unseen_slower(runs, t))
        .collect::<Option<_>>()?;
    let times: Vec<String> = slower
        .iter()
        .map(|(unseen, seen)| format!("{unseen:.4} ms against {seen:.4} ms"))
        .collect();
    Some(format!(
        "faster on inputs it has seen: on inputs it never saw, a timed run was over {SLOWER_FACTOR}x its time on the inputs it was timed on, in all {tries} tries ({}); its samples time a result it remembers, not the work",
        times.join(", ")
    ))
}

/// The run's place in its try, from 1.
fn position(setup: TimedSetup) -> usize {
    TimedSetup::TRY
        .iter()
        .position(|&s| s == setup)
        .map_or(0, |i| i + 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(passed: bool) -> Correctness {
        Correctness {
            passed,
            checked: 1024,
            mismatches: if passed { 0 } else { 768 },
            unwritten: if passed { 0 } else { 768 },
            rel_error: 0.0,
            first_mismatch: (!passed).then(|| "[0] = NaN, expected 1".to_string()),
            max_error: None,
            elem: None,
            max_ulp: None,
        }
    }

    /// One try's first three runs (their times and whether each check passed), and the fourth
    /// (the unseen inputs again) right, at the first's time.
    fn attempt(attempt: u32, ms: [f64; 3], passed: [bool; 3]) -> Vec<VerifiedRun> {
        let ms = [ms[0], ms[1], ms[2], ms[0]];
        let passed = [passed[0], passed[1], passed[2], true];
        TimedSetup::TRY
            .iter()
            .zip(ms)
            .zip(passed)
            .map(|((&setup, ms), p)| VerifiedRun {
                attempt,
                setup,
                ms,
                seed: 7,
                check: check(p),
                output_as_before: false,
            })
            .collect()
    }

    #[test]
    fn an_honest_kernel_passes_in_one_try() {
        let runs = attempt(1, [0.100, 0.101, 0.104], [true; 3]);
        assert!(!another_try(&runs));
        assert_eq!(timed_wrong(&runs), None);
    }

    #[test]
    fn a_wrong_output_names_the_run_its_setup_and_what_differs() {
        // The fingerprint cheat: right as timed, a quarter rewritten over poisoned outputs.
        let runs = attempt(1, [0.03, 0.03, 0.1], [true, false, true]);
        assert!(!another_try(&runs), "a wrong run ends the tries");
        assert_eq!(
            timed_wrong(&runs).unwrap(),
            "timed run 2 of try 1 (inputs as timed, outputs poisoned; 0.0300 ms) is wrong: 768 of 1024 elements differ (768 never written); first: [0] = NaN, expected 1"
        );
        // Right only every other launch: one of two consecutive runs is wrong, whichever parity.
        let odd = attempt(1, [0.1; 3], [false, true, false]);
        assert!(
            timed_wrong(&odd)
                .unwrap()
                .starts_with("timed run 1 of try 1 (inputs and outputs as timed")
        );
        let even = attempt(1, [0.1; 3], [true, false, true]);
        assert!(
            timed_wrong(&even)
                .unwrap()
                .starts_with("timed run 2 of try 1")
        );
        // A poison detector: right over poison, wrong over another input's result.
        let detector = attempt(1, [0.03, 0.1, 0.03], [true, true, false]);
        assert!(
            timed_wrong(&detector)
                .unwrap()
                .contains("(inputs never seen before, outputs left from the last run; 0.0300 ms)")
        );
    }

    #[test]
    fn a_slower_run_on_unseen_inputs_is_tried_again_and_wrong_only_if_it_repeats() {
        // A stash: right everywhere, but the unseen inputs cost the real work.
        let mut runs = attempt(1, [0.030, 0.031, 0.100], [true; 3]);
        assert!(another_try(&runs));
        assert_eq!(timed_wrong(&runs), None, "one try is not enough");
        runs.extend(attempt(2, [0.030, 0.030, 0.100], [true; 3]));
        assert!(another_try(&runs));
        runs.extend(attempt(3, [0.031, 0.030, 0.099], [true; 3]));
        assert!(!another_try(&runs), "three tries at most");
        let why = timed_wrong(&runs).unwrap();
        assert!(why.starts_with("faster on inputs it has seen:"), "{why}");
        assert!(why.contains("in all 3 tries (0.1000 ms against 0.0300 ms, 0.1000 ms against 0.0300 ms, 0.0990 ms against 0.0300 ms)"), "{why}");
    }

    #[test]
    fn a_random_slow_run_that_does_not_repeat_is_not_wrong() {
        let mut runs = attempt(1, [0.030, 0.031, 0.100], [true; 3]);
        runs.extend(attempt(2, [0.030, 0.030, 0.031], [true; 3]));
        assert!(!another_try(&runs), "the second try was not slower");
        assert_eq!(timed_wrong(&runs), None);
        // Slower twice, then not: still not wrong.
        let mut runs = attempt(1, [0.03, 0.03, 0.1], [true; 3]);
        runs.extend(attempt(2, [0.03, 0.03, 0.1], [true; 3]));
        runs.extend(attempt(3, [0.03, 0.03, 0.03], [true; 3]));
        assert_eq!(timed_wrong(&runs), None);
    }

    #[test]
    fn slower_means_over_one_and_a_half_times_the_faster_seen_run_and_five_microseconds() {
        // A poison-aware stash: slow over poison (the real work), fast as timed (the stash).
        let runs = attempt(1, [0.030, 0.100, 0.100], [true; 3]);
        assert_eq!(unseen_slower(&runs, 1), Some((0.100, 0.030)));
        // 1.5 x 0.010 + 0.005 = 0.020: a 2 µs jitter on a 10 µs kernel is not slower.
        let short = attempt(1, [0.010, 0.010, 0.0199], [true; 3]);
        assert_eq!(unseen_slower(&short, 1), None);
        let short = attempt(1, [0.010, 0.010, 0.0201], [true; 3]);
        assert!(unseen_slower(&short, 1).is_some());
        assert_eq!(unseen_slower(&[], 1), None);
    }

    #[test]
    fn a_third_run_as_slow_as_the_fourth_on_the_same_inputs_is_not_a_stash() {
        // An honest kernel whose third and fourth runs both follow a GPU left idle longer.
        let mut runs = attempt(1, [0.020, 0.021, 0.035], [true; 3]);
        runs[3].ms = 0.034;
        assert_eq!(unseen_slower(&runs, 1), None);
        assert!(!another_try(&runs));
        // A stash is fast on the fourth run (the inputs it has just seen).
        runs[3].ms = 0.020;
        assert_eq!(unseen_slower(&runs, 1), Some((0.035, 0.020)));
    }

    #[test]
    fn the_record_counts_its_tries_and_reads_back() {
        let mut checks = TimedChecks {
            runs: attempt(1, [0.1; 3], [true; 3]),
            wrong: None,
        };
        checks.runs.extend(attempt(2, [0.1; 3], [true; 3]));
        assert_eq!(checks.tries(), 2);
        assert!(checks.passed());
        let json = serde_json::to_string(&checks).unwrap();
        assert!(
            json.contains(r#""try":2,"setup":"unseen_inputs""#),
            "{json}"
        );
        assert_eq!(serde_json::from_str::<TimedChecks>(&json).unwrap(), checks);
    }
}
