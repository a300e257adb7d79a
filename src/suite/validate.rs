//! The manifest's shape, checked once at load before anything is evaluated: variants, axes,
//! buffer and variant names, sources, launches or steps, and `same_as` references.

use std::collections::{BTreeMap, HashSet};

use super::launch::validate_launch;
use super::location::{Ctx, SuiteError, at};
use super::manifest::{Manifest, VariantDecl};
use super::steps;

/// True when `src` declares a `__global__` function of the kernel's name (`wt::gemm<float, 64>`
/// is declared by `template <…> __global__ void gemm(…)`).
pub fn source_declares_kernel(src: &str, kernel: &str) -> bool {
    crate::cxx::global_functions(src).contains(&crate::cxx::base_name(kernel))
}

/// Checks the whole manifest; `sources` holds each source's text with its local headers, by the name the manifest gives it.
pub(crate) fn validate(
    ctx: &Ctx,
    m: &Manifest,
    sources: &BTreeMap<String, String>,
) -> Result<(), SuiteError> {
    if m.variants.is_empty() {
        return Err(ctx.err(
            at!["suite"],
            "the suite has no variants",
            "add at least one [[variants]] table",
        ));
    }
    let all_axes =
        m.axes
            .iter()
            .map(|a| (a, at!["axes", a.0]))
            .chain(m.variants.iter().enumerate().flat_map(|(i, v)| {
                v.axes
                    .iter()
                    .map(move |a| (a, at!["variants", i, "axes", a.0]))
            }));
    for ((axis, values), anchor) in all_axes {
        if values.is_empty() {
            return Err(ctx.err(
                anchor,
                format!("sweep axis `{axis}` has no values"),
                format!("give `{axis}` at least one value, or remove it"),
            ));
        }
    }
    check_names(ctx, m)?;
    let mut seen = HashSet::new();
    for (i, b) in m.buffers.iter().enumerate() {
        if !seen.insert(b.name.as_str()) {
            return Err(ctx.err(
                at!["buffers", i, "name"],
                format!("buffer `{}` is declared twice", b.name),
                "give every buffer its own name",
            ));
        }
    }
    validate_tensor_maps(ctx, m)?;
    let mut names = HashSet::new();
    for v in &m.variants {
        if !names.insert(v.name.as_str()) {
            return Err(ctx.err(
                ctx.variant_key(v, "name"),
                format!("variant `{}` is declared twice", v.name),
                "give every variant its own name",
            ));
        }
        validate_variant(ctx, m, v, sources)?;
    }
    Ok(())
}

/// Tensor maps: own names (not a buffer's, which an argument would mean instead), each of a
/// buffer a kernel can reach.
fn validate_tensor_maps(ctx: &Ctx, m: &Manifest) -> Result<(), SuiteError> {
    let mut seen = HashSet::new();
    for (i, t) in m.tensor_maps.iter().enumerate() {
        if !seen.insert(t.name.as_str()) || m.buffers.iter().any(|b| b.name == t.name) {
            return Err(ctx.err(
                at!["tensor_maps", i, "name"],
                format!("tensor map `{}` shares its name with another tensor map or a buffer", t.name),
                "give every tensor map its own name (`tmap_in` for buffer `in`): an argument names one or the other",
            ));
        }
        let Some(b) = m.buffers.iter().find(|b| b.name == t.buffer) else {
            return Err(ctx.err(
                at!["tensor_maps", i, "buffer"],
                format!(
                    "tensor map `{}` views `{}`, which is not a buffer",
                    t.name, t.buffer
                ),
                "name one of the [[buffers]] in `buffer`",
            ));
        };
        if !b.memory.unwrap_or_default().is_device() {
            return Err(ctx.err(
                at!["tensor_maps", i, "buffer"],
                format!(
                    "tensor map `{}` views `{}`, which is not device memory",
                    t.name, t.buffer
                ),
                "give the buffer memory = \"device\" (the default): TMA copies from device memory",
            ));
        }
    }
    Ok(())
}

/// Variant, buffer and step names keep to the name grammar (`names`): they reach file names,
/// markdown tables, CSV cells, SVG and XML text, and `plan`'s one line per job.
fn check_names(ctx: &Ctx, m: &Manifest) -> Result<(), SuiteError> {
    use super::names::{MAX_NAME, name_fix, name_problem};
    let fail = |at, why| Err(ctx.err(at, why, name_fix(MAX_NAME)));
    for (i, b) in m.buffers.iter().enumerate() {
        if let Some(why) = name_problem("buffer name", &b.name, MAX_NAME) {
            return fail(at!["buffers", i, "name"], why);
        }
    }
    for v in &m.variants {
        if let Some(why) = name_problem("variant name", &v.name, MAX_NAME) {
            return fail(ctx.variant_key(v, "name"), why);
        }
        let mut labels: Vec<&String> = Vec::new();
        let mut stack: Vec<&super::manifest::StepDecl> = v.steps.iter().collect();
        while let Some(s) = stack.pop() {
            labels.extend(&s.label);
            stack.extend(&s.each);
        }
        // A label may also hold spaces, parentheses and brackets (`h2d a`, `k1 (stm1)`,
        // `s[0] waits`): none of them breaks a table, a CSV cell, XML or a line.
        if let Some(why) = labels.iter().find_map(|l| {
            let plain = l.replace([' ', '(', ')', '[', ']'], "_");
            name_problem("step label", &plain, MAX_NAME)
        }) {
            return fail(ctx.variant_key(v, "steps"), why);
        }
    }
    Ok(())
}

/// One variant: its source, its launches or steps, and its check's `same_as`.
fn validate_variant(
    ctx: &Ctx,
    m: &Manifest,
    v: &VariantDecl,
    sources: &BTreeMap<String, String>,
) -> Result<(), SuiteError> {
    let source = v
        .source
        .as_ref()
        .or(m.suite.source.as_ref())
        .ok_or_else(|| {
            ctx.err(
                ctx.variant_key(v, "name"),
                format!("variant `{}` has no source", v.name),
                "set `source = \"file.cu\"` in [suite] or in the variant",
            )
        })?;
    let src = &sources[source];
    if !v.launches.is_empty() && v.kernel.is_some() {
        return Err(ctx.err(ctx.launch_key(v, 0, "kernel"), format!("variant `{}` has both `kernel` and `launches`", v.name), "use `kernel`, `grid`, `block`, `args` for one launch, or [[variants.launches]] for several, not both"));
    }
    if !v.launches.is_empty() && v.cluster.is_some() {
        return Err(ctx.err(
            ctx.variant_key(v, "cluster"),
            format!("variant `{}` has `cluster` and `launches`", v.name),
            "put `cluster = [...]` on each [[variants.launches]] entry that runs in clusters",
        ));
    }
    if v.steps.is_empty() {
        if !v.streams.is_empty() {
            return Err(ctx.err(
                ctx.variant_key(v, "streams"),
                format!(
                    "variant `{}` declares streams and has no steps to put on them",
                    v.name
                ),
                "write the variant as [[variants.steps]] with `stream = ...`, or remove `streams`",
            ));
        }
        for (i, l) in v.launch_decls().iter().enumerate() {
            validate_launch(
                ctx,
                m,
                source,
                src,
                &format!("variant `{}` launch {}", v.name, i + 1),
                l,
                &|key| ctx.launch_key(v, i, key),
            )?;
        }
    } else {
        steps::validate(ctx, m, v, source, src)?;
    }
    let check = v.check.as_ref().or(m.suite.check.as_ref());
    if let Some(same) = check.and_then(|c| c.same_as.as_ref())
        && (!m.variants.iter().any(|o| &o.name == same) || same == &v.name)
    {
        return Err(ctx.err(
            ctx.check_key(v, "same_as"),
            format!(
                "variant `{}` checks against `{same}`, which is not another variant of this suite",
                v.name
            ),
            "name another variant in `same_as`",
        ));
    }
    Ok(())
}
