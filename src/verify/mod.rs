//! Correctness: what a variant's output must be (the spec), the buffer contents it starts from, the CPU references, and what a verification found (pure).
//!
//! "Correct" is the word of this module; "check" is the regression gate (`gpu-lab check`). The
//! manifest key and the record field keep their stored name, `check`, so older runs still read.
//!
//! `spec` (what a correct output is), `elem` (element types, how buffers start), `shape` (copy
//! maps, matrix shapes), `data` (buffer contents), `reference` (the CPU references, by family)
//! and `correctness` (what a verification found).

mod correctness;
pub mod data;
mod elem;
pub mod reference;
mod shape;
mod spec;

pub use correctness::Correctness;
pub use data::HostData;
pub use elem::{ElemType, Init};
pub use reference::{
    Keep, MathFn, MatmulTypes, RowOp, RowwiseCheck, check_add, check_compact, check_copy,
    check_copy_mapped, check_function, check_histogram, check_matmul, check_rowwise, check_same,
    check_scan, check_sort, check_sum, check_transpose,
};
pub use shape::{CopyMap, MatmulShape};
pub use spec::{CorrectnessSpec, RowwiseSpec};
