//! The default tolerance of a matrix product with narrow inputs (f16, bf16, fp8, i8): how far a
//! correct kernel's element may lie from the float64 reference, from the accumulator's rounding
//! over k terms, the epilogue's and the output's (pure; docs/suite-format.md, "Matmul tolerance").
//!
//! The products of f16, bf16 and fp8 inputs are exact in f32 (at most 2 × 11 significant bits),
//! so a correct kernel errs only where it rounds: each addition into its accumulator, the
//! epilogue `alpha * acc + beta * c`, and the store into the output type. The model bounds each
//! at the magnitudes the sums really reach, so the allowance stays far below what a kernel that
//! skips terms or accumulates in a narrower type gets wrong.

use crate::verify::elem::ElemType;

/// The element types of a product `C = alpha * op(A) * op(B) + beta * C`: the inputs', the
/// output's and the accumulator's (the type the kernel sums the k products in).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MatmulTypes {
    pub a: ElemType,
    pub b: ElemType,
    pub out: ElemType,
    pub accumulate: ElemType,
}

impl MatmulTypes {
    /// A, B and C of one type, summed in it (f32 or f64 products, as before mixed types).
    pub fn uniform(elem: ElemType) -> Self {
        MatmulTypes::new(elem, elem, elem, None)
    }

    /// The contract's types; without a declared accumulator, integers sum in i32, narrow floats
    /// in f32 (what tensor cores do), f32 and f64 in their own type.
    pub fn new(a: ElemType, b: ElemType, out: ElemType, accumulate: Option<ElemType>) -> Self {
        let default = match a {
            ElemType::F64 => ElemType::F64,
            _ if !a.is_float() => ElemType::I32,
            _ => ElemType::F32,
        };
        MatmulTypes {
            a,
            b,
            out,
            accumulate: accumulate.unwrap_or(default),
        }
    }

    /// Inputs and output of one type, f32 or f64: the default tolerance stays 2 × k × eps of
    /// Σ|a·b| (the worst case of a k-term sum), as it was before mixed types.
    pub fn is_uniform_wide(&self) -> bool {
        self.a == self.b
            && self.b == self.out
            && matches!(self.out, ElemType::F32 | ElemType::F64)
            && self.accumulate == self.out
    }

    /// Integer inputs and output (i8 · i8 → i32): compared exactly.
    pub fn is_integer(&self) -> bool {
        !self.a.is_float() && !self.b.is_float() && !self.out.is_float()
    }

    /// `e4m3·e4m3→f32 (f32 accumulate)`: the contract, for messages.
    pub fn label(&self) -> String {
        format!(
            "{}·{}→{} ({} accumulate)",
            self.a.name(),
            self.b.name(),
            self.out.name(),
            self.accumulate.name()
        )
    }
}

/// One output element's terms: the k products' Σ t, Σ |t| and Σ t², and `beta * c0`.
#[derive(Debug, Default, Clone, Copy)]
pub(super) struct Terms {
    pub sum: f64,
    pub abs: f64,
    pub squares: f64,
    pub c: f64,
}

impl Terms {
    pub fn add(&mut self, t: f64) {
        self.sum += t;
        self.abs += t.abs();
        self.squares += t * t;
    }
}

/// How many roundings of the accumulator the model allows for, in units of its unit roundoff:
/// `4 √k` for round-to-nearest additions in any order (errors of random sign: a probabilistic
/// bound, Higham & Mary 2019, with a wide margin) plus `k / 8` for tensor cores, which add each
/// 16-deep MMA step's exact sum into the accumulator truncating (round toward zero: up to 2 units
/// each, all one way); never more than `k`, the worst case of a k-term sum.
pub fn rounded_adds(k: u64) -> f64 {
    let k = k as f64;
    (4.0 * k.sqrt() + k / 8.0).min(k)
}

/// The absolute error a correct kernel may make at an element whose exact value is `want`:
///
/// - accumulation: `|alpha| × rounded_adds(k) × u_acc × (|Σ t| + √Σt²)`. The partial sums of a
///   k-term sum reach about `|Σ t|` (the drift of terms of one sign) plus `√Σt²` (the random walk
///   of terms of either sign), and each rounded addition errs by at most u_acc of them;
/// - epilogue: `2 × u_epi × (|alpha Σ t| + |beta c0|)`, `alpha * acc + beta * c` computed in f32
///   (in the accumulator's type when that is narrower: f16 HGEMM);
/// - output: `u_out × (|want| + the above) + half the output type's smallest subnormal`, one
///   rounding to the output type.
pub(super) fn allowance(types: MatmulTypes, k: u64, alpha: f64, terms: &Terms, want: f64) -> f64 {
    let u_acc = types.accumulate.unit_roundoff();
    let reach = terms.sum.abs() + terms.squares.sqrt();
    let accumulation = alpha.abs() * rounded_adds(k) * u_acc * reach;
    let u_epi = u_acc.max(ElemType::F32.unit_roundoff());
    let epilogue = 2.0 * u_epi * ((alpha * terms.sum).abs() + terms.c.abs());
    let before_store = accumulation + epilogue;
    let store =
        types.out.unit_roundoff() * (want.abs() + before_store) + smallest_gap(types.out) / 2.0;
    // The float64 reference's own error: k roundings of 2^-53 of Σ|t|, far below the rest.
    let reference = k as f64 * f64::EPSILON * (alpha.abs() * terms.abs + terms.c.abs());
    before_store + store + reference
}

/// The gap between 0 and the smallest positive value of a float type.
fn smallest_gap(elem: ElemType) -> f64 {
    elem.float_format()
        .map_or(0.0, |(mantissa, min_exp)| 2f64.powi(min_exp - mantissa))
}

/// An exact value beyond the output type's range: a correct kernel stores the largest finite
/// value (fp8's satfinite conversions) or an infinity (f16's, bf16's round to nearest), of the
/// same sign.
pub(super) fn saturated_as_allowed(out: ElemType, want: f64, allowed: f64, got: f64) -> bool {
    let max = out.max_finite();
    out.is_float()
        && want.abs() - allowed > max
        && got.signum() == want.signum()
        && (got.abs() == max || got.is_infinite())
}

/// The floats a tensor core multiplies exactly in f32.
fn is_narrow_float(elem: ElemType) -> bool {
    matches!(
        elem,
        ElemType::F16 | ElemType::Bf16 | ElemType::E4m3 | ElemType::E5m2
    )
}

fn is_fp8(elem: ElemType) -> bool {
    matches!(elem, ElemType::E4m3 | ElemType::E5m2)
}

/// The contracts a matmul check knows, for messages.
pub const MATMUL_CONTRACTS: &str = "f32·f32→f32 and f64·f64→f64; f16·f16, bf16·bf16 or fp8 (e4m3, e5m2, either order) → f32, f16 or bf16 (fp8 inputs → e4m3 or e5m2 too); i8·i8→i32";

impl MatmulTypes {
    /// Whether the check knows this contract, or what is wrong with it.
    pub fn supported(&self) -> Result<(), String> {
        let MatmulTypes { a, b, out, .. } = *self;
        let ok = if matches!(a, ElemType::F32 | ElemType::F64) {
            a == b && b == out
        } else if is_narrow_float(a) && is_narrow_float(b) {
            (a == b || (is_fp8(a) && is_fp8(b)))
                && (matches!(out, ElemType::F32 | ElemType::F16 | ElemType::Bf16)
                    || (is_fp8(a) && is_fp8(out)))
        } else {
            a == ElemType::I8 && b == ElemType::I8 && out == ElemType::I32
        };
        if ok {
            Ok(())
        } else {
            Err(format!(
                "a matmul check of {}·{}→{} is not a contract it knows",
                a.name(),
                b.name(),
                out.name()
            ))
        }
    }
}
