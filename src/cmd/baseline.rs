//! `gpu-lab baseline save|list`: store a run as a baseline, list the stored ones.

use std::path::{Path, PathBuf};

use anyhow::bail;

use crate::cli::BaselineAction;
use crate::exit;
use crate::records::JobStatus;
use crate::store::baseline::{self, Baseline};

use super::check::load_run;

pub fn baseline(config: &crate::config::Config, action: BaselineAction) -> anyhow::Result<i32> {
    match action {
        BaselineAction::Save {
            name,
            from,
            runs,
            force,
            allow_mock,
            dir,
        } => {
            // The runs directory is needed (and must be known) only without --from.
            let runs = match from {
                Some(_) => PathBuf::new(),
                None => config.runs_dir(runs.as_deref())?,
            };
            save(&name, from, &runs, force, allow_mock, &dir)
        }
        BaselineAction::List { dir } => list(&dir),
        BaselineAction::Export {
            name,
            dir,
            noise_threshold,
            noise_floor_us,
        } => export(
            &name,
            &dir,
            noise_threshold / 100.0,
            noise_floor_us / 1000.0,
        ),
    }
}

fn save(
    name: &str,
    from: Option<PathBuf>,
    runs: &Path,
    force: bool,
    allow_mock: bool,
    dir: &Path,
) -> anyhow::Result<i32> {
    baseline::validate_name(name)?;
    let from = match from {
        Some(f) => f,
        None => {
            let newest = baseline::newest_run(runs)?;
            eprintln!("no --from: taking the newest run, {}", newest.display());
            newest
        }
    };
    let run = load_run(&from)?;
    if run.info.mock && !allow_mock {
        bail!(
            "{} is a MOCK run (made with --mock-gpu): its numbers are stand-ins, not measurements, and a baseline must hold measurements\n  fix: save a run made on a GPU (`gpu-lab profile --suite {}`)",
            from.display(),
            run.info.suite
        );
    }
    if run.info.finished.is_none() {
        eprintln!(
            "warning: {} did not finish (no end time in run.json): only the jobs it recorded are stored",
            from.display()
        );
    }
    let not_ok = run
        .jobs
        .iter()
        .filter(|j| j.status != JobStatus::Ok)
        .count();
    if not_ok > 0 {
        eprintln!(
            "warning: {not_ok} jobs of this run are not correct: they are stored as recorded, but a job is timed against the baseline only where it was correct in both runs"
        );
    }
    let saved = chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true);
    let b = Baseline::from_run(name, &from.display().to_string(), &run, saved);
    let path = baseline::save(dir, &b, force)?;
    println!(
        "saved {} from {}: suite {}, {} jobs, {}",
        path.display(),
        from.display(),
        b.run.suite,
        b.jobs.len(),
        b.fingerprint.gpu.as_deref().unwrap_or("unknown GPU")
    );
    Ok(exit::OK)
}

/// Prints the baseline as ReFrame references.
fn export(name: &str, dir: &Path, threshold: f64, floor_ms: f64) -> anyhow::Result<i32> {
    baseline::validate_name(name)?;
    let b = baseline::load(&baseline::resolve(dir, name))?;
    let jobs: Vec<crate::compare::reframe::Reference> = b
        .jobs
        .iter()
        .filter(|j| j.job.status == JobStatus::Ok)
        .filter_map(|j| {
            j.job.summary.map(|s| crate::compare::reframe::Reference {
                id: &j.job.key.id,
                median_ms: s.median,
                own_threshold: j.job.own_noise_threshold(),
            })
        })
        .collect();
    let gpu = b
        .fingerprint
        .gpu
        .clone()
        .unwrap_or_else(|| "unknown GPU".into());
    let module =
        crate::compare::reframe::references(name, &gpu, &b.run.suite, &jobs, threshold, floor_ms);
    print!("{}", module.text);
    // A number Python cannot read back is never printed: such a job has no reference, and the
    // export says so and exits as a run with some failed jobs does.
    for left in &module.left_out {
        eprintln!(
            "warning: no ReFrame reference for `{}`: {}\n  fix: check or re-save baseline {name} (`gpu-lab baseline save {name} --force --from RUN`)",
            left.id, left.reason
        );
    }
    Ok(if module.left_out.is_empty() {
        exit::OK
    } else {
        exit::JOBS_FAILED
    })
}

fn list(dir: &Path) -> anyhow::Result<i32> {
    let found = baseline::list(dir)?;
    if found.is_empty() {
        println!(
            "no baselines in {} (`gpu-lab baseline save NAME` stores one)",
            dir.display()
        );
        return Ok(exit::OK);
    }
    let mut rows: Vec<Vec<String>> = vec![
        [
            "name",
            "suite",
            "GPU",
            "jobs",
            "counters",
            "saved",
            "from run",
            "suite sha256",
        ]
        .map(String::from)
        .to_vec(),
    ];
    for (path, loaded) in &found {
        rows.push(match loaded {
            Ok(x) => vec![
                x.name.clone(),
                x.run.suite.clone(),
                x.fingerprint
                    .gpu
                    .clone()
                    .unwrap_or_else(|| "unknown".into()),
                x.jobs.len().to_string(),
                if x.jobs.iter().any(|j| j.profile.is_some()) {
                    "yes".into()
                } else {
                    "no".into()
                },
                x.saved.clone(),
                x.source_run.clone(),
                x.run.suite_source_hash.chars().take(12).collect(),
            ],
            Err(e) => vec![
                path.display().to_string(),
                format!(
                    "unreadable: {}",
                    format!("{e}").lines().next().unwrap_or("")
                ),
            ],
        });
    }
    println!("{}", crate::report::markdown::table(rows));
    Ok(exit::OK)
}
