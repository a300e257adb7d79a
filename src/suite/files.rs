//! The files a manifest names (sources, include directories and the headers they pull in):
//! each kept under the suite's directory unless the manifest allows otherwise, read with limits, and hashed.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

use super::location::{Ctx, Seg, SuiteError, at};
use super::manifest::Manifest;
use super::option_grammar;
use super::options::{
    include_dir, is_rdc_option, is_split_path_option, pre_include_file, resolve_include_options,
};
use super::sources;
use crate::store::{self, FileKind, read_regular};

/// The largest kernel source read, in bytes: far past any real one, and a guard against a huge
/// file named by mistake.
pub const MAX_FILE_BYTES: u64 = FileKind::KERNEL_SOURCE.max_bytes;

/// Why a manifest or source could not be read, with the line of a byte that is not UTF-8.
pub(crate) struct ReadError {
    pub(crate) message: String,
    pub(crate) line: Option<usize>,
    pub(crate) fix: String,
}

/// Reads a manifest or source: a regular file (never a FIFO or a device) within `kind`'s limit, as UTF-8.
pub(crate) fn read_limited(path: &Path, kind: FileKind) -> Result<String, ReadError> {
    let plain = |message: String, fix: &str| ReadError {
        message,
        line: None,
        fix: fix.into(),
    };
    let bytes = read_regular(path, kind).map_err(|e| match e {
        store::ReadError::Find(e) => plain(
            format!("cannot read: {e}"),
            "check the path and its permissions (paths are relative to suite.toml)",
        ),
        store::ReadError::NotRegular { .. } => plain(
            "not a regular file (a directory, a FIFO or a device is never read)".into(),
            "name a regular text file (paths are relative to suite.toml)",
        ),
        store::ReadError::TooLarge { size, max, .. } => plain(
            format!("{size} bytes, more than the {max} gpu-lab reads"),
            "split it: a suite of this size is a mistake (docs/suite-format.md, limits)",
        ),
        store::ReadError::Open(e) | store::ReadError::Read(e) => {
            plain(format!("cannot read: {e}"), "check the file's permissions")
        }
    })?;
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

/// What a header outside the suite's directory is told.
const OUTSIDE_HEADERS: &str = "move the headers into the suite's directory, or set allow_outside = true in [suite] to share another suite's headers";

/// The suite's directory, and whether the manifest lets paths leave it.
pub(crate) struct SuiteDir {
    pub(crate) dir: PathBuf,
    canonical: PathBuf,
    allow_outside: bool,
}

impl SuiteDir {
    pub(crate) fn new(dir: &Path, m: &Manifest) -> SuiteDir {
        SuiteDir {
            dir: dir.to_path_buf(),
            canonical: dir.canonicalize().unwrap_or_else(|_| dir.to_path_buf()),
            allow_outside: m.suite.allow_outside,
        }
    }

    /// Paths (sources, include directories, headers) are relative to suite.toml and stay under
    /// it, unless the manifest says otherwise.
    fn outside(&self, p: &Path) -> bool {
        !self.allow_outside
            && p.exists()
            && !p
                .canonicalize()
                .is_ok_and(|c| c.starts_with(&self.canonical))
    }
}

/// Every compiler option and define of the suite and its variants: on the allow-list
/// (`option_grammar`), no split path form, no rdc option, no include directory or pre-included
/// file outside the suite's (their headers are read and hashed at load), define names that are C
/// identifiers, and include directories of shell-safe names.
pub(crate) fn check_options(
    ctx: &Ctx,
    m: &Manifest,
    suite_dir: &SuiteDir,
) -> Result<(), SuiteError> {
    let option_lists = std::iter::once((at!["suite", "options"], &m.suite.options)).chain(
        m.variants
            .iter()
            .enumerate()
            .map(|(i, v)| (at!["variants", i, "options"], &v.options)),
    );
    for (list_at, options) in option_lists {
        let mut j = 0;
        while j < options.len() {
            let mut named_at = list_at.clone();
            named_at.push(j.into());
            check_one_option(ctx, named_at, &options[j], options.get(j + 1), suite_dir)?;
            j += if option_grammar::takes_next_value(&options[j]) {
                2
            } else {
                1
            };
        }
    }
    for (i, v) in m.variants.iter().enumerate() {
        if let Some(name) = v
            .defines
            .keys()
            .find(|n| !option_grammar::is_define_name(n))
        {
            return Err(ctx.err(at!["variants", i, "defines", name], format!("variant `{}`: define name `{}` is not a C identifier ([A-Za-z_][A-Za-z0-9_]*, at most 128 characters)", v.name, name.escape_debug()), "name the macro with letters, digits and `_`, starting with a letter or `_`; the value goes on the right of `=`"));
        }
    }
    for (d, named_at) in include_dirs_named(m) {
        if let Some(c) = option_grammar::first_unsafe(d) {
            return Err(ctx.err(
                named_at,
                format!(
                    "include directory `{}` holds `{}`, which nvcc's shell could act on",
                    d.escape_debug(),
                    c.escape_debug()
                ),
                "rename the directory with letters, digits and `_ . , = + - / : @ %` only",
            ));
        }
    }
    Ok(())
}

/// Every `include_dirs` entry of the manifest, the suite's then each variant's, with where it
/// is named.
fn include_dirs_named(m: &Manifest) -> impl Iterator<Item = (&String, Vec<Seg>)> {
    let suite = m
        .suite
        .include_dirs
        .iter()
        .enumerate()
        .map(|(j, d)| (d, at!["suite", "include_dirs", j]));
    let variants = m.variants.iter().enumerate().flat_map(|(i, v)| {
        v.include_dirs
            .iter()
            .enumerate()
            .map(move |(j, d)| (d, at!["variants", i, "include_dirs", j]))
    });
    suite.chain(variants)
}

/// One option at `named_at` (`next`: the entry after it, the value of a split `-Xptxas`).
fn check_one_option(
    ctx: &Ctx,
    named_at: Vec<Seg>,
    o: &str,
    next: Option<&String>,
    suite_dir: &SuiteDir,
) -> Result<(), SuiteError> {
    // The split forms would name a directory or file gpu-lab cannot confine or hash.
    if is_split_path_option(o) {
        return Err(ctx.err(named_at, format!("option `{o}` names an include directory or file in a form gpu-lab cannot check"), "write it joined, `-Idir`, `--include-path=dir` or `--pre-include=file` (relative to suite.toml), or use include_dirs"));
    }
    if is_rdc_option(o) {
        return Err(ctx.err(named_at, format!("option `{o}` asks for relocatable device code or a device link, which gpu-lab does itself (it compiles, links the device runtime and loads the result)"), "remove the option and set rdc = true in [suite] or in the variant (docs/suite-format.md, dynamic parallelism)"));
    }
    option_grammar::check_option(o).map_err(|r| ctx.err(named_at.clone(), r.message, r.fix))?;
    if option_grammar::takes_next_value(o) {
        let value = next.ok_or_else(|| {
            ctx.err(
                named_at.clone(),
                format!("option `{o}` has no value after it"),
                format!("write it as `{o}=value`"),
            )
        })?;
        option_grammar::check_sub_options(o, value)
            .map_err(|r| ctx.err(named_at.clone(), r.message, r.fix))?;
    }
    if let Some(d) = include_dir(o).filter(|d| suite_dir.outside(&suite_dir.dir.join(d))) {
        return Err(ctx.err(
            named_at,
            format!(
                "include directory `{d}` (option `{o}`) lies outside the suite's directory {}",
                suite_dir.dir.display()
            ),
            OUTSIDE_HEADERS,
        ));
    }
    if let Some(f) = pre_include_file(o) {
        confined_entry(
            ctx,
            suite_dir,
            named_at,
            &format!("pre-included file `{f}` (option `{o}`)"),
            (f, false, "name a header relative to suite.toml"),
        )?;
    }
    Ok(())
}

/// `name` joined to the suite's directory, refused where it lies outside it or is not a directory
/// (`want_dir`) or a file; `label` says what the manifest named, for the messages.
fn confined_entry(
    ctx: &Ctx,
    suite_dir: &SuiteDir,
    named_at: Vec<Seg>,
    label: &str,
    (name, want_dir, fix): (&str, bool, &str),
) -> Result<PathBuf, SuiteError> {
    let p = suite_dir.dir.join(name);
    if suite_dir.outside(&p) {
        return Err(ctx.err(
            named_at,
            format!(
                "{label} lies outside the suite's directory {}",
                suite_dir.dir.display()
            ),
            OUTSIDE_HEADERS,
        ));
    }
    let (is_kind, kind) = if want_dir {
        (p.is_dir(), "a directory")
    } else {
        (p.is_file(), "a file")
    };
    if !is_kind {
        return Err(ctx.err(
            named_at,
            format!("{label} is not {kind} ({})", p.display()),
            fix,
        ));
    }
    Ok(p)
}

/// The include options every source is searched with: the options' `-I` directories made
/// relative to the suite, then each `include_dirs` entry (checked where it is first named).
pub(crate) fn include_options(
    ctx: &Ctx,
    m: &Manifest,
    suite_dir: &SuiteDir,
) -> Result<Vec<String>, SuiteError> {
    let mut include_options = resolve_include_options(
        &suite_dir.dir,
        m.suite
            .options
            .iter()
            .chain(m.variants.iter().flat_map(|v| v.options.iter())),
    );
    // `include_dirs` likewise, each where it is first named.
    for (d, named_at) in include_dirs_named(m) {
        let p = confined_entry(
            ctx,
            suite_dir,
            named_at,
            &format!("include directory `{d}`"),
            (
                d,
                true,
                "name a directory of headers, relative to suite.toml",
            ),
        )?;
        include_options.push(format!("-I{}", p.display()));
    }
    Ok(include_options)
}

/// Each source with where it is named first: the suite's, else the first variant's that names it.
fn named_sources(m: &Manifest) -> BTreeMap<String, Vec<Seg>> {
    let mut sources: BTreeMap<String, Vec<Seg>> = BTreeMap::new();
    if let Some(s) = &m.suite.source {
        sources.insert(s.clone(), at!["suite", "source"]);
    }
    for (i, v) in m.variants.iter().enumerate() {
        if let Some(s) = &v.source {
            sources
                .entry(s.clone())
                .or_insert_with(|| at!["variants", i, "source"]);
        }
    }
    sources
}

/// Each source with the text of its local headers (kernels may be declared in either), both
/// added to `hasher`: a report must say which code it measured.
pub(crate) fn read_sources(
    ctx: &Ctx,
    m: &Manifest,
    suite_dir: &SuiteDir,
    include_options: &[String],
    hasher: &mut Sha256,
) -> Result<BTreeMap<String, String>, SuiteError> {
    let mut source_texts = BTreeMap::new();
    for (s, named_at) in &named_sources(m) {
        let p = suite_dir.dir.join(s);
        if suite_dir.outside(&p) {
            return Err(ctx.err(
                named_at.clone(),
                format!("source `{s}` lies outside the suite's directory {}", suite_dir.dir.display()),
                "move the source into the suite's directory, or set allow_outside = true in [suite] to share a kernel of another suite",
            ));
        }
        let src = read_limited(&p, FileKind::KERNEL_SOURCE).map_err(|e| {
            ctx.err(
                named_at.clone(),
                format!("source `{s}` ({}): {}", p.display(), e.message),
                e.fix,
            )
        })?;
        hasher.update(src.as_bytes());
        // Headers count too: a report must say which code it measured. They are paths like
        // sources: inside the suite's directory unless the manifest says otherwise.
        let found = sources::headers(&p, &src, include_options);
        if let Some(h) = found.iter().find(|h| suite_dir.outside(&h.path)) {
            return Err(ctx.err(named_at.clone(), format!("source `{s}` includes header `{}` ({}), which lies outside the suite's directory {}", h.name, h.path.display(), suite_dir.dir.display()), OUTSIDE_HEADERS));
        }
        let headers = sources::headers_text(&found);
        hasher.update(headers.as_bytes());
        source_texts.insert(s.clone(), format!("{src}\n{headers}"));
    }
    Ok(source_texts)
}
