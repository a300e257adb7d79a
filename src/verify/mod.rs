//! Correctness: what a variant's output must be (the spec), the buffer contents it starts from, the CPU references, and what a verification found (pure).
//!
//! "Correct" is the word of this module; "check" is the regression gate (`gpu-lab check`). The
//! manifest key and the record field keep their stored name, `check`, so older runs still read.

pub mod data;
pub mod reference;

use serde::{Deserialize, Serialize};

pub use data::HostData;
pub use reference::{
    Keep, MathFn, check_add, check_compact, check_copy, check_copy_mapped, check_function,
    check_histogram, check_matmul, check_same, check_scan, check_sort, check_sum, check_transpose,
};

/// Element type of a buffer.
#[derive(Debug, Clone, Copy, Deserialize, Serialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum ElemType {
    /// IEEE half (`__half`): 10 mantissa bits.
    #[serde(alias = "half")]
    F16,
    /// bfloat16 (`__nv_bfloat16`): float32's exponent, 7 mantissa bits.
    #[serde(alias = "bfloat16")]
    Bf16,
    F32,
    F64,
    I8,
    U8,
    I16,
    U16,
    I32,
    U32,
    I64,
    U64,
}

impl ElemType {
    pub fn size(self) -> usize {
        match self {
            ElemType::I8 | ElemType::U8 => 1,
            ElemType::F16 | ElemType::Bf16 | ElemType::I16 | ElemType::U16 => 2,
            ElemType::F32 | ElemType::I32 | ElemType::U32 => 4,
            ElemType::F64 | ElemType::I64 | ElemType::U64 => 8,
        }
    }
    pub fn is_float(self) -> bool {
        matches!(
            self,
            ElemType::F16 | ElemType::Bf16 | ElemType::F32 | ElemType::F64
        )
    }
    pub fn is_signed(self) -> bool {
        matches!(
            self,
            ElemType::I8 | ElemType::I16 | ElemType::I32 | ElemType::I64
        )
    }
    /// The gap between 1 and the next value of the type (0 for integers, which compare exactly).
    pub fn epsilon(self) -> f64 {
        match self {
            ElemType::F16 => 2f64.powi(-10),
            ElemType::Bf16 => 2f64.powi(-7),
            ElemType::F32 => f32::EPSILON as f64,
            ElemType::F64 => f64::EPSILON,
            _ => 0.0,
        }
    }
    /// The name a manifest uses (`f16`, `bf16`, `i8`, …).
    pub fn name(self) -> &'static str {
        match self {
            ElemType::F16 => "f16",
            ElemType::Bf16 => "bf16",
            ElemType::F32 => "f32",
            ElemType::F64 => "f64",
            ElemType::I8 => "i8",
            ElemType::U8 => "u8",
            ElemType::I16 => "i16",
            ElemType::U16 => "u16",
            ElemType::I32 => "i32",
            ElemType::U32 => "u32",
            ElemType::I64 => "i64",
            ElemType::U64 => "u64",
        }
    }
}

/// How a buffer starts.
#[derive(Debug, Clone, Copy, Deserialize, Serialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum Init {
    /// Seeded uniform random values (floats in [-1, 1), signed integers in [-1000, 1000), unsigned in [0, 2000)).
    Random,
    /// Seeded random whole numbers in [-1000, 1000) ([0, 2000) unsigned), floats included: float
    /// sums of them are exact (below 2^24), so a float reduction can be checked bit for bit.
    #[serde(rename = "random_int")]
    RandomInt,
    /// Every byte 0xFF: NaN for floats, -1 for signed integers; shows elements a kernel never wrote.
    Poison,
    Zero,
    /// 0, 1, 2, … (handy for index debugging; never for timing).
    Iota,
}

/// Where a copy reads and writes: `out[output_offset + i] == input[input_offset + i * input_stride]`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct CopyMap {
    pub input_offset: usize,
    pub input_stride: usize,
    pub output_offset: usize,
}

impl CopyMap {
    pub const IDENTITY: CopyMap = CopyMap {
        input_offset: 0,
        input_stride: 1,
        output_offset: 0,
    };
}

/// What a correct output is, with buffer indices resolved (the manifest's `check` table).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(tag = "op", rename_all = "snake_case")]
pub enum CorrectnessSpec {
    None,
    Copy {
        input: usize,
        output: usize,
        map: CopyMap,
    },
    Transpose {
        input: usize,
        output: usize,
        rows: u64,
        cols: u64,
    },
    /// `output` must equal another variant's `reference_output` (the same buffer unless the two
    /// variants write buffers of different types, say f16 against f32) on the same inputs.
    SameAs {
        output: usize,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        reference_output: Option<usize>,
        tolerance: f64,
    },
    /// The first `count` elements of `output` must add up to the sum of `input`.
    Sum {
        input: usize,
        output: usize,
        count: u64,
        input_stride: u64,
        tolerance: f64,
    },
    /// `output = alpha * op(a) * op(b) + beta * output` (row-major; see `MatmulShape`).
    Matmul {
        a: usize,
        b: usize,
        output: usize,
        shape: MatmulShape,
        tolerance: f64,
    },
    /// `output[0..count]` holds the inclusive or exclusive prefix sums of `input`.
    Scan {
        input: usize,
        output: usize,
        count: u64,
        exclusive: bool,
        tolerance: f64,
    },
    /// `output` holds the elements of `input` that `keep` keeps, in order, and nothing after them.
    Compact {
        input: usize,
        output: usize,
        keep: Keep,
    },
    /// `output` is `input` sorted ascending.
    Sort {
        input: usize,
        output: usize,
    },
    /// `output[b]` counts the elements of `input` equal to b modulo `bins`.
    Histogram {
        input: usize,
        output: usize,
        bins: u64,
    },
    /// `output[i] = f(input[i])` within `max_ulp` units in the last place (f in float64).
    Function {
        input: usize,
        output: usize,
        f: MathFn,
        max_ulp: f64,
    },
    /// `output[i] = a[i] + b[i]` for every element of `output` (a and b of one type, at least as
    /// long): integers exactly (wrapping at the output's width), floats bit for bit or within
    /// `tolerance` × (|a[i]| + |b[i]|).
    Add {
        a: usize,
        b: usize,
        output: usize,
        tolerance: f64,
    },
}

/// A matrix product `C = alpha * op(A) * op(B) + beta * C`, row-major: op(A) is m x k, op(B) k x n,
/// C m x n; A is stored k x m when `trans_a`, B n x k when `trans_b`. n = 1 is a matrix-vector product.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq)]
pub struct MatmulShape {
    pub m: u64,
    pub n: u64,
    pub k: u64,
    pub alpha: f64,
    pub beta: f64,
    pub trans_a: bool,
    pub trans_b: bool,
}

impl MatmulShape {
    /// Multiply-adds counted twice: the flops of the product.
    pub fn flops(&self) -> f64 {
        2.0 * self.m as f64 * self.n as f64 * self.k as f64
    }

    /// Row-major index of op(A)[i][p] in A's storage, and of op(B)[p][j] in B's.
    pub fn a_index(&self, i: u64, p: u64) -> u64 {
        if self.trans_a {
            p * self.m + i
        } else {
            i * self.k + p
        }
    }
    pub fn b_index(&self, p: u64, j: u64) -> u64 {
        if self.trans_b {
            j * self.k + p
        } else {
            p * self.n + j
        }
    }

    /// A short name: `4096x4096x4096` (and `, A^T`, `, B^T`).
    pub fn label(&self) -> String {
        format!(
            "{}x{}x{}{}{}",
            self.m,
            self.n,
            self.k,
            if self.trans_a { ", A^T" } else { "" },
            if self.trans_b { ", B^T" } else { "" }
        )
    }
}

impl CorrectnessSpec {
    /// The buffers a built-in reference reads the expected values from (they must start with data).
    pub fn inputs(&self) -> Vec<usize> {
        match self {
            CorrectnessSpec::Copy { input, .. }
            | CorrectnessSpec::Transpose { input, .. }
            | CorrectnessSpec::Sum { input, .. }
            | CorrectnessSpec::Scan { input, .. }
            | CorrectnessSpec::Compact { input, .. }
            | CorrectnessSpec::Sort { input, .. }
            | CorrectnessSpec::Histogram { input, .. }
            | CorrectnessSpec::Function { input, .. } => vec![*input],
            CorrectnessSpec::Matmul { a, b, .. } | CorrectnessSpec::Add { a, b, .. } => {
                vec![*a, *b]
            }
            CorrectnessSpec::None | CorrectnessSpec::SameAs { .. } => Vec::new(),
        }
    }

    /// Compares a variant's output with the built-in reference computed from the buffers' initial
    /// contents (`initial[i]`: buffer i before the run, `None` where it started poisoned or zero)
    /// (`None` for specs that have no built-in reference: `none` and `same_as`).
    /// `input_elem` is the element type of the check's input where it may differ from the output's
    /// (a histogram's, a function's, an add's a and b).
    pub fn against_inputs(
        &self,
        elem: ElemType,
        input_elem: ElemType,
        initial: &[Option<&HostData>],
        output: &HostData,
    ) -> Option<Correctness> {
        let input = |i: usize| initial.get(i).copied().flatten();
        Some(match self {
            CorrectnessSpec::Copy { input: i, map, .. } => {
                check_copy_mapped(elem, input(*i)?, output, *map)
            }
            CorrectnessSpec::Transpose {
                input: i,
                rows,
                cols,
                ..
            } => check_transpose(elem, input(*i)?, output, *rows as usize, *cols as usize),
            CorrectnessSpec::Sum {
                input: i,
                count,
                input_stride,
                tolerance,
                ..
            } => check_sum(
                elem,
                input(*i)?,
                output,
                *count as usize,
                *input_stride as usize,
                *tolerance,
            ),
            CorrectnessSpec::Matmul {
                a,
                b,
                output: o,
                shape,
                tolerance,
            } => check_matmul(
                elem,
                input(*a)?,
                input(*b)?,
                input(*o),
                output,
                shape,
                *tolerance,
            ),
            CorrectnessSpec::Scan {
                input: i,
                count,
                exclusive,
                tolerance,
                ..
            } => check_scan(
                elem,
                input(*i)?,
                output,
                *count as usize,
                *exclusive,
                *tolerance,
            ),
            CorrectnessSpec::Compact { input: i, keep, .. } => {
                check_compact(elem, input(*i)?, output, *keep)
            }
            CorrectnessSpec::Sort { input: i, .. } => check_sort(elem, input(*i)?, output),
            CorrectnessSpec::Histogram { input: i, bins, .. } => {
                check_histogram(input_elem, input(*i)?, elem, output, *bins as usize)
            }
            CorrectnessSpec::Function {
                input: i,
                f,
                max_ulp,
                ..
            } => check_function(input_elem, input(*i)?, elem, output, *f, *max_ulp),
            CorrectnessSpec::Add {
                a, b, tolerance, ..
            } => check_add(input_elem, input(*a)?, input(*b)?, elem, output, *tolerance),
            CorrectnessSpec::None | CorrectnessSpec::SameAs { .. } => return None,
        })
    }
}

/// What a correctness check found.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Correctness {
    pub passed: bool,
    /// Elements compared.
    pub checked: u64,
    pub mismatches: u64,
    /// Elements still holding the poison pattern: never written by the kernel.
    pub unwritten: u64,
    /// ‖out − ref‖₂ / ‖ref‖₂ for float comparisons with a tolerance; 0 for exact ones.
    pub rel_error: f64,
    pub first_mismatch: Option<String>,
    /// For float comparisons with a tolerance: max |out − ref| / max |ref| (the worst element on the output's scale).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_error: Option<f64>,
    /// The output type the errors are measured in, so a report can say them in units of its epsilon.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub elem: Option<ElemType>,
    /// For `function` checks: the largest error found, in units in the last place of the output type.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_ulp: Option<f64>,
}

impl Correctness {
    /// The relative L2 error in units of the output type's epsilon (`None` for exact comparisons).
    pub fn error_in_eps(&self) -> Option<f64> {
        let eps = self.elem?.epsilon();
        (eps > 0.0 && self.max_error.is_some()).then(|| self.rel_error / eps)
    }
}
