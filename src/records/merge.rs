//! Whether shard runs may be merged into one run: the rule `gpu-lab merge` applies (pure).

use super::run_info::RunInfo;

/// Why shard runs cannot be merged into one run, if they cannot (pure): they must be shards of
/// one plan, each once, all of them, of one suite source and cache state, all mock or none.
pub fn merge_refusal(runs: &[(String, RunInfo)]) -> Option<String> {
    let (first_name, first) = runs.first()?;
    let Some(shard) = &first.shard else {
        return Some(format!(
            "{first_name} is not a shard (it was not run with --shard I/N)"
        ));
    };
    let mut seen = vec![false; shard.count];
    for (name, info) in runs {
        let Some(s) = &info.shard else {
            return Some(format!(
                "{name} is not a shard (it was not run with --shard I/N)"
            ));
        };
        if s.plan != shard.plan || s.count != shard.count {
            return Some(format!(
                "{name} is shard {}/{} of another plan than {first_name} ({}/{}): the suites, variants or suite sources differ",
                s.index, s.count, shard.index, shard.count
            ));
        }
        if info.suite != first.suite {
            return Some(format!(
                "{name} holds suite `{}`, {first_name} suite `{}`: merge the shards of one suite at a time",
                info.suite, first.suite
            ));
        }
        if info.suite_source_hash != first.suite_source_hash {
            return Some(format!(
                "{name} measured another version of suite `{}` than {first_name} (suite source hash differs)",
                info.suite
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
        if std::mem::replace(&mut seen[s.index.min(shard.count - 1)], true) {
            return Some(format!(
                "shard {}/{} is given twice ({name})",
                s.index, s.count
            ));
        }
    }
    let missing: Vec<String> = seen
        .iter()
        .enumerate()
        .filter(|(_, s)| !**s)
        .map(|(i, _)| format!("{i}/{}", shard.count))
        .collect();
    (!missing.is_empty()).then(|| {
        format!(
            "shard(s) {} of the plan are missing: a merged run would silently lack their jobs",
            missing.join(", ")
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::records::run_info::ShardInfo;

    fn shard(index: usize, count: usize, plan: &str) -> (String, RunInfo) {
        let info = RunInfo {
            suite: "reduction".into(),
            suite_source_hash: "h".into(),
            shard: Some(ShardInfo {
                index,
                count,
                plan: plan.into(),
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
}
