//! Suites: find `kernels/<suite>/suite.toml` manifests, validate them, and expand sweeps into jobs.

pub mod job;
pub mod manifest;
pub mod sources;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

use crate::expr::{self, Bindings};
pub use crate::records::BoundSpec;
pub use crate::verify::{CopyMap, CorrectnessSpec, ElemType, Init, MatmulShape};
pub use job::*;
pub use manifest::*;

/// A manifest error: which file, which line when it can be found, what is wrong and how to fix it.
#[derive(Debug, thiserror::Error)]
#[error("{}{}: {message}\n  fix: {fix}", .file.display(), .line.map(|l| format!(":{l}")).unwrap_or_default())]
pub struct SuiteError {
    pub file: PathBuf,
    pub line: Option<usize>,
    pub message: String,
    pub fix: String,
}

/// A loaded, validated suite.
#[derive(Debug, Clone)]
pub struct Suite {
    pub manifest: Manifest,
    pub path: PathBuf,
    pub dir: PathBuf,
    /// sha256 over the manifest and every source it names: a report says exactly which code it measured.
    pub source_hash: String,
    /// The sweep expanded into jobs, once, at load (suite axes outermost, then variants in manifest order).
    pub jobs: Vec<JobSpec>,
}

impl Suite {
    pub fn name(&self) -> &str {
        &self.manifest.suite.name
    }
}

/// serde's words for a value of the wrong shape, in the manifest's terms.
fn plain_toml_error(message: &str) -> String {
    if message.contains("untagged enum AxisValue") {
        "a sweep value must be a whole number (`N = [1024, 4096]`) or a table of whole numbers (`shape = [{ NX = 4000, NY = 4000 }]`)".into()
    } else if message.contains("invalid type: floating point") && message.contains("i64") {
        format!("a whole number is needed here, not a fraction ({message})")
    } else {
        message.to_string()
    }
}

/// 1-based line of byte `at` of `text`.
fn line_at(text: &str, at: usize) -> usize {
    text.as_bytes()[..at.min(text.len())]
        .iter()
        .filter(|&&b| b == b'\n')
        .count()
        + 1
}

/// One step of a path into the manifest: a key of a table, or an element of an array.
#[derive(Debug, Clone)]
enum Seg {
    Key(String),
    At(usize),
}

impl From<&str> for Seg {
    fn from(k: &str) -> Seg {
        Seg::Key(k.to_string())
    }
}

impl From<&String> for Seg {
    fn from(k: &String) -> Seg {
        Seg::Key(k.clone())
    }
}

impl From<usize> for Seg {
    fn from(i: usize) -> Seg {
        Seg::At(i)
    }
}

/// A path into the manifest: `at!["variants", 2, "grid"]`.
macro_rules! at {
    ($($seg:expr),* $(,)?) => { vec![$(Seg::from($seg)),*] };
}

// After `at!`, which it uses.
mod steps;

/// The line of the deepest part of `path` the manifest has: the key's own line where the path
/// ends at a key (`len = ...` of the third buffer), the element's where it ends in an array.
fn line_of_path(text: &str, path: &[Seg]) -> Option<usize> {
    use toml::de::{DeTable, DeValue};
    // Parsed again only when an error is reported: loading a valid manifest pays nothing.
    let root = DeValue::Table(DeTable::parse(text).ok()?.into_inner());
    let mut found = None;
    let mut here = &root;
    for seg in path {
        let next = match (seg, here) {
            (Seg::Key(k), DeValue::Table(t)) => t
                .get_key_value(k.as_str())
                .map(|(key, v)| (key.span().start, v)),
            (Seg::At(i), DeValue::Array(a)) => a.get(*i).map(|v| (v.span().start, v)),
            _ => None,
        };
        let Some((start, v)) = next else { break };
        found = Some(start);
        here = v.get_ref();
    }
    found.map(|at| line_at(text, at))
}

struct Ctx<'a> {
    path: &'a Path,
    text: &'a str,
    manifest: Option<&'a Manifest>,
}

impl Ctx<'_> {
    /// An error at the line of `path` in the manifest (its deepest part that is written there).
    fn err(
        &self,
        path: Vec<Seg>,
        message: impl Into<String>,
        fix: impl Into<String>,
    ) -> SuiteError {
        SuiteError {
            file: self.path.to_path_buf(),
            line: line_of_path(self.text, &path),
            message: message.into(),
            fix: fix.into(),
        }
    }

    /// Where variant `v` is: `[[variants]]` number i.
    fn variant(&self, v: &VariantDecl) -> Vec<Seg> {
        let i = self
            .manifest
            .and_then(|m| m.variants.iter().position(|x| std::ptr::eq(x, v)))
            .unwrap_or(0);
        at!["variants", i]
    }

    /// Where key `key` of variant `v` is, or of its launch `launch` when it has `[[variants.launches]]`.
    fn launch_key(&self, v: &VariantDecl, launch: usize, key: &str) -> Vec<Seg> {
        let mut p = self.variant(v);
        if !v.launches.is_empty() {
            p.extend(at!["launches", launch]);
        }
        p.push(key.into());
        p
    }

    /// Where key `key` of the check that applies to `v` is: the variant's own, else the suite's.
    fn check_key(&self, v: &VariantDecl, key: &str) -> Vec<Seg> {
        let mut p = if v.check.is_some() {
            self.variant(v)
        } else {
            at!["suite"]
        };
        p.extend(at!["check", key]);
        p
    }
}

/// The largest kernel source read, in bytes: far past any real one, and a guard against
/// `/dev/zero` or a huge file named by mistake.
pub const MAX_FILE_BYTES: u64 = 16 << 20;
/// The largest manifest read, in bytes: the built-in ones are under 20 KiB; a manifest of 1 MiB
/// (some 10 000 variants) loads in a fraction of a second, and one of 50 MB took 14 s and 2.6 GB.
pub const MAX_MANIFEST_BYTES: u64 = 1 << 20;
/// The most jobs one suite may expand to (a sweep of millions is a typo, not a study).
pub const MAX_JOBS: usize = 100_000;

/// Why a manifest or source could not be read, with the line of a byte that is not UTF-8.
struct ReadError {
    message: String,
    line: Option<usize>,
    fix: String,
}

/// Reads a manifest or source: a regular file (never a FIFO or a device) of at most `limit` bytes, as UTF-8.
fn read_limited(path: &Path, limit: u64) -> Result<String, ReadError> {
    let plain = |message: String, fix: &str| ReadError {
        message,
        line: None,
        fix: fix.into(),
    };
    let meta = std::fs::metadata(path).map_err(|e| {
        plain(
            format!("cannot read: {e}"),
            "check the path and its permissions (paths are relative to suite.toml)",
        )
    })?;
    if !meta.is_file() {
        return Err(plain(
            "not a regular file (a directory, a FIFO or a device is never read)".into(),
            "name a regular text file (paths are relative to suite.toml)",
        ));
    }
    if meta.len() > limit {
        return Err(plain(
            format!("{} bytes, more than the {limit} gpu-lab reads", meta.len()),
            "split it: a suite of this size is a mistake (docs/suite-format.md, limits)",
        ));
    }
    let bytes = std::fs::read(path)
        .map_err(|e| plain(format!("cannot read: {e}"), "check the file's permissions"))?;
    String::from_utf8(bytes).map_err(|e| {
        let at = e.utf8_error().valid_up_to();
        let line = e.as_bytes()[..at].iter().filter(|&&b| b == b'\n').count() + 1;
        ReadError {
            message: format!("not UTF-8 text: byte {at} (line {line}) is 0x{:02x}, which UTF-8 does not allow there", e.as_bytes()[at]),
            line: Some(line),
            fix: "save the file as UTF-8 (an editor's \"encoding\" setting, or `iconv -f LATIN1 -t UTF-8`), or remove that byte".into(),
        }
    })
}

/// Parses and validates one manifest file.
pub fn load(path: &Path) -> Result<Suite, SuiteError> {
    let text = read_limited(path, MAX_MANIFEST_BYTES).map_err(|e| SuiteError {
        file: path.to_path_buf(),
        line: e.line,
        message: e.message,
        fix: e.fix,
    })?;
    let manifest: Manifest = toml::from_str(&text).map_err(|e| SuiteError {
        file: path.to_path_buf(),
        line: e.span().map(|s| line_at(&text, s.start)),
        message: plain_toml_error(e.message()),
        fix: "see docs/suite-format.md for the manifest format".into(),
    })?;
    let dir = path.parent().unwrap_or(Path::new(".")).to_path_buf();
    let ctx = Ctx {
        path,
        text: &text,
        manifest: Some(&manifest),
    };
    // `--suite NAME` finds DIR/NAME/suite.toml, so the two names must agree or the suite cannot be asked for.
    if let Some(dir_name) = dir.file_name().map(|n| n.to_string_lossy().to_string())
        && path.file_name().is_some_and(|f| f == "suite.toml")
        && dir_name != manifest.suite.name
    {
        return Err(ctx.err(
            at!["suite", "name"],
            format!(
                "the suite is named `{}` but its directory is `{dir_name}`",
                manifest.suite.name
            ),
            format!(
                "rename the directory to `{}` or set name = \"{dir_name}\"",
                manifest.suite.name
            ),
        ));
    }
    let mut hasher = Sha256::new();
    hasher.update(text.as_bytes());
    // Each source with where it is named first: the suite's, else the first variant's that names it.
    let mut sources: BTreeMap<String, Vec<Seg>> = BTreeMap::new();
    if let Some(s) = &manifest.suite.source {
        sources.insert(s.clone(), at!["suite", "source"]);
    }
    for (i, v) in manifest.variants.iter().enumerate() {
        if let Some(s) = &v.source {
            sources
                .entry(s.clone())
                .or_insert_with(|| at!["variants", i, "source"]);
        }
    }
    let canonical_dir = dir.canonicalize().unwrap_or_else(|_| dir.clone());
    // Paths (sources, include directories, headers) are relative to suite.toml and stay under
    // it, unless the manifest says otherwise.
    let outside = |p: &Path| {
        !manifest.suite.allow_outside
            && p.exists()
            && !p
                .canonicalize()
                .is_ok_and(|c| c.starts_with(&canonical_dir))
    };
    let outside_headers = "move the headers into the suite's directory, or set allow_outside = true in [suite] to share another suite's headers";
    // `-I` directories are paths like sources (their headers are read and hashed at load).
    let option_lists = std::iter::once((at!["suite", "options"], &manifest.suite.options)).chain(
        manifest
            .variants
            .iter()
            .enumerate()
            .map(|(i, v)| (at!["variants", i, "options"], &v.options)),
    );
    for (list_at, options) in option_lists {
        for (j, o) in options.iter().enumerate() {
            let mut named_at = list_at.clone();
            named_at.push(j.into());
            // The split forms would name a directory gpu-lab cannot confine or hash.
            if matches!(o.as_str(), "-I" | "--include-path")
                || o.starts_with("-isystem")
                || o.starts_with("--system-include")
            {
                return Err(ctx.err(named_at, format!("option `{o}` names an include directory in a form gpu-lab cannot check"), "write it joined, `-Idir` or `--include-path=dir` (relative to suite.toml), or use include_dirs"));
            }
            if is_rdc_option(o) {
                return Err(ctx.err(named_at, format!("option `{o}` asks for relocatable device code or a device link, which gpu-lab does itself (it compiles, links the device runtime and loads the result)"), "remove the option and set rdc = true in [suite] or in the variant (docs/suite-format.md, dynamic parallelism)"));
            }
            if let Some(d) = include_dir(o).filter(|d| outside(&dir.join(d))) {
                return Err(ctx.err(named_at, format!("include directory `{d}` (option `{o}`) lies outside the suite's directory {}", dir.display()), outside_headers));
            }
        }
    }
    let mut include_options = resolve_include_options(
        &dir,
        manifest
            .suite
            .options
            .iter()
            .chain(manifest.variants.iter().flat_map(|v| v.options.iter())),
    );
    // `include_dirs` likewise, each where it is first named.
    let include_dirs = manifest
        .suite
        .include_dirs
        .iter()
        .enumerate()
        .map(|(j, d)| (d, at!["suite", "include_dirs", j]))
        .chain(manifest.variants.iter().enumerate().flat_map(|(i, v)| {
            v.include_dirs
                .iter()
                .enumerate()
                .map(move |(j, d)| (d, at!["variants", i, "include_dirs", j]))
        }));
    for (d, named_at) in include_dirs {
        let p = dir.join(d);
        if outside(&p) {
            return Err(ctx.err(
                named_at,
                format!(
                    "include directory `{d}` lies outside the suite's directory {}",
                    dir.display()
                ),
                outside_headers,
            ));
        }
        if !p.is_dir() {
            return Err(ctx.err(
                named_at,
                format!(
                    "include directory `{d}` is not a directory ({})",
                    p.display()
                ),
                "name a directory of headers, relative to suite.toml",
            ));
        }
        include_options.push(format!("-I{}", p.display()));
    }
    // Each source with the text of its local headers: kernels may be declared in either.
    let mut source_texts = BTreeMap::new();
    for (s, named_at) in &sources {
        let p = dir.join(s);
        if outside(&p) {
            return Err(ctx.err(
                named_at.clone(),
                format!("source `{s}` lies outside the suite's directory {}", dir.display()),
                "move the source into the suite's directory, or set allow_outside = true in [suite] to share a kernel of another suite",
            ));
        }
        let src = read_limited(&p, MAX_FILE_BYTES).map_err(|e| {
            ctx.err(
                named_at.clone(),
                format!("source `{s}` ({}): {}", p.display(), e.message),
                e.fix,
            )
        })?;
        hasher.update(src.as_bytes());
        // Headers count too: a report must say which code it measured. They are paths like
        // sources: inside the suite's directory unless the manifest says otherwise.
        let found = sources::headers(&p, &src, &include_options);
        if let Some(h) = found.iter().find(|h| outside(&h.path)) {
            return Err(ctx.err(named_at.clone(), format!("source `{s}` includes header `{}` ({}), which lies outside the suite's directory {}", h.name, h.path.display(), dir.display()), outside_headers));
        }
        let headers = sources::headers_text(&found);
        hasher.update(headers.as_bytes());
        source_texts.insert(s.clone(), format!("{src}\n{headers}"));
    }
    validate(&ctx, &manifest, &source_texts)?;
    // Expanding here surfaces every expression error at load time, not mid-run.
    let mut suite = Suite {
        manifest,
        path: path.to_path_buf(),
        dir,
        source_hash: sources::hex(&hasher.finalize()),
        jobs: Vec::new(),
    };
    let ctx = Ctx {
        path,
        text: &text,
        manifest: Some(&suite.manifest),
    };
    let jobs = expand_with(&ctx, &suite)?;
    // Two jobs of one id (a sweep value given twice) would overwrite each other's records.
    let mut ids = std::collections::HashSet::new();
    if let Some(j) = jobs.iter().find(|j| !ids.insert(j.key.id.as_str())) {
        return Err(ctx.err(
            repeated_axis(&suite.manifest),
            format!(
                "job `{}` appears twice: a sweep axis repeats a value",
                j.key.id
            ),
            "give every value of a sweep axis once",
        ));
    }
    suite.jobs = jobs;
    Ok(suite)
}

/// True for an option that asks for relocatable device code or a device link (`-rdc=true`, `-dc`,
/// `--device-link`, `-lcudadevrt`, …): the manifest's `rdc = true` says that instead, because the
/// harness runs the compile and link steps and must know which to run.
pub fn is_rdc_option(option: &str) -> bool {
    let name = option.split('=').next().unwrap_or(option);
    matches!(
        name,
        "-rdc"
            | "--relocatable-device-code"
            | "-dc"
            | "--device-c"
            | "-dw"
            | "--device-w"
            | "-dlink"
            | "--device-link"
            | "-lcudadevrt"
            | "--cudadevrt"
            | "-cudadevrt"
    ) || option == "--library=cudadevrt"
}

/// The most launches the device runtime may be asked to buffer: far past any suite's need
/// (one pending launch per parent block of a 2^24-element grid is 32 768), and each slot
/// reserves device memory.
pub const MAX_PENDING_LAUNCHES: u64 = 1 << 20;

/// The directory of an NVRTC include option (`-Idir`, `--include-path=dir`), if it is one.
fn include_dir(option: &str) -> Option<&str> {
    option
        .strip_prefix("--include-path=")
        .or_else(|| option.strip_prefix("-I"))
        .filter(|d| !d.is_empty())
}

/// The options with each include directory made relative to the suite's directory, as sources are.
fn resolve_include_options<'a>(
    dir: &Path,
    options: impl Iterator<Item = &'a String>,
) -> Vec<String> {
    options
        .map(|o| match include_dir(o) {
            Some(d) => format!("-I{}", dir.join(d).display()),
            None => o.clone(),
        })
        .collect()
}

/// Where the first sweep axis with a value given twice is (the suite's axes, then each variant's).
fn repeated_axis(m: &Manifest) -> Vec<Seg> {
    let repeats = |values: &Vec<AxisValue>| {
        values
            .iter()
            .enumerate()
            .any(|(i, v)| values[..i].contains(v))
    };
    if let Some(name) = m.axes.iter().find(|(_, v)| repeats(v)).map(|(n, _)| n) {
        return at!["axes", name];
    }
    for (i, v) in m.variants.iter().enumerate() {
        if let Some(name) = v.axes.iter().find(|(_, v)| repeats(v)).map(|(n, _)| n) {
            return at!["variants", i, "axes", name];
        }
    }
    at!["axes"]
}

/// True when `src` declares a `__global__` function of the kernel's name (`wt::gemm<float, 64>`
/// is declared by `template <…> __global__ void gemm(…)`).
pub fn source_declares_kernel(src: &str, kernel: &str) -> bool {
    crate::cxx::global_functions(src).contains(&crate::cxx::base_name(kernel))
}

fn validate(ctx: &Ctx, m: &Manifest, sources: &BTreeMap<String, String>) -> Result<(), SuiteError> {
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
    let mut seen = std::collections::HashSet::new();
    for (i, b) in m.buffers.iter().enumerate() {
        if !seen.insert(b.name.as_str()) {
            return Err(ctx.err(
                at!["buffers", i, "name"],
                format!("buffer `{}` is declared twice", b.name),
                "give every buffer its own name",
            ));
        }
    }
    let mut names = std::collections::HashSet::new();
    for v in &m.variants {
        let anchor = || {
            let mut p = ctx.variant(v);
            p.push("name".into());
            p
        };
        if !names.insert(v.name.as_str()) {
            return Err(ctx.err(
                anchor(),
                format!("variant `{}` is declared twice", v.name),
                "give every variant its own name",
            ));
        }
        let source = v
            .source
            .as_ref()
            .or(m.suite.source.as_ref())
            .ok_or_else(|| {
                ctx.err(
                    anchor(),
                    format!("variant `{}` has no source", v.name),
                    "set `source = \"file.cu\"` in [suite] or in the variant",
                )
            })?;
        let src = &sources[source];
        if !v.launches.is_empty() && v.kernel.is_some() {
            return Err(ctx.err(ctx.launch_key(v, 0, "kernel"), format!("variant `{}` has both `kernel` and `launches`", v.name), "use `kernel`, `grid`, `block`, `args` for one launch, or [[variants.launches]] for several, not both"));
        }
        if v.steps.is_empty() {
            if !v.streams.is_empty() {
                return Err(ctx.err({ let mut p = ctx.variant(v); p.push("streams".into()); p }, format!("variant `{}` declares streams and has no steps to put on them", v.name), "write the variant as [[variants.steps]] with `stream = ...`, or remove `streams`"));
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
            return Err(ctx.err(ctx.check_key(v, "same_as"), format!("variant `{}` checks against `{same}`, which is not another variant of this suite", v.name), "name another variant in `same_as`"));
        }
    }
    Ok(())
}

/// Checks one launch before anything is evaluated: its kernel is declared in the source, it has a
/// grid and a block, and each argument is a buffer (`a`, `a[offset]`) or a scalar expression.
/// `at` gives the manifest path of one of its keys, for the error's line.
fn validate_launch(
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
        if buffer_arg(m, arg).is_none() && parse_scalar_arg(arg).is_err() {
            return Err(ctx.err(at("args"), format!("{what}: argument `{arg}` is neither a buffer nor a scalar expression"), "name a [[buffers]] entry (`a`, or `a[OFFSET]` for a pointer OFFSET elements into it), or write an expression such as `NX` or `u32: NX*NY`"));
        }
    }
    Ok(())
}

/// A reference to a buffer or a part of it: `a` (index, None) or `a[chunk * M]` (index, the
/// offset's expression), when `text` names one of the manifest's buffers.
pub(crate) fn buffer_arg<'t>(m: &Manifest, text: &'t str) -> Option<(usize, Option<&'t str>)> {
    let (name, offset) = split_indexed(text)?;
    m.buffers
        .iter()
        .position(|b| b.name == name)
        .map(|i| (i, offset))
}

/// `name` -> (name, None); `name[expr]` -> (name, Some(expr)); None for anything else.
pub(crate) fn split_indexed(text: &str) -> Option<(&str, Option<&str>)> {
    let text = text.trim();
    let is_name = |n: &str| !n.is_empty() && n.chars().all(|c| c.is_alphanumeric() || c == '_');
    match text.strip_suffix(']').and_then(|t| t.split_once('[')) {
        Some((name, index)) if is_name(name.trim()) && !index.trim().is_empty() => {
            Some((name.trim(), Some(index.trim())))
        }
        Some(_) => None,
        None => is_name(text).then_some((text, None)),
    }
}

/// Splits `u32: NX*NY` into its type and expression; plain expressions are i32.
fn parse_scalar_arg(arg: &str) -> Result<(&str, &str), ()> {
    let (ty, e) = match arg.split_once(':') {
        Some((t, e)) => (t.trim(), e.trim()),
        None => ("i32", arg.trim()),
    };
    if ["i32", "u32", "i64", "u64", "f32", "f64", "f16", "bf16"].contains(&ty) && !e.is_empty() {
        Ok((ty, e))
    } else {
        Err(())
    }
}

/// Every combination of the axes, each as the bindings it adds.
fn combinations(axes: &BTreeMap<String, Vec<AxisValue>>) -> Vec<BTreeMap<String, i64>> {
    let mut out = vec![BTreeMap::new()];
    for (axis, values) in axes {
        let mut next = Vec::new();
        for prefix in &out {
            for v in values {
                let mut b = prefix.clone();
                match v {
                    AxisValue::Number(n) => {
                        b.insert(axis.clone(), *n);
                    }
                    AxisValue::Table(t) => b.extend(t.clone()),
                }
                next.push(b);
            }
        }
        out = next;
    }
    out
}

fn to_bindings(params: &[&BTreeMap<String, i64>]) -> Bindings {
    params
        .iter()
        .flat_map(|p| p.iter().map(|(k, v)| (k.clone(), *v as f64)))
        .collect()
}

fn expand_with(ctx: &Ctx, suite: &Suite) -> Result<Vec<JobSpec>, SuiteError> {
    let m = &suite.manifest;
    // Counted before anything is expanded: the sizes multiply.
    let points = |axes: &BTreeMap<String, Vec<AxisValue>>| {
        axes.values().fold(1usize, |n, v| n.saturating_mul(v.len()))
    };
    let count = points(&m.axes).saturating_mul(
        m.variants
            .iter()
            .fold(0usize, |n, v| n.saturating_add(points(&v.axes))),
    );
    if count > MAX_JOBS {
        return Err(ctx.err(
            at!["axes"],
            format!("the sweep expands to {count} jobs, more than the {MAX_JOBS} a suite may have"),
            "sweep fewer values, or split the suite",
        ));
    }
    let mut jobs = Vec::new();
    for group_params in combinations(&m.axes) {
        let mut group_all = m.params.clone();
        group_all.extend(group_params.clone());
        for v in &m.variants {
            for vaxes in combinations(&v.axes) {
                let mut variant_params = v.params.clone();
                variant_params.extend(vaxes);
                let env = to_bindings(&[&group_all, &variant_params]);
                jobs.push(resolve_job(
                    ctx,
                    suite,
                    v,
                    &env,
                    &group_all,
                    &group_params,
                    &variant_params,
                )?);
            }
        }
    }
    Ok(jobs)
}

fn resolve_program(
    ctx: &Ctx,
    suite: &Suite,
    v: &VariantDecl,
    env: &Bindings,
) -> Result<Program, SuiteError> {
    let source = v
        .source
        .as_ref()
        .or(suite.manifest.suite.source.as_ref())
        .expect("validated");
    let mut options = resolve_include_options(
        &suite.dir,
        suite.manifest.suite.options.iter().chain(&v.options),
    );
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
    let include_dirs = suite
        .manifest
        .suite
        .include_dirs
        .iter()
        .chain(&v.include_dirs)
        .map(|d| suite.dir.join(d))
        .collect();
    let compiler = v
        .compiler
        .or(suite.manifest.suite.compiler)
        .unwrap_or_default();
    let rdc = v.rdc.or(suite.manifest.suite.rdc).unwrap_or(false);
    Ok(Program {
        source_path: suite.dir.join(source),
        options,
        include_dirs,
        compiler,
        rdc,
    })
}

/// The variant's `pending_launches` (or the suite's), evaluated: only for rdc programs, 1 to
/// MAX_PENDING_LAUNCHES.
fn resolve_pending_launches(
    ctx: &Ctx,
    m: &Manifest,
    v: &VariantDecl,
    rdc: bool,
    env: &Bindings,
) -> Result<Option<u32>, SuiteError> {
    let (e, key) = match (&v.pending_launches, &m.suite.pending_launches) {
        (Some(e), _) => (e, {
            let mut p = ctx.variant(v);
            p.push("pending_launches".into());
            p
        }),
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
fn resolve_body(
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

fn resolve_launches(
    ctx: &Ctx,
    m: &Manifest,
    v: &VariantDecl,
    env: &Bindings,
    buffers: &[BufferSpec],
) -> Result<Vec<LaunchSpec>, SuiteError> {
    v.launch_decls()
        .iter()
        .enumerate()
        .map(|(li, l)| {
            resolve_launch(ctx, m, buffers, &v.name, l, env, &|key| {
                ctx.launch_key(v, li, key)
            })
        })
        .collect()
}

/// One launch, evaluated at `env` over the job's `buffers`; `at` gives the manifest path of one of its keys, for errors.
fn resolve_launch(
    ctx: &Ctx,
    m: &Manifest,
    buffers: &[BufferSpec],
    variant: &str,
    l: &LaunchDecl,
    env: &Bindings,
    at: &dyn Fn(&str) -> Vec<Seg>,
) -> Result<LaunchSpec, SuiteError> {
    let fail = |key: &str, what: &str, err: expr::ExprError| {
        ctx.err(
            at(key),
            format!("variant `{variant}`, {what}: {err}"),
            "use the names of the variant's params/axes and the suite's axes and params",
        )
    };
    let dims = |exprs: &Vec<String>, what: &str| -> Result<[u32; 3], SuiteError> {
        if exprs.is_empty() || exprs.len() > 3 {
            return Err(ctx.err(
                at(what),
                format!(
                    "variant `{variant}`: {what} needs 1 to 3 entries, has {}",
                    exprs.len()
                ),
                "write it as [\"x\"], [\"x\", \"y\"] or [\"x\", \"y\", \"z\"]",
            ));
        }
        let mut d = [1u32; 3];
        for (i, e) in exprs.iter().enumerate() {
            let n = expr::eval_count(e, env).map_err(|err| fail(what, what, err))?;
            if n == 0 || n > u32::MAX as u64 {
                return Err(ctx.err(
                    at(what),
                    format!("variant `{variant}`: {what}[{i}] = `{e}` gives {n}"),
                    "grid and block sizes must be between 1 and 2^32-1",
                ));
            }
            d[i] = n as u32;
        }
        Ok(d)
    };
    let block = dims(l.block.as_ref().expect("validated"), "block")?;
    let grid = dims(l.grid.as_ref().expect("validated"), "grid")?;
    if block.iter().map(|&b| b as u64).product::<u64>() > 1024 {
        return Err(ctx.err(
            at("block"),
            format!("variant `{variant}`: block {block:?} has more than 1024 threads"),
            "choose block sizes whose product is at most 1024",
        ));
    }
    let shared_bytes = match &l.shared_bytes {
        Some(e) => {
            let n = expr::eval_count(e, env)
                .map_err(|err| fail("shared_bytes", "shared_bytes", err))?;
            u32::try_from(n).map_err(|_| ctx.err(at("shared_bytes"), format!("variant `{variant}`: shared_bytes = {n} is far beyond any GPU's shared memory"), "check the shared_bytes expression"))?
        }
        None => 0,
    };
    let mut args = Vec::new();
    for a in l.args.iter().flatten() {
        match buffer_arg(m, a) {
            Some((i, None)) => {
                args.push(ArgSpec::Buffer(i));
                continue;
            }
            Some((i, Some(offset))) => {
                let at_element = expr::eval_count(offset, env)
                    .map_err(|err| fail("args", &format!("argument `{a}`"), err))?;
                let len = buffers[i].len;
                if at_element >= len {
                    return Err(ctx.err(at("args"), format!("variant `{variant}`: argument `{a}` points at element {at_element} of `{}`, which has {len}", m.buffers[i].name), "keep the offset inside the buffer"));
                }
                args.push(ArgSpec::BufferAt(i, at_element));
                continue;
            }
            None => {}
        }
        let (ty, e) = parse_scalar_arg(a).expect("validated");
        let x = expr::eval(e, env).map_err(|err| fail("args", "argument", err))?;
        let (lo, hi) = match ty {
            "u32" => (0.0, u32::MAX as f64),
            "i64" => (i64::MIN as f64, i64::MAX as f64),
            "u64" => (0.0, u64::MAX as f64),
            "f32" => (f32::MIN as f64, f32::MAX as f64),
            "f16" => (half::f16::MIN.to_f64(), half::f16::MAX.to_f64()),
            "bf16" => (half::bf16::MIN.to_f64(), half::bf16::MAX.to_f64()),
            "f64" => (f64::MIN, f64::MAX),
            _ => (i32::MIN as f64, i32::MAX as f64),
        };
        if x < lo || x > hi {
            return Err(ctx.err(at("args"), format!("variant `{variant}`: argument `{a}` = {x} does not fit in {ty}"), "give it a wider type, for example `i64: NX*NY` (and take a long long in the kernel)"));
        }
        args.push(match ty {
            "u32" => ArgSpec::U32(x as u32),
            "i64" => ArgSpec::I64(x as i64),
            "u64" => ArgSpec::U64(x as u64),
            "f32" => ArgSpec::F32(x as f32),
            "f64" => ArgSpec::F64(x),
            "f16" => ArgSpec::F16(half::f16::from_f64(x).to_bits()),
            "bf16" => ArgSpec::Bf16(half::bf16::from_f64(x).to_bits()),
            _ => ArgSpec::I32(x as i32),
        });
    }
    for a in &args {
        if let ArgSpec::Buffer(i) | ArgSpec::BufferAt(i, _) = a {
            let (b, memory) = (&buffers[*i], buffers[*i].memory);
            if !memory.kernel_visible() {
                return Err(ctx.err(at("args"), format!("variant `{variant}`: the kernel takes `{}`, which is {} host memory, and a kernel cannot reach that", b.name, memory.name()), "copy it to a device buffer first (a `copy = \"h2d\"` step), or make it memory = \"mapped\" (zero-copy) or \"managed\""));
            }
        }
    }
    // `tile_copy<{TILE}>`: template arguments from the job's parameters.
    let written = l.kernel.clone().expect("validated");
    let kernel = crate::cxx::substitute(&written, |e| {
        let x = expr::eval(e, env).map_err(|err| format!("`{{{e}}}`: {err}"))?;
        Ok(if x.fract() == 0.0 && x.abs() < 9.0e15 { format!("{}", x as i64) } else { format!("{x}") })
    })
    .and_then(|k| crate::cxx::check_expression(&k).map(|_| k))
    .map_err(|e| ctx.err(at("kernel"), format!("variant `{variant}`, kernel: {e}"), "write the kernel's C++ name, `{PARAM}` where a template argument comes from a parameter: kernel = \"tile_copy<{TILE}>\""))?;
    Ok(LaunchSpec {
        kernel,
        grid,
        block,
        shared_bytes,
        args,
    })
}

fn resolve_job(
    ctx: &Ctx,
    suite: &Suite,
    v: &VariantDecl,
    env: &Bindings,
    group_all: &BTreeMap<String, i64>,
    group_params: &BTreeMap<String, i64>,
    variant_params: &BTreeMap<String, i64>,
) -> Result<JobSpec, SuiteError> {
    let m = &suite.manifest;
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
    let tolerance = |decl: &ToleranceDecl, output: usize| -> Result<f64, SuiteError> {
        decl.relative(buffers[output].elem).map_err(|e| ctx.err(ctx.check_key(v, "tolerance"), format!("variant `{}`: {e}", v.name), "write tolerance = 1e-3 (a relative error) or tolerance = \"8 eps\" (multiples of the output type's epsilon)"))
    };
    let buffer_index = |name: Option<&String>, role: &str| -> Result<usize, SuiteError> {
        let name = name.ok_or_else(|| {
            ctx.err(
                ctx.check_key(v, role),
                format!("variant `{}`: the check has no `{role}` buffer", v.name),
                format!("add `{role} = \"buffer name\"` to the check"),
            )
        })?;
        m.buffers
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
    };
    let check_decl = v.check.as_ref().or(m.suite.check.as_ref());
    let mut reference = None;
    let correctness = match check_decl {
        None => CorrectnessSpec::None,
        Some(c) if c.same_as.is_some() => {
            let other = m
                .variants
                .iter()
                .find(|o| Some(&o.name) == c.same_as.as_ref())
                .expect("validated");
            // The reference runs at this job's sizes with its own parameters (the first point of its own axes).
            let mut ref_params = other.params.clone();
            ref_params.extend(combinations(&other.axes).swap_remove(0));
            let ref_env = to_bindings(&[group_all, &ref_params]);
            let (launches, steps) = resolve_body(ctx, m, other, &ref_env, &buffers)?;
            reference = Some(Reference {
                variant: other.name.clone(),
                program: resolve_program(ctx, suite, other, &ref_env)?,
                launches,
                steps,
            });
            let output = buffer_index(c.output.as_ref(), "output")?;
            let reference_output = match &c.reference_output {
                Some(name) => {
                    Some(buffer_index(Some(name), "reference_output")?).filter(|&r| r != output)
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
            CorrectnessSpec::SameAs {
                output,
                reference_output,
                tolerance: tolerance(&c.tolerance, output)?,
            }
        }
        Some(c) => {
            // An optional whole-number expression of the check, with its default.
            let number =
                |e: &Option<String>, what: &str, default: u64| -> Result<u64, SuiteError> {
                    let Some(e) = e else { return Ok(default) };
                    expr::eval_count(e, env).map_err(|err| {
                        ctx.err(
                            ctx.check_key(v, what),
                            format!("variant `{}`, check {what}: {err}", v.name),
                            "use the suite's axes and the variant's params",
                        )
                    })
                };
            let required =
                |e: &Option<String>, what: &str, example: &str| -> Result<u64, SuiteError> {
                    let present = e.as_ref().ok_or_else(|| {
                        ctx.err(
                            ctx.check_key(v, what),
                            format!(
                                "variant `{}`: a {} check needs `{what}`",
                                v.name,
                                c.op.as_deref().unwrap_or("")
                            ),
                            format!("add `{what} = \"expression\"` ({example})"),
                        )
                    })?;
                    number(&Some(present.clone()), what, 0)
                };
            // The input and output buffers, of one element type.
            let input_output = || -> Result<(usize, usize), SuiteError> {
                let (input, output) = (
                    buffer_index(c.input.as_ref(), "input")?,
                    buffer_index(c.output.as_ref(), "output")?,
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
            };
            let input_stride = || -> Result<u64, SuiteError> {
                match number(&c.input_stride, "input_stride", 1)? {
                    0 => Err(ctx.err(
                        ctx.check_key(v, "input_stride"),
                        format!("variant `{}`: check input_stride is 0", v.name),
                        "use input_stride >= 1 (1 reads every element)",
                    )),
                    n => Ok(n),
                }
            };
            match c.op.as_deref() {
                None | Some("none") => CorrectnessSpec::None,
                Some("copy") => {
                    let (input, output) = input_output()?;
                    let map = CopyMap { input_offset: number(&c.input_offset, "input_offset", 0)? as usize, input_stride: input_stride()? as usize, output_offset: number(&c.output_offset, "output_offset", 0)? as usize };
                    // A plain copy must cover the whole input: a short output would hide unwritten elements.
                    let mapped = c.input_offset.is_some() || c.input_stride.is_some() || c.output_offset.is_some();
                    if !mapped && buffers[output].len < buffers[input].len {
                        return Err(ctx.err(ctx.check_key(v, "output"), format!("variant `{}`: a copy check needs an output at least as long as the input", v.name), "give `output` len >= the input's, or say which part of the input it holds with input_offset / input_stride"));
                    }
                    CorrectnessSpec::Copy { input, output, map }
                }
                Some("transpose") => {
                    let (input, output) = input_output()?;
                    let (rows, cols) = (required(&c.rows, "rows", "the input's rows")?, required(&c.cols, "cols", "the input's columns")?);
                    for i in [input, output] {
                        let need = rows.saturating_mul(cols);
                        if buffers[i].len < need {
                            return Err(ctx.err(ctx.check_key(v, "rows"), format!("variant `{}`: buffer `{}` holds {} elements, fewer than rows x cols = {rows} x {cols}", v.name, buffers[i].name, buffers[i].len), "make the buffer len at least rows*cols"));
                        }
                    }
                    CorrectnessSpec::Transpose { input, output, rows, cols }
                }
                Some("sum") => {
                    let (input, output) = input_output()?;
                    let count = required(&c.count, "count", "the number of partial results, e.g. the kernel's grid size")?;
                    if count == 0 || count > buffers[output].len {
                        return Err(ctx.err(ctx.check_key(v, "count"), format!("variant `{}`: sum check count {count} must be between 1 and the {} elements of `{}`", v.name, buffers[output].len, buffers[output].name), "make the output buffer hold every partial result"));
                    }
                    let tolerance = tolerance(&c.tolerance, output)?;
                    if buffers[input].elem.is_float() && tolerance <= 0.0 && buffers[input].init != Init::RandomInt {
                        return Err(ctx.err(ctx.check_key(v, "op"), format!("variant `{}`: a float sum of random fractions depends on the order of the adds and cannot be checked bit for bit", v.name), "give the input init = \"random_int\" (whole numbers: float sums of them are exact) or add a tolerance (the largest accepted error as a fraction of sum|x|)"));
                    }
                    CorrectnessSpec::Sum { input, output, count, input_stride: input_stride()?, tolerance }
                }
                Some("matmul") => {
                    let named = |name: Option<&String>, role: &str| buffer_index(name, role);
                    let (a, b, output) = (named(c.a.as_ref(), "a")?, named(c.b.as_ref(), "b")?, buffer_index(c.output.as_ref(), "output")?);
                    let elem = buffers[output].elem;
                    if buffers[a].elem != elem || buffers[b].elem != elem || !elem.is_float() {
                        return Err(ctx.err(ctx.check_key(v, "op"), format!("variant `{}`: a matmul check needs a, b and output of one float type", v.name), "use f32 (or f64) buffers for a, b and output"));
                    }
                    let dim = |e: &Option<String>, what: &str| required(e, what, "an expression such as `S`");
                    let scalar = |e: &Option<String>, what: &str, default: f64| -> Result<f64, SuiteError> {
                        e.as_ref().map_or(Ok(default), |e| expr::eval(e, env).map_err(|err| ctx.err(ctx.check_key(v, what), format!("variant `{}`, check {what}: {err}", v.name), "write a number or an expression of the suite's axes")))
                    };
                    let shape = MatmulShape { m: dim(&c.m, "m")?, n: dim(&c.n, "n")?, k: dim(&c.k, "k")?, alpha: scalar(&c.alpha, "alpha", 1.0)?, beta: scalar(&c.beta, "beta", 0.0)?, trans_a: c.trans_a, trans_b: c.trans_b };
                    for (i, need, what) in [(a, shape.m.checked_mul(shape.k), "m * k"), (b, shape.k.checked_mul(shape.n), "k * n"), (output, shape.m.checked_mul(shape.n), "m * n")] {
                        let need = need.unwrap_or(u64::MAX);
                        if shape.m == 0 || shape.n == 0 || shape.k == 0 || buffers[i].len < need {
                            return Err(ctx.err(ctx.check_key(v, "m"), format!("variant `{}`: buffer `{}` holds {} elements, fewer than {what} = {need} (or a dimension is 0)", v.name, buffers[i].name, buffers[i].len), "make the buffers as large as the product's m, n and k say"));
                        }
                    }
                    if shape.beta != 0.0 && !buffers[output].has_data() {
                        return Err(ctx.err(ctx.check_key(v, "beta"), format!("variant `{}`: beta = {} reads the output's initial values, but `{}` starts as {:?}", v.name, shape.beta, buffers[output].name, buffers[output].init), "initialise the output with init = \"random\", or set beta = \"0\""));
                    }
                    CorrectnessSpec::Matmul { a, b, output, shape, tolerance: tolerance(&c.tolerance, output)? }
                }
                Some("scan") => {
                    let (input, output) = input_output()?;
                    let count = number(&c.count, "count", buffers[input].len)?;
                    if count == 0 || count > buffers[input].len || count > buffers[output].len {
                        return Err(ctx.err(ctx.check_key(v, "count"), format!("variant `{}`: scan check count {count} must be between 1 and the length of both `{}` ({}) and `{}` ({})", v.name, buffers[input].name, buffers[input].len, buffers[output].name, buffers[output].len), "give count = \"N\" no longer than the buffers"));
                    }
                    let tolerance = tolerance(&c.tolerance, output)?;
                    if buffers[input].elem.is_float() && tolerance <= 0.0 && buffers[input].init != Init::RandomInt {
                        return Err(ctx.err(ctx.check_key(v, "tolerance"), format!("variant `{}`: a float scan of random fractions depends on the order of the adds and cannot be checked bit for bit", v.name), format!("give the input init = \"random_int\" (whole numbers: exact while the prefixes stay below 2^24) or a tolerance, e.g. \"{} eps\" (the worst case of a {count}-term float sum)", count)));
                    }
                    CorrectnessSpec::Scan { input, output, count, exclusive: c.exclusive, tolerance }
                }
                Some("compact") => {
                    let (input, output) = input_output()?;
                    let keep = c.keep.as_deref().map(|k| crate::verify::Keep::parse(k).ok_or(k)).unwrap_or(Err("")).map_err(|k| ctx.err(ctx.check_key(v, "keep"), format!("variant `{}`: a compact check needs keep = \"positive\", \"nonzero\" or \"even\" (got `{k}`)", v.name), "say which elements the compaction keeps"))?;
                    if buffers[output].init != Init::Poison {
                        return Err(ctx.err(ctx.check_key(v, "output"), format!("variant `{}`: a compact check reads the end of `{}` to see that nothing was written past the kept elements, so it must start as poison", v.name, buffers[output].name), "give the output init = \"poison\""));
                    }
                    CorrectnessSpec::Compact { input, output, keep }
                }
                Some("sort") => {
                    let (input, output) = input_output()?;
                    if buffers[output].len < buffers[input].len {
                        return Err(ctx.err(ctx.check_key(v, "output"), format!("variant `{}`: a sort check needs an output as long as the input", v.name), "make the output at least as long as the input"));
                    }
                    CorrectnessSpec::Sort { input, output }
                }
                Some("histogram") => {
                    let (input, output) = (buffer_index(c.input.as_ref(), "input")?, buffer_index(c.output.as_ref(), "output")?);
                    let bins = required(&c.bins, "bins", "the number of bins")?;
                    if bins == 0 || bins > buffers[output].len || buffers[output].elem.is_float() {
                        return Err(ctx.err(ctx.check_key(v, "bins"), format!("variant `{}`: a histogram check needs 1 to {} bins in the integer buffer `{}`", v.name, buffers[output].len, buffers[output].name), "give bins = \"B\" with an integer output of at least B elements"));
                    }
                    CorrectnessSpec::Histogram { input, output, bins }
                }
                Some("function") => {
                    let (input, output) = (buffer_index(c.input.as_ref(), "input")?, buffer_index(c.output.as_ref(), "output")?);
                    let exponent = c.exponent.as_ref().map(|e| expr::eval(e, env).map_err(|err| ctx.err(ctx.check_key(v, "exponent"), format!("variant `{}`, check exponent: {err}", v.name), "write a number or an expression of the suite's axes"))).transpose()?;
                    let name = c.function.as_deref().unwrap_or("");
                    let f = crate::verify::MathFn::parse(name, exponent).ok_or_else(|| ctx.err(ctx.check_key(v, "fn"), format!("variant `{}`: a function check needs fn = \"sin\", \"cos\", \"exp\", \"log\", \"sqrt\", \"tanh\" or \"pow\" (with exponent = \"...\"); got `{name}`", v.name), "name the function the kernel computes of each input element"))?;
                    let max_ulp = c.max_ulp.unwrap_or(0.0);
                    if !(buffers[input].elem.is_float() && buffers[output].elem.is_float() && max_ulp.is_finite() && max_ulp >= 0.0) {
                        return Err(ctx.err(ctx.check_key(v, "max_ulp"), format!("variant `{}`: a function check needs float input and output and a max_ulp >= 0", v.name), "use float buffers and, e.g., max_ulp = 2"));
                    }
                    CorrectnessSpec::Function { input, output, f, max_ulp }
                }
                Some("add") => {
                    let (a, b, output) = (buffer_index(c.a.as_ref(), "a")?, buffer_index(c.b.as_ref(), "b")?, buffer_index(c.output.as_ref(), "output")?);
                    let (ea, eb, eo) = (buffers[a].elem, buffers[b].elem, buffers[output].elem);
                    if ea != eb {
                        return Err(ctx.err(ctx.check_key(v, "b"), format!("variant `{}`: an add check's a `{}` is {} and its b `{}` is {}", v.name, buffers[a].name, ea.name(), buffers[b].name, eb.name()), "give a and b one element type (the output may be wider)"));
                    }
                    if ea.is_float() != eo.is_float() {
                        let kind = |e: ElemType| if e.is_float() { "a float" } else { "an integer" };
                        return Err(ctx.err(ctx.check_key(v, "output"), format!("variant `{}`: an add check's a and b are {} ({}) and its output `{}` is {} ({})", v.name, kind(ea), ea.name(), buffers[output].name, kind(eo), eo.name()), "add floats into a float output and integers into an integer one"));
                    }
                    for (i, role) in [(a, "a"), (b, "b")] {
                        if buffers[i].len < buffers[output].len {
                            return Err(ctx.err(ctx.check_key(v, role), format!("variant `{}`: an add check's {role} `{}` holds {} elements, fewer than the {} of output `{}`", v.name, buffers[i].name, buffers[i].len, buffers[output].len, buffers[output].name), "every element of the output is checked: make a and b at least as long as it"));
                        }
                    }
                    CorrectnessSpec::Add { a, b, output, tolerance: tolerance(&c.tolerance, output)? }
                }
                Some(other) => return Err(ctx.err(ctx.check_key(v, "op"), format!("variant `{}`: unknown check op `{other}`", v.name), "use op = \"copy\", \"transpose\", \"sum\", \"matmul\", \"scan\", \"compact\", \"sort\", \"histogram\", \"function\", \"add\" or \"none\", or same_as = \"variant\"")),
            }
        }
    };
    for input in correctness.inputs() {
        if !buffers[input].has_data() {
            return Err(ctx.err(at!["buffers", input, "init"], format!("variant `{}`: check input `{}` starts as {:?}, which cannot show wrong indexing", v.name, buffers[input].name, buffers[input].init), "initialise the check's input with init = \"random\""));
        }
    }
    let bound = resolve_bound(ctx, m, v, &correctness, &buffers)?;
    let amount = |e: Option<&String>, what: &str| -> Result<Option<f64>, SuiteError> {
        // The variant's own `bytes`/`flops` when it has one, else the suite's.
        let own = if what == "bytes" {
            v.bytes.is_some()
        } else {
            v.flops.is_some()
        };
        let key = || {
            if own {
                let mut p = ctx.variant(v);
                p.push(what.into());
                p
            } else {
                at!["suite", what]
            }
        };
        e.map(|e| {
            expr::eval(e, env).map_err(|err| {
                ctx.err(
                    key(),
                    format!("variant `{}`, {what}: {err}", v.name),
                    "use the suite's axes and params",
                )
            })
        })
        .transpose()
    };
    let (launches, steps) = resolve_body(ctx, m, v, env, &buffers)?;
    let group = format_params(group_params);
    let label_params = if variant_params.is_empty() {
        String::new()
    } else {
        format!("[{}]", format_params(variant_params))
    };
    Ok(JobSpec {
        key: JobKey {
            id: format!(
                "{}{} @ {}",
                v.name,
                label_params,
                if group.is_empty() { "-" } else { &group }
            ),
            variant: v.name.clone(),
            variant_params: variant_params.clone(),
            group,
            group_params: group_params.clone(),
        },
        suite: m.suite.name.clone(),
        pending_launches: resolve_pending_launches(
            ctx,
            m,
            v,
            v.rdc.or(m.suite.rdc).unwrap_or(false),
            env,
        )?,
        noise_threshold_pct: resolve_noise_threshold(ctx, m, v, env)?,
        program: resolve_program(ctx, suite, v, env)?,
        launches,
        steps,
        buffers,
        correctness,
        reference,
        bound,
        work: Work {
            bytes: amount(v.bytes.as_ref().or(m.suite.bytes.as_ref()), "bytes")?,
            flops: amount(v.flops.as_ref().or(m.suite.flops.as_ref()), "flops")?,
        },
    })
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
            let mut p = ctx.variant(v);
            p.push("noise_threshold".into());
            p
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

/// What the suite's `bound` asks each job to be compared with.
fn resolve_bound(
    ctx: &Ctx,
    m: &Manifest,
    v: &VariantDecl,
    correctness: &CorrectnessSpec,
    buffers: &[BufferSpec],
) -> Result<BoundSpec, SuiteError> {
    let fix = "write bound = \"copy\", \"cublas\" (with a matmul check) or \"variant:NAME\"";
    match m.suite.bound.as_deref().map(str::trim) {
        None | Some("copy") => Ok(BoundSpec::Copy),
        Some("cublas") => match correctness {
            CorrectnessSpec::Matmul { output, .. } if !matches!(buffers[*output].elem, ElemType::F32 | ElemType::F64) => Err(ctx.err(at!["suite", "bound"], format!("variant `{}`: bound = \"cublas\" measures cuBLAS SGEMM or DGEMM, and this product is {}", v.name, buffers[*output].elem.name()), "use f32 or f64 buffers, or bound = \"variant:NAME\" against one of your own variants")),
            CorrectnessSpec::Matmul { output, shape, .. } => Ok(BoundSpec::Cublas { shape: *shape, elem: buffers[*output].elem }),
            _ => Err(ctx.err(at!["suite", "bound"], format!("variant `{}`: bound = \"cublas\" measures cuBLAS at the shape of a matmul check, and this variant has none", v.name), "give the suite (or the variant) check = { op = \"matmul\", a = ..., b = ..., output = ..., m = ..., n = ..., k = ... }")),
        },
        Some(other) => match other.strip_prefix("variant:").map(str::trim) {
            Some(name) if m.variants.iter().any(|x| x.name == name) => Ok(BoundSpec::Variant { name: name.to_string() }),
            Some(name) => Err(ctx.err(at!["suite", "bound"], format!("bound names variant `{name}`, which this suite does not have"), format!("name one of: {}", m.variants.iter().map(|x| x.name.as_str()).collect::<Vec<_>>().join(", ")))),
            None => Err(ctx.err(at!["suite", "bound"], format!("unknown bound `{other}`"), fix)),
        },
    }
}

/// Every `suite.toml` directly under the search directories, by suite directory name.
pub fn discover(dirs: &[PathBuf]) -> BTreeMap<String, PathBuf> {
    let mut found = BTreeMap::new();
    for dir in dirs {
        let Ok(entries) = std::fs::read_dir(dir) else {
            continue;
        };
        let mut paths: Vec<_> = entries
            .flatten()
            .map(|e| e.path().join("suite.toml"))
            .filter(|p| p.is_file())
            .collect();
        paths.sort();
        for p in paths {
            let name = p
                .parent()
                .and_then(|d| d.file_name())
                .map(|n| n.to_string_lossy().to_string())
                .unwrap_or_default();
            found.entry(name).or_insert(p);
        }
    }
    found
}

/// Loads the named suites (`all` for every suite found).
pub fn load_named(names: &[String], dirs: &[PathBuf]) -> anyhow::Result<Vec<Suite>> {
    let found = discover(dirs);
    let wanted: Vec<String> = if names.iter().any(|n| n == "all") {
        found.keys().cloned().collect()
    } else {
        names.to_vec()
    };
    let mut suites = Vec::new();
    for name in wanted {
        let path = found.get(&name).ok_or_else(|| {
            anyhow::anyhow!(
                "no suite named `{name}`; suites found: {}\n  fix: pick one of those, or add --suite-dir DIR where DIR/{name}/suite.toml exists (searched: {})",
                found.keys().cloned().collect::<Vec<_>>().join(", "),
                dirs.iter().map(|d| d.display().to_string()).collect::<Vec<_>>().join(", ")
            )
        })?;
        suites.push(load(path)?);
    }
    Ok(suites)
}
