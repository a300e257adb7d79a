//! Suites: find `kernels/<suite>/suite.toml` manifests, validate them, and expand sweeps into jobs.
//!
//! Rooms, in the order a manifest goes through them:
//! - `load`: find and read the manifest, then drive the rest; `files`: the sources, include
//!   directories and headers it names (confined, read, hashed); `options`: compiler options;
//!   `option_grammar`: which options, define names and characters a manifest may pass on.
//! - `validate`: the manifest's shape before anything is evaluated (`steps::shape` for host programs).
//! - `expand`: the sweep (`sweep`) walked into jobs: `buffers`, `check` (built-in ops or
//!   `same_as`), `program` (what a variant compiles and runs), `launch` (one launch, checked
//!   then evaluated; `args` reads its text forms), `steps` (host programs).
//! - `location`: where in the manifest an error is; `manifest` and `job`: the types in and out.

pub mod job;
pub mod manifest;
pub mod names;
pub mod option_grammar;
pub mod sources;
pub mod tensor_map;

mod args;
mod buffers;
mod check;
mod device_grid;
mod expand;
mod files;
mod launch;
mod load;
mod location;
mod options;
mod program;
mod steps;
mod sweep;
mod validate;

pub use crate::records::BoundSpec;
pub use crate::verify::{CopyMap, CorrectnessSpec, ElemType, Init, MatmulShape, RowwiseSpec};
pub use check::CheckOp;
pub use device_grid::{NOMINAL_SMS, SMS, SmsGridError, any_sms_grid, bind_sms};
pub use files::MAX_FILE_BYTES;
pub use job::*;
pub use load::{MAX_MANIFEST_BYTES, Suite, discover, load, load_named};
pub use location::SuiteError;
pub use manifest::*;
pub use options::is_rdc_option;
pub use program::MAX_PENDING_LAUNCHES;
pub use sweep::MAX_JOBS;
pub use validate::source_declares_kernel;
