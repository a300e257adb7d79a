//! Device setup: the GPU a child opens (context, stream, architecture, NVML for its clock, the L2 flush made on first use) and the context limits set before any kernel runs.

use std::path::PathBuf;
use std::sync::Arc;

use cudarc::driver::{CudaContext, CudaStream};

use super::error::{Doing, RunError};
use super::l2_flush::Flush;
use super::output_echo::{Comparer, OnGpu};
use crate::build;
use crate::device::{NvmlSession, driver_present};
use crate::records::ClockSample;
use crate::suite::JobSpec;

/// An open GPU: context, stream, the architecture string for NVRTC and where compiled PTX is cached.
pub struct Gpu {
    pub ctx: Arc<CudaContext>,
    pub stream: Arc<CudaStream>,
    pub arch: String,
    pub cache_dir: Option<PathBuf>,
    pub toolkit: build::Toolkit,
    /// NVML, for the SM clock after every sample (absent: samples are kept without a reading).
    nvml: NvmlSession,
    pub(super) ordinal: u32,
    /// The cold-L2 eviction kernel and its buffer, made once (`Gpu::flush`).
    flush: std::cell::OnceCell<Flush>,
    /// Inputs drawn and download buffers, kept for the next job a child serves.
    pub(super) host: std::cell::RefCell<super::host_cache::HostCache>,
    /// The on-GPU comparison of an output with a kept copy, made at first use (`Gpu::same_bytes`),
    /// or why it could not be (not tried again).
    comparer: std::cell::RefCell<Option<Result<Comparer, String>>>,
}

impl Gpu {
    /// The SM clock and throttling now (None without NVML).
    pub(super) fn clock(&self) -> Option<ClockSample> {
        self.nvml.clock(self.ordinal)
    }

    /// NVML's total-energy counter in mJ, or why it cannot be read.
    pub(super) fn energy_mj(&self) -> Result<u64, String> {
        self.nvml.energy_mj(self.ordinal)
    }

    /// The enforced power limit (W) and the performance state, where NVML says.
    pub(super) fn power_state(&self) -> (Option<f64>, Option<String>) {
        self.nvml.power_state(self.ordinal)
    }

    pub fn open(
        ordinal: usize,
        cache_dir: Option<PathBuf>,
        toolkit: build::Toolkit,
    ) -> Result<Gpu, RunError> {
        if !driver_present() {
            return Err(RunError::NoDriver);
        }
        let ctx = CudaContext::new(ordinal).doing(format!("opening GPU {ordinal}"))?;
        let (major, minor) = ctx
            .compute_capability()
            .doing("reading the compute capability")?;
        let stream = ctx.default_stream();
        Ok(Gpu {
            ctx,
            stream,
            arch: format!("sm_{major}{minor}"),
            cache_dir,
            toolkit,
            nvml: NvmlSession::open(),
            ordinal: ordinal as u32,
            flush: std::cell::OnceCell::new(),
            host: Default::default(),
            comparer: Default::default(),
        })
    }

    /// Whether the `bytes` bytes at device address `at` equal `kept`'s, compared on the GPU.
    pub(super) fn same_bytes(
        &self,
        at: u64,
        kept: &cudarc::driver::CudaSlice<u8>,
        bytes: usize,
    ) -> Result<bool, RunError> {
        let on = OnGpu {
            ctx: &self.ctx,
            stream: &self.stream,
        };
        let mut slot = self.comparer.borrow_mut();
        match slot.get_or_insert_with(|| Comparer::new(&on, &self.arch).map_err(|e| e.to_string()))
        {
            Ok(comparer) => comparer.same(&on, at, kept, bytes),
            Err(why) => Err(RunError::Invalid(why.clone())),
        }
    }

    /// The L2 eviction of cold timing, compiled and allocated on first use.
    pub(super) fn flush(&self) -> Result<&Flush, RunError> {
        if let Some(f) = self.flush.get() {
            return Ok(f);
        }
        let _ = self
            .flush
            .set(Flush::new(&self.ctx, &self.stream, &self.arch)?);
        Ok(self.flush.get().expect("set just above"))
    }
}

/// Sets the device runtime's pending launch buffer (`pending_launches`) before any kernel runs:
/// the driver takes the limit only then. The largest any of `specs` asks for.
pub(super) fn set_pending_launches(gpu: &Gpu, specs: &[&JobSpec]) -> Result<(), RunError> {
    if let Some(n) = specs.iter().filter_map(|s| s.pending_launches).max() {
        gpu.ctx
            .set_limit(
                cudarc::driver::sys::CUlimit::CU_LIMIT_DEV_RUNTIME_PENDING_LAUNCH_COUNT,
                n as usize,
            )
            .doing(format!(
                "setting the device runtime's pending launch limit to {n} (pending_launches)"
            ))?;
    }
    Ok(())
}
