//! What a run was measured on and with, read from its records: its GPUs, the clocks NVML saw, and
//! the `Fingerprint` that decides whether two runs compare.

use serde::{Deserialize, Serialize};

use super::environment::Snapshot;
use super::run_data::RunData;

impl RunData {
    /// The UUIDs of the GPUs its jobs ran on: every GPU of a `--gpus` run, else its one device.
    pub fn gpu_uuids(&self) -> Vec<&str> {
        match self.info.gpus.as_slice() {
            [] => self.info.device.iter().map(|d| d.uuid.as_str()).collect(),
            gpus => gpus.iter().map(|g| g.uuid.as_str()).collect(),
        }
    }

    /// Range of the SM and memory clocks NVML saw before and after the jobs, and throttled snapshots.
    pub fn clocks_seen(&self) -> String {
        let snaps: Vec<&Snapshot> = self
            .jobs
            .iter()
            .flat_map(|j| [&j.nvml_before, &j.nvml_after])
            .flatten()
            .collect();
        let range = |f: &dyn Fn(&Snapshot) -> Option<u32>| {
            let v: Vec<u32> = snaps.iter().filter_map(|s| f(s)).collect();
            match (v.iter().min(), v.iter().max()) {
                (Some(a), Some(b)) if a == b => format!("{a} MHz"),
                (Some(a), Some(b)) => format!("{a}–{b} MHz"),
                _ => "not read".into(),
            }
        };
        let throttled = snaps.iter().filter(|s| s.is_throttled()).count();
        format!(
            "SM {}, memory {}{}",
            range(&|s| s.sm_clock_mhz),
            range(&|s| s.mem_clock_mhz),
            if throttled > 0 {
                format!("; **{throttled} snapshots throttled**")
            } else {
                String::new()
            }
        )
    }
}

/// What a run was measured on and with: the facts that decide whether two runs compare.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Fingerprint {
    pub run: String,
    pub suite: String,
    pub gpu: Option<String>,
    pub uuid: Option<String>,
    pub driver: Option<String>,
    pub cuda: Option<String>,
    pub ncu: Option<String>,
    pub clocks_seen: String,
    pub clock_policy: String,
    pub suite_source_hash: String,
    pub started: String,
    pub seed: u64,
}

impl Fingerprint {
    pub fn of(run_label: &str, run: &RunData) -> Fingerprint {
        let d = run.info.device.as_ref();
        Fingerprint {
            run: run_label.to_string(),
            suite: run.info.suite.clone(),
            gpu: d.map(|d| d.name.clone()),
            // A run over several GPUs (`--gpus`) names each of them: its jobs ran on all.
            uuid: Some(run.gpu_uuids().join(", ")).filter(|u| !u.is_empty()),
            driver: d.map(|d| d.driver.clone()),
            cuda: d.map(|d| d.cuda_driver.clone()),
            ncu: run.info.ncu_version.clone(),
            clocks_seen: run.clocks_seen(),
            clock_policy: run.info.clock_policy.clone(),
            suite_source_hash: run.info.suite_source_hash.clone(),
            started: run.info.started.clone(),
            seed: run.info.seed,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::records::environment::DeviceInfo;
    use crate::records::job::JobRecord;

    fn seen(sm: u32, mem: u32, throttle: &[&str]) -> Option<Snapshot> {
        Some(Snapshot {
            sm_clock_mhz: Some(sm),
            mem_clock_mhz: Some(mem),
            throttle_reasons: throttle.iter().map(|r| r.to_string()).collect(),
            ..Default::default()
        })
    }

    #[test]
    fn clocks_seen_gives_the_range_and_counts_throttled_snapshots() {
        let mut run = RunData::default();
        assert_eq!(run.clocks_seen(), "SM not read, memory not read");
        run.jobs.push(JobRecord {
            nvml_before: seen(1980, 2619, &[]),
            nvml_after: seen(1755, 2619, &["SW_THERMAL_SLOWDOWN"]),
            ..Default::default()
        });
        assert_eq!(
            run.clocks_seen(),
            "SM 1755–1980 MHz, memory 2619 MHz; **1 snapshots throttled**"
        );
    }

    #[test]
    fn a_run_over_several_gpus_names_each_of_them() {
        let device = |uuid: &str| DeviceInfo {
            uuid: uuid.into(),
            ..Default::default()
        };
        let mut run = RunData::default();
        assert!(run.gpu_uuids().is_empty());
        run.info.device = Some(device("GPU-a"));
        assert_eq!(run.gpu_uuids(), ["GPU-a"]);
        run.info.gpus = vec![device("GPU-a"), device("GPU-b")];
        assert_eq!(run.gpu_uuids(), ["GPU-a", "GPU-b"]);
        assert_eq!(
            Fingerprint::of("r", &run).uuid.as_deref(),
            Some("GPU-a, GPU-b")
        );
    }
}
