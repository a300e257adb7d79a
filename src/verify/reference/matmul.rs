//! Matrix products (GEMM, and GEMV where n = 1): `alpha * op(a) * op(b) + beta * c0` at every
//! output position, or at a deterministic sample that reaches every row and column.

use super::matmul_model::{MatmulTypes, Terms, allowance, saturated_as_allowed};
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

/// `out` must be `alpha * op(a) * op(b) + beta * c0` at every checked position (see
/// `matmul_positions`), computed here in float64 from the inputs' exact values. An element's
/// error is taken relative to `|alpha| * sum |a b| + |beta * c0|`, the scale a float sum of its
/// terms can lose precision against, and the outcome's `rel_error` is the worst seen. It may be at
/// most `tolerance` when that is above 0; else, for f32 or f64 products of one type, 2 * k * the
/// type's epsilon (the worst-case bound of a k-term float sum), for narrower inputs the
/// per-element allowance of `matmul_model`, and for integers none (compared exactly, wrapping at
/// the output's width).
pub fn check_matmul(
    types: MatmulTypes,
    a: &HostData,
    b: &HostData,
    c0: Option<&HostData>,
    out: &HostData,
    shape: &MatmulShape,
    tolerance: f64,
) -> Correctness {
    let MatmulShape { m, n, k, .. } = *shape;
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
    let judge = Judge::new(types, shape, tolerance);
    let positions = matmul_positions(m, n);
    let parts = parallel_parts(positions.len(), |lo, hi| {
        let (mut checked, mut bad, mut unwritten, mut worst, mut first) =
            (0u64, 0u64, 0u64, 0.0f64, None);
        let mut operands = Operands::default();
        for &(i, j) in &positions[lo..hi] {
            let terms = operands.terms_at(types, (a, b, c0), shape, (i, j));
            let got_bits = out.word((i * n + j) as usize);
            let got = value(types.out, got_bits);
            checked += 1;
            let verdict = judge.element(&terms, got);
            worst = worst.max(verdict.error);
            if !verdict.ok {
                bad += 1;
                if is_poison(types.out, got_bits) {
                    unwritten += 1;
                }
                first.get_or_insert_with(|| {
                    format!(
                        "C[{i}][{j}]: got {got} want {}{}",
                        verdict.want, verdict.why
                    )
                });
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

/// How a product's elements are judged: a relative bound of the terms' scale (a given
/// tolerance, or 2 k eps for f32 and f64), the model's allowance, or exact integers.
struct Judge {
    types: MatmulTypes,
    k: u64,
    alpha: f64,
    /// The bound relative to the terms' scale; `None`: the model's per-element allowance.
    relative: Option<f64>,
}

/// One element's verdict: the expected value, its error relative to the terms' scale, and why
/// it fails (empty when it passes).
struct Verdict {
    want: f64,
    error: f64,
    ok: bool,
    why: String,
}

impl Judge {
    fn new(types: MatmulTypes, shape: &MatmulShape, tolerance: f64) -> Self {
        let relative = if types.is_integer() {
            Some(0.0)
        } else if tolerance > 0.0 {
            Some(tolerance)
        } else if types.is_uniform_wide() {
            Some(2.0 * shape.k as f64 * types.out.epsilon())
        } else {
            None
        };
        Judge {
            types,
            k: shape.k,
            alpha: shape.alpha,
            relative,
        }
    }

    fn element(&self, terms: &Terms, got: f64) -> Verdict {
        let mut want = self.alpha * terms.sum + terms.c;
        if self.types.is_integer() {
            // The GPU's integer arithmetic wraps at the output's width.
            want = from_value_wrapping(self.types.out, want);
        }
        let scale = (self.alpha.abs() * terms.abs + terms.c.abs()).max(f64::MIN_POSITIVE);
        let error = if got.is_finite() {
            (got - want).abs() / scale
        } else {
            f64::INFINITY
        };
        let (ok, why) = match self.relative {
            Some(0.0) => (got == want, " (compared exactly)".to_string()),
            Some(bound) => (
                error <= bound,
                format!(" (error {error:.2e} of the terms' scale, tolerance {bound:.1e})"),
            ),
            None => {
                let allowed = allowance(self.types, self.k, self.alpha, terms, want);
                let ok = (got - want).abs() <= allowed
                    || saturated_as_allowed(self.types.out, want, allowed, got);
                let f16_by_design = if self.types.a == ElemType::F16
                    && self.types.accumulate != ElemType::F16
                {
                    "; a kernel that accumulates in f16 by design declares math = \"f16-tensor-f16acc\""
                } else {
                    ""
                };
                let why = format!(
                    " (error {error:.2e} of the terms' scale Σ|a·b|, allowed {:.1e}: {} at k = {} rounded once to {}; a kernel that accumulates in a narrower type or skips terms errs more{f16_by_design})",
                    allowed / scale,
                    self.types.label(),
                    self.k,
                    self.types.out.name()
                );
                (ok, why)
            }
        };
        Verdict {
            want,
            error,
            ok,
            why: if ok { String::new() } else { why },
        }
    }
}

/// An integer result as the output type holds it: wrapped at its width, two's complement.
fn from_value_wrapping(out: ElemType, x: f64) -> f64 {
    let bits = 8 * out.size() as u32;
    let wide = x as i128;
    let wrapped = if bits >= 64 {
        wide as i64 as i128
    } else {
        let m = 1i128 << bits;
        let r = wide.rem_euclid(m);
        if out.is_signed() && r >= m / 2 {
            r - m
        } else {
            r
        }
    };
    wrapped as f64
}

/// C[i][j]'s terms in float64: the k products `a[i][p] b[p][j]` (each of its own type's exact
/// value) and `beta * c0[i][j]` (the tests' way in; a check keeps its `Operands`).
#[cfg(test)]
pub(super) fn terms_at(
    types: MatmulTypes,
    a: &HostData,
    b: &HostData,
    c0: Option<&HostData>,
    shape: &MatmulShape,
    at: (u64, u64),
) -> Terms {
    Operands::default().terms_at(types, (a, b, c0), shape, at)
}

/// The row of op(A) and the column of op(B) an element's terms multiply, as float64: the row
/// is kept for the next position of the same row (positions come sorted by row), so a check
/// decodes each row once and each column once a position, and sums them in a loop the compiler
/// can unroll (decoding each term where it was summed cost most of a check's time).
#[derive(Default)]
struct Operands {
    row: Option<u64>,
    a_row: Vec<f64>,
    b_col: Vec<f64>,
}

impl Operands {
    fn terms_at(
        &mut self,
        types: MatmulTypes,
        (a, b, c0): (&HostData, &HostData, Option<&HostData>),
        shape: &MatmulShape,
        (i, j): (u64, u64),
    ) -> Terms {
        let MatmulShape { n, k, beta, .. } = *shape;
        if self.row != Some(i) {
            gather(
                types.a,
                a,
                (0..k).map(|p| shape.a_index(i, p)),
                &mut self.a_row,
            );
            self.row = Some(i);
        }
        gather(
            types.b,
            b,
            (0..k).map(|p| shape.b_index(p, j)),
            &mut self.b_col,
        );
        let mut terms = dot(&self.a_row, &self.b_col);
        terms.c = c0
            .map(|c| beta * value(types.out, c.word((i * n + j) as usize)))
            .unwrap_or(0.0);
        terms
    }
}

/// The elements of `data` at `indices`, as float64, into `into` (emptied first).
fn gather(
    elem: ElemType,
    data: &HostData,
    indices: impl Iterator<Item = u64>,
    into: &mut Vec<f64>,
) {
    into.clear();
    // The common types without the per-element dispatch of `value`.
    match (elem, data) {
        (ElemType::Bf16, HostData::W2(w)) => {
            into.extend(indices.map(|x| f64::from(half::bf16::from_bits(w[x as usize]).to_f32())))
        }
        (ElemType::F16, HostData::W2(w)) => {
            into.extend(indices.map(|x| f64::from(half::f16::from_bits(w[x as usize]).to_f32())))
        }
        (ElemType::F32, HostData::W4(w)) => {
            into.extend(indices.map(|x| f64::from(f32::from_bits(w[x as usize]))))
        }
        _ => into.extend(indices.map(|x| value(elem, data.word(x as usize)))),
    }
}

/// The terms `a[p] * b[p]` summed: four independent partial sums of each quantity, so the adds
/// do not wait on each other (the order of a float64 sum of at most 2^20 products of inputs of
/// 24 bits or less moves its value by far less than any tolerance the judge applies).
fn dot(a: &[f64], b: &[f64]) -> Terms {
    let (mut sum, mut abs, mut squares) = ([0.0f64; 4], [0.0f64; 4], [0.0f64; 4]);
    let (a4, b4) = (a.chunks_exact(4), b.chunks_exact(4));
    let (a_rest, b_rest) = (a4.remainder(), b4.remainder());
    for (x, y) in a4.zip(b4) {
        for l in 0..4 {
            let t = x[l] * y[l];
            sum[l] += t;
            abs[l] += t.abs();
            squares[l] += t * t;
        }
    }
    let mut terms = Terms {
        sum: sum.iter().sum(),
        abs: abs.iter().sum(),
        squares: squares.iter().sum(),
        c: 0.0,
    };
    for (x, y) in a_rest.iter().zip(b_rest) {
        terms.add(x * y);
    }
    terms
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
            let o = check_matmul(
                MatmulTypes::uniform(ElemType::F32),
                &a,
                &b,
                Some(&c0),
                &out,
                &s,
                0.0,
            );
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
            let o = check_matmul(
                MatmulTypes::uniform(ElemType::F32),
                &a,
                &b,
                Some(&c0),
                &out,
                &s,
                0.0,
            );
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
                MatmulTypes::uniform(ElemType::F32),
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
            MatmulTypes::uniform(ElemType::F32),
            &ones,
            &ones,
            None,
            &HostData::W4(vec![u32::MAX; 4]),
            &s,
            0.0,
        );
        assert_eq!((o.passed, o.unwritten), (false, 4));
        let short = check_matmul(
            MatmulTypes::uniform(ElemType::F32),
            &ones,
            &ones,
            None,
            &floats(&[2.0]),
            &s,
            0.0,
        );
        assert!(!short.passed && short.first_mismatch.unwrap().contains("smaller"));
    }
}
