//! Job expansion: the sweep walked point by point, each variant resolved there into a job
//! (buffers, check, bound, launches or steps, program, thresholds and work).

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use super::buffers::{resolve_buffers, resolve_tensor_maps};
use super::check::{JobPoint, resolve_check};
use super::job::{ArgSpec, BoundSpec, BufferSpec, JobSpec, LaunchSpec, Reference, Work};
use super::location::{Ctx, SuiteError, at};
use super::manifest::{Manifest, NoiseThresholdDecl, VariantDecl};
use super::program::{resolve_body, resolve_pending_launches, resolve_program};
use super::sweep::{MAX_JOBS, combinations, job_count, job_key, to_bindings};
use crate::expr::{self, Bindings};
use crate::records::{GemmTypes, Math, SUPPORTED_GEMMS};
use crate::verify::CorrectnessSpec;

/// The manifest's sweep expanded into jobs: suite axes outermost, then variants in manifest
/// order, then each variant's own axes; `dir` is the suite's directory.
pub(crate) fn expand(ctx: &Ctx, m: &Manifest, dir: &Path) -> Result<Vec<JobSpec>, SuiteError> {
    let count = job_count(m);
    if count > MAX_JOBS {
        return Err(ctx.err(
            at!["axes"],
            format!("the sweep expands to {count} jobs, more than the {MAX_JOBS} a suite may have"),
            "sweep fewer values, or split the suite",
        ));
    }
    let mut jobs = Vec::new();
    for point in combinations(&m.axes) {
        for v in &m.variants {
            jobs.extend(variant_jobs(ctx, m, dir, v, &point)?);
        }
    }
    Ok(jobs)
}

/// Variant `v`'s jobs at one point of the suite's sweep (`point`: a value for each of the suite's
/// axes, which may also change `[params]`), one per combination of the variant's own axes.
fn variant_jobs(
    ctx: &Ctx,
    m: &Manifest,
    dir: &Path,
    v: &VariantDecl,
    point: &BTreeMap<String, i64>,
) -> Result<Vec<JobSpec>, SuiteError> {
    let mut group_all = m.params.clone();
    group_all.extend(point.clone());
    combinations(&v.axes)
        .into_iter()
        .map(|vaxes| {
            let mut variant_params = v.params.clone();
            variant_params.extend(vaxes);
            resolve_job(ctx, m, dir, v, &group_all, point, &variant_params)
        })
        .collect()
}

/// The jobs `--sanitize` runs where the manifest names a shape (`sanitize = { shape = { N = 4096 } }`
/// on a variant, else on the suite): each such variant, with each of its own parameter sets, at
/// that point. The shape gives every name the suite's axes bind, and may change `[params]`
/// (`{ S = 512 }` for a suite of one fixed size).
pub(crate) fn expand_sanitize(
    ctx: &Ctx,
    m: &Manifest,
    dir: &Path,
) -> Result<Vec<JobSpec>, SuiteError> {
    let axis_names: BTreeSet<String> = combinations(&m.axes)
        .into_iter()
        .flat_map(|c| c.into_keys())
        .collect();
    let mut jobs = Vec::new();
    for (i, v) in m.variants.iter().enumerate() {
        let (shape, place) = match (&v.sanitize, &m.suite.sanitize) {
            (Some(s), _) => (&s.shape, at!["variants", i, "sanitize", "shape"]),
            (None, Some(s)) => (&s.shape, at!["suite", "sanitize", "shape"]),
            (None, None) => continue,
        };
        check_shape(ctx, shape, (&axis_names, &m.params), place)?;
        jobs.extend(variant_jobs(ctx, m, dir, v, shape)?);
    }
    Ok(jobs)
}

/// A sanitize shape gives a value for each name the suite's axes bind, may change its `[params]`,
/// and names nothing else.
fn check_shape(
    ctx: &Ctx,
    shape: &BTreeMap<String, i64>,
    (axis_names, params): (&BTreeSet<String>, &BTreeMap<String, i64>),
    place: Vec<super::location::Seg>,
) -> Result<(), SuiteError> {
    let list = |names: Vec<&String>| {
        names
            .iter()
            .map(|n| format!("`{n}`"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let axes = list(axis_names.iter().collect());
    let example = format!(
        "sanitize = {{ shape = {{ {} }} }}",
        axis_names
            .iter()
            .chain(params.keys().take(usize::from(axis_names.is_empty())))
            .map(|n| format!("{n} = 1024"))
            .collect::<Vec<_>>()
            .join(", ")
    );
    let known = format!(
        "the suite's axes bind {}; its [params] are {}",
        if axes.is_empty() {
            "nothing".into()
        } else {
            axes
        },
        if params.is_empty() {
            "none".into()
        } else {
            list(params.keys().collect())
        }
    );
    if let Some(stray) = shape
        .keys()
        .find(|k| !axis_names.contains(*k) && !params.contains_key(*k))
    {
        return Err(ctx.err(
            place,
            format!("the sanitize shape names `{stray}`, which no axis binds and no [params] entry has ({known})"),
            format!("give a value for every axis name, and for [params] to change at the sanitize point only, as in {example}"),
        ));
    }
    if let Some(missing) = axis_names.iter().find(|n| !shape.contains_key(*n)) {
        return Err(ctx.err(
            place,
            format!("the sanitize shape gives no value for `{missing}` ({known})"),
            format!("give a value for every axis name, as in {example}"),
        ));
    }
    Ok(())
}

/// One variant at one point of the sweep; its bindings are the point's (`group_all`: the suite's
/// params and axes) and the variant's own (`variant_params`).
fn resolve_job(
    ctx: &Ctx,
    m: &Manifest,
    dir: &Path,
    v: &VariantDecl,
    group_all: &BTreeMap<String, i64>,
    group_params: &BTreeMap<String, i64>,
    variant_params: &BTreeMap<String, i64>,
) -> Result<JobSpec, SuiteError> {
    let env = &to_bindings(&[group_all, variant_params]);
    if env.contains_key(super::device_grid::SMS) {
        return Err(ctx.err(
            at!["axes"],
            format!("variant `{}`: the suite binds `SMS`, the name grids use for the device's multiprocessor count", v.name),
            "rename the axis or param (`SMS` is built in: grid = [\"SMS\"] launches one block an SM)",
        ));
    }
    let buffers = resolve_buffers(ctx, m, env, group_all)?;
    let math = resolve_math(ctx, m, v)?;
    let job = JobPoint {
        env,
        group_all,
        buffers: &buffers,
        math,
    };
    let (correctness, reference) = resolve_check(ctx, m, dir, v, &job)?;
    let bound = resolve_bound(ctx, m, v, &correctness, &buffers, math)?;
    let (launches, steps) = resolve_body(ctx, m, v, env, &buffers)?;
    let tensor_maps = resolve_tensor_maps(
        ctx,
        m,
        env,
        &buffers,
        &used_tensor_maps(&launches, reference.as_ref()),
    )?;
    Ok(JobSpec {
        key: job_key(&v.name, group_params, variant_params),
        suite: m.suite.name.clone(),
        pending_launches: resolve_pending_launches(
            ctx,
            m,
            v,
            v.rdc.or(m.suite.rdc).unwrap_or(false),
            env,
        )?,
        noise_threshold_pct: resolve_noise_threshold(ctx, m, v, env)?,
        program: resolve_program(ctx, m, dir, v, env)?,
        launches,
        steps,
        tensor_maps,
        buffers,
        correctness,
        reference,
        bound,
        work: Work {
            bytes: resolve_amount(ctx, m, v, env, "bytes")?,
            flops: resolve_amount(ctx, m, v, env, "flops")?,
            math,
        },
    })
}

/// The `[[tensor_maps]]` the job's launches and its reference's pass, in manifest order.
fn used_tensor_maps(launches: &[LaunchSpec], reference: Option<&Reference>) -> Vec<usize> {
    let mut used: Vec<usize> = launches
        .iter()
        .chain(reference.iter().flat_map(|r| &r.launches))
        .flat_map(|l| &l.args)
        .filter_map(|a| match a {
            ArgSpec::TensorMap(i) => Some(*i),
            _ => None,
        })
        .collect();
    used.sort_unstable();
    used.dedup();
    used
}

/// The variant's `math` (or the suite's): the roof its flops are judged against.
fn resolve_math(ctx: &Ctx, m: &Manifest, v: &VariantDecl) -> Result<Option<Math>, SuiteError> {
    let (text, key) = match (&v.math, &m.suite.math) {
        (Some(t), _) => (t, ctx.variant_key(v, "math")),
        (None, Some(t)) => (t, at!["suite", "math"]),
        (None, None) => return Ok(None),
    };
    Math::parse(text).map(Some).map_err(|why| {
        ctx.err(
            key,
            format!("variant `{}`: {why}", v.name),
            "name the units its flops run on: `fp32` (CUDA cores, the default), `fp64`, or a tensor-core input type such as `bf16-tensor`",
        )
    })
}

/// The job's `bytes` or `flops` (`what`): the variant's own expression when it has one, else the suite's.
fn resolve_amount(
    ctx: &Ctx,
    m: &Manifest,
    v: &VariantDecl,
    env: &Bindings,
    what: &str,
) -> Result<Option<f64>, SuiteError> {
    let (own, suite) = if what == "bytes" {
        (v.bytes.as_ref(), m.suite.bytes.as_ref())
    } else {
        (v.flops.as_ref(), m.suite.flops.as_ref())
    };
    let key = || {
        if own.is_some() {
            ctx.variant_key(v, what)
        } else {
            at!["suite", what]
        }
    };
    own.or(suite)
        .map(|e| {
            expr::eval(e, env).map_err(|err| {
                ctx.err(
                    key(),
                    format!("variant `{}`, {what}: {err}", v.name),
                    "use the suite's axes and params",
                )
            })
        })
        .transpose()
}

/// The variant's `noise_threshold` (or the suite's) for this job: a percentage above 0 and below
/// 100, or none where an expression gives 0 (the command line's threshold then holds).
fn resolve_noise_threshold(
    ctx: &Ctx,
    m: &Manifest,
    v: &VariantDecl,
    env: &Bindings,
) -> Result<Option<f64>, SuiteError> {
    let key = || {
        if v.noise_threshold.is_some() {
            ctx.variant_key(v, "noise_threshold")
        } else {
            at!["suite", "noise_threshold"]
        }
    };
    let (pct, what) = match v
        .noise_threshold
        .as_ref()
        .or(m.suite.noise_threshold.as_ref())
    {
        None => return Ok(None),
        Some(NoiseThresholdDecl::Percent(pct)) => (*pct, format!("noise_threshold {pct}")),
        Some(NoiseThresholdDecl::Expr(e)) => {
            // Which job: an expression may suit some of a sweep's jobs and not others.
            let job = env
                .iter()
                .map(|(name, value)| format!("{name}={value}"))
                .collect::<Vec<_>>()
                .join(", ");
            match expr::eval(e, env) {
                Ok(0.0) => return Ok(None),
                Ok(pct) => (
                    pct,
                    format!("noise_threshold = `{e}` gives {pct} for the job with {job}, which"),
                ),
                Err(err) => {
                    return Err(ctx.err(key(), format!("variant `{}`, noise_threshold, for the job with {job}: {err}", v.name), "write a percentage (noise_threshold = 20) or an expression over the job's axes and params that gives one, 0 for the command line's (\"if(CHILDREN == 32, 30, 0)\")"));
                }
            }
        }
    };
    if crate::records::usable_noise_threshold_pct(pct) {
        return Ok(Some(pct));
    }
    Err(ctx.err(key(), format!("variant `{}`: {what} is not a percentage above 0 and below 100", v.name), "write the threshold in percent, for example noise_threshold = 20 for 20%; an expression may give 0 for jobs that keep the command line's threshold"))
}

/// What the variant's `bound` (or the suite's) asks the job to be compared with.
fn resolve_bound(
    ctx: &Ctx,
    m: &Manifest,
    v: &VariantDecl,
    correctness: &CorrectnessSpec,
    buffers: &[BufferSpec],
    math: Option<Math>,
) -> Result<BoundSpec, SuiteError> {
    let fix = "write bound = \"copy\", \"cublas\" or \"cublas-tf32\" (with a matmul check) or \"variant:NAME\"";
    let (text, key) = match (&v.bound, &m.suite.bound) {
        (Some(t), _) => (Some(t.trim()), ctx.variant_key(v, "bound")),
        (None, t) => (t.as_deref().map(str::trim), at!["suite", "bound"]),
    };
    match text {
        None | Some("copy") => Ok(BoundSpec::Copy),
        Some(kind @ ("cublas" | "cublas-tf32")) => {
            cublas_bound(correctness, buffers, kind == "cublas-tf32", math)
                .map_err(|(why, fix)| ctx.err(key, format!("variant `{}`: {why}", v.name), fix))
        }
        Some(other) => match other.strip_prefix("variant:").map(str::trim) {
            Some(name) if m.variants.iter().any(|x| x.name == name) => Ok(BoundSpec::Variant {
                name: name.to_string(),
            }),
            Some(name) => Err(ctx.err(
                key,
                format!("bound names variant `{name}`, which this suite does not have"),
                format!(
                    "name one of: {}",
                    m.variants
                        .iter()
                        .map(|x| x.name.as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            )),
            None => Err(ctx.err(key, format!("unknown bound `{other}`"), fix)),
        },
    }
}

/// The cuBLAS or cuBLASLt GEMM at the shape and types of the job's matmul check, or why there is
/// none (and how to fix it).
fn cublas_bound(
    correctness: &CorrectnessSpec,
    buffers: &[BufferSpec],
    tf32: bool,
    math: Option<Math>,
) -> Result<BoundSpec, (String, String)> {
    let CorrectnessSpec::Matmul {
        a,
        b,
        output,
        shape,
        ..
    } = correctness
    else {
        return Err((
            "bound = \"cublas\" measures cuBLAS at the shape of a matmul check, and this variant has none".into(),
            "give the suite (or the variant) check = { op = \"matmul\", a = ..., b = ..., output = ..., m = ..., n = ..., k = ... }, or give this variant its own bound".into(),
        ));
    };
    let (ta, tb, out) = (buffers[*a].elem, buffers[*b].elem, buffers[*output].elem);
    let f16_accumulate = math == Some(Math::F16TensorF16Acc);
    let types = GemmTypes::new(ta, tb, out, f16_accumulate, tf32).map_err(|why| {
        (
            format!("bound = \"cublas\": {why}"),
            format!("the GEMMs a cublas bound measures: {SUPPORTED_GEMMS}; otherwise use bound = \"variant:NAME\" against one of your own variants"),
        )
    })?;
    let classic = types.is_classic();
    Ok(BoundSpec::Cublas {
        shape: *shape,
        elem: out,
        a_elem: (!classic).then_some(ta),
        b_elem: (!classic).then_some(tb),
        tf32,
        f16_accumulate,
    })
}
