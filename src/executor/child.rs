//! The real executor: jobs in a child process of this binary on one GPU, served in turn by one `__jobs` child (a fault or a hang ends that child and fails that job only; the next job starts another), and ncu over a child that launches each job once.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use super::contract::{Environment, Executor, Failure, RunContext};
use super::job_server::{JobRequest, Request, Serving};
use super::protocol;

mod profile;
use crate::device::{self, NvmlSession};
use crate::metrics::MetricDef;
use crate::parse::query_metrics::Screened;
use crate::process;
use crate::profiler::hotspots::{self, HotspotSession};
use crate::profiler::{self, Ncu, ProfilerChoice, pass};
use crate::records::{
    BatchRun, BoundSpec, BoundsOutcome, ComputeOutcome, Hotspots, JobOutcome, Math, ProfileRecord,
    RoofRecord, SanitizeRecord, SanitizerTool, Snapshot,
};
use crate::sanitizer::{self, Sanitizer};
use crate::store::{FileKind, read_regular_text, write_json};
use crate::suite::JobSpec;

/// Why a job asked for hot spots has none where no ncu was found (CUPTI needed none).
const NO_NCU_FOR_HOTSPOTS: &str = "no ncu: --hotspots reads ncu's SourceCounters and WarpStateStats sections\n  fix: install Nsight Compute and put it on PATH, or set NCU=/path/to/ncu";

pub struct ChildExecutor {
    /// This binary: the children are its hidden subcommands.
    exe: PathBuf,
    gpu: u32,
    cache_dir: Option<PathBuf>,
    ncu: Option<Ncu>,
    profiler: ProfilerChoice,
    sanitizer: Option<Sanitizer>,
    nvml: NvmlSession,
    /// The `__jobs` child serving this GPU's jobs, while one runs.
    serving: Serving,
    /// The hidden `--child-per-job`: every job in a `__job` child of its own, as before servers.
    child_per_job: bool,
}

impl ChildExecutor {
    /// Fails early, with the fix, where no job could run: no driver, no such GPU.
    pub fn start(
        exe: PathBuf,
        gpu: u32,
        cache_dir: Option<PathBuf>,
    ) -> Result<ChildExecutor, device::DeviceError> {
        device::require_gpu(gpu)?;
        Ok(ChildExecutor {
            exe,
            gpu,
            cache_dir,
            ncu: None,
            profiler: ProfilerChoice::Ncu,
            sanitizer: None,
            nvml: NvmlSession::open(),
            serving: Serving::default(),
            child_per_job: false,
        })
    }

    /// Every job in a child process of its own (the hidden `--child-per-job`: for measuring what
    /// the serving child saves, and as a way back should it ever misbehave).
    pub fn with_child_per_job(self, child_per_job: bool) -> ChildExecutor {
        ChildExecutor {
            child_per_job,
            ..self
        }
    }

    /// Profiles with this ncu.
    pub fn with_ncu(self, ncu: Ncu) -> ChildExecutor {
        ChildExecutor {
            ncu: Some(ncu),
            ..self
        }
    }

    /// Profiles with this profiler (CUPTI falls back to ncu, where there is one, pass by pass).
    pub fn with_profiler(self, profiler: ProfilerChoice) -> ChildExecutor {
        ChildExecutor { profiler, ..self }
    }

    /// Sanitizes with this compute-sanitizer.
    pub fn with_sanitizer(self, sanitizer: Sanitizer) -> ChildExecutor {
        ChildExecutor {
            sanitizer: Some(sanitizer),
            ..self
        }
    }

    fn child(&self, subcommand: &str) -> Command {
        let mut c = Command::new(&self.exe);
        c.arg(subcommand).args(["--gpu", &self.gpu.to_string()]);
        if let Some(d) = &self.cache_dir {
            c.arg("--cache").arg(d);
        }
        // NVML numbers GPUs in PCI order; CUDA must agree for --gpu to mean one card.
        c.env("CUDA_DEVICE_ORDER", "PCI_BUS_ID");
        c
    }

    /// The child of its own that does what `request` asks the serving child
    /// (`--child-per-job`'s way).
    fn own_child(&self, request: &Request) -> Command {
        let (subcommand, args) = protocol::own_child(request);
        let mut cmd = self.child(subcommand);
        cmd.args(args);
        cmd
    }

    /// Runs a child to its end and reads the JSON it wrote to `out`.
    fn run_child<T: serde::de::DeserializeOwned>(
        &self,
        ctx: &RunContext,
        mut cmd: Command,
        log: &Path,
        out: &Path,
    ) -> Result<T, Failure> {
        match process::run(
            &mut cmd,
            &process::Output::Log(log.to_path_buf()),
            Some(ctx.timeout),
        )
        .and_then(|f| f.success())
        {
            Ok(_) => process::read_result(out).map_err(|e| Failure::Failed {
                message: e.to_string(),
                log: Some(log.to_path_buf()),
            }),
            Err(e) => Err(Failure::of_child(
                &e.command,
                e.kind,
                Some(log.to_path_buf()),
            )),
        }
    }

    /// Asks the serving child for `request` and reads the JSON it wrote to `out`; with
    /// `--child-per-job`, a child of its own does it.
    fn served_or_own<T: serde::de::DeserializeOwned>(
        &self,
        ctx: &RunContext,
        request: Request,
        log: &Path,
        out: &Path,
    ) -> Result<T, Failure> {
        if self.child_per_job {
            return self.run_child(ctx, self.own_child(&request), log, out);
        }
        self.ask(ctx, &request, log, ctx.timeout)?;
        // The served request's log is written only where it failed.
        process::read_result(out).map_err(|e| Failure::Failed {
            message: e.to_string(),
            log: None,
        })
    }

    /// Asks this GPU's serving child (started where none runs) for `request`, at most `timeout`.
    fn ask(
        &self,
        ctx: &RunContext,
        request: &Request,
        log: &Path,
        timeout: Duration,
    ) -> Result<(), Failure> {
        let name = format!("jobs-gpu{}", self.gpu);
        let start = || self.child(protocol::JOBS);
        self.serving.ask(start, &name, ctx, request, log, timeout)
    }

    /// The argument list ncu runs: this binary's profile pass over `specs`.
    fn profile_target(&self, specs: &Path, seed: u64) -> Vec<OsString> {
        let cmd = self.child(protocol::PROFILE_PASS);
        let mut target: Vec<OsString> = std::iter::once(cmd.get_program().to_os_string())
            .chain(cmd.get_args().map(|a| a.to_os_string()))
            .collect();
        target.extend([
            "--specs".into(),
            specs.as_os_str().to_os_string(),
            "--seed".into(),
            seed.to_string().into(),
        ]);
        target
    }
}

impl Executor for ChildExecutor {
    fn environment(&self) -> Environment {
        let device = self.nvml.info(self.gpu).ok();
        Environment {
            label: device
                .as_ref()
                .map(|d| d.name.clone())
                .unwrap_or_else(|| format!("gpu{}", self.gpu)),
            device,
            nvml_error: self.nvml.error(),
            ncu_version: self.ncu.as_ref().map(|n| n.version.clone()),
            mock: false,
        }
    }

    fn screen(&self, defs: Vec<MetricDef>) -> anyhow::Result<Screened> {
        match &self.ncu {
            Some(ncu) => profiler::query::screen_for_device(
                ncu,
                self.cache_dir.as_deref(),
                self.nvml.info(self.gpu).ok().map(|d| d.name).as_deref(),
                self.gpu,
                defs,
            ),
            None => Ok(Screened {
                collectable: defs,
                unavailable: Vec::new(),
            }),
        }
    }

    fn snapshot(&self) -> Option<Snapshot> {
        self.nvml.snapshot(self.gpu)
    }

    fn bounds(&self, ctx: &RunContext, tag: &str, bytes: u64) -> Result<BoundsOutcome, Failure> {
        let (timing, out, log) = (
            ctx.work.join(format!("{tag}.timing.json")),
            ctx.work.join(format!("{tag}.out.json")),
            ctx.work.join(format!("{tag}.log")),
        );
        write_json(&timing, ctx.timing).map_err(|e| Failure::Failed {
            message: format!("{e:#}"),
            log: None,
        })?;
        let request = Request::Bounds {
            bytes,
            out: out.clone(),
            timing: timing.clone(),
            fma: ctx.fma,
            host_link: ctx.host_link,
        };
        self.served_or_own(ctx, request, &log, &out)
    }

    fn compute_bound(
        &self,
        ctx: &RunContext,
        tag: &str,
        bound: &BoundSpec,
    ) -> Result<ComputeOutcome, Failure> {
        let (spec, timing, out, log) = (
            ctx.work.join(format!("{tag}.bound.json")),
            ctx.work.join(format!("{tag}.timing.json")),
            ctx.work.join(format!("{tag}.out.json")),
            ctx.work.join(format!("{tag}.log")),
        );
        write_json(&spec, bound)
            .and_then(|_| write_json(&timing, ctx.timing))
            .map_err(|e| Failure::Failed {
                message: format!("{e:#}"),
                log: None,
            })?;
        let request = Request::ComputeBound {
            bound: spec.clone(),
            out: out.clone(),
            timing: timing.clone(),
        };
        self.served_or_own(ctx, request, &log, &out)
    }

    fn roofs(&self, ctx: &RunContext, tag: &str, math: Math) -> Result<Vec<RoofRecord>, Failure> {
        let (timing, out, log) = (
            ctx.work.join(format!("{tag}.timing.json")),
            ctx.work.join(format!("{tag}.out.json")),
            ctx.work.join(format!("{tag}.log")),
        );
        write_json(&timing, ctx.timing).map_err(|e| Failure::Failed {
            message: format!("{e:#}"),
            log: None,
        })?;
        let request = Request::Roofs {
            math: math.name().to_string(),
            out: out.clone(),
            timing: timing.clone(),
        };
        self.served_or_own(ctx, request, &log, &out)
    }

    fn prebuild(&self, ctx: &RunContext, tag: &str, jobs: &[&JobSpec]) {
        let (specs, log) = (
            ctx.work.join(format!("{tag}.specs.json")),
            ctx.work.join(format!("{tag}.log")),
        );
        if write_json(&specs, &jobs).is_err() {
            return;
        }
        let mut cmd = self.child(protocol::BUILD);
        cmd.arg("--specs").arg(&specs);
        // Best effort: each job still compiles what is missing, and says why it could not.
        let _ = process::run(&mut cmd, &process::Output::Log(log), Some(ctx.timeout));
    }

    fn job(&self, ctx: &RunContext, tag: &str, job: &JobSpec) -> Result<JobOutcome, Failure> {
        let (spec, out, log) = (
            ctx.work.join(format!("{tag}.json")),
            ctx.work.join(format!("{tag}.out.json")),
            ctx.work.join(format!("{tag}.log")),
        );
        write_json(&spec, &(job, ctx.timing)).map_err(|e| Failure::Failed {
            message: format!("{e:#}"),
            log: None,
        })?;
        let request = Request::Job(JobRequest {
            spec: spec.clone(),
            out: out.clone(),
            seed: ctx.seed,
        });
        self.served_or_own(ctx, request, &log, &out)
    }

    fn profile(&self, ctx: &RunContext, tag: &str, jobs: &[&JobSpec]) -> Vec<ProfileRecord> {
        let cupti_said = match self.profiler {
            ProfilerChoice::Cupti => {
                match super::cupti::profile(|files| self.collect_pass(ctx, files), ctx, tag, jobs) {
                    Ok(mut records) => {
                        self.add_hotspots(ctx, tag, jobs, &mut records);
                        return records;
                    }
                    Err(why) => Some(why),
                }
            }
            ProfilerChoice::Both => {
                match super::cupti::collect(|files| self.collect_pass(ctx, files), ctx, tag, jobs) {
                    Ok(pass) => {
                        self.serving.stop();
                        return self.profile_both(ctx, tag, jobs, &pass);
                    }
                    Err(why) => Some(why),
                }
            }
            ProfilerChoice::Ncu => None,
        };
        // ncu runs a child of its own, which must find the GPU free.
        self.serving.stop();
        let mut records = self.profile_with_ncu(ctx, tag, jobs, cupti_said.as_deref());
        if let Some(why) = &cupti_said {
            for r in &mut records {
                r.profiler = Some(super::cupti::by_ncu_because(why));
            }
        }
        self.add_hotspots(ctx, tag, jobs, &mut records);
        records
    }

    /// The job's launches once (its profile pass, which launches exactly what a checked launch
    /// does), under compute-sanitizer.
    fn sanitize(
        &self,
        ctx: &RunContext,
        tag: &str,
        job: &JobSpec,
        tool: SanitizerTool,
        timeout: Duration,
    ) -> SanitizeRecord {
        self.serving.stop();
        let blank = SanitizeRecord::new(job.id(), &job.label(), &job.key.group, tool);
        let Some(s) = &self.sanitizer else {
            return blank
                .failed("no compute-sanitizer: this run was started without --sanitize".into());
        };
        let specs = ctx.work.join(format!("{tag}.specs.json"));
        if let Err(e) = write_json(&specs, &[job]) {
            return blank.failed(format!("{e:#}"));
        }
        let (xml, log) = (format!("{tag}.xml"), format!("{tag}.log"));
        let record = sanitizer::sanitize(
            s,
            tool,
            &self.profile_target(&specs, ctx.seed),
            (&ctx.dir.join(&xml), &ctx.dir.join(&log)),
            timeout,
            blank,
        );
        SanitizeRecord {
            report_file: Some(xml),
            log_file: Some(log),
            ..record
        }
    }

    /// The jobs' profile passes one after another in one child under compute-sanitizer; the
    /// child counts the jobs it finished in a progress file.
    fn sanitize_batch(
        &self,
        ctx: &RunContext,
        tag: &str,
        jobs: &[&JobSpec],
        tool: SanitizerTool,
        timeout: Duration,
    ) -> BatchRun {
        self.serving.stop();
        let blank = SanitizeRecord::new(tag, &format!("{} variants", jobs.len()), "", tool);
        let unanswered = |record: SanitizeRecord| BatchRun {
            record,
            report_read: false,
            completed: 0,
        };
        let Some(s) = &self.sanitizer else {
            return unanswered(
                blank
                    .failed("no compute-sanitizer: this run was started without --sanitize".into()),
            );
        };
        let (specs, progress) = (
            ctx.work.join(format!("{tag}.specs.json")),
            ctx.work.join(format!("{tag}.progress.json")),
        );
        if let Err(e) = write_json(&specs, &jobs) {
            return unanswered(blank.failed(format!("{e:#}")));
        }
        let mut target = self.profile_target(&specs, ctx.seed);
        target.extend(["--progress".into(), progress.as_os_str().to_os_string()]);
        let (xml, log) = (format!("{tag}.xml"), format!("{tag}.log"));
        let per_job = u32::try_from(jobs.len()).unwrap_or(u32::MAX);
        let (record, report_read) = sanitizer::sanitize_reading(
            s,
            tool,
            &target,
            (&ctx.dir.join(&xml), &ctx.dir.join(&log)),
            timeout.saturating_mul(per_job),
            blank,
        );
        // No progress file: the child finished no job.
        let completed = read_regular_text(&progress, FileKind::CHILD_MESSAGE)
            .ok()
            .and_then(|t| t.trim().parse::<usize>().ok())
            .unwrap_or(0)
            .min(jobs.len());
        BatchRun {
            record: SanitizeRecord {
                report_file: Some(xml),
                log_file: Some(log),
                batch_of: Some(jobs.len()),
                ..record
            },
            report_read,
            completed,
        }
    }
}
