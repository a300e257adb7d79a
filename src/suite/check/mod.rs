//! A job's check: what a correct output is, by a built-in op or by `same_as` another variant
//! run on the same inputs.

mod builtin;
mod op;
mod rowwise;

pub use op::CheckOp;

use std::collections::BTreeMap;
use std::path::Path;

use self::builtin::CheckSite;
use self::op::CHECK_OP_FIX;
use crate::expr::Bindings;
use crate::records::Math;
use crate::suite::job::{BufferSpec, Reference};
use crate::suite::location::{Ctx, SuiteError, at};
use crate::suite::manifest::{Manifest, VariantDecl};
use crate::suite::program::{resolve_body, resolve_program};
use crate::suite::sweep::{combinations, to_bindings};
use crate::verify::CorrectnessSpec;

/// One job of a variant as its check sees it: its bindings (`group_all`: the suite-level ones),
/// its buffers and its declared math.
pub(crate) struct JobPoint<'a> {
    pub(crate) env: &'a Bindings,
    pub(crate) group_all: &'a BTreeMap<String, i64>,
    pub(crate) buffers: &'a [BufferSpec],
    pub(crate) math: Option<Math>,
}

/// The check that applies to `v` (its own, else the suite's) at one job, with the reference a
/// `same_as` check runs; `dir` is the suite's directory.
pub(crate) fn resolve_check(
    ctx: &Ctx,
    m: &Manifest,
    dir: &Path,
    v: &VariantDecl,
    job: &JobPoint,
) -> Result<(CorrectnessSpec, Option<Reference>), SuiteError> {
    let JobPoint {
        env,
        group_all,
        buffers,
        math,
    } = *job;
    let (correctness, reference) = match v.check.as_ref().or(m.suite.check.as_ref()) {
        None => (CorrectnessSpec::None, None),
        Some(c) => {
            let site = CheckSite {
                ctx,
                m,
                v,
                c,
                env,
                buffers,
                math,
            };
            if c.same_as.is_some() {
                let (spec, reference) = same_as(&site, dir, group_all)?;
                (spec, Some(reference))
            } else {
                let op = match c.op.as_deref() {
                    None => CheckOp::None,
                    Some(other) => CheckOp::parse(other).ok_or_else(|| {
                        ctx.err(
                            ctx.check_key(v, "op"),
                            format!("variant `{}`: unknown check op `{other}`", v.name),
                            CHECK_OP_FIX,
                        )
                    })?,
                };
                (site.built_in(op)?, None)
            }
        }
    };
    for input in correctness.inputs() {
        if !buffers[input].has_data() {
            return Err(ctx.err(at!["buffers", input, "init"], format!("variant `{}`: check input `{}` starts as {:?}, which cannot show wrong indexing", v.name, buffers[input].name, buffers[input].init), "initialise the check's input with init = \"random\""));
        }
    }
    Ok((correctness, reference))
}

/// A `same_as` check: the reference variant resolved at this job's sizes, and which of its
/// buffers the output is compared with.
fn same_as(
    site: &CheckSite,
    dir: &Path,
    group_all: &BTreeMap<String, i64>,
) -> Result<(CorrectnessSpec, Reference), SuiteError> {
    let CheckSite {
        ctx,
        m,
        v,
        c,
        buffers,
        ..
    } = *site;
    let other = m
        .variants
        .iter()
        .find(|o| Some(&o.name) == c.same_as.as_ref())
        .expect("validated");
    // The reference runs at this job's sizes with its own parameters (the first point of its own axes).
    let mut ref_params = other.params.clone();
    ref_params.extend(combinations(&other.axes).swap_remove(0));
    let ref_env = to_bindings(&[group_all, &ref_params]);
    let (launches, steps) = resolve_body(ctx, m, other, &ref_env, buffers)?;
    let reference = Reference {
        variant: other.name.clone(),
        program: resolve_program(ctx, m, dir, other, &ref_env)?,
        launches,
        steps,
    };
    let output = site.buffer_index(c.output.as_ref(), "output")?;
    let reference_output = match &c.reference_output {
        Some(name) => {
            Some(site.buffer_index(Some(name), "reference_output")?).filter(|&r| r != output)
        }
        None => None,
    };
    if let Some(r) = reference_output
        && buffers[r].len < buffers[output].len
    {
        return Err(ctx.err(ctx.check_key(v, "reference_output"), format!("variant `{}`: reference_output `{}` holds {} elements, fewer than output `{}` ({}): the rest would go unchecked", v.name, buffers[r].name, buffers[r].len, buffers[output].name, buffers[output].len), "compare buffers of the same length"));
    }
    if let Some(r) = reference_output
        && buffers[r].elem.is_float() != buffers[output].elem.is_float()
    {
        return Err(ctx.err(ctx.check_key(v, "reference_output"), format!("variant `{}`: output `{}` ({}) and reference_output `{}` ({}) are not both floats or both integers", v.name, buffers[output].name, buffers[output].elem.name(), buffers[r].name, buffers[r].elem.name()), "compare floats with floats (f16 against f32) and integers with integers"));
    }
    let spec = CorrectnessSpec::SameAs {
        output,
        reference_output,
        tolerance: site.tolerance(output)?,
    };
    Ok((spec, reference))
}
