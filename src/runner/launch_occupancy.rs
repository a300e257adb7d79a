//! What one SM can hold of each launch: the kernel's resources and the device's limits from the driver, the blocks per SM the driver predicts, and the occupancy model's limits beside it.

use super::device::Gpu;
use super::error::{Doing, RunError};
use super::launching::launch_config;
use super::loading::{Loaded, compiled_cluster};
use crate::cupti::launch_stats::LaunchFacts;
use crate::occupancy::{self, KernelUse, SmLimits};
use crate::records::LaunchOccupancy;
use crate::suite::LaunchSpec;

/// One SM's limits, from the device attributes (for the occupancy model and the predicted occupancy).
fn sm_limits(gpu: &Gpu) -> Result<SmLimits, RunError> {
    use cudarc::driver::sys::CUdevice_attribute as A;
    let get = |attribute: A, what: &str| -> Result<u32, RunError> {
        gpu.ctx
            .attribute(attribute)
            .doing(format!("reading the device's {what}"))
            .map(|v| v.max(0) as u32)
    };
    let (major, minor) = gpu
        .ctx
        .compute_capability()
        .doing("reading the compute capability")?;
    Ok(SmLimits {
        compute_capability: [major.max(0) as u32, minor.max(0) as u32],
        warp_size: get(A::CU_DEVICE_ATTRIBUTE_WARP_SIZE, "warp size")?,
        max_threads_per_sm: get(
            A::CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR,
            "threads per SM",
        )?,
        max_blocks_per_sm: get(
            A::CU_DEVICE_ATTRIBUTE_MAX_BLOCKS_PER_MULTIPROCESSOR,
            "blocks per SM",
        )?,
        max_threads_per_block: get(
            A::CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK,
            "threads per block",
        )?,
        registers_per_sm: get(
            A::CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR,
            "registers per SM",
        )?,
        registers_per_block: get(
            A::CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK,
            "registers per block",
        )?,
        shared_bytes_per_sm: get(
            A::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR,
            "shared memory per SM",
        )?,
        shared_bytes_per_block: get(
            A::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK,
            "shared memory per block",
        )?,
        shared_bytes_per_block_optin: get(
            A::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN,
            "opt-in shared memory per block",
        )?,
        reserved_shared_bytes_per_block: get(
            A::CU_DEVICE_ATTRIBUTE_RESERVED_SHARED_MEMORY_PER_BLOCK,
            "reserved shared memory per block",
        )?,
    })
}

/// Each launch's kernel resources (function attributes, read after `load` raised the dynamic
/// shared memory limit where a launch needs it), the blocks per SM the driver predicts, and the
/// occupancy model's limits beside it. A driver that will not predict (it refuses some shapes a
/// launch would refuse too) is recorded per launch: the launch then fails with its own error. An
/// attribute the driver will not give is the error of the whole record (`run_job` keeps it).
pub(super) fn occupancy_of(
    gpu: &Gpu,
    loaded: &Loaded,
    launches: &[LaunchSpec],
) -> Result<Vec<LaunchOccupancy>, RunError> {
    use cudarc::driver::sys::CUfunction_attribute as F;
    let sm = sm_limits(gpu)?;
    launches
        .iter()
        .map(|l| {
            let f = &loaded.functions[&l.kernel];
            let attr = |attribute: F, what: &str| -> Result<u32, RunError> {
                f.get_attribute(attribute)
                    .doing(format!("reading the {what} of `{}`", l.kernel))
                    .map(|v| v.max(0) as u32)
            };
            let kernel = KernelUse {
                threads_per_block: l.block.iter().product(),
                registers_per_thread: attr(F::CU_FUNC_ATTRIBUTE_NUM_REGS, "registers per thread")?,
                static_shared_bytes: attr(
                    F::CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES,
                    "static shared memory",
                )?,
                dynamic_shared_bytes: l.shared_bytes,
                max_threads_per_block: attr(
                    F::CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK,
                    "maximum threads per block",
                )?,
                max_dynamic_shared_bytes: attr(
                    F::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                    "maximum dynamic shared memory",
                )?,
            };
            let local_bytes_per_thread = attr(
                F::CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES,
                "local memory per thread",
            )?;
            // cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags with CU_OCCUPANCY_DEFAULT: the same
            // answer as cuOccupancyMaxActiveBlocksPerMultiprocessor.
            let (active, driver_error) = match f.occupancy_max_active_blocks_per_multiprocessor(
                kernel.threads_per_block,
                l.shared_bytes as usize,
                None,
            ) {
                Ok(n) => (Some(n), None),
                Err(e) => (
                    None,
                    Some(format!("cuOccupancyMaxActiveBlocksPerMultiprocessor: {e}")),
                ),
            };
            let (model, model_error) = match occupancy::block_limits(&sm, &kernel) {
                Ok(limits) => (Some(limits), None),
                Err(e) => (None, Some(e.to_string())),
            };
            let (cluster, active_clusters, cluster_error) = cluster_occupancy(loaded, l)?;
            Ok(LaunchOccupancy {
                kernel: l.kernel.clone(),
                threads_per_block: kernel.threads_per_block,
                registers_per_thread: kernel.registers_per_thread,
                static_shared_bytes: kernel.static_shared_bytes,
                dynamic_shared_bytes: kernel.dynamic_shared_bytes,
                local_bytes_per_thread,
                max_threads_per_block: kernel.max_threads_per_block,
                max_warps_per_sm: sm.max_warps(),
                active_blocks_per_sm: active,
                predicted_occupancy_pct: active
                    .and_then(|n| sm.occupancy_pct(n, kernel.threads_per_block)),
                driver_error,
                limiters: model.map(|m| m.limiters()).unwrap_or_default(),
                model,
                model_error,
                cluster,
                active_clusters,
                cluster_error,
            })
        })
        .collect()
}

/// A launch's cluster shape, the clusters resident at once, and why the driver would not say.
type ClusterOccupancy = (Option<[u32; 3]>, Option<u32>, Option<String>);

/// The launch's cluster shape (its own, or the kernel's compiled one), how many such clusters the
/// GPU holds at once (`cuOccupancyMaxActiveClusters`), or why the driver would not say.
fn cluster_occupancy(loaded: &Loaded, l: &LaunchSpec) -> Result<ClusterOccupancy, RunError> {
    use cudarc::driver::sys;
    let f = &loaded.functions[&l.kernel];
    let Some(shape) = l.cluster.or(compiled_cluster(f, &l.kernel)?) else {
        return Ok((None, None, None));
    };
    // A compiled shape is not repeated in the configuration: the driver takes it from the kernel.
    let mut attrs = Vec::new();
    if let Some([x, y, z]) = l.cluster {
        // SAFETY: an all-zero attribute is a valid bit pattern (plain integers and a union of them).
        let mut a: sys::CUlaunchAttribute = unsafe { std::mem::zeroed() };
        a.id = sys::CUlaunchAttributeID::CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
        a.value.clusterDim = sys::CUlaunchAttributeValue_union__bindgen_ty_1 { x, y, z };
        attrs.push(a);
    }
    let config = launch_config(l, std::ptr::null_mut(), &mut attrs);
    let mut clusters = 0i32;
    // SAFETY: a live function handle, a configuration whose attributes outlive the call, and a valid out-pointer.
    let r = unsafe { sys::cuOccupancyMaxActiveClusters(&mut clusters, f.cu_function(), &config) };
    Ok(match r {
        sys::CUresult::CUDA_SUCCESS => (Some(shape), Some(clusters.max(0) as u32), None),
        other => (
            Some(shape),
            None,
            Some(format!("cuOccupancyMaxActiveClusters: {other:?}")),
        ),
    })
}

/// Each launch's facts for ncu's launch statistics in the CUPTI pass: its occupancy record, grid,
/// the device's limits and SM count, and the carveout of its CUPTI kernel record (`carveouts`, one
/// a launch in launch order, or why there are none: each launch then carries the reason).
pub(super) fn launch_facts(
    gpu: &Gpu,
    loaded: &Loaded,
    launches: &[LaunchSpec],
    carveouts: Result<Vec<u32>, String>,
) -> Result<Vec<LaunchFacts>, RunError> {
    use cudarc::driver::sys::CUdevice_attribute as A;
    let sm = sm_limits(gpu)?;
    let sm_count = gpu
        .ctx
        .attribute(A::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)
        .doing("reading the device's SM count")?
        .max(0) as u32;
    let occupancy = occupancy_of(gpu, loaded, launches)?;
    Ok(occupancy
        .into_iter()
        .zip(launches)
        .enumerate()
        .map(|(i, (occupancy, l))| {
            let carveout = match &carveouts {
                Ok(c) => c
                    .get(i)
                    .copied()
                    .ok_or_else(|| format!("no kernel record for launch {i}")),
                Err(why) => Err(why.clone()),
            };
            LaunchFacts {
                occupancy,
                grid: l.grid,
                sm,
                sm_count,
                carveout_bytes: carveout.as_ref().ok().copied(),
                carveout_error: carveout.err(),
            }
        })
        .collect())
}

/// A launch of which not one cluster fits on the GPU cannot run: refused with what to change.
pub(super) fn refuse_unrunnable_clusters(occupancy: &[LaunchOccupancy]) -> Result<(), RunError> {
    match occupancy.iter().find(|o| o.active_clusters == Some(0)) {
        Some(o) => Err(RunError::Invalid(format!(
            "`{}` runs in clusters of {:?} blocks, and the driver fits no such cluster on this GPU (cuOccupancyMaxActiveClusters = 0): each block needs {} threads, {} registers per thread and {} bytes of shared memory, on as many SMs of one GPC as the cluster has blocks\n  fix: make the cluster smaller (8 blocks or fewer is portable; 16 is the most on an H100), or give each block fewer threads, registers or shared memory",
            o.kernel,
            o.cluster.unwrap_or([0; 3]),
            o.threads_per_block,
            o.registers_per_thread,
            o.shared_bytes()
        ))),
        None => Ok(()),
    }
}
