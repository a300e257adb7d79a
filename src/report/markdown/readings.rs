//! The markdown report's readings under a group's table: one line per notable metric, tensor-pipe use against the declared math, ncu error, job error, accuracy, left-out samples, clock-lowered samples, impossibility and wrong output of its jobs.

use std::fmt::Write;

use super::cells::status_cell;
use super::tensor_use::tensor_use_reading;
use crate::metrics::{self, MetricDef};
use crate::records::{Impossible, JobRecord, JobStatus, RunData, SLOWER_FACTOR, TRIES, TimedSetup};

/// One line per notable metric, error and wrong output of the jobs.
pub(super) fn section(
    run: &RunData,
    imp: &Impossible,
    jobs: &[&JobRecord],
    metrics: &[MetricDef],
    out: &mut String,
) {
    let mut readings = Vec::new();
    for j in jobs {
        profile_readings(run, j, metrics, &mut readings);
        if let Some(e) = &j.error {
            readings.push(error_reading(imp, j, e));
        }
        accuracy_readings(j, &mut readings);
        if !j.excluded_samples.is_empty() {
            let throttled = j
                .excluded_samples
                .iter()
                .filter(|e| e.clock.throttled)
                .count();
            let lowest = j
                .excluded_samples
                .iter()
                .map(|e| e.clock.sm_mhz)
                .min()
                .unwrap_or(0);
            readings.push(format!("- `{}`: {} samples left out of the median ({throttled} throttled; lowest SM clock {lowest} MHz)", j.label, j.excluded_samples.len()));
        }
        readings.extend(super::energy::clock_reading(j));
        if let Some(why) = imp.get(j.id()) {
            readings.push(format!(
                "- `{}` is impossible, never ranked: {why}",
                j.label
            ));
        }
        readings.extend(wrong_reading(j));
        readings.extend(timed_retry_reading(j));
    }
    readings.extend(timed_checks_reading(jobs));
    if !readings.is_empty() {
        let _ = writeln!(out, "Readings:\n\n{}\n", readings.join("\n"));
    }
}

/// The job's notable metrics, with what each means, and ncu's error.
fn profile_readings(run: &RunData, j: &JobRecord, metrics: &[MetricDef], out: &mut Vec<String>) {
    let Some(p) = run.profiles.get(j.id()) else {
        return;
    };
    for m in metrics {
        if let Some(Some(v)) = p.metrics.get(&m.name)
            && metrics::is_notable(m, *v)
            && !m.reading.is_empty()
        {
            out.push(format!(
                "- `{}`: {} {} (ideal {})",
                j.label,
                metrics::format_value(m, *v),
                m.reading,
                metrics::format_ideal(m)
            ));
        }
    }
    // Only where the flops are judged against a roof: a job without flops has no math to declare.
    if j.work.flops.is_some_and(|f| f > 0.0)
        && let Some(said) = tensor_use_reading(j.work.math, p)
    {
        out.push(format!("- `{}` {said}", j.label));
    }
    if let Some(e) = &p.error {
        out.push(format!("- `{}`: ncu: {e}", j.label));
    }
}

/// The job's error, its first lines in a code block.
fn error_reading(imp: &Impossible, j: &JobRecord, e: &str) -> String {
    let lines: Vec<&str> = e.lines().take(12).collect();
    let more = if e.lines().count() > lines.len() {
        "\n  …(the rest is in results.jsonl and the job's log under logs/)"
    } else {
        ""
    };
    format!(
        "- `{}` {}:\n\n  ```\n  {}{more}\n  ```",
        j.label,
        status_cell(imp, j),
        lines.join("\n  ")
    )
}

/// How far a correct job's output lies from its reference: in ulp, and as relative L2 error.
fn accuracy_readings(j: &JobRecord, out: &mut Vec<String>) {
    if let Some(ulp) = j
        .correctness
        .as_ref()
        .filter(|c| c.passed)
        .and_then(|c| c.max_ulp)
    {
        out.push(format!(
            "- `{}` largest error against float64: {ulp:.2} ulp",
            j.label
        ));
    }
    if let Some(c) = j.correctness.as_ref().filter(|c| c.passed)
        && let (Some(in_eps), Some(elem), Some(max)) = (c.error_in_eps(), c.elem, c.max_error)
    {
        out.push(format!("- `{}` error against its reference: relative L2 {:.2e} = {in_eps:.2} eps of {}, worst element {max:.2e} of max|ref|", j.label, c.rel_error, elem.name()));
    }
}

/// For a wrong job: when it was found wrong (during timing, after it, or at once), and how.
fn wrong_reading(j: &JobRecord) -> Option<String> {
    if let (JobStatus::Wrong, Some(c)) = (
        j.status,
        j.correctness_during.as_ref().filter(|c| !c.passed),
    ) {
        Some(format!(
            "- `{}` was right before timing and wrong on a launch between timed samples ({} verified during timing): {} of {} elements differ; first: {}",
            j.label,
            j.verified_during,
            c.mismatches,
            c.checked,
            c.first_mismatch.clone().unwrap_or_default()
        ))
    } else if let (JobStatus::Wrong, Some(why), true) = (
        j.status,
        j.timed_checks.as_ref().and_then(|t| t.wrong.as_ref()),
        j.correctness.as_ref().is_some_and(|c| c.passed),
    ) {
        Some(format!(
            "- `{}` was right before timing; its verified timed runs are not: {why}",
            j.label
        ))
    } else if let (JobStatus::Wrong, Some(c)) =
        (j.status, j.correctness_after.as_ref().filter(|c| !c.passed))
    {
        Some(format!(
            "- `{}` was right before timing and is wrong after it (fresh inputs, another seed): {} of {} elements differ; first: {}",
            j.label,
            c.mismatches,
            c.checked,
            c.first_mismatch.clone().unwrap_or_default()
        ))
    } else if let (JobStatus::Wrong, Some(c)) = (j.status, &j.correctness) {
        Some(format!(
            "- `{}` is wrong: {} of {} elements differ ({} never written); first: {}",
            j.label,
            c.mismatches,
            c.checked,
            c.unwritten,
            c.first_mismatch.clone().unwrap_or_default()
        ))
    } else {
        None
    }
}

/// Which timed runs were verified, once for the group: how many jobs, and how each run was set up.
fn timed_checks_reading(jobs: &[&JobRecord]) -> Option<String> {
    let verified = jobs.iter().filter(|j| j.timed_checks.is_some()).count();
    (verified > 0).then(|| {
        let setups: Vec<&str> = TimedSetup::TRY.iter().map(|s| s.words()).collect();
        format!(
            "- Timed launches verified in {verified} of {} jobs: after the samples, four consecutive runs each timed as a sample's run is and its output checked ({})",
            jobs.len(),
            setups.join("; ")
        )
    })
}

/// A job whose run on unseen inputs was slower than on seen ones, but not in every try.
fn timed_retry_reading(j: &JobRecord) -> Option<String> {
    let t = j
        .timed_checks
        .as_ref()
        .filter(|t| t.passed() && t.tries() > 1)?;
    Some(format!(
        "- `{}`: its timed run on unseen inputs was over {SLOWER_FACTOR}x its time on seen ones in {} of {} tries, not in the last: a slow run that did not repeat, not judged (it takes all {TRIES})",
        j.label,
        t.tries() - 1,
        t.tries()
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::records::TimedChecks;
    use crate::verify::Correctness;

    fn right() -> Correctness {
        Correctness {
            passed: true,
            checked: 4,
            mismatches: 0,
            unwritten: 0,
            rel_error: 0.0,
            first_mismatch: None,
            max_error: None,
            elem: None,
            max_ulp: None,
        }
    }

    #[test]
    fn a_job_caught_by_its_verified_timed_runs_says_so_with_the_reason() {
        let job = JobRecord {
            label: "fingerprint_quarter".into(),
            status: JobStatus::Wrong,
            correctness: Some(right()),
            correctness_after: Some(right()),
            timed_checks: Some(TimedChecks {
                runs: Vec::new(),
                wrong: Some("timed run 2 of try 1 (…) is wrong".into()),
            }),
            ..Default::default()
        };
        assert_eq!(
            wrong_reading(&job).unwrap(),
            "- `fingerprint_quarter` was right before timing; its verified timed runs are not: timed run 2 of try 1 (…) is wrong"
        );
        let honest = JobRecord {
            label: "tiled".into(),
            timed_checks: Some(TimedChecks::default()),
            ..Default::default()
        };
        let old = JobRecord::default();
        let said = timed_checks_reading(&[&job, &honest, &old]).unwrap();
        assert!(
            said.starts_with(
                "- Timed launches verified in 2 of 3 jobs: after the samples, four consecutive runs"
            ),
            "{said}"
        );
        assert!(said.ends_with("(inputs and outputs as timed; inputs as timed, outputs poisoned; inputs never seen before, outputs left from the last run; the inputs of the run before again, outputs as it left them)"), "{said}");
        assert_eq!(timed_checks_reading(&[&old]), None);
    }
}
