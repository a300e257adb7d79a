//! Element types of a buffer (their sizes, epsilons and names) and how a buffer starts.

use serde::{Deserialize, Serialize};

/// Element type of a buffer.
#[derive(Debug, Clone, Copy, Deserialize, Serialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum ElemType {
    /// IEEE half (`__half`): 10 mantissa bits.
    #[serde(alias = "half")]
    F16,
    /// bfloat16 (`__nv_bfloat16`): float32's exponent, 7 mantissa bits.
    #[serde(alias = "bfloat16")]
    Bf16,
    F32,
    F64,
    /// FP8 E4M3 (`__nv_fp8_e4m3`): 4 exponent bits, 3 mantissa bits, no infinity, largest 448.
    #[serde(alias = "fp8_e4m3")]
    E4m3,
    /// FP8 E5M2 (`__nv_fp8_e5m2`): 5 exponent bits, 2 mantissa bits, largest 57344.
    #[serde(alias = "fp8_e5m2")]
    E5m2,
    I8,
    U8,
    I16,
    U16,
    I32,
    U32,
    I64,
    U64,
}

impl ElemType {
    pub fn size(self) -> usize {
        match self {
            ElemType::I8 | ElemType::U8 | ElemType::E4m3 | ElemType::E5m2 => 1,
            ElemType::F16 | ElemType::Bf16 | ElemType::I16 | ElemType::U16 => 2,
            ElemType::F32 | ElemType::I32 | ElemType::U32 => 4,
            ElemType::F64 | ElemType::I64 | ElemType::U64 => 8,
        }
    }
    pub fn is_float(self) -> bool {
        matches!(
            self,
            ElemType::F16
                | ElemType::Bf16
                | ElemType::F32
                | ElemType::F64
                | ElemType::E4m3
                | ElemType::E5m2
        )
    }
    pub fn is_signed(self) -> bool {
        matches!(
            self,
            ElemType::I8 | ElemType::I16 | ElemType::I32 | ElemType::I64
        )
    }
    /// The gap between 1 and the next value of the type (0 for integers, which compare exactly).
    pub fn epsilon(self) -> f64 {
        match self {
            ElemType::F16 => 2f64.powi(-10),
            ElemType::Bf16 => 2f64.powi(-7),
            ElemType::F32 => f32::EPSILON as f64,
            ElemType::F64 => f64::EPSILON,
            ElemType::E4m3 => 2f64.powi(-3),
            ElemType::E5m2 => 2f64.powi(-2),
            _ => 0.0,
        }
    }
    /// A float type's unit roundoff: the largest relative error of rounding to nearest (half
    /// its epsilon; 0 for integers).
    pub fn unit_roundoff(self) -> f64 {
        self.epsilon() / 2.0
    }
    /// The largest finite value (where a saturating conversion stops: 448 for e4m3, 57344 for
    /// e5m2, 65504 for f16); integers' largest value.
    pub fn max_finite(self) -> f64 {
        match self {
            ElemType::F16 => 65504.0,
            ElemType::Bf16 => 3.389_531_389_251_535_5e38,
            ElemType::F32 => f32::MAX as f64,
            ElemType::F64 => f64::MAX,
            ElemType::E4m3 => 448.0,
            ElemType::E5m2 => 57344.0,
            ElemType::I8 => i8::MAX as f64,
            ElemType::U8 => u8::MAX as f64,
            ElemType::I16 => i16::MAX as f64,
            ElemType::U16 => u16::MAX as f64,
            ElemType::I32 => i32::MAX as f64,
            ElemType::U32 => u32::MAX as f64,
            ElemType::I64 => i64::MAX as f64,
            ElemType::U64 => u64::MAX as f64,
        }
    }
    /// A float type's mantissa bits and smallest normal exponent (`None` for integers): one ulp
    /// at x is 2^(max(floor(log2 |x|), min_exp) - mantissa).
    pub fn float_format(self) -> Option<(i32, i32)> {
        match self {
            ElemType::F16 => Some((10, -14)),
            ElemType::Bf16 => Some((7, -126)),
            ElemType::F32 => Some((23, -126)),
            ElemType::F64 => Some((52, -1022)),
            ElemType::E4m3 => Some((3, -6)),
            ElemType::E5m2 => Some((2, -14)),
            _ => None,
        }
    }
    /// The name a manifest uses (`f16`, `bf16`, `i8`, …).
    pub fn name(self) -> &'static str {
        match self {
            ElemType::F16 => "f16",
            ElemType::Bf16 => "bf16",
            ElemType::F32 => "f32",
            ElemType::F64 => "f64",
            ElemType::E4m3 => "e4m3",
            ElemType::E5m2 => "e5m2",
            ElemType::I8 => "i8",
            ElemType::U8 => "u8",
            ElemType::I16 => "i16",
            ElemType::U16 => "u16",
            ElemType::I32 => "i32",
            ElemType::U32 => "u32",
            ElemType::I64 => "i64",
            ElemType::U64 => "u64",
        }
    }
}

/// How a buffer starts.
#[derive(Debug, Clone, Copy, Deserialize, Serialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum Init {
    /// Seeded uniform random values (floats in [-1, 1), signed integers in [-1000, 1000), unsigned in [0, 2000)).
    Random,
    /// Seeded random whole numbers in [-1000, 1000) ([0, 2000) unsigned), floats included: float
    /// sums of them are exact (below 2^24), so a float reduction can be checked bit for bit.
    #[serde(rename = "random_int")]
    RandomInt,
    /// Every byte 0xFF: NaN for floats, -1 for signed integers; shows elements a kernel never wrote.
    Poison,
    Zero,
    /// 0, 1, 2, … (handy for index debugging; never for timing).
    Iota,
}
