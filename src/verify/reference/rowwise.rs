//! Row-wise operations of a rows x cols row-major matrix: softmax, layernorm and rmsnorm, computed
//! in float64 from the inputs' exact values and compared element by element within the allowance
//! of f32 arithmetic (docs/suite-format.md, "Row-wise tolerance").
//!
//! A correct kernel computes in f32 whatever its input and output types: its sums over a row
//! round at each addition, its exp and rsqrt are approximate (the MUFU unit: about 2^-22
//! relative), and it rounds once into the output type. The allowance bounds each of these at the
//! magnitudes the row really has, so it stays far below what a kernel that drops part of a row,
//! forgets gamma or beta, normalises by the mean instead of the root mean square, or overflows
//! without subtracting the row's maximum gets wrong.

use super::tally::{Tally, parallel_parts};
use crate::verify::correctness::Correctness;
use crate::verify::data::{HostData, value};
use crate::verify::elem::ElemType;

/// f32's unit roundoff: the accumulation type of every row-wise kernel.
const U_ACC: f64 = 1.0 / (1u64 << 24) as f64;
/// The smallest normal f32 (and bf16): results below it may be flushed to zero.
const TINY: f64 = 1.175_494_350_822_287_5e-38;

/// Which row-wise operation, with its scalar.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum RowOp {
    /// `y = softmax(scale * x)` along each row (scale > 0).
    Softmax { scale: f64 },
    /// `y = (x - mean) / sqrt(var + eps) * gamma + beta` (biased variance; gamma 1, beta 0 when absent).
    Layernorm { eps: f64 },
    /// `y = x / sqrt(mean(x^2) + eps) * gamma`.
    Rmsnorm { eps: f64 },
}

/// One row-wise check: the op, the matrix's shape, the input and the optional per-column
/// gamma and beta (of the input's type), and an explicit tolerance (None: the f32 model).
#[derive(Debug, Clone, Copy)]
pub struct RowwiseCheck<'a> {
    pub op: RowOp,
    pub rows: usize,
    pub cols: usize,
    pub input: &'a HostData,
    pub gamma: Option<&'a HostData>,
    pub beta: Option<&'a HostData>,
    pub tolerance: Option<f64>,
}

/// The allowance's accumulation share: min(n, 4√n) + 8 roundings of f32 over a sum of n terms
/// (random-sign rounding errors grow as √n; n is the worst case of any order of adds).
fn sum_roundings(n: usize) -> f64 {
    let n = n as f64;
    n.min(4.0 * n.sqrt()) + 8.0
}

/// `out` against the row-wise op of the input: every element of the first rows x cols, each
/// within its allowance (see the module's note) or, with an explicit tolerance, within
/// tolerance x its magnitude. `input_elem`: the input's (and gamma's and beta's) type; `elem`: the output's.
pub fn check_rowwise(
    input_elem: ElemType,
    elem: ElemType,
    c: &RowwiseCheck,
    out: &HostData,
) -> Correctness {
    let parts = parallel_parts(c.rows, |lo, hi| {
        let (mut t, mut worst) = (Tally::new(elem), 0.0f64);
        let mut row = vec![0.0f64; c.cols];
        for r in lo..hi {
            for (j, x) in row.iter_mut().enumerate() {
                *x = value(input_elem, c.input.word(r * c.cols + j));
            }
            let per_col = |d: Option<&HostData>, j: usize, default: f64| {
                d.map_or(default, |d| value(input_elem, d.word(j)))
            };
            let expected = Expected::of_row(c.op, &row);
            for (j, &x) in row.iter().enumerate() {
                let (gamma, beta) = (per_col(c.gamma, j, 1.0), per_col(c.beta, j, 0.0));
                let (want, model, magnitude) = expected.element(x, gamma, beta);
                let out_u = elem.epsilon() / 2.0;
                let allowance = match c.tolerance {
                    Some(tol) => tol * magnitude + TINY,
                    None => 2.0 * model + out_u * want.abs() + 2.0 * TINY,
                };
                let got_bits = out.word(r * c.cols + j);
                let got = value(elem, got_bits);
                let err = (got - want).abs() / allowance;
                let at = || {
                    format!(
                        "y[{r}, {j}]: got {got} want {want} (error {:.2e}, allowance {allowance:.2e})",
                        (got - want).abs()
                    )
                };
                if let Some(e) = t.within(err, 1.0, got_bits, at) {
                    worst = worst.max(e);
                }
            }
        }
        (t, worst)
    });
    super::tally::merged_with_worst(elem, parts)
}

/// A row's exact statistics and the error bounds of an f32 kernel's.
enum Expected {
    Softmax {
        scale: f64,
        max: f64,
        sum: f64,
        /// The sum's relative error: its roundings and the exp errors of its terms.
        sum_rel: f64,
    },
    Norm {
        /// Subtracted before scaling: the mean (layernorm) or 0 (rmsnorm).
        center: f64,
        rstd: f64,
        /// Absolute error of an f32 kernel's mean.
        center_err: f64,
        /// Relative error of an f32 kernel's rstd.
        rstd_rel: f64,
    },
}

impl Expected {
    fn of_row(op: RowOp, row: &[f64]) -> Expected {
        let n = row.len().max(1);
        let acc = sum_roundings(n) * U_ACC;
        match op {
            RowOp::Softmax { scale } => {
                let max = row.iter().copied().fold(f64::NEG_INFINITY, f64::max);
                let (mut sum, mut weighted) = (0.0, 0.0);
                for &x in row {
                    let t = scale * (x - max);
                    let e = t.exp();
                    sum += e;
                    weighted += e * exp_rel(t);
                }
                Expected::Softmax {
                    scale,
                    max,
                    sum,
                    sum_rel: acc + weighted / sum,
                }
            }
            RowOp::Layernorm { eps } => {
                let mean = row.iter().sum::<f64>() / n as f64;
                let var = row.iter().map(|x| (x - mean) * (x - mean)).sum::<f64>() / n as f64;
                let abs_mean = row.iter().map(|x| x.abs()).sum::<f64>() / n as f64;
                // A one-pass variance from sums shifted by one of the row's elements loses up to
                // the spread from that element over the variance.
                let spread = row.iter().map(|x| (x - mean).abs()).fold(0.0, f64::max);
                let var_rel = acc * (1.0 + spread * spread / var.max(TINY)) + 4.0 * U_ACC;
                Expected::Norm {
                    center: mean,
                    rstd: 1.0 / (var + eps).sqrt(),
                    center_err: acc * abs_mean + U_ACC * mean.abs(),
                    rstd_rel: 0.5 * var_rel * var / (var + eps) + 4.0 * U_ACC,
                }
            }
            RowOp::Rmsnorm { eps } => {
                let ms = row.iter().map(|x| x * x).sum::<f64>() / n as f64;
                Expected::Norm {
                    center: 0.0,
                    rstd: 1.0 / (ms + eps).sqrt(),
                    center_err: 0.0,
                    rstd_rel: 0.5 * (acc + 4.0 * U_ACC) * ms / (ms + eps) + 4.0 * U_ACC,
                }
            }
        }
    }

    /// An element's exact value, the f32 kernel's error bound before the output's rounding, and
    /// its magnitude (what an explicit tolerance is relative to).
    fn element(&self, x: f64, gamma: f64, beta: f64) -> (f64, f64, f64) {
        match *self {
            Expected::Softmax {
                scale,
                max,
                sum,
                sum_rel,
            } => {
                let t = scale * (x - max);
                let want = t.exp() / sum;
                (want, want * (exp_rel(t) + sum_rel + 2.0 * U_ACC), want)
            }
            Expected::Norm {
                center,
                rstd,
                center_err,
                rstd_rel,
            } => {
                let normed = (x - center) * rstd;
                let want = normed * gamma + beta;
                let centered_err = rstd * (center_err + U_ACC * (x.abs() + center.abs()));
                let model = gamma.abs() * (centered_err + normed.abs() * rstd_rel)
                    + 3.0 * U_ACC * ((normed * gamma).abs() + beta.abs());
                (want, model, (normed * gamma).abs() + beta.abs())
            }
        }
    }
}

/// The relative error of an f32 kernel's exp(t): the rounding of its argument (|t| in units of
/// f32's roundoff, from (x - max) * scale * log2 e) and the approximate 2^x (2^-22).
fn exp_rel(t: f64) -> f64 {
    U_ACC * (4.0 * t.abs() + 8.0)
}

#[cfg(test)]
#[path = "rowwise_tests.rs"]
mod tests;
