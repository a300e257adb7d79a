//! The rules that judge a run's jobs: the bound each is compared with, the roof of its math and
//! its roofline, which throughput is impossible, and which job may be ranked (pure).

use std::collections::HashMap;

use super::bounds::BoundsRecord;
use super::job::{BoundSpec, JobRecord, JobStatus};
use super::math::Math;
use super::roofs::{Roof, RoofOrigin, fma_roof, giga_unit};
use super::run_data::RunData;
use crate::verify::Correctness;

/// A job above this multiple of the copy bound measured in its run is impossible. Read-only kernels
/// legitimately pass the copy bound a little (a read alone is faster than a copy): up to 107% in the
/// committed runs (global-memory `soa_sum_x`, reduction 102.6%); a wrong `bytes` expression is off
/// by whole factors.
pub const IMPOSSIBLE_COPY: f64 = 1.25;
/// A job above this multiple of its math's roof is impossible (the FP32 peak's clock is NVML's
/// reading; a measured roof is the fastest of the library and gpu-lab's kernel).
pub const IMPOSSIBLE_PEAK: f64 = 1.05;
/// A job above this multiple of a measured roof (a tensor math's: the fastest of cuBLAS(Lt) and
/// gpu-lab's peak kernel) is impossible. Those are speeds of software, not of the units: a tuned
/// kernel beats the library by several percent (on an H200, 2026-11-26, the persistent wgmma
/// rung ran at 109% of cuBLASLt bf16 at 8192³), while the mistakes the gate is for (a wrong
/// `flops`, skipped work, the wrong `math`) are off by whole factors.
pub const IMPOSSIBLE_MEASURED_ROOF: f64 = 1.25;

/// A job's place on its group's roofline.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Roofline {
    pub intensity: f64,
    pub attainable_gflops: f64,
    /// The compute roof (the job's math's) is the lower one at this intensity.
    pub compute_bound: bool,
}

/// Why each impossible job of a run is impossible, by job id (`RunData::impossible_jobs`).
pub type Impossible = HashMap<String, String>;

impl RunData {
    /// The compute bound of a job, as measured in this run, with its name: cuBLAS at its shape, or
    /// the named variant in its group (its median and the job's own flops). `None` for the copy bound.
    pub fn compute_bound_gflops(&self, job: &JobRecord) -> Option<(String, Option<f64>)> {
        match &job.bound {
            BoundSpec::Copy => None,
            b @ BoundSpec::Cublas { .. } => {
                let key = (job.key.group.clone(), b.key()?);
                let own_gpu = job.gpu.as_ref().and_then(|g| {
                    self.gpu_compute_bounds
                        .get(&(key.0.clone(), key.1.clone(), g.clone()))
                });
                Some((
                    b.name(),
                    own_gpu.or_else(|| self.compute_bounds.get(&key))?.gflops(),
                ))
            }
            b @ BoundSpec::Variant { name } => {
                let other = self.jobs.iter().find(|o| {
                    o.key.variant == *name
                        && o.key.group == job.key.group
                        && o.status == JobStatus::Ok
                });
                Some((b.name(), other.and_then(|o| o.gflops())))
            }
        }
    }

    /// The copy bound a job is compared with: its own GPU's, measured in the same run, else its group's.
    pub fn bound_of(&self, job: &JobRecord) -> Option<&BoundsRecord> {
        job.gpu
            .as_ref()
            .and_then(|g| self.gpu_bounds.get(&(job.key.group.clone(), g.clone())))
            .or_else(|| self.bounds.get(&job.key.group))
    }

    /// The SM clock a group's jobs ran at: the median of NVML's readings after them, else the card's maximum.
    pub fn sm_clock_mhz(&self, group: &str) -> Option<u32> {
        let seen: Vec<u32> = self
            .jobs
            .iter()
            .filter(|j| j.key.group == group)
            .filter_map(|j| j.nvml_after.as_ref()?.sm_clock_mhz)
            .filter(|&c| c > 0)
            .collect();
        self.median_clock(seen)
    }

    /// The median of the clocks seen, else the device's maximum SM clock.
    fn median_clock(&self, mut seen: Vec<u32>) -> Option<u32> {
        seen.sort_unstable();
        seen.get(seen.len() / 2).copied().or_else(|| {
            self.info
                .device
                .as_ref()
                .map(|d| d.max_sm_clock_mhz)
                .filter(|&c| c > 0)
        })
    }

    /// The FP32 peak of a group, GFLOP/s: SMs x lanes per SM (from the measured FMA rate) x 2 x
    /// the SM clock the jobs ran at; with the lanes and the clock.
    pub fn fp32_peak(&self, group: &str) -> Option<(f64, u32, u32)> {
        let fma = self.bounds.get(group)?.fma.as_ref()?;
        let mhz = self.sm_clock_mhz(group)?;
        Some((fma.peak_gflops(mhz)?, fma.lanes_per_sm(mhz)?, mhz))
    }

    /// Where a job sits on the roofline of its group: its intensity (flops per byte), the
    /// attainable rate min(its math's roof, intensity x copy bound), and whether the roof there is
    /// compute. No roof measured for its math: no roofline.
    pub fn roofline(&self, job: &JobRecord) -> Option<Roofline> {
        self.roofline_under(job, self.roof_of(job).map(|r| r.gops))
    }

    /// The roof a job is judged against (computing its group's FP32 peak if it needs it).
    pub fn roof_of(&self, job: &JobRecord) -> Option<Roof> {
        match job.math() {
            Math::Fp32 => self.fp32_roof(&job.key.group),
            _ => self.job_roof(job, None),
        }
    }

    /// `roofline` under the job's roof already computed (`fp32_peak` scans every job of the run).
    pub fn roofline_under(&self, job: &JobRecord, peak: Option<f64>) -> Option<Roofline> {
        let intensity =
            job.work.flops.filter(|f| *f > 0.0)? / job.work.bytes.filter(|b| *b > 0.0)?;
        let peak = peak?;
        let copy = self.bound_of(job)?.copy_gbs()?;
        let memory_roof = intensity * copy;
        Some(Roofline {
            intensity,
            attainable_gflops: peak.min(memory_roof),
            compute_bound: peak <= memory_roof,
        })
    }

    /// Why a job's throughput cannot be real, if it cannot: more than `IMPOSSIBLE_COPY` times the
    /// copy bound measured in the same run and state, or more than `IMPOSSIBLE_PEAK` times the roof
    /// of its math (the FP32 peak unless it declares another). The declared bytes or flops are
    /// wrong, or the kernel skips work. A math whose roof was not measured has no gate.
    pub fn impossible(&self, job: &JobRecord) -> Option<String> {
        self.impossible_at(job, || self.roof_of(job))
    }

    fn impossible_at(
        &self,
        job: &JobRecord,
        roof: impl FnOnce() -> Option<Roof>,
    ) -> Option<String> {
        if job.status != JobStatus::Ok {
            return None;
        }
        let copy = self.bound_of(job).and_then(|b| b.copy_gbs());
        if let (Some(g), Some(c)) = (job.gbs(), copy)
            && g > IMPOSSIBLE_COPY * c
        {
            return Some(format!(
                "{g:.0} GB/s is {:.0}% of the copy bound measured in this run ({c:.0} GB/s): the `bytes` expression overstates the traffic, or the kernel skips work",
                100.0 * g / c
            ));
        }
        if let Some(g) = job.gflops()
            && let Some(roof) = roof()
            && g > roof.impossible_above()
        {
            return Some(over_the_roof(g, &roof));
        }
        None
    }

    /// `impossible` of every job, by job id, with each group's FP32 peak computed once: asking
    /// job by job recomputes the peak over all jobs each time (quadratic in a compute run). Jobs
    /// of another math are judged by its roof measured on their GPU.
    pub fn impossible_jobs(&self) -> Impossible {
        let mut clocks: HashMap<&str, Vec<u32>> = HashMap::new();
        for j in &self.jobs {
            let seen = clocks.entry(j.key.group.as_str()).or_default();
            seen.extend(
                j.nvml_after
                    .as_ref()
                    .and_then(|s| s.sm_clock_mhz)
                    .filter(|&c| c > 0),
            );
        }
        let peaks: HashMap<&str, Option<Roof>> = clocks
            .into_iter()
            .map(|(group, seen)| {
                let peak = self
                    .bounds
                    .get(group)
                    .and_then(|b| b.fma.as_ref())
                    .zip(self.median_clock(seen))
                    .and_then(|(fma, mhz)| fma_roof(fma, mhz));
                (group, peak)
            })
            .collect();
        self.jobs
            .iter()
            .filter_map(|j| {
                let fp32 = || peaks.get(j.key.group.as_str()).cloned().flatten();
                Some((
                    j.key.id.clone(),
                    self.impossible_at(j, || self.job_roof(j, fp32().as_ref()))?,
                ))
            })
            .collect()
    }

    /// A job that may be ranked and serve as the speedup reference: correct by its verification
    /// (before and, where recorded, after timing), and possible. Unchecked jobs are never ranked.
    pub fn rankable(&self, job: &JobRecord) -> bool {
        self.verified_and_timed(job) && self.impossible(job).is_none()
    }

    /// `rankable` with every job's impossibility already known (`impossible_jobs`).
    pub fn rankable_in(&self, job: &JobRecord, impossible: &Impossible) -> bool {
        self.verified_and_timed(job) && !impossible.contains_key(job.id())
    }

    fn verified_and_timed(&self, job: &JobRecord) -> bool {
        let verified = |c: &Option<Correctness>| c.as_ref().is_some_and(|c| c.passed);
        job.status == JobStatus::Ok
            && job.summary.is_some_and(|s| s.median > 0.0)
            && verified(&job.correctness)
            && (job.correctness_after.is_none() || verified(&job.correctness_after))
    }
}

/// Why `gops` over `roof` cannot be real. The FP32 peak's words are those reports always had.
impl Roof {
    /// The rate above which a job of this roof's math cannot be real.
    fn impossible_above(&self) -> f64 {
        let margin = match self.origin {
            RoofOrigin::FmaLanes { .. } => IMPOSSIBLE_PEAK,
            RoofOrigin::Measured { .. } => IMPOSSIBLE_MEASURED_ROOF,
        };
        margin * self.gops
    }
}

fn over_the_roof(gops: f64, roof: &Roof) -> String {
    let pct = 100.0 * gops / roof.gops;
    let r = roof.gops;
    match roof.math {
        Math::Fp32 => format!(
            "{gops:.0} GFLOP/s is {pct:.0}% of the FP32 peak ({r:.0} GFLOP/s): the `flops` expression overstates the work, or the kernel skips it"
        ),
        m => {
            let unit = giga_unit(m);
            format!(
                "{gops:.0} {unit} is {pct:.0}% of {} ({r:.0} {unit}, {}): the `flops` expression overstates the work, the kernel skips it, or `math = \"{}\"` names slower units than the kernel runs on",
                roof.name(),
                roof.measured_by(),
                m.name()
            )
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::records::bounds::{ComputeBoundRecord, FmaRate};
    use crate::records::environment::Snapshot;
    use crate::records::job::{JobKey, Work};
    use crate::stats::summarize;
    use crate::verify::{ElemType, MatmulShape};

    fn passed() -> Option<Correctness> {
        Some(Correctness {
            passed: true,
            checked: 1,
            mismatches: 0,
            unwritten: 0,
            rel_error: 0.0,
            first_mismatch: None,
            max_error: None,
            elem: None,
            max_ulp: None,
        })
    }

    /// A verified job of group `g` that moved `bytes` and did `flops` in 1 ms at 1980 MHz.
    fn job(variant: &str, bytes: f64, flops: Option<f64>) -> JobRecord {
        JobRecord {
            key: JobKey {
                id: format!("{variant} @ g"),
                variant: variant.into(),
                group: "g".into(),
                ..Default::default()
            },
            status: JobStatus::Ok,
            correctness: passed(),
            summary: summarize(&[1.0]),
            work: Work {
                bytes: Some(bytes),
                flops,
                ..Default::default()
            },
            nvml_after: Some(Snapshot {
                sm_clock_mhz: Some(1980),
                ..Default::default()
            }),
            ..Default::default()
        }
    }

    /// Group `g`'s copy bound (1 GB each way in 1 ms: 2000 GB/s) and the FMA rate of 132 SMs
    /// of 128 lanes.
    fn bounds(gpu: Option<&str>, copy_ms: f64) -> BoundsRecord {
        BoundsRecord {
            group: "g".into(),
            bytes: 1_000_000_000,
            memcpy: summarize(&[copy_ms]),
            copy_kernel: None,
            error: None,
            fma: Some(FmaRate {
                flops: 66908.16e6,
                summary: summarize(&[1.0]).unwrap(),
                sm_count: 132,
            }),
            gpu: gpu.map(String::from),
            host: None,
            roofs: Vec::new(),
        }
    }

    fn run(jobs: Vec<JobRecord>) -> RunData {
        let mut run = RunData {
            jobs,
            ..Default::default()
        };
        run.bounds.insert("g".into(), bounds(None, 1.0));
        run
    }

    #[test]
    fn a_job_above_the_copy_bound_or_the_fp32_peak_is_impossible_and_unranked() {
        let run = run(vec![
            job("fine", 1e9, None),
            job("overstated", 3e9, None),
            job("too_many_flops", 1e9, Some(80e9)),
        ]);
        assert_eq!(run.impossible(&run.jobs[0]), None);
        assert!(run.rankable(&run.jobs[0]));
        let copy = run.impossible(&run.jobs[1]).unwrap();
        assert!(
            copy.starts_with("3000 GB/s is 150% of the copy bound"),
            "{copy}"
        );
        let peak = run.impossible(&run.jobs[2]).unwrap();
        assert!(
            peak.starts_with("80000 GFLOP/s is 120% of the FP32 peak (66908 GFLOP/s)"),
            "{peak}"
        );
        // All at once, with each group's peak computed once: the same verdicts.
        let all = run.impossible_jobs();
        assert_eq!(all.len(), 2);
        assert_eq!(all.get("overstated @ g"), Some(&copy));
        assert_eq!(all.get("too_many_flops @ g"), Some(&peak));
        for j in &run.jobs {
            assert_eq!(run.rankable(j), run.rankable_in(j, &all), "{}", j.id());
        }
    }

    #[test]
    fn only_verified_timed_jobs_are_ranked() {
        let mut unchecked = job("unchecked", 1e9, None);
        unchecked.correctness = None;
        let mut wrong_after = job("wrong_after", 1e9, None);
        wrong_after.correctness_after = passed().map(|c| Correctness { passed: false, ..c });
        let mut untimed = job("untimed", 1e9, None);
        untimed.summary = None;
        let mut failed = job("failed", 1e9, None);
        failed.status = JobStatus::Failed;
        let mut right_after = job("right_after", 1e9, None);
        right_after.correctness_after = passed();
        let run = run(vec![unchecked, wrong_after, untimed, failed, right_after]);
        let ranked: Vec<&str> = run
            .jobs
            .iter()
            .filter(|j| run.rankable(j))
            .map(|j| j.key.variant.as_str())
            .collect();
        assert_eq!(ranked, ["right_after"]);
        assert_eq!(
            run.impossible(&run.jobs[3]),
            None,
            "a failed job is judged by its status"
        );
    }

    #[test]
    fn a_job_is_compared_with_its_own_gpus_copy_bound() {
        let mut on_b = job("on_b", 1e9, None);
        on_b.gpu = Some("GPU-b".into());
        let mut run = run(vec![job("anywhere", 1e9, None), on_b]);
        run.gpu_bounds
            .insert(("g".into(), "GPU-b".into()), bounds(Some("GPU-b"), 4.0));
        assert_eq!(run.bound_of(&run.jobs[0]).unwrap().copy_gbs(), Some(2000.0));
        assert_eq!(run.bound_of(&run.jobs[1]).unwrap().copy_gbs(), Some(500.0));
        // 1000 GB/s is possible against 2000 but not against its own GPU's 500.
        assert!(run.impossible(&run.jobs[0]).is_none());
        assert!(run.impossible(&run.jobs[1]).is_some());
    }

    #[test]
    fn the_roofline_takes_the_lower_of_the_fp32_peak_and_intensity_times_the_copy_bound() {
        let run = run(vec![
            job("streaming", 1e9, Some(1e9)),
            job("compute", 1e9, Some(60e9)),
            job("no_flops", 1e9, None),
        ]);
        let (peak, lanes, mhz) = run.fp32_peak("g").unwrap();
        assert!((peak - 66908.16).abs() < 1e-6 && lanes == 128 && mhz == 1980);
        let memory = run.roofline(&run.jobs[0]).unwrap();
        assert_eq!(memory.intensity, 1.0);
        assert_eq!(memory.attainable_gflops, 2000.0);
        assert!(!memory.compute_bound);
        let compute = run.roofline(&run.jobs[1]).unwrap();
        assert_eq!(compute.intensity, 60.0);
        assert!(compute.compute_bound && compute.attainable_gflops == peak);
        assert_eq!(run.roofline(&run.jobs[2]), None);
    }

    #[test]
    fn the_sm_clock_is_the_median_seen_else_the_cards_maximum() {
        let mut run = run(vec![
            job("a", 1e9, None),
            job("b", 1e9, None),
            job("c", 1e9, None),
        ]);
        for (j, mhz) in run.jobs.iter_mut().zip([1500, 1980, 1755]) {
            j.nvml_after.as_mut().unwrap().sm_clock_mhz = Some(mhz);
        }
        assert_eq!(run.sm_clock_mhz("g"), Some(1755));
        assert_eq!(run.sm_clock_mhz("other"), None);
        run.info.device = Some(crate::records::environment::DeviceInfo {
            max_sm_clock_mhz: 1980,
            ..Default::default()
        });
        assert_eq!(run.sm_clock_mhz("other"), Some(1980));
    }

    #[test]
    fn a_compute_bound_is_cublas_at_the_jobs_shape_or_another_variant() {
        let shape = MatmulShape {
            m: 64,
            n: 64,
            k: 64,
            alpha: 1.0,
            beta: 0.0,
            trans_a: false,
            trans_b: false,
        };
        let cublas = BoundSpec::cublas(shape, ElemType::F32);
        let mut gemm = job("gemm", 1e9, Some(1e9));
        gemm.bound = cublas.clone();
        let mut vs_naive = job("tiled", 1e9, Some(1e9));
        vs_naive.bound = BoundSpec::Variant {
            name: "naive".into(),
        };
        let naive = job("naive", 1e9, Some(4e9));
        let mut run = run(vec![gemm, vs_naive, naive]);
        let key = cublas.key().unwrap();
        assert_eq!(
            run.compute_bound_gflops(&run.jobs[0]),
            None,
            "no cuBLAS record for the shape"
        );
        run.compute_bounds.insert(
            ("g".into(), key.clone()),
            ComputeBoundRecord {
                group: "g".into(),
                key,
                math_mode: "m".into(),
                flops: 8e9,
                summary: summarize(&[1.0]),
                samples_ms: vec![1.0],
                error: None,
                gpu: None,
            },
        );
        assert_eq!(
            run.compute_bound_gflops(&run.jobs[0]),
            Some(("cuBLAS SGEMM".to_string(), Some(8000.0)))
        );
        assert_eq!(
            run.compute_bound_gflops(&run.jobs[1]),
            Some(("`naive`".to_string(), Some(4000.0)))
        );
        assert_eq!(
            run.compute_bound_gflops(&run.jobs[2]),
            None,
            "the copy bound"
        );
    }
}
