//! GPU matrix-product kernels simulated on the CPU, right and wrong, and what the matmul check's
//! default tolerance says of each (tests only): f32 accumulation in any order and tensor cores'
//! truncating 16-deep steps pass; zeros, half the k terms, half the rows and f16 accumulation
//! where the contract is f32 fail.

use super::check_matmul;
use super::matmul_model::MatmulTypes;
use crate::verify::data::{HostData, from_value, value};
use crate::verify::elem::{ElemType, Init};
use crate::verify::shape::MatmulShape;

use ElemType::*;

/// How a simulated kernel sums and stores C[i][j].
#[derive(Debug, Clone, Copy, PartialEq)]
enum Kernel {
    /// f32 accumulator, p = 0..k in order, rounding to nearest (a SIMT kernel).
    F32InOrder,
    /// k split in 4 slices summed separately in f32, then added (split-k, any order).
    F32SplitK,
    /// Tensor cores: each `step`-deep MMA's products summed exactly, then added into the f32
    /// accumulator rounding toward zero.
    F32TensorCore { step: u64 },
    /// f16 accumulator, p in order, rounding to nearest.
    F16InOrder,
    /// Tensor cores accumulating in f16: exact 16-deep steps added into an f16 accumulator.
    F16TensorCore,
    /// Sums only the first half of k.
    HalfK,
    /// Writes nothing (the output stays zero).
    Zeros,
    /// The lower half of the rows never written (zero).
    HalfRows,
    /// The lower half of the rows holds the row above's values (an off-by-one row index).
    ShiftedRows,
}

/// Adds `x` to an f32 accumulator rounding toward zero, as tensor cores do.
fn add_toward_zero(acc: f32, x: f64) -> f32 {
    let exact = acc as f64 + x;
    let near = exact as f32;
    if (near as f64).abs() > exact.abs() {
        f32::from_bits(near.to_bits() - 1)
    } else {
        near
    }
}

fn add_f16(acc: f32, x: f64) -> f32 {
    half::f16::from_f64(acc as f64 + x).to_f32()
}

/// What `kernel` computes at C[i][j] before the epilogue (accumulator values held in an f32).
fn accumulate(kernel: Kernel, product: &dyn Fn(u64) -> f64, k: u64) -> f32 {
    let blocked = |step: u64, add: fn(f32, f64) -> f32| {
        (0..k.div_ceil(step)).fold(0.0f32, |acc, s| {
            let exact: f64 = (s * step..((s + 1) * step).min(k)).map(product).sum();
            add(acc, exact)
        })
    };
    let in_order =
        |range: std::ops::Range<u64>| range.fold(0.0f32, |acc, p| acc + product(p) as f32);
    match kernel {
        Kernel::F32InOrder | Kernel::HalfRows | Kernel::ShiftedRows => in_order(0..k),
        Kernel::F32SplitK => {
            let q = k.div_ceil(4);
            (0..4)
                .map(|s| in_order(s * q..((s + 1) * q).min(k)))
                .rev()
                .sum()
        }
        Kernel::F32TensorCore { step } => blocked(step, add_toward_zero),
        Kernel::F16InOrder => (0..k).fold(0.0f32, |acc, p| add_f16(acc, product(p))),
        Kernel::F16TensorCore => blocked(16, add_f16),
        Kernel::HalfK => in_order(0..k / 2),
        Kernel::Zeros => 0.0,
    }
}

/// C as `kernel` leaves it: `alpha * acc + beta * c0` in f32, rounded once to the output type.
fn run(
    kernel: Kernel,
    types: MatmulTypes,
    (a, b, c0): (&HostData, &HostData, &HostData),
    s: &MatmulShape,
) -> HostData {
    let mut out = HostData::zeroed(types.out, (s.m * s.n) as usize);
    for i in 0..s.m {
        let row = if kernel == Kernel::ShiftedRows && i >= s.m / 2 {
            i - 1
        } else {
            i
        };
        if kernel == Kernel::Zeros || (kernel == Kernel::HalfRows && i >= s.m / 2) {
            continue;
        }
        for j in 0..s.n {
            let product = |p: u64| {
                value(types.a, a.word(s.a_index(row, p) as usize))
                    * value(types.b, b.word(s.b_index(p, j) as usize))
            };
            let acc = accumulate(kernel, &product, s.k);
            let c = value(types.out, c0.word((i * s.n + j) as usize)) as f32;
            let stored = s.alpha as f32 * acc + s.beta as f32 * c;
            set(
                &mut out,
                (i * s.n + j) as usize,
                from_value(types.out, stored as f64),
            );
        }
    }
    out
}

fn set(out: &mut HostData, at: usize, bits: u64) {
    match out {
        HostData::W1(v) => v[at] = bits as u8,
        HostData::W2(v) => v[at] = bits as u16,
        HostData::W4(v) => v[at] = bits as u32,
        HostData::W8(v) => v[at] = bits,
    }
}

/// A product of random inputs in [-1, 1) (magnitudes only where `same_sign`), and C0 random.
struct Case {
    types: MatmulTypes,
    shape: MatmulShape,
    a: HostData,
    b: HostData,
    c0: HostData,
}

impl Case {
    fn new(types: MatmulTypes, k: u64, (alpha, beta): (f64, f64), same_sign: bool) -> Case {
        let shape = MatmulShape {
            m: 8,
            n: 12,
            k,
            alpha,
            beta,
            trans_a: k.is_multiple_of(2),
            trans_b: false,
        };
        let draw = |elem: ElemType, len: u64, seed: u64| {
            let d = HostData::init(elem, len as usize, Init::Random, seed ^ k);
            if same_sign {
                let abs: Vec<f64> = (0..d.len()).map(|i| value(elem, d.word(i)).abs()).collect();
                let mut out = HostData::zeroed(elem, abs.len());
                abs.iter()
                    .enumerate()
                    .for_each(|(i, &x)| set(&mut out, i, from_value(elem, x)));
                out
            } else {
                d
            }
        };
        Case {
            types,
            a: draw(types.a, shape.m * k, 1),
            b: draw(types.b, k * shape.n, 2),
            c0: HostData::init(types.out, (shape.m * shape.n) as usize, Init::Random, 3),
            shape,
        }
    }

    /// Whether the check passes what `kernel` computes (with the check's message on failure).
    fn check(&self, kernel: Kernel) -> (bool, String) {
        let out = run(
            kernel,
            self.types,
            (&self.a, &self.b, &self.c0),
            &self.shape,
        );
        let c0 = (self.shape.beta != 0.0).then_some(&self.c0);
        let o = check_matmul(self.types, &self.a, &self.b, c0, &out, &self.shape, 0.0);
        assert_eq!(o.checked, self.shape.m * self.shape.n);
        (
            o.passed,
            format!(
                "{} k = {} {kernel:?}: {o:?}",
                self.types.label(),
                self.shape.k
            ),
        )
    }
}

/// Every float contract the check knows with narrow inputs, f32 accumulate.
fn float_contracts() -> Vec<MatmulTypes> {
    [
        (F16, F16, F32),
        (F16, F16, F16),
        (F16, F16, Bf16),
        (Bf16, Bf16, F32),
        (Bf16, Bf16, Bf16),
        (E4m3, E4m3, F32),
        (E4m3, E5m2, Bf16),
        (E5m2, E5m2, F16),
        (E4m3, E4m3, E4m3),
    ]
    .into_iter()
    .map(|(a, b, out)| MatmulTypes::new(a, b, out, None))
    .collect()
}

const KS: [u64; 4] = [16, 100, 1024, 4096];
const SCALINGS: [(f64, f64); 2] = [(1.0, 0.0), (1.5, -0.5)];

#[test]
fn f32_accumulation_in_any_order_rounded_once_to_the_output_passes() {
    for types in float_contracts() {
        assert_eq!(types.accumulate, F32);
        let step = if matches!(types.a, E4m3 | E5m2) {
            32
        } else {
            16
        };
        for k in KS {
            for scaling in SCALINGS {
                let case = Case::new(types, k, scaling, false);
                for kernel in [
                    Kernel::F32InOrder,
                    Kernel::F32SplitK,
                    Kernel::F32TensorCore { step },
                ] {
                    let (passed, what) = case.check(kernel);
                    assert!(passed, "{what}");
                }
            }
        }
    }
}

#[test]
fn an_output_of_zeros_fails() {
    for types in float_contracts() {
        for k in KS {
            let (passed, what) = Case::new(types, k, (1.0, 0.0), false).check(Kernel::Zeros);
            assert!(!passed, "{what}");
        }
    }
}

#[test]
fn an_output_of_half_the_k_terms_fails() {
    for types in float_contracts() {
        for k in KS {
            for scaling in SCALINGS {
                let (passed, what) = Case::new(types, k, scaling, false).check(Kernel::HalfK);
                assert!(!passed, "{what}");
            }
        }
    }
}

#[test]
fn half_of_the_rows_unwritten_or_from_the_wrong_row_fails() {
    for types in float_contracts() {
        for k in KS {
            let case = Case::new(types, k, (1.0, 0.0), false);
            for kernel in [Kernel::HalfRows, Kernel::ShiftedRows] {
                let (passed, what) = case.check(kernel);
                assert!(!passed, "{what}");
            }
        }
    }
}

#[test]
fn f16_accumulation_fails_an_f32_accumulate_contract_at_k_4096() {
    for (a, b, out) in [
        (F16, F16, F32),
        (F16, F16, F16),
        (Bf16, Bf16, F32),
        (E4m3, E4m3, F32),
        (E4m3, E5m2, F16),
    ] {
        let case = Case::new(MatmulTypes::new(a, b, out, None), 4096, (1.0, 0.0), false);
        for kernel in [Kernel::F16InOrder, Kernel::F16TensorCore] {
            let (passed, what) = case.check(kernel);
            assert!(!passed, "{what}");
            // The message says what was allowed, and how to declare f16 accumulation.
            assert!(
                what.contains("allowed")
                    && what.contains("(f32 accumulate) at k = 4096 rounded once"),
                "{what}"
            );
            assert_eq!(
                a == F16,
                what.contains("math = \\\"f16-tensor-f16acc\\\""),
                "{what}"
            );
        }
    }
}

#[test]
fn an_f16_accumulate_contract_passes_f16_accumulation_and_still_fails_zeros_and_half_k() {
    for out in [F16, F32] {
        let types = MatmulTypes::new(F16, F16, out, Some(F16));
        for k in KS {
            let case = Case::new(types, k, (1.0, 0.0), false);
            for kernel in [
                Kernel::F16InOrder,
                Kernel::F16TensorCore,
                Kernel::F32InOrder,
            ] {
                let (passed, what) = case.check(kernel);
                assert!(passed, "{what}");
            }
            for kernel in [Kernel::Zeros, Kernel::HalfK, Kernel::HalfRows] {
                let (passed, what) = case.check(kernel);
                assert!(!passed, "{what}");
            }
        }
    }
}

#[test]
fn inputs_of_one_sign_pass_truncating_tensor_cores_and_fail_f16_accumulation() {
    for types in [
        MatmulTypes::new(F16, F16, F32, None),
        MatmulTypes::new(Bf16, Bf16, Bf16, None),
        MatmulTypes::new(E4m3, E4m3, F16, None),
    ] {
        for k in KS {
            let case = Case::new(types, k, (1.0, 0.0), true);
            for kernel in [
                Kernel::F32InOrder,
                Kernel::F32SplitK,
                Kernel::F32TensorCore { step: 16 },
            ] {
                let (passed, what) = case.check(kernel);
                assert!(passed, "{what}");
            }
            for kernel in [Kernel::Zeros, Kernel::HalfK] {
                let (passed, what) = case.check(kernel);
                assert!(!passed, "{what}");
            }
        }
        let (passed, what) = Case::new(types, 4096, (1.0, 0.0), true).check(Kernel::F16InOrder);
        assert!(!passed, "{what}");
    }
}

#[test]
fn i8_products_into_i32_are_exact_and_wrap_at_32_bits() {
    let types = MatmulTypes::new(I8, I8, I32, None);
    assert!(types.is_integer() && types.accumulate == I32);
    // alpha = 40000: k = 4096 sums of up to 64 × 64 overflow i32, as the GPU's arithmetic does.
    for (k, scaling) in [
        (16, (1.0, 0.0)),
        (4096, (1.0, 0.0)),
        (4096, (3.0, -2.0)),
        (4096, (40000.0, 1.0)),
    ] {
        let shape = MatmulShape {
            m: 8,
            n: 12,
            k,
            alpha: scaling.0,
            beta: scaling.1,
            trans_a: false,
            trans_b: true,
        };
        let a = HostData::init(I8, (shape.m * k) as usize, Init::Random, 4);
        let b = HostData::init(I8, (k * shape.n) as usize, Init::Random, 5);
        let c0 = HostData::init(I32, (shape.m * shape.n) as usize, Init::Random, 6);
        let out: Vec<u32> = (0..shape.m * shape.n)
            .map(|ij| {
                let (i, j) = (ij / shape.n, ij % shape.n);
                let acc = (0..k).fold(0i32, |acc, p| {
                    let x = a.word(shape.a_index(i, p) as usize) as u8 as i8 as i32;
                    let y = b.word(shape.b_index(p, j) as usize) as u8 as i8 as i32;
                    acc.wrapping_add(x * y)
                });
                let c = c0.word(ij as usize) as u32 as i32;
                (scaling.0 as i32)
                    .wrapping_mul(acc)
                    .wrapping_add((scaling.1 as i32).wrapping_mul(c)) as u32
            })
            .collect();
        let c = (scaling.1 != 0.0).then_some(&c0);
        let mut got = HostData::W4(out);
        let o = check_matmul(types, &a, &b, c, &got, &shape, 0.0);
        assert!(o.passed, "k = {k} {scaling:?}: {o:?}");
        let HostData::W4(v) = &mut got else {
            unreachable!()
        };
        v[17] = v[17].wrapping_add(1);
        let o = check_matmul(types, &a, &b, c, &got, &shape, 0.0);
        assert!(
            !o.passed
                && o.mismatches == 1
                && o.first_mismatch.as_deref().unwrap().starts_with("C[1][5]"),
            "{o:?}"
        );
    }
}

#[test]
fn an_exact_value_beyond_the_output_range_passes_saturated_or_infinite() {
    // 16 × 16 × 4 = 1024: past e4m3's largest finite (448), inside f16's.
    let shape = MatmulShape {
        m: 1,
        n: 1,
        k: 4,
        alpha: 1.0,
        beta: 0.0,
        trans_a: false,
        trans_b: false,
    };
    let sixteens = HostData::W1(vec![from_value(E4m3, 16.0) as u8; 4]);
    let passes = |out: ElemType, bits: u64| {
        let mut got = HostData::zeroed(out, 1);
        set(&mut got, 0, bits);
        check_matmul(
            MatmulTypes::new(E4m3, E4m3, out, None),
            &sixteens,
            &sixteens,
            None,
            &got,
            &shape,
            0.0,
        )
        .passed
    };
    assert!(
        passes(E4m3, from_value(E4m3, 448.0)),
        "satfinite stores the largest finite"
    );
    assert_eq!(
        from_value(E4m3, 1024.0),
        from_value(E4m3, 448.0),
        "the float8 crate saturates too"
    );
    assert!(!passes(E4m3, from_value(E4m3, -448.0)));
    assert!(!passes(E4m3, from_value(E4m3, 416.0)));
    assert!(passes(F16, from_value(F16, 1024.0)));
    assert!(!passes(F16, from_value(F16, 1025.0)));
    assert!(!passes(F16, 0x7C00), "f16 holds 1024: an infinity is wrong");
}

/// The largest `|got - want| / allowance` over C: below 1 passes.
fn worst_use_of_the_allowance(case: &Case, kernel: Kernel) -> f64 {
    let s = &case.shape;
    let out = run(kernel, case.types, (&case.a, &case.b, &case.c0), s);
    let c0 = (s.beta != 0.0).then_some(&case.c0);
    (0..s.m * s.n)
        .map(|ij| {
            let terms =
                super::matmul::terms_at(case.types, &case.a, &case.b, c0, s, (ij / s.n, ij % s.n));
            let want = s.alpha * terms.sum + terms.c;
            let allowed = super::matmul_model::allowance(case.types, s.k, s.alpha, &terms, want);
            (value(case.types.out, out.word(ij as usize)) - want).abs() / allowed
        })
        .fold(0.0, f64::max)
}

/// How much of the allowance right kernels use and wrong ones exceed it by, at k = 4096: the
/// accumulation's share is a small part of it (an f32 output shows it alone), and every wrong
/// kernel errs by many times the whole (by 2-3 times under an f16 accumulate contract, whose own
/// rounding is that coarse at k = 4096).
#[test]
fn the_model_leaves_wide_margins_both_ways_at_k_4096() {
    let right = [
        Kernel::F32InOrder,
        Kernel::F32SplitK,
        Kernel::F32TensorCore { step: 16 },
    ];
    let wrong = [
        Kernel::F16InOrder,
        Kernel::F16TensorCore,
        Kernel::HalfK,
        Kernel::Zeros,
    ];
    for (types, same_sign, right_below, wrong_above) in [
        (MatmulTypes::new(F16, F16, F32, None), false, 0.25, 50.0),
        (MatmulTypes::new(F16, F16, F32, None), true, 0.25, 50.0),
        (MatmulTypes::new(E4m3, E4m3, F32, None), false, 0.25, 50.0),
        (MatmulTypes::new(F16, F16, F16, None), false, 1.0, 10.0),
        (MatmulTypes::new(Bf16, Bf16, Bf16, None), false, 1.0, 5.0),
    ] {
        let case = Case::new(types, 4096, (1.0, 0.0), same_sign);
        for kernel in right {
            let used = worst_use_of_the_allowance(&case, kernel);
            assert!(used < right_below, "{} {kernel:?}: {used}", types.label());
        }
        for kernel in wrong {
            let used = worst_use_of_the_allowance(&case, kernel);
            assert!(used > wrong_above, "{} {kernel:?}: {used}", types.label());
        }
    }
    let f16acc = Case::new(
        MatmulTypes::new(F16, F16, F16, Some(F16)),
        4096,
        (1.0, 0.0),
        false,
    );
    for kernel in [Kernel::F16InOrder, Kernel::F16TensorCore] {
        assert!(
            worst_use_of_the_allowance(&f16acc, kernel) < 0.1,
            "{kernel:?}"
        );
    }
    for kernel in [Kernel::HalfK, Kernel::Zeros] {
        assert!(
            worst_use_of_the_allowance(&f16acc, kernel) > 1.5,
            "{kernel:?}"
        );
    }
}
