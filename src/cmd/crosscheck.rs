//! After `profile --profiler both`: every pass's comparison of CUPTI with ncu (`*.crosscheck.json` in the run directory) gathered into the run's `crosscheck.md`, and its head printed.

use std::path::Path;

use anyhow::Context;

use crate::cupti::crosscheck::Crosscheck;
use crate::store::{FileKind, read_regular_text, write_atomic};

/// The name of the run's comparison file.
pub const CROSSCHECK_MD: &str = "crosscheck.md";

/// How many of the largest differences the file lists, and how many are printed.
const IN_FILE: usize = 200;
const PRINTED: usize = 15;

/// Gathers the passes' comparisons of `dir`, largest difference first.
pub fn gather(dir: &Path) -> anyhow::Result<Crosscheck> {
    let mut names: Vec<_> = std::fs::read_dir(dir)
        .with_context(|| format!("reading {}", dir.display()))?
        .filter_map(|e| e.ok())
        .map(|e| e.path())
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.ends_with(".crosscheck.json"))
        })
        .collect();
    names.sort();
    let mut all = Crosscheck::default();
    for path in names {
        let text = read_regular_text(&path, FileKind::CHILD_MESSAGE)
            .with_context(|| format!("reading {}", path.display()))?;
        let pass: Crosscheck =
            serde_json::from_str(&text).with_context(|| format!("parsing {}", path.display()))?;
        all.extend(pass);
    }
    all.sort();
    Ok(all)
}

/// Writes `crosscheck.md` into the run directory and prints its summary and largest differences
/// on stderr; a run without comparisons (every pass went to ncu alone) says so.
pub fn write_and_print(dir: &Path) -> anyhow::Result<()> {
    let check = gather(dir)?;
    if check.differences.is_empty() && check.unmatched.is_empty() {
        eprintln!(
            "note: no comparison of CUPTI with ncu in {}: no pass was collected by CUPTI",
            dir.display()
        );
        return Ok(());
    }
    let path = dir.join(CROSSCHECK_MD);
    write_atomic(&path, check.markdown(IN_FILE).as_bytes())
        .with_context(|| format!("writing {}", path.display()))?;
    eprintln!("\n{}", check.markdown(PRINTED));
    eprintln!("(the {IN_FILE} largest in {})", path.display());
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cupti::crosscheck::{Difference, Kind};

    fn pass(job: &str, relative: f64) -> Crosscheck {
        Crosscheck {
            differences: vec![Difference {
                kind: Kind::Metric,
                job: job.into(),
                name: "duration".into(),
                cupti: Some(1.0 + relative),
                ncu: Some(1.0),
                relative,
                ncu_resolution: None,
            }],
            unmatched: vec![],
        }
    }

    #[test]
    fn every_pass_of_the_run_is_gathered_largest_difference_first() {
        let dir = tempfile::tempdir().unwrap();
        for (tag, job, r) in [("profile-a", "a", 0.01), ("profile-b", "b", 0.2)] {
            let text = serde_json::to_string(&pass(job, r)).unwrap();
            std::fs::write(dir.path().join(format!("{tag}.crosscheck.json")), text).unwrap();
        }
        std::fs::write(dir.path().join("other.json"), "not a comparison").unwrap();
        let all = gather(dir.path()).unwrap();
        let jobs: Vec<&str> = all.differences.iter().map(|d| d.job.as_str()).collect();
        assert_eq!(jobs, ["b", "a"]);
        write_and_print(dir.path()).unwrap();
        let md = std::fs::read_to_string(dir.path().join(CROSSCHECK_MD)).unwrap();
        assert!(
            md.contains(
                "- metrics: 2 values compared, 0 equal, 0 equal to ncu's printed rounding, 1 within 1% or that rounding"
            ),
            "{md}"
        );
    }

    #[test]
    fn a_damaged_comparison_file_is_an_error_naming_it() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("p.crosscheck.json"), "{").unwrap();
        let e = format!("{:#}", gather(dir.path()).unwrap_err());
        assert!(e.contains("p.crosscheck.json"), "{e}");
    }
}
