//! A job's buffers: each `[[buffers]]` entry with its length evaluated at the job's bindings and
//! its start (an init pattern, or the data of an earlier buffer).

use std::collections::BTreeMap;

use super::job::{BufferSpec, Memory, format_params};
use super::location::{Ctx, SuiteError, at};
use super::manifest::Manifest;
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
