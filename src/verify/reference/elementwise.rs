//! Element-by-element arithmetic: `out[i] = a[i] + b[i]` (integers wrapped at the output's width,
//! floats correctly rounded) and `out[i] = f(x[i])` within a number of ULP.

use super::tally::{
    Tally, int_mask, merged_with_worst, nothing_checked, parallel_parts, parallel_tally,
};
use crate::verify::correctness::Correctness;
use crate::verify::data::{HostData, from_value, is_poison, value};
use crate::verify::elem::ElemType;

/// A function the `function` check computes in float64.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MathFn {
    Sin,
    Cos,
    Exp,
    Log,
    Sqrt,
    Tanh,
    /// x^exponent
    Pow(f64),
}

impl MathFn {
    pub fn parse(name: &str, exponent: Option<f64>) -> Option<MathFn> {
        Some(match name.trim() {
            "sin" => MathFn::Sin,
            "cos" => MathFn::Cos,
            "exp" => MathFn::Exp,
            "log" => MathFn::Log,
            "sqrt" => MathFn::Sqrt,
            "tanh" => MathFn::Tanh,
            "pow" => MathFn::Pow(exponent?),
            _ => return None,
        })
    }

    pub fn apply(self, x: f64) -> f64 {
        match self {
            MathFn::Sin => x.sin(),
            MathFn::Cos => x.cos(),
            MathFn::Exp => x.exp(),
            MathFn::Log => x.ln(),
            MathFn::Sqrt => x.sqrt(),
            MathFn::Tanh => x.tanh(),
            MathFn::Pow(p) => x.powf(p),
        }
    }
}

/// One unit in the last place of the type at `r`: the gap between adjacent values near r
/// (the smallest subnormal gap at and below the normal range).
fn ulp_at(elem: ElemType, r: f64) -> f64 {
    let (mantissa, min_exp) = elem.float_format().unwrap_or((52, -1022));
    let e = if r == 0.0 {
        min_exp
    } else {
        (r.abs().log2().floor() as i32).max(min_exp)
    };
    2f64.powi(e - mantissa)
}

/// `out[i]` must be `f(input[i])` within `max_ulp` units in the last place of the output type,
/// against f computed in float64; NaN must match NaN and infinities their sign. The largest error
/// found, in ULP, is the outcome's `rel_error`.
pub fn check_function(
    in_elem: ElemType,
    input: &HostData,
    elem: ElemType,
    out: &HostData,
    f: MathFn,
    max_ulp: f64,
) -> Correctness {
    let parts = parallel_parts(input.len().min(out.len()), |lo, hi| {
        let mut t = Tally::new(elem);
        let mut worst = 0.0f64;
        for i in lo..hi {
            let x = value(in_elem, input.word(i));
            // The best the output type can hold: an f16 exp(12) is +inf, correctly.
            let want = value(elem, from_value(elem, f.apply(x)));
            let got_bits = out.word(i);
            let got = value(elem, got_bits);
            t.checked += 1;
            let ulps = if want.is_nan() || got.is_nan() {
                if want.is_nan() && got.is_nan() {
                    0.0
                } else {
                    f64::INFINITY
                }
            } else if want.is_infinite() || got.is_infinite() {
                if want == got { 0.0 } else { f64::INFINITY }
            } else {
                (got - want).abs() / ulp_at(elem, want)
            };
            if ulps > max_ulp {
                t.mismatches += 1;
                if is_poison(elem, got_bits) && !want.is_nan() {
                    t.unwritten += 1;
                }
                t.first.get_or_insert_with(|| format!("out[{i}] = {got} for x = {x}: float64 gives {want}, {ulps:.1} ulp off (at most {max_ulp} allowed)"));
            }
            if ulps.is_finite() {
                worst = worst.max(ulps);
            }
        }
        (t, worst)
    });
    let mut o = merged_with_worst(elem, parts);
    o.max_ulp = Some(o.rel_error);
    o
}

/// An integer element's value from its bits (sign-extended for the signed types).
fn int_value(elem: ElemType, bits: u64) -> i128 {
    let width = 8 * elem.size() as u32;
    if elem.is_signed() && width < 64 {
        ((bits << (64 - width)) as i64 >> (64 - width)) as i128
    } else if elem.is_signed() {
        bits as i64 as i128
    } else {
        bits as i128
    }
}

/// `out[i]` must be `a[i] + b[i]` for every element of `out` (a and b of one type, `in_elem`, and
/// at least as long). Integers exactly: the sum of the two values, wrapped at the output's width
/// (what the GPU's add and a store to a narrower type keep). Floats: the sum computed in float64
/// and rounded once to the output type, which is the correctly rounded sum a GPU add gives (float64
/// holds more than twice the bits of every narrower type, so the two roundings agree); bit for bit
/// when `tolerance` is 0, else within `tolerance` × (|a[i]| + |b[i]|). The worst error found, on
/// that scale, is the outcome's `rel_error`.
pub fn check_add(
    in_elem: ElemType,
    a: &HostData,
    b: &HostData,
    elem: ElemType,
    out: &HostData,
    tolerance: f64,
) -> Correctness {
    let n = out.len();
    if a.len() < n || b.len() < n || in_elem.is_float() != elem.is_float() {
        let why = if in_elem.is_float() != elem.is_float() {
            format!(
                "a and b are {} and the output {}: an add check compares floats with floats and integers with integers",
                in_elem.name(),
                elem.name()
            )
        } else {
            format!(
                "a holds {} and b {} elements, fewer than the output's {n}",
                a.len(),
                b.len()
            )
        };
        return nothing_checked(Some(why));
    }
    if !elem.is_float() {
        let mask = int_mask(elem);
        return parallel_tally(elem, n, |lo, hi| {
            let mut t = Tally::new(elem);
            for i in lo..hi {
                let want =
                    (int_value(in_elem, a.word(i)) + int_value(in_elem, b.word(i))) as u64 & mask;
                t.exact(out.word(i), want, || format!("out[{i}] (a[{i}] + b[{i}])"));
            }
            t
        })
        .outcome();
    }
    let parts = parallel_parts(n, |lo, hi| {
        let mut t = Tally::new(elem);
        let mut local = 0.0f64;
        for i in lo..hi {
            let (x, y) = (value(in_elem, a.word(i)), value(in_elem, b.word(i)));
            let want_bits = from_value(elem, x + y);
            let got_bits = out.word(i);
            if tolerance <= 0.0 {
                t.exact(got_bits, want_bits, || {
                    format!("out[{i}] (a[{i}] + b[{i}] = {x} + {y})")
                });
                continue;
            }
            let (got, want) = (value(elem, got_bits), value(elem, want_bits));
            let scale = x.abs() + y.abs();
            let err = if want.is_nan() && got.is_nan() {
                0.0
            } else if scale > 0.0 {
                (got - want).abs() / scale
            } else {
                (got - want).abs()
            };
            let at = || {
                format!(
                    "out[{i}]: got {got} want {want} = {x} + {y} (error {err:.2e} of |a| + |b|, tolerance {tolerance:.1e})"
                )
            };
            if let Some(err) = t.within(err, tolerance, got_bits, at) {
                local = local.max(err);
            }
        }
        (t, local)
    });
    merged_with_worst(elem, parts)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::verify::elem::Init;
    use crate::verify::reference::tally::floats;

    #[test]
    fn adds_are_checked_element_by_element_and_name_the_first_wrong_one() {
        let a = HostData::init(ElemType::F32, 10_007, Init::Random, 1);
        let b = HostData::init(ElemType::F32, 10_007, Init::Random, 2);
        let (HostData::W4(x), HostData::W4(y)) = (&a, &b) else {
            panic!()
        };
        let sums: Vec<u32> = x
            .iter()
            .zip(y)
            .map(|(p, q)| (f32::from_bits(*p) + f32::from_bits(*q)).to_bits())
            .collect();
        // float32 adds on the host are what the GPU's adds give: bit for bit.
        let right = HostData::W4(sums.clone());
        let o = check_add(ElemType::F32, &a, &b, ElemType::F32, &right, 0.0);
        assert!(
            o.passed && o.checked == 10_007 && o.mismatches == 0,
            "{o:?}"
        );
        // One element off by one unit in the last place: found, with its index.
        let mut wrong = sums.clone();
        wrong[4321] += 1;
        let o = check_add(
            ElemType::F32,
            &a,
            &b,
            ElemType::F32,
            &HostData::W4(wrong.clone()),
            0.0,
        );
        assert_eq!(
            (o.passed, o.mismatches, o.unwritten),
            (false, 1, 0),
            "{o:?}"
        );
        assert!(
            o.first_mismatch
                .as_deref()
                .unwrap()
                .starts_with("out[4321] (a[4321] + b[4321]"),
            "{o:?}"
        );
        // ...which a tolerance of a few eps accepts, and an element never written (poison) never passes.
        assert!(
            check_add(
                ElemType::F32,
                &a,
                &b,
                ElemType::F32,
                &HostData::W4(wrong.clone()),
                4.0 * ElemType::F32.epsilon()
            )
            .passed
        );
        wrong[17] = u32::MAX;
        let o = check_add(
            ElemType::F32,
            &a,
            &b,
            ElemType::F32,
            &HostData::W4(wrong),
            1.0,
        );
        assert_eq!((o.passed, o.unwritten), (false, 1), "{o:?}");
        assert!(
            o.first_mismatch.as_deref().unwrap().starts_with("out[17]"),
            "the earliest wrong element is reported: {o:?}"
        );
        // Only the output's elements are checked: a and b may be longer, never shorter.
        let short = HostData::W4(sums[..100].to_vec());
        assert!(check_add(ElemType::F32, &a, &b, ElemType::F32, &short, 0.0).passed);
        let o = check_add(
            ElemType::F32,
            &HostData::W4(x[..99].to_vec()),
            &b,
            ElemType::F32,
            &short,
            0.0,
        );
        assert!(
            !o.passed
                && o.first_mismatch
                    .unwrap()
                    .contains("fewer than the output's 100")
        );
    }

    #[test]
    fn integer_adds_wrap_at_the_output_width_and_widen_exactly() {
        let a = HostData::W1([100i8, -100, 5, -128].iter().map(|&v| v as u8).collect());
        let b = HostData::W1([100i8, -100, -7, -1].iter().map(|&v| v as u8).collect());
        // i8 + i8 into i8 wraps: 200 -> -56, -200 -> 56, -129 -> 127.
        let wrapped = HostData::W1([-56i8, 56, -2, 127].iter().map(|&v| v as u8).collect());
        assert!(check_add(ElemType::I8, &a, &b, ElemType::I8, &wrapped, 0.0).passed);
        // Into i32 the sum is exact.
        let wide = HostData::W4([200i32, -200, -2, -129].iter().map(|&v| v as u32).collect());
        assert!(check_add(ElemType::I8, &a, &b, ElemType::I32, &wide, 0.0).passed);
        let mut off = wide.clone();
        if let HostData::W4(v) = &mut off {
            v[2] = (-3i32) as u32;
        }
        let o = check_add(ElemType::I8, &a, &b, ElemType::I32, &off, 0.0);
        assert_eq!(
            (o.passed, o.first_mismatch.as_deref()),
            (false, Some("out[2] (a[2] + b[2]): got -3 want -2"))
        );
        // u64 sums wrap at 2^64, with no rounding through float64.
        let big = HostData::W8(vec![u64::MAX - 1, (1u64 << 60) + 1]);
        let one = HostData::W8(vec![3, 1 << 60]);
        assert!(
            check_add(
                ElemType::U64,
                &big,
                &one,
                ElemType::U64,
                &HostData::W8(vec![1, (1u64 << 61) + 1]),
                0.0
            )
            .passed
        );
        // Floats against integers: refused, not compared.
        let o = check_add(
            ElemType::F32,
            &HostData::W4(vec![0]),
            &HostData::W4(vec![0]),
            ElemType::I32,
            &HostData::W4(vec![0]),
            0.0,
        );
        assert!(!o.passed && o.first_mismatch.unwrap().contains("floats with floats"));
    }

    #[test]
    fn fp8_outputs_are_judged_in_their_own_ulps() {
        let xs = HostData::init(ElemType::F32, 4096, Init::Random, 11);
        for elem in [ElemType::E4m3, ElemType::E5m2] {
            let mut out = HostData::zeroed(elem, xs.len());
            let HostData::W1(v) = &mut out else { panic!() };
            for (i, o) in v.iter_mut().enumerate() {
                *o = from_value(elem, value(ElemType::F32, xs.word(i)).tanh()) as u8;
            }
            let o = check_function(ElemType::F32, &xs, elem, &out, MathFn::Tanh, 0.5);
            assert!(o.passed && o.max_ulp.unwrap() <= 0.5, "{elem:?}: {o:?}");
            // One fp8 step off (the next bit pattern) is one ulp: caught at 0.5.
            let HostData::W1(v) = &mut out else { panic!() };
            v[7] ^= 1;
            assert!(!check_function(ElemType::F32, &xs, elem, &out, MathFn::Tanh, 0.5).passed);
            assert!(check_function(ElemType::F32, &xs, elem, &out, MathFn::Tanh, 1.5).passed);
        }
    }

    #[test]
    fn functions_are_checked_in_ulp_of_the_output_type() {
        let xs = floats(&[0.5, -0.25, 1.0, 0.0]);
        let exact = HostData::W4(
            [0.5f64, -0.25, 1.0, 0.0]
                .iter()
                .map(|&x| (x.sin() as f32).to_bits())
                .collect(),
        );
        let o = check_function(ElemType::F32, &xs, ElemType::F32, &exact, MathFn::Sin, 0.5);
        assert!(o.passed && o.max_ulp.unwrap() <= 0.5, "{o:?}");
        // Three ULP off at sin(0.5): allowed with max_ulp 4, not with 2.
        let mut off = exact.clone();
        if let HostData::W4(v) = &mut off {
            v[0] += 3;
        }
        assert!(check_function(ElemType::F32, &xs, ElemType::F32, &off, MathFn::Sin, 4.0).passed);
        let o = check_function(ElemType::F32, &xs, ElemType::F32, &off, MathFn::Sin, 2.0);
        assert!(!o.passed && o.first_mismatch.unwrap().contains("ulp off"));
        // pow with an odd exponent is defined for negative x; log of a negative is NaN on both sides.
        let cubes = HostData::W4(
            [0.125f32, -0.015625, 1.0, 0.0]
                .iter()
                .map(|x| x.to_bits())
                .collect(),
        );
        assert!(
            check_function(
                ElemType::F32,
                &xs,
                ElemType::F32,
                &cubes,
                MathFn::Pow(3.0),
                0.0
            )
            .passed
        );
        let logs = HostData::W4(
            [0.5f64.ln() as f32, f32::NAN, 0.0, f32::NEG_INFINITY]
                .iter()
                .map(|x| x.to_bits())
                .collect(),
        );
        assert!(check_function(ElemType::F32, &xs, ElemType::F32, &logs, MathFn::Log, 1.0).passed);
        // A double output is held to double's ULP: a float-accurate result fails.
        let d = HostData::W8(vec![(0.5f64.sin() as f32 as f64).to_bits()]);
        assert!(
            !check_function(
                ElemType::F64,
                &HostData::W8(vec![0.5f64.to_bits()]),
                ElemType::F64,
                &d,
                MathFn::Sin,
                2.0
            )
            .passed
        );
        // exp(12) is past f16's range: +inf is the right f16 answer, not an infinite error.
        let twelve = HostData::W2(vec![half::f16::from_f32(12.0).to_bits()]);
        let inf = HostData::W2(vec![half::f16::INFINITY.to_bits()]);
        assert!(
            check_function(
                ElemType::F16,
                &twelve,
                ElemType::F16,
                &inf,
                MathFn::Exp,
                0.0
            )
            .passed
        );
        assert_eq!(MathFn::parse("pow", Some(2.5)), Some(MathFn::Pow(2.5)));
        assert_eq!(MathFn::parse("pow", None), None);
    }
}
