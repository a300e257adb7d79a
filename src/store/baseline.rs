//! Stored baselines (`baselines/NAME.json`): a run's jobs, samples, counters and environment, saved atomically, never overwritten by accident, loaded with errors that name the file.

use std::fs;
use std::path::{Path, PathBuf};

use anyhow::{Context, bail};
use serde::{Deserialize, Serialize};

use crate::records::{
    BoundsRecord, ComputeBoundRecord, Fingerprint, JobRecord, ProfileRecord, Record, RunData,
    RunInfo,
};
use crate::store;

pub const FORMAT: &str = "gpu-lab baseline";
pub const VERSION: u32 = 1;
pub const DEFAULT_DIR: &str = "baselines";

/// One job as stored: its record (status, check, every timing sample, NVML clocks) and its ncu counters.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct BaselineJob {
    pub job: JobRecord,
    pub profile: Option<ProfileRecord>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Baseline {
    pub format: String,
    pub version: u32,
    pub name: String,
    pub saved: String,
    /// The run directory it was taken from, as given.
    pub source_run: String,
    /// GPU model and UUID, driver, CUDA, ncu, clocks seen, clock policy, suite source hash (also in `run`; here for people and `baseline list`).
    pub fingerprint: Fingerprint,
    pub run: RunInfo,
    pub bounds: Vec<BoundsRecord>,
    /// Compute bounds (cuBLAS) measured in the run, with their math mode.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub compute_bounds: Vec<ComputeBoundRecord>,
    pub jobs: Vec<BaselineJob>,
}

impl Baseline {
    pub fn from_run(name: &str, source_run: &str, run: &RunData, saved: String) -> Baseline {
        Baseline {
            format: FORMAT.into(),
            version: VERSION,
            name: name.into(),
            saved,
            source_run: source_run.into(),
            fingerprint: Fingerprint::of(source_run, run),
            run: run.info.clone(),
            // Every GPU's bounds, where a run had several (`--gpus`), else each group's.
            bounds: if run.gpu_bounds.is_empty() {
                run.bounds.values().cloned().collect()
            } else {
                run.gpu_bounds.values().cloned().collect()
            },
            compute_bounds: if run.gpu_compute_bounds.is_empty() {
                run.compute_bounds.values().cloned().collect()
            } else {
                run.gpu_compute_bounds.values().cloned().collect()
            },
            jobs: run
                .jobs
                .iter()
                .map(|j| BaselineJob {
                    job: j.clone(),
                    profile: run.profiles.get(j.id()).cloned(),
                })
                .collect(),
        }
    }

    pub fn to_run(&self) -> RunData {
        let records = (self.bounds.iter().cloned().map(Record::Bounds))
            .chain(self.compute_bounds.iter().cloned().map(Record::Compute))
            .chain(self.jobs.iter().map(|j| Record::Job(j.job.clone())))
            .chain(
                self.jobs
                    .iter()
                    .filter_map(|j| j.profile.clone())
                    .map(Record::Profile),
            )
            .collect();
        RunData::from_records(self.run.clone(), records)
    }
}

/// A name is a file name without its `.json`: letters, digits, `.`, `_`, `-`.
pub fn validate_name(name: &str) -> anyhow::Result<()> {
    let ok = !name.is_empty()
        && !name.starts_with('.')
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'));
    if !ok {
        bail!(
            "`{name}` is not a usable baseline name\n  fix: use letters, digits, `.`, `_` and `-` only (for example `h200` or `main-2026-11`)"
        );
    }
    Ok(())
}

/// `NAME` means `DIR/NAME.json`; anything with a `/` or ending in `.json` is taken as a path.
pub fn resolve(dir: &Path, name: &str) -> PathBuf {
    if name.contains('/') || name.ends_with(".json") {
        PathBuf::from(name)
    } else {
        dir.join(format!("{name}.json"))
    }
}

/// Writes the baseline; an existing file is replaced only with `force`. Either way the file
/// appears whole or not at all: it is written under an unpredictable temporary name, created
/// exclusively, then renamed over the old one or, without `force`, renamed only where no file
/// exists (so two savers cannot both win).
pub fn save(dir: &Path, baseline: &Baseline, force: bool) -> anyhow::Result<PathBuf> {
    validate_name(&baseline.name)?;
    let path = resolve(dir, &baseline.name);
    let json = serde_json::to_vec_pretty(baseline)?;
    let placed = if force {
        store::write_atomic(&path, &json)
    } else {
        store::write_atomic_new(&path, &json)
    };
    match placed {
        Ok(()) => Ok(path),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
            let what = load(&path)
                .map(|b| format!(" (saved {} from {})", b.saved, b.source_run))
                .unwrap_or_default();
            bail!(
                "{} already exists{what}\n  fix: pass --force to replace it, or choose another name",
                path.display()
            )
        }
        Err(e) => Err(e).with_context(|| format!("writing {}", path.display())),
    }
}

pub fn load(path: &Path) -> anyhow::Result<Baseline> {
    let text = store::read_regular_text(path, store::FileKind::BASELINE).with_context(|| format!("cannot read the baseline {}\n  fix: `gpu-lab baseline list` shows the stored baselines; `gpu-lab baseline save NAME` stores one", path.display()))?;
    let fix = "fix: save it again with `gpu-lab baseline save NAME --from RUN --force`";
    let b: Baseline = serde_json::from_str(&text).map_err(|e| {
        let why = if e.is_eof() {
            "it ends too early (a truncated file)"
        } else {
            "it is not valid baseline JSON"
        };
        anyhow::anyhow!(
            "the baseline {} cannot be read: {why}: {e}\n  {fix}",
            path.display()
        )
    })?;
    if b.format != FORMAT {
        bail!(
            "{} is not a gpu-lab baseline (format `{}`)\n  {fix}",
            path.display(),
            b.format
        );
    }
    if b.jobs.is_empty() {
        bail!(
            "the baseline {} holds no job: every job of a run would pass as New\n  {fix}",
            path.display()
        );
    }
    // The name travels into file names (the verdicts beside a run): checked as if typed.
    validate_name(&b.name).map_err(|e| {
        anyhow::anyhow!(
            "the baseline {} names itself `{}`: {e}\n  {fix}",
            path.display(),
            b.name
        )
    })?;
    if b.version != VERSION {
        bail!(
            "the baseline {} has format version {}; this gpu-lab reads version {VERSION}\n  {fix}",
            path.display(),
            b.version
        );
    }
    Ok(b)
}

/// Every `*.json` in the directory, each loaded or with the reason it could not be; one that is
/// not a regular file, or past the size limit, fails the whole listing (it is no baseline
/// damaged in the saving, but something else put there).
pub fn list(dir: &Path) -> anyhow::Result<Vec<(PathBuf, anyhow::Result<Baseline>)>> {
    let entries = match fs::read_dir(dir) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(e).with_context(|| format!("reading {}", dir.display())),
    };
    let mut paths: Vec<PathBuf> = entries
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    paths.sort();
    let mut found = Vec::with_capacity(paths.len());
    for p in paths {
        let b = load(&p);
        if let Err(e) = &b
            && let Some(refused) = e
                .chain()
                .filter_map(|c| c.downcast_ref::<store::ReadError>())
                .find(|r| r.is_refused())
        {
            bail!("cannot list the baselines in {}: {refused}", dir.display());
        }
        found.push((p, b));
    }
    Ok(found)
}

/// The run under `root` that started last (by `started` in its run.json; the directory name breaks ties).
pub fn newest_run(root: &Path) -> anyhow::Result<PathBuf> {
    let fix = "fix: pass --from RUN, or make a run with `gpu-lab profile --suite S`";
    let entries = fs::read_dir(root).with_context(|| {
        format!(
            "no run directories: cannot read {}\n  {fix}",
            root.display()
        )
    })?;
    let started = |dir: &Path| -> Option<String> {
        // A run.json that is not a regular file (or not a run's) is no run: skipped, never waited on.
        let text =
            store::read_regular_text(&dir.join(store::RUN_JSON), store::FileKind::RUN_INFO).ok()?;
        Some(serde_json::from_str::<RunInfo>(&text).ok()?.started)
    };
    entries
        .flatten()
        .map(|e| e.path())
        .filter_map(|p| started(&p).map(|s| (s, p)))
        .max()
        .map(|(_, p)| p)
        .with_context(|| format!("no runs under {}\n  {fix}", root.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn committed() -> RunData {
        store::load_run(
            &Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("tests/fixtures/runs/20261122T044759Z-transpose-h200"),
        )
        .unwrap()
        .0
    }

    #[test]
    fn a_baseline_holds_the_whole_run_and_gives_it_back() {
        let run = committed();
        let b = Baseline::from_run("h200", "runs/x", &run, "2026-11-22T05:00:00Z".into());
        assert_eq!(b.jobs.len(), 92);
        assert!(
            b.jobs
                .iter()
                .all(|j| j.profile.is_some() && !j.job.samples_ms.is_empty())
        );
        assert_eq!(b.fingerprint.gpu.as_deref(), Some("NVIDIA H200"));
        assert_eq!(b.to_run(), run);
    }

    #[test]
    fn saving_refuses_to_overwrite_without_force() {
        let d = tempfile::tempdir().unwrap();
        let b = Baseline::from_run("h200", "runs/x", &committed(), "t".into());
        let p = save(d.path(), &b, false).unwrap();
        assert_eq!(p, d.path().join("h200.json"));
        let err = save(d.path(), &b, false).unwrap_err().to_string();
        assert!(
            err.contains("already exists") && err.contains("--force") && err.contains("runs/x"),
            "{err}"
        );
        save(d.path(), &b, true).unwrap();
        assert_eq!(load(&p).unwrap(), b);
        assert_eq!(
            fs::read_dir(d.path()).unwrap().count(),
            1,
            "no temporary file left"
        );
    }

    #[test]
    fn names_are_plain_file_names() {
        assert!(validate_name("h200-main_1.2").is_ok());
        for bad in ["", "../x", "a/b", ".hidden", "a b"] {
            assert!(validate_name(bad).is_err(), "{bad}");
        }
        assert_eq!(
            resolve(Path::new("baselines"), "h200"),
            Path::new("baselines/h200.json")
        );
        assert_eq!(
            resolve(Path::new("baselines"), "other/h200.json"),
            Path::new("other/h200.json")
        );
    }

    #[test]
    fn a_truncated_baseline_is_named_and_explained() {
        let d = tempfile::tempdir().unwrap();
        let b = Baseline::from_run("h200", "runs/x", &committed(), "t".into());
        let p = save(d.path(), &b, false).unwrap();
        let text = fs::read_to_string(&p).unwrap();
        fs::write(&p, &text[..text.len() / 2]).unwrap();
        let err = format!("{:#}", load(&p).unwrap_err());
        assert!(
            err.contains(&p.display().to_string())
                && err.contains("truncated")
                && err.contains("fix:"),
            "{err}"
        );
    }
}
