//! The built-in kernels' compile: CUDA C source held in the binary, compiled with NVRTC and loaded at first use.

use std::sync::Arc;

use cudarc::driver::{CudaContext, CudaFunction};

use super::error::{Doing, RunError};

/// Compiles one of the built-in kernels (the L2 eviction, the copy and FMA bounds) with NVRTC
/// for the GPU's architecture and loads it.
pub(super) fn compile_builtin(
    ctx: &Arc<CudaContext>,
    arch: &str,
    source: &str,
    name: &str,
) -> Result<CudaFunction, RunError> {
    let ptx = cudarc::nvrtc::compile_ptx_with_opts(
        source,
        cudarc::nvrtc::CompileOptions {
            options: vec![format!("--gpu-architecture={}", arch)],
            ..Default::default()
        },
    )
    .map_err(|e| RunError::Invalid(format!("built-in kernel {name}: {e:?}")))?;
    let module = ctx
        .load_module(ptx)
        .doing(format!("loading the built-in kernel {name}"))?;
    module
        .load_function(name)
        .doing(format!("finding the built-in kernel {name}"))
}
