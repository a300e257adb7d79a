//! `same_as`: an output against another variant's reference output, bit for bit or within a
//! relative L2 tolerance (floats of one type or two: an f16 kernel against an f32 one).

use super::copy::check_copy;
use super::tally::{Tally, per_chunk};
use crate::verify::correctness::Correctness;
use crate::verify::data::{HostData, is_poison, value};
use crate::verify::elem::ElemType;

/// `out` must match the reference output: bit-exact when both are of one type and `tolerance`
/// is 0 or the type is an integer; value for value when the types differ and one is an integer;
/// else (floats, of one type or two: an f16 kernel against an f32 one) within `tolerance`
/// relative L2 error, measured in float64, with no element left unwritten.
pub fn check_same(
    ref_elem: ElemType,
    reference: &HostData,
    elem: ElemType,
    out: &HostData,
    tolerance: f64,
) -> Correctness {
    let floats = elem.is_float() && ref_elem.is_float();
    if ref_elem == elem && (!elem.is_float() || tolerance == 0.0) {
        return check_copy(elem, reference, out);
    }
    // Per chunk (fixed chunks: the same float sums on every machine): its tally and, over the
    // elements that compare, Σ(got - want)², Σ want², max |got - want|, max |want|.
    let parts = per_chunk(reference.len().min(out.len()), |lo, hi| {
        let mut t = Tally::new(elem);
        let mut sums = [0.0f64; 4];
        for i in lo..hi {
            let (g, w) = (out.word(i), reference.word(i));
            t.checked += 1;
            let (gv, wv) = (value(elem, g), value(ref_elem, w));
            if elem.is_float() && is_poison(elem, g) && !is_poison(ref_elem, w) {
                t.unwritten += 1;
            }
            let differs = if floats {
                gv.is_nan() != wv.is_nan() || gv.is_infinite() != wv.is_infinite()
            } else {
                gv != wv
            };
            if differs {
                t.mismatches += 1;
                t.first
                    .get_or_insert_with(|| format!("element {i}: got {gv} want {wv}"));
            } else if floats && gv.is_finite() {
                sums[0] += (gv - wv).powi(2);
                sums[1] += wv * wv;
                sums[2] = sums[2].max((gv - wv).abs());
                sums[3] = sums[3].max(wv.abs());
            }
        }
        (t, sums)
    });
    let (mut t, [mut diff2, mut ref2, mut max_diff, mut max_ref]) = (Tally::new(elem), [0.0f64; 4]);
    for (part, sums) in parts {
        t = t.merge(part);
        diff2 += sums[0];
        ref2 += sums[1];
        max_diff = max_diff.max(sums[2]);
        max_ref = max_ref.max(sums[3]);
    }
    let mut o = t.outcome();
    if !floats {
        return o;
    }
    let rel = if ref2 > 0.0 {
        (diff2 / ref2).sqrt()
    } else {
        diff2.sqrt()
    };
    o.rel_error = rel;
    o.max_error = Some(if max_ref > 0.0 {
        max_diff / max_ref
    } else {
        max_diff
    });
    o.elem = Some(elem);
    o.passed = o.passed && o.unwritten == 0 && rel <= tolerance;
    if rel > tolerance && o.first_mismatch.is_none() {
        o.first_mismatch = Some(format!(
            "relative L2 error {rel:.3e}{} above tolerance {tolerance:.1e}",
            in_eps(rel, elem)
        ));
    }
    o
}

/// ` (N eps of f16)`: an error in units of the type's epsilon, for floats.
fn in_eps(error: f64, elem: ElemType) -> String {
    let eps = elem.epsilon();
    if eps > 0.0 {
        format!(" = {:.2} eps of {}", error / eps, elem.name())
    } else {
        String::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::verify::data::CHUNK;
    use crate::verify::elem::Init;
    use crate::verify::reference::tally::floats;

    #[test]
    fn a_check_split_over_cores_reports_its_earliest_mismatch() {
        let n = 2 * CHUNK + 5;
        let reference = HostData::init(ElemType::F32, n, Init::Random, 6);
        let HostData::W4(v) = &reference else {
            panic!()
        };
        let mut bad = v.clone();
        for i in [n - 1, 3] {
            bad[i] = f32::NAN.to_bits();
        }
        let o = check_same(
            ElemType::F32,
            &reference,
            ElemType::F32,
            &HostData::W4(bad),
            1e-3,
        );
        assert_eq!((o.checked, o.mismatches), (n as u64, 2));
        assert!(o.first_mismatch.unwrap().starts_with("element 3:"));
    }

    #[test]
    fn same_as_with_tolerance() {
        let r = HostData::W4(vec![1.0f32.to_bits(), 2.0f32.to_bits()]);
        let near = HostData::W4(vec![1.0001f32.to_bits(), 2.0f32.to_bits()]);
        assert!(check_same(ElemType::F32, &r, ElemType::F32, &near, 1e-3).passed);
        assert!(!check_same(ElemType::F32, &r, ElemType::F32, &near, 1e-6).passed);
        assert!(!check_same(ElemType::F32, &r, ElemType::F32, &near, 0.0).passed);
        let ints = HostData::W4(vec![5, 6]);
        assert!(check_same(ElemType::I32, &ints, ElemType::I32, &ints.clone(), 0.5).passed);
    }

    #[test]
    fn fp8_outputs_compare_with_float32_in_units_of_their_epsilon_and_poison_is_unwritten() {
        let reference = HostData::init(ElemType::F32, 5000, Init::Random, 12);
        for elem in [ElemType::E4m3, ElemType::E5m2] {
            let rounded = reference.converted(ElemType::F32, elem);
            let o = check_same(ElemType::F32, &reference, elem, &rounded, elem.epsilon());
            assert!(
                o.passed && o.error_in_eps().unwrap() <= 0.5,
                "{elem:?}: {o:?}"
            );
            // Bit for bit against itself; zeros and never-written bytes (0xFF: NaN) fail.
            assert!(check_same(elem, &rounded, elem, &rounded.clone(), 0.0).passed);
            let zeros = HostData::zeroed(elem, 5000);
            assert!(!check_same(ElemType::F32, &reference, elem, &zeros, elem.epsilon()).passed);
            let o = check_same(
                ElemType::F32,
                &reference,
                elem,
                &HostData::init(elem, 5000, Init::Poison, 0),
                1.0,
            );
            assert!(!o.passed && o.unwritten == 5000, "{elem:?}: {o:?}");
        }
    }

    #[test]
    fn half_outputs_are_checked_against_float32_in_units_of_their_epsilon() {
        let want = [1.0f32, -0.3333333, 0.7, 1000.5];
        let reference = floats(&want);
        // The float32 values rounded to f16: within half an f16 epsilon of each, relative.
        let halves = reference.converted(ElemType::F32, ElemType::F16);
        let o = check_same(
            ElemType::F32,
            &reference,
            ElemType::F16,
            &halves,
            2.0 * ElemType::F16.epsilon(),
        );
        assert!(o.passed, "{o:?}");
        let in_eps = o.error_in_eps().unwrap();
        assert!(
            in_eps > 0.0 && in_eps <= 0.5,
            "rounding to nearest is at most half an epsilon: {in_eps}"
        );
        assert_eq!(o.elem, Some(ElemType::F16));
        // bf16 has 3 fewer mantissa bits: the same values fail an f16-sized tolerance.
        // 1 + 3/256 needs 8 mantissa bits: f16 holds it, bf16 (7 bits) is off by 1/256.
        let fine = floats(&[1.011_718_8; 4]);
        let bf = fine.converted(ElemType::F32, ElemType::Bf16);
        assert!(
            check_same(
                ElemType::F32,
                &fine,
                ElemType::F16,
                &fine.converted(ElemType::F32, ElemType::F16),
                0.0 + 1e-12
            )
            .passed
        );
        assert!(
            !check_same(
                ElemType::F32,
                &fine,
                ElemType::Bf16,
                &bf,
                2.0 * ElemType::F16.epsilon()
            )
            .passed
        );
        assert!(
            check_same(
                ElemType::F32,
                &fine,
                ElemType::Bf16,
                &bf,
                2.0 * ElemType::Bf16.epsilon()
            )
            .passed
        );
        // An f16 element never written (0xFFFF, a NaN) is a mismatch and counted unwritten.
        let mut unwritten = halves.clone();
        if let HostData::W2(v) = &mut unwritten {
            v[1] = u16::MAX;
        }
        let o = check_same(ElemType::F32, &reference, ElemType::F16, &unwritten, 1.0);
        assert_eq!((o.passed, o.unwritten, o.mismatches), (false, 1, 1));
        // Integers of two widths compare by value.
        let small = HostData::W1(vec![5u8, 250]);
        let wide = HostData::W4(vec![5, (-6i32) as u32]);
        assert!(check_same(ElemType::I32, &wide, ElemType::I8, &small, 0.0).passed);
        assert!(!check_same(ElemType::I32, &wide, ElemType::U8, &small, 0.0).passed);
    }
}
