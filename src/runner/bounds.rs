//! The bounds a variant is compared with: device-to-device copies (the driver's and a built-in kernel's), the FP32 multiply-add rate, and the host link's copies each way.

use std::sync::Arc;

use cudarc::driver::{CudaStream, DevicePtr, LaunchConfig, PushKernelArg};

use super::builtin::compile_builtin;
use super::device::Gpu;
use super::error::{Doing, RunError};
use super::events::{Events, check, record, wait};
use super::memory::Allocation;
use super::timing::time_runs_plain;
use super::timing_rules::Capture;
use crate::records::{BoundsOutcome, HostLinkSamples, TimingConfig};
use crate::suite::Memory;
use crate::verify::{ElemType, HostData, Init};

/// Built-in copy kernel for the bandwidth bound: 16-byte loads and stores, grid-stride.
const COPY_KERNEL: &str = r#"
extern "C" __global__ void gpu_lab_copy(const float4* __restrict__ in, float4* __restrict__ out, unsigned long long n4) {
  for (unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x; i < n4;
       i += (unsigned long long)gridDim.x * blockDim.x) out[i] = in[i];
}
"#;

/// Built-in FP32 throughput kernel: 8 independent multiply-add chains per thread, every SM full.
const FMA_KERNEL: &str = r#"
extern "C" __global__ void gpu_lab_fma(float* out, int iters) {
  float a0 = threadIdx.x, a1 = a0 + 1.f, a2 = a0 + 2.f, a3 = a0 + 3.f, a4 = a0 + 4.f, a5 = a0 + 5.f, a6 = a0 + 6.f, a7 = a0 + 7.f;
  for (int i = 0; i < iters; ++i) {
#pragma unroll
    for (int u = 0; u < 16; ++u) {
      a0 = fmaf(a0, 0.9999f, 0.0001f); a1 = fmaf(a1, 0.9999f, 0.0001f); a2 = fmaf(a2, 0.9999f, 0.0001f); a3 = fmaf(a3, 0.9999f, 0.0001f);
      a4 = fmaf(a4, 0.9999f, 0.0001f); a5 = fmaf(a5, 0.9999f, 0.0001f); a6 = fmaf(a6, 0.9999f, 0.0001f); a7 = fmaf(a7, 0.9999f, 0.0001f);
    }
  }
  // Never true for these values; keeps the chains live.
  if (a0 + a1 + a2 + a3 + a4 + a5 + a6 + a7 == -1.f) out[0] = a0;
}
"#;

/// The FP32 multiply-add rate: samples, flops per launch, SM count.
fn run_fma(gpu: &Gpu, cfg: &TimingConfig, sms: u32) -> Result<(Vec<f64>, f64, u32), RunError> {
    let f = compile_builtin(&gpu.ctx, &gpu.arch, FMA_KERNEL, "gpu_lab_fma")?;
    // SAFETY: written only if the impossible sum comes true; never read.
    let out = unsafe { gpu.stream.alloc::<f32>(1) }.doing("allocating the FMA kernel's output")?;
    let out_ptr = out.device_ptr(&gpu.stream).0;
    let (blocks, threads, iters) = (sms * 8, 256u32, 256i32);
    let flops = blocks as f64 * threads as f64 * iters as f64 * 16.0 * 8.0 * 2.0;
    let samples = time_runs_plain(gpu, cfg, Capture::Allowed, |stream| {
        let mut b = stream.launch_builder(&f);
        b.arg(&out_ptr).arg(&iters);
        // SAFETY: one pointer and one int, as the kernel takes.
        unsafe {
            b.launch(LaunchConfig {
                grid_dim: (blocks, 1, 1),
                block_dim: (threads, 1, 1),
                shared_mem_bytes: 0,
            })
        }
        .doing("launching the FMA kernel")?;
        Ok(())
    })?
    .samples_ms;
    Ok((samples, flops, sms))
}

/// The copy bounds over `bytes`, and with `fma` the FP32 multiply-add rate.
pub fn run_bounds(
    gpu: &Gpu,
    bytes: u64,
    cfg: &TimingConfig,
    fma: bool,
    host_link: bool,
) -> Result<BoundsOutcome, RunError> {
    let bytes = bytes.div_ceil(16) * 16;
    let src_data = HostData::init(ElemType::U32, (bytes / 4) as usize, Init::Random, 1);
    let src = gpu
        .stream
        .clone_htod(src_data.as_bytes())
        .doing("uploading the copy source")?;
    // SAFETY: fully written by the copies before it is read.
    let dst =
        unsafe { gpu.stream.alloc::<u8>(bytes as usize) }.doing("allocating the copy target")?;
    let (src_ptr, dst_ptr) = (src.device_ptr(&gpu.stream).0, dst.device_ptr(&gpu.stream).0);
    let memcpy_samples_ms = time_runs_plain(gpu, cfg, Capture::Allowed, |stream| {
        // SAFETY: both buffers hold `bytes` bytes. Raw pointers: a graph capture must not see
        // cudarc's cross-stream event tracking.
        unsafe {
            cudarc::driver::result::memcpy_dtod_async(
                dst_ptr,
                src_ptr,
                bytes as usize,
                stream.cu_stream(),
            )
        }
        .doing("device-to-device copy")
    })?
    .samples_ms;
    let f = compile_builtin(&gpu.ctx, &gpu.arch, COPY_KERNEL, "gpu_lab_copy")?;
    let sms = gpu
        .ctx
        .attribute(
            cudarc::driver::sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT,
        )
        .doing("reading the SM count")? as u64;
    let n4 = bytes / 16;
    let blocks = n4.div_ceil(256).min(sms * 32).max(1) as u32;
    let kernel_samples_ms = time_runs_plain(gpu, cfg, Capture::Allowed, |stream| {
        let mut b = stream.launch_builder(&f);
        b.arg(&src_ptr).arg(&dst_ptr).arg(&n4);
        // SAFETY: both buffers hold n4 float4s.
        unsafe {
            b.launch(LaunchConfig {
                grid_dim: (blocks, 1, 1),
                block_dim: (256, 1, 1),
                shared_mem_bytes: 0,
            })
        }
        .doing("launching the copy kernel")?;
        Ok(())
    })?
    .samples_ms;
    let fma = if fma {
        Some(run_fma(gpu, cfg, sms as u32)?)
    } else {
        None
    };
    let host = if host_link {
        Some(run_host_link(gpu, bytes, cfg)?)
    } else {
        None
    };
    Ok(BoundsOutcome {
        bytes,
        memcpy_samples_ms,
        kernel_samples_ms,
        fma,
        host,
    })
}

/// The host link's bounds at `bytes`: pinned copies each way, both ways at once on two streams,
/// and pageable copies each way (staged by the driver through its own pinned buffer).
fn run_host_link(gpu: &Gpu, bytes: u64, cfg: &TimingConfig) -> Result<HostLinkSamples, RunError> {
    use cudarc::driver::sys;
    let n = bytes as usize;
    let allocate = |memory, name| Allocation::new(gpu, memory, n, &[], name);
    let (mut pinned, mut pinned_back, mut pageable) = (
        allocate(Memory::Pinned, "host link: pinned")?,
        allocate(Memory::Pinned, "host link: pinned, second")?,
        allocate(Memory::Pageable, "host link: pageable")?,
    );
    // Pages touched before timing: a first-touch fault is not the link's speed.
    for host in [
        pinned.host_bytes(),
        pinned_back.host_bytes(),
        pageable.host_bytes(),
    ]
    .into_iter()
    .flatten()
    {
        host.fill(1);
    }
    let (device, device_back) = (
        allocate(Memory::Device, "host link: device")?,
        allocate(Memory::Device, "host link: device, second")?,
    );
    let at = |a: &Allocation| a.copy_address(gpu);
    let never = Capture::Never("copies over the host link are timed with events");
    let copy = |dst: u64, src: u64| {
        move |stream: &Arc<CudaStream>| -> Result<(), RunError> {
            // SAFETY: both are live allocations of `n` bytes; unified addressing tells the driver which side each is on.
            check(
                unsafe { sys::cuMemcpyAsync(dst, src, n, stream.cu_stream()) },
                || format!("copying {n} bytes over the host link"),
            )
        }
    };
    let h2d_pinned = time_runs_plain(gpu, cfg, never, copy(at(&device), at(&pinned)))?.samples_ms;
    let d2h_pinned =
        time_runs_plain(gpu, cfg, never, copy(at(&pinned_back), at(&device_back)))?.samples_ms;
    let h2d_pageable =
        time_runs_plain(gpu, cfg, never, copy(at(&device), at(&pageable)))?.samples_ms;
    let d2h_pageable =
        time_runs_plain(gpu, cfg, never, copy(at(&pageable), at(&device_back)))?.samples_ms;
    // Both ways at once: the second direction on a stream of its own that forks from and joins the timed one.
    let other = gpu.ctx.new_stream().doing("creating a second stream")?;
    let events = Events::new(2, false)?;
    let (fork, join) = (events.0[0], events.0[1]);
    let (up, down) = (
        copy(at(&device), at(&pinned)),
        copy(at(&pinned_back), at(&device_back)),
    );
    let both = time_runs_plain(gpu, cfg, never, |stream| {
        record(fork, stream.cu_stream())?;
        wait(other.cu_stream(), fork)?;
        up(stream)?;
        down(&other)?;
        record(join, other.cu_stream())?;
        wait(stream.cu_stream(), join)
    });
    Ok(HostLinkSamples {
        h2d_pinned,
        d2h_pinned,
        bidirectional_pinned: both?.samples_ms,
        h2d_pageable,
        d2h_pageable,
    })
}
