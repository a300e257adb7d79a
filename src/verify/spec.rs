//! What a correct output is (the manifest's `check` table, buffer indices resolved), and the
//! comparison of an output with the built-in reference it names.

use serde::{Deserialize, Serialize};

use super::correctness::Correctness;
use super::data::HostData;
use super::elem::ElemType;
use super::reference::{
    Keep, MathFn, MatmulTypes, RowOp, RowwiseCheck, check_add, check_compact, check_copy_mapped,
    check_function, check_histogram, check_matmul, check_rowwise, check_scan, check_sort,
    check_sum, check_transpose,
};
use super::shape::{CopyMap, MatmulShape};

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
    /// `output = alpha * op(a) * op(b) + beta * output` (row-major; see `MatmulShape`). The
    /// element types of a and b where they differ from the output's (f16 inputs, f32 output), and
    /// the accumulator where the job's math declares one other than the inputs' default (f16).
    Matmul {
        a: usize,
        b: usize,
        output: usize,
        shape: MatmulShape,
        tolerance: f64,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        a_elem: Option<ElemType>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        b_elem: Option<ElemType>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        accumulate: Option<ElemType>,
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
    /// `output = softmax(scalar * input)` along each of `rows` rows of `cols` (`scalar`: the scale).
    Softmax(RowwiseSpec),
    /// `output = (input - mean) / sqrt(var + scalar) * gamma + beta` along each row (`scalar`: eps).
    Layernorm(RowwiseSpec),
    /// `output = input / sqrt(mean(input^2) + scalar) * gamma` along each row (`scalar`: eps).
    Rmsnorm(RowwiseSpec),
}

/// A row-wise check: a rows x cols row-major input and output of one type, the op's scalar, the
/// optional per-column gamma and beta buffers, and a tolerance (None: the f32 error model).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct RowwiseSpec {
    pub input: usize,
    pub output: usize,
    pub rows: u64,
    pub cols: u64,
    pub scalar: f64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gamma: Option<usize>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub beta: Option<usize>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tolerance: Option<f64>,
}

impl CorrectnessSpec {
    /// The buffer a check compares (None: no check).
    pub fn output(&self) -> Option<usize> {
        match self {
            CorrectnessSpec::None => None,
            CorrectnessSpec::SameAs { output, .. }
            | CorrectnessSpec::Copy { output, .. }
            | CorrectnessSpec::Transpose { output, .. }
            | CorrectnessSpec::Sum { output, .. }
            | CorrectnessSpec::Matmul { output, .. }
            | CorrectnessSpec::Scan { output, .. }
            | CorrectnessSpec::Compact { output, .. }
            | CorrectnessSpec::Sort { output, .. }
            | CorrectnessSpec::Histogram { output, .. }
            | CorrectnessSpec::Function { output, .. }
            | CorrectnessSpec::Add { output, .. } => Some(*output),
            CorrectnessSpec::Softmax(r)
            | CorrectnessSpec::Layernorm(r)
            | CorrectnessSpec::Rmsnorm(r) => Some(r.output),
        }
    }

    /// Whether the checked output must start poisoned for a correct kernel to pass (a compaction
    /// leaves everything past its kept elements as it found it, and the check wants poison there).
    pub fn output_must_start_poisoned(&self) -> bool {
        matches!(self, CorrectnessSpec::Compact { .. })
    }

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
            CorrectnessSpec::Softmax(r)
            | CorrectnessSpec::Layernorm(r)
            | CorrectnessSpec::Rmsnorm(r) => [Some(r.input), r.gamma, r.beta]
                .into_iter()
                .flatten()
                .collect(),
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
        let rowwise = |op: RowOp, r: &RowwiseSpec| -> Option<Correctness> {
            let check = RowwiseCheck {
                op,
                rows: r.rows as usize,
                cols: r.cols as usize,
                input: input(r.input)?,
                gamma: r.gamma.map(input).map(|g| g.ok_or(())).transpose().ok()?,
                beta: r.beta.map(input).map(|b| b.ok_or(())).transpose().ok()?,
                tolerance: r.tolerance,
            };
            Some(check_rowwise(input_elem, elem, &check, output))
        };
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
                a_elem,
                b_elem,
                accumulate,
            } => check_matmul(
                MatmulTypes::new(
                    a_elem.unwrap_or(elem),
                    b_elem.unwrap_or(elem),
                    elem,
                    *accumulate,
                ),
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
            CorrectnessSpec::Softmax(r) => rowwise(RowOp::Softmax { scale: r.scalar }, r)?,
            CorrectnessSpec::Layernorm(r) => rowwise(RowOp::Layernorm { eps: r.scalar }, r)?,
            CorrectnessSpec::Rmsnorm(r) => rowwise(RowOp::Rmsnorm { eps: r.scalar }, r)?,
            CorrectnessSpec::None | CorrectnessSpec::SameAs { .. } => return None,
        })
    }
}
