//! The mock executor (`--mock-gpu`, hidden): no GPU, no compiler, no ncu; deterministic stand-in timings and counters so that orchestration can be tested end to end. Everything it makes says MOCK.

use std::collections::BTreeMap;

use super::contract::{Environment, Executor, Failure, RunContext};
use crate::metrics::{self, MetricDef};
use crate::parse::KernelRow;
use crate::parse::query_metrics::Screened;
use crate::profiler::pass;
use crate::records::{
    BoundSpec, BoundsOutcome, ComputeOutcome, DeviceInfo, HostLinkSamples, JobOutcome, Math,
    ProfileRecord, RoofRecord, RoofSource, Snapshot,
};
use crate::records::{EnergyRecord, Hotspots, StepKind, StepTime, Timeline};
use crate::suite::{JobSpec, StepProgram};

/// The name the mock device carries into every run, report and baseline it touches.
pub const MOCK_DEVICE: &str = "MOCK GPU (no GPU was used: every number is a stand-in)";

/// Stand-in bandwidth of the mock device, bytes per millisecond (1000 GB/s).
const BYTES_PER_MS: f64 = 1e9;
/// Stand-in arithmetic rate of the mock device, flops per millisecond (1000 GFLOP/s).
const FLOPS_PER_MS: f64 = 1e9;
/// Stand-in cost of one launch, ms.
const LAUNCH_MS: f64 = 0.002;
const SAMPLES: usize = 30;

#[derive(Debug, Clone, Default)]
pub struct MockExecutor {
    /// Variant name -> factor its stand-in time is multiplied by (to test the regression gate).
    pub slowdown: BTreeMap<String, f64>,
    /// Which mock GPU of the mock host it stands for (`--gpus`).
    pub index: u32,
    /// A model name, for a mock host with GPUs of several models (`--mock-gpus`).
    pub model: Option<String>,
}

/// A deterministic pseudo-random number in [0, 1) from a text and an index (FNV-1a, then a mix).
fn unit(text: &str, i: u64) -> f64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in text.bytes().chain(i.to_le_bytes()) {
        h = (h ^ b as u64).wrapping_mul(0x0100_0000_01b3);
    }
    h ^= h >> 33;
    h = h.wrapping_mul(0xff51_afd7_ed55_8ccd);
    h ^= h >> 33;
    (h >> 11) as f64 / (1u64 << 53) as f64
}

/// `n` samples around `ms`, ±0.1%, the same for the same key.
fn samples(key: &str, ms: f64) -> Vec<f64> {
    (0..SAMPLES as u64)
        .map(|i| ms * (1.0 + 0.002 * (unit(key, i) - 0.5)))
        .collect()
}

impl MockExecutor {
    fn stand_in_ms(&self, job: &JobSpec) -> f64 {
        let threads: u64 = job.threads_per_launch().iter().sum();
        let bytes = job.work.bytes.unwrap_or((threads * 8) as f64);
        let flops = job.work.flops.unwrap_or(0.0);
        let factor = self.slowdown.get(&job.key.variant).copied().unwrap_or(1.0);
        ((bytes / BYTES_PER_MS).max(flops / FLOPS_PER_MS) + LAUNCH_MS * job.launches.len() as f64)
            * factor
    }
}

impl MockExecutor {
    /// A stand-in timeline of a host program, so that reports and timeline pictures can be tested:
    /// each stream's steps back to back (copies at 50 GB/s, kernels sharing the job's stand-in
    /// time), marked mock.
    fn stand_in_timeline(&self, job: &JobSpec, program: &StepProgram) -> Timeline {
        let per_kernel = self.stand_in_ms(job) / job.launches.len().max(1) as f64;
        let mut cursor: BTreeMap<String, f64> = BTreeMap::new();
        let steps = program
            .steps
            .iter()
            .filter_map(|s| {
                let kind = s.action.kind()?;
                let bytes = s.action.bytes(&job.buffers);
                let ms = if kind == StepKind::Kernel {
                    per_kernel
                } else {
                    bytes as f64 / 50e6 + LAUNCH_MS
                };
                let stream = program.stream_name(s.stream);
                let start = *cursor.get(&stream).unwrap_or(&0.0);
                cursor.insert(stream.clone(), start + ms);
                Some(StepTime {
                    label: s.label.clone(),
                    kind,
                    stream,
                    start_ms: start,
                    end_ms: start + ms,
                    bytes,
                    median_ms: ms,
                })
            })
            .collect::<Vec<_>>();
        Timeline {
            total_ms: steps.iter().map(|s| s.end_ms).fold(0.0, f64::max),
            steps,
            mock: true,
        }
    }
}

impl Executor for MockExecutor {
    fn environment(&self) -> Environment {
        let device = DeviceInfo {
            index: self.index,
            name: match &self.model {
                Some(m) => format!("{MOCK_DEVICE} [model {m}]"),
                None => MOCK_DEVICE.into(),
            },
            uuid: format!("MOCK-GPU-{}", self.index),
            driver: "MOCK".into(),
            cuda_driver: "MOCK".into(),
            compute_capability: "MOCK".into(),
            // A stand-in clock, so that the stand-in FMA rate names a lane count.
            max_sm_clock_mhz: 1953,
            // The stand-in multiprocessor count: grids that name `SMS` take the nominal value.
            sm_count: Some(crate::suite::NOMINAL_SMS),
            ..Default::default()
        };
        let label = match &self.model {
            Some(m) => format!(
                "mock-{}",
                m.chars()
                    .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
                    .collect::<String>()
            ),
            None => "mock".into(),
        };
        Environment {
            label,
            device: Some(device),
            nvml_error: None,
            ncu_version: Some("MOCK (ncu was not run)".into()),
            mock: true,
        }
    }

    fn screen(&self, defs: Vec<MetricDef>) -> anyhow::Result<Screened> {
        Ok(Screened {
            collectable: defs,
            unavailable: Vec::new(),
        })
    }

    fn snapshot(&self) -> Option<Snapshot> {
        // No clocks were read: a stand-in clock would be an invented reading.
        None
    }

    fn bounds(&self, ctx: &RunContext, tag: &str, bytes: u64) -> Result<BoundsOutcome, Failure> {
        let ms = 2.0 * bytes as f64 / BYTES_PER_MS;
        // Stand-in FMA rate: 1000 GFLOP/s on 8 "SMs" (a rate that says 32 lanes at 1953 MHz).
        let fma = ctx
            .fma
            .then(|| (samples(&format!("{tag} fma"), 1.0), FLOPS_PER_MS, 8));
        // Stand-in host link: 50 GB/s pinned each way, 80 bidirectional, 20 pageable.
        let link = |what: &str, gbs: f64, ways: f64| {
            samples(&format!("{tag} {what}"), ways * bytes as f64 / (gbs * 1e6))
        };
        let host = ctx.host_link.then(|| HostLinkSamples {
            h2d_pinned: link("h2d pinned", 50.0, 1.0),
            d2h_pinned: link("d2h pinned", 50.0, 1.0),
            bidirectional_pinned: link("bidirectional pinned", 80.0, 2.0),
            h2d_pageable: link("h2d pageable", 20.0, 1.0),
            d2h_pageable: link("d2h pageable", 20.0, 1.0),
        });
        Ok(BoundsOutcome {
            bytes,
            memcpy_samples_ms: samples(&format!("{tag} memcpy"), ms * 1.05),
            kernel_samples_ms: samples(&format!("{tag} kernel"), ms),
            fma,
            host,
        })
    }

    fn compute_bound(
        &self,
        _ctx: &RunContext,
        tag: &str,
        bound: &BoundSpec,
    ) -> Result<ComputeOutcome, Failure> {
        let BoundSpec::Cublas { shape, .. } = bound else {
            return Err(Failure::Failed {
                message: format!("{} is not measured by an executor", bound.name()),
                log: None,
            });
        };
        // A stand-in vendor routine at 2000 stand-in GFLOP/s.
        Ok(ComputeOutcome {
            samples_ms: samples(&format!("{tag} {}", shape.label()), shape.flops() / 2e9),
            math_mode: "MOCK".into(),
        })
    }

    fn roofs(&self, _ctx: &RunContext, tag: &str, math: Math) -> Result<Vec<RoofRecord>, Failure> {
        // Stand-in rates, a multiple of the stand-in FP32 rate: the library a little below the kernel.
        let per_ms = FLOPS_PER_MS * mock_roof_multiple(math);
        let ops = 1e12;
        let roof = |source: RoofSource, what: &str, rate: f64| RoofRecord {
            math,
            source,
            what: format!("MOCK {what} (nothing ran)"),
            ops,
            summary: None,
            samples_ms: samples(&format!("{tag} {} {what}", math.name()), ops / rate),
            sm_mhz: None,
            error: None,
        };
        Ok(vec![
            roof(RoofSource::Library, "cuBLAS/cuBLASLt", per_ms * 0.9),
            roof(RoofSource::Kernel, "peak kernel", per_ms),
        ])
    }

    fn job(&self, ctx: &RunContext, _tag: &str, job: &JobSpec) -> Result<JobOutcome, Failure> {
        Ok(JobOutcome {
            // Nothing ran, so nothing was verified: the job is "not checked", never "correct".
            correctness: None,
            samples_ms: samples(job.id(), self.stand_in_ms(job)),
            runs_per_sample: 1,
            warmup_runs: 0,
            stopped_by: "MOCK".into(),
            compile: Vec::new(),
            seed: ctx.seed,
            correctness_after: None,
            timing_method: "MOCK: nothing was timed".into(),
            correctness_during: None,
            verified_during: 0,
            // Nothing ran: no timed run was verified.
            timed_checks: None,
            excluded_samples: Vec::new(),
            warmup_ms: 0.0,
            sample_clock_mhz: None,
            // Nothing was loaded: no registers, no occupancy (a stand-in here would read as a measurement).
            occupancy: Vec::new(),
            occupancy_error: None,
            timeline: job.steps.as_ref().map(|p| self.stand_in_timeline(job, p)),
            sample_clock_events: Default::default(),
            clock_lowered_kept: 0,
            energy: ctx
                .timing
                .energy
                .then(|| stand_in_energy(self.stand_in_ms(job))),
            // Nothing ran: no kernel was recorded, and the record says so.
            activity: (!ctx.timing.no_activity).then(|| {
                crate::records::ActivityRecord::failed(
                    "MOCK: nothing ran, so no kernel activity was recorded",
                )
            }),
            // No child ran: no phase has a time.
            phases: Vec::new(),
        })
    }

    /// Nothing is sanitized: a clean record that says MOCK.
    fn sanitize(
        &self,
        _ctx: &RunContext,
        _tag: &str,
        job: &JobSpec,
        tool: crate::records::SanitizerTool,
        _timeout: std::time::Duration,
    ) -> crate::records::SanitizeRecord {
        crate::records::SanitizeRecord {
            mock: true,
            ..crate::records::SanitizeRecord::new(job.id(), &job.label(), &job.key.group, tool)
        }
    }

    /// Nothing is sanitized: every job finished, nothing found, and the record says MOCK.
    fn sanitize_batch(
        &self,
        _ctx: &RunContext,
        tag: &str,
        jobs: &[&JobSpec],
        tool: crate::records::SanitizerTool,
        _timeout: std::time::Duration,
    ) -> crate::records::BatchRun {
        let record = crate::records::SanitizeRecord::new(tag, "", "", tool);
        crate::records::BatchRun {
            record: crate::records::SanitizeRecord {
                mock: true,
                batch_of: Some(jobs.len()),
                ..record
            },
            report_read: true,
            completed: jobs.len(),
        }
    }

    fn profile(&self, ctx: &RunContext, _tag: &str, jobs: &[&JobSpec]) -> Vec<ProfileRecord> {
        // Stand-in counters go through the real mapping and formulas, as ncu's rows would.
        let counters = metrics::counters_needed(ctx.metrics);
        let rows: Vec<KernelRow> = jobs
            .iter()
            .flat_map(|job| {
                job.launches
                    .iter()
                    .enumerate()
                    .map(move |(i, l)| (job, i, l))
            })
            .enumerate()
            .map(|(id, (job, i, l))| {
                let key = format!("{} launch {i}", job.id());
                let values = counters.iter().enumerate().map(|(k, c)| {
                    let v = if c == metrics::DURATION {
                        self.stand_in_ms(job) * 1e6 / job.launches.len() as f64
                    } else {
                        (1.0 + 999.0 * unit(&key, k as u64)).round()
                    };
                    (c.clone(), v)
                });
                let dims = |d: &[u32; 3]| format!("({}, {}, {})", d[0], d[1], d[2]);
                KernelRow {
                    id: id as u64,
                    process_id: "MOCK".into(),
                    kernel_name: l.kernel.clone(),
                    block_size: dims(&l.block),
                    grid_size: dims(&l.grid),
                    device: "0".into(),
                    cc: "MOCK".into(),
                    values: values.collect(),
                    text: Default::default(),
                }
            })
            .collect();
        let mut records = pass::records(jobs, ctx.metrics, &rows, None, None);
        if let Some(h) = ctx.hotspots {
            for (r, _) in records.iter_mut().zip(jobs).filter(|(_, j)| h.wants(j)) {
                r.hotspots = Some(Hotspots::failed(MOCK_HOTSPOTS.into(), None));
            }
        }
        records
    }
}

/// What a mock run's hot spots say: no ncu ran, so there are no source lines to rank.
pub const MOCK_HOTSPOTS: &str =
    "MOCK: no ncu ran (--mock-gpu), so there are no source lines; run on a GPU for them";

/// How many times the stand-in FP32 rate a math's stand-in roof is (about an H100's ratios).
fn mock_roof_multiple(math: Math) -> f64 {
    match math {
        Math::Fp32 => 1.0,
        Math::Fp64 => 1.0,
        Math::Tf32Tensor => 8.0,
        Math::F16Tensor | Math::F16TensorF16Acc | Math::Bf16Tensor => 16.0,
        Math::E4m3Tensor | Math::E5m2Tensor | Math::I8Tensor => 32.0,
    }
}

/// `--energy` in a mock run: a stand-in at 300 W for a second of back-to-back runs, marked MOCK.
fn stand_in_energy(per_run_ms: f64) -> EnergyRecord {
    let runs = (1000.0 / per_run_ms.max(1e-6)).ceil() as u64;
    EnergyRecord {
        runs,
        seconds: runs as f64 * per_run_ms / 1000.0,
        joules: 300.0 * runs as f64 * per_run_ms / 1000.0,
        counter_steps: 10,
        power_limit_w: Some(700.0),
        power_state: Some("P0".into()),
        method: "MOCK: nothing ran; a stand-in at 300 W".into(),
        mock: true,
        ..Default::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stand_ins_are_deterministic_and_slowed_where_asked() {
        assert_eq!(samples("a", 1.0), samples("a", 1.0));
        assert_ne!(samples("a", 1.0), samples("b", 1.0));
        assert!(samples("a", 1.0).iter().all(|x| (x - 1.0).abs() <= 0.001));
        let job: JobSpec = serde_json::from_value(serde_json::json!({
            "id": "v @ N=1", "variant": "v", "variant_params": {}, "group": "N=1", "group_params": {"N": 1},
            "suite": "s", "program": {"source_path": "k.cu", "options": []},
            "launches": [{"kernel": "k", "grid": [4, 1, 1], "block": [256, 1, 1], "shared_bytes": 0, "args": []}],
            "buffers": [], "check": {"op": "none"}, "reference": null, "bytes": 1.0e9, "flops": null
        }))
        .unwrap();
        let plain = MockExecutor::default();
        let slow = MockExecutor {
            slowdown: BTreeMap::from([("v".to_string(), 1.5)]),
            ..Default::default()
        };
        assert!((slow.stand_in_ms(&job) / plain.stand_in_ms(&job) - 1.5).abs() < 1e-12);
        assert!(
            plain.environment().mock && plain.environment().device.unwrap().name.contains("MOCK")
        );
    }
}
