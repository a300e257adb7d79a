//! One kernel launch: its shape checked at load (kernel declared, grid, block, arguments), then
//! evaluated at a job's bindings into numbers, buffer indices and typed scalars.

use super::args::{buffer_arg, parse_scalar_arg, scalar_arg, tensor_map_arg};
use super::device_grid::{NOMINAL_SMS, SMS, names_sms, sms_grid, with_sms};
use super::job::{ArgSpec, BufferSpec, LaunchSpec};
use super::location::{Ctx, Seg, SuiteError};
use super::manifest::{LaunchDecl, Manifest, VariantDecl};
use crate::expr::{self, Bindings};

/// Checks one launch before anything is evaluated: its kernel is declared in the source, it has a
/// grid and a block, and each argument is a buffer (`a`, `a[offset]`) or a scalar expression.
/// `at` gives the manifest path of one of its keys, for the error's line.
pub(crate) fn validate_launch(
    ctx: &Ctx,
    m: &Manifest,
    source: &str,
    src: &str,
    what: &str,
    l: &LaunchDecl,
    at: &dyn Fn(&str) -> Vec<Seg>,
) -> Result<(), SuiteError> {
    let kernel = l.kernel.as_ref().ok_or_else(|| {
        ctx.err(
            at("kernel"),
            format!("{what} names no kernel"),
            "add `kernel = \"my_kernel\"` (an extern \"C\" __global__ function)",
        )
    })?;
    let declared = crate::cxx::global_functions(src);
    if !declared.contains(&crate::cxx::base_name(kernel)) {
        let found = if declared.is_empty() {
            "it declares no __global__ function".to_string()
        } else {
            format!("its __global__ functions: {}", declared.join(", "))
        };
        return Err(ctx.err(at("kernel"), format!("{what}: kernel `{kernel}` is not a __global__ function of {source} or its headers ({found})"), "name one of them, with template arguments and namespace where it has them (`ns::name<64, float>`, `name<{TILE}>` from a parameter)"));
    }
    if l.block.is_none() || l.grid.is_none() {
        return Err(ctx.err(
            at(if l.grid.is_none() { "grid" } else { "block" }),
            format!("{what} has no `grid` or `block`"),
            "add `grid = [\"ceil_div(N, 256)\"]` and `block = [\"256\"]` (1 to 3 expressions each)",
        ));
    }
    for arg in l.args.iter().flatten() {
        if buffer_arg(m, arg).is_none()
            && tensor_map_arg(m, arg).is_none()
            && parse_scalar_arg(arg).is_err()
        {
            return Err(ctx.err(at("args"), format!("{what}: argument `{arg}` is neither a buffer, a tensor map nor a scalar expression"), "name a [[buffers]] entry (`a`, or `a[OFFSET]` for a pointer OFFSET elements into it), a [[tensor_maps]] entry (passed as a 128-byte CUtensorMap), or write an expression such as `NX` or `u32: NX*NY`"));
        }
    }
    if let Some(c) = &l.cluster
        && (c.is_empty() || c.len() > 3)
    {
        return Err(ctx.err(
            at("cluster"),
            format!("{what}: cluster needs 1 to 3 entries, has {}", c.len()),
            "write it as [\"x\"], [\"x\", \"y\"] or [\"x\", \"y\", \"z\"]: blocks per cluster in each dimension",
        ));
    }
    Ok(())
}

/// The launches of a variant without steps, evaluated at `env`.
pub(crate) fn resolve_launches(
    ctx: &Ctx,
    m: &Manifest,
    v: &VariantDecl,
    env: &Bindings,
    buffers: &[BufferSpec],
) -> Result<Vec<LaunchSpec>, SuiteError> {
    let decls = v.launch_decls();
    if let Some(first) = decls.first()
        && first.pdl
    {
        return Err(ctx.err(ctx.launch_key(v, 0, "pdl"), format!("variant `{}`: its first launch has pdl = true; a programmatic dependent launch overlaps the launch before it, and before the first launch of a run is the previous run (or a timing event)", v.name), "set pdl = true on a later launch of [[variants.launches]], the one that may start while the launch before it finishes"));
    }
    decls
        .iter()
        .enumerate()
        .map(|(li, l)| {
            resolve_launch(ctx, m, buffers, &v.name, l, env, &|key| {
                ctx.launch_key(v, li, key)
            })
        })
        .collect()
}

/// A launch being resolved: the variant it belongs to and where its keys are, for errors.
struct Place<'a> {
    ctx: &'a Ctx<'a>,
    variant: &'a str,
    at: &'a dyn Fn(&str) -> Vec<Seg>,
}

impl Place<'_> {
    fn err(&self, key: &str, message: String, fix: &str) -> SuiteError {
        self.ctx.err((self.at)(key), message, fix)
    }

    /// An expression of key `key` (`what` says which) that did not evaluate.
    fn expr_error(&self, key: &str, what: &str, err: expr::ExprError) -> SuiteError {
        let variant = self.variant;
        self.err(
            key,
            format!("variant `{variant}`, {what}: {err}"),
            "use the names of the variant's params/axes and the suite's axes and params",
        )
    }

    /// A grid or block (`what`): 1 to 3 expressions, each 1 to 2^32-1.
    fn dims(&self, exprs: &[String], what: &str, env: &Bindings) -> Result<[u32; 3], SuiteError> {
        let variant = self.variant;
        if exprs.is_empty() || exprs.len() > 3 {
            return Err(self.err(
                what,
                format!(
                    "variant `{variant}`: {what} needs 1 to 3 entries, has {}",
                    exprs.len()
                ),
                "write it as [\"x\"], [\"x\", \"y\"] or [\"x\", \"y\", \"z\"]",
            ));
        }
        if what != "grid" && exprs.iter().any(|e| names_sms(e)) {
            return Err(self.err(
                what,
                format!("variant `{variant}`: {what} names `{SMS}`, the device's multiprocessor count, which only a grid may use"),
                "compute it from the suite's axes and params; `SMS` belongs in `grid` (a persistent kernel's blocks: grid = [\"SMS\"])",
            ));
        }
        let mut d = [1u32; 3];
        for (i, e) in exprs.iter().enumerate() {
            let n = expr::eval_count(e, env).map_err(|err| self.expr_error(what, what, err))?;
            if n == 0 || n > u32::MAX as u64 {
                return Err(self.err(
                    what,
                    format!("variant `{variant}`: {what}[{i}] = `{e}` gives {n}"),
                    "grid, block and cluster sizes must be between 1 and 2^32-1",
                ));
            }
            d[i] = n as u32;
        }
        Ok(d)
    }

    /// Blocks per cluster: each dimension divides the grid's.
    fn cluster(
        &self,
        exprs: &[String],
        grid: &[u32; 3],
        env: &Bindings,
    ) -> Result<[u32; 3], SuiteError> {
        let variant = self.variant;
        let cluster = self.dims(exprs, "cluster", env)?;
        if let Some(i) = (0..3).find(|&i| !grid[i].is_multiple_of(cluster[i])) {
            let axis = ["x", "y", "z"][i];
            return Err(self.err(
                "cluster",
                format!("variant `{variant}`: the grid {grid:?} is not a whole number of clusters {cluster:?} (in {axis}, {} blocks in clusters of {})", grid[i], cluster[i]),
                "make each grid dimension a multiple of the cluster's: round the grid up (`ceil_div(N, 256 * 16) * 16`) and let the kernel skip the blocks past the end",
            ));
        }
        Ok(cluster)
    }

    /// The launch's dynamic shared memory, 0 when it names none.
    fn shared_bytes(&self, l: &LaunchDecl, env: &Bindings) -> Result<u32, SuiteError> {
        let Some(e) = &l.shared_bytes else {
            return Ok(0);
        };
        let n = expr::eval_count(e, env)
            .map_err(|err| self.expr_error("shared_bytes", "shared_bytes", err))?;
        u32::try_from(n).map_err(|_| {
            let variant = self.variant;
            self.err(
                "shared_bytes",
                format!(
                    "variant `{variant}`: shared_bytes = {n} is far beyond any GPU's shared memory"
                ),
                "check the shared_bytes expression",
            )
        })
    }

    /// One argument: a buffer, a pointer into one, or a typed scalar.
    fn arg(
        &self,
        m: &Manifest,
        buffers: &[BufferSpec],
        a: &str,
        env: &Bindings,
    ) -> Result<ArgSpec, SuiteError> {
        let variant = self.variant;
        if let Some(i) = tensor_map_arg(m, a) {
            return Ok(ArgSpec::TensorMap(i));
        }
        match buffer_arg(m, a) {
            Some((i, None)) => return Ok(ArgSpec::Buffer(i)),
            Some((i, Some(offset))) => {
                let at_element = expr::eval_count(offset, env)
                    .map_err(|err| self.expr_error("args", &format!("argument `{a}`"), err))?;
                let len = buffers[i].len;
                if at_element >= len {
                    return Err(self.err("args", format!("variant `{variant}`: argument `{a}` points at element {at_element} of `{}`, which has {len}", m.buffers[i].name), "keep the offset inside the buffer"));
                }
                return Ok(ArgSpec::BufferAt(i, at_element));
            }
            None => {}
        }
        let (ty, e) = parse_scalar_arg(a).expect("validated");
        let x = expr::eval(e, env).map_err(|err| {
            // A bare name that is neither a parameter, a buffer nor a tensor map: say all three.
            if super::args::split_indexed(a).is_some_and(|(_, index)| index.is_none()) {
                let names = |v: Vec<&str>| if v.is_empty() { "none".to_string() } else { v.join(", ") };
                self.err("args", format!("variant `{variant}`, argument `{a}`: {err}; it is not a buffer ({}) nor a tensor map ({}) either", names(m.buffers.iter().map(|b| b.name.as_str()).collect()), names(m.tensor_maps.iter().map(|t| t.name.as_str()).collect())), "name a [[buffers]] or [[tensor_maps]] entry, or a parameter or axis")
            } else {
                self.expr_error("args", "argument", err)
            }
        })?;
        scalar_arg(ty, x).ok_or_else(|| self.err("args", format!("variant `{variant}`: argument `{a}` = {x} does not fit in {ty}"), "give it a wider type, for example `i64: NX*NY` (and take a long long in the kernel)"))
    }

    /// Every argument, with each buffer one a kernel can reach.
    fn args(
        &self,
        m: &Manifest,
        buffers: &[BufferSpec],
        l: &LaunchDecl,
        env: &Bindings,
    ) -> Result<Vec<ArgSpec>, SuiteError> {
        let args = l
            .args
            .iter()
            .flatten()
            .map(|a| self.arg(m, buffers, a, env))
            .collect::<Result<Vec<_>, _>>()?;
        let variant = self.variant;
        for a in &args {
            if let ArgSpec::Buffer(i) | ArgSpec::BufferAt(i, _) = a {
                let (b, memory) = (&buffers[*i], buffers[*i].memory);
                if !memory.kernel_visible() {
                    return Err(self.err("args", format!("variant `{variant}`: the kernel takes `{}`, which is {} host memory, and a kernel cannot reach that", b.name, memory.name()), "copy it to a device buffer first (a `copy = \"h2d\"` step), or make it memory = \"mapped\" (zero-copy) or \"managed\""));
                }
            }
        }
        Ok(args)
    }

    /// The kernel's C++ name with its `{PARAM}` template arguments filled in from the job's parameters.
    fn kernel(&self, l: &LaunchDecl, env: &Bindings) -> Result<String, SuiteError> {
        let variant = self.variant;
        let written = l.kernel.clone().expect("validated");
        crate::cxx::substitute(&written, |e| {
            let x = expr::eval(e, env).map_err(|err| format!("`{{{e}}}`: {err}"))?;
            Ok(if x.fract() == 0.0 && x.abs() < 9.0e15 { format!("{}", x as i64) } else { format!("{x}") })
        })
        .and_then(|k| crate::cxx::check_expression(&k).map(|_| k))
        .map_err(|e| self.err("kernel", format!("variant `{variant}`, kernel: {e}"), "write the kernel's C++ name, `{PARAM}` where a template argument comes from a parameter: kernel = \"tile_copy<{TILE}>\""))
    }
}

/// One launch, evaluated at `env` over the job's `buffers`; `at` gives the manifest path of one of its keys, for errors.
pub(crate) fn resolve_launch(
    ctx: &Ctx,
    m: &Manifest,
    buffers: &[BufferSpec],
    variant: &str,
    l: &LaunchDecl,
    env: &Bindings,
    at: &dyn Fn(&str) -> Vec<Seg>,
) -> Result<LaunchSpec, SuiteError> {
    let place = Place { ctx, variant, at };
    let block = place.dims(l.block.as_ref().expect("validated"), "block", env)?;
    // A grid that names SMS: the nominal count until a GPU's own is bound (device_grid.rs).
    let grid_exprs = l.grid.as_ref().expect("validated");
    let grid_of_sms = sms_grid(grid_exprs, env);
    let grid = match grid_of_sms {
        Some(_) => place.dims(grid_exprs, "grid", &with_sms(env, NOMINAL_SMS))?,
        None => place.dims(grid_exprs, "grid", env)?,
    };
    if block.iter().map(|&b| b as u64).product::<u64>() > 1024 {
        return Err(place.err(
            "block",
            format!("variant `{variant}`: block {block:?} has more than 1024 threads"),
            "choose block sizes whose product is at most 1024",
        ));
    }
    let shared_bytes = place.shared_bytes(l, env)?;
    let args = place.args(m, buffers, l, env)?;
    let cluster = match &l.cluster {
        Some(c) => Some(place.cluster(c, &grid, env)?),
        None => None,
    };
    Ok(LaunchSpec {
        kernel: place.kernel(l, env)?,
        grid,
        block,
        shared_bytes,
        args,
        cluster,
        pdl: l.pdl,
        grid_of_sms,
    })
}
