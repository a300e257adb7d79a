//! The CPU references: does a kernel's output match what its correctness spec says (pure: no GPU, no disk).
//!
//! One file per family of checks: `copy` (copies, transposes), `same` (against a reference
//! variant's output), `reduce` (sums, scans), `rearrange` (compaction, sort, histogram),
//! `elementwise` (adds, math functions), `rowwise` (softmax, layernorm, rmsnorm), `matmul` (GEMM, GEMV) with `matmul_model` (the default
//! tolerance of narrow-type products) and `matmul_kernels` (simulated GPU kernels it is tested on); `tally` is what they share.

mod copy;
mod elementwise;
mod matmul;
#[cfg(test)]
mod matmul_kernels;
mod matmul_model;
mod rearrange;
mod reduce;
mod rowwise;
mod same;
mod tally;

pub use copy::{check_copy, check_copy_mapped, check_transpose};
pub use elementwise::{MathFn, check_add, check_function};
pub use matmul::{MATMUL_SAMPLE, check_matmul};
pub use matmul_model::{MATMUL_CONTRACTS, MatmulTypes, rounded_adds};
pub use rearrange::{Keep, check_compact, check_histogram, check_sort};
pub use reduce::{check_scan, check_sum};
pub use rowwise::{RowOp, RowwiseCheck, check_rowwise};
pub use same::check_same;
