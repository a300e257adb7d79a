//! What `--energy` recorded for one job: the energy NVML's total-energy counter saw over at least a second of back-to-back runs, the runs, the power limit and state, and the clock-event reasons seen meanwhile; and the figures reports derive from it, J per run, W, J/TFLOP and J/GB from the job's declared work (pure data).

use serde::{Deserialize, Serialize};

use super::clock_events::ClockEvents;

/// One job's energy measurement (`--energy`).
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct EnergyRecord {
    /// Runs of the variant (all its launches) between the first and last counter step.
    pub runs: u64,
    /// Seconds between the first and last counter step the loop saw (host clock).
    pub seconds: f64,
    /// The counter's change over them, in joules (NVML counts millijoules).
    pub joules: f64,
    /// How many times the counter moved in that time (it moves in steps of about 100 ms).
    pub counter_steps: u32,
    /// The power limit the driver enforced, in W.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub power_limit_w: Option<f64>,
    /// The performance state (`P0` …) at the end.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub power_state: Option<String>,
    /// The lowest and highest SM clock read at the counter's steps.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sm_clock_mhz: Option<[u32; 2]>,
    /// Every clock-event reason NVML reported at the counter's steps.
    #[serde(default, skip_serializing_if = "ClockEvents::is_empty")]
    pub clock_events: ClockEvents,
    /// Of the counter's steps, those read while a reason lowered the clock (power cap, thermal, …).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub clock_lowered_steps: u32,
    /// How the runs were made, in words (`MOCK: …` in a mock run).
    pub method: String,
    /// A stand-in of the mock executor: nothing was measured.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub mock: bool,
    /// Why there is no measurement (no NVML, a GPU without the counter, a counter that did not move).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

impl EnergyRecord {
    /// A job whose energy could not be measured, and why.
    pub fn failed(why: impl Into<String>) -> EnergyRecord {
        EnergyRecord {
            error: Some(why.into()),
            ..Default::default()
        }
    }

    /// Joules per run of the variant (None without a measurement).
    pub fn joules_per_run(&self) -> Option<f64> {
        (self.error.is_none() && self.runs > 0).then(|| self.joules / self.runs as f64)
    }

    /// Mean power over the measurement, in W.
    pub fn mean_watts(&self) -> Option<f64> {
        (self.error.is_none() && self.seconds > 0.0).then(|| self.joules / self.seconds)
    }

    /// Joules per 10¹² of the job's declared operations (J/TFLOP; J/TOP for integer maths).
    pub fn joules_per_tera_op(&self, flops: Option<f64>) -> Option<f64> {
        let flops = flops.filter(|f| *f > 0.0)?;
        Some(self.joules_per_run()? / (flops / 1e12))
    }

    /// Joules per 10⁹ of the job's declared bytes (J/GB).
    pub fn joules_per_gb(&self, bytes: Option<f64>) -> Option<f64> {
        let bytes = bytes.filter(|b| *b > 0.0)?;
        Some(self.joules_per_run()? / (bytes / 1e9))
    }

    /// Some counter step was read while the clock was lowered (the power cap, thermal, …).
    pub fn clock_lowered(&self) -> bool {
        self.clock_lowered_steps > 0 || self.clock_events.lowers_clock()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn measured() -> EnergyRecord {
        EnergyRecord {
            runs: 2000,
            seconds: 1.2,
            joules: 840.0,
            counter_steps: 12,
            power_limit_w: Some(700.0),
            method: "back to back".into(),
            ..Default::default()
        }
    }

    #[test]
    fn per_run_per_work_and_watts() {
        let e = measured();
        assert_eq!(e.joules_per_run(), Some(0.42));
        assert!((e.mean_watts().unwrap() - 700.0).abs() < 1e-9);
        let (flops, bytes) = (
            Some(2.0 * 4096f64.powi(3)),
            Some(3.0 * 4096.0 * 4096.0 * 2.0),
        );
        let per_tflop = e.joules_per_tera_op(flops).unwrap();
        assert!(
            (per_tflop - 0.42 / 0.137438953472).abs() < 1e-9,
            "{per_tflop}"
        );
        let per_gb = e.joules_per_gb(bytes).unwrap();
        assert!((per_gb - 0.42 / 0.100663296).abs() < 1e-9, "{per_gb}");
        assert_eq!(e.joules_per_tera_op(None), None);
    }

    #[test]
    fn a_failed_measurement_has_no_figures_and_old_fields_stay_out_of_the_json() {
        let e = EnergyRecord::failed("no counter");
        assert_eq!((e.joules_per_run(), e.mean_watts()), (None, None));
        let json = serde_json::to_string(&measured()).unwrap();
        assert!(
            !json.contains("mock") && !json.contains("clock_events"),
            "{json}"
        );
        let back: EnergyRecord = serde_json::from_str(&json).unwrap();
        assert_eq!(back, measured());
    }
}
