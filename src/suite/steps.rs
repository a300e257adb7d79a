//! Host-program variants (`[[variants.steps]]`): their shape checked at load, then expanded over chunks and resolved into copies, launches, events and syncs on named streams.

use std::collections::{BTreeMap, HashSet};

use super::{Ctx, Seg, SuiteError, buffer_arg, resolve_launch, split_indexed, validate_launch};
use crate::expr::{self, Bindings};
use crate::suite::{
    Action, BufferSpec, Direction, LaunchDecl, LaunchSpec, Location, Manifest, Memory, Region,
    Step, StepDecl, StepProgram, StreamSpec, SyncTarget, VariantDecl,
};

/// The most steps one job may expand to (chunks multiply them): a host program of more is a typo.
pub const MAX_STEPS: usize = 10_000;

/// The actions a step may name, each with the keys that go with it.
const ACTIONS: [(&str, &[&str]); 8] = [
    ("copy", &["from", "to", "count", "async"]),
    ("kernel", &["grid", "block", "args", "shared_bytes"]),
    ("memset", &["count", "value"]),
    ("prefetch", &["to", "count"]),
    ("record", &[]),
    ("wait", &[]),
    ("sync", &["event"]),
    ("each", &[]),
];

/// The keys a step sets, in the manifest's words.
fn present(d: &StepDecl) -> Vec<&'static str> {
    let keys: [(&str, bool); 19] = [
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

fn step_path(ctx: &Ctx, v: &VariantDecl, si: usize, ei: Option<usize>) -> Vec<Seg> {
    let mut p = ctx.variant(v);
    p.extend(at!["steps", si]);
    if let Some(e) = ei {
        p.extend(at!["each", e]);
    }
    p
}

/// The shape of a host-program variant, before anything is evaluated.
pub(super) fn validate(
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
    {
        let key = if v.launches.is_empty() {
            "kernel"
        } else {
            "launches"
        };
        return Err(ctx.err({ let mut p = ctx.variant(v); p.push(key.into()); p }, format!("variant `{}` has both `steps` and a launch (`kernel` or `launches`)", v.name), "write its kernels as steps (`{ kernel = \"k\", grid = [...], block = [...], args = [...] }`) and remove the variant's own kernel, grid, block, args and launches"));
    }
    // `chunk` and `chunks` are bound by repeated steps: a sweep axis or param of that name would be shadowed.
    let variant_key = |k: &str| {
        let mut p = ctx.variant(v);
        p.push(k.into());
        p
    };
    let names: [(Vec<&String>, Vec<Seg>); 4] = [
        (m.axes.keys().collect(), at!["axes"]),
        (m.params.keys().collect(), at!["params"]),
        (v.axes.keys().collect(), variant_key("axes")),
        (v.params.keys().collect(), variant_key("params")),
    ];
    for (keys, path) in names {
        if let Some(name) = keys.into_iter().find(|k| *k == "chunk" || *k == "chunks") {
            return Err(ctx.err(path, format!("variant `{}` has steps, and an axis or param is named `{name}`, which repeated steps bind themselves", v.name), "rename it (e.g. `CHUNKS`)"));
        }
    }
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
    let check = |d: &StepDecl, path: Vec<Seg>, nested: bool| -> Result<(), SuiteError> {
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
            };
            validate_launch(
                ctx,
                m,
                source,
                src,
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
    };
    for (si, d) in v.steps.iter().enumerate() {
        check(d, step_path(ctx, v, si, None), false)?;
        for (ei, e) in d.each.iter().enumerate() {
            check(e, step_path(ctx, v, si, Some(ei)), true)?;
        }
    }
    Ok(())
}

/// The variant's streams: each declared name with its first index and how many it has (None: a single stream).
struct Streams {
    specs: Vec<StreamSpec>,
    by_name: BTreeMap<String, (usize, Option<u64>)>,
}

/// The most streams of one family: far past any overlap study (the hardware has 32 or 128 queues).
const MAX_STREAMS: u64 = 1024;
/// The most chunks a step may repeat over.
const MAX_CHUNKS: u64 = 4096;

/// The state of the expansion: what has been resolved so far.
struct Expansion<'a> {
    ctx: &'a Ctx<'a>,
    m: &'a Manifest,
    v: &'a VariantDecl,
    buffers: &'a [BufferSpec],
    streams: Streams,
    steps: Vec<Step>,
    launches: Vec<LaunchSpec>,
    events: Vec<String>,
}

impl Expansion<'_> {
    fn fail(&self, path: &[Seg], message: impl std::fmt::Display, fix: &str) -> SuiteError {
        self.ctx.err(
            path.to_vec(),
            format!("variant `{}`: {message}", self.v.name),
            fix,
        )
    }

    fn eval(&self, e: &str, env: &Bindings, path: &[Seg], what: &str) -> Result<u64, SuiteError> {
        expr::eval_count(e, env).map_err(|err| {
            self.fail(
                path,
                format!("{what} `{e}`: {err}"),
                "use the suite's axes and params, and `chunk` / `chunks` inside repeated steps",
            )
        })
    }

    /// `NULL` (None), a declared stream, or `family[index]`.
    fn stream(
        &self,
        d: &StepDecl,
        env: &Bindings,
        path: &[Seg],
    ) -> Result<Option<usize>, SuiteError> {
        let Some(text) = d.stream.as_deref().map(str::trim) else {
            return Ok(None);
        };
        if text.eq_ignore_ascii_case("null") {
            return Ok(None);
        }
        // As declared: `s`, or a family as `w[0..K]` (not each of its streams: a family may have 1024).
        let declared = || {
            self.streams
                .by_name
                .iter()
                .map(|(name, (_, count))| count.map_or(name.clone(), |n| format!("{name}[0..{n}]")))
                .collect::<Vec<_>>()
                .join(", ")
        };
        let unknown = || {
            self.fail(path, format!("step names stream `{text}`, which the variant does not declare (it declares: {})", if self.streams.specs.is_empty() { "none".to_string() } else { declared() }), "declare it in the variant's streams = [{ name = \"s\" }] (or { name = \"s\", count = \"K\" } and use `s[i]`), or leave `stream` out for the NULL stream")
        };
        let (name, index) = split_indexed(text).ok_or_else(unknown)?;
        let &(first, count) = self.streams.by_name.get(name).ok_or_else(unknown)?;
        match (index, count) {
            (None, None) => Ok(Some(first)),
            (Some(e), Some(n)) => {
                let i = self.eval(e, env, path, "stream index")?;
                if i >= n {
                    return Err(self.fail(
                        path,
                        format!("stream `{text}` is `{name}[{i}]`, and `{name}` has {n} streams"),
                        "keep the index below the family's count (`chunk % K`)",
                    ));
                }
                Ok(Some(first + i as usize))
            }
            (None, Some(n)) => Err(self.fail(
                path,
                format!("`{name}` is a family of {n} streams; the step must say which"),
                &format!("write `{name}[i]`, e.g. `{name}[chunk % {n}]`"),
            )),
            (Some(_), None) => Err(self.fail(
                path,
                format!("`{text}` indexes `{name}`, a single stream"),
                &format!("write `{name}`, or give `{name}` a count"),
            )),
        }
    }

    /// A buffer or part of one: `a`, `a[offset]`, with `count` elements (default: to the end).
    fn region(
        &self,
        text: &str,
        count: Option<&str>,
        env: &Bindings,
        path: &[Seg],
        role: &str,
    ) -> Result<Region, SuiteError> {
        let (buffer, offset) = buffer_arg(self.m, text).ok_or_else(|| {
            self.fail(
                path,
                format!("{role} `{text}` is not a buffer (or `buffer[offset]`)"),
                "name one of the [[buffers]]",
            )
        })?;
        let len = self.buffers[buffer].len;
        let offset = offset
            .map(|e| self.eval(e, env, path, "offset"))
            .transpose()?
            .unwrap_or(0);
        let count = match count {
            Some(e) => self.eval(e, env, path, "count")?,
            None => len.saturating_sub(offset),
        };
        if count == 0 || offset.checked_add(count).is_none_or(|end| end > len) {
            return Err(self.fail(path, format!("{role} `{text}`: elements {offset} .. {offset}+{count} of `{}`, which has {len}", self.buffers[buffer].name), "keep offset + count inside the buffer, and count above 0"));
        }
        Ok(Region {
            buffer,
            offset,
            len: count,
        })
    }

    fn memory(&self, r: &Region) -> Memory {
        self.buffers[r.buffer].memory
    }

    fn event(&self, text: &str, env: &Bindings, path: &[Seg]) -> Result<String, SuiteError> {
        match split_indexed(text) {
            Some((name, None)) => Ok(name.to_string()),
            Some((name, Some(e))) => Ok(format!(
                "{name}[{}]",
                self.eval(e, env, path, "event index")?
            )),
            None => Err(self.fail(
                path,
                format!("event `{text}` is not a name (or `name[index]`)"),
                "name events with letters, digits and _, e.g. `done` or `done[chunk]`",
            )),
        }
    }

    /// An event an earlier step recorded.
    fn recorded(&self, text: &str, env: &Bindings, path: &[Seg]) -> Result<usize, SuiteError> {
        let name = self.event(text, env, path)?;
        self.events.iter().position(|e| *e == name).ok_or_else(|| {
            self.fail(
                path,
                format!("waits on event `{name}`, which no earlier step records"),
                "record it first (`{ record = \"e\", stream = \"s\" }`) in a step before the wait",
            )
        })
    }

    fn one(
        &mut self,
        d: &StepDecl,
        env: &Bindings,
        chunk: Option<u64>,
        path: &[Seg],
    ) -> Result<(), SuiteError> {
        if self.steps.len() >= MAX_STEPS {
            return Err(self.fail(
                path,
                format!("the steps expand to more than {MAX_STEPS}"),
                "use fewer chunks",
            ));
        }
        let key = |k: &str| {
            let mut p = path.to_vec();
            p.push(k.into());
            p
        };
        // An unknown stream, or a family without its index, is reported on the `stream` key's line.
        let stream = self.stream(d, env, &key("stream"))?;
        let (action, label) = if let Some(dir) = &d.copy {
            let direction = match dir.trim() {
                "h2d" => Direction::H2d,
                "d2h" => Direction::D2h,
                "d2d" => Direction::D2d,
                other => {
                    return Err(self.fail(
                        &key("copy"),
                        format!("copy `{other}` is not a direction"),
                        "write copy = \"h2d\", \"d2h\" or \"d2d\"",
                    ));
                }
            };
            let (from_text, to_text) = match (&d.from, &d.to) {
                (Some(f), Some(t)) => (f, t),
                _ => {
                    return Err(self.fail(
                        path,
                        "a copy needs `from` and `to`",
                        "write from = \"h_a\", to = \"d_a\"",
                    ));
                }
            };
            let from = self.region(from_text, d.count.as_deref(), env, &key("from"), "from")?;
            let to = self.region(to_text, Some(&from.len.to_string()), env, &key("to"), "to")?;
            let (fm, tm) = (self.memory(&from), self.memory(&to));
            let (need_from, need_to, from_ok, to_ok) = match direction {
                Direction::H2d => ("host", "device", fm.host_side(), tm.device_side()),
                Direction::D2h => ("device", "host", fm.device_side(), tm.host_side()),
                Direction::D2d => ("device", "device", fm.device_side(), tm.device_side()),
            };
            if !from_ok || !to_ok {
                let (which, buffer, memory, need) = if !from_ok {
                    ("from", &self.buffers[from.buffer], fm, need_from)
                } else {
                    ("to", &self.buffers[to.buffer], tm, need_to)
                };
                return Err(self.fail(&key(which), format!("a {} copy goes {need_from} to {need_to}, and its `{which}` buffer `{}` is {} memory", direction.name(), buffer.name, memory.name()), &format!("use a {need} buffer there (host: pageable, pinned, mapped or managed; device: device or managed), or the other direction")));
            }
            let (fb, tb) = (&self.buffers[from.buffer], &self.buffers[to.buffer]);
            if fb.elem != tb.elem {
                return Err(self.fail(path, format!("the copy goes from `{}` ({}) to `{}` ({}): a copy moves bytes and converts nothing", fb.name, fb.elem.name(), tb.name, tb.elem.name()), "copy between buffers of one type"));
            }
            if !d.asynchronous && stream.is_some() {
                return Err(self.fail(&key("stream"), format!("a synchronous copy (cuMemcpy, the host waits) runs on the NULL stream, and this one names stream `{}`", d.stream.as_deref().unwrap_or_default()), "write async = true to issue it on that stream (cuMemcpyAsync), or leave `stream` out"));
            }
            (
                Action::Copy {
                    direction,
                    from,
                    to,
                    asynchronous: d.asynchronous,
                },
                format!("{} {}", direction.name(), fb.name),
            )
        } else if let Some(kernel) = &d.kernel {
            let l = LaunchDecl {
                kernel: Some(kernel.clone()),
                block: d.block.clone(),
                grid: d.grid.clone(),
                args: d.args.clone(),
                shared_bytes: d.shared_bytes.clone(),
            };
            let launch =
                resolve_launch(self.ctx, self.m, self.buffers, &self.v.name, &l, env, &key)?;
            let label = format!("kernel {}", launch.kernel);
            self.launches.push(launch);
            (
                Action::Kernel {
                    launch: self.launches.len() - 1,
                },
                label,
            )
        } else if let Some(target) = &d.memset {
            let region = self.region(target, d.count.as_deref(), env, &key("memset"), "memset")?;
            if !self.memory(&region).kernel_visible() {
                return Err(self.fail(&key("memset"), format!("memset of `{target}`, which is {} host memory (cuMemset writes device-visible memory)", self.memory(&region).name()), "memset a device, mapped or managed buffer"));
            }
            (
                Action::Memset {
                    region,
                    value: d.value.unwrap_or(0),
                },
                format!("memset {}", self.buffers[region.buffer].name),
            )
        } else if let Some(target) = &d.prefetch {
            let region = self.region(
                target,
                d.count.as_deref(),
                env,
                &key("prefetch"),
                "prefetch",
            )?;
            if self.memory(&region) != Memory::Managed {
                return Err(self.fail(
                    &key("prefetch"),
                    format!(
                        "prefetch of `{}`, which is {} memory; only managed memory migrates",
                        self.buffers[region.buffer].name,
                        self.memory(&region).name()
                    ),
                    "prefetch a memory = \"managed\" buffer",
                ));
            }
            let to = match d.to.as_deref().map(str::trim) {
                Some("device") => Location::Device,
                Some("host") => Location::Host,
                other => {
                    return Err(self.fail(
                        &key("to"),
                        format!(
                            "a prefetch goes `to` the device or the host, not {}",
                            other.map_or("nowhere".to_string(), |o| format!("`{o}`"))
                        ),
                        "write to = \"device\" or to = \"host\"",
                    ));
                }
            };
            (
                Action::Prefetch { region, to },
                format!("prefetch {}", self.buffers[region.buffer].name),
            )
        } else if let Some(e) = &d.record {
            let name = self.event(e, env, &key("record"))?;
            let event = match self.events.iter().position(|x| *x == name) {
                Some(i) => i,
                None => {
                    self.events.push(name.clone());
                    self.events.len() - 1
                }
            };
            (Action::Record { event }, format!("record {name}"))
        } else if let Some(e) = &d.wait {
            let event = self.recorded(e, env, &key("wait"))?;
            (
                Action::Wait { event },
                format!("wait {}", self.events[event]),
            )
        } else if let Some(what) = &d.sync {
            let target = match what.trim() {
                "device" => SyncTarget::Device,
                "stream" => SyncTarget::Stream,
                "event" => {
                    let e = d.event.as_ref().ok_or_else(|| self.fail(path, "sync = \"event\" names no `event`", "add event = \"the recorded event\""))?;
                    SyncTarget::Event(self.recorded(e, env, &key("event"))?)
                }
                other => return Err(self.fail(&key("sync"), format!("sync `{other}` is not something the host can wait for"), "write sync = \"device\", \"stream\" (the step's stream) or \"event\" (with event = \"e\")")),
            };
            (Action::Sync { target }, format!("sync {}", what.trim()))
        } else {
            unreachable!("validated: the step has one action")
        };
        let label = d.label.clone().unwrap_or(label);
        self.steps.push(Step {
            label: chunk.map_or(label.clone(), |c| format!("{label} #{c}")),
            stream,
            chunk,
            action,
        });
        Ok(())
    }
}

/// Resolves a host-program variant at one point of the sweep: its steps expanded over chunks, the
/// launches of its kernel steps, its streams and its events.
pub(super) fn resolve(
    ctx: &Ctx,
    m: &Manifest,
    v: &VariantDecl,
    env: &Bindings,
    buffers: &[BufferSpec],
) -> Result<(Vec<LaunchSpec>, StepProgram), SuiteError> {
    let mut streams = Streams {
        specs: Vec::new(),
        by_name: BTreeMap::new(),
    };
    for (i, s) in v.streams.iter().enumerate() {
        let count = match &s.count {
            None => None,
            Some(e) => {
                let mut p = ctx.variant(v);
                p.extend(at!["streams", i, "count"]);
                let n = expr::eval_count(e, env).map_err(|err| {
                    ctx.err(
                        p.clone(),
                        format!("variant `{}`, stream `{}` count: {err}", v.name, s.name),
                        "use the suite's axes and params",
                    )
                })?;
                if n == 0 || n > MAX_STREAMS {
                    return Err(ctx.err(p, format!("variant `{}`: stream `{}` count `{e}` gives {n}, outside 1 to {MAX_STREAMS}", v.name, s.name), "give a family of 1 or more streams"));
                }
                Some(n)
            }
        };
        streams
            .by_name
            .insert(s.name.clone(), (streams.specs.len(), count));
        match count {
            None => streams.specs.push(StreamSpec {
                name: s.name.clone(),
                non_blocking: s.non_blocking,
            }),
            Some(n) => streams.specs.extend((0..n).map(|k| StreamSpec {
                name: format!("{}[{k}]", s.name),
                non_blocking: s.non_blocking,
            })),
        }
    }
    let mut x = Expansion {
        ctx,
        m,
        v,
        buffers,
        streams,
        steps: Vec::new(),
        launches: Vec::new(),
        events: Vec::new(),
    };
    for (si, d) in v.steps.iter().enumerate() {
        let path = step_path(ctx, v, si, None);
        let Some(chunks) = &d.chunks else {
            x.one(d, env, None, &path)?;
            continue;
        };
        let mut chunk_path = path.clone();
        chunk_path.push("chunks".into());
        let n = x.eval(chunks, env, &chunk_path, "chunks")?;
        if n == 0 || n > MAX_CHUNKS {
            return Err(x.fail(
                &chunk_path,
                format!("chunks `{chunks}` gives {n}, outside 1 to {MAX_CHUNKS}"),
                "split the data into 1 or more chunks",
            ));
        }
        for c in 0..n {
            let mut env = env.clone();
            env.insert("chunk".into(), c as f64);
            env.insert("chunks".into(), n as f64);
            if d.each.is_empty() {
                x.one(d, &env, Some(c), &path)?;
            } else {
                for (ei, e) in d.each.iter().enumerate() {
                    x.one(e, &env, Some(c), &step_path(ctx, v, si, Some(ei)))?;
                }
            }
        }
    }
    Ok((
        x.launches,
        StepProgram {
            steps: x.steps,
            streams: x.streams.specs,
            events: x.events,
        },
    ))
}
