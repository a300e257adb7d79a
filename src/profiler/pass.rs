//! One ncu session over a pass of launches: run the target program under ncu, export the raw page, and give each job its profile record.

use std::ffi::OsString;
use std::path::Path;
use std::time::Duration;

use super::{assign_kernels, check_counters, diagnose, export_raw, profile_args, profile_record, report_path, ClockControl, Ncu, ProfilerError};
use crate::metrics::{self, MetricDef};
use crate::parse;
use crate::process::{self, FailureKind};
use crate::records::ProfileRecord;
use crate::store::write_atomic;
use crate::suite::JobSpec;

/// What one session profiles and where it leaves its files.
pub struct Pass<'a> {
    pub ncu: &'a Ncu,
    /// The program ncu runs, with its arguments: it must launch every job's kernels once, in job order.
    pub target: Vec<OsString>,
    pub jobs: &'a [&'a JobSpec],
    pub defs: &'a [MetricDef],
    pub clock_control: ClockControl,
    /// `NAME.ncu-rep` (kept for the Nsight Compute GUI), `NAME.log` and `NAME.csv` are written here.
    pub dir: &'a Path,
    pub name: String,
    pub timeout: Duration,
}

/// Profiles the pass; a job ncu could not measure gets a record that says why, never a guess.
pub fn profile(p: &Pass) -> Vec<ProfileRecord> {
    if p.jobs.is_empty() {
        return Vec::new();
    }
    let failed = |why: String, report: Option<String>| p.jobs.iter().map(|j| ProfileRecord::failed(j.id(), why.clone(), report.clone())).collect();
    let report_base = p.dir.join(&p.name);
    let report = report_path(&report_base);
    let log = p.dir.join(format!("{}.log", p.name));
    let counters = metrics::counters_needed(p.defs);
    if let Err(e) = check_counters(&counters) {
        return failed(e.to_string(), None);
    }
    let mut cmd = p.ncu.command_over_child();
    cmd.args(profile_args(&counters, p.clock_control, &report_base)).args(&p.target);
    let ended = process::run(&mut cmd, &process::Output::Log(log.clone()), Some(p.timeout));
    let text = match &ended {
        Ok(f) => f.text.clone(),
        Err(_) => std::fs::read_to_string(&log).unwrap_or_default(),
    };
    let diagnosis = diagnose(&text);
    if let Some(why) = &diagnosis
        && (!report.exists() || matches!(why, ProfilerError::CountersNotPermitted))
    {
        return failed(why.to_string(), None);
    }
    // A problem ncu reported while still writing a report is attached to the jobs it left short.
    let mut trouble = diagnosis.map(|d| d.to_string());
    match ended.and_then(|f| f.success()) {
        Ok(_) => {}
        Err(e) if matches!(e.kind, FailureKind::TimedOut(_)) || !report.exists() => return failed(ProfilerError::Failed(e).to_string(), None),
        Err(e) => trouble = Some(format!("ncu or the profiled pass failed: {e}")),
    }
    let csv = match export_raw(p.ncu, &report) {
        Ok(csv) => csv,
        Err(e) => return failed(e.to_string(), None),
    };
    let report_name = report.file_name().map(|n| n.to_string_lossy().to_string());
    if let Err(e) = write_atomic(&p.dir.join(format!("{}.csv", p.name)), csv.as_bytes()) {
        trouble.get_or_insert(format!("could not keep ncu's export beside the report: {e}"));
    }
    let parsed = match parse::parse_ncu_csv(&csv) {
        Ok(parsed) => parsed,
        Err(e) => return failed(format!("{e}; see {}", log.display()), report_name),
    };
    records(p.jobs, p.defs, &parsed.kernels, report_name, trouble)
}

/// Each job's record from the kernels ncu profiled, in the pass's launch order.
pub fn records(jobs: &[&JobSpec], defs: &[MetricDef], kernels: &[parse::KernelRow], report_name: Option<String>, trouble: Option<String>) -> Vec<ProfileRecord> {
    assign_kernels(jobs, kernels)
        .into_iter()
        .map(|(job, rows)| match rows {
            Ok(rows) => {
                let mut r = profile_record(job, defs, &rows, report_name.clone());
                if !r.missing.is_empty() && r.error.is_none() {
                    r.error = trouble.clone();
                }
                r
            }
            Err(e) => ProfileRecord::failed(job.id(), e, report_name.clone()),
        })
        .collect()
}
