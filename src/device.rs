//! GPU facts and clock/power snapshots from NVML; a machine where NVML fails still runs, and says so.

use serde::{Deserialize, Serialize};

use nvml_wrapper::enum_wrappers::device::{Clock, TemperatureSensor};
use nvml_wrapper::Nvml;

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
        self.throttle_reasons.iter().any(|r| !matches!(r.as_str(), "GPU_IDLE" | "APPLICATIONS_CLOCKS_SETTING" | "NONE"))
    }
}

pub fn peak_bandwidth_gbs(mem_clock_mhz: u32, bus_width_bits: u32) -> f64 {
    2.0 * mem_clock_mhz as f64 * 1e6 * bus_width_bits as f64 / 8.0 / 1e9
}

/// An NVML session, or the reason there is none.
pub struct NvmlSession {
    nvml: Result<Nvml, String>,
}

impl NvmlSession {
    pub fn open() -> Self {
        NvmlSession { nvml: Nvml::init().map_err(|e| format!("NVML unavailable: {e}")) }
    }

    pub fn error(&self) -> Option<&str> {
        self.nvml.as_ref().err().map(|s| s.as_str())
    }

    pub fn count(&self) -> Result<u32, String> {
        let nvml = self.nvml.as_ref().map_err(|e| e.clone())?;
        nvml.device_count().map_err(|e| e.to_string())
    }

    /// Device `index` in PCI bus order (the child runs with CUDA_DEVICE_ORDER=PCI_BUS_ID so CUDA agrees).
    pub fn info(&self, index: u32) -> Result<DeviceInfo, String> {
        let nvml = self.nvml.as_ref().map_err(|e| e.clone())?;
        let d = nvml.device_by_index(index).map_err(|e| format!("NVML device {index}: {e}"))?;
        let cuda = nvml.sys_cuda_driver_version().ok();
        let bus = d.memory_bus_width().unwrap_or(0);
        let max_mem = d.max_clock_info(Clock::Memory).unwrap_or(0);
        Ok(DeviceInfo {
            index,
            name: d.name().unwrap_or_default(),
            uuid: d.uuid().unwrap_or_default(),
            driver: nvml.sys_driver_version().unwrap_or_default(),
            cuda_driver: cuda.map(|v| format!("{}.{}", v / 1000, (v % 1000) / 10)).unwrap_or_default(),
            compute_capability: d.cuda_compute_capability().map(|c| format!("{}.{}", c.major, c.minor)).unwrap_or_default(),
            memory_total_bytes: d.memory_info().map(|m| m.total).unwrap_or(0),
            bus_width_bits: bus,
            max_sm_clock_mhz: d.max_clock_info(Clock::SM).unwrap_or(0),
            max_mem_clock_mhz: max_mem,
            peak_bandwidth_gbs: peak_bandwidth_gbs(max_mem, bus),
        })
    }

    pub fn snapshot(&self, index: u32) -> Option<Snapshot> {
        let nvml = self.nvml.as_ref().ok()?;
        let d = nvml.device_by_index(index).ok()?;
        let reasons = d.current_throttle_reasons().ok();
        Some(Snapshot {
            sm_clock_mhz: d.clock_info(Clock::SM).ok(),
            mem_clock_mhz: d.clock_info(Clock::Memory).ok(),
            temperature_c: d.temperature(TemperatureSensor::Gpu).ok(),
            power_w: d.power_usage().ok().map(|mw| mw as f64 / 1000.0),
            throttle_reasons: reasons
                .map(|r| r.iter_names().map(|(n, _)| n.to_string()).collect())
                .unwrap_or_default(),
        })
    }
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
        let mut s = Snapshot { throttle_reasons: vec!["GPU_IDLE".into()], ..Default::default() };
        assert!(!s.is_throttled());
        s.throttle_reasons.push("SW_THERMAL_SLOWDOWN".into());
        assert!(s.is_throttled());
    }
}
