//! One ncu session over a pass of launches: run the target program under ncu, export the raw page, and give each job its profile record.

use std::ffi::OsString;
use std::path::Path;
use std::time::Duration;

use super::{
    ClockControl, Ncu, ProfilerError, assign_kernels, check_counters, diagnose, export_raw,
    profile_args, profile_record, report_path,
};
use crate::metrics::{self, MetricDef};
use crate::parse;
use crate::process::{self, FailureKind};
use crate::records::ProfileRecord;
use crate::stats;
use crate::store::{FileKind, read_regular_text, write_atomic};
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
    /// When given and `defs` has `duration`, that metric comes from a second session of its own,
    /// `NAME-duration`: under a metric set's replay, and on a process's first launch, ncu reads
    /// kernels up to 6% and 14% longer than alone and warm (gap-probe-h200), where the
    /// event time is neither.
    pub duration: Option<DurationSession>,
}

/// The duration's own session.
pub struct DurationSession {
    /// The pass's program told to run each job once unprofiled, then `runs` times between
    /// cuProfilerStart and cuProfilerStop.
    pub target: Vec<OsString>,
    pub runs: u32,
}

/// Profiles the pass; a job ncu could not measure gets a record that says why, never a guess.
pub fn profile(p: &Pass) -> Vec<ProfileRecord> {
    if p.jobs.is_empty() {
        return Vec::new();
    }
    let mut records = session(p, p.jobs, &p.target, p.defs, &p.name, false, p.timeout);
    let Some(def) = p.defs.iter().find(|d| d.name == metrics::DURATION_METRIC) else {
        return records;
    };
    match &p.duration {
        Some(d) => {
            // The profiled runs, in launch order: each job `runs` times over. The child runs every
            // job `runs + 1` times, so it may take that many times the pass's time.
            let runs: Vec<&JobSpec> = p
                .jobs
                .iter()
                .flat_map(|j| std::iter::repeat_n(*j, d.runs as usize))
                .collect();
            let own = session(
                p,
                &runs,
                &d.target,
                std::slice::from_ref(def),
                &format!("{}-duration", p.name),
                true,
                p.timeout.saturating_mul(d.runs.saturating_add(1)),
            );
            take_durations(&mut records, &own);
        }
        None => keep_metric_set_durations(&mut records),
    }
    records
}

/// Says of each record that has a duration that it is the metric set's reading, as asked
/// (`--duration-runs 0`), so that it is never taken for one from the session of its own.
pub fn keep_metric_set_durations(records: &mut [ProfileRecord]) {
    for r in records
        .iter_mut()
        .filter(|r| r.metrics.contains_key(metrics::DURATION_METRIC))
    {
        r.duration_from = Some(ProfileRecord::METRIC_SET_DURATION_ASKED.to_string());
    }
}

/// Gives each record the median duration of its runs in the duration's own session, and says
/// where its duration came from; where a run of the job has no duration there, the metric set's
/// stays, with why.
pub fn take_durations(records: &mut [ProfileRecord], own: &[ProfileRecord]) {
    for r in records
        .iter_mut()
        .filter(|r| r.metrics.contains_key(metrics::DURATION_METRIC))
    {
        let runs: Vec<&ProfileRecord> = own.iter().filter(|d| d.job_id == r.job_id).collect();
        let mut durations: Vec<f64> = runs
            .iter()
            .filter(|d| d.error.is_none())
            .filter_map(|d| d.metrics.get(metrics::DURATION_METRIC).copied().flatten())
            .collect();
        if !runs.is_empty() && durations.len() == runs.len() {
            r.metrics.insert(
                metrics::DURATION_METRIC.to_string(),
                Some(stats::median_in_place(&mut durations)),
            );
            r.duration_from = Some(ProfileRecord::own_session_duration(runs.len()));
        } else {
            let why = match runs.iter().find_map(|d| d.error.clone()) {
                Some(error) => format!("it failed: {error}"),
                None if runs.is_empty() => "it has no record of this job".to_string(),
                None => format!(
                    "{} of its {} runs of this job have no duration",
                    runs.len() - durations.len(),
                    runs.len()
                ),
            };
            r.duration_from = Some(format!(
                "the metric set's session, since the duration's own session could not give it: {why}"
            ));
        }
    }
}

/// One ncu session over `target` collecting the counters of `defs`; with `from_start_off`, only
/// the launches between cuProfilerStart and cuProfilerStop are profiled.
fn session(
    p: &Pass,
    jobs: &[&JobSpec],
    target: &[OsString],
    defs: &[MetricDef],
    name: &str,
    from_start_off: bool,
    timeout: Duration,
) -> Vec<ProfileRecord> {
    let failed = |why: String, report: Option<String>| {
        jobs.iter()
            .map(|j| ProfileRecord::failed(j.id(), why.clone(), report.clone()))
            .collect()
    };
    let report_base = p.dir.join(name);
    let report = report_path(&report_base);
    let log = p.dir.join(format!("{name}.log"));
    let counters = metrics::counters_needed(defs);
    if let Err(e) = check_counters(&counters) {
        return failed(e.to_string(), None);
    }
    let mut cmd = p.ncu.command_over_child();
    cmd.args(profile_args(&counters, p.clock_control, &report_base));
    if from_start_off {
        cmd.args(["--profile-from-start", "off"]);
    }
    cmd.args(target);
    let ended = process::run(&mut cmd, &process::Output::Log(log.clone()), Some(timeout));
    let text = match &ended {
        Ok(f) => f.text.clone(),
        Err(_) => read_regular_text(&log, FileKind::LOG).unwrap_or_default(),
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
        Err(e) if matches!(e.kind, FailureKind::TimedOut(_)) || !report.exists() => {
            return failed(ProfilerError::Failed(e).to_string(), None);
        }
        Err(e) => trouble = Some(format!("ncu or the profiled pass failed: {e}")),
    }
    if !report.exists() {
        let range = if from_start_off {
            " between cuProfilerStart and cuProfilerStop"
        } else {
            ""
        };
        return failed(
            format!(
                "ncu profiled no launch{range} and wrote no report, though the pass ran to its end; see {}",
                log.display()
            ),
            None,
        );
    }
    let csv = match export_raw(p.ncu, &report) {
        Ok(csv) => csv,
        Err(e) => return failed(e.to_string(), None),
    };
    let report_name = report.file_name().map(|n| n.to_string_lossy().to_string());
    if let Err(e) = write_atomic(&p.dir.join(format!("{name}.csv")), csv.as_bytes()) {
        trouble.get_or_insert(format!(
            "could not keep ncu's export beside the report: {e}"
        ));
    }
    let parsed = match parse::parse_ncu_csv(&csv) {
        Ok(parsed) => parsed,
        Err(e) => return failed(format!("{e}; see {}", log.display()), report_name),
    };
    // NaN counters of launches that ran: the environment failed, and no value may come of them.
    if let Err(e) = parsed.refuse_non_finite() {
        return failed(e.to_string(), report_name);
    }
    records(jobs, defs, &parsed.kernels, report_name, trouble)
}

/// Each job's record from the kernels ncu profiled, in the pass's launch order. More kernels
/// than the pass launched means some launch was profiled that no job made, so which kernel is
/// whose cannot be told from the order: every record then says so.
pub fn records(
    jobs: &[&JobSpec],
    defs: &[MetricDef],
    kernels: &[parse::KernelRow],
    report_name: Option<String>,
    trouble: Option<String>,
) -> Vec<ProfileRecord> {
    let launched: usize = jobs.iter().map(|j| j.launches.len()).sum();
    let extra = (kernels.len() > launched).then(|| format!("ncu profiled {} launches where the pass made {launched}: which launch is whose is uncertain, so these numbers are not kept", kernels.len()));
    assign_kernels(jobs, kernels)
        .into_iter()
        .map(|(job, rows)| match (rows, &extra) {
            (_, Some(extra)) => ProfileRecord::failed(job.id(), extra.clone(), report_name.clone()),
            (Ok(rows), None) => {
                let mut r = profile_record(job, defs, &rows, report_name.clone());
                if !r.missing.is_empty() && r.error.is_none() {
                    r.error = trouble.clone();
                }
                r
            }
            // A launch that failed is the likelier reason for a short pass than ncu itself.
            (Err(e), None) => ProfileRecord::failed(
                job.id(),
                match &trouble {
                    Some(t) => format!("{e} ({t})"),
                    None => e,
                },
                report_name.clone(),
            ),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(job: &str, duration: Option<f64>, error: Option<&str>) -> ProfileRecord {
        let mut r = ProfileRecord::failed(job, String::new(), None);
        r.error = error.map(str::to_string);
        if let Some(ns) = duration {
            r.metrics.insert(metrics::DURATION_METRIC.into(), Some(ns));
        }
        r
    }

    #[test]
    fn the_median_of_the_own_sessions_runs_replaces_the_metric_sets_duration_and_says_so() {
        let mut records = vec![
            record("a", Some(22_700.0), None),
            record("b", Some(40_000.0), None),
        ];
        let own = [
            ("a", 22_400.0),
            ("b", 39_000.0),
            ("a", 20_500.0),
            ("a", 20_600.0),
            ("b", 39_200.0),
            ("b", 39_100.0),
        ];
        take_durations(
            &mut records,
            &own.map(|(job, ns)| record(job, Some(ns), None)),
        );
        assert_eq!(records[0].metrics[metrics::DURATION_METRIC], Some(20_600.0));
        assert_eq!(records[1].metrics[metrics::DURATION_METRIC], Some(39_100.0));
        assert!(records.iter().all(|r| r.duration_from_own_session()));
        assert!(
            records[0]
                .duration_from
                .as_deref()
                .is_some_and(|f| f.contains("median of 3 profiled runs"))
        );
    }

    #[test]
    fn a_failed_own_session_keeps_the_metric_sets_duration_with_the_reason() {
        let mut records = vec![
            record("a", Some(22_700.0), None),
            record("b", Some(40_000.0), None),
            record("c", Some(30_000.0), None),
        ];
        let own = [
            record("a", Some(20_500.0), None),
            record("a", None, Some("ncu timed out")),
            record("b", Some(39_000.0), None),
            record("b", None, None),
        ];
        take_durations(&mut records, &own);
        let from = |i: usize| records[i].duration_from.clone().unwrap_or_default();
        assert_eq!(records[0].metrics[metrics::DURATION_METRIC], Some(22_700.0));
        assert!(
            from(0).starts_with("the metric set's session")
                && from(0).ends_with("it failed: ncu timed out"),
            "{}",
            from(0)
        );
        assert_eq!(records[1].metrics[metrics::DURATION_METRIC], Some(40_000.0));
        assert!(
            from(1).ends_with("1 of its 2 runs of this job have no duration"),
            "{}",
            from(1)
        );
        assert_eq!(records[2].metrics[metrics::DURATION_METRIC], Some(30_000.0));
        assert!(
            from(2).ends_with("it has no record of this job"),
            "{}",
            from(2)
        );
        assert!(records.iter().all(|r| !r.duration_from_own_session()));
    }

    /// A launch profiled that no job made shifts which kernel is whose: no record keeps numbers.
    #[test]
    fn more_kernels_than_launches_fail_every_record_of_the_pass() {
        let job = super::super::assign::tests::job("a", 10);
        let row = |id: u64| parse::KernelRow {
            id,
            process_id: "1".into(),
            kernel_name: "copy".into(),
            block_size: "(256, 1, 1)".into(),
            grid_size: "(10, 1, 1)".into(),
            device: "0".into(),
            cc: "9.0".into(),
            values: [(metrics::DURATION.to_string(), 20_000.0)].into(),
            text: Default::default(),
        };
        let defs = [];
        let exact = records(&[&job], &defs, &[row(0)], None, None);
        assert!(exact[0].error.is_none(), "{:?}", exact[0].error);
        let extra = records(&[&job], &defs, &[row(0), row(1)], None, None);
        assert!(
            extra[0]
                .error
                .as_deref()
                .is_some_and(|e| e.contains("ncu profiled 2 launches where the pass made 1")),
            "{:?}",
            extra[0].error
        );
        assert!(extra[0].metrics.is_empty());
    }

    #[test]
    fn durations_kept_from_the_metric_set_as_asked_say_so_and_are_not_taken_for_a_failure() {
        let mut records = vec![
            record("a", Some(22_700.0), None),
            record("b", None, Some("ncu could not start")),
        ];
        keep_metric_set_durations(&mut records);
        assert_eq!(records[0].metrics[metrics::DURATION_METRIC], Some(22_700.0));
        assert!(
            records[0].duration_from_metric_set_as_asked()
                && !records[0].duration_from_own_session()
        );
        assert!(records[1].duration_from.is_none());
    }

    #[test]
    fn a_record_without_a_duration_gets_none_from_the_own_session() {
        let mut records = vec![record("a", None, Some("ncu could not start"))];
        take_durations(&mut records, &[record("a", Some(20_500.0), None)]);
        assert!(records[0].metrics.is_empty() && records[0].duration_from.is_none());
    }
}
