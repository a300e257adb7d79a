//! The GEMM contracts a vendor bound can measure (input types, output type, accumulator, TF32), which library runs each, and the refusal that lists them (pure).

use crate::verify::{ElemType, MatmulShape};

/// The accumulator a GEMM contract asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Accumulate {
    F32,
    F64,
    /// f16 inputs accumulated in f16 (`f16-tensor-f16acc`): cuBLASLt's `CUBLAS_COMPUTE_16F`.
    F16,
    I32,
}

/// One GEMM contract: `out = alpha * op(a) * op(b) + beta * out` with these element types.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GemmTypes {
    pub a: ElemType,
    pub b: ElemType,
    pub out: ElemType,
    pub accumulate: Accumulate,
    /// f32 inputs rounded to TF32 on the tensor cores (opt-in: `bound = "cublas-tf32"`).
    pub tf32: bool,
}

/// The contracts a `cublas` bound measures, as a manifest's reader sees them.
pub const SUPPORTED: &str = "f32·f32→f32 and f64·f64→f64 (cuBLAS SGEMM/DGEMM; f32 with TF32 via bound = \"cublas-tf32\"), \
f16·f16→f32 or f16 and bf16·bf16→f32 or bf16 (cuBLASLt, f32 accumulate; f16 accumulate with math = \"f16-tensor-f16acc\"), \
e4m3 or e5m2 inputs (not both e5m2) → f32, bf16 or f16 (cuBLASLt FP8, Hopper or Ada), and i8·i8→i32 (cuBLASLt)";

impl GemmTypes {
    /// The contract of inputs `a`, `b` and output `out`, with f16 accumulation where asked, or
    /// why cuBLAS and cuBLASLt have no such GEMM (naming the ones they have).
    pub fn new(
        a: ElemType,
        b: ElemType,
        out: ElemType,
        f16_accumulate: bool,
        tf32: bool,
    ) -> Result<GemmTypes, String> {
        use ElemType::*;
        let fp8 = |t: ElemType| matches!(t, E4m3 | E5m2);
        let accumulate = match (a, b, out) {
            (F32, F32, F32) => Accumulate::F32,
            (F64, F64, F64) => Accumulate::F64,
            (F16, F16, F16) if f16_accumulate => Accumulate::F16,
            (F16, F16, F32 | F16) | (Bf16, Bf16, F32 | Bf16) => Accumulate::F32,
            (E5m2, E5m2, _) => {
                return Err("cuBLASLt has no FP8 GEMM of two e5m2 inputs (e5m2 is meant for gradients, paired with e4m3)".into());
            }
            (x, y, F32 | Bf16 | F16) if fp8(x) && fp8(y) => Accumulate::F32,
            (I8, I8, I32) => Accumulate::I32,
            _ => {
                return Err(format!(
                    "no cuBLAS or cuBLASLt GEMM takes {}·{}→{}",
                    a.name(),
                    b.name(),
                    out.name()
                ));
            }
        };
        if f16_accumulate && accumulate != Accumulate::F16 {
            return Err(format!(
                "f16 accumulation (math = \"f16-tensor-f16acc\") needs f16 inputs and an f16 output; this product is {}·{}→{}",
                a.name(),
                b.name(),
                out.name()
            ));
        }
        if tf32 && (a, b, out) != (F32, F32, F32) {
            return Err(format!(
                "TF32 (bound = \"cublas-tf32\") rounds f32 inputs; this product is {}·{}→{}",
                a.name(),
                b.name(),
                out.name()
            ));
        }
        Ok(GemmTypes {
            a,
            b,
            out,
            accumulate,
            tf32,
        })
    }

    /// cuBLAS SGEMM or DGEMM as before cuBLASLt bounds existed (their stored keys stay as they were).
    pub fn is_classic(&self) -> bool {
        !self.tf32
            && self.a == self.out
            && self.b == self.out
            && matches!(self.out, ElemType::F32 | ElemType::F64)
    }

    /// FP8 or i8 inputs: cuBLASLt on Hopper runs these only with A transposed and B not (column
    /// major "TN"), i.e. both operands K-contiguous.
    pub fn needs_tn(&self) -> bool {
        matches!(self.a, ElemType::E4m3 | ElemType::E5m2 | ElemType::I8)
    }

    /// `bf16·bf16→f32`, with the accumulator or TF32 where they are not the default.
    pub fn label(&self) -> String {
        let mut s = format!("{}·{}→{}", self.a.name(), self.b.name(), self.out.name());
        if self.accumulate == Accumulate::F16 {
            s.push_str(", f16 accumulate");
        }
        if self.tf32 {
            s.push_str(", TF32");
        }
        s
    }
}

/// The row-major shape a TN-only contract runs at: both operands K-contiguous (`trans_a` false,
/// `trans_b` true in gpu-lab's row-major terms), and whether that differs from the check's.
pub fn tn_shape(shape: &MatmulShape) -> (MatmulShape, bool) {
    let tn = MatmulShape {
        trans_a: false,
        trans_b: true,
        ..*shape
    };
    (tn, tn != *shape)
}

#[cfg(test)]
mod tests {
    use super::*;
    use ElemType::*;

    #[test]
    fn the_common_tensor_core_contracts_are_accepted_and_labelled() {
        let t = |a, b, o| GemmTypes::new(a, b, o, false, false).unwrap();
        assert_eq!(t(Bf16, Bf16, F32).label(), "bf16·bf16→f32");
        assert_eq!(t(F16, F16, F16).accumulate, Accumulate::F32);
        assert_eq!(
            GemmTypes::new(F16, F16, F16, true, false).unwrap().label(),
            "f16·f16→f16, f16 accumulate"
        );
        assert_eq!(t(E4m3, E5m2, Bf16).accumulate, Accumulate::F32);
        assert!(t(E4m3, E4m3, F32).needs_tn() && t(I8, I8, I32).needs_tn());
        assert!(!t(F16, F16, F32).needs_tn());
        assert!(t(F32, F32, F32).is_classic() && t(F64, F64, F64).is_classic());
        let tf32 = GemmTypes::new(F32, F32, F32, false, true).unwrap();
        assert!(!tf32.is_classic());
        assert_eq!(tf32.label(), "f32·f32→f32, TF32");
    }

    #[test]
    fn contracts_without_a_library_gemm_are_refused_with_a_reason() {
        let err = |a, b, o, acc, tf32| GemmTypes::new(a, b, o, acc, tf32).unwrap_err();
        assert!(err(E5m2, E5m2, Bf16, false, false).contains("two e5m2"));
        assert!(err(F16, Bf16, F32, false, false).contains("f16·bf16→f32"));
        assert!(err(I8, I8, F32, false, false).contains("i8·i8→f32"));
        assert!(err(F16, F16, F32, true, false).contains("f16 output"));
        assert!(err(Bf16, Bf16, F32, false, true).contains("TF32"));
        assert!(SUPPORTED.contains("i8·i8→i32"));
    }

    #[test]
    fn a_tn_shape_makes_both_operands_k_contiguous() {
        let shape = MatmulShape {
            m: 64,
            n: 32,
            k: 128,
            alpha: 1.0,
            beta: 0.0,
            trans_a: false,
            trans_b: false,
        };
        let (tn, changed) = tn_shape(&shape);
        assert!(changed && !tn.trans_a && tn.trans_b && tn.k == 128);
        assert!(!tn_shape(&tn).1);
    }
}
