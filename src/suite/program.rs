//! What a variant runs at one point of the sweep: the program it compiles, its launches or host
//! program, and the device runtime's launch buffer of an rdc program.

use std::path::Path;

use super::job::{ArchTarget, BufferSpec, LaunchSpec, Program, StepProgram};
use super::launch::resolve_launches;
use super::location::{Ctx, SuiteError, at};
use super::manifest::{Manifest, VariantDecl};
use super::options::resolve_include_options;
use super::steps;
use crate::expr::{self, Bindings};

/// The most launches the device runtime may be asked to buffer: far past any suite's need
/// (one pending launch per parent block of a 2^24-element grid is 32 768), and each slot
/// reserves device memory.
pub const MAX_PENDING_LAUNCHES: u64 = 1 << 20;

/// The program a variant compiles at `env`: its source, options (with `-D` defines evaluated),
/// include directories, compiler and rdc; `dir` is the suite's directory.
pub(crate) fn resolve_program(
    ctx: &Ctx,
    m: &Manifest,
    dir: &Path,
    v: &VariantDecl,
    env: &Bindings,
) -> Result<Program, SuiteError> {
    let source = v
        .source
        .as_ref()
        .or(m.suite.source.as_ref())
        .expect("validated");
    let mut options = resolve_include_options(dir, m.suite.options.iter().chain(&v.options));
    for (name, e) in &v.defines {
        let value = expr::eval(e, env).map_err(|err| {
            ctx.err(
                {
                    let mut p = ctx.variant(v);
                    p.extend(at!["defines", name]);
                    p
                },
                format!("variant `{}`, define {name}: {err}", v.name),
                "use the names of the variant's params/axes and the suite's axes",
            )
        })?;
        options.push(format!("-D{name}={value}"));
    }
    let include_dirs = m
        .suite
        .include_dirs
        .iter()
        .chain(&v.include_dirs)
        .map(|d| dir.join(d))
        .collect();
    let compiler = v.compiler.or(m.suite.compiler).unwrap_or_default();
    let rdc = v.rdc.or(m.suite.rdc).unwrap_or(false);
    let arch_specific = v.arch.or(m.suite.arch).unwrap_or_default() == ArchTarget::Specific;
    Ok(Program {
        source_path: dir.join(source),
        options,
        include_dirs,
        compiler,
        rdc,
        arch_specific,
    })
}

/// The variant's `pending_launches` (or the suite's), evaluated: only for rdc programs, 1 to
/// MAX_PENDING_LAUNCHES.
pub(crate) fn resolve_pending_launches(
    ctx: &Ctx,
    m: &Manifest,
    v: &VariantDecl,
    rdc: bool,
    env: &Bindings,
) -> Result<Option<u32>, SuiteError> {
    let (e, key) = match (&v.pending_launches, &m.suite.pending_launches) {
        (Some(e), _) => (e, ctx.variant_key(v, "pending_launches")),
        (None, Some(e)) => (e, at!["suite", "pending_launches"]),
        (None, None) => return Ok(None),
    };
    if !rdc {
        return Err(ctx.err(key, format!("variant `{}` sets pending_launches, the device runtime's launch buffer, and is not built with rdc = true (only kernels that launch kernels use it)", v.name), "set rdc = true for the variant (or the suite), or remove pending_launches"));
    }
    let n = expr::eval_count(e, env).map_err(|err| {
        ctx.err(
            key.clone(),
            format!("variant `{}`, pending_launches: {err}", v.name),
            "use the names of the variant's params/axes and the suite's axes and params",
        )
    })?;
    if n == 0 || n > MAX_PENDING_LAUNCHES {
        return Err(ctx.err(key, format!("variant `{}`: pending_launches = `{e}` gives {n}, outside 1 to {MAX_PENDING_LAUNCHES}", v.name), "give an upper bound of the launches that can wait at once (each parent block's children, say); the device runtime's default is 2048"));
    }
    Ok(Some(n as u32))
}

/// What a variant runs: its launches, or its host program (steps) with the kernel steps' launches.
pub(crate) fn resolve_body(
    ctx: &Ctx,
    m: &Manifest,
    v: &VariantDecl,
    env: &Bindings,
    buffers: &[BufferSpec],
) -> Result<(Vec<LaunchSpec>, Option<StepProgram>), SuiteError> {
    if v.steps.is_empty() {
        return Ok((resolve_launches(ctx, m, v, env, buffers)?, None));
    }
    let (launches, program) = steps::resolve(ctx, m, v, env, buffers)?;
    Ok((launches, Some(program)))
}
