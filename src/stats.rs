//! Timing statistics: median with a distribution-free confidence interval, spread and outliers (pure).
//!
//! The interval for the median comes from order statistics (Conover, *Practical Nonparametric
//! Statistics*, 3rd ed., §3.2): with n samples sorted, ranks n/2 ± z·√n/2 bound the median at
//! about 95% whatever the distribution. Kernel timings are skewed (a long tail of interrupted
//! samples), which is why the median and not the mean is reported.

use serde::{Deserialize, Serialize};

/// z for a two-sided 95% interval.
const Z95: f64 = 1.959_963_984_540_054;

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
    let var = if n > 1 { s.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1) as f64 } else { 0.0 };
    let (q1, q3) = (quantile(&s, 0.25), quantile(&s, 0.75));
    let iqr = q3 - q1;
    let outliers = s.iter().filter(|&&x| x < q1 - 1.5 * iqr || x > q3 + 1.5 * iqr).count();
    Some(Summary {
        n,
        median,
        ci_low: s[j - 1].min(median),
        ci_high: s[k - 1].max(median),
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
        assert_eq!((few.ci_low, few.ci_high), (1.0, 3.0));
        let many: Vec<f64> = (0..1000).map(|i| 10.0 + (i % 10) as f64 * 0.01).collect();
        let s = summarize(&many).unwrap();
        assert!(s.relative_half_width() < 0.001, "{s:?}");
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
    fn empty_or_nan_gives_none() {
        assert!(summarize(&[]).is_none());
        assert!(summarize(&[1.0, f64::NAN]).is_none());
    }
}
