//! Reductions and scans: a sum's partial results against the input's sum, and inclusive or
//! exclusive prefix sums; integers exactly (wrapping as the GPU's adds do), floats within a bound.

use super::tally::{Tally, int_mask, merged_with_worst, per_chunk};
use crate::verify::correctness::Correctness;
use crate::verify::data::{CHUNK, HostData, is_poison, value};
use crate::verify::elem::ElemType;

/// The first `count` elements of `out` (a reduction's partial results) must add up to the sum of
/// `input` (every `input_stride`-th element, from the first: the x fields of an array of pairs): exactly for integers (wrapping at the element width, as the GPU's adds do), and for
/// floats within `tolerance` × Σ|input| of the float64 sum (an error bound that does not blow up
/// when random signs make the sum itself small).
pub fn check_sum(
    elem: ElemType,
    input: &HostData,
    out: &HostData,
    count: usize,
    input_stride: usize,
    tolerance: f64,
) -> Correctness {
    let count = count.min(out.len());
    let stride = input_stride.max(1);
    // For integers the poison pattern is -1 (or the maximum), a legitimate partial sum: only a float's NaN says "never written".
    let unwritten = if elem.is_float() {
        (0..count).filter(|&i| is_poison(elem, out.word(i))).count() as u64
    } else {
        0
    };
    let mut o = Correctness {
        passed: false,
        checked: count as u64,
        mismatches: 0,
        unwritten,
        rel_error: 0.0,
        first_mismatch: None,
        max_error: None,
        elem: None,
        max_ulp: None,
    };
    if elem.is_float() {
        let sums = per_chunk(input.len().div_ceil(stride), |lo, hi| {
            (lo..hi)
                .map(|k| value(elem, input.word(k * stride)))
                .fold((0.0f64, 0.0f64), |(sum, scale), v| {
                    (sum + v, scale + v.abs())
                })
        });
        let (want, scale) = sums
            .into_iter()
            .fold((0.0, 0.0), |(a, b), (sum, scale)| (a + sum, b + scale));
        let got: f64 = (0..count).map(|i| value(elem, out.word(i))).sum();
        o.rel_error = if scale > 0.0 {
            (got - want).abs() / scale
        } else {
            (got - want).abs()
        };
        o.passed = count > 0 && unwritten == 0 && o.rel_error <= tolerance;
        if !o.passed {
            o.mismatches = 1;
            o.first_mismatch = Some(format!(
                "sum of {count} partials {got:e}, float64 sum of the input {want:e}: error {:.2e} of sum|x|, tolerance {tolerance:.1e}",
                o.rel_error
            ));
        }
    } else {
        let (got, want) = (
            wrapping_sum(elem, out, count, 1),
            wrapping_sum(elem, input, input.len(), stride),
        );
        o.passed = count > 0 && got == want;
        if !o.passed {
            o.mismatches = 1;
            o.first_mismatch = Some(format!(
                "sum of {count} partials {}, sum of the input {}",
                value(elem, got),
                value(elem, want)
            ));
        }
    }
    o
}

/// The sum of every `step`-th of the first `n` elements of `d`, wrapping at the element width as
/// the GPU's integer adds do (32-bit signed elements sign-extended first).
fn wrapping_sum(elem: ElemType, d: &HostData, n: usize, step: usize) -> u64 {
    let bits = 8 * elem.size() as u32;
    let mask = if bits == 64 {
        u64::MAX
    } else {
        (1u64 << bits) - 1
    };
    let signed = matches!(elem, ElemType::I32 | ElemType::I64);
    let widen = |w: u64| {
        if signed && bits == 32 {
            w as u32 as i32 as i64 as u64
        } else {
            w
        }
    };
    per_chunk(n.div_ceil(step), |lo, hi| {
        (lo..hi).fold(0u64, |acc, k| acc.wrapping_add(widen(d.word(k * step))))
    })
    .into_iter()
    .fold(0u64, u64::wrapping_add)
        & mask
}

/// `out[0..count]` must be the prefix sums of `input[0..count]`: inclusive (`out[i] = x[0] + … + x[i]`)
/// or exclusive (`out[i] = x[0] + … + x[i-1]`, `out[0] = 0`). Integers exactly, wrapping at the
/// element width as the GPU's adds do; floats within `tolerance` × (|x[0]| + … + |x[i]|) of the
/// float64 prefix (the scale any order of float adds can lose precision against).
pub fn check_scan(
    elem: ElemType,
    input: &HostData,
    out: &HostData,
    count: usize,
    exclusive: bool,
    tolerance: f64,
) -> Correctness {
    let count = count.min(input.len()).min(out.len());
    // Each chunk's sums first, on all cores; then each chunk is checked from the prefix before it.
    let parts: Vec<(Tally, f64)> = if elem.is_float() {
        let sums = per_chunk(count, |lo, hi| {
            (lo..hi)
                .map(|i| value(elem, input.word(i)))
                .fold((0.0f64, 0.0f64), |(s, a), x| (s + x, a + x.abs()))
        });
        let starts: Vec<(f64, f64)> = sums
            .iter()
            .scan((0.0f64, 0.0f64), |acc, &(s, a)| {
                Some(std::mem::replace(acc, (acc.0 + s, acc.1 + a)))
            })
            .collect();
        per_chunk(count, |lo, hi| {
            let (mut t, mut worst) = (Tally::new(elem), 0.0f64);
            let (mut sum, mut scale) = starts[lo / CHUNK];
            for i in lo..hi {
                let x = value(elem, input.word(i));
                let (want, bound) = if exclusive {
                    (sum, scale)
                } else {
                    (sum + x, scale + x.abs())
                };
                let got_bits = out.word(i);
                let got = value(elem, got_bits);
                let err = if bound > 0.0 {
                    (got - want).abs() / bound
                } else {
                    (got - want).abs()
                };
                let at = || {
                    format!(
                        "out[{i}]: got {got} want {want} (error {err:.2e} of the prefix's sum|x|, tolerance {tolerance:.1e})"
                    )
                };
                if let Some(err) = t.within(err, tolerance, got_bits, at) {
                    worst = worst.max(err);
                }
                sum += x;
                scale += x.abs();
            }
            (t, worst)
        })
    } else {
        let mask = int_mask(elem);
        let sums = per_chunk(count, |lo, hi| {
            (lo..hi).fold(0u64, |acc, i| acc.wrapping_add(input.word(i)))
        });
        let starts: Vec<u64> = sums
            .iter()
            .scan(0u64, |acc, &s| {
                Some(std::mem::replace(acc, acc.wrapping_add(s)))
            })
            .collect();
        per_chunk(count, |lo, hi| {
            let (mut t, mut sum) = (Tally::new(elem), starts[lo / CHUNK]);
            for i in lo..hi {
                let x = input.word(i);
                let want = if exclusive { sum } else { sum.wrapping_add(x) } & mask;
                t.exact(out.word(i), want, || format!("out[{i}]"));
                sum = sum.wrapping_add(x);
            }
            (t, 0.0)
        })
    };
    merged_with_worst(elem, parts)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::verify::elem::Init;
    use crate::verify::reference::tally::floats;

    #[test]
    fn whole_number_floats_sum_exactly() {
        let x = HostData::init(ElemType::F32, 100_003, Init::RandomInt, 5);
        let HostData::W4(v) = &x else { panic!() };
        assert!(
            v.iter()
                .all(|&b| f32::from_bits(b).fract() == 0.0 && f32::from_bits(b).abs() <= 1000.0)
        );
        // Partials of 1000 elements summed in float32, as a block would: exact, so tolerance 0 passes...
        let partials: Vec<u32> = v
            .chunks(1000)
            .map(|c| c.iter().map(|&b| f32::from_bits(b)).sum::<f32>().to_bits())
            .collect();
        let n = partials.len();
        let mut out = HostData::W4(partials);
        assert!(check_sum(ElemType::F32, &x, &out, n, 1, 0.0).passed);
        // ...and a partial off by one unit fails it.
        if let HostData::W4(p) = &mut out {
            p[7] = (f32::from_bits(p[7]) + 1.0).to_bits();
        }
        assert!(!check_sum(ElemType::F32, &x, &out, n, 1, 0.0).passed);
    }

    #[test]
    fn sum_check_is_exact_for_integers_and_bounded_for_floats() {
        let input = HostData::W4(
            [5i32, -7, 1_000_000, -3]
                .iter()
                .map(|&v| v as u32)
                .collect(),
        );
        let good = HostData::W4([-2i32, 999_997, 0].iter().map(|&v| v as u32).collect());
        assert!(check_sum(ElemType::I32, &input, &good, 2, 1, 0.0).passed);
        let off_by_one = HostData::W4([3i32, 999_995].iter().map(|&v| v as u32).collect());
        let o = check_sum(ElemType::I32, &input, &off_by_one, 2, 1, 0.0);
        assert!(!o.passed && o.first_mismatch.unwrap().contains("999998"));
        // Poisoned (unwritten) partial: counted and failing.
        let o = check_sum(
            ElemType::I32,
            &input,
            &HostData::W4(vec![2, u32::MAX]),
            2,
            1,
            0.0,
        );
        assert!(
            !o.passed && o.unwritten == 0,
            "-1 is a legitimate int partial: {o:?}"
        );

        let xs = [0.5f32, -0.25, 1e-3, -0.75];
        let input = HostData::W4(xs.iter().map(|v| v.to_bits()).collect());
        let want: f32 = xs.iter().sum();
        let near = HostData::W4(vec![(want + 1e-7).to_bits()]);
        assert!(check_sum(ElemType::F32, &input, &near, 1, 1, 1e-6).passed);
        let far = HostData::W4(vec![(want + 1e-3).to_bits()]);
        assert!(!check_sum(ElemType::F32, &input, &far, 1, 1, 1e-6).passed);
        assert!(
            !check_sum(
                ElemType::F32,
                &input,
                &HostData::W4(vec![f32::NAN.to_bits()]),
                1,
                1,
                1e-6
            )
            .passed
        );
        // Stride 2: the x fields 0.5 and 1e-3 only.
        let xs = HostData::W4(vec![(0.5f32 + 1e-3).to_bits()]);
        assert!(check_sum(ElemType::F32, &input, &xs, 1, 2, 1e-6).passed);
    }

    #[test]
    fn scans_inclusive_and_exclusive_integers_exact_floats_by_tolerance() {
        let x = HostData::W4([3i32, -1, 4, 1, -5].iter().map(|&v| v as u32).collect());
        let inclusive = HostData::W4([3i32, 2, 6, 7, 2].iter().map(|&v| v as u32).collect());
        let exclusive = HostData::W4([0i32, 3, 2, 6, 7].iter().map(|&v| v as u32).collect());
        assert!(check_scan(ElemType::I32, &x, &inclusive, 5, false, 0.0).passed);
        assert!(check_scan(ElemType::I32, &x, &exclusive, 5, true, 0.0).passed);
        let o = check_scan(ElemType::I32, &x, &exclusive, 5, false, 0.0);
        assert!(!o.passed && o.first_mismatch.unwrap().starts_with("out[0]"));
        // Only `count` elements are checked: a partial scan of a longer buffer.
        assert!(check_scan(ElemType::I32, &x, &inclusive, 3, false, 0.0).passed);
        // u8 prefixes wrap at 256, as the GPU's adds do.
        let bytes = HostData::W1(vec![200, 100]);
        assert!(
            check_scan(
                ElemType::U8,
                &bytes,
                &HostData::W1(vec![200, 44]),
                2,
                false,
                0.0
            )
            .passed
        );
        let fx = floats(&[0.1, 0.2, 0.3]);
        let near = floats(&[0.1, 0.3000001, 0.6]);
        assert!(check_scan(ElemType::F32, &fx, &near, 3, false, 1e-6).passed);
        assert!(
            !check_scan(
                ElemType::F32,
                &fx,
                &floats(&[0.1, 0.3, 0.7]),
                3,
                false,
                1e-6
            )
            .passed
        );
        // An unwritten (NaN) element never passes a tolerance.
        let o = check_scan(
            ElemType::F32,
            &fx,
            &HostData::W4(vec![0.1f32.to_bits(), u32::MAX, 0.6f32.to_bits()]),
            3,
            false,
            1.0,
        );
        assert_eq!((o.passed, o.unwritten), (false, 1));
    }

    #[test]
    fn scans_and_sums_over_many_chunks_carry_each_chunks_prefix() {
        let n = 2 * CHUNK + 5;
        let x = HostData::init(ElemType::I32, n, Init::Random, 8);
        let HostData::W4(v) = &x else { panic!() };
        let mut prefix: Vec<u32> = v
            .iter()
            .scan(0u32, |s, &e| Some(std::mem::replace(s, s.wrapping_add(e))))
            .collect();
        assert!(
            check_scan(
                ElemType::I32,
                &x,
                &HostData::W4(prefix.clone()),
                n,
                true,
                0.0
            )
            .passed
        );
        prefix[CHUNK + 9] ^= 4;
        let o = check_scan(ElemType::I32, &x, &HostData::W4(prefix), n, true, 0.0);
        assert_eq!(o.mismatches, 1);
        assert!(
            o.first_mismatch
                .unwrap()
                .starts_with(&format!("out[{}]", CHUNK + 9))
        );
        let f = HostData::init(ElemType::F32, n, Init::Random, 8);
        let HostData::W4(fv) = &f else { panic!() };
        let inclusive: Vec<u32> = fv
            .iter()
            .scan(0.0f64, |s, &e| {
                *s += f32::from_bits(e) as f64;
                Some((*s as f32).to_bits())
            })
            .collect();
        assert!(check_scan(ElemType::F32, &f, &HostData::W4(inclusive), n, false, 1e-6).passed);
        // A sum over every other element of many chunks: exact for integers, one partial holding it all.
        let total = v.iter().step_by(2).fold(0u32, |s, &e| s.wrapping_add(e));
        assert!(check_sum(ElemType::I32, &x, &HostData::W4(vec![total]), 1, 2, 0.0).passed);
        assert!(!check_sum(ElemType::I32, &x, &HostData::W4(vec![total ^ 1]), 1, 2, 0.0).passed);
    }
}
