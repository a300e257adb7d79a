//! Each step's action at one point of the sweep: copies, kernel launches, memsets, prefetches,
//! event records and waits, and host syncs, checked against the memory of the buffers they touch.

use super::expansion::Expansion;
use crate::expr::Bindings;
use crate::suite::job::{Action, Direction, Location, Memory, Step, SyncTarget};
use crate::suite::launch::resolve_launch;
use crate::suite::location::{Seg, SuiteError};
use crate::suite::manifest::{LaunchDecl, StepDecl};

/// The most steps one job may expand to (chunks multiply them): a host program of more is a typo.
pub const MAX_STEPS: usize = 10_000;

/// Where key `k` of the step at `path` is.
fn key_of(path: &[Seg], k: &str) -> Vec<Seg> {
    let mut p = path.to_vec();
    p.push(k.into());
    p
}

impl Expansion<'_> {
    /// One step (of chunk `chunk` when it repeats) at `path`: its stream, its action and its label.
    pub(super) fn one(
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
        // An unknown stream, or a family without its index, is reported on the `stream` key's line.
        let stream = self.stream(d, env, &key_of(path, "stream"))?;
        let (action, label) = if let Some(dir) = &d.copy {
            self.copy(d, dir, env, stream, path)?
        } else if let Some(kernel) = &d.kernel {
            self.kernel(d, kernel, env, path)?
        } else if let Some(target) = &d.memset {
            self.memset(d, target, env, path)?
        } else if let Some(target) = &d.prefetch {
            self.prefetch(d, target, env, path)?
        } else if let Some(e) = &d.record {
            self.record(e, env, path)?
        } else if let Some(e) = &d.wait {
            self.wait(e, env, path)?
        } else if let Some(what) = &d.sync {
            self.sync(d, what, env, path)?
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

    /// A copy `from` one region `to` another, of one element type, each on the side its direction says.
    fn copy(
        &self,
        d: &StepDecl,
        dir: &str,
        env: &Bindings,
        stream: Option<usize>,
        path: &[Seg],
    ) -> Result<(Action, String), SuiteError> {
        let key = |k: &str| key_of(path, k);
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
        Ok((
            Action::Copy {
                direction,
                from,
                to,
                asynchronous: d.asynchronous,
            },
            format!("{} {}", direction.name(), fb.name),
        ))
    }

    /// A kernel launch, kept with the job's launches (the step names it by index).
    fn kernel(
        &mut self,
        d: &StepDecl,
        kernel: &str,
        env: &Bindings,
        path: &[Seg],
    ) -> Result<(Action, String), SuiteError> {
        let key = |k: &str| key_of(path, k);
        let l = LaunchDecl {
            kernel: Some(kernel.to_string()),
            block: d.block.clone(),
            grid: d.grid.clone(),
            args: d.args.clone(),
            shared_bytes: d.shared_bytes.clone(),
            cluster: d.cluster.clone(),
            pdl: false,
        };
        let launch = resolve_launch(self.ctx, self.m, self.buffers, &self.v.name, &l, env, &key)?;
        let label = format!("kernel {}", launch.kernel);
        self.launches.push(launch);
        Ok((
            Action::Kernel {
                launch: self.launches.len() - 1,
            },
            label,
        ))
    }

    /// A memset of device-visible memory.
    fn memset(
        &self,
        d: &StepDecl,
        target: &str,
        env: &Bindings,
        path: &[Seg],
    ) -> Result<(Action, String), SuiteError> {
        let key = |k: &str| key_of(path, k);
        let region = self.region(target, d.count.as_deref(), env, &key("memset"), "memset")?;
        if !self.memory(&region).kernel_visible() {
            return Err(self.fail(&key("memset"), format!("memset of `{target}`, which is {} host memory (cuMemset writes device-visible memory)", self.memory(&region).name()), "memset a device, mapped or managed buffer"));
        }
        Ok((
            Action::Memset {
                region,
                value: d.value.unwrap_or(0),
            },
            format!("memset {}", self.buffers[region.buffer].name),
        ))
    }

    /// A prefetch of managed memory `to` the device or the host.
    fn prefetch(
        &self,
        d: &StepDecl,
        target: &str,
        env: &Bindings,
        path: &[Seg],
    ) -> Result<(Action, String), SuiteError> {
        let key = |k: &str| key_of(path, k);
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
        Ok((
            Action::Prefetch { region, to },
            format!("prefetch {}", self.buffers[region.buffer].name),
        ))
    }

    /// An event recorded (a name recorded again is the same event).
    fn record(
        &mut self,
        e: &str,
        env: &Bindings,
        path: &[Seg],
    ) -> Result<(Action, String), SuiteError> {
        let key = |k: &str| key_of(path, k);
        let name = self.event(e, env, &key("record"))?;
        let event = match self.events.iter().position(|x| *x == name) {
            Some(i) => i,
            None => {
                self.events.push(name.clone());
                self.events.len() - 1
            }
        };
        Ok((Action::Record { event }, format!("record {name}")))
    }

    /// A wait on an event an earlier step recorded.
    fn wait(&self, e: &str, env: &Bindings, path: &[Seg]) -> Result<(Action, String), SuiteError> {
        let key = |k: &str| key_of(path, k);
        let event = self.recorded(e, env, &key("wait"))?;
        Ok((
            Action::Wait { event },
            format!("wait {}", self.events[event]),
        ))
    }

    /// The host waiting for the device, the step's stream or an event.
    fn sync(
        &self,
        d: &StepDecl,
        what: &str,
        env: &Bindings,
        path: &[Seg],
    ) -> Result<(Action, String), SuiteError> {
        let key = |k: &str| key_of(path, k);
        let target = match what.trim() {
            "device" => SyncTarget::Device,
            "stream" => SyncTarget::Stream,
            "event" => {
                let e = d.event.as_ref().ok_or_else(|| self.fail(path, "sync = \"event\" names no `event`", "add event = \"the recorded event\""))?;
                SyncTarget::Event(self.recorded(e, env, &key("event"))?)
            }
            other => return Err(self.fail(&key("sync"), format!("sync `{other}` is not something the host can wait for"), "write sync = \"device\", \"stream\" (the step's stream) or \"event\" (with event = \"e\")")),
        };
        Ok((Action::Sync { target }, format!("sync {}", what.trim())))
    }
}
