//! The GPUs of this machine: whether the CUDA driver is there and how many GPUs it sees, and NVML's facts, clock/power snapshots and energy counter; a machine where NVML fails still runs, and says so.

use nvml_wrapper::Nvml;
use nvml_wrapper::enum_wrappers::device::{Clock, TemperatureSensor};

use crate::records::{DeviceInfo, Snapshot, peak_bandwidth_gbs};

#[derive(Debug, Clone, thiserror::Error)]
pub enum DeviceError {
    #[error(
        "no NVIDIA GPU driver found on this machine (libcuda.so could not be loaded)\n  fix: run on a machine with an NVIDIA GPU and its driver; `gpu-lab doctor` checks every requirement. `gpu-lab report RUN` works without a GPU."
    )]
    NoDriver,
    #[error("the CUDA driver cannot count GPUs: {0}\n  fix: `gpu-lab doctor` checks the driver")]
    Cuda(String),
    #[error("there is no GPU {asked}: CUDA sees {count}\n  fix: pass --gpu 0 to {} (`gpu-lab devices` lists them)", .count.max(&1) - 1)]
    NoSuchGpu { asked: u32, count: usize },
    #[error("NVML unavailable: {0}")]
    NvmlUnavailable(String),
    #[error("NVML device {index}: {message}")]
    Nvml { index: u32, message: String },
}

/// True when the CUDA driver library can be loaded. Every use of the driver asks first: cudarc
/// panics on first use without it.
pub fn driver_present() -> bool {
    // SAFETY: only tries to open the library.
    unsafe { cudarc::driver::sys::is_culib_present() }
}

/// How many GPUs the CUDA driver sees.
pub fn cuda_device_count() -> Result<usize, DeviceError> {
    if !driver_present() {
        return Err(DeviceError::NoDriver);
    }
    cudarc::driver::CudaContext::device_count()
        .map(|n| n.max(0) as usize)
        .map_err(|e| DeviceError::Cuda(e.to_string()))
}

/// The multiprocessor count of GPU `index` (PCI bus order) from the CUDA driver, found by its PCI
/// bus id as NVML writes it where there is one (CUDA's own numbering need not be the bus's), else
/// by CUDA's ordinal. No context is made.
pub fn cuda_sm_count(index: u32, bus_id: Option<&str>) -> Result<u32, DeviceError> {
    use cudarc::driver::{result, sys};
    if !driver_present() {
        return Err(DeviceError::NoDriver);
    }
    let cuda = |e: String| DeviceError::Cuda(format!("reading the SM count of GPU {index}: {e}"));
    result::init().map_err(|e| cuda(e.to_string()))?;
    let by_bus = bus_id.and_then(|id| {
        let id = std::ffi::CString::new(id).ok()?;
        let mut dev: sys::CUdevice = 0;
        // SAFETY: `dev` is written by the call; `id` is a NUL-terminated string that outlives it.
        unsafe { sys::cuDeviceGetByPCIBusId(&mut dev, id.as_ptr()) }
            .result()
            .ok()
            .map(|_| dev)
    });
    let dev = match by_bus {
        Some(dev) => dev,
        None => result::device::get(index as i32).map_err(|e| cuda(e.to_string()))?,
    };
    // SAFETY: `dev` is a device the driver just returned.
    let n = unsafe {
        result::device::get_attribute(
            dev,
            sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT,
        )
    }
    .map_err(|e| cuda(e.to_string()))?;
    u32::try_from(n).map_err(|_| cuda(format!("the driver said {n}")))
}

/// Fails, with the fix, unless GPU `gpu` exists.
pub fn require_gpu(gpu: u32) -> Result<(), DeviceError> {
    let count = cuda_device_count()?;
    if gpu as usize >= count {
        return Err(DeviceError::NoSuchGpu { asked: gpu, count });
    }
    Ok(())
}

/// An NVML session, or the reason there is none.
pub struct NvmlSession {
    nvml: Result<Nvml, DeviceError>,
}

impl NvmlSession {
    pub fn open() -> Self {
        NvmlSession {
            nvml: Nvml::init().map_err(|e| DeviceError::NvmlUnavailable(e.to_string())),
        }
    }

    pub fn error(&self) -> Option<String> {
        self.nvml.as_ref().err().map(|e| e.to_string())
    }

    pub fn count(&self) -> Result<u32, DeviceError> {
        let nvml = self.nvml.as_ref().map_err(Clone::clone)?;
        nvml.device_count()
            .map_err(|e| DeviceError::NvmlUnavailable(e.to_string()))
    }

    /// Device `index` in PCI bus order (the child runs with CUDA_DEVICE_ORDER=PCI_BUS_ID so CUDA agrees).
    pub fn info(&self, index: u32) -> Result<DeviceInfo, DeviceError> {
        let nvml = self.nvml.as_ref().map_err(Clone::clone)?;
        let d = nvml.device_by_index(index).map_err(|e| DeviceError::Nvml {
            index,
            message: e.to_string(),
        })?;
        let cuda = nvml.sys_cuda_driver_version().ok();
        let bus = d.memory_bus_width().unwrap_or(0);
        let max_mem = d.max_clock_info(Clock::Memory).unwrap_or(0);
        Ok(DeviceInfo {
            index,
            name: d.name().unwrap_or_default(),
            uuid: d.uuid().unwrap_or_default(),
            driver: nvml.sys_driver_version().unwrap_or_default(),
            cuda_driver: cuda
                .map(|v| format!("{}.{}", v / 1000, (v % 1000) / 10))
                .unwrap_or_default(),
            compute_capability: d
                .cuda_compute_capability()
                .map(|c| format!("{}.{}", c.major, c.minor))
                .unwrap_or_default(),
            memory_total_bytes: d.memory_info().map(|m| m.total).unwrap_or(0),
            bus_width_bits: bus,
            max_sm_clock_mhz: d.max_clock_info(Clock::SM).unwrap_or(0),
            max_mem_clock_mhz: max_mem,
            peak_bandwidth_gbs: peak_bandwidth_gbs(max_mem, bus),
            sm_count: cuda_sm_count(index, d.pci_info().ok().map(|p| p.bus_id).as_deref()).ok(),
        })
    }

    /// The SM clock, whether it is being lowered now and NVML's clock-event reasons: the readings
    /// cheap enough to take after every timing sample.
    pub fn clock(&self, index: u32) -> Option<crate::records::ClockSample> {
        let nvml = self.nvml.as_ref().ok()?;
        let d = nvml.device_by_index(index).ok()?;
        let sm_mhz = d.clock_info(Clock::SM).ok()?;
        let reasons: Vec<&str> = d
            .current_throttle_reasons()
            .ok()
            .map(|r| r.iter_names().map(|(n, _)| n).collect())
            .unwrap_or_default();
        // nvml-wrapper names only the reasons `ClockEvents` knows (unknown bits are truncated).
        let events = crate::records::ClockEvents::from_names(&reasons).unwrap_or_default();
        Some(crate::records::ClockSample {
            sm_mhz,
            throttled: events.lowers_clock(),
            events,
        })
    }

    /// NVML's total-energy counter of device `index` (millijoules since the driver loaded), or
    /// why it cannot be read (no NVML; GPUs before Volta have no counter).
    pub fn energy_mj(&self, index: u32) -> Result<u64, String> {
        let nvml = self.nvml.as_ref().map_err(|e| e.to_string())?;
        let d = nvml.device_by_index(index).map_err(|e| e.to_string())?;
        d.total_energy_consumption()
            .map_err(|e| format!("NVML's total-energy counter cannot be read: {e}"))
    }

    /// The power limit the driver enforces (W) and the performance state (`P0` …), where NVML says.
    pub fn power_state(&self, index: u32) -> (Option<f64>, Option<String>) {
        let Some(d) = self
            .nvml
            .as_ref()
            .ok()
            .and_then(|n| n.device_by_index(index).ok())
        else {
            return (None, None);
        };
        let limit = d.enforced_power_limit().ok().map(|mw| mw as f64 / 1000.0);
        let state = d.performance_state().ok().and_then(|p| {
            let n = p.as_c();
            (n < 16).then(|| format!("P{n}"))
        });
        (limit, state)
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
