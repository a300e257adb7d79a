//! Launching: a launch's arguments laid out as the driver takes them, one kernel launched on raw handles (`cuLaunchKernelEx` where it runs in clusters or overlaps the launch before it), and a variant's launches issued in order.

use std::ffi::c_void;
use std::sync::Arc;

use cudarc::driver::CudaStream;
use cudarc::driver::sys::{self, CUstream};

use super::buffers::Pointers;
use super::error::{Doing, RunError};
use super::events::check;
use super::loading::Loaded;
use crate::suite::tensor_map::TENSOR_MAP_BYTES;
use crate::suite::{ArgSpec, LaunchSpec};

/// One kernel parameter's bytes: big enough for a `CUtensorMap` by value, aligned as one.
#[derive(Clone, Copy)]
#[repr(C, align(128))]
pub(super) struct ParamSlot([u8; TENSOR_MAP_BYTES]);

/// The arguments of one launch as the driver takes them: each value in a slot of its own (the
/// driver reads each parameter's size from the kernel), and a pointer to each slot.
pub(super) fn kernel_params(
    args: &[ArgSpec],
    pointers: &Pointers,
) -> Result<Vec<ParamSlot>, RunError> {
    args.iter()
        .map(|a| {
            let mut slot = ParamSlot([0u8; TENSOR_MAP_BYTES]);
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
                ArgSpec::TensorMap(i) => pointers
                    .tensor_map(i)
                    .ok_or_else(|| {
                        RunError::Invalid(format!(
                            "tensor map #{i} was not encoded for this job (an internal error: the job's tensor_maps miss one its launches pass)"
                        ))
                    })?
                    .0
                    .to_vec(),
            };
            slot.0[..bytes.len()].copy_from_slice(&bytes);
            Ok(slot)
        })
        .collect()
}

/// The launch attributes `l` asks for: its cluster shape, and programmatic stream serialization (PDL).
fn launch_attributes(l: &LaunchSpec) -> Vec<sys::CUlaunchAttribute> {
    let mut attrs = Vec::new();
    if let Some([x, y, z]) = l.cluster {
        // SAFETY: an all-zero attribute is a valid bit pattern (plain integers and a union of them).
        let mut a: sys::CUlaunchAttribute = unsafe { std::mem::zeroed() };
        a.id = sys::CUlaunchAttributeID::CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
        a.value.clusterDim = sys::CUlaunchAttributeValue_union__bindgen_ty_1 { x, y, z };
        attrs.push(a);
    }
    if l.pdl {
        // SAFETY: as above.
        let mut a: sys::CUlaunchAttribute = unsafe { std::mem::zeroed() };
        a.id = sys::CUlaunchAttributeID::CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION;
        a.value.programmaticStreamSerializationAllowed = 1;
        attrs.push(a);
    }
    attrs
}

/// The launch configuration of `l` on `stream` with `attrs` (which must outlive its use).
pub(super) fn launch_config(
    l: &LaunchSpec,
    stream: CUstream,
    attrs: &mut [sys::CUlaunchAttribute],
) -> sys::CUlaunchConfig {
    sys::CUlaunchConfig {
        gridDimX: l.grid[0],
        gridDimY: l.grid[1],
        gridDimZ: l.grid[2],
        blockDimX: l.block[0],
        blockDimY: l.block[1],
        blockDimZ: l.block[2],
        sharedMemBytes: l.shared_bytes,
        hStream: stream,
        attrs: if attrs.is_empty() {
            std::ptr::null_mut()
        } else {
            attrs.as_mut_ptr()
        },
        numAttrs: attrs.len() as u32,
    }
}

/// Launches `l` on `stream` (raw handles: a host program's own streams, or a graph capture).
pub(super) fn launch(
    loaded: &Loaded,
    l: &LaunchSpec,
    pointers: &Pointers,
    stream: CUstream,
) -> Result<(), RunError> {
    let f = &loaded.functions[&l.kernel];
    let mut slots = kernel_params(&l.args, pointers)?;
    let mut params: Vec<*mut c_void> = slots.iter_mut().map(|s| s.0.as_mut_ptr().cast()).collect();
    let mut attrs = launch_attributes(l);
    // SAFETY: argument count and sizes were checked against the kernel's parameters at load (a
    // type of the right size but the wrong kind is the author's bug and at worst faults this
    // child process, which is why jobs run in one); the slots and attributes outlive the call,
    // which copies them.
    let r = unsafe {
        if attrs.is_empty() {
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
        } else {
            let config = launch_config(l, stream, &mut attrs);
            sys::cuLaunchKernelEx(
                &config,
                f.cu_function(),
                params.as_mut_ptr(),
                std::ptr::null_mut(),
            )
        }
    };
    check(r, || {
        let cluster = l
            .cluster
            .map(|c| format!(" cluster {c:?}"))
            .unwrap_or_default();
        let pdl = if l.pdl {
            " (programmatic dependent launch)"
        } else {
            ""
        };
        format!(
            "launching `{}` grid {:?} block {:?}{cluster}{pdl}",
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
