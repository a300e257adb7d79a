//! A job's buffers: each `[[buffers]]` entry with its length evaluated at the job's bindings and
//! its start (an init pattern, or the data of an earlier buffer); and the tensor maps that view them.

use std::collections::BTreeMap;

use super::job::{BufferSpec, Memory, format_params};
use super::location::{Ctx, SuiteError, at};
use super::manifest::Manifest;
use super::tensor_map::{TensorDataType, TensorMapSpec, packed_strides};
use crate::expr::{self, Bindings};

/// The manifest's buffers at one point of the sweep (`group_all` names the point in errors).
pub(crate) fn resolve_buffers(
    ctx: &Ctx,
    m: &Manifest,
    env: &Bindings,
    group_all: &BTreeMap<String, i64>,
) -> Result<Vec<BufferSpec>, SuiteError> {
    let mut buffers = Vec::new();
    for (bi, b) in m.buffers.iter().enumerate() {
        let len = expr::eval_count(&b.len, env).map_err(|err| {
            ctx.err(
                at!["buffers", bi, "len"],
                format!("buffer `{}` len: {err}", b.name),
                "use the suite's axes and params in `len`",
            )
        })?;
        if len == 0 {
            return Err(ctx.err(at!["buffers", bi, "len"], format!("buffer `{}` has len 0 at {}", b.name, format_params(group_all)), "give every buffer at least one element (check the len expression against the sweep)"));
        }
        let (init, from) = match (&b.init, &b.from) {
            (Some(init), None) => (*init, None),
            (None, Some(source)) => {
                // Only an earlier buffer: its data exists by the time this one is filled.
                let at = at!["buffers", bi, "from"];
                let i = buffers.iter().position(|x: &BufferSpec| &x.name == source).ok_or_else(|| ctx.err(at.clone(), format!("buffer `{}` starts from `{source}`, which is not a buffer declared before it", b.name), "declare the buffer it copies first, and name it in `from`"))?;
                let src: &BufferSpec = &buffers[i];
                if !src.has_data() || src.len < len {
                    return Err(ctx.err(at, format!("buffer `{}` starts from `{source}`, which holds {} elements starting as {:?}: it needs at least {len} starting with data", b.name, src.len, src.init), format!("give `{source}` init = \"random\" and a len of at least `{}`'s", b.name)));
                }
                (src.init, Some(i))
            }
            _ => return Err(ctx.err(at!["buffers", bi], format!("buffer `{}` needs exactly one of `init` and `from`", b.name), "write init = \"random\" (or random_int, iota, zero, poison), or from = \"another buffer\"")),
        };
        if !b.advise.is_empty() && b.memory != Some(Memory::Managed) {
            return Err(ctx.err(at!["buffers", bi, "advise"], format!("buffer `{}` has `advise`, which is unified-memory advice, and is not memory = \"managed\"", b.name), "set memory = \"managed\" or remove `advise`"));
        }
        buffers.push(BufferSpec {
            name: b.name.clone(),
            elem: b.elem,
            len,
            init,
            from,
            memory: b.memory.unwrap_or_default(),
            advise: b.advise.clone(),
        });
    }
    Ok(buffers)
}

/// The tensor maps `used` (indices into `[[tensor_maps]]`) at one point of the sweep, each
/// checked against the driver's rules and its buffer's length.
pub(crate) fn resolve_tensor_maps(
    ctx: &Ctx,
    m: &Manifest,
    env: &Bindings,
    buffers: &[BufferSpec],
    used: &[usize],
) -> Result<Vec<TensorMapSpec>, SuiteError> {
    used.iter()
        .map(|&ti| resolve_tensor_map(ctx, m, env, buffers, ti))
        .collect()
}

fn resolve_tensor_map(
    ctx: &Ctx,
    m: &Manifest,
    env: &Bindings,
    buffers: &[BufferSpec],
    ti: usize,
) -> Result<TensorMapSpec, SuiteError> {
    let t = &m.tensor_maps[ti];
    let name = &t.name;
    let bi = buffers
        .iter()
        .position(|b| b.name == t.buffer)
        .ok_or_else(|| {
            ctx.err(
                at!["tensor_maps", ti, "buffer"],
                format!(
                    "tensor map `{name}` views `{}`, which is not a buffer",
                    t.buffer
                ),
                "name one of the [[buffers]] in `buffer`",
            )
        })?;
    let buffer = &buffers[bi];
    let data_type = TensorDataType::for_elem(buffer.elem);
    let list = |key: &'static str, exprs: &[String]| -> Result<Vec<u64>, SuiteError> {
        exprs
            .iter()
            .enumerate()
            .map(|(i, e)| {
                expr::eval_count(e, env).map_err(|err| {
                    ctx.err(
                        at!["tensor_maps", ti, key],
                        format!("tensor map `{name}`, {key}[{i}] = `{e}`: {err}"),
                        "use the suite's axes and params (tensor maps are resolved with the buffers)",
                    )
                })
            })
            .collect()
    };
    let narrow = |key: &'static str, values: Vec<u64>| -> Result<Vec<u32>, SuiteError> {
        values
            .into_iter()
            .map(|x| {
                u32::try_from(x).map_err(|_| {
                    ctx.err(
                        at!["tensor_maps", ti, key],
                        format!("tensor map `{name}`: {key} entry {x} is far out of range"),
                        "box edges are 1 to 256 and element strides 1 to 8",
                    )
                })
            })
            .collect()
    };
    let dims = list("dims", &t.dims)?;
    let strides = match &t.strides {
        Some(s) => list("strides", s)?,
        None => packed_strides(&dims, data_type.bytes()),
    };
    let element_strides = match &t.element_strides {
        Some(e) => narrow("element_strides", list("element_strides", e)?)?,
        None => vec![1; dims.len()],
    };
    let spec = TensorMapSpec {
        index: ti,
        name: name.clone(),
        buffer: bi,
        data_type,
        dims,
        strides,
        box_dims: narrow("box", list("box", &t.box_dims)?)?,
        element_strides,
        swizzle: t.swizzle,
        interleave: t.interleave,
        l2_promotion: t.l2_promotion,
        oob_fill: t.oob_fill,
    };
    spec.check(buffer.bytes()).map_err(|b| {
        ctx.err(
            at!["tensor_maps", ti, b.key],
            format!(
                "{} (buffer `{}`: {} × {})",
                b.message,
                buffer.name,
                buffer.len,
                buffer.elem.name()
            ),
            b.fix,
        )
    })?;
    Ok(spec)
}
