//! Outputs that rearrange or count their input: a stable compaction, a sort, a histogram.

use super::tally::{Tally, int_mask};
use crate::verify::correctness::Correctness;
use crate::verify::data::{HostData, is_poison, value};
use crate::verify::elem::ElemType;

/// Which elements a compaction keeps.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Keep {
    /// x > 0
    Positive,
    /// x != 0
    Nonzero,
    /// whole numbers divisible by 2
    Even,
}

impl Keep {
    pub fn parse(text: &str) -> Option<Keep> {
        match text.trim() {
            "positive" => Some(Keep::Positive),
            "nonzero" => Some(Keep::Nonzero),
            "even" => Some(Keep::Even),
            _ => None,
        }
    }

    pub fn keeps(self, x: f64) -> bool {
        match self {
            Keep::Positive => x > 0.0,
            Keep::Nonzero => x != 0.0,
            Keep::Even => x.fract() == 0.0 && x.rem_euclid(2.0) == 0.0,
        }
    }
}

/// `out` must hold the elements of `input` that `keep` keeps, in their order (a stable
/// compaction), bit for bit, and nothing after them: the rest of `out` is still poison.
pub fn check_compact(elem: ElemType, input: &HostData, out: &HostData, keep: Keep) -> Correctness {
    let mut t = Tally::new(elem);
    let mut k = 0usize;
    for i in 0..input.len() {
        let x = input.word(i);
        if !keep.keeps(value(elem, x)) {
            continue;
        }
        if k >= out.len() {
            t.checked += 1;
            t.mismatches += 1;
            t.first.get_or_insert_with(|| {
                format!(
                    "the output holds {} elements, fewer than the input keeps",
                    out.len()
                )
            });
            break;
        }
        t.exact(out.word(k), x, || format!("out[{k}] (in[{i}])"));
        k += 1;
    }
    // Past the kept elements nothing may be written: a count that is too large shows here.
    for i in k..out.len() {
        t.checked += 1;
        if !is_poison(elem, out.word(i)) {
            t.mismatches += 1;
            t.first.get_or_insert_with(|| {
                format!(
                    "out[{i}] = {} is past the {k} kept elements and should be untouched",
                    value(elem, out.word(i))
                )
            });
        }
    }
    t.outcome()
}

/// `out[0..n]` must be `input[0..n]` in ascending order (a permutation of it, sorted): the CPU
/// sorts a copy and compares value for value.
pub fn check_sort(elem: ElemType, input: &HostData, out: &HostData) -> Correctness {
    let n = input.len().min(out.len());
    let mut want: Vec<(f64, u64)> = (0..n)
        .map(|i| (value(elem, input.word(i)), input.word(i)))
        .collect();
    want.sort_by(|a, b| a.0.total_cmp(&b.0));
    let mut t = Tally::new(elem);
    for (i, (_, bits)) in want.iter().enumerate() {
        t.exact(out.word(i), *bits, || format!("out[{i}]"));
    }
    t.outcome()
}

/// `out[b]` must count the elements `x` of `input` with `x mod bins == b` (whole numbers; the
/// remainder taken non-negative), exactly.
pub fn check_histogram(
    elem: ElemType,
    input: &HostData,
    out_elem: ElemType,
    out: &HostData,
    bins: usize,
) -> Correctness {
    let mut want = vec![0u64; bins];
    let pow2_mask = bins.is_power_of_two().then(|| bins as i64 - 1);
    for i in 0..input.len() {
        want[bin_of(value(elem, input.word(i)), bins, pow2_mask)] += 1;
    }
    let mut t = Tally::new(out_elem);
    let mask = int_mask(out_elem);
    for (b, w) in want.iter().enumerate() {
        t.exact(out.word(b), w & mask, || format!("bin {b}"));
    }
    t.outcome()
}

/// The bin of `x`: its remainder modulo `bins`, taken non-negative. Whole numbers (every integer
/// input) take integer arithmetic, a mask where `bins` is a power of two: a float remainder
/// (`fmod`) a value made a 2^26-element check take about 2 s, six checks a job.
fn bin_of(x: f64, bins: usize, pow2_mask: Option<i64>) -> usize {
    // |x| < 2^62: the conversion to i64 is exact for a whole number.
    if x.fract() == 0.0 && x.abs() < 4.6e18 {
        let whole = x as i64;
        return match pow2_mask {
            Some(mask) => (whole & mask) as usize,
            None => whole.rem_euclid(bins as i64) as usize,
        };
    }
    (x.rem_euclid(bins as f64)) as usize % bins
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn compaction_is_stable_and_writes_nothing_past_the_kept_elements() {
        let x = HostData::W4([5i32, -2, 0, 7, 3, -1].iter().map(|&v| v as u32).collect());
        let mut out = HostData::W4(vec![u32::MAX; 6]);
        if let HostData::W4(v) = &mut out {
            v[..3].copy_from_slice(&[5, 7, 3]);
        }
        assert!(check_compact(ElemType::I32, &x, &out, Keep::Positive).passed);
        let mut reordered = out.clone();
        if let HostData::W4(v) = &mut reordered {
            v[..3].copy_from_slice(&[7, 5, 3]);
        }
        assert!(
            !check_compact(ElemType::I32, &x, &reordered, Keep::Positive).passed,
            "order matters"
        );
        let mut too_many = out.clone();
        if let HostData::W4(v) = &mut too_many {
            v[3] = 0;
        }
        let o = check_compact(ElemType::I32, &x, &too_many, Keep::Positive);
        assert!(!o.passed && o.first_mismatch.unwrap().contains("past the 3 kept"));
        assert_eq!(Keep::parse("even"), Some(Keep::Even));
        assert!(Keep::Even.keeps(-4.0) && !Keep::Even.keeps(3.0) && Keep::Nonzero.keeps(-1.0));
    }

    #[test]
    fn sorts_and_histograms() {
        let x = HostData::W4([3i32, -1, 4, 1, -5].iter().map(|&v| v as u32).collect());
        let sorted = HostData::W4([-5i32, -1, 1, 3, 4].iter().map(|&v| v as u32).collect());
        assert!(check_sort(ElemType::I32, &x, &sorted).passed);
        assert!(!check_sort(ElemType::I32, &x, &x).passed);
        // Bins of x mod 3 (non-negative remainder): 3 -> 0, -1 -> 2, 4 -> 1, 1 -> 1, -5 -> 1.
        let h = HostData::W4(vec![1, 3, 1]);
        assert!(check_histogram(ElemType::I32, &x, ElemType::U32, &h, 3).passed);
        assert!(
            !check_histogram(
                ElemType::I32,
                &x,
                ElemType::U32,
                &HostData::W4(vec![1, 2, 2]),
                3
            )
            .passed
        );
    }

    #[test]
    fn whole_number_bins_match_the_float_remainder_for_every_sign_and_bin_count() {
        for bins in [1usize, 7, 256, 1000, 1024] {
            let mask = bins.is_power_of_two().then(|| bins as i64 - 1);
            for x in (-5000i64..5000).chain([i32::MIN as i64, i32::MAX as i64, -(1 << 40) - 3]) {
                let want = ((x as f64).rem_euclid(bins as f64)) as usize % bins;
                assert_eq!(bin_of(x as f64, bins, mask), want, "x = {x}, {bins} bins");
            }
        }
        // Fractions, infinities and NaN keep the float path (and its answer).
        assert_eq!(bin_of(-1.5, 4, Some(3)), 2);
        assert_eq!(
            bin_of(f64::NAN, 4, Some(3)),
            (f64::NAN.rem_euclid(4.0)) as usize % 4
        );
        let x = HostData::W4(
            [-1i32, -1024, 3, 1023, 1024, -1025]
                .iter()
                .map(|&v| v as u32)
                .collect(),
        );
        let mut bins = vec![0u32; 1024];
        for v in [1023usize, 0, 3, 1023, 0, 1023] {
            bins[v] += 1;
        }
        let out = HostData::W4(bins);
        assert!(check_histogram(ElemType::I32, &x, ElemType::I32, &out, 1024).passed);
    }
}
