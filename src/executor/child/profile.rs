//! The real executor's profile passes: a CUPTI pass collected by the serving child (or one of its own), ncu's pass, both compared, and the hot-spot session.

use super::*;

impl ChildExecutor {
    /// Collects a CUPTI pass in the serving child, which has the context, the modules' builds and
    /// the drawn inputs already; with `--child-per-job`, in a `__cupti` child of its own.
    pub(super) fn collect_pass(
        &self,
        ctx: &RunContext,
        files: crate::executor::cupti::PassFiles,
    ) -> Result<(), String> {
        let request = Request::CuptiPass(files.request);
        if self.child_per_job {
            let log = process::Output::Log(files.log.to_path_buf());
            return process::run(&mut self.own_child(&request), &log, Some(files.timeout))
                .and_then(|f| f.success())
                .map(|_| ())
                .map_err(|e| e.to_string());
        }
        self.ask(ctx, &request, files.log, files.timeout)
            .map_err(|f| f.message())
    }

    /// `--hotspots`: the chosen jobs of the pass once more under ncu, their source lines ranked
    /// into their records (matched by job id).
    pub(super) fn add_hotspots(
        &self,
        ctx: &RunContext,
        tag: &str,
        jobs: &[&JobSpec],
        records: &mut [ProfileRecord],
    ) {
        let Some(request) = ctx.hotspots else {
            return;
        };
        let chosen: Vec<&JobSpec> = jobs.iter().copied().filter(|j| request.wants(j)).collect();
        if chosen.is_empty() {
            return;
        }
        // ncu runs a child of its own, which must find the GPU free.
        self.serving.stop();
        let name = format!("{tag}-hotspots");
        let specs = ctx.work.join(format!("{name}.specs.json"));
        let found = match (&self.ncu, write_json(&specs, &chosen)) {
            (None, _) => vec![Hotspots::failed(NO_NCU_FOR_HOTSPOTS.into(), None); chosen.len()],
            (Some(_), Err(e)) => vec![Hotspots::failed(format!("{e:#}"), None); chosen.len()],
            (Some(ncu), Ok(())) => hotspots::collect(&HotspotSession {
                ncu,
                target: self.profile_target(&specs, ctx.seed),
                jobs: &chosen,
                clock_control: ctx.clock_control,
                dir: ctx.dir,
                name,
                timeout: ctx
                    .timeout
                    .saturating_mul(u32::try_from(chosen.len() + 1).unwrap_or(u32::MAX)),
            }),
        };
        for (job, h) in chosen.iter().zip(found) {
            if let Some(r) = records.iter_mut().find(|r| r.job_id == job.id()) {
                r.hotspots = Some(h);
            }
        }
    }

    /// `--profiler both`: CUPTI's records are the run's; ncu profiles the same jobs (its
    /// duration read in the metric set's replay, as CUPTI's is) in a pass of its own,
    /// `TAG-ncu`, and `TAG.crosscheck.json` holds every value of one against the other.
    pub(super) fn profile_both(
        &self,
        ctx: &RunContext,
        tag: &str,
        jobs: &[&JobSpec],
        pass: &crate::cupti::rows::CuptiPass,
    ) -> Vec<ProfileRecord> {
        let records = crate::executor::cupti::records(pass, jobs, ctx.metrics);
        let name = format!("{tag}-ncu");
        let replay_only = RunContext {
            duration_runs: 0,
            ..*ctx
        };
        let ncu = self.profile_with_ncu(&replay_only, &name, jobs, None);
        let csv = ctx.dir.join(format!("{name}.csv"));
        let check = match read_regular_text(&csv, FileKind::NCU_CSV) {
            Ok(text) => crate::executor::cupti::crosscheck(pass, jobs, ctx.metrics, &text),
            Err(e) => {
                let mut check = crate::cupti::crosscheck::Crosscheck::default();
                let why = ncu.iter().find_map(|r| r.error.clone());
                for job in jobs {
                    check.add_unmatched(
                        job.id(),
                        &format!(
                            "ncu left no raw page ({e}){}",
                            why.as_deref().map(|w| format!(": {w}")).unwrap_or_default()
                        ),
                    );
                }
                check
            }
        };
        let out = ctx.dir.join(format!("{tag}.crosscheck.json"));
        if let Err(e) = write_json(&out, &check) {
            eprintln!("warning: the comparison of CUPTI and ncu was not written: {e:#}");
        }
        records
    }

    pub(super) fn profile_with_ncu(
        &self,
        ctx: &RunContext,
        tag: &str,
        jobs: &[&JobSpec],
        cupti_said: Option<&str>,
    ) -> Vec<ProfileRecord> {
        let failed = |why: String| {
            jobs.iter()
                .map(|j| ProfileRecord::failed(j.id(), why.clone(), None))
                .collect()
        };
        let Some(ncu) = &self.ncu else {
            return failed(match cupti_said {
                Some(why) => format!(
                    "CUPTI could not profile this pass ({why}) and there is no ncu to fall back on\n  fix: install Nsight Compute, or profile counters CUPTI can collect"
                ),
                None => "no ncu: this run was started without profiling".into(),
            });
        };
        let specs = ctx.work.join(format!("{tag}.specs.json"));
        if let Err(e) = write_json(&specs, &jobs) {
            return failed(format!("{e:#}"));
        }
        let target = self.profile_target(&specs, ctx.seed);
        let duration = (ctx.duration_runs > 0).then(|| pass::DurationSession {
            target: target
                .iter()
                .cloned()
                .chain([
                    "--profiled-runs".into(),
                    ctx.duration_runs.to_string().into(),
                ])
                .collect(),
            runs: ctx.duration_runs,
        });
        pass::profile(&pass::Pass {
            ncu,
            target,
            jobs,
            defs: ctx.metrics,
            clock_control: ctx.clock_control,
            dir: ctx.dir,
            name: tag.to_string(),
            // The metric session runs every job's launches once under replay: it may take a job's
            // time per job (the duration's session, which runs each job more often, scales this).
            timeout: ctx
                .timeout
                .saturating_mul(u32::try_from(jobs.len() + 1).unwrap_or(u32::MAX)),
            duration,
        })
    }
}
