//! The L2 flush of cold timing: a built-in kernel that reads a buffer of twice the L2 before every cold sample.

use std::sync::Arc;

use cudarc::driver::{
    CudaContext, CudaFunction, CudaSlice, CudaStream, DevicePtr, LaunchConfig, PushKernelArg,
};

use super::builtin::compile_builtin;
use super::error::{Doing, RunError};

/// Built-in L2 eviction kernel: reads a buffer of twice the L2, grid-stride, so that every line
/// the job left there is replaced by a clean one. A write (a memset) would evict as well but leave
/// the L2 full of dirty lines, whose write-back the timed kernel would then pay for; ncu's cache
/// control leaves a clean L2.
const EVICT_KERNEL: &str = r#"
extern "C" __global__ void gpu_lab_evict_l2(const float4* __restrict__ buffer, unsigned long long n4, float* sink) {
  float acc = 0.f;
  for (unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x; i < n4;
       i += (unsigned long long)gridDim.x * blockDim.x) { float4 v = buffer[i]; acc += v.x + v.y + v.z + v.w; }
  // Never true for a buffer of zeros; keeps the loads.
  if (acc == -1.f) *sink = acc;
}
"#;

/// The L2 flush of cold timing: a clean-read of a buffer of twice the L2 (`EVICT_KERNEL`).
pub(super) struct Flush {
    _buffer: CudaSlice<u8>,
    kernel: CudaFunction,
    pointer: u64,
    n4: u64,
    blocks: u32,
}

impl Flush {
    /// Allocates the buffer (twice the L2 of `ctx`'s device, zeroed on `stream`) and compiles the
    /// eviction kernel for `arch`.
    pub(super) fn new(
        ctx: &Arc<CudaContext>,
        stream: &Arc<CudaStream>,
        arch: &str,
    ) -> Result<Flush, RunError> {
        use cudarc::driver::sys::CUdevice_attribute as A;
        let l2 = ctx
            .attribute(A::CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE)
            .doing("reading the L2 size")?
            .max(1 << 20) as usize;
        let sms = ctx
            .attribute(A::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)
            .doing("reading the SM count")?
            .max(1) as u32;
        // Zeros (so that the kernel's impossible sum stays impossible), plus 4 bytes of sink at the end.
        let buffer = stream
            .alloc_zeros::<u8>(2 * l2 + 16)
            .doing("allocating the L2 flush buffer")?;
        let pointer = buffer.device_ptr(stream).0;
        stream.synchronize().doing("clearing the L2 flush buffer")?;
        Ok(Flush {
            _buffer: buffer,
            kernel: compile_builtin(ctx, arch, EVICT_KERNEL, "gpu_lab_evict_l2")?,
            pointer,
            n4: (2 * l2 / 16) as u64,
            blocks: sms * 8,
        })
    }

    /// Evicts the L2 on `stream` (a kernel launch, so it can be captured into a graph too).
    pub(super) fn evict(&self, stream: &CudaStream) -> Result<(), RunError> {
        let sink = self.pointer + self.n4 * 16;
        let mut b = stream.launch_builder(&self.kernel);
        b.arg(&self.pointer).arg(&self.n4).arg(&sink);
        // SAFETY: the buffer holds n4 float4s and the sink after them, as the kernel takes.
        unsafe {
            b.launch(LaunchConfig {
                grid_dim: (self.blocks, 1, 1),
                block_dim: (256, 1, 1),
                shared_mem_bytes: 0,
            })
        }
        .doing("evicting the L2")?;
        Ok(())
    }
}
