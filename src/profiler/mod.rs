//! Nsight Compute, all of it: find ncu, profile a pass of launches, read source hot spots, export the raw page, map kernels back to jobs, probe counter access, read ncu's metric list; typed errors for what goes wrong.

pub mod activity_duration;
pub mod assign;
pub mod hotspots;
pub mod pass;
pub mod probe;
pub mod query;

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::process::{self, CommandError};

pub use assign::{assign_kernels, profile_record};

/// Whether ncu may change the GPU's clocks while profiling: `none` measures the card as found
/// (never change a shared GPU's clocks); `base` locks base clocks (owners only).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum ClockControl {
    #[default]
    None,
    Base,
}

impl ClockControl {
    /// The word ncu's `--clock-control` takes, and run.json's `clock_policy`.
    pub fn as_str(self) -> &'static str {
        match self {
            ClockControl::None => "none",
            ClockControl::Base => "base",
        }
    }

    /// A stored `clock_policy` (`base`, anything else is `none`).
    pub fn from_policy(policy: &str) -> ClockControl {
        if policy == "base" {
            ClockControl::Base
        } else {
            ClockControl::None
        }
    }
}

/// Which profiler collects a run's counters: CUPTI in the job's own process (the default; a pass
/// it cannot collect goes to ncu, and its records say why), or ncu for every pass.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum ProfilerChoice {
    #[default]
    Cupti,
    Ncu,
    /// CUPTI's records, and ncu over the same jobs beside them: every value compared
    /// (`TAG.crosscheck.json` per pass, `crosscheck.md` for the run).
    Both,
}

#[derive(Debug, thiserror::Error)]
pub enum ProfilerError {
    #[error(
        "Nsight Compute (ncu) was not found\n  fix: install Nsight Compute (it ships with the CUDA toolkit) and put it on PATH, or set NCU=/path/to/ncu"
    )]
    NotFound,
    #[error("NCU={} is not a file\n  fix: point NCU at the ncu executable, or unset it to use the ncu on PATH", .0.display())]
    NotAFile(PathBuf),
    #[error(
        "ncu may not read the GPU's performance counters (ERR_NVGPUCTRPERM)\n  fix: run as root, or allow profiling for all users: https://developer.nvidia.com/ERR_NVGPUCTRPERM (modprobe option NVreg_RestrictProfilingToAdminUsers=0)"
    )]
    CountersNotPermitted,
    #[error(
        "{line}\n  fix: check the metric names with `ncu --query-metrics`; `gpu-lab list metrics` shows the counters behind each metric"
    )]
    UnknownMetric { line: String },
    /// Another `==ERROR==` line of ncu's.
    #[error("{line}")]
    Reported { line: String },
    #[error("ncu failed: {0}")]
    Failed(#[from] CommandError),
    #[error("ncu profiled no kernel{why}")]
    NothingProfiled { why: String },
    #[error(
        "the {counters} ncu counters of these metrics make a `--metrics` argument of {bytes} bytes; Linux passes at most {MAX_METRICS_ARG_BYTES} bytes in one argument (MAX_ARG_STRLEN), so ncu could not even be started (\"Argument list too long\")\n  fix: ask for fewer metrics at a time (several `gpu-lab ncu` runs, each with part of the list); `gpu-lab list metrics` shows the counters behind each"
    )]
    TooManyCounters { counters: usize, bytes: usize },
    #[error("`ncu --import {}` gave no table: {said}\n  fix: check that the file is a report of this ncu version or older ({version})", .report.display())]
    Export {
        report: PathBuf,
        said: String,
        version: String,
    },
}

impl ProfilerError {
    /// Errors that no job of the run can get past (as opposed to one job's failed profile).
    pub fn stops_every_profile(&self) -> bool {
        matches!(
            self,
            ProfilerError::NotFound
                | ProfilerError::NotAFile(_)
                | ProfilerError::CountersNotPermitted
        )
    }
}

/// Where ncu is looked for: `NCU` when set, else the `PATH` directories, else the CUDA toolkit's usual place.
#[derive(Debug, Clone, Default)]
pub struct NcuSearch {
    pub explicit: Option<PathBuf>,
    pub path_dirs: Vec<PathBuf>,
}

#[derive(Debug, Clone)]
pub struct Ncu {
    pub path: PathBuf,
    pub version: String,
}

impl Ncu {
    /// An ncu command with the locale its CSV parser expects (decimal points, not commas).
    pub fn command(&self) -> Command {
        let mut c = Command::new(&self.path);
        c.env("LC_ALL", "C");
        c
    }

    /// An ncu command over one of gpu-lab's own children: CUDA numbers GPUs in PCI order there,
    /// as NVML does, so `--gpu N` means one card to both (a user's program keeps its own order).
    pub fn command_over_child(&self) -> Command {
        let mut c = self.command();
        c.env("CUDA_DEVICE_ORDER", "PCI_BUS_ID");
        c
    }
}

/// The first ncu found, with its version.
pub fn find(search: &NcuSearch) -> Result<Ncu, ProfilerError> {
    let mut candidates: Vec<PathBuf> = Vec::new();
    if let Some(p) = &search.explicit {
        if !p.is_file() {
            return Err(ProfilerError::NotAFile(p.clone()));
        }
        candidates.push(p.clone());
    }
    candidates.extend(search.path_dirs.iter().map(|d| d.join("ncu")));
    candidates.push(PathBuf::from("/usr/local/cuda/bin/ncu"));
    let found = candidates
        .into_iter()
        .find(|c| c.is_file())
        .ok_or(ProfilerError::NotFound)?;
    let printed = process::output(Command::new(&found).arg("--version"))
        .map(|f| f.text)
        .unwrap_or_default();
    let version = printed
        .lines()
        .rev()
        .find(|l| l.contains("Version"))
        .unwrap_or("")
        .trim()
        .to_string();
    Ok(Ncu {
        path: found,
        version,
    })
}

/// The longest `--metrics` argument: Linux's MAX_ARG_STRLEN (32 pages of 4 KiB) less the
/// terminating NUL. One argument past it fails `execve` with E2BIG before ncu starts.
pub const MAX_METRICS_ARG_BYTES: usize = 32 * 4096 - 1;

/// Refuses a counter list that cannot travel as ncu's `--metrics` argument, before anything is started.
pub fn check_counters(counters: &[String]) -> Result<(), ProfilerError> {
    let bytes = counters.iter().map(String::len).sum::<usize>() + counters.len().saturating_sub(1);
    if bytes > MAX_METRICS_ARG_BYTES {
        return Err(ProfilerError::TooManyCounters {
            counters: counters.len(),
            bytes,
        });
    }
    Ok(())
}

/// The arguments of every profile: clocks as asked, only these counters, every process, a report file.
pub fn profile_args(
    counters: &[String],
    clock_control: ClockControl,
    report_base: &Path,
) -> Vec<String> {
    vec![
        "--clock-control".into(),
        clock_control.as_str().into(),
        "--metrics".into(),
        counters.join(","),
        "--target-processes".into(),
        "all".into(),
        "--force-overwrite".into(),
        "--export".into(),
        report_base.display().to_string(),
    ]
}

/// The report a `--export BASE` writes.
pub fn report_path(report_base: &Path) -> PathBuf {
    PathBuf::from(format!("{}.ncu-rep", report_base.display()))
}

/// ncu's raw page of a report as CSV, in base units: what `parse` reads.
pub fn export_raw(ncu: &Ncu, report: &Path) -> Result<String, ProfilerError> {
    let said = |text: &str| text.lines().last().unwrap_or("no output").to_string();
    let export_error = |said: String| ProfilerError::Export {
        report: report.to_path_buf(),
        said,
        version: ncu.version.clone(),
    };
    let finished = process::run(
        ncu.command().args([
            "--import",
            &report.display().to_string(),
            "--csv",
            "--page",
            "raw",
            "--print-units",
            "base",
        ]),
        &process::Output::Stdout,
        None,
    )
    .map_err(|e| export_error(e.to_string()))?;
    if !finished.status.success() || !finished.text.contains("\"ID\"") {
        return Err(export_error(said(
            format!("{}{}", finished.text.trim(), finished.stderr.trim()).trim(),
        )));
    }
    Ok(finished.text)
}

/// The problem ncu reported in its output, when it reported one.
pub fn diagnose(output: &str) -> Option<ProfilerError> {
    if output.contains("ERR_NVGPUCTRPERM") {
        return Some(ProfilerError::CountersNotPermitted);
    }
    let line = output
        .lines()
        .find(|l| l.contains("==ERROR=="))?
        .trim()
        .to_string();
    Some(if line.contains("metric") || line.contains("Metric") {
        ProfilerError::UnknownMetric { line }
    } else {
        ProfilerError::Reported { line }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counter_permission_error_gets_its_fix() {
        let d = diagnose("==ERROR== ERR_NVGPUCTRPERM - The user does not have permission").unwrap();
        assert!(
            matches!(d, ProfilerError::CountersNotPermitted)
                && d.to_string()
                    .contains("NVreg_RestrictProfilingToAdminUsers")
        );
        let m = diagnose("==ERROR== Failed to find metric regex:^foo__bar$").unwrap();
        assert!(
            matches!(m, ProfilerError::UnknownMetric { .. })
                && m.to_string().contains("--query-metrics"),
            "{m}"
        );
        assert!(diagnose("all good").is_none());
    }

    #[test]
    fn a_counter_list_too_long_for_one_argument_is_refused_with_the_limit() {
        let many: Vec<String> = (0..5000)
            .map(|i| format!("smsp__sass_inst_executed_op_global_ld_{i}.sum"))
            .collect();
        let e = check_counters(&many).unwrap_err();
        let s = e.to_string();
        assert!(
            matches!(e, ProfilerError::TooManyCounters { counters: 5000, .. })
                && s.contains("131071")
                && s.contains("fix:"),
            "{s}"
        );
        // Exactly at the limit is fine.
        let one = vec!["x".repeat(MAX_METRICS_ARG_BYTES)];
        assert!(check_counters(&one).is_ok());
        assert!(check_counters(&["x".repeat(MAX_METRICS_ARG_BYTES + 1)]).is_err());
    }

    #[test]
    fn a_missing_ncu_is_named_with_its_fix() {
        let d = tempfile::tempdir().unwrap();
        let e = find(&NcuSearch {
            explicit: Some(d.path().join("ncu")),
            path_dirs: vec![],
        })
        .unwrap_err();
        assert!(matches!(e, ProfilerError::NotAFile(_)) && e.to_string().contains("fix:"));
        // A directory on PATH without ncu, and (on this machine) no toolkit: not found.
        if !Path::new("/usr/local/cuda/bin/ncu").is_file() {
            let e = find(&NcuSearch {
                explicit: None,
                path_dirs: vec![d.path().to_path_buf()],
            })
            .unwrap_err();
            assert!(matches!(e, ProfilerError::NotFound));
        }
        // A stand-in ncu that prints a version is found and its version read.
        let fake = d.path().join("ncu");
        std::fs::write(&fake, "#!/bin/sh\necho 'NVIDIA (R) Nsight Compute Command Line Profiler'\necho 'Version 2025.3.1.0 (build 1)'\n").unwrap();
        std::fs::set_permissions(&fake, std::os::unix::fs::PermissionsExt::from_mode(0o755))
            .unwrap();
        let ncu = find(&NcuSearch {
            explicit: None,
            path_dirs: vec![d.path().to_path_buf()],
        })
        .unwrap();
        assert_eq!(
            (ncu.path, ncu.version.as_str()),
            (fake, "Version 2025.3.1.0 (build 1)")
        );
    }
}
