//! The built-in checks (`check = { op = "..." }`): each op's buffers, sizes and tolerance
//! resolved against a job's buffers, with the manifest line of whatever does not fit.

use super::op::CheckOp;
use crate::expr::{self, Bindings};
use crate::records::Math;
use crate::suite::job::BufferSpec;
use crate::suite::location::{Ctx, SuiteError};
use crate::suite::manifest::{CorrectnessDecl, Manifest, VariantDecl};
use crate::verify::reference::MATMUL_CONTRACTS;
use crate::verify::{CopyMap, CorrectnessSpec, ElemType, Init, MatmulShape, MatmulTypes};

/// A check being resolved for one job: the variant, the check it has (its own or the suite's),
/// the job's bindings and buffers.
pub(crate) struct CheckSite<'a> {
    pub(crate) ctx: &'a Ctx<'a>,
    pub(crate) m: &'a Manifest,
    pub(crate) v: &'a VariantDecl,
    pub(crate) c: &'a CorrectnessDecl,
    pub(crate) env: &'a Bindings,
    pub(crate) buffers: &'a [BufferSpec],
    /// The job's declared math (resolved, with its errors, where the job is expanded).
    pub(crate) math: Option<Math>,
}

impl CheckSite<'_> {
    /// The check a built-in op asks for.
    pub(crate) fn built_in(&self, op: CheckOp) -> Result<CorrectnessSpec, SuiteError> {
        match op {
            CheckOp::None => Ok(CorrectnessSpec::None),
            CheckOp::Copy => self.copy(),
            CheckOp::Transpose => self.transpose(),
            CheckOp::Sum => self.sum(),
            CheckOp::Matmul => self.matmul(),
            CheckOp::Scan => self.scan(),
            CheckOp::Compact => self.compact(),
            CheckOp::Sort => self.sort(),
            CheckOp::Histogram => self.histogram(),
            CheckOp::Function => self.function(),
            CheckOp::Add => self.add(),
            CheckOp::Softmax => self.rowwise(CheckOp::Softmax),
            CheckOp::Layernorm => self.rowwise(CheckOp::Layernorm),
            CheckOp::Rmsnorm => self.rowwise(CheckOp::Rmsnorm),
        }
    }

    /// The check's relative tolerance for `output`'s element type.
    pub(crate) fn tolerance(&self, output: usize) -> Result<f64, SuiteError> {
        let (ctx, v) = (self.ctx, self.v);
        self.c.tolerance.relative(self.buffers[output].elem).map_err(|e| ctx.err(ctx.check_key(v, "tolerance"), format!("variant `{}`: {e}", v.name), "write tolerance = 1e-3 (a relative error) or tolerance = \"8 eps\" (multiples of the output type's epsilon)"))
    }

    /// The index of the buffer the check names as `role`.
    pub(crate) fn buffer_index(
        &self,
        name: Option<&String>,
        role: &str,
    ) -> Result<usize, SuiteError> {
        let (ctx, v) = (self.ctx, self.v);
        let name = name.ok_or_else(|| {
            ctx.err(
                ctx.check_key(v, role),
                format!("variant `{}`: the check has no `{role}` buffer", v.name),
                format!("add `{role} = \"buffer name\"` to the check"),
            )
        })?;
        self.m
            .buffers
            .iter()
            .position(|b| &b.name == name)
            .ok_or_else(|| {
                ctx.err(
                    ctx.check_key(v, role),
                    format!(
                        "variant `{}`: check {role} `{name}` is not a buffer",
                        v.name
                    ),
                    "name one of the [[buffers]]",
                )
            })
    }

    /// An optional whole-number expression of the check, with its default.
    pub(crate) fn number(
        &self,
        e: &Option<String>,
        what: &str,
        default: u64,
    ) -> Result<u64, SuiteError> {
        let (ctx, v) = (self.ctx, self.v);
        let Some(e) = e else { return Ok(default) };
        expr::eval_count(e, self.env).map_err(|err| {
            ctx.err(
                ctx.check_key(v, what),
                format!("variant `{}`, check {what}: {err}", v.name),
                "use the suite's axes and the variant's params",
            )
        })
    }

    /// A whole-number expression an `op` check cannot do without.
    pub(crate) fn required(
        &self,
        op: CheckOp,
        e: &Option<String>,
        what: &str,
        example: &str,
    ) -> Result<u64, SuiteError> {
        let (ctx, v) = (self.ctx, self.v);
        let present = e.as_ref().ok_or_else(|| {
            ctx.err(
                ctx.check_key(v, what),
                format!("variant `{}`: a {op} check needs `{what}`", v.name),
                format!("add `{what} = \"expression\"` ({example})"),
            )
        })?;
        self.number(&Some(present.clone()), what, 0)
    }

    /// The input and output buffers, of one element type.
    fn input_output(&self) -> Result<(usize, usize), SuiteError> {
        let (ctx, v, c, buffers) = (self.ctx, self.v, self.c, self.buffers);
        let (input, output) = (
            self.buffer_index(c.input.as_ref(), "input")?,
            self.buffer_index(c.output.as_ref(), "output")?,
        );
        if buffers[input].elem != buffers[output].elem {
            return Err(ctx.err(
                ctx.check_key(v, "output"),
                format!(
                    "variant `{}`: check input and output have different element types",
                    v.name
                ),
                "use buffers of one type",
            ));
        }
        Ok((input, output))
    }

    /// The check's `input_stride`: 1 unless it says otherwise, never 0.
    fn input_stride(&self) -> Result<u64, SuiteError> {
        let (ctx, v) = (self.ctx, self.v);
        match self.number(&self.c.input_stride, "input_stride", 1)? {
            0 => Err(ctx.err(
                ctx.check_key(v, "input_stride"),
                format!("variant `{}`: check input_stride is 0", v.name),
                "use input_stride >= 1 (1 reads every element)",
            )),
            n => Ok(n),
        }
    }

    /// `op = "copy"`: `out[output_offset + i] == in[input_offset + i * input_stride]`; a plain copy covers the whole input.
    fn copy(&self) -> Result<CorrectnessSpec, SuiteError> {
        let (ctx, v, c, buffers) = (self.ctx, self.v, self.c, self.buffers);
        let (input, output) = self.input_output()?;
        let map = CopyMap {
            input_offset: self.number(&c.input_offset, "input_offset", 0)? as usize,
            input_stride: self.input_stride()? as usize,
            output_offset: self.number(&c.output_offset, "output_offset", 0)? as usize,
        };
        // A plain copy must cover the whole input: a short output would hide unwritten elements.
        let mapped =
            c.input_offset.is_some() || c.input_stride.is_some() || c.output_offset.is_some();
        if !mapped && buffers[output].len < buffers[input].len {
            return Err(ctx.err(ctx.check_key(v, "output"), format!("variant `{}`: a copy check needs an output at least as long as the input", v.name), "give `output` len >= the input's, or say which part of the input it holds with input_offset / input_stride"));
        }
        Ok(CorrectnessSpec::Copy { input, output, map })
    }

    /// `op = "transpose"`: the output is the input's rows x cols transposed.
    fn transpose(&self) -> Result<CorrectnessSpec, SuiteError> {
        let (ctx, v, c, buffers) = (self.ctx, self.v, self.c, self.buffers);
        let (input, output) = self.input_output()?;
        let (rows, cols) = (
            self.required(CheckOp::Transpose, &c.rows, "rows", "the input's rows")?,
            self.required(CheckOp::Transpose, &c.cols, "cols", "the input's columns")?,
        );
        for i in [input, output] {
            let need = rows.saturating_mul(cols);
            if buffers[i].len < need {
                return Err(ctx.err(ctx.check_key(v, "rows"), format!("variant `{}`: buffer `{}` holds {} elements, fewer than rows x cols = {rows} x {cols}", v.name, buffers[i].name, buffers[i].len), "make the buffer len at least rows*cols"));
            }
        }
        Ok(CorrectnessSpec::Transpose {
            input,
            output,
            rows,
            cols,
        })
    }

    /// `op = "sum"`: the first `count` elements of the output add up to the input's sum.
    fn sum(&self) -> Result<CorrectnessSpec, SuiteError> {
        let (ctx, v, c, buffers) = (self.ctx, self.v, self.c, self.buffers);
        let (input, output) = self.input_output()?;
        let count = self.required(
            CheckOp::Sum,
            &c.count,
            "count",
            "the number of partial results, e.g. the kernel's grid size",
        )?;
        if count == 0 || count > buffers[output].len {
            return Err(ctx.err(ctx.check_key(v, "count"), format!("variant `{}`: sum check count {count} must be between 1 and the {} elements of `{}`", v.name, buffers[output].len, buffers[output].name), "make the output buffer hold every partial result"));
        }
        let tolerance = self.tolerance(output)?;
        if buffers[input].elem.is_float()
            && tolerance <= 0.0
            && buffers[input].init != Init::RandomInt
        {
            return Err(ctx.err(ctx.check_key(v, "op"), format!("variant `{}`: a float sum of random fractions depends on the order of the adds and cannot be checked bit for bit", v.name), "give the input init = \"random_int\" (whole numbers: float sums of them are exact) or add a tolerance (the largest accepted error as a fraction of sum|x|)"));
        }
        Ok(CorrectnessSpec::Sum {
            input,
            output,
            count,
            input_stride: self.input_stride()?,
            tolerance,
        })
    }

    /// `op = "matmul"`: `output = alpha * op(a) * op(b) + beta * output` at the check's m, n, k.
    fn matmul(&self) -> Result<CorrectnessSpec, SuiteError> {
        let (ctx, v, c, buffers, env) = (self.ctx, self.v, self.c, self.buffers, self.env);
        let named = |name: Option<&String>, role: &str| self.buffer_index(name, role);
        let (a, b, output) = (
            named(c.a.as_ref(), "a")?,
            named(c.b.as_ref(), "b")?,
            self.buffer_index(c.output.as_ref(), "output")?,
        );
        let types = self.matmul_types(a, b, output)?;
        let dim = |e: &Option<String>, what: &str| {
            self.required(CheckOp::Matmul, e, what, "an expression such as `S`")
        };
        let scalar = |e: &Option<String>, what: &str, default: f64| -> Result<f64, SuiteError> {
            e.as_ref().map_or(Ok(default), |e| {
                expr::eval(e, env).map_err(|err| {
                    ctx.err(
                        ctx.check_key(v, what),
                        format!("variant `{}`, check {what}: {err}", v.name),
                        "write a number or an expression of the suite's axes",
                    )
                })
            })
        };
        let shape = MatmulShape {
            m: dim(&c.m, "m")?,
            n: dim(&c.n, "n")?,
            k: dim(&c.k, "k")?,
            alpha: scalar(&c.alpha, "alpha", 1.0)?,
            beta: scalar(&c.beta, "beta", 0.0)?,
            trans_a: c.trans_a,
            trans_b: c.trans_b,
        };
        for (i, need, what) in [
            (a, shape.m.checked_mul(shape.k), "m * k"),
            (b, shape.k.checked_mul(shape.n), "k * n"),
            (output, shape.m.checked_mul(shape.n), "m * n"),
        ] {
            let need = need.unwrap_or(u64::MAX);
            if shape.m == 0 || shape.n == 0 || shape.k == 0 || buffers[i].len < need {
                return Err(ctx.err(ctx.check_key(v, "m"), format!("variant `{}`: buffer `{}` holds {} elements, fewer than {what} = {need} (or a dimension is 0)", v.name, buffers[i].name, buffers[i].len), "make the buffers as large as the product's m, n and k say"));
            }
        }
        if shape.beta != 0.0 && !buffers[output].has_data() {
            return Err(ctx.err(ctx.check_key(v, "beta"), format!("variant `{}`: beta = {} reads the output's initial values, but `{}` starts as {:?}", v.name, shape.beta, buffers[output].name, buffers[output].init), "initialise the output with init = \"random\", or set beta = \"0\""));
        }
        let tolerance = self.tolerance(output)?;
        if types.is_integer() && tolerance > 0.0 {
            return Err(ctx.err(ctx.check_key(v, "tolerance"), format!("variant `{}`: an {} product is compared exactly, and the check gives tolerance {tolerance}", v.name, types.label()), "remove the tolerance"));
        }
        if types.is_integer() && (shape.alpha.fract() != 0.0 || shape.beta.fract() != 0.0) {
            return Err(ctx.err(ctx.check_key(v, "alpha"), format!("variant `{}`: an {} product scales by whole numbers, and alpha = {}, beta = {}", v.name, types.label(), shape.alpha, shape.beta), "give whole-number alpha and beta (1 and 0 by default)"));
        }
        let differs = |elem: ElemType| Some(elem).filter(|&e| e != types.out);
        Ok(CorrectnessSpec::Matmul {
            a,
            b,
            output,
            shape,
            tolerance,
            a_elem: differs(types.a),
            b_elem: differs(types.b),
            accumulate: Some(types.accumulate).filter(|&acc| {
                acc != MatmulTypes::new(types.a, types.b, types.out, None).accumulate
            }),
        })
    }

    /// A matmul check's element types: a's, b's and the output's as the buffers declare them, a
    /// contract the check knows, and the accumulator of the job's math (`f16-tensor-f16acc`
    /// accumulates in f16) where that math multiplies a's type; else the inputs' default.
    fn matmul_types(&self, a: usize, b: usize, output: usize) -> Result<MatmulTypes, SuiteError> {
        let (ctx, v, buffers) = (self.ctx, self.v, self.buffers);
        let (a_elem, b_elem) = (buffers[a].elem, buffers[b].elem);
        let accumulate = self
            .math
            .map(Math::gemm_types)
            .filter(|(input, _, _)| *input == a_elem)
            .map(|(_, _, acc)| acc);
        let types = MatmulTypes::new(a_elem, b_elem, buffers[output].elem, accumulate);
        types.supported().map_err(|e| {
            ctx.err(
                ctx.check_key(v, "op"),
                format!("variant `{}`: {e}", v.name),
                format!("give a, b and output one of the types of a contract the check knows: {MATMUL_CONTRACTS}"),
            )
        })?;
        Ok(types)
    }

    /// `op = "scan"`: prefix sums of the first `count` elements (inclusive, or exclusive).
    fn scan(&self) -> Result<CorrectnessSpec, SuiteError> {
        let (ctx, v, c, buffers) = (self.ctx, self.v, self.c, self.buffers);
        let (input, output) = self.input_output()?;
        let count = self.number(&c.count, "count", buffers[input].len)?;
        if count == 0 || count > buffers[input].len || count > buffers[output].len {
            return Err(ctx.err(ctx.check_key(v, "count"), format!("variant `{}`: scan check count {count} must be between 1 and the length of both `{}` ({}) and `{}` ({})", v.name, buffers[input].name, buffers[input].len, buffers[output].name, buffers[output].len), "give count = \"N\" no longer than the buffers"));
        }
        let tolerance = self.tolerance(output)?;
        if buffers[input].elem.is_float()
            && tolerance <= 0.0
            && buffers[input].init != Init::RandomInt
        {
            return Err(ctx.err(ctx.check_key(v, "tolerance"), format!("variant `{}`: a float scan of random fractions depends on the order of the adds and cannot be checked bit for bit", v.name), format!("give the input init = \"random_int\" (whole numbers: exact while the prefixes stay below 2^24) or a tolerance, e.g. \"{} eps\" (the worst case of a {count}-term float sum)", count)));
        }
        Ok(CorrectnessSpec::Scan {
            input,
            output,
            count,
            exclusive: c.exclusive,
            tolerance,
        })
    }

    /// `op = "compact"`: the input's kept elements, in order, with nothing written past them.
    fn compact(&self) -> Result<CorrectnessSpec, SuiteError> {
        let (ctx, v, c, buffers) = (self.ctx, self.v, self.c, self.buffers);
        let (input, output) = self.input_output()?;
        let keep = c.keep.as_deref().map(|k| crate::verify::Keep::parse(k).ok_or(k)).unwrap_or(Err("")).map_err(|k| ctx.err(ctx.check_key(v, "keep"), format!("variant `{}`: a compact check needs keep = \"positive\", \"nonzero\" or \"even\" (got `{k}`)", v.name), "say which elements the compaction keeps"))?;
        if buffers[output].init != Init::Poison {
            return Err(ctx.err(ctx.check_key(v, "output"), format!("variant `{}`: a compact check reads the end of `{}` to see that nothing was written past the kept elements, so it must start as poison", v.name, buffers[output].name), "give the output init = \"poison\""));
        }
        Ok(CorrectnessSpec::Compact {
            input,
            output,
            keep,
        })
    }

    /// `op = "sort"`: the input, sorted.
    fn sort(&self) -> Result<CorrectnessSpec, SuiteError> {
        let (ctx, v, buffers) = (self.ctx, self.v, self.buffers);
        let (input, output) = self.input_output()?;
        if buffers[output].len < buffers[input].len {
            return Err(ctx.err(
                ctx.check_key(v, "output"),
                format!(
                    "variant `{}`: a sort check needs an output as long as the input",
                    v.name
                ),
                "make the output at least as long as the input",
            ));
        }
        Ok(CorrectnessSpec::Sort { input, output })
    }

    /// `op = "histogram"`: `bins` counts of the input's elements (x counts in bin x mod bins).
    fn histogram(&self) -> Result<CorrectnessSpec, SuiteError> {
        let (ctx, v, c, buffers) = (self.ctx, self.v, self.c, self.buffers);
        let (input, output) = (
            self.buffer_index(c.input.as_ref(), "input")?,
            self.buffer_index(c.output.as_ref(), "output")?,
        );
        let bins = self.required(CheckOp::Histogram, &c.bins, "bins", "the number of bins")?;
        if bins == 0 || bins > buffers[output].len || buffers[output].elem.is_float() {
            return Err(ctx.err(
                ctx.check_key(v, "bins"),
                format!(
                    "variant `{}`: a histogram check needs 1 to {} bins in the integer buffer `{}`",
                    v.name, buffers[output].len, buffers[output].name
                ),
                "give bins = \"B\" with an integer output of at least B elements",
            ));
        }
        Ok(CorrectnessSpec::Histogram {
            input,
            output,
            bins,
        })
    }

    /// `op = "function"`: a math function of each input element, within `max_ulp`.
    fn function(&self) -> Result<CorrectnessSpec, SuiteError> {
        let (ctx, v, c, buffers, env) = (self.ctx, self.v, self.c, self.buffers, self.env);
        let (input, output) = (
            self.buffer_index(c.input.as_ref(), "input")?,
            self.buffer_index(c.output.as_ref(), "output")?,
        );
        let exponent = c
            .exponent
            .as_ref()
            .map(|e| {
                expr::eval(e, env).map_err(|err| {
                    ctx.err(
                        ctx.check_key(v, "exponent"),
                        format!("variant `{}`, check exponent: {err}", v.name),
                        "write a number or an expression of the suite's axes",
                    )
                })
            })
            .transpose()?;
        let name = c.function.as_deref().unwrap_or("");
        let f = crate::verify::MathFn::parse(name, exponent).ok_or_else(|| ctx.err(ctx.check_key(v, "fn"), format!("variant `{}`: a function check needs fn = \"sin\", \"cos\", \"exp\", \"log\", \"sqrt\", \"tanh\" or \"pow\" (with exponent = \"...\"); got `{name}`", v.name), "name the function the kernel computes of each input element"))?;
        let max_ulp = c.max_ulp.unwrap_or(0.0);
        if !(buffers[input].elem.is_float()
            && buffers[output].elem.is_float()
            && max_ulp.is_finite()
            && max_ulp >= 0.0)
        {
            return Err(ctx.err(ctx.check_key(v, "max_ulp"), format!("variant `{}`: a function check needs float input and output and a max_ulp >= 0", v.name), "use float buffers and, e.g., max_ulp = 2"));
        }
        Ok(CorrectnessSpec::Function {
            input,
            output,
            f,
            max_ulp,
        })
    }

    /// `op = "add"`: `output[i] = a[i] + b[i]` for every element of the output.
    fn add(&self) -> Result<CorrectnessSpec, SuiteError> {
        let (ctx, v, c, buffers) = (self.ctx, self.v, self.c, self.buffers);
        let (a, b, output) = (
            self.buffer_index(c.a.as_ref(), "a")?,
            self.buffer_index(c.b.as_ref(), "b")?,
            self.buffer_index(c.output.as_ref(), "output")?,
        );
        let (ea, eb, eo) = (buffers[a].elem, buffers[b].elem, buffers[output].elem);
        if ea != eb {
            return Err(ctx.err(
                ctx.check_key(v, "b"),
                format!(
                    "variant `{}`: an add check's a `{}` is {} and its b `{}` is {}",
                    v.name,
                    buffers[a].name,
                    ea.name(),
                    buffers[b].name,
                    eb.name()
                ),
                "give a and b one element type (the output may be wider)",
            ));
        }
        if ea.is_float() != eo.is_float() {
            let kind = |e: ElemType| {
                if e.is_float() {
                    "a float"
                } else {
                    "an integer"
                }
            };
            return Err(ctx.err(ctx.check_key(v, "output"), format!("variant `{}`: an add check's a and b are {} ({}) and its output `{}` is {} ({})", v.name, kind(ea), ea.name(), buffers[output].name, kind(eo), eo.name()), "add floats into a float output and integers into an integer one"));
        }
        for (i, role) in [(a, "a"), (b, "b")] {
            if buffers[i].len < buffers[output].len {
                return Err(ctx.err(ctx.check_key(v, role), format!("variant `{}`: an add check's {role} `{}` holds {} elements, fewer than the {} of output `{}`", v.name, buffers[i].name, buffers[i].len, buffers[output].len, buffers[output].name), "every element of the output is checked: make a and b at least as long as it"));
            }
        }
        Ok(CorrectnessSpec::Add {
            a,
            b,
            output,
            tolerance: self.tolerance(output)?,
        })
    }
}
