//! A job's buffers on the GPU: allocated by kind, given their initial data from a seed, put back to it before every check, and read back for the checks.

use std::sync::Arc;

use cudarc::driver::{CudaSlice, DevicePtr};

use super::device::Gpu;
use super::error::{Doing, RunError};
use super::memory::Allocation;
use super::tensor_maps::{EncodedMap, encode_all};
use crate::suite::{BufferSpec, JobSpec};
use crate::verify::{HostData, Init};

/// Device buffers of a job with the host data they start from.
pub(super) struct Buffers {
    memory: Vec<Allocation>,
    /// Shared with the child's `HostCache`: the next job of the group starts from the same draw.
    pub(super) initial: Vec<Option<Arc<HostData>>>,
    pub(super) pointers: Pointers,
    /// Where each buffer is for copies (host memory by its host pointer).
    pub(super) copy_pointers: Pointers,
    /// Host memory of earlier downloads, kept for the next download of the same buffer: faulting
    /// in a fresh 1 GiB allocation takes longer than the copy into it. The price: one host copy
    /// of each checked output stays allocated through timing.
    spare: Vec<Option<HostData>>,
    /// Device-memory copies of recent initial data of each device buffer (the samples' inputs and
    /// a try's unseen ones): a reset copies from one on the device instead of uploading again.
    pristine: Vec<Vec<(Arc<HostData>, CudaSlice<u8>)>>,
    /// A device copy of an output as a run left it (`keep_output`), for the next run's output to
    /// be compared with on the GPU.
    echo: Option<CudaSlice<u8>>,
}

/// Pristine copies kept a buffer: the inputs a verified try alternates between.
const PRISTINE_KEPT: usize = 2;

/// Where each buffer is, as a kernel (or a copy) sees it, and its element size (for `a[offset]`).
#[derive(Clone, Default)]
pub(super) struct Pointers {
    base: Vec<u64>,
    elem_bytes: Vec<u64>,
    /// The job's tensor maps encoded for these addresses, by manifest index.
    tensor_maps: Vec<(usize, EncodedMap)>,
}

impl Pointers {
    /// The encoded tensor map with manifest index `i` (the job resolved every one its launches pass).
    pub(super) fn tensor_map(&self, i: usize) -> Option<&EncodedMap> {
        self.tensor_maps
            .iter()
            .find(|(index, _)| *index == i)
            .map(|(_, m)| m)
    }

    /// The address of element `at` of buffer `i`.
    pub(super) fn at(&self, i: usize, at: u64) -> u64 {
        self.base[i] + at * self.elem_bytes[i]
    }
}

impl Buffers {
    pub(super) fn new(gpu: &Gpu, spec: &JobSpec, seed: u64) -> Result<Buffers, RunError> {
        let mut memory = Vec::new();
        for b in &spec.buffers {
            memory.push(Allocation::new(
                gpu,
                b.memory,
                b.bytes() as usize,
                &b.advise,
                &b.name,
            )?);
        }
        let elem_bytes: Vec<u64> = spec.buffers.iter().map(|b| b.elem.size() as u64).collect();
        let base: Vec<u64> = memory.iter().map(|m| m.device_address(gpu)).collect();
        let pointers = Pointers {
            tensor_maps: encode_all(&spec.tensor_maps, &base)?,
            base,
            elem_bytes: elem_bytes.clone(),
        };
        let copy_pointers = Pointers {
            base: memory.iter().map(|m| m.copy_address(gpu)).collect(),
            elem_bytes,
            tensor_maps: Vec::new(),
        };
        let mut bufs = Buffers {
            memory,
            initial: vec![None; spec.buffers.len()],
            pointers,
            copy_pointers,
            spare: vec![None; spec.buffers.len()],
            pristine: (0..spec.buffers.len()).map(|_| Vec::new()).collect(),
            echo: None,
        };
        bufs.reseed(gpu, spec, seed);
        Ok(bufs)
    }

    /// Initial data drawn from `seed` (another seed for a second verification on inputs the
    /// first never saw); a buffer `from` another gets that buffer's new values, converted.
    pub(super) fn reseed(&mut self, gpu: &Gpu, spec: &JobSpec, seed: u64) {
        let mut host = gpu.host.borrow_mut();
        for (i, b) in spec.buffers.iter().enumerate() {
            self.initial[i] = match b.from {
                // The manifest only lets a buffer start from an earlier one, so it is filled already.
                Some(src) => self.initial[src].as_ref().map(|d| {
                    let mut data = d.converted(spec.buffers[src].elem, b.elem);
                    data.truncate(b.len as usize);
                    Arc::new(data)
                }),
                None if b.has_data() => {
                    Some(host.draw(b.elem, b.len as usize, b.init, seed.wrapping_add(i as u64)))
                }
                None => None,
            };
        }
    }

    /// `reseed` to `seed`, handing back the initial data it replaces (kept for a check made later).
    pub(super) fn reseed_keeping(
        &mut self,
        gpu: &Gpu,
        spec: &JobSpec,
        seed: u64,
    ) -> Vec<Option<Arc<HostData>>> {
        let kept = std::mem::replace(&mut self.initial, vec![None; spec.buffers.len()]);
        self.reseed(gpu, spec, seed);
        kept
    }

    /// Puts every buffer back to its initial state (inputs re-uploaded, outputs poisoned again).
    pub(super) fn reset(&mut self, gpu: &Gpu, spec: &JobSpec) -> Result<(), RunError> {
        self.reset_where(gpu, spec, |_| true)
    }

    /// Puts the buffers `which` picks back to their initial state. Host-resident ones are written
    /// by the host, after the GPU is idle (a managed buffer's pages move back to the host).
    pub(super) fn reset_where(
        &mut self,
        gpu: &Gpu,
        spec: &JobSpec,
        which: impl Fn(&BufferSpec) -> bool,
    ) -> Result<(), RunError> {
        if spec
            .buffers
            .iter()
            .any(|b| !b.memory.is_device() && which(b))
        {
            gpu.ctx
                .synchronize()
                .doing("waiting for the GPU before writing host buffers")?;
        }
        for (i, b) in spec.buffers.iter().enumerate() {
            if !which(b) {
                continue;
            }
            let fill = if b.init == Init::Poison { 0xFF } else { 0 };
            match (self.memory[i].host_bytes(), &self.initial[i]) {
                (Some(host), Some(data)) => {
                    host[..data.as_bytes().len()].copy_from_slice(data.as_bytes())
                }
                (Some(host), None) => host.fill(fill),
                (None, Some(data)) => {
                    restore(gpu, &mut self.pristine[i], self.pointers.base[i], data)
                        .doing(format!("uploading buffer `{}`", b.name))?
                }
                // SAFETY: the pointer and length are those of a live allocation on this stream.
                (None, None) => unsafe {
                    cudarc::driver::result::memset_d8_async(
                        self.pointers.base[i],
                        fill,
                        b.bytes() as usize,
                        gpu.stream.cu_stream(),
                    )
                }
                .doing(format!("filling buffer `{}`", b.name))?,
            }
        }
        // Non-blocking streams of a host program do not wait for the NULL stream's uploads and fills.
        gpu.ctx.synchronize().doing("finishing the buffers' reset")
    }

    pub(super) fn download(
        &mut self,
        gpu: &Gpu,
        spec: &JobSpec,
        index: usize,
    ) -> Result<HostData, RunError> {
        let b = &spec.buffers[index];
        let mut data = match self.spare[index].take() {
            Some(d) if d.len() == b.len as usize => d,
            _ => gpu.host.borrow_mut().spare(b.elem, b.len as usize),
        };
        let len = data.as_bytes().len();
        match self.memory[index].host_bytes() {
            Some(host) => {
                gpu.ctx.synchronize().doing(format!(
                    "waiting for the GPU before reading buffer `{}`",
                    b.name
                ))?;
                data.as_bytes_mut().copy_from_slice(&host[..len]);
            }
            // SAFETY: a live device allocation of at least `len` bytes; the copy is synchronous.
            None => unsafe {
                cudarc::driver::result::memcpy_dtoh_sync(
                    data.as_bytes_mut(),
                    self.pointers.base[index],
                )
            }
            .doing(format!("downloading buffer `{}`", b.name))?,
        }
        Ok(data)
    }

    /// Keeps a device copy of device buffer `index` as it is now, for `unchanged_since_kept`;
    /// false where it cannot be kept (a host-resident buffer, or no device memory left).
    pub(super) fn keep_output(&mut self, gpu: &Gpu, spec: &JobSpec, index: usize) -> bool {
        let bytes = spec.buffers[index].bytes() as usize;
        // A host program's own streams need not have finished what the copy reads.
        if self.memory[index].host_bytes().is_some() || gpu.ctx.synchronize().is_err() {
            return false;
        }
        if self.echo.as_ref().is_none_or(|e| e.len() != bytes.max(1)) {
            self.echo = None;
            // SAFETY: every byte is written by the copy right after.
            self.echo = unsafe { gpu.stream.alloc::<u8>(bytes.max(1)) }.ok();
        }
        let Some(echo) = &self.echo else {
            return false;
        };
        let dst = echo.device_ptr(&gpu.stream).0;
        // SAFETY: both are live device allocations of at least `bytes` bytes, on this stream.
        let copied = unsafe {
            cudarc::driver::result::memcpy_dtod_async(
                dst,
                self.pointers.base[index],
                bytes,
                gpu.stream.cu_stream(),
            )
        };
        copied.is_ok() || {
            self.echo = None;
            false
        }
    }

    /// Whether device buffer `index` holds the bytes `keep_output` kept, compared on the GPU.
    pub(super) fn unchanged_since_kept(
        &self,
        gpu: &Gpu,
        spec: &JobSpec,
        index: usize,
    ) -> Result<bool, RunError> {
        let Some(echo) = &self.echo else {
            return Ok(false);
        };
        let bytes = spec.buffers[index].bytes() as usize;
        gpu.same_bytes(self.pointers.base[index], echo, bytes)
    }

    /// Gives a download's host memory back for the next download of buffer `index`.
    pub(super) fn recycle(&mut self, index: usize, data: HostData) {
        self.spare[index] = Some(data);
    }

    /// Hands the host buffers of the job's downloads to the child, for the next job it serves.
    pub(super) fn keep_spares(&mut self, gpu: &Gpu) {
        let mut host = gpu.host.borrow_mut();
        for data in self.spare.iter_mut().filter_map(Option::take) {
            host.keep_spare(data);
        }
    }
}

/// Puts `data` into the device buffer at `dst`: copied on the device from a pristine copy of it,
/// made (uploaded once) where none is kept; uploaded directly where the device has no memory
/// left for one.
fn restore(
    gpu: &Gpu,
    pristine: &mut Vec<(Arc<HostData>, CudaSlice<u8>)>,
    dst: u64,
    data: &Arc<HostData>,
) -> Result<(), cudarc::driver::DriverError> {
    let bytes = data.as_bytes();
    let kept = match pristine.iter().position(|(d, _)| Arc::ptr_eq(d, data)) {
        Some(at) => Some(at),
        // SAFETY: every byte is written by the upload right after.
        None => match unsafe { gpu.stream.alloc::<u8>(bytes.len().max(1)) } {
            Ok(copy) => {
                // SAFETY: a live device allocation of `bytes.len()` bytes; the copy is synchronous.
                unsafe {
                    cudarc::driver::result::memcpy_htod_sync(copy.device_ptr(&gpu.stream).0, bytes)
                }?;
                if pristine.len() >= PRISTINE_KEPT {
                    pristine.remove(0);
                }
                pristine.push((data.clone(), copy));
                Some(pristine.len() - 1)
            }
            Err(_) => None,
        },
    };
    match kept {
        // SAFETY: both are live device allocations of at least `bytes.len()` bytes, on this stream.
        Some(at) => unsafe {
            let src = pristine[at].1.device_ptr(&gpu.stream).0;
            cudarc::driver::result::memcpy_dtod_async(dst, src, bytes.len(), gpu.stream.cu_stream())
        },
        // SAFETY: a live device allocation of at least `bytes.len()` bytes (from pageable memory
        // the call may return before the DMA ends: the reset synchronizes after).
        None => unsafe { cudarc::driver::result::memcpy_htod_sync(dst, bytes) },
    }
}
