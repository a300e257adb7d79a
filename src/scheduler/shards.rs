//! How a run's jobs are spread: over the shards of `--shard I/N`, balanced by each job's expected cost, and over a host's GPUs, pooled by model.

use crate::records::ShardInfo;
use crate::suite::JobSpec;

use super::planning::SuitePlan;

/// One shard of a plan: `index` of `count`, counted from 0.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shard {
    pub index: usize,
    pub count: usize,
}

/// The most shards a plan may have (`--shard I/N`, `plan --shards N`): far more than any
/// Slurm array or indexed Job runs at once, and small enough that a shard table never grows
/// with a number typed on the command line.
pub const MAX_SHARDS: usize = 10_000;

impl Shard {
    /// `I/N` with 0 <= I < N <= `MAX_SHARDS`, each a plain decimal number.
    pub fn parse(text: &str) -> Result<Shard, String> {
        let (i, n) = text.split_once('/').ok_or_else(|| format!("`{text}` is not a shard: write I/N, for example 0/4 (shards count from 0, as SLURM_ARRAY_TASK_ID does)"))?;
        let count = decimal(n).ok_or_else(|| {
            format!("shard count `{n}` is not a whole number from 1 to {MAX_SHARDS}")
        })?;
        if count == 0 || count > MAX_SHARDS {
            return Err(format!(
                "shard count {count} is out of range: a plan has 1 to {MAX_SHARDS} shards"
            ));
        }
        let index = decimal(i).ok_or_else(|| {
            format!(
                "shard index `{i}` is not a whole number from 0 to {}",
                count - 1
            )
        })?;
        if index >= count {
            return Err(format!(
                "shard {index}/{count}: the index must be below the count, 0 to {} (0/{count} to {}/{count}; shards count from 0, as SLURM_ARRAY_TASK_ID does)",
                count - 1,
                count - 1
            ));
        }
        Ok(Shard { index, count })
    }
}

/// A decimal number of ASCII digits, blanks around it allowed; no sign, and no more than 18
/// digits (no shard needs them), so a long number is refused rather than wrapped or saturated.
fn decimal(text: &str) -> Option<usize> {
    let digits = text.trim();
    if digits.is_empty() || digits.len() > 18 || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok()
}

/// What a job is expected to cost, for balancing shards: its declared bytes and flops (a memory
/// pass or a multiply-add is cheap; the child process and its checks are not, hence the constant).
pub fn expected_cost(job: &JobSpec) -> f64 {
    1e9 + job.work.bytes.unwrap_or(0.0).max(0.0) + job.work.flops.unwrap_or(0.0).max(0.0) / 16.0
}

/// Which shard each job goes to: the most expensive first, each to the shard with the least
/// cost so far (ties by suite and job id, so the split depends only on the jobs, not their order;
/// among shards of equal cost, the lowest index). Every job costs more than nothing, so only the
/// first `min(count, jobs)` shards ever get one: the others are never allocated.
pub fn shard_of(jobs: &[&JobSpec], count: usize) -> Vec<usize> {
    use std::cmp::Reverse;
    use std::collections::BinaryHeap;
    let mut order: Vec<usize> = (0..jobs.len()).collect();
    order.sort_by(|&a, &b| {
        expected_cost(jobs[b])
            .total_cmp(&expected_cost(jobs[a]))
            .then_with(|| (&jobs[a].suite, jobs[a].id()).cmp(&(&jobs[b].suite, jobs[b].id())))
    });
    let used = count.min(jobs.len()).max(1);
    let mut lightest: BinaryHeap<Reverse<(Load, usize)>> =
        (0..used).map(|s| Reverse((Load(0.0), s))).collect();
    let mut shard = vec![0usize; jobs.len()];
    for j in order {
        let Some(Reverse((Load(load), s))) = lightest.pop() else {
            break;
        };
        shard[j] = s;
        lightest.push(Reverse((Load(load + expected_cost(jobs[j])), s)));
    }
    shard
}

/// A shard's cost so far, ordered by `f64::total_cmp` (costs are finite and positive).
#[derive(Debug, Clone, Copy, PartialEq)]
struct Load(f64);

impl Eq for Load {}

impl PartialOrd for Load {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Load {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.0.total_cmp(&other.0)
    }
}

/// The GPUs of a host grouped by model, in the order first seen (`models[i]` is GPU i's model):
/// GPUs of one model share a run's jobs; each model runs every job.
pub fn pools_by_model(models: &[String]) -> Vec<Vec<usize>> {
    let mut pools: Vec<(&String, Vec<usize>)> = Vec::new();
    for (i, m) in models.iter().enumerate() {
        match pools.iter_mut().find(|(name, _)| *name == m) {
            Some((_, pool)) => pool.push(i),
            None => pools.push((m, vec![i])),
        }
    }
    pools.into_iter().map(|(_, pool)| pool).collect()
}

/// Keeps in each plan only the jobs of `shard`; returns what the runs record of it (the plan's
/// identity: a hash over every job of every plan, before the split).
pub fn keep_shard(plans: &mut [SuitePlan], shard: Shard) -> ShardInfo {
    use crate::records::{plan_hash, plan_job_key};
    let all: Vec<&JobSpec> = plans.iter().flat_map(|p| p.jobs.iter()).collect();
    let keys: Vec<String> = plans
        .iter()
        .flat_map(|p| {
            p.jobs
                .iter()
                .map(move |j| plan_job_key(&p.suite.source_hash, &j.suite, j.id()))
        })
        .collect();
    let assigned = shard_of(&all, shard.count);
    let mut owned: Vec<String> = keys
        .iter()
        .zip(&assigned)
        .filter(|(_, s)| **s == shard.index)
        .map(|(k, _)| k.clone())
        .collect();
    owned.sort();
    let info = ShardInfo {
        index: shard.index,
        count: shard.count,
        plan: plan_hash(&keys),
        run_id: random_id(),
        jobs: owned,
    };
    let mut keep = assigned.iter().map(|&s| s == shard.index);
    for plan in plans.iter_mut() {
        plan.jobs = std::mem::take(&mut plan.jobs)
            .into_iter()
            .filter(|_| keep.next().unwrap_or(false))
            .collect();
    }
    info
}

/// A random id (128 bits from the process's random hasher keys, the time and the process id):
/// unique per shard invocation, so that a copied shard is seen as a copy.
fn random_id() -> String {
    use sha2::{Digest, Sha256};
    use std::hash::{BuildHasher, Hasher};
    let mut h = Sha256::new();
    for _ in 0..2 {
        let mut r = std::collections::hash_map::RandomState::new().build_hasher();
        r.write_u8(0);
        h.update(r.finish().to_le_bytes());
    }
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    h.update(now.to_le_bytes());
    h.update(std::process::id().to_le_bytes());
    h.finalize()[..16]
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::Catalog;
    use crate::suite::Suite;

    fn transpose() -> Suite {
        let manifest =
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("kernels/transpose/suite.toml");
        crate::suite::load(&manifest).unwrap()
    }

    #[test]
    fn a_shard_is_an_index_below_its_count() {
        assert_eq!(Shard::parse("1/4"), Ok(Shard { index: 1, count: 4 }));
        assert_eq!(Shard::parse(" 0 / 2 "), Ok(Shard { index: 0, count: 2 }));
        let too_far = Shard::parse("4/4").unwrap_err();
        assert!(too_far.contains("0/4 to 3/4"), "{too_far}");
        assert!(Shard::parse("3").unwrap_err().contains("write I/N"));
        assert!(Shard::parse("a/2").unwrap_err().contains("shard index `a`"));
    }

    #[test]
    fn a_shard_count_of_zero_names_the_allowed_range_not_the_refused_value() {
        let why = Shard::parse("0/0").unwrap_err();
        assert!(why.contains("1 to 10000"), "{why}");
        assert!(!why.contains("0/0 to"), "{why}");
    }

    #[test]
    fn a_huge_shard_count_is_refused_before_anything_is_allocated() {
        for text in [
            "0/18446744073709551615",
            "0/1000000000",
            "0/10001",
            "0/99999999999999999999999",
        ] {
            let why = Shard::parse(text).unwrap_err();
            assert!(why.contains("1 to 10000"), "{text}: {why}");
        }
        assert_eq!(
            Shard::parse("9999/10000"),
            Ok(Shard {
                index: 9999,
                count: 10000
            })
        );
    }

    #[test]
    fn a_shard_index_past_the_count_is_refused_not_wrapped() {
        for text in [
            "4/4",
            "5/4",
            "18446744073709551615/4",
            "18446744073709551616/4",
            "+1/4",
            "1/+4",
            "-1/4",
            "0x1/4",
            "1.0/4",
        ] {
            assert!(Shard::parse(text).is_err(), "{text}");
        }
        let why = Shard::parse("5/4").unwrap_err();
        assert!(why.contains("shard 5/4") && why.contains("0 to 3"), "{why}");
    }

    #[test]
    fn more_shards_than_jobs_leaves_the_extra_shards_empty_and_allocates_only_the_used_ones() {
        let suite = transpose();
        let jobs: Vec<&JobSpec> = suite.jobs.iter().take(3).collect();
        let few = shard_of(&jobs, 3);
        let many = shard_of(&jobs, usize::MAX);
        assert_eq!(few, many, "shards past the job count change nothing");
        let mut sorted = many.clone();
        sorted.sort();
        assert_eq!(
            sorted,
            [0, 1, 2],
            "one job per shard, the first shards first"
        );
    }

    #[test]
    fn the_costliest_job_goes_first_to_the_lightest_shard_whatever_the_jobs_order() {
        let suite = transpose();
        let mut jobs: Vec<JobSpec> = suite.jobs.iter().take(3).cloned().collect();
        assert_eq!(jobs.len(), 3, "transpose has three variants or more");
        for (job, bytes) in jobs.iter_mut().zip([4e9, 1e9, 2e9]) {
            job.work.bytes = Some(bytes);
            job.work.flops = None;
        }
        let refs: Vec<&JobSpec> = jobs.iter().collect();
        // Costs 5e9, 2e9 and 3e9: the first alone, the other two together.
        assert_eq!(shard_of(&refs, 2), [0, 1, 1]);
        let reversed: Vec<&JobSpec> = refs.iter().rev().copied().collect();
        assert_eq!(shard_of(&reversed, 2), [1, 1, 0]);
        assert_eq!(shard_of(&refs, 1), [0, 0, 0]);
    }

    #[test]
    fn the_shards_of_a_plan_split_its_jobs_and_name_the_same_plan() {
        let suites = [transpose()];
        let plans =
            super::super::planning::plan(&suites, &[], None, &Catalog::builtin().unwrap()).unwrap();
        let mut kept: Vec<String> = Vec::new();
        let mut hashes = Vec::new();
        for index in 0..3 {
            let mut mine = plans.clone();
            let info = keep_shard(&mut mine, Shard { index, count: 3 });
            assert_eq!((info.index, info.count), (index, 3));
            hashes.push(info.plan);
            kept.extend(mine[0].jobs.iter().map(|j| j.id().to_string()));
        }
        let mut all: Vec<String> = plans[0].jobs.iter().map(|j| j.id().to_string()).collect();
        all.sort();
        kept.sort();
        assert_eq!(kept, all, "every job in exactly one shard");
        assert!(hashes.iter().all(|h| *h == hashes[0] && !h.is_empty()));
    }

    #[test]
    fn gpus_are_pooled_by_model_in_the_order_first_seen() {
        let models: Vec<String> = ["H100", "H200", "H100", "H200", "L4"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        assert_eq!(
            pools_by_model(&models),
            vec![vec![0, 2], vec![1, 3], vec![4]]
        );
        assert!(pools_by_model(&[]).is_empty());
    }
}
