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

impl Shard {
    /// `I/N` with 0 <= I < N.
    pub fn parse(text: &str) -> Result<Shard, String> {
        let (i, n) = text.split_once('/').ok_or_else(|| format!("`{text}` is not a shard: write I/N, for example 0/4 (shards count from 0, as SLURM_ARRAY_TASK_ID does)"))?;
        let (index, count): (usize, usize) = (
            i.trim()
                .parse()
                .map_err(|_| format!("shard index `{i}` is not a whole number"))?,
            n.trim()
                .parse()
                .map_err(|_| format!("shard count `{n}` is not a whole number"))?,
        );
        if count == 0 || index >= count {
            return Err(format!(
                "shard {index}/{count}: the index must be below the count (0/{count} to {}/{count})",
                count.max(1) - 1
            ));
        }
        Ok(Shard { index, count })
    }
}

/// What a job is expected to cost, for balancing shards: its declared bytes and flops (a memory
/// pass or a multiply-add is cheap; the child process and its checks are not, hence the constant).
pub fn expected_cost(job: &JobSpec) -> f64 {
    1e9 + job.work.bytes.unwrap_or(0.0).max(0.0) + job.work.flops.unwrap_or(0.0).max(0.0) / 16.0
}

/// Which shard each job goes to: the most expensive first, each to the shard with the least
/// cost so far (ties by suite and job id, so the split depends only on the jobs, not their order).
pub fn shard_of(jobs: &[&JobSpec], count: usize) -> Vec<usize> {
    let mut order: Vec<usize> = (0..jobs.len()).collect();
    order.sort_by(|&a, &b| {
        expected_cost(jobs[b])
            .total_cmp(&expected_cost(jobs[a]))
            .then_with(|| (&jobs[a].suite, jobs[a].id()).cmp(&(&jobs[b].suite, jobs[b].id())))
    });
    let mut load = vec![0.0f64; count.max(1)];
    let mut shard = vec![0usize; jobs.len()];
    for j in order {
        let lightest = (0..load.len())
            .min_by(|&a, &b| load[a].total_cmp(&load[b]))
            .unwrap_or(0);
        shard[j] = lightest;
        load[lightest] += expected_cost(jobs[j]);
    }
    shard
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
    use sha2::{Digest, Sha256};
    let all: Vec<&JobSpec> = plans.iter().flat_map(|p| p.jobs.iter()).collect();
    let mut ids: Vec<String> = plans
        .iter()
        .flat_map(|p| {
            p.jobs
                .iter()
                .map(move |j| format!("{}\u{0}{}\u{0}{}", p.suite.source_hash, j.suite, j.id()))
        })
        .collect();
    ids.sort();
    let mut h = Sha256::new();
    for id in &ids {
        h.update(id.as_bytes());
        h.update([1u8]);
    }
    let info = ShardInfo {
        index: shard.index,
        count: shard.count,
        plan: crate::suite::sources::hex(&h.finalize()),
    };
    let assigned = shard_of(&all, shard.count);
    let mut keep = assigned.iter().map(|&s| s == shard.index);
    for plan in plans.iter_mut() {
        plan.jobs = std::mem::take(&mut plan.jobs)
            .into_iter()
            .filter(|_| keep.next().unwrap_or(false))
            .collect();
    }
    info
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
        assert!(Shard::parse("0/0").is_err());
        assert!(Shard::parse("3").unwrap_err().contains("write I/N"));
        assert!(Shard::parse("a/2").unwrap_err().contains("shard index `a`"));
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
