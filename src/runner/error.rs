//! What can go wrong on the GPU side of a job (`RunError`), and `Doing`, which says what was being done when a driver call failed.

use crate::build;

#[derive(Debug, thiserror::Error)]
pub enum RunError {
    #[error("CUDA driver error while {doing}: {source}")]
    Driver {
        doing: String,
        source: cudarc::driver::DriverError,
    },
    #[error(transparent)]
    Build(#[from] build::BuildError),
    #[error(
        "no CUDA driver: libcuda was not found\n  fix: run on a machine with an NVIDIA GPU and its driver installed (see `gpu-lab doctor`)"
    )]
    NoDriver,
    #[error("{0}")]
    Invalid(String),
    #[error(
        "{0}\n  fix: make the variant's `args` match the kernel's parameters in number, order and type (buffers are pointers: 8 bytes; scalars `i32: N` 4, `i64: N` 8, `f16: x` 2, …)"
    )]
    Signature(String),
}

pub(super) trait Doing<T> {
    fn doing(self, what: impl Into<String>) -> Result<T, RunError>;
}

impl<T> Doing<T> for Result<T, cudarc::driver::DriverError> {
    fn doing(self, what: impl Into<String>) -> Result<T, RunError> {
        self.map_err(|source| RunError::Driver {
            doing: what.into(),
            source,
        })
    }
}
