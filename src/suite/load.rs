//! Loading a suite: find `kernels/<suite>/suite.toml`, read and parse the manifest, check its
//! files and shape, hash what it measures, and expand its sweep into jobs.

use std::collections::{BTreeMap, HashSet};
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

use super::expand::{expand, expand_sanitize};
use super::files::{SuiteDir, check_options, include_options, read_limited, read_sources};
use super::job::JobSpec;
use super::location::{Ctx, Seg, SuiteError, at, line_at};
use super::manifest::{AxisValue, Manifest};
use super::sources;
use super::validate::validate;
use crate::store::FileKind;

/// The largest manifest read, in bytes (why this size: `FileKind::MANIFEST`).
pub const MAX_MANIFEST_BYTES: u64 = FileKind::MANIFEST.max_bytes;

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
    /// The jobs `--sanitize` runs for the variants whose manifest names a `sanitize` shape (the
    /// others are sanitized at their cheapest job).
    pub sanitize_jobs: Vec<JobSpec>,
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

/// Reads and parses the manifest at `path` (its text is kept: errors find their lines in it).
fn read_manifest(path: &Path) -> Result<(String, Manifest), SuiteError> {
    let text = read_limited(path, FileKind::MANIFEST).map_err(|e| SuiteError {
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
    Ok((text, manifest))
}

/// Parses and validates one manifest file.
pub fn load(path: &Path) -> Result<Suite, SuiteError> {
    let (text, manifest) = read_manifest(path)?;
    let dir = path.parent().unwrap_or(Path::new(".")).to_path_buf();
    let ctx = Ctx {
        path,
        text: &text,
        manifest: Some(&manifest),
    };
    // The name becomes part of every run's directory name, and of tables and file names.
    if let Some(why) = super::names::name_problem(
        "suite name",
        &manifest.suite.name,
        super::names::MAX_SUITE_NAME,
    ) {
        return Err(ctx.err(
            at!["suite", "name"],
            why,
            super::names::name_fix(super::names::MAX_SUITE_NAME),
        ));
    }
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
    let suite_dir = SuiteDir::new(&dir, &manifest);
    check_options(&ctx, &manifest, &suite_dir)?;
    let include_options = include_options(&ctx, &manifest, &suite_dir)?;
    let source_texts = read_sources(&ctx, &manifest, &suite_dir, &include_options, &mut hasher)?;
    validate(&ctx, &manifest, &source_texts)?;
    // Expanding here surfaces every expression error at load time, not mid-run.
    let jobs = expand(&ctx, &manifest, &dir)?;
    check_unique_ids(&ctx, &manifest, &jobs)?;
    let sanitize_jobs = expand_sanitize(&ctx, &manifest, &dir)?;
    Ok(Suite {
        manifest,
        path: path.to_path_buf(),
        dir,
        source_hash: sources::hex(&hasher.finalize()),
        jobs,
        sanitize_jobs,
    })
}

/// Two jobs of one id (a sweep value given twice) would overwrite each other's records.
fn check_unique_ids(ctx: &Ctx, m: &Manifest, jobs: &[JobSpec]) -> Result<(), SuiteError> {
    let mut ids = HashSet::new();
    if let Some(j) = jobs.iter().find(|j| !ids.insert(j.key.id.as_str())) {
        return Err(ctx.err(
            repeated_axis(m),
            format!(
                "job `{}` appears twice: a sweep axis repeats a value",
                j.key.id
            ),
            "give every value of a sweep axis once",
        ));
    }
    Ok(())
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
