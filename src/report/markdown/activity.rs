//! The markdown report's kernel durations from CUPTI's Activity API: per group, each job's activity median and interval beside its event median, and why a job has none.

use std::collections::BTreeMap;
use std::fmt::Write;

use super::cells::table;
use crate::records::{ActivityRecord, JobRecord};

/// The activity table of a group's jobs; nothing where no job recorded activity.
pub(super) fn section(jobs: &[&JobRecord], out: &mut String) {
    let recorded: Vec<(&JobRecord, &ActivityRecord)> = jobs
        .iter()
        .filter_map(|j| j.activity.as_ref().map(|a| (*j, a)))
        .collect();
    if recorded.is_empty() {
        return;
    }
    let mut rows = vec![
        [
            "variant",
            "events median (ms)",
            "activity median (ms) [95% CI]",
            "activity ÷ events",
            "kernels/run",
            "samples",
        ]
        .map(String::from)
        .to_vec(),
    ];
    // Jobs without durations, grouped by why (every job of a run without CUPTI says the same).
    let mut missing: BTreeMap<String, Vec<&str>> = BTreeMap::new();
    for (j, a) in &recorded {
        match &a.summary {
            Some(s) => rows.push(row(j, a, s)),
            None => missing
                .entry(
                    a.error
                        .clone()
                        .unwrap_or_else(|| "no sample recorded".into()),
                )
                .or_default()
                .push(j.label.as_str()),
        }
    }
    if rows.len() > 1 {
        let _ = writeln!(
            out,
            "Kernel durations from CUPTI's Activity API (the GPU's start and end of each of the job's kernels, summed per timed sample; the L2 flush left out):\n\n{}\n",
            table(rows)
        );
    }
    for (why, labels) in missing {
        let _ = writeln!(
            out,
            "No activity durations for {}: {why}\n",
            labels
                .iter()
                .map(|l| format!("`{l}`"))
                .collect::<Vec<_>>()
                .join(", ")
        );
    }
}

fn row(j: &JobRecord, a: &ActivityRecord, s: &crate::stats::Summary) -> Vec<String> {
    let event = j.summary.as_ref().map(|e| e.median);
    let mut samples = s.n.to_string();
    if a.missing_samples > 0 {
        samples.push_str(&format!(" ({} without a kernel)", a.missing_samples));
    }
    if a.after_timing {
        samples.push_str(" after the event samples");
    }
    if a.dropped_records > 0 {
        samples.push_str(&format!(", {} records dropped", a.dropped_records));
    }
    vec![
        j.label.clone(),
        event.map_or("–".into(), |e| format!("{e:.4}")),
        format!("{:.4} [{:.4}, {:.4}]", s.median, s.ci_low, s.ci_high),
        event
            .filter(|e| *e > 0.0)
            .map_or("–".into(), |e| format!("{:.3}", s.median / e)),
        format!("{:.2}", a.kernels_per_run),
        samples,
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats;

    fn job(label: &str, events: &[f64], activity: Option<ActivityRecord>) -> JobRecord {
        JobRecord {
            label: label.into(),
            summary: stats::summarize(events),
            activity,
            ..JobRecord::default()
        }
    }

    #[test]
    fn a_job_shows_its_activity_median_beside_its_event_median() {
        let a = ActivityRecord {
            summary: stats::summarize(&[0.099, 0.1, 0.101]),
            kernels_per_run: 1.0,
            missing_samples: 1,
            ..ActivityRecord::default()
        };
        let j = job("tiled", &[0.1025, 0.1025, 0.1025], Some(a));
        let mut out = String::new();
        section(&[&j], &mut out);
        assert!(out.contains("| tiled"), "{out}");
        let s = j.activity.as_ref().unwrap().summary.unwrap();
        let cell = format!("{:.4} [{:.4}, {:.4}]", s.median, s.ci_low, s.ci_high);
        assert!(out.contains(&cell), "{out}");
        assert!(out.contains("0.1000 ["), "{out}");
        assert!(out.contains("0.976"), "{out}");
        assert!(out.contains("(1 without a kernel)"), "{out}");
    }

    #[test]
    fn jobs_without_durations_are_named_once_per_reason_and_off_says_nothing() {
        let why = "CUPTI could not be loaded";
        let (a, b) = (
            job("a", &[1.0], Some(ActivityRecord::failed(why))),
            job("b", &[1.0], Some(ActivityRecord::failed(why))),
        );
        let mut out = String::new();
        section(&[&a, &b], &mut out);
        assert_eq!(out.matches(why).count(), 1, "{out}");
        assert!(out.contains("`a`, `b`"), "{out}");
        assert!(!out.contains("| a"), "{out}");
        let off = job("c", &[1.0], None);
        let mut none = String::new();
        section(&[&off], &mut none);
        assert!(none.is_empty());
    }
}
