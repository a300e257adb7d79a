//! The shape of a host-program variant, checked at load before anything is evaluated: each
//! step does one action with that action's keys, groups (`each`) are one level deep, stream
//! names are plain and unique, and kernel steps are launches of declared kernels.

use std::collections::HashSet;

use crate::suite::launch::validate_launch;
use crate::suite::location::{Ctx, Seg, SuiteError, at};
use crate::suite::manifest::{LaunchDecl, Manifest, StepDecl, VariantDecl};

/// The actions a step may name, each with the keys that go with it.
const ACTIONS: [(&str, &[&str]); 8] = [
    ("copy", &["from", "to", "count", "async"]),
    (
        "kernel",
        &["grid", "block", "args", "shared_bytes", "cluster"],
    ),
    ("memset", &["count", "value"]),
    ("prefetch", &["to", "count"]),
    ("record", &[]),
    ("wait", &[]),
    ("sync", &["event"]),
    ("each", &[]),
];

/// The keys a step sets, in the manifest's words.
fn present(d: &StepDecl) -> Vec<&'static str> {
    let keys: [(&str, bool); 20] = [
        ("copy", d.copy.is_some()),
        ("from", d.from.is_some()),
        ("to", d.to.is_some()),
        ("count", d.count.is_some()),
        ("async", d.asynchronous),
        ("kernel", d.kernel.is_some()),
        ("grid", d.grid.is_some()),
        ("block", d.block.is_some()),
        ("args", d.args.is_some()),
        ("shared_bytes", d.shared_bytes.is_some()),
        ("cluster", d.cluster.is_some()),
        ("memset", d.memset.is_some()),
        ("value", d.value.is_some()),
        ("prefetch", d.prefetch.is_some()),
        ("record", d.record.is_some()),
        ("wait", d.wait.is_some()),
        ("sync", d.sync.is_some()),
        ("event", d.event.is_some()),
        ("each", !d.each.is_empty()),
        ("stream", d.stream.is_some()),
    ];
    keys.into_iter()
        .filter(|(_, set)| *set)
        .map(|(k, _)| k)
        .collect()
}

/// The step's one action, or why it does not have exactly one (or has keys of another).
fn action_of(d: &StepDecl) -> Result<&'static str, String> {
    let keys = present(d);
    let actions: Vec<&str> = ACTIONS
        .iter()
        .map(|(a, _)| *a)
        .filter(|a| keys.contains(a))
        .collect();
    let [action] = actions.as_slice() else {
        return Err(if actions.is_empty() {
            "the step does nothing: it needs one of copy, kernel, memset, prefetch, record, wait, sync or each".to_string()
        } else {
            format!(
                "the step has {} actions ({}); a step does one thing",
                actions.len(),
                actions.join(", ")
            )
        });
    };
    let allowed = ACTIONS
        .iter()
        .find(|(a, _)| a == action)
        .map(|(_, k)| *k)
        .unwrap_or_default();
    if let Some(stray) = keys
        .iter()
        .find(|k| **k != *action && **k != "stream" && !allowed.contains(k))
    {
        return Err(format!("a `{action}` step does not take `{stray}`"));
    }
    if *action == "each" && d.stream.is_some() {
        return Err("a group (`each`) takes no `stream`: give each of its steps one".into());
    }
    Ok(action)
}

/// Where step `si` is, or step `ei` of its group.
pub(crate) fn step_path(ctx: &Ctx, v: &VariantDecl, si: usize, ei: Option<usize>) -> Vec<Seg> {
    let mut p = ctx.variant(v);
    p.extend(at!["steps", si]);
    if let Some(e) = ei {
        p.extend(at!["each", e]);
    }
    p
}

/// The shape of a host-program variant, before anything is evaluated.
pub(crate) fn validate(
    ctx: &Ctx,
    m: &Manifest,
    v: &VariantDecl,
    source: &str,
    src: &str,
) -> Result<(), SuiteError> {
    if v.kernel.is_some()
        || !v.launches.is_empty()
        || v.grid.is_some()
        || v.block.is_some()
        || v.args.is_some()
        || v.shared_bytes.is_some()
        || v.cluster.is_some()
    {
        let key = if v.launches.is_empty() {
            "kernel"
        } else {
            "launches"
        };
        return Err(ctx.err(ctx.variant_key(v, key), format!("variant `{}` has both `steps` and a launch (`kernel` or `launches`)", v.name), "write its kernels as steps (`{ kernel = \"k\", grid = [...], block = [...], args = [...] }`) and remove the variant's own kernel, grid, block, args and launches"));
    }
    check_reserved_names(ctx, m, v)?;
    check_stream_names(ctx, v)?;
    let site = StepSite {
        ctx,
        m,
        v,
        source,
        src,
    };
    for (si, d) in v.steps.iter().enumerate() {
        site.check(d, step_path(ctx, v, si, None), false)?;
        for (ei, e) in d.each.iter().enumerate() {
            site.check(e, step_path(ctx, v, si, Some(ei)), true)?;
        }
    }
    Ok(())
}

/// `chunk` and `chunks` are bound by repeated steps: a sweep axis or param of that name would be shadowed.
fn check_reserved_names(ctx: &Ctx, m: &Manifest, v: &VariantDecl) -> Result<(), SuiteError> {
    let names: [(Vec<&String>, Vec<Seg>); 4] = [
        (m.axes.keys().collect(), at!["axes"]),
        (m.params.keys().collect(), at!["params"]),
        (v.axes.keys().collect(), ctx.variant_key(v, "axes")),
        (v.params.keys().collect(), ctx.variant_key(v, "params")),
    ];
    for (keys, path) in names {
        if let Some(name) = keys.into_iter().find(|k| *k == "chunk" || *k == "chunks") {
            return Err(ctx.err(path, format!("variant `{}` has steps, and an axis or param is named `{name}`, which repeated steps bind themselves", v.name), "rename it (e.g. `CHUNKS`)"));
        }
    }
    Ok(())
}

/// Every declared stream has its own plain name (`null` is the NULL stream's).
fn check_stream_names(ctx: &Ctx, v: &VariantDecl) -> Result<(), SuiteError> {
    let mut names = HashSet::new();
    for (i, s) in v.streams.iter().enumerate() {
        let is_name = !s.name.is_empty() && s.name.chars().all(|c| c.is_alphanumeric() || c == '_');
        if !is_name || s.name.eq_ignore_ascii_case("null") || !names.insert(s.name.as_str()) {
            let mut p = ctx.variant(v);
            p.extend(at!["streams", i, "name"]);
            return Err(ctx.err(
                p,
                format!(
                    "variant `{}`: stream name `{}` is {}",
                    v.name,
                    s.name,
                    if is_name && !s.name.eq_ignore_ascii_case("null") {
                        "declared twice"
                    } else {
                        "not a plain name (letters, digits, _; `null` is the NULL stream)"
                    }
                ),
                "give every stream its own plain name",
            ));
        }
    }
    Ok(())
}

/// A variant's step being checked, with the source its kernel steps must be declared in.
struct StepSite<'a> {
    ctx: &'a Ctx<'a>,
    m: &'a Manifest,
    v: &'a VariantDecl,
    source: &'a str,
    src: &'a str,
}

impl StepSite<'_> {
    /// One step at `path` (`nested`: inside a group).
    fn check(&self, d: &StepDecl, path: Vec<Seg>, nested: bool) -> Result<(), SuiteError> {
        let (ctx, v) = (self.ctx, self.v);
        let action = action_of(d).map_err(|e| {
            ctx.err(
                path.clone(),
                format!("variant `{}`: {e}", v.name),
                "see docs/suite-format.md, steps",
            )
        })?;
        if action == "each" && d.label.is_some() {
            return Err(ctx.err({ let mut p = path.clone(); p.push("label".into()); p }, format!("variant `{}`: a group (`each`) has a `label`, and only its steps are drawn and named", v.name), "put `label` on the steps inside `each`"));
        }
        if action == "each" && (nested || d.chunks.is_none()) {
            let why = if nested {
                "a group inside a group"
            } else {
                "a group (`each`) without `chunks`"
            };
            return Err(ctx.err(path, format!("variant `{}`: {why}", v.name), "give the group `chunks = \"C\"`, one level deep: its steps are done for chunk 0, then chunk 1, ..."));
        }
        if nested && d.chunks.is_some() {
            return Err(ctx.err(
                path,
                format!(
                    "variant `{}`: a step inside a group has its own `chunks`",
                    v.name
                ),
                "set `chunks` on the group only (its steps run once per chunk)",
            ));
        }
        if action == "kernel" {
            let l = LaunchDecl {
                kernel: d.kernel.clone(),
                block: d.block.clone(),
                grid: d.grid.clone(),
                args: d.args.clone(),
                shared_bytes: d.shared_bytes.clone(),
                cluster: d.cluster.clone(),
                pdl: false,
            };
            validate_launch(
                ctx,
                self.m,
                self.source,
                self.src,
                &format!("variant `{}`, a kernel step", v.name),
                &l,
                &|key| {
                    let mut p = path.clone();
                    p.push(key.into());
                    p
                },
            )?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn step(toml_text: &str) -> StepDecl {
        toml::from_str(toml_text).expect("a valid step")
    }

    #[test]
    fn a_step_has_exactly_one_action() {
        assert_eq!(
            action_of(&step("copy = \"h2d\"\nfrom = \"a\"\nto = \"b\"")),
            Ok("copy")
        );
        assert_eq!(
            action_of(&step("sync = \"event\"\nevent = \"e\"")),
            Ok("sync")
        );
        assert_eq!(
            action_of(&step("record = \"e\"\nstream = \"s\"")),
            Ok("record")
        );
        assert_eq!(
            action_of(&step("label = \"x\"")),
            Err("the step does nothing: it needs one of copy, kernel, memset, prefetch, record, wait, sync or each".to_string())
        );
        assert_eq!(
            action_of(&step("record = \"e\"\nwait = \"f\"")),
            Err("the step has 2 actions (record, wait); a step does one thing".to_string())
        );
    }

    #[test]
    fn an_action_takes_only_its_own_keys() {
        assert_eq!(
            action_of(&step("memset = \"a\"\nfrom = \"b\"")),
            Err("a `memset` step does not take `from`".to_string())
        );
        let group = StepDecl {
            chunks: Some("4".into()),
            stream: Some("s".into()),
            each: vec![step("record = \"e\"")],
            ..StepDecl::default()
        };
        assert_eq!(
            action_of(&group),
            Err("a group (`each`) takes no `stream`: give each of its steps one".to_string())
        );
    }
}
