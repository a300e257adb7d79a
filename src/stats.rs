//! Timing statistics: median with a distribution-free confidence interval, spread and outliers (pure).
//!
//! The interval for the median comes from order statistics (Conover, *Practical Nonparametric
//! Statistics*, 3rd ed., §3.2): with n samples sorted, ranks n/2 ± z·√n/2 bound the median at
//! about 95% whatever the distribution. Kernel timings are skewed (a long tail of interrupted
//! samples), which is why the median and not the mean is reported. Below six values no pair of
//! order statistics reaches 95% (the range of five covers the median 93.8% of the time, of three
//! 75%): there the interval is Student's t on the values, which is what a run of a few `--rounds`
//! gives (each value the median of a round's many samples, close to normal).

use serde::{Deserialize, Serialize};

/// z for a two-sided 95% interval.
const Z95: f64 = 1.959_963_984_540_054;

/// From this many values on, the order-statistic interval covers the median at 95% or more.
const ORDER_STATISTICS_FROM: usize = 6;

/// Student's t for a two-sided 95% interval, 1 to 4 degrees of freedom (2 to 5 values).
const T95: [f64; 4] = [12.706_204_736, 4.302_652_730, 3.182_446_305, 2.776_445_105];

#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    pub n: usize,
    pub median: f64,
    /// 95% confidence interval of the median.
    pub ci_low: f64,
    pub ci_high: f64,
    pub mean: f64,
    pub stddev: f64,
    pub min: f64,
    pub max: f64,
    /// Samples beyond Tukey's fences (1.5 IQR outside the quartiles).
    pub outliers: usize,
}

impl Summary {
    /// Half the interval's width over the median: the noise figure a stopping rule aims at.
    pub fn relative_half_width(&self) -> f64 {
        if self.median == 0.0 {
            return f64::INFINITY;
        }
        (self.ci_high - self.ci_low) / 2.0 / self.median
    }
}

/// Linear-interpolated quantile of sorted data, q in [0, 1].
fn quantile(sorted: &[f64], q: f64) -> f64 {
    let pos = q * (sorted.len() - 1) as f64;
    let (lo, hi) = (pos.floor() as usize, pos.ceil() as usize);
    sorted[lo] + (sorted[hi] - sorted[lo]) * (pos - lo as f64)
}

/// The median of `v` (not empty), reordering it: linear time, no sorted copy.
pub fn median_in_place(v: &mut [f64]) -> f64 {
    let n = v.len();
    let (_, upper, _) = v.select_nth_unstable_by(n / 2, f64::total_cmp);
    let upper = *upper;
    if n % 2 == 1 {
        return upper;
    }
    let lower = v[..n / 2].iter().copied().fold(f64::NEG_INFINITY, f64::max);
    (lower + upper) / 2.0
}

/// Summarises samples; `None` when there are none or any is not finite.
pub fn summarize(samples: &[f64]) -> Option<Summary> {
    if samples.is_empty() || samples.iter().any(|x| !x.is_finite()) {
        return None;
    }
    let mut s = samples.to_vec();
    s.sort_by(|a, b| a.total_cmp(b));
    let n = s.len();
    let median = quantile(&s, 0.5);
    let half = Z95 * (n as f64).sqrt() / 2.0;
    // 1-based ranks j and k, clamped to the data: with few samples the interval is the range.
    let j = ((n as f64 / 2.0 - half).floor() as isize).max(1) as usize;
    let k = ((n as f64 / 2.0 + half).ceil() as usize + 1).min(n);
    let mean = s.iter().sum::<f64>() / n as f64;
    let var = if n > 1 {
        s.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1) as f64
    } else {
        0.0
    };
    let (q1, q3) = (quantile(&s, 0.25), quantile(&s, 0.75));
    let iqr = q3 - q1;
    let outliers = s
        .iter()
        .filter(|&&x| x < q1 - 1.5 * iqr || x > q3 + 1.5 * iqr)
        .count();
    let (ci_low, ci_high) = if n >= ORDER_STATISTICS_FROM || n == 1 {
        (s[j - 1], s[k - 1])
    } else {
        let half_width = T95[n - 2] * var.sqrt() / (n as f64).sqrt();
        // Times are never negative; the interval of non-negative values stays so.
        let low = mean - half_width;
        (
            if s[0] >= 0.0 { low.max(0.0) } else { low },
            mean + half_width,
        )
    };
    Some(Summary {
        n,
        median,
        ci_low: ci_low.min(median),
        ci_high: ci_high.max(median),
        mean,
        stddev: var.sqrt(),
        min: s[0],
        max: s[n - 1],
        outliers,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn median_and_interval_of_known_data() {
        let data: Vec<f64> = (1..=100).map(f64::from).collect();
        let s = summarize(&data).unwrap();
        assert_eq!(s.median, 50.5);
        // n = 100: ranks 50 -/+ 9.8 -> 40 and 61 (Conover's table gives 40 and 61 for 95%).
        assert_eq!(s.ci_low, 40.0);
        assert_eq!(s.ci_high, 61.0);
        assert_eq!((s.min, s.max), (1.0, 100.0));
        assert_eq!(s.outliers, 0);
    }

    #[test]
    fn interval_always_contains_median_and_shrinks_with_n() {
        let few = summarize(&[3.0, 1.0, 2.0]).unwrap();
        assert!(few.ci_low <= few.median && few.median <= few.ci_high);
        let six = summarize(&[3.0, 1.0, 2.0, 6.0, 5.0, 4.0]).unwrap();
        assert_eq!(
            (six.ci_low, six.ci_high),
            (1.0, 6.0),
            "from six values on: order statistics, here the range"
        );
        let many: Vec<f64> = (0..1000).map(|i| 10.0 + (i % 10) as f64 * 0.01).collect();
        let s = summarize(&many).unwrap();
        assert!(s.relative_half_width() < 0.001, "{s:?}");
    }

    #[test]
    fn fewer_than_six_values_get_students_t_interval() {
        // Three rounds: mean 10, s = 0.1; t(2) = 4.303, so 10 ± 0.2484, wider than the range.
        let s = summarize(&[9.9, 10.0, 10.1]).unwrap();
        assert!(
            (s.ci_low - (10.0 - 4.302_652_730 * 0.1 / 3f64.sqrt())).abs() < 1e-9,
            "{s:?}"
        );
        assert!(
            (s.ci_high - (10.0 + 4.302_652_730 * 0.1 / 3f64.sqrt())).abs() < 1e-9,
            "{s:?}"
        );
        assert!(s.ci_low < s.min && s.ci_high > s.max);
        // Non-negative values keep a non-negative interval; one value is its own interval.
        assert_eq!(summarize(&[0.1, 5.0]).unwrap().ci_low, 0.0);
        let one = summarize(&[2.0]).unwrap();
        assert_eq!((one.ci_low, one.ci_high), (2.0, 2.0));
    }

    #[test]
    fn outliers_are_counted_and_do_not_move_the_median() {
        let mut data = vec![1.0; 20];
        data.push(50.0);
        let s = summarize(&data).unwrap();
        assert_eq!(s.median, 1.0);
        assert_eq!(s.outliers, 1);
        assert!(s.mean > 3.0);
    }

    #[test]
    fn medians_of_odd_and_even_sets() {
        assert_eq!(median_in_place(&mut [3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median_in_place(&mut [4.0, 1.0, 3.0, 2.0]), 2.5);
    }

    #[test]
    fn empty_or_nan_gives_none() {
        assert!(summarize(&[]).is_none());
        assert!(summarize(&[1.0, f64::NAN]).is_none());
    }
}
