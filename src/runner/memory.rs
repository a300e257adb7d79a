//! A job buffer's memory as a CUDA program allocates it: device, pageable, pinned, mapped (zero-copy) or managed (unified), freed when dropped.

use cudarc::driver::sys;
use cudarc::driver::{CudaSlice, DevicePtr};

use super::device::Gpu;
use super::error::{Doing, RunError};
use crate::suite::{Advice, Memory};

/// One buffer's allocation.
pub enum Allocation {
    Device(CudaSlice<u8>),
    /// `malloc`-like host memory the driver must stage through its own pinned buffer.
    Pageable(Vec<u8>),
    /// `cuMemHostAlloc` memory; with DEVICEMAP also readable by kernels at `device`.
    PageLocked {
        host: *mut u8,
        bytes: usize,
        device: Option<u64>,
    },
    /// `cuMemAllocManaged` memory, one address for host and device.
    Managed {
        address: u64,
        bytes: usize,
    },
}

impl Drop for Allocation {
    fn drop(&mut self) {
        // Errors on free are ignored: the child exits right after, and the driver frees what is left.
        match self {
            // SAFETY: allocated by cuMemHostAlloc, freed once.
            Allocation::PageLocked { host, .. } => unsafe {
                let _ = sys::cuMemFreeHost(host.cast());
            },
            // SAFETY: allocated by cuMemAllocManaged, freed once.
            Allocation::Managed { address, .. } => unsafe {
                let _ = sys::cuMemFree_v2(*address);
            },
            Allocation::Device(_) | Allocation::Pageable(_) => {}
        }
    }
}

/// Where a prefetch, a preferred location or an access advice points: the job's GPU or the host.
pub fn location(gpu: &Gpu, on_device: bool) -> sys::CUmemLocation {
    if on_device {
        sys::CUmemLocation {
            type_: sys::CUmemLocationType::CU_MEM_LOCATION_TYPE_DEVICE,
            id: gpu.ordinal as i32,
        }
    } else {
        sys::CUmemLocation {
            type_: sys::CUmemLocationType::CU_MEM_LOCATION_TYPE_HOST,
            id: 0,
        }
    }
}

impl Allocation {
    /// Allocates `bytes` (at least 1) of `memory` for buffer `name`, with its managed-memory advice.
    pub fn new(
        gpu: &Gpu,
        memory: Memory,
        bytes: usize,
        advise: &[Advice],
        name: &str,
    ) -> Result<Allocation, RunError> {
        let bytes = bytes.max(1);
        let doing = |what: &str| format!("allocating {bytes} bytes of {what} for buffer `{name}`");
        Ok(match memory {
            // SAFETY: every byte is written by the buffer's reset before any kernel reads it.
            Memory::Device => Allocation::Device(
                unsafe { gpu.stream.alloc::<u8>(bytes) }.doing(doing("device memory"))?,
            ),
            Memory::Pageable => {
                // An allocation the host cannot make is this job's error, not an abort of the child.
                let mut v = Vec::new();
                v.try_reserve_exact(bytes).map_err(|_| {
                    RunError::Invalid(format!(
                        "{}: the host has not that much memory free (make the buffer smaller)",
                        doing("pageable host memory")
                    ))
                })?;
                v.resize(bytes, 0u8);
                Allocation::Pageable(v)
            }
            Memory::Pinned | Memory::Mapped => page_locked(gpu, memory, bytes, name, doing)?,
            Memory::Managed => managed(gpu, bytes, advise, name, doing)?,
        })
    }

    /// The address a kernel is given (and a copy or memset of device-side memory uses).
    pub fn device_address(&self, gpu: &Gpu) -> u64 {
        match self {
            Allocation::Device(slice) => slice.device_ptr(&gpu.stream).0,
            Allocation::Pageable(v) => v.as_ptr() as u64,
            Allocation::PageLocked { host, device, .. } => device.unwrap_or(*host as u64),
            Allocation::Managed { address, .. } => *address,
        }
    }

    /// The address a copy uses for it: with unified addressing, host memory by its host pointer.
    pub fn copy_address(&self, gpu: &Gpu) -> u64 {
        match self {
            Allocation::PageLocked { host, .. } => *host as u64,
            other => other.device_address(gpu),
        }
    }

    /// The bytes, for host-resident kinds the host can read and write directly (the GPU idle).
    pub fn host_bytes(&mut self) -> Option<&mut [u8]> {
        match self {
            Allocation::Device(_) => None,
            Allocation::Pageable(v) => Some(v.as_mut_slice()),
            // SAFETY: a live allocation of `bytes`, not in use by the GPU (callers synchronise first).
            Allocation::PageLocked { host, bytes, .. } => {
                Some(unsafe { std::slice::from_raw_parts_mut(*host, *bytes) })
            }
            // SAFETY: as above; managed memory is host-accessible, its pages migrate on touch.
            Allocation::Managed { address, bytes } => {
                Some(unsafe { std::slice::from_raw_parts_mut(*address as *mut u8, *bytes) })
            }
        }
    }
}

/// `cuMemHostAlloc` memory of `bytes` for buffer `name`: pinned, or mapped into the device's
/// address space as well (`Memory::Mapped`, zero-copy).
fn page_locked(
    gpu: &Gpu,
    memory: Memory,
    bytes: usize,
    name: &str,
    doing: impl Fn(&str) -> String,
) -> Result<Allocation, RunError> {
    gpu.ctx
        .bind_to_thread()
        .doing("making the context current")?;
    let flags = if memory == Memory::Mapped {
        sys::CU_MEMHOSTALLOC_DEVICEMAP
    } else {
        0
    };
    let mut host: *mut std::ffi::c_void = std::ptr::null_mut();
    // SAFETY: `host` is written by the call.
    unsafe { sys::cuMemHostAlloc(&mut host, bytes, flags) }
        .result()
        .doing(doing(if flags == 0 {
            "pinned host memory"
        } else {
            "mapped host memory"
        }))?;
    let mut allocation = Allocation::PageLocked {
        host: host.cast(),
        bytes,
        device: None,
    };
    if memory == Memory::Mapped {
        let mut device = 0u64;
        // SAFETY: `host` was allocated with DEVICEMAP just above.
        unsafe { sys::cuMemHostGetDevicePointer_v2(&mut device, host, 0) }
            .result()
            .doing(format!(
                "mapping buffer `{name}` into the device's address space"
            ))?;
        if let Allocation::PageLocked { device: d, .. } = &mut allocation {
            *d = Some(device);
        }
    }
    Ok(allocation)
}

/// `cuMemAllocManaged` memory of `bytes` for buffer `name`, with its managed-memory advice.
fn managed(
    gpu: &Gpu,
    bytes: usize,
    advise: &[Advice],
    name: &str,
    doing: impl Fn(&str) -> String,
) -> Result<Allocation, RunError> {
    gpu.ctx
        .bind_to_thread()
        .doing("making the context current")?;
    let mut address = 0u64;
    // SAFETY: `address` is written by the call.
    unsafe {
        sys::cuMemAllocManaged(
            &mut address,
            bytes,
            sys::CUmemAttach_flags::CU_MEM_ATTACH_GLOBAL as u32,
        )
    }
    .result()
    .doing(doing("managed memory"))?;
    let allocation = Allocation::Managed { address, bytes };
    for a in advise {
        use sys::CUmem_advise::*;
        let (advice, on_device) = match a {
            Advice::ReadMostly => (CU_MEM_ADVISE_SET_READ_MOSTLY, true),
            Advice::PreferredLocationDevice => (CU_MEM_ADVISE_SET_PREFERRED_LOCATION, true),
            Advice::PreferredLocationHost => (CU_MEM_ADVISE_SET_PREFERRED_LOCATION, false),
            Advice::AccessedByDevice => (CU_MEM_ADVISE_SET_ACCESSED_BY, true),
        };
        // SAFETY: a live managed range of `bytes`.
        unsafe { sys::cuMemAdvise_v2(address, bytes, advice, location(gpu, on_device)) }
            .result()
            .doing(format!("advising {a:?} for buffer `{name}`"))?;
    }
    Ok(allocation)
}
