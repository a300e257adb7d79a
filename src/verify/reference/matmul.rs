//! Matrix products (GEMM, and GEMV where n = 1): `alpha * op(a) * op(b) + beta * c0` at every
//! output position, or at a deterministic sample that reaches every row and column.

use super::tally::{nothing_checked, parallel_parts};
use crate::verify::correctness::Correctness;
use crate::verify::data::{HostData, is_poison, value};
use crate::verify::elem::ElemType;
use crate::verify::shape::MatmulShape;

/// Output elements a matmul check computes: all of them up to this many, else a sample of this
/// many (every row and column is hit; a 4096 x 4096 x 4096 check costs 16 M multiply-adds).
pub const MATMUL_SAMPLE: u64 = 1 << 14;

/// The positions of C that a matmul check computes: all, or a deterministic sample: a sweep that
/// reaches every row and every column, `MATMUL_SAMPLE` scattered positions, and the four corners.
fn matmul_positions(m: u64, n: u64) -> Vec<(u64, u64)> {
    if m.saturating_mul(n) <= MATMUL_SAMPLE {
        return (0..m).flat_map(|i| (0..n).map(move |j| (i, j))).collect();
    }
    // A step coprime with n walks the columns in a scattered order while t walks every row.
    let mut step = (n / 2 + 1) | 1;
    while gcd(step, n) != 1 {
        step += 2;
    }
    let sweep = (0..m.max(n)).map(|t| (t % m, (t * step) % n));
    // SplitMix64: positions spread over the whole matrix, the same on every run.
    let mut state = 0x9E37_79B9_7F4A_7C15u64;
    let mut next = move || {
        state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    };
    let scattered: Vec<(u64, u64)> = (0..MATMUL_SAMPLE)
        .map(|_| (next() % m, next() % n))
        .collect();
    let mut out: Vec<(u64, u64)> = sweep
        .chain(scattered)
        .chain([(0, 0), (0, n - 1), (m - 1, 0), (m - 1, n - 1)])
        .collect();
    out.sort_unstable();
    out.dedup();
    out
}

fn gcd(a: u64, b: u64) -> u64 {
    if b == 0 { a } else { gcd(b, a % b) }
}

/// The element type's unit roundoff.
fn epsilon(elem: ElemType) -> f64 {
    elem.epsilon()
}

/// `out` must be `alpha * op(a) * op(b) + beta * c0` at every checked position (see
/// `matmul_positions`), computed here in float64. The error of an element is taken relative to
/// `|alpha| * sum |a b| + |beta * c0|`, the scale a float sum of its terms can lose precision
/// against; it may be at most `tolerance`, or, when that is 0, 2 * k * the type's epsilon (the
/// worst-case bound of a k-term float sum). The outcome's `rel_error` is the worst error seen.
pub fn check_matmul(
    elem: ElemType,
    a: &HostData,
    b: &HostData,
    c0: Option<&HostData>,
    out: &HostData,
    shape: &MatmulShape,
    tolerance: f64,
) -> Correctness {
    let MatmulShape { m, n, k, .. } = *shape;
    let bound = if tolerance > 0.0 {
        tolerance
    } else {
        2.0 * k as f64 * epsilon(elem)
    };
    let needed = (a.len() as u64 >= m * k)
        && (b.len() as u64 >= k * n)
        && (out.len() as u64 >= m * n)
        && c0.is_none_or(|c| c.len() as u64 >= m * n);
    if !needed || m == 0 || n == 0 {
        return nothing_checked(Some(format!(
            "the buffers are smaller than a {} product needs",
            shape.label()
        )));
    }
    let positions = matmul_positions(m, n);
    let parts = parallel_parts(positions.len(), |lo, hi| {
        let (mut checked, mut bad, mut unwritten, mut worst, mut first) =
            (0u64, 0u64, 0u64, 0.0f64, None);
        for &(i, j) in &positions[lo..hi] {
            let (want, scale) = expected_at(elem, a, b, c0, shape, (i, j));
            let got_bits = out.word((i * n + j) as usize);
            let got = value(elem, got_bits);
            checked += 1;
            let err = if got.is_finite() {
                (got - want).abs() / scale
            } else {
                f64::INFINITY
            };
            worst = worst.max(err);
            if err > bound || (bound == 0.0 && got != want) {
                bad += 1;
                if is_poison(elem, got_bits) {
                    unwritten += 1;
                }
                first.get_or_insert_with(|| format!("C[{i}][{j}]: got {got} want {want} (error {err:.2e} of the terms' scale, tolerance {bound:.1e})"));
            }
        }
        (checked, bad, unwritten, worst, first)
    });
    let mut o = nothing_checked(None);
    for (checked, bad, unwritten, worst, first) in parts {
        o.checked += checked;
        o.mismatches += bad;
        o.unwritten += unwritten;
        o.rel_error = o.rel_error.max(worst);
        o.first_mismatch = o.first_mismatch.or(first);
    }
    o.passed = o.checked > 0 && o.mismatches == 0;
    o
}

/// C[i][j] in float64, `alpha * sum_p a[i][p] b[p][j] + beta * c0[i][j]`, with the scale a float
/// sum of its terms can lose precision against, `|alpha| * sum |a b| + |beta * c0|`.
fn expected_at(
    elem: ElemType,
    a: &HostData,
    b: &HostData,
    c0: Option<&HostData>,
    shape: &MatmulShape,
    (i, j): (u64, u64),
) -> (f64, f64) {
    let MatmulShape {
        n, k, alpha, beta, ..
    } = *shape;
    let (mut sum, mut scale) = (0.0f64, 0.0f64);
    for p in 0..k {
        let t = value(elem, a.word(shape.a_index(i, p) as usize))
            * value(elem, b.word(shape.b_index(p, j) as usize));
        sum += t;
        scale += t.abs();
    }
    let c = c0
        .map(|c| value(elem, c.word((i * n + j) as usize)))
        .unwrap_or(0.0);
    let want = alpha * sum + beta * c;
    let scale = (alpha.abs() * scale + (beta * c).abs()).max(f64::MIN_POSITIVE);
    (want, scale)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::verify::elem::Init;
    use crate::verify::reference::tally::floats;

    /// Row-major float64 product, for the tests: C = alpha * op(A) op(B) + beta * C0.
    fn product(a: &HostData, b: &HostData, c0: &HostData, s: &MatmulShape) -> HostData {
        let f = |d: &HostData, i: u64| value(ElemType::F32, d.word(i as usize));
        let v: Vec<f32> = (0..s.m * s.n)
            .map(|ij| {
                let (i, j) = (ij / s.n, ij % s.n);
                let sum: f64 = (0..s.k)
                    .map(|p| f(a, s.a_index(i, p)) * f(b, s.b_index(p, j)))
                    .sum();
                (s.alpha * sum + s.beta * f(c0, ij)) as f32
            })
            .collect();
        floats(&v)
    }

    #[test]
    fn matmul_check_passes_float_rounding_and_catches_one_wrong_element() {
        for (m, n, k, ta, tb) in [
            (37, 29, 53, false, false),
            (64, 1, 300, false, false),
            (40, 33, 17, true, false),
            (23, 31, 19, false, true),
            (300, 280, 64, false, false),
        ] {
            let s = MatmulShape {
                m,
                n,
                k,
                alpha: 1.5,
                beta: 0.5,
                trans_a: ta,
                trans_b: tb,
            };
            let a = HostData::init(ElemType::F32, (m * k) as usize, Init::Random, 1);
            let b = HostData::init(ElemType::F32, (k * n) as usize, Init::Random, 2);
            let c0 = HostData::init(ElemType::F32, (m * n) as usize, Init::Random, 3);
            let mut out = product(&a, &b, &c0, &s);
            let o = check_matmul(ElemType::F32, &a, &b, Some(&c0), &out, &s, 0.0);
            assert!(
                o.passed && o.rel_error < 2.0 * k as f64 * f32::EPSILON as f64,
                "{s:?}: {o:?}"
            );
            assert_eq!(o.checked as usize, matmul_positions(m, n).len());
            assert!(
                o.checked == m * n
                    || (o.checked >= m.max(n) && o.checked <= MATMUL_SAMPLE + 4 + m.max(n))
            );
            // One element off by a little more than float rounding allows: caught (where sampled).
            let HostData::W4(v) = &mut out else { panic!() };
            let at = (m * n - 1) as usize;
            v[at] = (f32::from_bits(v[at]) + 0.01).to_bits();
            let o = check_matmul(ElemType::F32, &a, &b, Some(&c0), &out, &s, 0.0);
            assert!(
                !o.passed
                    && o.mismatches == 1
                    && o.first_mismatch.as_deref().unwrap().starts_with(&format!(
                        "C[{}][{}]",
                        m - 1,
                        n - 1
                    )),
                "{o:?}"
            );
            // Forgetting beta * C is wrong too.
            let o = check_matmul(
                ElemType::F32,
                &a,
                &b,
                None,
                &product(&a, &b, &c0, &s),
                &s,
                0.0,
            );
            assert!(!o.passed);
        }
    }

    #[test]
    fn a_large_matmul_check_samples_every_row_and_column() {
        let (m, n) = (4096u64, 4000u64);
        let p = matmul_positions(m, n);
        let rows: std::collections::HashSet<u64> = p.iter().map(|x| x.0).collect();
        let cols: std::collections::HashSet<u64> = p.iter().map(|x| x.1).collect();
        assert_eq!((rows.len() as u64, cols.len() as u64), (m, n));
        assert!(
            p.len() as u64 <= MATMUL_SAMPLE + 4 + m.max(n) && p.len() as u64 > MATMUL_SAMPLE,
            "{}",
            p.len()
        );
        // Square shapes too: the sweep and the scattered sample do not fold onto each other.
        assert!(matmul_positions(4096, 4096).len() as u64 > MATMUL_SAMPLE);
        // Poisoned (never written) output is counted as unwritten.
        let s = MatmulShape {
            m: 2,
            n: 2,
            k: 2,
            alpha: 1.0,
            beta: 0.0,
            trans_a: false,
            trans_b: false,
        };
        let ones = floats(&[1.0; 4]);
        let o = check_matmul(
            ElemType::F32,
            &ones,
            &ones,
            None,
            &HostData::W4(vec![u32::MAX; 4]),
            &s,
            0.0,
        );
        assert_eq!((o.passed, o.unwritten), (false, 4));
        let short = check_matmul(ElemType::F32, &ones, &ones, None, &floats(&[2.0]), &s, 0.0);
        assert!(!short.passed && short.first_mismatch.unwrap().contains("smaller"));
    }
}
