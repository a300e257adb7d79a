//! Which clock a job ran at, and by which clock its time scales (pure).
//!
//! NVML is read just before a job's child process starts and just after it exits. The "after"
//! snapshot comes moments after the last timed launch (in every committed run it reads the card's
//! maximum clocks), so it is the job's observed clock; the "before" snapshot stands in when there
//! is no "after". A snapshot NVML marks `GPU_IDLE` shows an idle clock, not the one the kernels
//! ran at, and is never used.

use serde::Serialize;

use crate::records::JobRecord;
use crate::records::Snapshot;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Clock {
    Sm,
    Memory,
}

impl Clock {
    pub fn name(self) -> &'static str {
        match self {
            Clock::Sm => "SM",
            Clock::Memory => "memory",
        }
    }
    /// A reading of 0 MHz is no reading: as a clock it would scale the samples to nothing.
    fn of(self, s: &Snapshot) -> Option<u32> {
        match self {
            Clock::Sm => s.sm_clock_mhz,
            Clock::Memory => s.mem_clock_mhz,
        }
        .filter(|mhz| *mhz > 0)
    }
}

/// How `check` normalises timings taken at different clocks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Normalize {
    /// Memory clock for jobs that declare bytes and no flops (data movement), SM clock otherwise.
    Auto,
    Always(Clock),
    None,
}

/// `--normalize auto|sm|memory|none`.
impl clap::ValueEnum for Normalize {
    fn value_variants<'a>() -> &'a [Self] {
        &[
            Normalize::Auto,
            Normalize::Always(Clock::Sm),
            Normalize::Always(Clock::Memory),
            Normalize::None,
        ]
    }

    fn to_possible_value(&self) -> Option<clap::builder::PossibleValue> {
        Some(clap::builder::PossibleValue::new(match self {
            Normalize::Auto => "auto",
            Normalize::Always(Clock::Sm) => "sm",
            Normalize::Always(Clock::Memory) => "memory",
            Normalize::None => "none",
        }))
    }
}

fn usable(s: &Option<Snapshot>) -> Option<&Snapshot> {
    s.as_ref()
        .filter(|s| !s.throttle_reasons.iter().any(|r| r == "GPU_IDLE"))
}

/// The clock a job ran at, as defined in this module's header.
pub fn observed(job: &JobRecord, clock: Clock) -> Option<u32> {
    usable(&job.nvml_after)
        .and_then(|s| clock.of(s))
        .or_else(|| usable(&job.nvml_before).and_then(|s| clock.of(s)))
}

/// The clock a job's time is taken to scale with.
pub fn basis(job: &JobRecord, normalize: Normalize) -> Option<Clock> {
    match normalize {
        Normalize::None => None,
        Normalize::Always(c) => Some(c),
        Normalize::Auto => {
            let data_movement =
                job.work.bytes.is_some_and(|b| b > 0.0) && !job.work.flops.is_some_and(|f| f > 0.0);
            Some(if data_movement {
                Clock::Memory
            } else {
                Clock::Sm
            })
        }
    }
}

/// A clock that differs between the two runs of one job.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct ClockChange {
    pub clock: Clock,
    pub base_mhz: u32,
    pub new_mhz: u32,
    /// Whether the new run's samples were scaled by new_mhz / base_mhz (time ∝ 1 / clock).
    pub normalised: bool,
}

impl ClockChange {
    pub fn factor(&self) -> f64 {
        if self.normalised {
            f64::from(self.new_mhz) / f64::from(self.base_mhz)
        } else {
            1.0
        }
    }
}

/// Every clock that differs between the jobs; the one the job scales with is marked normalised.
pub fn changes(base: &JobRecord, new: &JobRecord, normalize: Normalize) -> Vec<ClockChange> {
    let scale_with = basis(new, normalize);
    [Clock::Sm, Clock::Memory]
        .into_iter()
        .filter_map(
            |clock| match (observed(base, clock), observed(new, clock)) {
                (Some(b), Some(n)) if b != n => Some(ClockChange {
                    clock,
                    base_mhz: b,
                    new_mhz: n,
                    normalised: scale_with == Some(clock),
                }),
                _ => None,
            },
        )
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn job(
        before: Option<(u32, u32, &str)>,
        after: Option<(u32, u32, &str)>,
        bytes: Option<f64>,
        flops: Option<f64>,
    ) -> JobRecord {
        let snap = |(sm, mem, reason): (u32, u32, &str)| Snapshot {
            sm_clock_mhz: Some(sm),
            mem_clock_mhz: Some(mem),
            throttle_reasons: if reason.is_empty() {
                vec![]
            } else {
                vec![reason.to_string()]
            },
            ..Default::default()
        };
        JobRecord {
            key: crate::records::JobKey {
                id: "j".into(),
                variant: "v".into(),
                group: "g".into(),
                ..Default::default()
            },
            label: "v".into(),
            status: crate::records::JobStatus::Ok,
            runs_per_sample: 1,
            work: crate::records::Work {
                bytes,
                flops,
                math: None,
            },
            launches: 1,
            nvml_before: before.map(snap),
            nvml_after: after.map(snap),
            ..Default::default()
        }
    }

    #[test]
    fn after_wins_and_idle_snapshots_are_ignored() {
        let j = job(
            Some((1980, 3201, "")),
            Some((1755, 3201, "")),
            Some(1.0),
            None,
        );
        assert_eq!(observed(&j, Clock::Sm), Some(1755));
        let idle_after = job(
            Some((1980, 3201, "")),
            Some((345, 1593, "GPU_IDLE")),
            Some(1.0),
            None,
        );
        assert_eq!(observed(&idle_after, Clock::Memory), Some(3201));
        assert_eq!(
            observed(
                &job(None, Some((345, 1593, "GPU_IDLE")), None, None),
                Clock::Sm
            ),
            None
        );
    }

    #[test]
    fn data_movement_scales_with_memory_clock_arithmetic_with_sm_clock() {
        assert_eq!(
            basis(&job(None, None, Some(8.0), None), Normalize::Auto),
            Some(Clock::Memory)
        );
        assert_eq!(
            basis(&job(None, None, Some(8.0), Some(1e9)), Normalize::Auto),
            Some(Clock::Sm)
        );
        assert_eq!(
            basis(&job(None, None, None, None), Normalize::Auto),
            Some(Clock::Sm)
        );
        assert_eq!(
            basis(&job(None, None, Some(8.0), None), Normalize::None),
            None
        );
    }

    #[test]
    fn only_differing_clocks_are_reported_and_only_the_basis_is_normalised() {
        let base = job(None, Some((1980, 3201, "")), Some(8.0), None);
        let new = job(None, Some((1755, 2619, "")), Some(8.0), None);
        let c = changes(&base, &new, Normalize::Auto);
        assert_eq!(c.len(), 2);
        assert!(!c[0].normalised && c[0].clock == Clock::Sm);
        assert!(c[1].normalised && (c[1].factor() - 2619.0 / 3201.0).abs() < 1e-12);
        assert!(changes(&base, &base, Normalize::Auto).is_empty());
    }

    #[test]
    fn a_clock_read_as_zero_is_no_reading() {
        let base = job(None, Some((1980, 3201, "")), Some(8.0), None);
        let zero = job(None, Some((1980, 0, "")), Some(8.0), None);
        assert!(changes(&base, &zero, Normalize::Auto).is_empty());
        assert!(changes(&zero, &base, Normalize::Auto).is_empty());
        // The reading before the job stands in for one of 0.
        let fallback = job(Some((1980, 2619, "")), Some((1980, 0, "")), Some(8.0), None);
        let c = changes(&base, &fallback, Normalize::Auto);
        assert_eq!((c.len(), c[0].new_mhz), (1, 2619));
    }
}
