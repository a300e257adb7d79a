//! Kernel compilation, with NVRTC (through cudarc, C++ names lowered by name expressions) or the toolkit's nvcc (a cubin), cached on disk by hash of source (with its local headers), options, kernels, architecture and compiler version.
//!
//! One file per stage: `toolkit` finds the CUDA toolkit and the compilers' versions, `plan`
//! decides the command lines (pure), `cache` keys and keeps built modules, `nvrtc` and `nvcc` run
//! each compiler, and `compile` takes one build through all of them. `error` and `image` hold
//! what the stages share.

mod cache;
mod compile;
mod error;
mod image;
mod nvcc;
mod nvrtc;
mod plan;
mod toolkit;

pub use cache::cache_key;
pub use compile::compile;
pub use error::BuildError;
pub use image::{Compiled, Image};
pub use nvcc::{cubin_kernels, nvcc_steps, nvcc_wrapper};
pub use plan::{BuildPlan, caps_registers, nvcc_options, nvrtc_options};
pub use toolkit::{DEVICE_RUNTIME, Toolkit, nvcc_version, nvrtc_version, parse_nvcc_version};

#[cfg(test)]
mod test_programs;
