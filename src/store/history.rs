//! The history on disk: `<history>/<suite>/<fingerprint>/<run id>.parquet`, one file per appended run, written atomically; read back per suite, an unreadable file skipped with a warning that names it.
//!
//! An append is one new file written through a temporary one and renamed: a torn append (a
//! crash, a full disk) leaves at most a hidden `.…tmp` file that readers pass over, and costs
//! that append only. Appending the same run again replaces its own file, never another's.

use std::fs;
use std::path::{Path, PathBuf};

use anyhow::Context;

use super::{FileKind, read_regular, write_atomic_under};
use crate::history::{HistoryRow, frame};

/// The extension of a history file.
pub const EXT: &str = "parquet";

/// `name` as one plain path component (a suite name, a fingerprint, a run id), or why not.
fn component<'a>(what: &str, name: &'a str) -> anyhow::Result<&'a str> {
    let plain = !name.is_empty()
        && name.len() <= 200
        && !name.starts_with('.')
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "_.+-".contains(c));
    if !plain {
        anyhow::bail!(
            "the {what} `{}` cannot name a history file (1 to 200 of A-Z a-z 0-9 _ . + -, not starting with `.`)\n  fix: run.json was edited or damaged; run the suite again",
            name.escape_debug()
        );
    }
    Ok(name)
}

/// Appends one run's rows (all of one run, suite and fingerprint) as one new file; returns its
/// path, or `None` when the run has no rows (no correct job).
pub fn append(root: &Path, rows: &[HistoryRow]) -> anyhow::Result<Option<PathBuf>> {
    let Some(first) = rows.first() else {
        return Ok(None);
    };
    if let Some(other) = rows.iter().find(|r| {
        (&r.run_id, &r.suite, &r.fingerprint) != (&first.run_id, &first.suite, &first.fingerprint)
    }) {
        anyhow::bail!(
            "one history append holds rows of two runs ({} and {}): gpu-lab appends one run at a time",
            first.run_id,
            other.run_id
        );
    }
    let rel = Path::new(component("suite name", &first.suite)?)
        .join(component("fingerprint", &first.fingerprint)?)
        .join(format!("{}.{EXT}", component("run id", &first.run_id)?));
    let bytes = frame::to_parquet(rows).context("encoding the run's history rows as Parquet")?;
    write_atomic_under(root, &rel, &bytes)
        .with_context(|| format!("appending to the history {}", root.join(&rel).display()))?;
    Ok(Some(root.join(rel)))
}

/// Every history row of `suite`, and a warning for each file that could not be read (it is
/// skipped: one damaged append costs its own rows only). No history yet: no rows.
pub fn load_suite(root: &Path, suite: &str) -> anyhow::Result<(Vec<HistoryRow>, Vec<String>)> {
    let dir = root.join(component("suite name", suite)?);
    let mut rows = Vec::new();
    let mut warnings = Vec::new();
    let partitions = match fs::read_dir(&dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok((rows, warnings)),
        Err(e) => return Err(e).with_context(|| format!("reading the history {}", dir.display())),
    };
    let mut files = Vec::new();
    for partition in partitions.flatten() {
        // Only real directories: a link planted in the history is not followed.
        if !partition.file_type().is_ok_and(|t| t.is_dir()) {
            continue;
        }
        match fs::read_dir(partition.path()) {
            Ok(entries) => files.extend(entries.flatten().map(|e| e.path())),
            Err(e) => warnings.push(format!(
                "{}: skipped a history partition that cannot be read ({e})",
                partition.path().display()
            )),
        }
    }
    files.retain(|f| {
        let name = f.file_name().unwrap_or_default().to_string_lossy();
        !name.starts_with('.') && name.ends_with(&format!(".{EXT}"))
    });
    files.sort();
    for file in files {
        let read = read_regular(&file, FileKind::HISTORY)
            .map_err(|e| e.to_string())
            .and_then(|bytes| frame::from_parquet(&bytes).map_err(|e| e.to_string()));
        match read {
            Ok(mut r) => {
                r.retain(|row| row.suite == suite);
                rows.extend(r);
            }
            Err(e) => warnings.push(format!(
                "{}: skipped an unreadable history file ({e})",
                file.display()
            )),
        }
    }
    Ok((rows, warnings))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::history::Measure;

    fn row(run: &str, median: f64) -> HistoryRow {
        HistoryRow {
            run_id: run.into(),
            started: format!("2026-11-25T10:00:0{}Z", run.len() % 10),
            suite: "transpose".into(),
            fingerprint: "0123456789abcdef".into(),
            gpu: "NVIDIA H100 80GB HBM3".into(),
            driver: "570.124.06".into(),
            cuda: "12.8".into(),
            cache: "cold".into(),
            clock_policy: "none".into(),
            mock: false,
            commit: Some("abc".into()),
            dirty: false,
            gpu_lab_version: "0.1.0".into(),
            job_id: "naive @ 4096x4096".into(),
            variant: "naive".into(),
            group: "4096x4096".into(),
            label: "naive".into(),
            measure: Measure::TimeMs,
            median,
            ci_low: median * 0.99,
            ci_high: median * 1.01,
            samples: vec![median * 0.99, median, median * 1.01],
        }
    }

    #[test]
    fn appends_are_files_of_their_own_and_a_damaged_one_costs_only_itself() {
        let d = tempfile::tempdir().unwrap();
        let a = append(d.path(), &[row("run-a", 1.0)]).unwrap().unwrap();
        append(d.path(), &[row("run-b", 2.0)]).unwrap().unwrap();
        assert!(
            a.ends_with("transpose/0123456789abcdef/run-a.parquet"),
            "{a:?}"
        );
        // A torn append: half of a file under its final name, and a temporary file left behind.
        let bytes = fs::read(&a).unwrap();
        let torn = a.with_file_name("run-c.parquet");
        fs::write(&torn, &bytes[..bytes.len() / 2]).unwrap();
        fs::write(a.with_file_name(".run-d.parquet.x1y2.tmp"), b"partial").unwrap();
        let (rows, warnings) = load_suite(d.path(), "transpose").unwrap();
        let mut medians: Vec<f64> = rows.iter().map(|r| r.median).collect();
        medians.sort_by(f64::total_cmp);
        assert_eq!(medians, [1.0, 2.0]);
        assert_eq!(warnings.len(), 1, "{warnings:?}");
        assert!(warnings[0].contains("run-c.parquet"), "{warnings:?}");
        assert_eq!(rows[0], row("run-a", 1.0), "a row comes back as written");
        // No history for a suite: no rows, no error.
        assert_eq!(load_suite(d.path(), "other").unwrap().0, []);
    }

    #[test]
    fn names_that_are_not_one_plain_component_are_refused() {
        let d = tempfile::tempdir().unwrap();
        for bad in ["../x", ".hidden", "a/b", ""] {
            let mut r = row("run-a", 1.0);
            r.run_id = bad.into();
            let e = append(d.path(), &[r]).unwrap_err();
            assert!(format!("{e:#}").contains("run id"), "{bad}: {e:#}");
        }
        assert!(load_suite(d.path(), "../etc").is_err());
    }
}
