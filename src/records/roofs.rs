//! The compute roof of each math a run's jobs declare: the FP32 peak from the FMA rate, or the
//! fastest roof measured in the same run for a tensor or FP64 math; what measured it and at what
//! clock (pure).

use super::bounds::{BoundsRecord, FmaRate, RoofRecord, RoofSource};
use super::job::{BoundSpec, JobRecord};
use super::math::Math;
use super::run_data::RunData;
use super::throughput::per_second_g;

/// How a roof was arrived at.
#[derive(Debug, Clone, PartialEq)]
pub enum RoofOrigin {
    /// The FP32 peak: SMs x lanes per SM x 2 x the SM clock, the lanes read off a multiply-add
    /// kernel measured in the run at `fma_gflops`.
    FmaLanes {
        sm_count: u32,
        lanes: u32,
        fma_gflops: f64,
    },
    /// The fastest `RoofRecord` of the math: cuBLAS/cuBLASLt or a peak kernel of gpu-lab's own.
    Measured { source: RoofSource, what: String },
}

/// The rate a job of one math is judged against: "% of peak", the impossible-result gate and
/// the roofline.
#[derive(Debug, Clone, PartialEq)]
pub struct Roof {
    pub math: Math,
    /// Giga-operations per second: GFLOP/s, or GOP/s for an integer math.
    pub gops: f64,
    pub origin: RoofOrigin,
    /// The SM clock it holds at (the FP32 peak's) or was measured at (NVML), MHz.
    pub sm_mhz: Option<u32>,
}

impl Roof {
    /// What the report calls it: `the FP32 peak`, `the BF16 tensor (f32 accumulate) roof`.
    pub fn name(&self) -> String {
        roof_name(self.math)
    }

    /// `45.3 TFLOP/s`, `1979 TOP/s`: its rate in the math's unit.
    pub fn rate_text(&self) -> String {
        rate_text(self.math, self.gops)
    }

    /// What measured it, for a legend: `cuBLASLt 8192³ ... (library), SM 1755 MHz`.
    pub fn measured_by(&self) -> String {
        let clock = match self.sm_mhz {
            Some(mhz) => format!(", SM clock {mhz} MHz"),
            None => ", SM clock not read".into(),
        };
        match &self.origin {
            RoofOrigin::FmaLanes {
                sm_count, lanes, ..
            } => format!("{sm_count} SMs × {lanes} lanes × 2{clock}"),
            RoofOrigin::Measured { source, what } => {
                format!("{what} ({}){clock}", source_name(*source))
            }
        }
    }
}

/// `the FP32 peak` (as reports have always said) or `the <math title> roof`.
pub fn roof_name(math: Math) -> String {
    match math {
        Math::Fp32 => "the FP32 peak".into(),
        m => format!("the {} roof", m.title()),
    }
}

/// The giga-unit of a math's operations: `GFLOP/s`, or `GOP/s` for integers.
pub fn giga_unit(math: Math) -> &'static str {
    if math.is_integer() {
        "GOP/s"
    } else {
        "GFLOP/s"
    }
}

/// A rate in tera-units: `742.5 TFLOP/s`, `1450.2 TOP/s`.
pub fn rate_text(math: Math, gops: f64) -> String {
    let unit = if math.is_integer() {
        "TOP/s"
    } else {
        "TFLOP/s"
    };
    format!("{:.1} {unit}", gops / 1e3)
}

fn source_name(source: RoofSource) -> &'static str {
    match source {
        RoofSource::Library => "library",
        RoofSource::Kernel => "gpu-lab kernel",
    }
}

/// The FP32 peak the FMA rate implies at `mhz` (`FmaRate::peak_gflops`), as a roof.
pub(super) fn fma_roof(fma: &FmaRate, mhz: u32) -> Option<Roof> {
    Some(Roof {
        math: Math::Fp32,
        gops: fma.peak_gflops(mhz)?,
        origin: RoofOrigin::FmaLanes {
            sm_count: fma.sm_count,
            lanes: fma.lanes_per_sm(mhz)?,
            fma_gflops: fma.gflops(),
        },
        sm_mhz: Some(mhz),
    })
}

impl RoofRecord {
    /// Giga-operations per second, where it was measured: no error and a positive median.
    pub fn gops(&self) -> Option<f64> {
        if self.error.is_some() || !(self.ops > 0.0 && self.ops.is_finite()) {
            return None;
        }
        let s = self.summary.filter(|s| s.median > 0.0)?;
        Some(per_second_g(self.ops, s.median))
    }
}

impl BoundsRecord {
    /// The fastest measured roof of `math` (never for FP32: its roof is the FMA rate's peak).
    pub fn measured_roof(&self, math: Math) -> Option<Roof> {
        let (record, gops) = self
            .roofs
            .iter()
            .filter(|r| r.math == math && math != Math::Fp32)
            .filter_map(|r| Some((r, r.gops()?)))
            .max_by(|a, b| a.1.total_cmp(&b.1))?;
        Some(Roof {
            math,
            gops,
            origin: RoofOrigin::Measured {
                source: record.source,
                what: record.what.clone(),
            },
            sm_mhz: record.sm_mhz,
        })
    }

    /// Why `math` has no roof here: each failed measurement's error, or that none was made.
    pub fn roof_missing_reason(&self, math: Math) -> String {
        let errors: Vec<String> = self
            .roofs
            .iter()
            .filter(|r| r.math == math)
            .map(|r| match &r.error {
                Some(e) => format!("{}: {e}", r.what),
                None => format!("{}: no samples", r.what),
            })
            .collect();
        if errors.is_empty() {
            "no measurement of it in this run".into()
        } else {
            errors.join("; ")
        }
    }
}

impl JobRecord {
    /// The math its flops run on: the declared one, else FP32 SIMT.
    pub fn math(&self) -> Math {
        self.work.math.unwrap_or_default()
    }
}

impl RunData {
    /// The FP32 peak of a group as a roof (at the clock its jobs ran at: this scans every job
    /// of the run).
    pub fn fp32_roof(&self, group: &str) -> Option<Roof> {
        fma_roof(
            self.bounds.get(group)?.fma.as_ref()?,
            self.sm_clock_mhz(group)?,
        )
    }

    /// The roof of `math` in `group`: the FP32 peak for FP32, else the fastest roof of that math
    /// measured in the run. `None` where it was not measured: never the FP32 peak instead.
    pub fn roof(&self, group: &str, math: Math) -> Option<Roof> {
        match math {
            Math::Fp32 => self.fp32_roof(group),
            m => self.bounds.get(group)?.measured_roof(m),
        }
    }

    /// The roof a job is judged against, `fp32` being its group's FP32 peak already computed:
    /// its math's, measured on its own GPU where each GPU measured its own.
    /// A job bounded by cuBLAS at its own contract is never judged against a roof below that
    /// library's rate in the same run: the roof's large square GEMM can run at a lower clock
    /// (power) than a shorter one, and a kernel as fast as the library is not impossible.
    pub fn job_roof(&self, job: &JobRecord, fp32: Option<&Roof>) -> Option<Roof> {
        match job.math() {
            Math::Fp32 => fp32.cloned(),
            m => {
                let measured = self.bound_of(job).and_then(|b| b.measured_roof(m));
                let library = match (&job.bound, self.compute_bound_gflops(job)) {
                    (BoundSpec::Cublas { .. }, Some((what, Some(gops)))) => Some(Roof {
                        math: m,
                        gops,
                        origin: RoofOrigin::Measured {
                            source: RoofSource::Library,
                            what: format!("{what} at this job's shape"),
                        },
                        sm_mhz: None,
                    }),
                    _ => None,
                };
                match (measured, library) {
                    (Some(r), Some(l)) if l.gops > r.gops => Some(l),
                    (r, _) => r,
                }
            }
        }
    }

    /// The maths a group's jobs declare, in `Math` order (FP32 for those that declare none).
    pub fn maths_of(&self, group: &str) -> Vec<Math> {
        let mut maths: Vec<Math> = self
            .jobs
            .iter()
            .filter(|j| j.key.group == group)
            .map(|j| j.math())
            .collect();
        maths.sort();
        maths.dedup();
        maths
    }

    /// Some job of the run declares a math other than FP32: its reports name each math's roof.
    /// Without one they read as they always have.
    pub fn judges_by_math(&self) -> bool {
        self.jobs.iter().any(|j| j.math() != Math::Fp32)
    }
}

/// Hand-built runs with roofs, for the tests of the records and of the reports (no GPU).
#[cfg(test)]
pub(crate) mod fixtures {
    use super::super::bounds::{BoundsRecord, FmaRate, RoofRecord, RoofSource};
    use super::super::environment::Snapshot;
    use super::super::job::{JobKey, JobRecord, JobStatus, Work};
    use super::super::math::Math;
    use super::super::run_data::RunData;
    use crate::stats::summarize;
    use crate::verify::Correctness;

    /// A verified job of group `g` declaring `math` that does `tflop` TFLOP (or TOP) over 1 GB in
    /// 1 ms at 1980 MHz: `tflop` x 1000 TFLOP/s.
    pub fn job(variant: &str, math: Option<Math>, tflop: f64) -> JobRecord {
        JobRecord {
            key: JobKey {
                id: format!("{variant} @ g"),
                variant: variant.into(),
                group: "g".into(),
                ..Default::default()
            },
            label: variant.into(),
            status: JobStatus::Ok,
            correctness: Some(Correctness {
                passed: true,
                checked: 1,
                mismatches: 0,
                unwritten: 0,
                rel_error: 0.0,
                first_mismatch: None,
                max_error: None,
                elem: None,
                max_ulp: None,
            }),
            summary: summarize(&[1.0]),
            work: Work {
                bytes: Some(1e9),
                flops: Some(tflop * 1e12),
                math,
            },
            nvml_after: Some(Snapshot {
                sm_clock_mhz: Some(1980),
                ..Default::default()
            }),
            ..Default::default()
        }
    }

    /// A roof of `math` measured at `tflops` TFLOP/s (1 ms per launch), or failed with `error`.
    pub fn roof(math: Math, source: RoofSource, tflops: f64, error: Option<&str>) -> RoofRecord {
        RoofRecord {
            math,
            source,
            what: match source {
                RoofSource::Library => "cuBLASLt 8192³ (MOCK)".into(),
                RoofSource::Kernel => "mma.sync peak kernel (MOCK)".into(),
            },
            ops: tflops * 1e12 * 1e-3,
            summary: error.is_none().then(|| summarize(&[1.0])).flatten(),
            samples_ms: vec![1.0],
            sm_mhz: Some(1755),
            error: error.map(String::from),
        }
    }

    /// Group `g`: a copy bound of 2000 GB/s, the FP32 peak of 132 SMs x 128 lanes at 1980 MHz
    /// (66.9 TFLOP/s), a BF16 roof of 750 TFLOP/s (the kernel's, over cuBLASLt's 700), an INT8
    /// roof of 1500 TOP/s, and an FP8 E4M3 roof that failed.
    pub fn run(jobs: Vec<JobRecord>) -> RunData {
        let mut run = RunData {
            jobs,
            ..Default::default()
        };
        run.info.suite = "tensor".into();
        run.bounds.insert(
            "g".into(),
            BoundsRecord {
                group: "g".into(),
                bytes: 1_000_000_000,
                memcpy: summarize(&[1.0]),
                copy_kernel: None,
                error: None,
                fma: Some(FmaRate {
                    flops: 66908.16e6,
                    summary: summarize(&[1.0]).unwrap(),
                    sm_count: 132,
                }),
                gpu: None,
                host: None,
                roofs: vec![
                    roof(Math::Bf16Tensor, RoofSource::Library, 700.0, None),
                    roof(Math::Bf16Tensor, RoofSource::Kernel, 750.0, None),
                    roof(Math::I8Tensor, RoofSource::Library, 1500.0, None),
                    roof(
                        Math::E4m3Tensor,
                        RoofSource::Library,
                        0.0,
                        Some("MOCK: no FP8"),
                    ),
                ],
            },
        );
        run
    }
}

#[cfg(test)]
mod tests {
    use super::fixtures::{job, run};
    use super::*;

    #[test]
    fn each_math_is_judged_by_its_own_roof_the_fastest_measured() {
        let run = run(vec![job("a", None, 1.0)]);
        let fp32 = run.roof("g", Math::Fp32).unwrap();
        assert!((fp32.gops - 66908.16).abs() < 1e-6, "{fp32:?}");
        assert_eq!(
            fp32.measured_by(),
            "132 SMs × 128 lanes × 2, SM clock 1980 MHz"
        );
        assert_eq!(fp32.name(), "the FP32 peak");
        let bf16 = run.roof("g", Math::Bf16Tensor).unwrap();
        assert!((bf16.gops - 750e3).abs() < 1e-6, "{bf16:?}");
        assert_eq!(bf16.rate_text(), "750.0 TFLOP/s");
        assert_eq!(
            bf16.measured_by(),
            "mma.sync peak kernel (MOCK) (gpu-lab kernel), SM clock 1755 MHz"
        );
        let i8 = run.roof("g", Math::I8Tensor).unwrap();
        assert_eq!(i8.rate_text(), "1500.0 TOP/s");
        assert_eq!(giga_unit(Math::I8Tensor), "GOP/s");
        // Failed or never measured: no roof, and never the FP32 peak instead.
        assert_eq!(run.roof("g", Math::E4m3Tensor), None);
        assert_eq!(run.roof("g", Math::Fp64), None);
        assert_eq!(run.roof("other", Math::Bf16Tensor), None);
        let b = &run.bounds["g"];
        assert_eq!(
            b.roof_missing_reason(Math::E4m3Tensor),
            "cuBLASLt 8192³ (MOCK): MOCK: no FP8"
        );
        assert_eq!(
            b.roof_missing_reason(Math::Fp64),
            "no measurement of it in this run"
        );
    }

    #[test]
    fn an_fp32_roof_record_never_replaces_the_fma_peak() {
        let mut run = run(vec![job("a", None, 1.0)]);
        let b = run.bounds.get_mut("g").unwrap();
        b.roofs
            .push(fixtures::roof(Math::Fp32, RoofSource::Library, 90.0, None));
        assert_eq!(b.measured_roof(Math::Fp32), None);
        assert!((run.roof("g", Math::Fp32).unwrap().gops - 66908.16).abs() < 1e-6);
    }

    #[test]
    fn a_job_is_judged_by_its_roof_on_its_own_gpu() {
        let mut on_b = job("on_b", Some(Math::Bf16Tensor), 0.5);
        on_b.gpu = Some("GPU-b".into());
        let mut run = run(vec![job("anywhere", Some(Math::Bf16Tensor), 0.5), on_b]);
        let mut b = run.bounds["g"].clone();
        b.gpu = Some("GPU-b".into());
        b.roofs = vec![fixtures::roof(
            Math::Bf16Tensor,
            RoofSource::Library,
            400.0,
            None,
        )];
        run.gpu_bounds.insert(("g".into(), "GPU-b".into()), b);
        let roof = |i: usize| run.job_roof(&run.jobs[i], None).map(|r| r.gops.round());
        assert_eq!(roof(0), Some(750e3));
        assert_eq!(roof(1), Some(400e3));
        assert_eq!(run.maths_of("g"), [Math::Bf16Tensor]);
        assert!(run.judges_by_math());
    }

    #[test]
    fn the_impossible_gate_uses_the_jobs_maths_roof() {
        let run = run(vec![
            // 500 TFLOP/s of bf16 tensor work against a 750 TFLOP/s roof: possible, ranked.
            job("bf16", Some(Math::Bf16Tensor), 0.5),
            // The same job declaring fp32 (or nothing) is over the 66.9 TFLOP/s FP32 peak.
            job("as_fp32", Some(Math::Fp32), 0.5),
            job("undeclared", None, 0.5),
            // 950 TFLOP/s is over 1.25 x 750 (a measured roof's margin).
            job("too_fast", Some(Math::Bf16Tensor), 0.95),
            // 1500 TOP/s of i8 against 1500: possible; 1950 is not.
            job("i8", Some(Math::I8Tensor), 1.5),
            job("i8_too_fast", Some(Math::I8Tensor), 1.95),
        ]);
        assert_eq!(run.impossible(&run.jobs[0]), None);
        assert!(run.rankable(&run.jobs[0]));
        let fp32 = run.impossible(&run.jobs[1]).unwrap();
        assert!(
            fp32.starts_with("500000 GFLOP/s is 747% of the FP32 peak (66908 GFLOP/s)"),
            "{fp32}"
        );
        assert_eq!(run.impossible(&run.jobs[2]), Some(fp32));
        let over = run.impossible(&run.jobs[3]).unwrap();
        assert!(
            over.starts_with(
                "950000 GFLOP/s is 127% of the BF16 tensor (f32 accumulate) roof (750000 GFLOP/s, mma.sync peak kernel (MOCK) (gpu-lab kernel), SM clock 1755 MHz)"
            ) && over.contains("`math = \"bf16-tensor\"`"),
            "{over}"
        );
        assert_eq!(run.impossible(&run.jobs[4]), None);
        let i8 = run.impossible(&run.jobs[5]).unwrap();
        assert!(
            i8.starts_with(
                "1950000 GOP/s is 130% of the INT8 tensor (i32 accumulate) roof (1500000 GOP/s"
            ),
            "{i8}"
        );
        // All at once: the same verdicts.
        let all = run.impossible_jobs();
        assert_eq!(all.len(), 4, "{all:?}");
        for j in &run.jobs {
            assert_eq!(all.get(j.id()), run.impossible(j).as_ref(), "{}", j.id());
            assert_eq!(run.rankable(j), run.rankable_in(j, &all), "{}", j.id());
        }
    }

    #[test]
    fn a_math_whose_roof_was_not_measured_has_no_gate_and_no_roofline() {
        let run = run(vec![
            job("fp8", Some(Math::E4m3Tensor), 5.0),
            job("fp64", Some(Math::Fp64), 5.0),
        ]);
        for j in &run.jobs {
            assert_eq!(run.impossible(j), None, "{}", j.id());
            assert_eq!(run.roofline(j), None, "{}", j.id());
            assert!(run.rankable(j));
        }
        assert!(run.impossible_jobs().is_empty());
    }

    #[test]
    fn the_roofline_is_under_the_jobs_maths_roof() {
        let run = run(vec![
            job("bf16", Some(Math::Bf16Tensor), 0.5),
            job("fp32", None, 0.05),
        ]);
        let bf16 = run.roofline(&run.jobs[0]).unwrap();
        assert_eq!(bf16.intensity, 500.0);
        assert!(bf16.compute_bound && (bf16.attainable_gflops - 750e3).abs() < 1e-6);
        let fp32 = run.roofline(&run.jobs[1]).unwrap();
        assert!(fp32.compute_bound && (fp32.attainable_gflops - 66908.16).abs() < 1e-6);
    }
}
