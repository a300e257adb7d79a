//! The row-wise checks against simulated f32 kernels: correct ones pass in f32 and bf16, and the
//! plausible bugs (overflow without the row's maximum, a dropped chunk of a row, the mean instead
//! of the root mean square, gamma or beta forgotten, a row left unwritten) fail.

use super::*;
use crate::verify::data::from_value;
use crate::verify::elem::Init;

const EPS: f64 = 1e-5;

/// What a simulated kernel does differently from a correct one.
#[derive(Clone, Copy, PartialEq)]
enum Bug {
    None,
    /// Softmax: exp(x) without subtracting the row's maximum.
    NoMax,
    /// Softmax: the sum taken with the row's maximum, the outputs with the first half's.
    HalfMax,
    /// The statistics over the first 7/8 of the row only.
    DroppedChunk,
    /// Rmsnorm: divided by the standard deviation (centred), not the root mean square.
    Centred,
    /// Rmsnorm: divided by mean |x|.
    MeanAbs,
    NoGamma,
    NoBeta,
    /// Row 1 never written (still poison).
    RowUnwritten,
}

/// An f32 kernel's output, rounded to `out` (sequential f32 sums: the worst order for rounding).
fn simulate(
    op: RowOp,
    x: &[f32],
    g: &[f32],
    b: &[f32],
    cols: usize,
    out: ElemType,
    bug: Bug,
) -> HostData {
    let mut y = vec![f64::NAN; x.len()];
    for (r, (row, yr)) in x.chunks(cols).zip(y.chunks_mut(cols)).enumerate() {
        if bug == Bug::RowUnwritten && r == 1 {
            continue;
        }
        let stats_len = if bug == Bug::DroppedChunk {
            cols - cols / 8
        } else {
            cols
        };
        let stats = &row[..stats_len];
        let n = stats_len as f32;
        let gamma = |j: usize| if bug == Bug::NoGamma { 1.0 } else { g[j] };
        let beta = |j: usize| if bug == Bug::NoBeta { 0.0 } else { b[j] };
        match op {
            RowOp::Softmax { scale } => {
                let m = match bug {
                    Bug::NoMax => 0.0,
                    _ => stats.iter().copied().fold(f32::MIN, f32::max),
                };
                let m_out = match bug {
                    Bug::HalfMax => stats[..cols / 2].iter().copied().fold(f32::MIN, f32::max),
                    _ => m,
                };
                let k = (scale * std::f64::consts::LOG2_E) as f32;
                let inv = 1.0 / stats.iter().map(|&v| ((v - m) * k).exp2()).sum::<f32>();
                for (o, &v) in yr.iter_mut().zip(row) {
                    *o = (((v - m_out) * k).exp2() * inv) as f64;
                }
            }
            RowOp::Layernorm { eps } => {
                let mean = stats.iter().sum::<f32>() / n;
                let var = stats.iter().map(|v| (v - mean) * (v - mean)).sum::<f32>() / n;
                let rstd = 1.0 / (var + eps as f32).sqrt();
                for (j, (o, &v)) in yr.iter_mut().zip(row).enumerate() {
                    *o = ((v - mean) * rstd * gamma(j) + beta(j)) as f64;
                }
            }
            RowOp::Rmsnorm { eps } => {
                let mean = stats.iter().sum::<f32>() / n;
                let ms = match bug {
                    Bug::Centred => stats.iter().map(|v| (v - mean) * (v - mean)).sum::<f32>() / n,
                    Bug::MeanAbs => (stats.iter().map(|v| v.abs()).sum::<f32>() / n).powi(2),
                    _ => stats.iter().map(|v| v * v).sum::<f32>() / n,
                };
                let rstd = 1.0 / (ms + eps as f32).sqrt();
                let shift = if bug == Bug::Centred { mean } else { 0.0 };
                for (j, (o, &v)) in yr.iter_mut().zip(row).enumerate() {
                    *o = ((v - shift) * rstd * gamma(j)) as f64;
                }
            }
        }
    }
    let mut d = HostData::init(out, y.len(), Init::Poison, 0);
    if let HostData::W4(w) = &mut d {
        for (o, v) in w.iter_mut().zip(&y) {
            if !v.is_nan() {
                *o = from_value(ElemType::F32, *v) as u32;
            }
        }
    } else if let HostData::W2(w) = &mut d {
        for (o, v) in w.iter_mut().zip(&y) {
            if !v.is_nan() {
                *o = from_value(out, *v) as u16;
            }
        }
    }
    d
}

/// Random f32 values in [-1, 1) (times `scale`, plus `shift`), and the same numbers in `elem`.
fn inputs(len: usize, seed: u64, elem: ElemType, scale: f32, shift: f32) -> (HostData, Vec<f32>) {
    let HostData::W4(w) = HostData::init(ElemType::F32, len, Init::Random, seed) else {
        panic!("f32 data is 4-byte words")
    };
    let f: Vec<f32> = w
        .iter()
        .map(|&b| f32::from_bits(b) * scale + shift)
        .collect();
    let exact =
        HostData::W4(f.iter().map(|v| v.to_bits()).collect()).converted(ElemType::F32, elem);
    // The kernel reads the input's own (possibly bf16-rounded) values.
    let read = (0..len)
        .map(|i| value(elem, exact.word(i)) as f32)
        .collect();
    (exact, read)
}

/// Runs `op` over a rows x cols input (in `elem`, out in `out`) through a simulated kernel with `bug`.
fn run(
    op: RowOp,
    rows: usize,
    cols: usize,
    elem: ElemType,
    out: ElemType,
    bug: Bug,
    range: (f32, f32),
) -> Correctness {
    let (x, xf) = inputs(rows * cols, 3, elem, range.0, range.1);
    let (g, gf) = inputs(cols, 4, elem, 1.0, 0.0);
    let (b, bf) = inputs(cols, 5, elem, 1.0, 0.0);
    let y = simulate(op, &xf, &gf, &bf, cols, out, bug);
    let norm = !matches!(op, RowOp::Softmax { .. });
    let check = RowwiseCheck {
        op,
        rows,
        cols,
        input: &x,
        gamma: norm.then_some(&g),
        beta: matches!(op, RowOp::Layernorm { .. }).then_some(&b),
        tolerance: None,
    };
    check_rowwise(elem, out, &check, &y)
}

const OPS: [RowOp; 3] = [
    RowOp::Softmax { scale: 1.0 },
    RowOp::Layernorm { eps: EPS },
    RowOp::Rmsnorm { eps: EPS },
];
const TYPES: [ElemType; 2] = [ElemType::F32, ElemType::Bf16];

#[test]
fn correct_f32_kernels_pass_in_f32_and_bf16_at_short_and_long_rows() {
    for op in OPS {
        for elem in TYPES {
            for (rows, cols) in [(8, 1024), (2, 131072)] {
                let o = run(op, rows, cols, elem, elem, Bug::None, (1.0, 0.0));
                assert!(o.passed, "{op:?} {elem:?} {rows}x{cols}: {o:?}");
                assert_eq!(o.checked, (rows * cols) as u64);
                // The f32 model leaves room: the worst element uses well under its allowance
                // (bf16's share, half a unit of the output's last place, is exact and may be used up).
                if elem == ElemType::F32 {
                    assert!(o.rel_error < 0.5, "{op:?}: {}", o.rel_error);
                }
            }
        }
    }
}

#[test]
fn softmax_of_large_values_passes_with_the_max_and_overflows_without_it() {
    let op = RowOp::Softmax { scale: 1.0 };
    // Inputs in [60, 100): exp(100) is past f32's largest value.
    let ok = run(
        op,
        4,
        1024,
        ElemType::F32,
        ElemType::F32,
        Bug::None,
        (20.0, 80.0),
    );
    assert!(ok.passed, "{ok:?}");
    for bug in [Bug::NoMax, Bug::HalfMax] {
        let o = run(op, 4, 1024, ElemType::F32, ElemType::F32, bug, (20.0, 80.0));
        assert!(!o.passed && o.mismatches > 0, "{o:?}");
    }
    // A larger scale (attention's temperature) overflows without the max at inputs in [-1, 1).
    let hot = RowOp::Softmax { scale: 100.0 };
    assert!(
        run(
            hot,
            4,
            1024,
            ElemType::F32,
            ElemType::F32,
            Bug::None,
            (1.0, 0.0)
        )
        .passed
    );
    assert!(
        !run(
            hot,
            4,
            1024,
            ElemType::F32,
            ElemType::F32,
            Bug::NoMax,
            (1.0, 0.0)
        )
        .passed
    );
}

#[test]
fn a_dropped_chunk_or_an_unwritten_row_fails_every_op() {
    for op in OPS {
        for elem in TYPES {
            let o = run(op, 4, 4096, elem, elem, Bug::DroppedChunk, (1.0, 0.0));
            assert!(!o.passed, "{op:?} {elem:?} dropped chunk passed");
            let o = run(op, 4, 1024, elem, elem, Bug::RowUnwritten, (1.0, 0.0));
            assert!(!o.passed && o.unwritten == 1024, "{op:?} {elem:?}: {o:?}");
            assert!(o.first_mismatch.unwrap().starts_with("y[1, 0]"));
        }
    }
}

#[test]
fn norms_without_gamma_or_beta_or_with_the_wrong_statistic_fail() {
    for elem in TYPES {
        let ln = RowOp::Layernorm { eps: EPS };
        let rms = RowOp::Rmsnorm { eps: EPS };
        for (op, bug) in [
            (ln, Bug::NoGamma),
            (ln, Bug::NoBeta),
            (rms, Bug::NoGamma),
            (rms, Bug::Centred),
            (rms, Bug::MeanAbs),
        ] {
            let o = run(op, 4, 4096, elem, elem, bug, (1.0, 0.0));
            assert!(!o.passed && o.mismatches > 100, "{op:?} {elem:?}: {o:?}");
        }
        // Inputs far from zero: layernorm's centring matters, rmsnorm's mean is the whole story.
        assert!(run(ln, 4, 4096, elem, elem, Bug::None, (1.0, 3.0)).passed);
        assert!(!run(rms, 4, 4096, elem, elem, Bug::Centred, (1.0, 3.0)).passed);
    }
}

#[test]
fn an_explicit_tolerance_replaces_the_model() {
    let (x, xf) = inputs(4 * 256, 3, ElemType::F32, 1.0, 0.0);
    let op = RowOp::Softmax { scale: 1.0 };
    let mut y = simulate(op, &xf, &[], &[], 256, ElemType::F32, Bug::None);
    // One element off by 1%: fails the model and a 1e-3 tolerance, passes a 2e-2 one.
    if let HostData::W4(w) = &mut y {
        w[300] = (f32::from_bits(w[300]) * 1.01).to_bits();
    }
    let mut check = RowwiseCheck {
        op,
        rows: 4,
        cols: 256,
        input: &x,
        gamma: None,
        beta: None,
        tolerance: None,
    };
    let o = check_rowwise(ElemType::F32, ElemType::F32, &check, &y);
    assert_eq!((o.passed, o.mismatches), (false, 1));
    assert!(o.first_mismatch.unwrap().starts_with("y[1, 44]"));
    check.tolerance = Some(1e-3);
    assert!(!check_rowwise(ElemType::F32, ElemType::F32, &check, &y).passed);
    check.tolerance = Some(2e-2);
    assert!(check_rowwise(ElemType::F32, ElemType::F32, &check, &y).passed);
}
