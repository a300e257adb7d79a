//! Whether a buffer still holds the bytes of a kept device copy, asked on the GPU: a verified run whose output repeats the run before it, on the same inputs, need not be downloaded to be checked.

use std::sync::Arc;

use cudarc::driver::{
    CudaContext, CudaFunction, CudaSlice, CudaStream, DevicePtr, LaunchConfig, PushKernelArg,
};

use super::builtin::compile_builtin;
use super::error::{Doing, RunError};

/// Counts the blocks that found a difference: 16 bytes a load where both addresses allow it
/// (`n16` 16-byte words), then the rest byte by byte.
const COUNT_KERNEL: &str = r#"
extern "C" __global__ void gpu_lab_count_differences(
    const unsigned char* a, const unsigned char* b, unsigned long long n16,
    unsigned long long n, unsigned long long* count)
{
    unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
    unsigned long long first = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
    const uint4* a4 = (const uint4*)a;
    const uint4* b4 = (const uint4*)b;
    unsigned int diff = 0;
    for (unsigned long long i = first; i < n16; i += stride) {
        uint4 x = a4[i], y = b4[i];
        diff |= (x.x ^ y.x) | (x.y ^ y.y) | (x.z ^ y.z) | (x.w ^ y.w);
    }
    for (unsigned long long i = n16 * 16 + first; i < n; i += stride) {
        diff |= a[i] ^ b[i];
    }
    if (__syncthreads_or(diff != 0) && threadIdx.x == 0) {
        atomicAdd(count, 1ULL);
    }
}
"#;

/// Where a comparison runs: the device's context and the stream of the job's runs.
pub(super) struct OnGpu<'a> {
    pub ctx: &'a Arc<CudaContext>,
    pub stream: &'a Arc<CudaStream>,
}

/// The comparison kernel and its counter, made once a child (`Gpu::same_bytes`).
pub(super) struct Comparer {
    kernel: CudaFunction,
    count: CudaSlice<u64>,
    blocks: u32,
}

impl Comparer {
    pub(super) fn new(gpu: &OnGpu, arch: &str) -> Result<Comparer, RunError> {
        use cudarc::driver::sys::CUdevice_attribute as A;
        let sms = gpu
            .ctx
            .attribute(A::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)
            .doing("reading the SM count")?
            .max(1) as u32;
        Ok(Comparer {
            kernel: compile_builtin(gpu.ctx, arch, COUNT_KERNEL, "gpu_lab_count_differences")?,
            count: gpu
                .stream
                .alloc_zeros::<u64>(1)
                .doing("allocating the comparison's counter")?,
            blocks: sms * 4,
        })
        .and_then(|mut c| c.proven(gpu).map(|()| c))
    }

    /// Refuses a comparison that does not tell a one-byte difference, in the 16-byte words or in
    /// the bytes after them, from none: a wrong "same" would hand a run another's verdict.
    fn proven(&mut self, gpu: &OnGpu) -> Result<(), RunError> {
        let len = 4096 + 3;
        let zeros = vec![0u8; len];
        let kept = gpu
            .stream
            .clone_htod(&zeros)
            .doing("uploading the comparison's self-test")?;
        let mut other = gpu
            .stream
            .clone_htod(&zeros)
            .doing("uploading the comparison's self-test")?;
        let at = other.device_ptr(gpu.stream).0;
        let mut seen = vec![self.same(gpu, at, &kept, len)?];
        for flipped in [17, len - 1] {
            let mut bytes = zeros.clone();
            bytes[flipped] = 1;
            gpu.stream
                .memcpy_htod(&bytes, &mut other)
                .doing("uploading the comparison's self-test")?;
            seen.push(self.same(gpu, at, &kept, len)?);
        }
        if seen == [true, false, false] {
            Ok(())
        } else {
            Err(RunError::Invalid(format!(
                "the on-GPU output comparison failed its self-test (same, differing word, differing tail byte: {seen:?})"
            )))
        }
    }

    /// Whether the `bytes` bytes at device address `at` equal `kept`'s first `bytes`.
    pub(super) fn same(
        &mut self,
        gpu: &OnGpu,
        at: u64,
        kept: &CudaSlice<u8>,
        bytes: usize,
    ) -> Result<bool, RunError> {
        let kept_at = kept.device_ptr(gpu.stream).0;
        let counter = self.count.device_ptr(gpu.stream).0;
        let n = bytes as u64;
        let n16 = if (at | kept_at).is_multiple_of(16) {
            n / 16
        } else {
            0
        };
        // A host program's own streams need not have finished writing the output.
        gpu.ctx
            .synchronize()
            .doing("waiting for the run before comparing its output")?;
        gpu.stream
            .memset_zeros(&mut self.count)
            .doing("clearing the comparison's counter")?;
        let mut b = gpu.stream.launch_builder(&self.kernel);
        b.arg(&at).arg(&kept_at).arg(&n16).arg(&n).arg(&counter);
        // SAFETY: both addresses hold at least `bytes` bytes on this stream; the counter is one u64.
        unsafe {
            b.launch(LaunchConfig {
                grid_dim: (self.blocks, 1, 1),
                block_dim: (256, 1, 1),
                shared_mem_bytes: 0,
            })
        }
        .doing("comparing an output on the GPU")?;
        let differing = gpu
            .stream
            .clone_dtoh(&self.count)
            .doing("reading the comparison's counter")?;
        // The read is asynchronous by its signature; make sure it has landed.
        gpu.stream
            .synchronize()
            .doing("reading the comparison's counter")?;
        Ok(differing.first() == Some(&0))
    }
}
