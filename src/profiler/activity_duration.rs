//! A profiled job's `duration` from its timing child's CUPTI Activity durations (issue 31): the same samples as its event times, with no profiler session of its own; ncu's own duration session only where the run asked for it (`--duration-runs N`).

use crate::metrics::DURATION_METRIC;
use crate::records::{ActivityRecord, DURATION_FROM_ACTIVITY, JobRecord, ProfileRecord};

/// What `duration_from` says of a duration from `samples` samples' activity records, taken
/// during the event samples or (`after_timing`) in extra samples after them.
pub fn activity_duration_from(samples: usize, after_timing: bool) -> String {
    let which = if after_timing {
        "extra samples after the event samples"
    } else {
        "the samples of the event times"
    };
    format!(
        "{DURATION_FROM_ACTIVITY}: the median of {samples} samples' kernel durations from CUPTI's Activity API in the timing child ({which}; the L2 flush left out)"
    )
}

/// Gives each profile record that has a `duration` the median of its job's activity durations,
/// unless it came from ncu's own duration session (asked for with `--duration-runs N`). A job
/// whose timing child has none keeps the profiler's reading, and `duration_from` says why.
pub fn take_activity_durations(records: &mut [ProfileRecord], jobs: &[&JobRecord]) {
    for r in records
        .iter_mut()
        .filter(|r| r.metrics.contains_key(DURATION_METRIC))
        .filter(|r| !r.duration_from_own_session())
    {
        let activity = jobs
            .iter()
            .find(|j| j.key.id == r.job_id)
            .and_then(|j| j.activity.as_ref());
        take_one(r, activity);
    }
}

fn take_one(r: &mut ProfileRecord, activity: Option<&ActivityRecord>) {
    match activity.and_then(|a| a.summary.as_ref().map(|s| (a, s))) {
        Some((a, s)) => {
            // Profile durations are in ns, as ncu's gpu__time_duration.
            r.metrics
                .insert(DURATION_METRIC.to_string(), Some(s.median * 1e6));
            r.duration_from = Some(activity_duration_from(s.n, a.after_timing));
        }
        None => {
            let why = match activity {
                Some(a) => a
                    .error
                    .clone()
                    .unwrap_or_else(|| "no sample was recorded".into()),
                None => "the run was made with --no-activity".into(),
            };
            let before = r
                .duration_from
                .clone()
                .unwrap_or_else(|| "the profiler's metric set".into());
            r.duration_from = Some(format!(
                "{before} (no activity durations from the timing child: {why})"
            ));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats;

    fn profile(id: &str, duration_from: Option<String>) -> ProfileRecord {
        let mut r = ProfileRecord::failed(id, String::new(), None);
        r.error = None;
        r.metrics.insert(DURATION_METRIC.into(), Some(1000.0));
        r.duration_from = duration_from;
        r
    }

    fn job(id: &str, activity: Option<ActivityRecord>) -> JobRecord {
        let mut j = JobRecord::default();
        j.key.id = id.into();
        j.activity = activity;
        j
    }

    #[test]
    fn the_duration_becomes_the_activity_median_in_ns_and_says_so() {
        let samples = vec![0.0020, 0.0021, 0.0019];
        let a = ActivityRecord {
            summary: stats::summarize(&samples),
            samples_ms: samples,
            kernels_per_run: 1.0,
            ..ActivityRecord::default()
        };
        let mut records = vec![profile("a", Some("cupti: the metric set's replay".into()))];
        let j = job("a", Some(a));
        take_activity_durations(&mut records, &[&j]);
        let d = records[0].metrics[DURATION_METRIC].unwrap();
        assert!((d - 2000.0).abs() < 1e-6, "{d}");
        let from = records[0].duration_from.clone().unwrap();
        assert!(from.starts_with("activity: the median of 3 "), "{from}");
        assert!(records[0].duration_from_activity());
        assert!(activity_duration_from(30, true).contains("extra samples after"));
    }

    #[test]
    fn ncu_own_session_stays_where_it_was_asked_for() {
        let own = ProfileRecord::own_session_duration(5);
        let mut records = vec![profile("a", Some(own.clone()))];
        let a = ActivityRecord {
            summary: stats::summarize(&[0.5]),
            ..ActivityRecord::default()
        };
        let j = job("a", Some(a));
        take_activity_durations(&mut records, &[&j]);
        assert_eq!(records[0].metrics[DURATION_METRIC], Some(1000.0));
        assert_eq!(records[0].duration_from, Some(own));
    }

    #[test]
    fn without_activity_the_profiler_reading_stays_and_says_why() {
        let mut records = vec![profile("a", None), profile("b", None)];
        let (a, b) = (
            job(
                "a",
                Some(ActivityRecord::failed("CUPTI could not be loaded")),
            ),
            job("b", None),
        );
        take_activity_durations(&mut records, &[&a, &b]);
        assert_eq!(records[0].metrics[DURATION_METRIC], Some(1000.0));
        let from = |i: usize| records[i].duration_from.clone().unwrap();
        assert!(from(0).contains("CUPTI could not be loaded"), "{}", from(0));
        assert!(from(1).contains("--no-activity"), "{}", from(1));
    }
}
