//! The row-wise checks (`op = "softmax"`, `"layernorm"`, `"rmsnorm"`): the matrix's shape, the
//! op's scalar and its gamma and beta buffers resolved against a job's buffers.

use super::builtin::CheckSite;
use super::op::CheckOp;
use crate::expr;
use crate::suite::location::SuiteError;
use crate::verify::{CorrectnessSpec, RowwiseSpec};

impl CheckSite<'_> {
    /// A row-wise check: rows x cols of one float type in and out, the scale (softmax) or eps
    /// (the norms), gamma (the norms) and beta (layernorm) where the check names them.
    pub(crate) fn rowwise(&self, op: CheckOp) -> Result<CorrectnessSpec, SuiteError> {
        let (ctx, v, c, buffers) = (self.ctx, self.v, self.c, self.buffers);
        let (input, output) = self.rowwise_input_output()?;
        let rows = self.required(op, &c.rows, "rows", "the matrix's rows, e.g. `R`")?;
        let cols = self.required(op, &c.cols, "cols", "the length of a row, e.g. `C`")?;
        for i in [input, output] {
            if rows == 0 || cols == 0 || buffers[i].len < rows.saturating_mul(cols) {
                return Err(ctx.err(ctx.check_key(v, "rows"), format!("variant `{}`: buffer `{}` holds {} elements, fewer than rows x cols = {rows} x {cols} (or a dimension is 0)", v.name, buffers[i].name, buffers[i].len), "make the input and output at least rows*cols long"));
            }
        }
        let softmax = op == CheckOp::Softmax;
        let scalar = if softmax {
            self.rowwise_scalar(&c.scale, "scale", 1.0)?
        } else {
            let eps = c.eps.as_ref().ok_or_else(|| {
                ctx.err(
                    ctx.check_key(v, "eps"),
                    format!("variant `{}`: a {op} check needs `eps`", v.name),
                    "add eps = \"0.00001\" (what the kernel adds to the variance)",
                )
            })?;
            self.rowwise_scalar(&Some(eps.clone()), "eps", 0.0)?
        };
        if (softmax && scalar <= 0.0) || (!softmax && scalar < 0.0) {
            return Err(ctx.err(
                ctx.check_key(v, if softmax { "scale" } else { "eps" }),
                format!(
                    "variant `{}`: a {op} check's {} is {scalar}",
                    v.name,
                    if softmax { "scale" } else { "eps" }
                ),
                "give a scale > 0 (softmax) or an eps >= 0 (the norms)",
            ));
        }
        let gamma = match (&c.gamma, softmax) {
            (Some(_), true) => return Err(self.not_for(op, "gamma")),
            (g, _) => self.per_column(g.as_ref(), "gamma", input, cols)?,
        };
        let beta = match (&c.beta, op) {
            (Some(_), CheckOp::Softmax | CheckOp::Rmsnorm) => return Err(self.not_for(op, "beta")),
            (b, _) => self.per_column(b.as_ref(), "beta", input, cols)?,
        };
        let tolerance = Some(self.tolerance(output)?).filter(|&t| t > 0.0);
        let spec = RowwiseSpec {
            input,
            output,
            rows,
            cols,
            scalar,
            gamma,
            beta,
            tolerance,
        };
        Ok(match op {
            CheckOp::Softmax => CorrectnessSpec::Softmax(spec),
            CheckOp::Layernorm => CorrectnessSpec::Layernorm(spec),
            _ => CorrectnessSpec::Rmsnorm(spec),
        })
    }

    /// The input and output: float buffers of one type.
    fn rowwise_input_output(&self) -> Result<(usize, usize), SuiteError> {
        let (ctx, v, c, buffers) = (self.ctx, self.v, self.c, self.buffers);
        let input = self.buffer_index(c.input.as_ref(), "input")?;
        let output = self.buffer_index(c.output.as_ref(), "output")?;
        let (ei, eo) = (buffers[input].elem, buffers[output].elem);
        if ei != eo || !ei.is_float() {
            return Err(ctx.err(ctx.check_key(v, "output"), format!("variant `{}`: a row-wise check needs float input and output of one type; `{}` is {} and `{}` is {}", v.name, buffers[input].name, ei.name(), buffers[output].name, eo.name()), "use f32 in and out, or bf16 (or f16) in and out: the kernel computes in f32 either way"));
        }
        Ok((input, output))
    }

    /// A scalar expression of the check (scale, eps), with its default.
    fn rowwise_scalar(
        &self,
        e: &Option<String>,
        what: &str,
        default: f64,
    ) -> Result<f64, SuiteError> {
        let (ctx, v) = (self.ctx, self.v);
        let Some(e) = e else { return Ok(default) };
        expr::eval(e, self.env).map_err(|err| {
            ctx.err(
                ctx.check_key(v, what),
                format!("variant `{}`, check {what}: {err}", v.name),
                "write a number such as 0.00001 or an expression of the suite's axes",
            )
        })
    }

    /// A per-column buffer (gamma, beta): the input's type, at least `cols` long.
    fn per_column(
        &self,
        name: Option<&String>,
        role: &str,
        input: usize,
        cols: u64,
    ) -> Result<Option<usize>, SuiteError> {
        let (ctx, v, buffers) = (self.ctx, self.v, self.buffers);
        let Some(name) = name else { return Ok(None) };
        let i = self.buffer_index(Some(name), role)?;
        if buffers[i].elem != buffers[input].elem || buffers[i].len < cols {
            return Err(ctx.err(ctx.check_key(v, role), format!("variant `{}`: {role} `{}` is {} of {} elements; the check needs the input's type ({}) and at least cols = {cols} elements", v.name, buffers[i].name, buffers[i].elem.name(), buffers[i].len, buffers[input].elem.name()), format!("give `{role}` the input's type and len = \"C\" (one value a column)")));
        }
        Ok(Some(i))
    }

    /// A key the op does not take.
    fn not_for(&self, op: CheckOp, key: &str) -> SuiteError {
        let (ctx, v) = (self.ctx, self.v);
        ctx.err(
            ctx.check_key(v, key),
            format!("variant `{}`: a {op} check takes no `{key}`", v.name),
            "gamma belongs to layernorm and rmsnorm, beta to layernorm (and matmul's scalar)",
        )
    }
}
