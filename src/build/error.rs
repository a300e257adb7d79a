//! What can stop a kernel build: an unreadable source, a compiler's error log, a kernel the source lacks, or a missing part of the CUDA toolkit (each with its fix).

use std::path::PathBuf;

#[derive(Debug, thiserror::Error)]
pub enum BuildError {
    #[error("cannot read kernel source {path}: {source}")]
    Source {
        path: PathBuf,
        source: crate::store::ReadError,
    },
    #[error("{compiler} could not compile {path} with options [{options}]:\n{log}")]
    Compile {
        compiler: &'static str,
        path: PathBuf,
        options: String,
        log: String,
    },
    #[error("{path} has no kernel `{kernel}`{}\n  fix: name one of the source's __global__ functions, with its template arguments (`name<64, float>`) and namespace (`ns::name`)", if .declared.is_empty() { " (it declares no __global__ function)".to_string() } else { format!("; the __global__ functions it declares: {}", .declared.join(", ")) })]
    UnknownKernel {
        path: PathBuf,
        kernel: String,
        declared: Vec<String>,
    },
    #[error(
        "NVRTC is not available: {0}\n  fix: install the CUDA toolkit's libnvrtc and put its directory on LD_LIBRARY_PATH"
    )]
    Unavailable(String),
    #[error(
        "variant `{variant}` ({path}) is to be built with nvcc (compiler = \"nvcc\"), and no nvcc was found (looked in $CUDA_HOME/bin, $CUDA_PATH/bin, PATH and /usr/local/cuda/bin)\n  fix: install the CUDA toolkit and put its bin/ on PATH (or set CUDA_HOME), or build the variant with compiler = \"nvrtc\""
    )]
    NoNvcc { variant: String, path: PathBuf },
    #[error("variant `{variant}` ({path}) is built with rdc = true (relocatable device code: kernels that launch kernels), which must be linked with the CUDA device runtime, libcudadevrt.a, and it was not found{}\n  fix: install the CUDA toolkit's libraries (libcudadevrt.a ships with the toolkit, in lib64/ or targets/<platform>/lib/) and set CUDA_HOME to the toolkit's directory", if .searched.is_empty() { " (no CUDA toolkit was found: looked for $CUDA_HOME, $CUDA_PATH, the nvcc on PATH and /usr/local/cuda)".to_string() } else { format!(" (looked for {})", .searched.iter().map(|p| p.display().to_string()).collect::<Vec<_>>().join(", ")) })]
    NoDeviceRuntime {
        variant: String,
        path: PathBuf,
        searched: Vec<PathBuf>,
    },
    #[error(
        "variant `{variant}` ({path}) is built with arch = \"specific\" (the GPU's arch-specific target, sm_90a on compute capability 9.0: wgmma, setmaxnreg), and this GPU ({arch}) has none: {reason}\n  fix: run it on a GPU of compute capability 9.0 or newer (H100, H200), or remove arch = \"specific\" and the sm_90a-only instructions"
    )]
    NoArchSpecificTarget {
        variant: String,
        path: PathBuf,
        arch: String,
        reason: String,
    },
    #[error("cannot run nvcc for {path}: {error}")]
    Nvcc { path: PathBuf, error: String },
}
