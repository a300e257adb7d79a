//! The environment a run was measured in: the GPU's identity and capabilities, and NVML's clock snapshots (pure data).

use serde::{Deserialize, Serialize};

/// What does not change during a run: identity and capabilities.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct DeviceInfo {
    pub index: u32,
    pub name: String,
    pub uuid: String,
    pub driver: String,
    /// CUDA version the driver supports, e.g. "13.0".
    pub cuda_driver: String,
    pub compute_capability: String,
    pub memory_total_bytes: u64,
    pub bus_width_bits: u32,
    pub max_sm_clock_mhz: u32,
    pub max_mem_clock_mhz: u32,
    /// 2 x memory clock x bus width: the datasheet-style peak DRAM bandwidth.
    pub peak_bandwidth_gbs: f64,
    /// Streaming multiprocessors (the CUDA driver's count): the `SMS` of grid expressions.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sm_count: Option<u32>,
}

/// Clocks, temperature, power and throttle reasons at one moment.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct Snapshot {
    pub sm_clock_mhz: Option<u32>,
    pub mem_clock_mhz: Option<u32>,
    pub temperature_c: Option<u32>,
    pub power_w: Option<f64>,
    /// Active clock-limiting reasons as NVML names them (empty: none; `GPU_IDLE` is harmless).
    pub throttle_reasons: Vec<String>,
}

impl Snapshot {
    /// Throttling that lowers clocks under load (idle and application-clock settings do not count).
    pub fn is_throttled(&self) -> bool {
        self.throttle_reasons.iter().any(|r| {
            !matches!(
                r.as_str(),
                "GPU_IDLE" | "APPLICATIONS_CLOCKS_SETTING" | "NONE"
            )
        })
    }
}

pub fn peak_bandwidth_gbs(mem_clock_mhz: u32, bus_width_bits: u32) -> f64 {
    2.0 * mem_clock_mhz as f64 * 1e6 * bus_width_bits as f64 / 8.0 / 1e9
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn h200_peak_from_nvml_figures() {
        // nvidia-smi on an H200: memory clock 3201 MHz, bus width 6016 bits (fixtures/ncu-h200).
        let gbs = peak_bandwidth_gbs(3201, 6016);
        assert!((gbs - 4814.3).abs() < 0.1, "{gbs}");
    }

    #[test]
    fn idle_is_not_throttling() {
        let mut s = Snapshot {
            throttle_reasons: vec!["GPU_IDLE".into()],
            ..Default::default()
        };
        assert!(!s.is_throttled());
        s.throttle_reasons.push("SW_THERMAL_SLOWDOWN".into());
        assert!(s.is_throttled());
    }
}
