//! One job on one GPU, run inside the child process: build, allocate, initialise, check against the reference, time with CUDA events.
//!
//! By stage: `device` opens the GPU; `loading` (with `device_link`) compiles and loads a variant;
//! `buffers` and `memory` hold its data (`host_cache` keeps drawn inputs and host buffers for the next job a child serves) (`tensor_maps` encodes the views of it TMA kernels take); `launching` and `program` issue its launches or its
//! host program; `checking` compares its output (`timed_checks`: the checks made between samples and the verified timed runs after them); `timing` (with `graph_timing`, `sampling`,
//! `l2_flush` and the pure `timing_rules`) times it, `activity` collecting CUPTI's kernel records around the samples; `job` and `profile_pass` put those together;
//! `bounds` and `cublas` measure what a variant is compared with.

mod activity;
mod bounds;
mod buffers;
mod builtin;
mod checking;
mod cublas;
mod cublaslt;
mod cupti_pass;
mod device;
mod device_link;
mod energy;
mod energy_rules;
mod error;
mod events;
mod graph_timing;
mod host_cache;
mod job;
mod l2_flush;
mod launch_occupancy;
mod launching;
mod loading;
mod memory;
mod output_echo;
mod peak_kernels;
mod prebuild;
mod profile_pass;
mod program;
mod roofs;
mod sampling;
mod tensor_maps;
mod timed_checks;
mod timing;
mod timing_rules;

pub use bounds::run_bounds;
pub use cublas::run_cublas;
pub use cublaslt::run_gemm_bound;
pub use cupti_pass::run_cupti_pass;
pub use device::Gpu;
pub use error::RunError;
pub use job::run_job;
pub use prebuild::prebuild;
pub use profile_pass::run_profile_pass;
pub use roofs::{ROOF_GEMM_SIZE, run_roofs};
pub use timing_rules::{Capture, GRAPH_BELOW_MS, Timed};
