//! A run as read back: one line of `results.jsonl` (`Record`), and the run its lines make, where the
//! latest record of each kind per job or group wins.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::bounds::{BoundsRecord, ComputeBoundRecord};
use super::job::JobRecord;
use super::profile::ProfileRecord;
use super::run_info::RunInfo;
use super::sanitize::SanitizeRecord;

/// One line of `results.jsonl`. Lines are read and written one at a time, so the size of the
/// largest variant costs nothing worth a box.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Record {
    Job(JobRecord),
    Bounds(BoundsRecord),
    Profile(ProfileRecord),
    Compute(ComputeBoundRecord),
    Sanitize(SanitizeRecord),
}

/// A run as read back: the latest record of each kind per job or group wins.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RunData {
    pub info: RunInfo,
    pub jobs: Vec<JobRecord>,
    /// Each group's copy bound (in a run over several GPUs, the one recorded last).
    pub bounds: BTreeMap<String, BoundsRecord>,
    /// Each group's copy bound on each GPU, by (group, GPU UUID): a job is compared with its own GPU's.
    pub gpu_bounds: BTreeMap<(String, String), BoundsRecord>,
    pub profiles: BTreeMap<String, ProfileRecord>,
    /// Compute bounds by (group, bound key).
    pub compute_bounds: BTreeMap<(String, String), ComputeBoundRecord>,
    /// Compute bounds by (group, bound key, GPU UUID).
    pub gpu_compute_bounds: BTreeMap<(String, String, String), ComputeBoundRecord>,
    /// compute-sanitizer's records, in the order they ran; a later one of the same variant and
    /// tool replaces the earlier.
    pub sanitize: Vec<SanitizeRecord>,
}

impl RunData {
    pub fn from_records(info: RunInfo, records: Vec<Record>) -> Self {
        let mut run = RunData {
            info,
            ..Default::default()
        };
        // A job recorded again (a re-run) replaces the earlier record and takes its place at the
        // end; an index keeps this linear in the number of records.
        let mut jobs: Vec<Option<JobRecord>> = Vec::new();
        let mut at: std::collections::HashMap<String, usize> = std::collections::HashMap::new();
        for r in records {
            match r {
                Record::Job(j) => {
                    if let Some(i) = at.insert(j.key.id.clone(), jobs.len()) {
                        jobs[i] = None;
                    }
                    jobs.push(Some(j));
                }
                Record::Bounds(b) => {
                    if let Some(gpu) = &b.gpu {
                        run.gpu_bounds
                            .insert((b.group.clone(), gpu.clone()), b.clone());
                    }
                    run.bounds.insert(b.group.clone(), b);
                }
                Record::Profile(p) => {
                    run.profiles.insert(p.job_id.clone(), p);
                }
                Record::Compute(c) => {
                    if let Some(gpu) = &c.gpu {
                        run.gpu_compute_bounds
                            .insert((c.group.clone(), c.key.clone(), gpu.clone()), c.clone());
                    }
                    run.compute_bounds
                        .insert((c.group.clone(), c.key.clone()), c);
                }
                Record::Sanitize(s) => {
                    run.sanitize
                        .retain(|old| (&old.variant, old.tool) != (&s.variant, s.tool));
                    run.sanitize.push(s);
                }
            }
        }
        run.jobs = jobs.into_iter().flatten().collect();
        run
    }

    /// Groups in the order their first job ran.
    pub fn groups(&self) -> Vec<String> {
        groups_in_order(self.jobs.iter().map(|j| &j.key.group))
    }
}

/// Distinct group names in order of first appearance.
pub fn groups_in_order<'a>(names: impl Iterator<Item = &'a String>) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for g in names {
        if !out.contains(g) {
            out.push(g.clone());
        }
    }
    out
}

#[cfg(test)]
mod tests {
    //! The stored format, pinned by lines of committed runs: each must read and write back byte
    //! for byte (a renamed, reordered or newly-serialised field fails here).
    use super::*;

    /// One `results.jsonl` line of each kind (jobs with a timeline, occupancy, a cuBLAS bound and
    /// a check after timing; bounds with the FMA rate and with the host link), from committed runs (docs/measurements.md).
    const RESULTS_LINES: [&str; 6] = [
        r##"{"kind":"job","id":"managed @ N=67108864","variant":"managed","variant_params":{},"group":"N=67108864","group_params":{"N":67108864},"label":"managed","description":"seed 002 §39: a, b and c from cudaMallocManaged, the kernel on them, cudaDeviceSynchronize; the inputs are written on the host before every sample, so the kernel's first touch of each page faults and migrates it","status":"ok","error":null,"check":{"passed":true,"checked":67108864,"mismatches":0,"unwritten":0,"rel_error":0.0,"first_mismatch":null},"correctness_after":{"passed":true,"checked":67108864,"mismatches":0,"unwritten":0,"rel_error":0.0,"first_mismatch":null},"samples_ms":[72.52700805664062,81.81798553466797,70.59494018554688,68.49676513671875,71.46415710449219,69.0913314819336,70.36495971679688,67.88838195800781,75.12035369873047,68.09426879882812],"runs_per_sample":1,"stopped_by":"time cap 1.5s","summary":{"n":10,"median":70.47994995117188,"ci_low":67.88838195800781,"ci_high":81.81798553466797,"mean":71.54601516723633,"stddev":4.244918347402079,"min":67.88838195800781,"max":81.81798553466797,"outliers":1},"bytes":805306368.0,"flops":null,"launches":1,"nvml_before":{"sm_clock_mhz":1980,"mem_clock_mhz":3201,"temperature_c":40,"power_w":125.774,"throttle_reasons":[]},"nvml_after":{"sm_clock_mhz":1980,"mem_clock_mhz":3201,"temperature_c":40,"power_w":126.974,"throttle_reasons":[]},"wall_seconds":9.199701286,"compilers":["nvrtc 13.0"],"timing_method":"events around the whole host program on the NULL stream, every stream joined; each step between events on its stream; one run a sample after an L2 flush","warmup_ms":1811.498505,"sample_clock_mhz":[1980,1980],"gpu":"GPU-ac449182-88ac-2100-2d6e-f90282849542","occupancy":[{"kernel":"sum_arrays","threads_per_block":256,"registers_per_thread":12,"static_shared_bytes":0,"dynamic_shared_bytes":0,"local_bytes_per_thread":0,"max_threads_per_block":1024,"max_warps_per_sm":64,"active_blocks_per_sm":8,"predicted_occupancy_pct":100.0,"model":{"warps":8,"blocks":32,"registers":16,"shared_memory":228},"limiters":["warps"]}],"host_link":true,"timeline":{"total_ms":70.59494018554688,"steps":[{"label":"kernel sum_arrays","kind":"kernel","stream":"NULL","start_ms":0.004031999967992306,"end_ms":70.56492614746094,"bytes":0,"median_ms":70.44016024412122}]}}"##,
        r##"{"kind":"job","id":"2_coalesce @ -","variant":"2_coalesce","variant_params":{},"group":"","group_params":{},"label":"2_coalesce","description":"kernel 2: global memory coalescing (a warp walks a row of C)","status":"ok","error":null,"check":{"passed":true,"checked":20468,"mismatches":0,"unwritten":0,"rel_error":1.7862237940642374e-7,"first_mismatch":null},"correctness_after":{"passed":true,"checked":20468,"mismatches":0,"unwritten":0,"rel_error":1.539399158886856e-7,"first_mismatch":null},"samples_ms":[21.658143997192383,21.66352081298828,21.6823673248291,21.677759170532227,21.67740821838379,21.678335189819336,21.652448654174805,21.648128509521484,21.65679931640625,21.652511596679688],"runs_per_sample":1,"stopped_by":"noise target 0.50% met","summary":{"n":10,"median":21.660832405090332,"ci_low":21.648128509521484,"ci_high":21.6823673248291,"mean":21.664742279052735,"stddev":0.012953485352944242,"min":21.648128509521484,"max":21.6823673248291,"outliers":0},"bytes":268435456.0,"flops":137438953472.0,"bound":{"kind":"cublas","shape":{"m":4096,"n":4096,"k":4096,"alpha":0.5,"beta":3.0,"trans_a":false,"trans_b":false},"elem":"f32"},"launches":1,"nvml_before":{"sm_clock_mhz":1980,"mem_clock_mhz":2619,"temperature_c":33,"power_w":176.379,"throttle_reasons":[]},"nvml_after":{"sm_clock_mhz":1980,"mem_clock_mhz":2619,"temperature_c":34,"power_w":284.946,"throttle_reasons":[]},"wall_seconds":2.92104047,"compilers":["nvcc 13.0.88"]}"##,
        r##"{"kind":"bounds","group":"","bytes":67108864,"memcpy":{"n":14,"median":0.033857600390911104,"ci_low":0.03378879725933075,"ci_high":0.034083202481269836,"mean":0.03390834352799824,"stddev":0.00020286336557398172,"min":0.0335999995470047,"max":0.03433280289173126,"outliers":1},"copy_kernel":{"n":14,"median":0.03541119992733002,"ci_low":0.03520320057868957,"ci_high":0.03546239733695984,"mean":0.035362056536333904,"stddev":0.0001715040407535137,"min":0.035046398639678955,"max":0.03563840091228485,"outliers":0},"error":null,"fma":{"flops":17716740096.0,"summary":{"n":10,"median":0.27847999334335327,"ci_low":0.2784000039100647,"ci_high":0.27859199047088623,"mean":0.278492796421051,"stddev":0.0000553247010701711,"min":0.2784000039100647,"max":0.27859199047088623,"outliers":0},"sm_count":132}}"##,
        r##"{"kind":"bounds","group":"N=67108864","bytes":268435456,"memcpy":{"n":10,"median":0.17406559996306897,"ci_low":0.17373439925722778,"ci_high":0.17436800042632966,"mean":0.17402400008402766,"stddev":0.00020319548726850724,"min":0.17373439925722778,"max":0.17436800042632966,"outliers":0},"copy_kernel":{"n":10,"median":0.1815183992963284,"ci_low":0.1813536006724462,"ci_high":0.1816704000812024,"mean":0.18151135969907045,"stddev":0.00010879022382011059,"min":0.1813536006724462,"max":0.1816704000812024,"outliers":0},"error":null,"gpu":"GPU-c386abcf-f2cc-06cf-2d7f-a22822cd6e20","host":{"h2d_pinned":{"n":10,"median":4.899375915527344,"ci_low":4.892352104187012,"ci_high":4.9133758544921875,"mean":4.900131177902222,"stddev":0.006669329170458593,"min":4.892352104187012,"max":4.9133758544921875,"outliers":0},"d2h_pinned":{"n":64,"median":4.878495931625366,"ci_low":4.875040054321289,"ci_high":4.887199878692627,"mean":5.0879369750618935,"stddev":0.34599834158935217,"min":4.8594560623168945,"max":6.0531840324401855,"outliers":3},"bidirectional_pinned":{"n":235,"median":5.7008957862854,"ci_low":5.669663906097412,"ci_high":5.770592212677002,"mean":6.320049285888672,"stddev":1.3928623366971316,"min":5.306335926055908,"max":13.499199867248535,"outliers":41},"h2d_pageable":{"n":41,"median":34.558048248291016,"ci_low":34.14265441894531,"ci_high":36.21353530883789,"mean":36.882158046815455,"stddev":8.44925377785722,"min":30.352031707763672,"max":84.36739349365234,"outliers":3},"d2h_pageable":{"n":61,"median":23.08768081665039,"ci_low":22.928672790527344,"ci_high":23.55023956298828,"mean":24.841529752387377,"stddev":6.085809087969909,"min":19.15203285217285,"max":56.11260986328125,"outliers":4}}}"##,
        r##"{"kind":"compute","group":"","key":"cuBLAS SGEMM 4096x4096x4096 alpha 0.5 beta 3","math_mode":"CUBLAS_DEFAULT_MATH (FP32 without TF32 tensor cores)","flops":137438953472.0,"summary":{"n":10,"median":2.7010080814361572,"ci_low":2.699007987976074,"ci_high":2.7247040271759033,"mean":2.7063168048858643,"stddev":0.009852759401533134,"min":2.699007987976074,"max":2.7247040271759033,"outliers":1},"samples_ms":[2.722464084625244,2.70086407661438,2.699007987976074,2.700063943862915,2.7247040271759033,2.7018239498138428,2.7001919746398926,2.7011520862579346,2.700608015060425,2.7122879028320312],"error":null}"##,
        r##"{"kind":"profile","job_id":"smem[BLOCK=128,UNROLL=1] @ N=67108864","metrics":{"achieved_occupancy":46.38,"branch_efficiency":100.0,"dram_pct_of_peak":25.56,"dram_read_throughput":843499698371.2,"duration":318400.0,"gld_efficiency":100.0,"inst_per_warp":52.75,"stall_sync":9.585906927131383,"warp_execution_efficiency":97.24526066350711},"missing":[],"kernels":["reduce_smem"],"passes":4.0,"report_file":"profile-0.ncu-rep","error":null,"gpu":"GPU-0c959c36-cf0e-2588-fd81-c85f44fc0c4a","duration_from":"own session: gpu__time_duration alone, the median of 5 profiled runs after one unprofiled run of the job"}"##,
    ];

    /// A `run.json` as written (pretty-printed), from cold-suites-h100.
    const RUN_JSON: &str = r##"{
  "gpu_lab_version": "0.1.0",
  "command": "/work/main/target/release/gpu-lab run --suite cheats --suite-dir tests/gpu --verify-every 2 --out /tmp/gpu-lab-suites.OnF16j/runs --quiet",
  "started": "2026-11-22T19:13:47Z",
  "finished": "2026-11-22T19:13:50Z",
  "suite": "cheats",
  "suite_description": "A kernel right only on its first launch, a manifest passing the wrong arguments, and a correct C++ template beside them",
  "suite_source_hash": "4cbb6cfabe6a87b31f1cb87034f8ef85b48fb6c9b629a7e0f96618ec474fe1d6",
  "device": {
    "index": 0,
    "name": "NVIDIA H100 80GB HBM3",
    "uuid": "GPU-a3c968ac-0b7c-52d7-92ce-32b79c4dbdf2",
    "driver": "580.159.04",
    "cuda_driver": "13.0",
    "compute_capability": "9.0",
    "memory_total_bytes": 85520809984,
    "bus_width_bits": 5120,
    "max_sm_clock_mhz": 1980,
    "max_mem_clock_mhz": 2619,
    "peak_bandwidth_gbs": 3352.32
  },
  "nvml_error": null,
  "ncu_version": null,
  "clock_policy": "none",
  "timing": {
    "min_samples": 10,
    "max_samples": 300,
    "target_rel_ci": 0.005,
    "max_seconds": 1.5,
    "warmup_ms": 25.0,
    "min_sample_ms": 0.5,
    "cache": "warm",
    "rounds": 1,
    "verify_every": 2
  },
  "cache_state": "L2 warm (repeated launches over the same buffers)",
  "seed": 20261122,
  "metrics": [],
  "wall_seconds": 2.840134773
}"##;

    #[test]
    fn committed_results_lines_write_back_byte_for_byte() {
        for line in RESULTS_LINES {
            let record: Record = serde_json::from_str(line).unwrap();
            let back = serde_json::to_string(&record).unwrap();
            let (shape, numbers) = split_numbers(line);
            let (back_shape, back_numbers) = split_numbers(&back);
            assert_eq!(back_shape, shape);
            assert_eq!(back_numbers.len(), numbers.len());
            for (b, n) in back_numbers.iter().zip(&numbers) {
                assert!((b - n).abs() <= 4.0 * f64::EPSILON * n.abs(), "{b} for {n}");
            }
        }
    }

    /// The text with each float outside a string replaced by `#`, and the floats: serde_json's
    /// float parser can be a unit in the last place off, which changes a float's last digit when
    /// it is written back (`1.7862237940642374e-7` comes back as `...377e-7`), so floats are
    /// compared as values and everything else (names, order, integers, strings) byte for byte.
    fn split_numbers(text: &str) -> (String, Vec<f64>) {
        let (mut shape, mut numbers) = (String::new(), Vec::new());
        let (mut in_string, mut escaped) = (false, false);
        let mut chars = text.chars().peekable();
        while let Some(c) = chars.next() {
            if in_string {
                shape.push(c);
                (in_string, escaped) = (escaped || c != '"', !escaped && c == '\\');
            } else if c == '-' || c.is_ascii_digit() {
                let mut number = c.to_string();
                while let Some(&d) = chars.peek().filter(|d| "0123456789.eE+-".contains(**d)) {
                    number.push(d);
                    chars.next();
                }
                if number.contains(['.', 'e', 'E']) {
                    numbers.push(number.parse().unwrap());
                    shape.push('#');
                } else {
                    shape.push_str(&number);
                }
            } else {
                shape.push(c);
                in_string = c == '"';
            }
        }
        (shape, numbers)
    }

    #[test]
    fn a_committed_run_json_writes_back_byte_for_byte() {
        let info: RunInfo = serde_json::from_str(RUN_JSON).unwrap();
        assert_eq!(serde_json::to_string_pretty(&info).unwrap(), RUN_JSON);
    }

    fn job(id: &str, group: &str, samples: &[f64]) -> Record {
        Record::Job(JobRecord {
            key: crate::records::job::JobKey {
                id: id.into(),
                group: group.into(),
                ..Default::default()
            },
            samples_ms: samples.to_vec(),
            ..Default::default()
        })
    }

    #[test]
    fn a_job_recorded_again_replaces_its_record_and_moves_to_the_end() {
        let records = vec![
            job("a", "g1", &[1.0]),
            job("b", "g2", &[2.0]),
            job("c", "g1", &[3.0]),
            job("a", "g1", &[4.0]),
        ];
        let run = RunData::from_records(RunInfo::default(), records);
        let order: Vec<(&str, f64)> = run.jobs.iter().map(|j| (j.id(), j.samples_ms[0])).collect();
        assert_eq!(order, [("b", 2.0), ("c", 3.0), ("a", 4.0)]);
        assert_eq!(run.groups(), ["g2", "g1"]);
    }

    #[test]
    fn bounds_are_kept_per_group_and_per_gpu_the_last_one_winning() {
        let bounds = |gpu: Option<&str>, bytes: u64| {
            Record::Bounds(BoundsRecord {
                group: "g".into(),
                bytes,
                memcpy: None,
                copy_kernel: None,
                error: None,
                fma: None,
                gpu: gpu.map(String::from),
                host: None,
                roofs: Vec::new(),
            })
        };
        let run = RunData::from_records(
            RunInfo::default(),
            vec![
                bounds(Some("GPU-a"), 1),
                bounds(Some("GPU-b"), 2),
                bounds(None, 3),
            ],
        );
        assert_eq!(run.bounds["g"].bytes, 3);
        assert_eq!(
            run.gpu_bounds[&("g".to_string(), "GPU-a".to_string())].bytes,
            1
        );
        assert_eq!(
            run.gpu_bounds[&("g".to_string(), "GPU-b".to_string())].bytes,
            2
        );
    }
}
