//! Launching: a launch's arguments laid out as the driver takes them, one kernel launched on raw handles, and a variant's launches issued in order.

use std::ffi::c_void;
use std::sync::Arc;

use cudarc::driver::CudaStream;
use cudarc::driver::sys::{self, CUstream};

use super::buffers::Pointers;
use super::error::{Doing, RunError};
use super::events::check;
use super::loading::Loaded;
use crate::suite::{ArgSpec, LaunchSpec};

/// The arguments of one launch as the driver takes them: each value in an 8-byte slot, and a
/// pointer to each slot.
pub(super) fn kernel_params(args: &[ArgSpec], pointers: &Pointers) -> Vec<[u8; 8]> {
    args.iter()
        .map(|a| {
            let mut slot = [0u8; 8];
            let bytes: Vec<u8> = match *a {
                ArgSpec::Buffer(i) => pointers.at(i, 0).to_le_bytes().to_vec(),
                ArgSpec::BufferAt(i, at) => pointers.at(i, at).to_le_bytes().to_vec(),
                ArgSpec::I32(x) => x.to_le_bytes().to_vec(),
                ArgSpec::U32(x) => x.to_le_bytes().to_vec(),
                ArgSpec::I64(x) => x.to_le_bytes().to_vec(),
                ArgSpec::U64(x) => x.to_le_bytes().to_vec(),
                ArgSpec::F32(x) => x.to_le_bytes().to_vec(),
                ArgSpec::F64(x) => x.to_le_bytes().to_vec(),
                ArgSpec::F16(x) | ArgSpec::Bf16(x) => x.to_le_bytes().to_vec(),
            };
            slot[..bytes.len()].copy_from_slice(&bytes);
            slot
        })
        .collect()
}

/// Launches `l` on `stream` (raw handles: a host program's own streams, or a graph capture).
pub(super) fn launch(
    loaded: &Loaded,
    l: &LaunchSpec,
    pointers: &Pointers,
    stream: CUstream,
) -> Result<(), RunError> {
    let f = &loaded.functions[&l.kernel];
    let mut slots = kernel_params(&l.args, pointers);
    let mut params: Vec<*mut c_void> = slots.iter_mut().map(|s| s.as_mut_ptr().cast()).collect();
    // SAFETY: argument count and sizes were checked against the kernel's parameters at load (a
    // type of the right size but the wrong kind is the author's bug and at worst faults this
    // child process, which is why jobs run in one); the slots outlive the call, which copies them.
    let r = unsafe {
        sys::cuLaunchKernel(
            f.cu_function(),
            l.grid[0],
            l.grid[1],
            l.grid[2],
            l.block[0],
            l.block[1],
            l.block[2],
            l.shared_bytes,
            stream,
            params.as_mut_ptr(),
            std::ptr::null_mut(),
        )
    };
    check(r, || {
        format!(
            "launching `{}` grid {:?} block {:?}",
            l.kernel, l.grid, l.block
        )
    })
}

/// Launches every kernel of a variant once, in order.
pub(super) fn launch_all(
    stream: &Arc<CudaStream>,
    loaded: &Loaded,
    launches: &[LaunchSpec],
    pointers: &Pointers,
) -> Result<(), RunError> {
    stream
        .context()
        .bind_to_thread()
        .doing("making the context current")?;
    launches
        .iter()
        .try_for_each(|l| launch(loaded, l, pointers, stream.cu_stream()))
}
