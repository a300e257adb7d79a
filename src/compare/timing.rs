//! The change of a job's median time between two runs, with a 95% bootstrap interval, and its verdict against a noise threshold (pure).
//!
//! In the spirit of criterion.rs: the relative change of the median, median(new) / median(base) − 1,
//! is estimated with a percentile bootstrap (both sample sets resampled with replacement, the
//! seed fixed so a check gives the same answer every time). A change counts only when the whole
//! interval lies beyond the noise threshold: a run's own noise and the drift between runs are
//! not regressions.

use rand_core::Rng;

use crate::stats::median_in_place;

/// Resamples per interval: Efron and Tibshirani (*An Introduction to the Bootstrap*, §13.3)
/// advise 1000 or more for percentile intervals; more only smooths the third digit.
pub const RESAMPLES: usize = 5000;

#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct Interval {
    /// Relative change of the median: +0.2 is 20% slower.
    pub estimate: f64,
    pub low: f64,
    pub high: f64,
}

/// A seed that depends only on the job, so a job's interval does not depend on the jobs around it.
pub fn seed_for(id: &str) -> u64 {
    // FNV-1a.
    id.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

/// The relative change of the median from `base` to `new` with a 95% percentile bootstrap interval;
/// `None` when either set is empty, holds a non-finite value, or the base median is not positive.
pub fn change_of_median(
    base: &[f64],
    new: &[f64],
    resamples: usize,
    seed: u64,
) -> Option<Interval> {
    let finite = |s: &[f64]| !s.is_empty() && s.iter().all(|x| x.is_finite());
    if !finite(base) || !finite(new) {
        return None;
    }
    let (base, new) = (&thinned(base)[..], &thinned(new)[..]);
    let base_median = median_in_place(&mut base.to_vec());
    if base_median <= 0.0 {
        return None;
    }
    let estimate = median_in_place(&mut new.to_vec()) / base_median - 1.0;
    let mut rng = rand_pcg::Pcg64Mcg::new((u128::from(seed) << 1) | 1);
    let mut draw = |from: &[f64], into: &mut Vec<f64>| {
        into.clear();
        // Multiply-shift maps a 64-bit draw onto 0..len without a modulo's bias worth speaking of.
        into.extend(
            (0..from.len())
                .map(|_| from[((u128::from(rng.next_u64()) * from.len() as u128) >> 64) as usize]),
        );
        median_in_place(into)
    };
    let (mut a, mut b) = (
        Vec::with_capacity(base.len()),
        Vec::with_capacity(new.len()),
    );
    let mut changes: Vec<f64> = (0..resamples.max(1))
        .map(|_| draw(new, &mut b) / draw(base, &mut a) - 1.0)
        .collect();
    changes.sort_by(f64::total_cmp);
    let at = |q: f64| changes[((changes.len() - 1) as f64 * q).round() as usize];
    // A resampled median can sit on the far side of the estimate; the interval always holds it.
    Some(Interval {
        estimate,
        low: at(0.025).min(estimate),
        high: at(0.975).max(estimate),
    })
}

/// Threshold for one job: the relative noise threshold, or the absolute floor over the baseline's
/// median where that is larger (kernels of a few microseconds drift by a fraction of one).
pub fn threshold(relative: f64, floor_ms: f64, base_median_ms: f64) -> f64 {
    if base_median_ms > 0.0 {
        relative.max(floor_ms / base_median_ms)
    } else {
        relative
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Direction {
    Slower,
    Faster,
    Within,
}

/// The most samples a bootstrap resamples (gpu-lab itself stops at 300 a job): larger sets, only
/// ever from edited files, are thinned to this many evenly spaced order statistics, which keeps
/// their quantiles and widens the interval (a conservative verdict) instead of taking minutes.
pub const MAX_BOOTSTRAP_SAMPLES: usize = 2000;

fn thinned(samples: &[f64]) -> Vec<f64> {
    if samples.len() <= MAX_BOOTSTRAP_SAMPLES {
        return samples.to_vec();
    }
    let mut sorted = samples.to_vec();
    sorted.sort_by(f64::total_cmp);
    (0..MAX_BOOTSTRAP_SAMPLES)
        .map(|i| sorted[i * (sorted.len() - 1) / (MAX_BOOTSTRAP_SAMPLES - 1)])
        .collect()
}

/// Slower only when the whole interval lies above +threshold, faster only when wholly below −threshold.
pub fn judge(change: &Interval, threshold: f64) -> Direction {
    if change.low > threshold {
        Direction::Slower
    } else if change.high < -threshold {
        Direction::Faster
    } else {
        Direction::Within
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_million_samples_are_judged_quickly_and_the_same_way() {
        let base: Vec<f64> = (0..1_000_000)
            .map(|i| 1.0 + (i % 1000) as f64 * 1e-6)
            .collect();
        let slower: Vec<f64> = base.iter().map(|x| x * 1.2).collect();
        let c = change_of_median(&base, &slower, RESAMPLES, 1).unwrap();
        assert!((c.estimate - 0.2).abs() < 1e-3 && c.low > 0.19, "{c:?}");
    }

    fn noisy(center: f64, n: usize, spread: f64) -> Vec<f64> {
        // A fixed, skewed pattern (a slow tail like real kernel timings), no randomness.
        (0..n)
            .map(|i| center * (1.0 + spread * (((i * 7) % n) as f64 / n as f64 - 0.3)))
            .collect()
    }

    #[test]
    fn identical_samples_give_an_interval_around_zero() {
        let s = noisy(0.3, 11, 0.01);
        let c = change_of_median(&s, &s, RESAMPLES, 1).unwrap();
        assert_eq!(c.estimate, 0.0);
        assert!(
            c.low <= 0.0 && c.high >= 0.0 && c.high - c.low < 0.02,
            "{c:?}"
        );
        assert_eq!(judge(&c, 0.05), Direction::Within);
    }

    #[test]
    fn a_twenty_percent_slowdown_is_seen_with_a_tight_interval() {
        let base = noisy(0.3, 11, 0.01);
        let new: Vec<f64> = base.iter().map(|x| x * 1.2).collect();
        let c = change_of_median(&base, &new, RESAMPLES, 7).unwrap();
        assert!((c.estimate - 0.2).abs() < 1e-12, "{c:?}");
        assert!(c.low > 0.18 && c.high < 0.22, "{c:?}");
        assert_eq!(judge(&c, 0.05), Direction::Slower);
        let faster: Vec<f64> = base.iter().map(|x| x / 1.2).collect();
        assert_eq!(
            judge(
                &change_of_median(&base, &faster, RESAMPLES, 7).unwrap(),
                0.05
            ),
            Direction::Faster
        );
    }

    #[test]
    fn a_change_inside_the_noise_is_not_a_verdict_even_when_certain() {
        // 3% slower, measured precisely: real, but under a 5% threshold.
        let base = noisy(1.0, 50, 0.002);
        let new: Vec<f64> = base.iter().map(|x| x * 1.03).collect();
        let c = change_of_median(&base, &new, RESAMPLES, 3).unwrap();
        assert!(c.low > 0.02);
        assert_eq!(judge(&c, 0.05), Direction::Within);
    }

    #[test]
    fn wide_noise_keeps_a_large_change_undecided() {
        let base = noisy(1.0, 10, 0.8);
        let new: Vec<f64> = noisy(1.1, 10, 0.8).into_iter().rev().collect();
        let c = change_of_median(&base, &new, RESAMPLES, 5).unwrap();
        assert!(c.low < 0.05, "{c:?}");
        assert_eq!(judge(&c, 0.05), Direction::Within);
    }

    #[test]
    fn the_same_seed_gives_the_same_interval() {
        let base = noisy(0.3, 11, 0.05);
        let new = noisy(0.31, 13, 0.05);
        assert_eq!(
            change_of_median(&base, &new, 2000, seed_for("a")),
            change_of_median(&base, &new, 2000, seed_for("a"))
        );
    }

    #[test]
    fn floor_raises_the_threshold_of_microsecond_kernels_only() {
        assert_eq!(threshold(0.05, 0.0005, 0.005), 0.1);
        assert_eq!(threshold(0.05, 0.0005, 0.5), 0.05);
    }

    #[test]
    fn unusable_samples_give_none() {
        assert!(change_of_median(&[], &[1.0], 10, 0).is_none());
        assert!(change_of_median(&[1.0], &[f64::NAN], 10, 0).is_none());
        assert!(change_of_median(&[0.0], &[1.0], 10, 0).is_none());
    }
}
