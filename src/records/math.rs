//! The math a job's `flops` run on (FP32 SIMT, FP64, or a tensor-core input type and accumulator), each with its own roof (pure).

use serde::{Deserialize, Serialize};

use crate::verify::ElemType;

/// Which units do a job's declared operations: the roof "% of peak", the impossible-result gate
/// and the roofline judge it against. A job that declares nothing is `Fp32`.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, Default,
)]
pub enum Math {
    /// FP32 multiply-adds on the SIMT lanes (CUDA cores): the seeds' world.
    #[default]
    #[serde(rename = "fp32")]
    Fp32,
    /// FP64: DMMA tensor cores and FP64 lanes (cuBLAS DGEMM uses both on Hopper).
    #[serde(rename = "fp64")]
    Fp64,
    /// f32 inputs rounded to TF32 on the tensor cores, f32 accumulate.
    #[serde(rename = "tf32-tensor")]
    Tf32Tensor,
    /// f16 inputs on the tensor cores, f32 accumulate.
    #[serde(rename = "f16-tensor")]
    F16Tensor,
    /// f16 inputs on the tensor cores, f16 accumulate.
    #[serde(rename = "f16-tensor-f16acc")]
    F16TensorF16Acc,
    /// bf16 inputs on the tensor cores, f32 accumulate.
    #[serde(rename = "bf16-tensor")]
    Bf16Tensor,
    /// FP8 E4M3 inputs on the tensor cores (Hopper and later), f32 accumulate.
    #[serde(rename = "e4m3-tensor")]
    E4m3Tensor,
    /// FP8 E5M2 inputs on the tensor cores, f32 accumulate.
    #[serde(rename = "e5m2-tensor")]
    E5m2Tensor,
    /// i8 inputs on the tensor cores, i32 accumulate (operations, not floating-point ones).
    #[serde(rename = "i8-tensor")]
    I8Tensor,
}

impl Math {
    pub const ALL: [Math; 9] = [
        Math::Fp32,
        Math::Fp64,
        Math::Tf32Tensor,
        Math::F16Tensor,
        Math::F16TensorF16Acc,
        Math::Bf16Tensor,
        Math::E4m3Tensor,
        Math::E5m2Tensor,
        Math::I8Tensor,
    ];

    /// The name a manifest writes (`math = "bf16-tensor"`) and records store.
    pub fn name(self) -> &'static str {
        match self {
            Math::Fp32 => "fp32",
            Math::Fp64 => "fp64",
            Math::Tf32Tensor => "tf32-tensor",
            Math::F16Tensor => "f16-tensor",
            Math::F16TensorF16Acc => "f16-tensor-f16acc",
            Math::Bf16Tensor => "bf16-tensor",
            Math::E4m3Tensor => "e4m3-tensor",
            Math::E5m2Tensor => "e5m2-tensor",
            Math::I8Tensor => "i8-tensor",
        }
    }

    /// `name` back to the math, or an error that lists every name.
    pub fn parse(text: &str) -> Result<Math, String> {
        Math::ALL
            .into_iter()
            .find(|m| m.name() == text.trim())
            .ok_or_else(|| {
                format!(
                    "unknown math `{text}`: expected one of {}",
                    Math::ALL.map(|m| format!("`{}`", m.name())).join(", ")
                )
            })
    }

    /// What reports call its roof: `FP32 SIMT`, `BF16 tensor (f32 accumulate)`.
    pub fn title(self) -> &'static str {
        match self {
            Math::Fp32 => "FP32 SIMT",
            Math::Fp64 => "FP64",
            Math::Tf32Tensor => "TF32 tensor (f32 accumulate)",
            Math::F16Tensor => "FP16 tensor (f32 accumulate)",
            Math::F16TensorF16Acc => "FP16 tensor (f16 accumulate)",
            Math::Bf16Tensor => "BF16 tensor (f32 accumulate)",
            Math::E4m3Tensor => "FP8 E4M3 tensor (f32 accumulate)",
            Math::E5m2Tensor => "FP8 E5M2 tensor (f32 accumulate)",
            Math::I8Tensor => "INT8 tensor (i32 accumulate)",
        }
    }

    /// Runs on the tensor cores (its counters show tensor-pipe work).
    pub fn is_tensor(self) -> bool {
        !matches!(self, Math::Fp32 | Math::Fp64)
    }

    /// Integer operations (OP/s), not floating-point ones (FLOP/s).
    pub fn is_integer(self) -> bool {
        self == Math::I8Tensor
    }

    /// The GEMM contract its roof is measured with: the input type, the output type and the
    /// accumulator type.
    pub fn gemm_types(self) -> (ElemType, ElemType, ElemType) {
        use ElemType::*;
        match self {
            Math::Fp32 | Math::Tf32Tensor => (F32, F32, F32),
            Math::Fp64 => (F64, F64, F64),
            Math::F16Tensor => (F16, F16, F32),
            Math::F16TensorF16Acc => (F16, F16, F16),
            Math::Bf16Tensor => (Bf16, Bf16, F32),
            // cuBLASLt's FP8 GEMMs write bf16 or f16 (or fp8 with a scale); bf16 here.
            Math::E4m3Tensor => (E4m3, Bf16, F32),
            Math::E5m2Tensor => (E5m2, Bf16, F32),
            Math::I8Tensor => (I8, I32, I32),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_math_parses_back_from_its_name_and_stores_under_it() {
        for m in Math::ALL {
            assert_eq!(Math::parse(m.name()), Ok(m));
            assert_eq!(
                serde_json::to_string(&m).unwrap(),
                format!("\"{}\"", m.name())
            );
        }
        let err = Math::parse("fp16").unwrap_err();
        assert!(
            err.contains("`fp16`") && err.contains("`f16-tensor`"),
            "{err}"
        );
    }

    #[test]
    fn only_the_simt_and_fp64_maths_are_off_the_tensor_cores() {
        let simt: Vec<Math> = Math::ALL.into_iter().filter(|m| !m.is_tensor()).collect();
        assert_eq!(simt, [Math::Fp32, Math::Fp64]);
        assert!(Math::I8Tensor.is_integer() && !Math::Bf16Tensor.is_integer());
        assert_eq!(Math::default(), Math::Fp32);
    }
}
