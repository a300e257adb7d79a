//! The layouts a check reads its buffers by: a copy's offsets and stride, a matrix product's shape.

use serde::{Deserialize, Serialize};

/// Where a copy reads and writes: `out[output_offset + i] == input[input_offset + i * input_stride]`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct CopyMap {
    pub input_offset: usize,
    pub input_stride: usize,
    pub output_offset: usize,
}

impl CopyMap {
    pub const IDENTITY: CopyMap = CopyMap {
        input_offset: 0,
        input_stride: 1,
        output_offset: 0,
    };
}

/// A matrix product `C = alpha * op(A) * op(B) + beta * C`, row-major: op(A) is m x k, op(B) k x n,
/// C m x n; A is stored k x m when `trans_a`, B n x k when `trans_b`. n = 1 is a matrix-vector product.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq)]
pub struct MatmulShape {
    pub m: u64,
    pub n: u64,
    pub k: u64,
    pub alpha: f64,
    pub beta: f64,
    pub trans_a: bool,
    pub trans_b: bool,
}

impl MatmulShape {
    /// Multiply-adds counted twice: the flops of the product.
    pub fn flops(&self) -> f64 {
        2.0 * self.m as f64 * self.n as f64 * self.k as f64
    }

    /// Row-major index of op(A)[i][p] in A's storage, and of op(B)[p][j] in B's.
    pub fn a_index(&self, i: u64, p: u64) -> u64 {
        if self.trans_a {
            p * self.m + i
        } else {
            i * self.k + p
        }
    }
    pub fn b_index(&self, p: u64, j: u64) -> u64 {
        if self.trans_b {
            j * self.k + p
        } else {
            p * self.n + j
        }
    }

    /// A short name: `4096x4096x4096` (and `, A^T`, `, B^T`).
    pub fn label(&self) -> String {
        format!(
            "{}x{}x{}{}{}",
            self.m,
            self.n,
            self.k,
            if self.trans_a { ", A^T" } else { "" },
            if self.trans_b { ", B^T" } else { "" }
        )
    }
}
