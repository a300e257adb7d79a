//! Whether shard runs may be merged into one run: the rule `gpu-lab merge` applies (pure).
//!
//! A shard's run.json is outside text: its count and index are bounded before anything is
//! allocated by them, and its identity (a random run id, the set of jobs it owns) is compared with
//! the others', so that a copy of one shard relabelled as another is refused.

use std::collections::HashSet;

#[cfg(test)]
use super::environment::DeviceInfo;
use super::run_info::{RunInfo, ShardInfo, plan_hash};

/// The most shards a plan may have (as `--shard` allows): a tampered count allocates no more.
pub const MAX_SHARD_COUNT: usize = 10_000;

/// Why shard runs cannot be merged into one run, if they cannot (pure): they must be shards of
/// one plan, each once, all of them, of one suite source, GPU model, seed, timing configuration
/// and cache state, all mock or none, each with its own identity and its own jobs.
pub fn merge_refusal(runs: &[(String, RunInfo)]) -> Option<String> {
    let (first_name, first) = runs.first()?;
    let shard = match valid_shard(first_name, first) {
        Ok(s) => s,
        Err(why) => return Some(why),
    };
    let mut seen = vec![false; shard.count];
    let (mut ids, mut jobs) = (HashSet::new(), HashSet::new());
    for (name, info) in runs {
        let s = match valid_shard(name, info) {
            Ok(s) => s,
            Err(why) => return Some(why),
        };
        if s.plan != shard.plan || s.count != shard.count {
            return Some(format!(
                "{name} is shard {}/{} of another plan than {first_name} ({}/{}): the suites, variants or suite sources differ",
                s.index, s.count, shard.index, shard.count
            ));
        }
        if let Some(why) = setting_refusal(name, info, first_name, first) {
            return Some(why);
        }
        if std::mem::replace(&mut seen[s.index], true) {
            return Some(format!(
                "shard {}/{} is given twice ({name})",
                s.index, s.count
            ));
        }
        if !ids.insert(s.run_id.as_str()) {
            return Some(format!(
                "{name} is a copy of another shard run given (run id {} twice): a shard relabelled as another measured none of that shard's jobs",
                s.run_id
            ));
        }
        if let Some(j) = s.jobs.iter().find(|j| !jobs.insert(j.as_str())) {
            return Some(format!(
                "{name} (shard {}/{}) claims job `{}`, which another shard given owns: a shard relabelled as another is not that shard",
                s.index,
                s.count,
                j.rsplit('\u{0}').next().unwrap_or(j).escape_debug()
            ));
        }
    }
    let missing: Vec<String> = seen
        .iter()
        .enumerate()
        .filter(|(_, s)| !**s)
        .map(|(i, _)| format!("{i}/{}", shard.count))
        .take(20)
        .collect();
    if !missing.is_empty() {
        return Some(format!(
            "shard(s) {} of the plan are missing: a merged run would silently lack their jobs",
            missing.join(", ")
        ));
    }
    (plan_hash(runs.iter().flat_map(|(_, i)| i.shard.iter().flat_map(|s| &s.jobs))) != shard.plan)
        .then(|| "the shards' jobs together are not the plan's jobs (their hash is not the plan's): a shard's run.json was edited".to_string())
}

/// The run's shard, bounded: a count from 1 to MAX_SHARD_COUNT, an index below it, an identity.
fn valid_shard<'a>(name: &str, info: &'a RunInfo) -> Result<&'a ShardInfo, String> {
    let Some(s) = &info.shard else {
        return Err(format!(
            "{name} is not a shard (it was not run with --shard I/N)"
        ));
    };
    if s.count == 0 || s.count > MAX_SHARD_COUNT || s.index >= s.count {
        return Err(format!(
            "{name} says it is shard {}/{}, which no plan has (a count from 1 to {MAX_SHARD_COUNT}, an index below it): its run.json was edited or damaged",
            s.index, s.count
        ));
    }
    // An empty shard (more shards than jobs) owns no job, but still has its run id.
    if s.run_id.is_empty() {
        return Err(format!(
            "{name} carries no shard identity (a run id): it was made by an older gpu-lab, or its run.json was edited; run the shard again"
        ));
    }
    Ok(s)
}

/// Why two shard runs' settings do not belong in one run: suite, source, GPU model, seed,
/// timing configuration (rounds, samples, cache), clock policy, mock.
fn setting_refusal(
    name: &str,
    info: &RunInfo,
    first_name: &str,
    first: &RunInfo,
) -> Option<String> {
    if info.suite != first.suite {
        return Some(format!(
            "{name} holds suite `{}`, {first_name} suite `{}`: merge the shards of one suite at a time",
            info.suite.escape_debug(),
            first.suite.escape_debug()
        ));
    }
    if info.suite_source_hash != first.suite_source_hash {
        return Some(format!(
            "{name} measured another version of suite `{}` than {first_name} (suite source hash differs)",
            info.suite.escape_debug()
        ));
    }
    if info.timing.cache != first.timing.cache {
        return Some(format!(
            "{name} was timed with the L2 {:?} and {first_name} with it {:?}: their times do not belong in one report",
            info.timing.cache, first.timing.cache
        ));
    }
    if info.mock != first.mock {
        return Some(format!(
            "{name} and {first_name}: one is a MOCK run and the other measured"
        ));
    }
    let model = |i: &RunInfo| i.device.as_ref().map(|d| d.name.clone());
    if model(info) != model(first) {
        return Some(format!(
            "{name} ran on {} and {first_name} on {}: one run holds one GPU model's times; merge each model's shards on their own",
            model(info)
                .unwrap_or_else(|| "an unknown GPU".into())
                .escape_debug(),
            model(first)
                .unwrap_or_else(|| "an unknown GPU".into())
                .escape_debug()
        ));
    }
    if info.seed != first.seed {
        return Some(format!(
            "{name} used input seed {} and {first_name} seed {}: shards of one run share one seed",
            info.seed, first.seed
        ));
    }
    if info.timing != first.timing || info.clock_policy != first.clock_policy {
        return Some(format!(
            "{name} and {first_name} were timed differently (rounds, samples, time limits, verification or clock policy differ): their times do not belong in one report"
        ));
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::records::run_info::ShardInfo;

    fn key(i: usize) -> String {
        format!("h\u{0}reduction\u{0}job{i}")
    }

    /// Shard `index` of `count`, each owning one job; plan "p" is the real plan of those jobs.
    fn shard(index: usize, count: usize, plan: &str) -> (String, RunInfo) {
        let keys: Vec<String> = (0..count).map(key).collect();
        let plan = if plan == "p" {
            plan_hash(&keys)
        } else {
            plan.to_string()
        };
        let info = RunInfo {
            suite: "reduction".into(),
            suite_source_hash: "h".into(),
            shard: Some(ShardInfo {
                index,
                count,
                run_id: format!("id-{index}-{plan}"),
                plan,
                jobs: vec![key(index)],
            }),
            ..Default::default()
        };
        (format!("run-{index}"), info)
    }

    #[test]
    fn every_shard_of_one_plan_once_merges() {
        assert_eq!(merge_refusal(&[shard(1, 2, "p"), shard(0, 2, "p")]), None);
        assert_eq!(merge_refusal(&[]), None, "nothing to refuse");
    }

    #[test]
    fn a_run_that_is_no_shard_is_refused() {
        let (name, mut info) = shard(0, 2, "p");
        info.shard = None;
        let why = merge_refusal(&[shard(1, 2, "p"), (name, info)]).unwrap();
        assert_eq!(
            why,
            "run-0 is not a shard (it was not run with --shard I/N)"
        );
    }

    #[test]
    fn a_missing_or_doubled_shard_is_refused() {
        let why = merge_refusal(&[shard(0, 3, "p"), shard(2, 3, "p")]).unwrap();
        assert!(
            why.starts_with("shard(s) 1/3 of the plan are missing"),
            "{why}"
        );
        let why = merge_refusal(&[shard(0, 2, "p"), shard(0, 2, "p")]).unwrap();
        assert_eq!(why, "shard 0/2 is given twice (run-0)");
    }

    #[test]
    fn shards_that_differ_in_plan_suite_source_cache_or_mock_are_refused() {
        let other_plan = merge_refusal(&[shard(0, 2, "p"), shard(1, 2, "q")]).unwrap();
        assert!(other_plan.contains("of another plan"), "{other_plan}");
        let mut changed = shard(1, 2, "p");
        changed.1.suite_source_hash = "other".into();
        let why = merge_refusal(&[shard(0, 2, "p"), changed]).unwrap();
        assert!(why.contains("suite source hash differs"), "{why}");
        let mut cold = shard(1, 2, "p");
        cold.1.timing.cache = crate::records::outcome::CacheState::Cold;
        let why = merge_refusal(&[shard(0, 2, "p"), cold]).unwrap();
        assert!(
            why.contains("their times do not belong in one report"),
            "{why}"
        );
        let mut mock = shard(1, 2, "p");
        mock.1.mock = true;
        let why = merge_refusal(&[shard(0, 2, "p"), mock]).unwrap();
        assert!(why.contains("one is a MOCK run"), "{why}");
    }

    #[test]
    fn a_shard_copied_and_relabelled_as_another_is_refused() {
        let (name, mut copy) = shard(0, 2, "p");
        copy.shard.as_mut().unwrap().index = 1;
        let why = merge_refusal(&[shard(0, 2, "p"), (name.clone(), copy.clone())]).unwrap();
        assert!(why.contains("is a copy of another shard run"), "{why}");
        // A new run id as well: the jobs it claims are another shard's.
        copy.shard.as_mut().unwrap().run_id = "fresh".into();
        let why = merge_refusal(&[shard(0, 2, "p"), (name.clone(), copy.clone())]).unwrap();
        assert!(why.contains("which another shard given owns"), "{why}");
        // Its job list edited to something else: the union is not the plan.
        copy.shard.as_mut().unwrap().jobs = vec!["h\u{0}reduction\u{0}other".into()];
        let why = merge_refusal(&[shard(0, 2, "p"), (name, copy)]).unwrap();
        assert!(why.contains("not the plan's jobs"), "{why}");
    }

    #[test]
    fn a_tampered_shard_count_or_index_is_refused_without_allocating_by_it() {
        for (index, count) in [
            (0, usize::MAX),
            (5, 2),
            (0, 0),
            (usize::MAX, usize::MAX),
            (0, MAX_SHARD_COUNT + 1),
        ] {
            let (name, mut info) = shard(0, 2, "p");
            let s = info.shard.as_mut().unwrap();
            (s.index, s.count) = (index, count);
            for runs in [
                vec![(name.clone(), info.clone()), shard(1, 2, "p")],
                vec![shard(1, 2, "p"), (name.clone(), info.clone())],
            ] {
                let why = merge_refusal(&runs).unwrap();
                assert!(
                    why.contains("no plan has") || why.contains("another plan"),
                    "{index}/{count}: {why}"
                );
            }
        }
    }

    #[test]
    fn shards_of_other_gpu_models_seeds_or_rounds_are_refused() {
        let gpu = |name: &str| DeviceInfo {
            name: name.into(),
            ..Default::default()
        };
        let (mut a, mut b) = (shard(0, 2, "p"), shard(1, 2, "p"));
        a.1.device = Some(gpu("NVIDIA H100"));
        b.1.device = Some(gpu("NVIDIA H200"));
        let why = merge_refusal(&[a.clone(), b.clone()]).unwrap();
        assert!(why.contains("one GPU model"), "{why}");
        b.1.device = a.1.device.clone();
        b.1.seed = 7;
        let why = merge_refusal(&[a.clone(), b.clone()]).unwrap();
        assert!(why.contains("seed"), "{why}");
        b.1.seed = a.1.seed;
        b.1.timing.rounds = 3;
        let why = merge_refusal(&[a.clone(), b.clone()]).unwrap();
        assert!(why.contains("timed differently"), "{why}");
        b.1.timing.rounds = a.1.timing.rounds;
        assert_eq!(merge_refusal(&[a, b]), None);
    }
}
