//! What the in-process pass reports, and the rules around it (pure): which counters CUPTI can collect, and each job's ranges turned into the per-launch rows ncu's pass gives, so that the same mapping and formulas evaluate both.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::launch_stats::{self, LaunchFacts};
use super::session::{Collection, RangeValues};
use crate::parse::KernelRow;
use crate::suite::JobSpec;

/// What the `__cupti` child writes: the configuration's facts and one entry per job, in order.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CuptiPass {
    pub chip: String,
    /// The counters collected, in the order of every range's values.
    pub counters: Vec<String>,
    /// Passes the configuration needs (Profiler Host API).
    pub passes: usize,
    pub jobs: Vec<CuptiJob>,
    /// The set's counters that gpu-lab computes from each launch's facts (`launch_stats`), not
    /// collected: filled by the parent (absent from passes made before).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub computed: Vec<String>,
    /// Where the child's time went outside the jobs (absent from passes made before).
    #[serde(default)]
    pub phases: PassPhases,
}

/// The pass's own costs: the child's start as its parent saw it, loading CUPTI, the session.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct PassPhases {
    /// Loading libcupti and resolving its symbols.
    pub load_cupti_s: f64,
    /// Profiler and host initialisation, counter availability, configuration image, pass count.
    pub session_s: f64,
    /// Every job: module, buffers, the unprofiled run, the collection.
    pub jobs_s: f64,
    /// The pass from request to answer as the parent timed it (in a `__cupti` child of its own,
    /// its process and CUDA context start too; in the serving child, reading the specs and
    /// writing this file): filled by the parent.
    pub child_wall_s: f64,
    /// At most this many jobs shared a pass (`GPU_LAB_CUPTI_JOBS_PER_PASS`); None: no cap.
    pub jobs_per_pass: Option<usize>,
}

/// One job's costs before its collection.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct JobPhases {
    /// Loading (or building) the job's module.
    pub load_s: f64,
    /// Its buffers: kept from the job before, or made and filled.
    pub buffers_s: f64,
    /// The unprofiled run before the passes (inputs put back, launches).
    pub first_run_s: f64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CuptiJob {
    pub job_id: String,
    /// The job's ranges (one a kernel) and what the collection cost, or why it failed.
    pub collected: Result<Collection, String>,
    #[serde(default)]
    pub phases: JobPhases,
    /// Each launch's facts, from which gpu-lab computes ncu's launch statistics (absent from
    /// passes made before; `launches_error` says why where the child could not read them).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub launches: Vec<LaunchFacts>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub launches_error: Option<String>,
}

/// Splits the collection of jobs that shared their passes into one collection a job. Each job's
/// part of a pass is the L2 flush before it (a kernel, so a range) and then its own kernels:
/// `launches[i]` ranges, in launch order. CUPTI names auto ranges by their index ("0", "1", …,
/// H200, 2026-11-26), not by kernel, so the split is by position; a dropped range or a count
/// that does not add up (a copy counted as a range, a kernel missing) is an error, never a
/// shifted row.
pub fn split_batch(batch: &Collection, launches: &[usize]) -> Result<Vec<Collection>, String> {
    if batch.dropped_ranges > 0 {
        return Err(format!("CUPTI dropped {} ranges", batch.dropped_ranges));
    }
    let expected: usize = launches.iter().map(|n| n + 1).sum();
    if batch.ranges.len() != expected {
        return Err(format!(
            "CUPTI saw {} kernels where the jobs' flushes and launches are {expected}",
            batch.ranges.len()
        ));
    }
    let mut out = Vec::with_capacity(launches.len());
    let mut ranges = batch.ranges.iter();
    for &n in launches {
        ranges.next(); // the L2 flush before the job
        let mut phases = batch.phases.clone();
        phases.jobs_in_pass = launches.len();
        out.push(Collection {
            ranges: ranges.by_ref().take(n).cloned().collect(),
            phases,
            ..batch.clone()
        });
    }
    Ok(out)
}

/// Counters that only ncu gives: the Profiler Host API has no metric of these names, and gpu-lab
/// does not compute them (`launch_stats::computed` names those it does). Left: the launch
/// statistics no metric uses (barriers, stack size, stream, cache config, function PCs), the
/// `device__attribute_*` list, ncu's own `profiler__*` and its PM sampling.
pub fn ncu_only(counter: &str) -> bool {
    !launch_stats::computed(counter)
        && (["launch__", "device__", "profiler__", "pmsampling:"]
            .iter()
            .any(|p| counter.starts_with(p))
            || counter.starts_with("sm__maximum_warps_"))
}

/// The counters of a set that gpu-lab computes in ncu's place (`launch_stats`), and the rest,
/// which the `__cupti` child collects.
pub fn split_computed(counters: &[String]) -> (Vec<String>, Vec<String>) {
    counters
        .iter()
        .cloned()
        .partition(|c| launch_stats::computed(c))
}

/// Adds the values gpu-lab computes in ncu's place (`computed`: the names the set needs) to each
/// launch's row, saying so in the row's text. A launch whose facts the child could not read, or a
/// value that needs what is missing (the carveout), gets no number: its metrics are missing, the
/// reason in the row's text, never a guess.
pub fn add_launch_stats(rows: &mut [KernelRow], computed: &[String], job: &CuptiJob) {
    if computed.is_empty() {
        return;
    }
    for (i, row) in rows.iter_mut().enumerate() {
        row.text
            .insert(COMPUTED_BY.to_string(), launch_stats::COMPUTED_NOTE.into());
        let Some(facts) = job.launches.get(i) else {
            let why = job
                .launches_error
                .clone()
                .unwrap_or_else(|| format!("the CUPTI pass has no launch facts for launch {i}"));
            row.text.insert(NOT_COMPUTED.to_string(), why);
            continue;
        };
        let values = launch_stats::ncu_values(facts);
        for name in computed {
            if let Some(v) = values.get(name) {
                row.values.insert(name.clone(), *v);
            }
        }
        if let Some(why) = &facts.carveout_error {
            row.text.insert(
                NOT_COMPUTED.to_string(),
                format!("no carveout, so no shared-memory limit or theoretical occupancy: {why}"),
            );
        }
    }
}

/// The row text that says which values gpu-lab computed.
pub const COMPUTED_BY: &str = "gpu_lab__computed";
/// The row text that says why some could not be.
pub const NOT_COMPUTED: &str = "gpu_lab__not_computed";

/// Why a set of counters must go to ncu instead, or None where CUPTI can collect them all.
pub fn why_not_cupti(counters: &[String]) -> Option<String> {
    let own: Vec<&str> = counters
        .iter()
        .map(String::as_str)
        .filter(|c| ncu_only(c))
        .collect();
    (!own.is_empty()).then(|| {
        format!(
            "{} {} ncu's own, which CUPTI does not collect and gpu-lab does not compute",
            own.join(", "),
            if own.len() == 1 { "is" } else { "are" }
        )
    })
}

/// One job's ranges as the rows ncu would have given: one per launch, in launch order, its
/// values keyed by counter name, with the passes in `profiler__replayer_passes` as ncu does. A
/// range count other than the job's launches is an error, not a shifted guess.
pub fn job_rows(
    job: &JobSpec,
    counters: &[String],
    collection: &Collection,
    chip: &str,
) -> Result<Vec<KernelRow>, String> {
    if collection.dropped_ranges > 0 {
        return Err(format!(
            "CUPTI dropped {} ranges (more kernels than the job declares launches)",
            collection.dropped_ranges
        ));
    }
    if collection.ranges.len() != job.launches.len() {
        return Err(format!(
            "CUPTI saw {} kernels where the job launches {}",
            collection.ranges.len(),
            job.launches.len()
        ));
    }
    let dims = |d: &[u32; 3]| format!("({}, {}, {})", d[0], d[1], d[2]);
    collection
        .ranges
        .iter()
        .zip(&job.launches)
        .enumerate()
        .map(|(i, (range, launch))| {
            let values = range_values(counters, range)?;
            let mut values: BTreeMap<String, f64> = values;
            values.insert(
                "profiler__replayer_passes".to_string(),
                collection.passes as f64,
            );
            Ok(KernelRow {
                id: i as u64,
                process_id: String::new(),
                // The range's name is the kernel's symbol; the launch's name is what the job
                // calls it, and what the mapping to jobs compares.
                kernel_name: launch.kernel.clone(),
                block_size: dims(&launch.block),
                grid_size: dims(&launch.grid),
                device: chip.to_string(),
                cc: String::new(),
                values,
                text: BTreeMap::from([("cupti__range_name".to_string(), range.name.clone())]),
            })
        })
        .collect()
}

fn range_values(counters: &[String], range: &RangeValues) -> Result<BTreeMap<String, f64>, String> {
    if range.values.len() != counters.len() {
        return Err(format!(
            "range `{}` has {} values for {} counters",
            range.name,
            range.values.len(),
            counters.len()
        ));
    }
    Ok(counters
        .iter()
        .cloned()
        .zip(range.values.iter().copied())
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn range(name: &str, v: f64) -> RangeValues {
        RangeValues {
            name: name.into(),
            values: vec![v],
        }
    }

    fn batch(names: &[&str]) -> Collection {
        Collection {
            ranges: names
                .iter()
                .enumerate()
                .map(|(i, n)| range(n, i as f64))
                .collect(),
            passes: 2,
            dropped_ranges: 0,
            seconds: 0.5,
            phases: Default::default(),
        }
    }

    #[test]
    fn a_shared_pass_splits_into_each_jobs_kernels_without_the_flushes() {
        let b = batch(&["0", "1", "2", "3", "4"]);
        let jobs = split_batch(&b, &[1, 2]).unwrap();
        assert_eq!(jobs.len(), 2);
        assert_eq!(jobs[0].ranges, vec![range("1", 1.0)]);
        assert_eq!(jobs[1].ranges, vec![range("3", 3.0), range("4", 4.0)]);
        assert!(
            jobs.iter()
                .all(|j| j.passes == 2 && j.phases.jobs_in_pass == 2)
        );
    }

    #[test]
    fn a_shared_pass_that_does_not_add_up_is_an_error_not_a_shift() {
        let short = split_batch(&batch(&["0", "1", "2"]), &[1, 1]).unwrap_err();
        assert!(
            short.contains("CUPTI saw 3 kernels where the jobs' flushes and launches are 4"),
            "{short}"
        );
        let long = split_batch(&batch(&["0", "1", "2", "3", "4"]), &[1, 1]).unwrap_err();
        assert!(long.contains("CUPTI saw 5 kernels"), "{long}");
        let mut dropped = batch(&["0", "1"]);
        dropped.dropped_ranges = 1;
        assert!(
            split_batch(&dropped, &[1])
                .unwrap_err()
                .contains("dropped 1")
        );
    }
}
