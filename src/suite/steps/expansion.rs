//! Host programs expanded at one point of the sweep: streams declared (families counted),
//! steps repeated over chunks, and the operands steps name (streams, buffer regions, events)
//! resolved; `actions` turns each step into its action.

use std::collections::BTreeMap;

use super::shape::step_path;
use crate::expr::{self, Bindings};
use crate::suite::args::{buffer_arg, split_indexed};
use crate::suite::job::{BufferSpec, LaunchSpec, Memory, Region, Step, StepProgram, StreamSpec};
use crate::suite::location::{Ctx, Seg, SuiteError, at};
use crate::suite::manifest::{Manifest, StepDecl, VariantDecl};

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
pub(super) struct Expansion<'a> {
    pub(super) ctx: &'a Ctx<'a>,
    pub(super) m: &'a Manifest,
    pub(super) v: &'a VariantDecl,
    pub(super) buffers: &'a [BufferSpec],
    streams: Streams,
    pub(super) steps: Vec<Step>,
    pub(super) launches: Vec<LaunchSpec>,
    pub(super) events: Vec<String>,
}

impl Expansion<'_> {
    pub(super) fn fail(
        &self,
        path: &[Seg],
        message: impl std::fmt::Display,
        fix: &str,
    ) -> SuiteError {
        self.ctx.err(
            path.to_vec(),
            format!("variant `{}`: {message}", self.v.name),
            fix,
        )
    }

    pub(super) fn eval(
        &self,
        e: &str,
        env: &Bindings,
        path: &[Seg],
        what: &str,
    ) -> Result<u64, SuiteError> {
        expr::eval_count(e, env).map_err(|err| {
            self.fail(
                path,
                format!("{what} `{e}`: {err}"),
                "use the suite's axes and params, and `chunk` / `chunks` inside repeated steps",
            )
        })
    }

    /// `NULL` (None), a declared stream, or `family[index]`.
    pub(super) fn stream(
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
    pub(super) fn region(
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

    pub(super) fn memory(&self, r: &Region) -> Memory {
        self.buffers[r.buffer].memory
    }

    pub(super) fn event(
        &self,
        text: &str,
        env: &Bindings,
        path: &[Seg],
    ) -> Result<String, SuiteError> {
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
    pub(super) fn recorded(
        &self,
        text: &str,
        env: &Bindings,
        path: &[Seg],
    ) -> Result<usize, SuiteError> {
        let name = self.event(text, env, path)?;
        self.events.iter().position(|e| *e == name).ok_or_else(|| {
            self.fail(
                path,
                format!("waits on event `{name}`, which no earlier step records"),
                "record it first (`{ record = \"e\", stream = \"s\" }`) in a step before the wait",
            )
        })
    }
}

/// Resolves a host-program variant at one point of the sweep: its steps expanded over chunks, the
/// launches of its kernel steps, its streams and its events.
pub(crate) fn resolve(
    ctx: &Ctx,
    m: &Manifest,
    v: &VariantDecl,
    env: &Bindings,
    buffers: &[BufferSpec],
) -> Result<(Vec<LaunchSpec>, StepProgram), SuiteError> {
    let streams = declare_streams(ctx, v, env)?;
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

/// The variant's streams at `env`: each family's count evaluated (1 to MAX_STREAMS), its
/// streams named `name[k]`.
fn declare_streams(ctx: &Ctx, v: &VariantDecl, env: &Bindings) -> Result<Streams, SuiteError> {
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
    Ok(streams)
}
