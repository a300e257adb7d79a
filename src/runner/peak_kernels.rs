//! gpu-lab's own peak kernels per math: CUDA C with inline-PTX `mma.sync` loops over independent accumulators, generated per math for NVRTC (pure: source text and operation counts).

use crate::records::Math;

/// How many independent accumulator sets each warp keeps: enough to cover the tensor pipe's
/// latency with back-to-back independent `mma.sync`s.
pub const CHAINS: u32 = 8;
/// Threads per block and blocks per SM of a peak launch (32 warps an SM).
pub const THREADS: u32 = 256;
pub const BLOCKS_PER_SM: u32 = 4;
/// Loop trips per launch: about 1–3 ms a launch on an H100 for every math.
pub const ITERS: i32 = 8192;
/// The kernel's name in every generated source.
pub const NAME: &str = "gpu_lab_peak";

/// One math's `mma.sync`: the PTX instruction and its fragments (registers per thread).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PeakMma {
    pub math: Math,
    pub instruction: &'static str,
    /// C and D: how many registers, their C type and inline-asm constraint.
    acc_regs: usize,
    acc_type: &'static str,
    acc_constraint: &'static str,
    a_regs: usize,
    b_regs: usize,
    /// `double` fragments for fp64, 32-bit registers of packed elements for the others.
    fp64: bool,
    /// Operations (multiply and add counted apart) of one warp's instruction: 2·M·N·K.
    pub ops: f64,
    /// The lowest compute capability that has the instruction (major·10 + minor).
    pub min_sm: u32,
}

/// The peak instruction of `math` (`None` for FP32, measured by the FMA kernel).
pub fn peak_mma(math: Math) -> Option<PeakMma> {
    let packed = |instruction, acc_regs, acc_type, acc_constraint, mnk: [f64; 3], min_sm| PeakMma {
        math,
        instruction,
        acc_regs,
        acc_type,
        acc_constraint,
        a_regs: 4,
        b_regs: 2,
        fp64: false,
        ops: 2.0 * mnk[0] * mnk[1] * mnk[2],
        min_sm,
    };
    Some(match math {
        Math::Fp32 => return None,
        Math::Fp64 => PeakMma {
            math,
            instruction: "mma.sync.aligned.m8n8k4.row.col.f64.f64.f64.f64",
            acc_regs: 2,
            acc_type: "double",
            acc_constraint: "+d",
            a_regs: 1,
            b_regs: 1,
            fp64: true,
            ops: 2.0 * 8.0 * 8.0 * 4.0,
            min_sm: 80,
        },
        Math::Tf32Tensor => packed(
            "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32",
            4,
            "float",
            "+f",
            [16.0, 8.0, 8.0],
            80,
        ),
        Math::F16Tensor => packed(
            "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32",
            4,
            "float",
            "+f",
            [16.0, 8.0, 16.0],
            80,
        ),
        Math::F16TensorF16Acc => packed(
            "mma.sync.aligned.m16n8k16.row.col.f16.f16.f16.f16",
            2,
            "unsigned",
            "+r",
            [16.0, 8.0, 16.0],
            80,
        ),
        Math::Bf16Tensor => packed(
            "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32",
            4,
            "float",
            "+f",
            [16.0, 8.0, 16.0],
            80,
        ),
        Math::E4m3Tensor => packed(
            "mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e4m3.f32",
            4,
            "float",
            "+f",
            [16.0, 8.0, 32.0],
            89,
        ),
        Math::E5m2Tensor => packed(
            "mma.sync.aligned.m16n8k32.row.col.f32.e5m2.e5m2.f32",
            4,
            "float",
            "+f",
            [16.0, 8.0, 32.0],
            89,
        ),
        Math::I8Tensor => packed(
            "mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32",
            4,
            "int",
            "+r",
            [16.0, 8.0, 32.0],
            80,
        ),
    })
}

impl PeakMma {
    /// The inline-asm statement of one `mma.sync` into accumulator set `j`: D and C are the same
    /// registers (`+` constraints), A and B follow.
    fn asm_statement(&self) -> String {
        let list = |from: usize, count: usize| {
            let regs: Vec<String> = (from..from + count).map(|i| format!("%{i}")).collect();
            format!("{{{}}}", regs.join(","))
        };
        let acc = list(0, self.acc_regs);
        let a = list(self.acc_regs, self.a_regs);
        let b = list(self.acc_regs + self.a_regs, self.b_regs);
        let outputs: Vec<String> = (0..self.acc_regs)
            .map(|r| format!("\"{}\"(d[j][{r}])", self.acc_constraint))
            .collect();
        let input = if self.fp64 { "d" } else { "r" };
        let inputs: Vec<String> = (0..self.a_regs)
            .map(|r| format!("\"{input}\"(a[{r}])"))
            .chain((0..self.b_regs).map(|r| format!("\"{input}\"(b[{r}])")))
            .collect();
        format!(
            "asm volatile(\"{} {acc}, {a}, {b}, {acc};\" : {} : {});",
            self.instruction,
            outputs.join(", "),
            inputs.join(", ")
        )
    }

    /// The kernel: `CHAINS` accumulator sets per thread, each updated once per trip by an
    /// independent `mma.sync` on fragments seeded from the thread index (so nothing folds); the
    /// sum is stored only if it equals -1, which keeps every chain live without a store per run.
    pub fn source(&self) -> String {
        let frag = if self.fp64 { "double" } else { "unsigned" };
        let seed = |salt: &str| {
            if self.fp64 {
                format!("1.0 + 1e-3 * (threadIdx.x + r + {salt})")
            } else {
                // 0x3c: 1.0 in f16 halves, 1.5 in e4m3 bytes; small integers in i8 bytes.
                format!("0x3c003c00u ^ ((threadIdx.x + r + {salt}) * 0x00010001u)")
            }
        };
        format!(
            r#"// gpu-lab peak kernel: {instruction}
extern "C" __global__ void {NAME}(float* out, int iters) {{
  {frag} a[{a_regs}], b[{b_regs}];
#pragma unroll
  for (int r = 0; r < {a_regs}; ++r) a[r] = {seed_a};
#pragma unroll
  for (int r = 0; r < {b_regs}; ++r) b[r] = {seed_b};
  {acc} d[{CHAINS}][{acc_regs}];
#pragma unroll
  for (int j = 0; j < {CHAINS}; ++j)
#pragma unroll
    for (int r = 0; r < {acc_regs}; ++r) d[j][r] = 0;
  for (int i = 0; i < iters; ++i) {{
#pragma unroll
    for (int j = 0; j < {CHAINS}; ++j) {{
      {statement}
    }}
  }}
  {acc} s = 0;
#pragma unroll
  for (int j = 0; j < {CHAINS}; ++j)
#pragma unroll
    for (int r = 0; r < {acc_regs}; ++r) s += d[j][r];
  if (s == ({acc})-1) out[0] = (float)s;
}}
"#,
            instruction = self.instruction,
            a_regs = self.a_regs,
            b_regs = self.b_regs,
            acc_regs = self.acc_regs,
            acc = self.acc_type,
            seed_a = seed("1"),
            seed_b = seed("7"),
            statement = self.asm_statement(),
        )
    }

    /// Operations of one launch on `sms` SMs.
    pub fn ops_per_launch(&self, sms: u32) -> f64 {
        let warps = (sms * BLOCKS_PER_SM * THREADS / 32) as f64;
        warps * ITERS as f64 * CHAINS as f64 * self.ops
    }

    /// What the roof record says ran.
    pub fn what(&self, sms: u32) -> String {
        format!(
            "gpu-lab peak kernel: {} ({CHAINS} independent accumulators a warp, {} blocks of {THREADS} threads, {ITERS} trips)",
            self.instruction,
            sms * BLOCKS_PER_SM
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_math_but_fp32_has_a_peak_instruction_with_its_flops() {
        for math in Math::ALL {
            let Some(p) = peak_mma(math) else {
                assert_eq!(math, Math::Fp32);
                continue;
            };
            assert_eq!(p.math, math);
            assert!(
                p.instruction.starts_with("mma.sync.aligned."),
                "{}",
                p.instruction
            );
        }
        assert_eq!(peak_mma(Math::Bf16Tensor).unwrap().ops, 4096.0);
        assert_eq!(peak_mma(Math::Tf32Tensor).unwrap().ops, 2048.0);
        assert_eq!(peak_mma(Math::I8Tensor).unwrap().ops, 8192.0);
        assert_eq!(peak_mma(Math::Fp64).unwrap().ops, 512.0);
        assert_eq!(peak_mma(Math::E4m3Tensor).unwrap().min_sm, 89);
        // 132 SMs (H100 SXM): 4224 warps × 8192 trips × 8 chains × 4096 flops.
        let ops = peak_mma(Math::F16Tensor).unwrap().ops_per_launch(132);
        assert_eq!(ops, 4224.0 * 8192.0 * 8.0 * 4096.0);
    }

    #[test]
    fn the_asm_operands_match_each_instructions_fragments() {
        let f16 = peak_mma(Math::F16Tensor).unwrap().asm_statement();
        assert!(
            f16.contains("{%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"),
            "{f16}"
        );
        assert_eq!(f16.matches("\"+f\"").count(), 4);
        assert_eq!(f16.matches("\"r\"").count(), 6);
        let acc16 = peak_mma(Math::F16TensorF16Acc).unwrap().asm_statement();
        assert!(
            acc16.contains("{%0,%1}, {%2,%3,%4,%5}, {%6,%7}, {%0,%1};"),
            "{acc16}"
        );
        let fp64 = peak_mma(Math::Fp64).unwrap().asm_statement();
        assert!(fp64.contains("{%0,%1}, {%2}, {%3}, {%0,%1};"), "{fp64}");
        assert_eq!(fp64.matches("\"d\"").count(), 2);
        assert_eq!(fp64.matches("\"+d\"").count(), 2);
    }

    #[test]
    fn the_source_is_one_kernel_with_balanced_braces() {
        for math in Math::ALL {
            let Some(p) = peak_mma(math) else { continue };
            let src = p.source();
            assert!(src.contains(&format!(
                "extern \"C\" __global__ void {NAME}(float* out, int iters)"
            )));
            assert_eq!(src.matches('{').count(), src.matches('}').count(), "{src}");
            assert!(src.contains(p.instruction));
            assert!(!src.contains("{{"), "unescaped format braces: {src}");
        }
        assert!(
            peak_mma(Math::I8Tensor)
                .unwrap()
                .source()
                .contains("int d[8][4];")
        );
        assert!(
            peak_mma(Math::Fp64)
                .unwrap()
                .source()
                .contains("double a[1], b[1];")
        );
    }
}
