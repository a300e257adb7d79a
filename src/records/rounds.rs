//! How the rounds of a multi-round run combine into one job record, and which noise threshold a
//! record may carry (pure rules).

use super::job::{JobRecord, JobStatus, RoundRecord};

impl JobStatus {
    /// Which of two outcomes of one job counts: a failure over a wrong output over success.
    fn severity(self) -> u8 {
        match self {
            JobStatus::Ok => 0,
            JobStatus::Wrong => 1,
            JobStatus::TimedOut => 2,
            JobStatus::Failed => 3,
        }
    }
}

/// A noise threshold in percent that a suite may declare: above 0 and below 100.
pub fn usable_noise_threshold_pct(pct: f64) -> bool {
    pct.is_finite() && pct > 0.0 && pct < 100.0
}

impl JobRecord {
    /// Its suite's own noise threshold as a fraction, where the record holds a usable one (a
    /// percentage above 0 and below 100, as the manifest requires; anything else in a stored
    /// record is ignored rather than let it widen or narrow a check).
    pub fn own_noise_threshold(&self) -> Option<f64> {
        self.noise_threshold_pct
            .filter(|&p| usable_noise_threshold_pct(p))
            .map(|p| p / 100.0)
    }

    /// Adds one more round's record of the same job to the rounds so far (`None` before the
    /// first). The combined record's samples are the round medians, its status the worst round's.
    pub fn with_round(so_far: Option<JobRecord>, round: JobRecord) -> JobRecord {
        let this = RoundRecord {
            status: round.status,
            samples_ms: round.samples_ms.clone(),
            runs_per_sample: round.runs_per_sample,
            stopped_by: round.stopped_by.clone(),
            gpu: round.gpu.clone(),
        };
        let mut merged = match so_far {
            None => JobRecord {
                rounds: Vec::new(),
                ..round.clone()
            },
            Some(mut m) => {
                if round.status.severity() > m.status.severity() {
                    m.status = round.status;
                    m.error = round
                        .error
                        .clone()
                        .map(|e| format!("round {}: {e}", m.rounds.len() + 1));
                }
                // A check that failed in any round is the one to show.
                if round.correctness.as_ref().is_some_and(|c| !c.passed) || m.correctness.is_none()
                {
                    m.correctness = round.correctness.clone();
                }
                if round.correctness_after.as_ref().is_some_and(|c| !c.passed)
                    || m.correctness_after.is_none()
                {
                    m.correctness_after = round.correctness_after.clone();
                }
                if round.correctness_during.as_ref().is_some_and(|c| !c.passed)
                    || m.correctness_during.is_none()
                {
                    m.correctness_during = round.correctness_during.clone();
                }
                m.verified_during += round.verified_during;
                // The verified timed runs of a round that found the job wrong are the ones to show.
                if round.timed_checks.as_ref().is_some_and(|t| !t.passed())
                    || m.timed_checks.is_none()
                {
                    m.timed_checks = round.timed_checks.clone();
                }
                m.excluded_samples
                    .extend(round.excluded_samples.iter().cloned());
                for (reason, n) in &round.sample_clock_events {
                    *m.sample_clock_events.entry(reason.clone()).or_insert(0) += n;
                }
                m.clock_lowered_kept += round.clock_lowered_kept;
                // The last round's energy: the GPU as warm as it gets in the run.
                if round.energy.is_some() {
                    m.energy = round.energy.clone();
                }
                m.nvml_after = round.nvml_after.clone();
                m.wall_seconds += round.wall_seconds;
                m
            }
        };
        merged.rounds.push(this);
        let medians: Vec<f64> = merged
            .rounds
            .iter()
            .filter_map(|r| crate::stats::summarize(&r.samples_ms).map(|s| s.median))
            .collect();
        merged.summary = crate::stats::summarize(&medians);
        merged.samples_ms = medians;
        merged.stopped_by = format!("{} rounds (interval across rounds)", merged.rounds.len());
        merged
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::records::job::JobKey;

    fn record(status: JobStatus, samples: &[f64]) -> JobRecord {
        JobRecord {
            key: JobKey {
                id: "j".into(),
                variant: "v".into(),
                ..Default::default()
            },
            label: "v".into(),
            status,
            error: (status == JobStatus::Failed).then(|| "boom".to_string()),
            samples_ms: samples.to_vec(),
            runs_per_sample: 1,
            stopped_by: "noise target".into(),
            summary: crate::stats::summarize(samples),
            launches: 1,
            wall_seconds: 1.0,
            ..Default::default()
        }
    }

    #[test]
    fn rounds_combine_into_round_medians_and_the_worst_status() {
        let one = JobRecord::with_round(None, record(JobStatus::Ok, &[1.0, 1.0, 1.2]));
        let two = JobRecord::with_round(Some(one), record(JobStatus::Ok, &[2.0, 2.0, 2.2]));
        let three = JobRecord::with_round(Some(two.clone()), record(JobStatus::Ok, &[1.5, 1.5]));
        assert_eq!(three.samples_ms, vec![1.0, 2.0, 1.5]);
        let s = three.summary.unwrap();
        // Three round medians 1.0, 2.0, 1.5: Student's t across them (mean 1.5, s = 0.5), which
        // is wider than any one round's samples.
        let half = 4.302_652_730 * 0.5 / 3f64.sqrt();
        assert_eq!(s.median, 1.5);
        assert!(
            (s.ci_low - (1.5 - half)).abs() < 1e-9 && (s.ci_high - (1.5 + half)).abs() < 1e-9,
            "the interval spans the rounds, not one round's samples: {s:?}"
        );
        assert_eq!(three.rounds.len(), 3);
        assert_eq!(three.rounds[1].samples_ms, vec![2.0, 2.0, 2.2]);
        assert_eq!(three.wall_seconds, 3.0);
        // A round that failed makes the job failed, saying which round.
        let failed = JobRecord::with_round(Some(two), record(JobStatus::Failed, &[]));
        assert_eq!(failed.status, JobStatus::Failed);
        assert_eq!(failed.error.as_deref(), Some("round 3: boom"));
        assert_eq!(
            failed.samples_ms,
            vec![1.0, 2.0],
            "a round without samples adds no median"
        );
    }

    #[test]
    fn a_noise_threshold_is_used_only_between_0_and_100_percent() {
        for usable in [0.5, 5.0, 99.9] {
            assert!(usable_noise_threshold_pct(usable), "{usable}");
        }
        for unusable in [0.0, -1.0, 100.0, 250.0, f64::NAN, f64::INFINITY] {
            assert!(!usable_noise_threshold_pct(unusable), "{unusable}");
        }
        let mut r = record(JobStatus::Ok, &[1.0]);
        assert_eq!(r.own_noise_threshold(), None);
        r.noise_threshold_pct = Some(5.0);
        assert_eq!(r.own_noise_threshold(), Some(0.05));
        // A stored record with a threshold the manifest could not have declared is ignored.
        r.noise_threshold_pct = Some(150.0);
        assert_eq!(r.own_noise_threshold(), None);
    }

    #[test]
    fn a_wrong_output_outranks_success_and_a_failure_outranks_both() {
        let ok = JobRecord::with_round(None, record(JobStatus::Ok, &[1.0]));
        let wrong = JobRecord::with_round(Some(ok), record(JobStatus::Wrong, &[1.0]));
        assert_eq!(wrong.status, JobStatus::Wrong);
        let timed_out = JobRecord::with_round(Some(wrong), record(JobStatus::TimedOut, &[]));
        assert_eq!(timed_out.status, JobStatus::TimedOut);
        let still = JobRecord::with_round(Some(timed_out), record(JobStatus::Ok, &[1.0]));
        assert_eq!(
            still.status,
            JobStatus::TimedOut,
            "a later good round changes nothing"
        );
        assert_eq!(still.stopped_by, "4 rounds (interval across rounds)");
    }
}
