//! A job's record in `results.jsonl`: which job, its status, samples and verification, the work it
//! declares and what its throughput is compared with (stored format).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::energy::EnergyRecord;
use super::environment::Snapshot;
use super::gemm::GemmTypes;
use super::outcome::{ExcludedSample, LaunchOccupancy};
use super::timeline::Timeline;
use crate::stats::Summary;
use crate::verify::{Correctness, ElemType, MatmulShape};

#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq, Default)]
#[serde(rename_all = "snake_case")]
pub enum JobStatus {
    Ok,
    /// Ran, but its output is wrong: shown, never ranked or baselined.
    Wrong,
    /// Also a record's state until an outcome says otherwise.
    #[default]
    Failed,
    TimedOut,
}

/// Which job: one variant at one point of the sweep. A job spec and its record share it.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq, Default)]
pub struct JobKey {
    /// Unique within a run: `variant[params] @ group`.
    pub id: String,
    pub variant: String,
    /// The variant's own parameters (fixed and swept), shown beside its name.
    pub variant_params: BTreeMap<String, i64>,
    /// The suite-wide sweep point (for example the matrix shape); report tables are per group.
    pub group: String,
    pub group_params: BTreeMap<String, i64>,
}

impl JobKey {
    /// `name[K=V,…]`: the variant with its own parameters, as reports show it.
    pub fn label(&self) -> String {
        if self.variant_params.is_empty() {
            self.variant.clone()
        } else {
            format!("{}[{}]", self.variant, format_params(&self.variant_params))
        }
    }
}

/// `K=V,K=V`, in key order.
pub fn format_params(params: &BTreeMap<String, i64>) -> String {
    params
        .iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join(",")
}

/// What a job's throughput is compared with: the suite's `bound`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum BoundSpec {
    /// The device-to-device copy of the group's bytes (data movement).
    #[default]
    Copy,
    /// cuBLAS GEMM (GEMV where n = 1) at the job's matmul shape, measured in the same run; with
    /// other input types than the output's, TF32 or f16 accumulation, cuBLASLt's GEMM.
    Cublas {
        shape: MatmulShape,
        /// The output's element type (and the inputs' where `a_elem`/`b_elem` are absent).
        elem: ElemType,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        a_elem: Option<ElemType>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        b_elem: Option<ElemType>,
        /// f32 inputs rounded to TF32 on the tensor cores (`bound = "cublas-tf32"`).
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        tf32: bool,
        /// f16 accumulation (`math = "f16-tensor-f16acc"`).
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        f16_accumulate: bool,
    },
    /// Another variant of the suite in the same group (a user's own reference).
    Variant { name: String },
}

impl BoundSpec {
    /// cuBLAS SGEMM/DGEMM (GEMV) at `shape`, `elem` in and out.
    pub fn cublas(shape: MatmulShape, elem: ElemType) -> BoundSpec {
        BoundSpec::Cublas {
            shape,
            elem,
            a_elem: None,
            b_elem: None,
            tf32: false,
            f16_accumulate: false,
        }
    }

    pub fn is_copy(&self) -> bool {
        *self == BoundSpec::Copy
    }

    /// What the bound is called in reports: `cuBLAS SGEMM`, `variant naive`, `copy`.
    pub fn name(&self) -> String {
        match self {
            BoundSpec::Copy => "copy".into(),
            BoundSpec::Cublas { .. } if !self.is_classic_cublas() => match self.gemm_types() {
                Some(Ok(t)) => format!("cuBLASLt GEMM {}", t.label()),
                _ => "cuBLASLt GEMM (unsupported types)".into(),
            },
            BoundSpec::Cublas { shape, elem, .. } => format!(
                "cuBLAS {}{}",
                if *elem == ElemType::F64 { "D" } else { "S" },
                if shape.n == 1 && !shape.trans_b {
                    "GEMV"
                } else {
                    "GEMM"
                }
            ),
            BoundSpec::Variant { name } => format!("`{name}`"),
        }
    }

    /// A cuBLAS bound's contract (`None` for the others).
    pub fn gemm_types(&self) -> Option<Result<GemmTypes, String>> {
        match self {
            BoundSpec::Cublas {
                elem,
                a_elem,
                b_elem,
                tf32,
                f16_accumulate,
                ..
            } => Some(GemmTypes::new(
                a_elem.unwrap_or(*elem),
                b_elem.unwrap_or(*elem),
                *elem,
                *f16_accumulate,
                *tf32,
            )),
            _ => None,
        }
    }

    /// cuBLAS SGEMM/DGEMM (GEMV) as stored before cuBLASLt bounds: named and keyed as then.
    fn is_classic_cublas(&self) -> bool {
        matches!(
            self,
            BoundSpec::Cublas {
                elem: ElemType::F32 | ElemType::F64,
                a_elem: None,
                b_elem: None,
                tf32: false,
                f16_accumulate: false,
                ..
            }
        )
    }

    /// The key that joins a job to the compute bound measured for it in its group.
    pub fn key(&self) -> Option<String> {
        match self {
            BoundSpec::Cublas { shape, .. } if !self.is_classic_cublas() => Some(format!(
                "{} {} alpha {} beta {}",
                self.name(),
                shape.label(),
                shape.alpha,
                shape.beta
            )),
            BoundSpec::Cublas { shape, elem, .. } => Some(
                format!(
                    "{} {} alpha {} beta {}",
                    self.name(),
                    shape.label(),
                    shape.alpha,
                    shape.beta
                )
                .replace("  ", " ")
                    + if *elem == ElemType::F64 { " f64" } else { "" },
            ),
            _ => None,
        }
    }
}

/// The work a job declares, for throughput: bytes it must move and operations it performs.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Default)]
pub struct Work {
    pub bytes: Option<f64>,
    pub flops: Option<f64>,
    /// The math its flops run on (`math = "bf16-tensor"`); absent: FP32 SIMT, judged by the FP32 peak.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub math: Option<super::math::Math>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
pub struct JobRecord {
    #[serde(flatten)]
    pub key: JobKey,
    pub label: String,
    pub description: String,
    pub status: JobStatus,
    pub error: Option<String>,
    /// What the correctness verification found (stored as `check`).
    #[serde(rename = "check")]
    pub correctness: Option<Correctness>,
    /// The verification after timing, on fresh inputs of another seed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub correctness_after: Option<Correctness>,
    pub samples_ms: Vec<f64>,
    pub runs_per_sample: u32,
    pub stopped_by: String,
    pub summary: Option<Summary>,
    #[serde(flatten)]
    pub work: Work,
    /// What its throughput is compared with (absent: the copy bound).
    #[serde(default, skip_serializing_if = "BoundSpec::is_copy")]
    pub bound: BoundSpec,
    pub launches: usize,
    pub nvml_before: Option<Snapshot>,
    pub nvml_after: Option<Snapshot>,
    pub wall_seconds: f64,
    /// The compilers that built its program (and its `same_as` reference), with versions.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub compilers: Vec<String>,
    /// How its samples were taken (empty in runs made before it was recorded).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub timing_method: String,
    /// `--verify-every K`: the first wrong verification between timed samples, else the last; and how many were made.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub correctness_during: Option<Correctness>,
    #[serde(default, skip_serializing_if = "is_zero")]
    pub verified_during: u32,
    /// The verified timed runs after the samples, and why they make the job WRONG where they do.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timed_checks: Option<super::verified::TimedChecks>,
    /// Samples left out of the median (throttled, or below the clock floor), with their clocks.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub excluded_samples: Vec<ExcludedSample>,
    /// How long the warm-up ran until the SM clock was steady, in ms (0 in runs before it was recorded).
    #[serde(default, skip_serializing_if = "is_zero_f64")]
    pub warmup_ms: f64,
    /// The lowest and highest SM clock NVML read after the job's samples.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sample_clock_mhz: Option<[u32; 2]>,
    /// For a run of several rounds (`--rounds`): each round's own samples. `samples_ms` then holds
    /// one median per timed round, so the summary's interval is across rounds (run-to-run drift
    /// included), not within one.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub rounds: Vec<RoundRecord>,
    /// The UUID of the GPU that timed it (absent in runs made before it was recorded).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gpu: Option<String>,
    /// Each launch's registers, shared memory, blocks per SM and predicted occupancy, as the child
    /// read them (absent in runs made before they were recorded, and in mock runs).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub occupancy: Vec<LaunchOccupancy>,
    /// Why the child could not read the occupancy, where it could not.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub occupancy_error: Option<String>,
    /// A host program with host or managed buffers: its data crosses the host link.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub host_link: bool,
    /// Its suite's or variant's own noise threshold for `check`, percent (`noise_threshold`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub noise_threshold_pct: Option<f64>,
    /// A host program's steps in its median sample (`Timeline`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeline: Option<Timeline>,
    /// How many of its samples NVML read each clock-event reason after (`SW_POWER_CAP`: 12), kept
    /// and left out alike (absent: none, or a run before they were recorded).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub sample_clock_events: BTreeMap<String, u32>,
    /// Samples read under a clock-lowering reason (power cap, thermal) that stayed in the median
    /// because every sample was: the job was measured as found, power-capped.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub clock_lowered_kept: u32,
    /// `--energy`: its energy over at least a second of back-to-back runs after timing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub energy: Option<EnergyRecord>,
    /// Its samples' kernel durations from CUPTI's Activity API (absent in runs before they were
    /// recorded, and with `--no-activity`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub activity: Option<super::activity::ActivityRecord>,
    /// Where the job's child spent its time, phase by phase (absent in runs before it was recorded).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub phases: Vec<super::outcome::JobPhase>,
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

fn is_zero_f64(x: &f64) -> bool {
    *x == 0.0
}

/// One round of a job in a multi-round run.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct RoundRecord {
    pub status: JobStatus,
    pub samples_ms: Vec<f64>,
    pub runs_per_sample: u32,
    pub stopped_by: String,
    /// The UUID of the GPU that timed this round (rounds of a `--gpus` run may differ).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gpu: Option<String>,
}

impl JobRecord {
    pub fn id(&self) -> &str {
        &self.key.id
    }
    pub fn group(&self) -> &str {
        &self.key.group
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_record_without_occupancy_is_stored_as_before() {
        // Runs made before occupancy was recorded, and mock runs, keep their stored format.
        let record = JobRecord {
            key: JobKey {
                id: "j".into(),
                variant: "v".into(),
                ..Default::default()
            },
            status: JobStatus::Ok,
            samples_ms: vec![1.0],
            summary: crate::stats::summarize(&[1.0]),
            ..Default::default()
        };
        let text = serde_json::to_string(&record).unwrap();
        assert!(!text.contains("occupancy"), "{text}");
        let back: JobRecord = serde_json::from_str(&text).unwrap();
        assert!(back.occupancy.is_empty());
    }

    #[test]
    fn a_variant_is_labelled_with_its_own_parameters_in_key_order() {
        let mut key = JobKey {
            variant: "tiled".into(),
            ..Default::default()
        };
        assert_eq!(key.label(), "tiled");
        key.variant_params = BTreeMap::from([("TILE".into(), 32), ("BLOCK".into(), 256)]);
        assert_eq!(key.label(), "tiled[BLOCK=256,TILE=32]");
    }

    #[test]
    fn a_cublas_bound_is_named_and_keyed_by_its_shape() {
        let shape = MatmulShape {
            m: 4096,
            n: 4096,
            k: 4096,
            alpha: 0.5,
            beta: 3.0,
            trans_a: false,
            trans_b: false,
        };
        let gemm = BoundSpec::cublas(shape, ElemType::F32);
        assert_eq!(gemm.name(), "cuBLAS SGEMM");
        // The key a committed compute record carries (cxx-h100).
        assert_eq!(
            gemm.key().as_deref(),
            Some("cuBLAS SGEMM 4096x4096x4096 alpha 0.5 beta 3")
        );
        let gemv = BoundSpec::cublas(MatmulShape { n: 1, ..shape }, ElemType::F64);
        assert_eq!(gemv.name(), "cuBLAS DGEMV");
        assert!(gemv.key().unwrap().ends_with(" f64"));
        assert_eq!(BoundSpec::Copy.key(), None);
        assert!(BoundSpec::default().is_copy());
        let variant = BoundSpec::Variant {
            name: "naive".into(),
        };
        assert_eq!(variant.name(), "`naive`");
        assert_eq!(variant.key(), None);
    }

    #[test]
    fn an_old_cublas_bound_is_stored_read_and_keyed_as_before() {
        // A record of a run made before cuBLASLt bounds: no input types, no TF32.
        let stored = r#"{"kind":"cublas","shape":{"m":8,"n":8,"k":8,"alpha":1.0,"beta":0.0,"trans_a":false,"trans_b":false},"elem":"f32"}"#;
        let bound: BoundSpec = serde_json::from_str(stored).unwrap();
        assert_eq!(serde_json::to_string(&bound).unwrap(), stored);
        assert_eq!(bound.name(), "cuBLAS SGEMM");
        assert_eq!(
            bound.key().as_deref(),
            Some("cuBLAS SGEMM 8x8x8 alpha 1 beta 0")
        );
    }

    #[test]
    fn a_cublaslt_bound_is_named_by_its_contract_and_keyed_apart() {
        let shape = MatmulShape {
            m: 4096,
            n: 4096,
            k: 4096,
            alpha: 1.0,
            beta: 0.0,
            trans_a: false,
            trans_b: false,
        };
        let lt = |a: ElemType, out: ElemType, tf32: bool, acc16: bool| BoundSpec::Cublas {
            shape,
            elem: out,
            a_elem: Some(a),
            b_elem: Some(a),
            tf32,
            f16_accumulate: acc16,
        };
        let bf16 = lt(ElemType::Bf16, ElemType::F32, false, false);
        assert_eq!(bf16.name(), "cuBLASLt GEMM bf16·bf16→f32");
        assert_eq!(
            bf16.key().as_deref(),
            Some("cuBLASLt GEMM bf16·bf16→f32 4096x4096x4096 alpha 1 beta 0")
        );
        let f16acc = lt(ElemType::F16, ElemType::F16, false, true);
        assert_eq!(f16acc.name(), "cuBLASLt GEMM f16·f16→f16, f16 accumulate");
        assert_ne!(
            f16acc.key(),
            lt(ElemType::F16, ElemType::F16, false, false).key()
        );
        let tf32 = lt(ElemType::F32, ElemType::F32, true, false);
        assert_eq!(tf32.name(), "cuBLASLt GEMM f32·f32→f32, TF32");
        assert_ne!(tf32.key(), BoundSpec::cublas(shape, ElemType::F32).key());
        let text = serde_json::to_string(&bf16).unwrap();
        assert!(
            text.contains(r#""a_elem":"bf16""#) && !text.contains("tf32"),
            "{text}"
        );
        assert_eq!(serde_json::from_str::<BoundSpec>(&text).unwrap(), bf16);
    }
}
