//! `--shape`: which sweep points (groups) of each suite run: `first`, `smallest`, or named ones (`NX=8192,NY=8192`, or a part of one: `NX=8192`).

use std::collections::BTreeMap;

use anyhow::bail;

use super::planning::SuitePlan;
use super::shards::expected_cost;
use crate::suite::JobSpec;

/// One `--shape` value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ShapeChoice {
    /// Each suite's first sweep point, in the manifest's order.
    First,
    /// Each suite's cheapest sweep point (least expected cost: bytes and flops of its jobs).
    Smallest,
    /// The sweep points whose parameters include all of these (`NX=8192` names every point
    /// with NX = 8192; `NX=8192,NY=8192` one point).
    Params(BTreeMap<String, i64>),
}

impl ShapeChoice {
    /// Parses `first`, `smallest` or `K=V,K=V` (spaces around names and values allowed).
    pub fn parse(text: &str) -> Result<ShapeChoice, String> {
        let text = text.trim();
        match text {
            "first" => return Ok(ShapeChoice::First),
            "smallest" => return Ok(ShapeChoice::Smallest),
            "" => return Err(format!("an empty shape; {SHAPE_FORMS}")),
            _ => {}
        }
        let mut params = BTreeMap::new();
        for part in text.split(',') {
            let Some((name, value)) = part.split_once('=') else {
                return Err(format!("`{part}` is not NAME=VALUE; {SHAPE_FORMS}"));
            };
            let (name, value) = (name.trim(), value.trim());
            if name.is_empty() {
                return Err(format!("`{part}` names no parameter; {SHAPE_FORMS}"));
            }
            if value.is_empty() {
                return Err(format!("`{name}` has no value; {SHAPE_FORMS}"));
            }
            let Ok(value) = value.parse::<i64>() else {
                return Err(format!(
                    "`{value}` (of `{name}`) is not a whole number; {SHAPE_FORMS}"
                ));
            };
            if params.insert(name.to_string(), value).is_some() {
                return Err(format!("`{name}` is named twice in `{text}`"));
            }
        }
        Ok(ShapeChoice::Params(params))
    }

    fn names(&self, group_params: &BTreeMap<String, i64>) -> bool {
        match self {
            ShapeChoice::Params(wanted) => wanted
                .iter()
                .all(|(k, v)| group_params.get(k).is_some_and(|g| g == v)),
            ShapeChoice::First | ShapeChoice::Smallest => false,
        }
    }
}

impl std::fmt::Display for ShapeChoice {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ShapeChoice::First => f.write_str("first"),
            ShapeChoice::Smallest => f.write_str("smallest"),
            ShapeChoice::Params(p) => f.write_str(&crate::records::format_params(p)),
        }
    }
}

const SHAPE_FORMS: &str = "a shape is `first`, `smallest` or the sweep point's parameters, `NX=8192,NY=8192` (a part, `NX=8192`, names every point with it; `gpu-lab plan --suite S` shows each job's point after its `@`)";

/// Keeps in each plan only the jobs at the chosen shapes (none: every shape). A named shape
/// that no selected suite has is an error that lists the shapes there are, as is a selection
/// that leaves no job at all.
pub fn keep_shapes(plans: &mut [SuitePlan], choices: &[ShapeChoice]) -> anyhow::Result<()> {
    if choices.is_empty() {
        return Ok(());
    }
    let known = known_shapes(plans);
    let mut matched = vec![false; choices.len()];
    for plan in plans.iter_mut() {
        let chosen = chosen_groups(&plan.jobs, choices, &mut matched);
        plan.jobs.retain(|j| chosen.contains(&j.key.group));
    }
    let unmatched: Vec<String> = choices
        .iter()
        .zip(&matched)
        .filter(|(_, m)| !**m)
        .map(|(c, _)| format!("`{c}`"))
        .collect();
    if !unmatched.is_empty() {
        bail!(
            "--shape {}: no selected suite has that shape; the shapes there are: {}\n  fix: name one of them (or `first`, `smallest`)",
            unmatched.join(", "),
            known
        );
    }
    if plans.iter().all(|p| p.jobs.is_empty()) {
        bail!(
            "--shape {} leaves no job to run\n  fix: pick a shape the selected variants run at",
            choices
                .iter()
                .map(|c| format!("`{c}`"))
                .collect::<Vec<_>>()
                .join(", ")
        );
    }
    Ok(())
}

/// The groups of `jobs` the choices pick, marking in `matched` each named choice that found one.
fn chosen_groups(jobs: &[JobSpec], choices: &[ShapeChoice], matched: &mut [bool]) -> Vec<String> {
    let mut groups: Vec<(&String, &BTreeMap<String, i64>, f64)> = Vec::new();
    for job in jobs {
        match groups.iter_mut().find(|g| *g.0 == job.key.group) {
            Some(g) => g.2 += expected_cost(job),
            None => groups.push((&job.key.group, &job.key.group_params, expected_cost(job))),
        }
    }
    let mut chosen: Vec<String> = Vec::new();
    for (choice, found) in choices.iter().zip(matched.iter_mut()) {
        let picked: Vec<&String> = match choice {
            ShapeChoice::First => groups.first().map(|g| g.0).into_iter().collect(),
            ShapeChoice::Smallest => groups
                .iter()
                .min_by(|a, b| a.2.total_cmp(&b.2))
                .map(|g| g.0)
                .into_iter()
                .collect(),
            ShapeChoice::Params(_) => groups
                .iter()
                .filter(|g| choice.names(g.1))
                .map(|g| g.0)
                .collect(),
        };
        *found |= !picked.is_empty() || !matches!(choice, ShapeChoice::Params(_));
        for g in picked {
            if !chosen.contains(g) {
                chosen.push(g.clone());
            }
        }
    }
    chosen
}

/// Each suite's shapes, `suite: A; B`, for an error message.
fn known_shapes(plans: &[SuitePlan]) -> String {
    let mut out = Vec::new();
    for plan in plans {
        let mut groups: Vec<&str> = Vec::new();
        for job in &plan.jobs {
            if !groups.contains(&job.key.group.as_str()) {
                groups.push(&job.key.group);
            }
        }
        let shown: Vec<String> = groups
            .iter()
            .map(|g| {
                if g.is_empty() {
                    "(one point, no parameters)".to_string()
                } else {
                    (*g).to_string()
                }
            })
            .collect();
        out.push(format!("{}: {}", plan.suite.name(), shown.join("; ")));
    }
    out.join(" | ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::Catalog;
    use crate::suite::Suite;

    fn suite(name: &str) -> Suite {
        let manifest = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("kernels")
            .join(name)
            .join("suite.toml");
        crate::suite::load(&manifest).unwrap()
    }

    fn groups_kept(plans: &[SuitePlan]) -> Vec<Vec<String>> {
        plans
            .iter()
            .map(|p| {
                let mut g: Vec<String> = Vec::new();
                for j in &p.jobs {
                    if !g.contains(&j.key.group) {
                        g.push(j.key.group.clone());
                    }
                }
                g
            })
            .collect()
    }

    fn shape(text: &str) -> ShapeChoice {
        ShapeChoice::parse(text).unwrap()
    }

    #[test]
    fn a_shape_is_first_smallest_or_parameters() {
        assert_eq!(shape("first"), ShapeChoice::First);
        assert_eq!(shape(" smallest "), ShapeChoice::Smallest);
        let ShapeChoice::Params(p) = shape("NY=2048, NX = 1024") else {
            panic!("parameters expected");
        };
        assert_eq!(p.get("NX"), Some(&1024));
        assert_eq!(p.get("NY"), Some(&2048));
        assert_eq!(shape("NY=2048,NX=1024").to_string(), "NX=1024,NY=2048");
        for (bad, says) in [
            ("", "empty"),
            ("NX", "not NAME=VALUE"),
            ("=4", "names no parameter"),
            ("NX=", "has no value"),
            ("NX=big", "not a whole number"),
            ("NX=1,NX=2", "named twice"),
        ] {
            let e = ShapeChoice::parse(bad).unwrap_err();
            assert!(e.contains(says), "{bad}: {e}");
        }
    }

    #[test]
    fn first_and_smallest_keep_one_point_of_each_suite() {
        let suites = [suite("transpose"), suite("shared-memory")];
        let catalog = Catalog::builtin().unwrap();
        let all = super::super::planning::plan(&suites, &[], None, &catalog).unwrap();
        let every = groups_kept(&all);
        assert_eq!(every[0].len(), 4, "transpose sweeps four shapes");

        let mut first = all.clone();
        keep_shapes(&mut first, &[ShapeChoice::First]).unwrap();
        let kept = groups_kept(&first);
        assert_eq!(kept[0], vec![every[0][0].clone()]);
        assert_eq!(kept[1], vec![every[1][0].clone()]);
        let per_group = |plans: &[SuitePlan], s: usize| plans[s].jobs.len();
        assert!(per_group(&first, 0) > 0 && per_group(&first, 0) < all[0].jobs.len());

        let mut smallest = all.clone();
        keep_shapes(&mut smallest, &[ShapeChoice::Smallest]).unwrap();
        assert_eq!(
            groups_kept(&smallest),
            vec![
                vec!["NX=1024,NY=2048".to_string()],
                vec!["NX=4000,NY=2000".to_string()]
            ]
        );
    }

    #[test]
    fn named_shapes_keep_every_point_that_has_them_and_none_is_an_error() {
        let suites = [suite("transpose"), suite("shared-memory")];
        let catalog = Catalog::builtin().unwrap();
        let all = super::super::planning::plan(&suites, &[], None, &catalog).unwrap();

        let mut both = all.clone();
        keep_shapes(&mut both, &[shape("NX=8192")]).unwrap();
        assert_eq!(
            groups_kept(&both),
            vec![
                vec!["NX=8192,NY=8192".to_string()],
                vec!["NX=8192,NY=8192".to_string()]
            ]
        );

        let mut two = all.clone();
        keep_shapes(
            &mut two,
            &[shape("NX=1024,NY=2048"), shape("NX=4000,NY=2000")],
        )
        .unwrap();
        assert_eq!(
            groups_kept(&two),
            vec![
                vec!["NX=1024,NY=2048".to_string()],
                vec!["NX=4000,NY=2000".to_string()]
            ]
        );

        let mut none = all.clone();
        let e = keep_shapes(&mut none, &[shape("NX=8192"), shape("NX=7")])
            .unwrap_err()
            .to_string();
        assert!(e.contains("`NX=7`") && !e.contains("`NX=8192`:"), "{e}");
        assert!(
            e.contains("transpose: NX=4000,NY=4000; NX=8192,NY=8192"),
            "lists the shapes there are: {e}"
        );
        assert!(e.contains("fix:"), "{e}");

        let mut unchanged = all.clone();
        keep_shapes(&mut unchanged, &[]).unwrap();
        assert_eq!(groups_kept(&unchanged), groups_kept(&all));
    }
}
