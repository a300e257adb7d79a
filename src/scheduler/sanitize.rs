//! The sanitize stage (`--sanitize`): before any timing, each variant once under each compute-sanitizer tool asked for, at the cheapest job of its sweep; every record saved as it comes.

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::time::Instant;

use crate::executor::Executor;
use crate::records::{Record, SanitizeRecord, SanitizerTool};
use crate::store::{FileKind, read_regular_text};
use crate::suite::JobSpec;

use super::planning::RunSettings;
use super::sanitize_batch::{Settled, settle};
use super::shards::expected_cost;
use super::suite_run::{SuiteRun, now};

/// Why racecheck passes a variant by.
pub const NO_SHARED_MEMORY: &str =
    "no shared memory in its kernels (racecheck checks only shared memory)";

/// One job per variant (its label: name and own parameters), in the order the variants first
/// appear: the job the manifest's `sanitize` shape names (in `named`), else the cheapest of its
/// sweep by expected cost (the smallest group).
pub fn chosen_jobs<'j>(jobs: &'j [JobSpec], named: &'j [JobSpec]) -> Vec<&'j JobSpec> {
    let mut chosen: Vec<&JobSpec> = Vec::new();
    for job in jobs {
        match chosen.iter_mut().find(|c| c.label() == job.label()) {
            Some(c) if expected_cost(job) < expected_cost(c) => *c = job,
            Some(_) => {}
            None => chosen.push(job),
        }
    }
    for c in &mut chosen {
        if let Some(n) = named.iter().find(|n| n.label() == c.label()) {
            *c = n;
        }
    }
    chosen
}

/// Whether a launch asks for dynamic shared memory or a launched kernel's body declares
/// `__shared__` (where the source cannot be read or a body not found, racecheck runs rather
/// than miss a race; shared memory declared in a `__device__` function it calls is not seen).
pub fn uses_shared_memory(job: &JobSpec, source: Option<&str>) -> bool {
    job.launches.iter().any(|l| l.shared_bytes > 0)
        || job.launches.iter().any(|l| {
            source
                .and_then(|s| kernel_body(s, &l.kernel))
                .is_none_or(|body| body.contains("__shared__"))
        })
}

/// The body (braces included) of the `__global__` function `kernel` names (`ns::copy<float, 4>`
/// is `copy`), when the source has one.
fn kernel_body<'s>(source: &'s str, kernel: &str) -> Option<&'s str> {
    let base = kernel.split('<').next()?.rsplit("::").next()?.trim();
    let mut from = 0;
    while let Some(at) = source[from..].find(base).map(|a| a + from) {
        from = at + base.len();
        let before = &source[source[..at].rfind(['}', ';']).map_or(0, |b| b + 1)..at];
        let after = source[from..].trim_start();
        let named = !source[..at].ends_with(|c: char| c.is_alphanumeric() || c == '_');
        if !named || !before.contains("__global__") || !after.starts_with(['(', '<']) {
            continue;
        }
        let open = from + source[from..].find('{')?;
        let mut depth = 0usize;
        for (i, c) in source[open..].char_indices() {
            match c {
                '{' => depth += 1,
                '}' => {
                    depth -= 1;
                    if depth == 0 {
                        return Some(&source[open..=open + i]);
                    }
                }
                _ => {}
            }
        }
        return None;
    }
    None
}

/// The tools asked for, each once, in their order of cost.
fn tools(settings: &RunSettings) -> Vec<SanitizerTool> {
    let mut tools = settings.sanitize.clone();
    tools.sort();
    tools.dedup();
    tools
}

/// The variants (by label) a tool failed, with what the tool said: their jobs are then recorded
/// wrong, as a check that failed would make them.
pub type Failed = BTreeMap<String, String>;

/// Sanitizes one suite's variants on `executor`, tool by tool, all in one child (those a finding
/// or a crash leaves in doubt again alone; each alone with `--sanitize-each`); returns the
/// variants that failed (a finding, or no answer from the tool).
pub(super) fn sanitize_suite(
    executor: &dyn Executor,
    sr: &SuiteRun,
    settings: &RunSettings,
) -> anyhow::Result<Failed> {
    sr.began.get_or_init(|| (Instant::now(), now()));
    // The manifest's sanitize jobs are the suite's own, not this GPU's copy: their grids that
    // name SMS are bound here.
    let mut owned: Vec<JobSpec> = chosen_jobs(&sr.plan.jobs, &sr.plan.suite.sanitize_jobs)
        .into_iter()
        .cloned()
        .collect();
    super::planning::bind_device_grids(&mut owned, executor)?;
    let jobs: Vec<&JobSpec> = owned.iter().collect();
    let sources: Vec<Option<String>> = jobs
        .iter()
        .map(|j| read_regular_text(&j.program.source_path, FileKind::KERNEL_SOURCE).ok())
        .collect();
    let stage = Stage {
        executor,
        sr,
        settings,
        ctx: sr.ctx(settings.seed),
        failed: RefCell::new(Failed::new()),
    };
    for tool in tools(settings) {
        let mut checked: Vec<usize> = Vec::new();
        for (i, job) in jobs.iter().enumerate() {
            if tool == SanitizerTool::Racecheck && !uses_shared_memory(job, sources[i].as_deref()) {
                stage.keep(SanitizeRecord {
                    skipped: Some(NO_SHARED_MEMORY.into()),
                    ..SanitizeRecord::new(job.id(), &job.label(), &job.key.group, tool)
                })?;
            } else {
                checked.push(i);
            }
        }
        if settings.sanitize_each {
            for i in checked {
                stage.alone(&jobs, i, tool)?;
            }
            continue;
        }
        let (executor, ctx, timeout) = (stage.executor, &stage.ctx, settings.sanitize_timeout);
        let tag = |n: usize| format!("sanitize-batch{n}-{}", tool.as_str());
        settle(
            &jobs,
            checked,
            |n, members| executor.sanitize_batch(ctx, &tag(n), members, tool, timeout),
            |settled| match settled {
                Settled::Clean(record) => stage.keep(*record),
                Settled::Alone(i) => stage.alone(&jobs, i, tool),
            },
        )?;
    }
    Ok(stage.failed.into_inner())
}

/// What the sanitize stage of one suite needs at hand, and the variants failed so far.
struct Stage<'a> {
    executor: &'a dyn Executor,
    sr: &'a SuiteRun<'a>,
    settings: &'a RunSettings,
    ctx: crate::executor::RunContext<'a>,
    failed: RefCell<Failed>,
}

impl Stage<'_> {
    /// Job `i` alone under `tool` in a child of its own.
    fn alone(&self, jobs: &[&JobSpec], i: usize, tool: SanitizerTool) -> anyhow::Result<()> {
        let tag = format!("sanitize-{i}-{}", tool.as_str());
        let record = self.executor.sanitize(
            &self.ctx,
            &tag,
            jobs[i],
            tool,
            self.settings.sanitize_timeout,
        );
        self.keep(record)
    }

    /// Says the verdict, notes a failed variant and saves the record.
    fn keep(&self, record: SanitizeRecord) -> anyhow::Result<()> {
        let tool = record.tool.as_str();
        if !self.settings.quiet {
            eprintln!("sanitize {tool} {}: {}", record.variant, record.verdict());
        }
        if record.fails() {
            let said = format!("compute-sanitizer {tool}: {}", record.verdict());
            self.failed
                .borrow_mut()
                .entry(record.variant.clone())
                .and_modify(|s| *s = format!("{s}; {said}"))
                .or_insert(said);
        }
        self.sr.append(&Record::Sanitize(record))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_kernels_own_body_says_whether_it_uses_shared_memory() {
        let src = include_str!("../../tests/gpu/sanitize-planted/planted.cu");
        assert!(
            !kernel_body(src, "copy_clean")
                .unwrap()
                .contains("__shared__")
        );
        assert!(
            !kernel_body(src, "copy_oob_write")
                .unwrap()
                .contains("__shared__")
        );
        assert!(
            kernel_body(src, "copy_smem_race")
                .unwrap()
                .contains("__shared__")
        );
        assert!(
            kernel_body(src, "ns::copy_divergent_barrier<float>")
                .unwrap()
                .contains("__shared__")
        );
        assert_eq!(kernel_body(src, "no_such_kernel"), None);
    }
}
