//! The only place that knows every stage: jobs -> child processes (check + time) -> ncu -> records -> report, saving after every job.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::os::unix::process::CommandExt;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{bail, Context};
use indicatif::{ProgressBar, ProgressStyle};
use wait_timeout::ChildExt;

use crate::cli::SuiteArgs;
use crate::device::NvmlSession;
use crate::metrics::{self, Catalog, MetricDef};
use crate::model::{BoundsRecord, JobRecord, JobStatus, ProfileRecord, Record, RunInfo};
use crate::parse;
use crate::profiler::{self, Ncu};
use crate::report;
use crate::runner::{BoundsOutcome, JobOutcome, TimingConfig};
use crate::stats;
use crate::store;
use crate::suite::{self, JobSpec, Suite};

/// What `profile` adds to `run`.
pub struct ProfileOptions {
    pub set: Option<String>,
    pub metrics_files: Vec<PathBuf>,
    pub metrics: Vec<String>,
    pub clock_control: String,
}

/// The built-in metric definitions plus the user's files (`--metrics-file`, later files override earlier ones).
pub fn catalog(user_files: &[PathBuf]) -> anyhow::Result<Catalog> {
    let mut c = Catalog::builtin()?;
    for file in user_files {
        let text = std::fs::read_to_string(file)
            .with_context(|| format!("reading metric definitions {}\n  fix: pass an existing TOML file to --metrics-file (format: docs/metrics.md)", file.display()))?;
        c.add_toml(&file.display().to_string(), &text)?;
    }
    Ok(c)
}

enum ChildEnd {
    Ok,
    Failed(String),
    TimedOut,
}

/// Runs this binary's hidden subcommand as a child, output to `log`, killed after `timeout`.
fn run_child(args: &[String], log: &Path, timeout: Duration) -> anyhow::Result<ChildEnd> {
    let exe = std::env::current_exe().context("finding the gpu-lab executable to start a child")?;
    run_logged(Command::new(exe).args(args), log, timeout)
}

fn run_logged(cmd: &mut Command, log: &Path, timeout: Duration) -> anyhow::Result<ChildEnd> {
    let out = File::create(log).with_context(|| format!("creating {}", log.display()))?;
    let mut child = cmd
        // NVML numbers GPUs in PCI order; CUDA must agree for --gpu to mean one card.
        .env("CUDA_DEVICE_ORDER", "PCI_BUS_ID")
        .stdin(Stdio::null())
        .stdout(out.try_clone()?)
        .stderr(out)
        // Its own process group, so that a timeout also ends what it started (ncu's profiled program).
        .process_group(0)
        .spawn()
        .with_context(|| format!("starting {:?}", cmd.get_program()))?;
    let status = match child.wait_timeout(timeout)? {
        Some(s) => s,
        None => {
            // SAFETY: signals the process group created above, whose leader is our child.
            unsafe { libc::killpg(child.id() as libc::pid_t, libc::SIGKILL) };
            let _ = child.wait();
            return Ok(ChildEnd::TimedOut);
        }
    };
    if status.success() {
        return Ok(ChildEnd::Ok);
    }
    let text = std::fs::read_to_string(log).unwrap_or_default();
    // The end of the child's output holds the error chain; an NVRTC log can be long, keep enough of it.
    let tail: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    let msg = tail[tail.len().saturating_sub(40)..].join("\n");
    Ok(ChildEnd::Failed(if msg.is_empty() { format!("child exited with {status}") } else { msg }))
}

/// Reads a child's JSON outcome; a child that exited 0 without one is a failure, not a crash of the run.
fn read_outcome<T: serde::de::DeserializeOwned>(path: &Path) -> Result<T, String> {
    let bytes = std::fs::read(path).map_err(|e| format!("the child exited cleanly but left no readable result at {}: {e}", path.display()))?;
    serde_json::from_slice(&bytes).map_err(|e| format!("the child's result {} is not valid: {e}", path.display()))
}

impl ChildEnd {
    fn and_then_read<T: serde::de::DeserializeOwned>(self, path: &Path) -> Result<T, ChildEnd> {
        match self {
            ChildEnd::Ok => read_outcome(path).map_err(ChildEnd::Failed),
            other => Err(other),
        }
    }
}

/// Whether ncu may read the counters here: it profiles one launch of this binary's copy kernel
/// (a real launch is the only honest test), killed after `timeout` like any child.
pub fn probe_counter_permission(ncu: &Ncu, gpu: u32, timeout: Duration) -> Result<String, String> {
    let dir = std::env::temp_dir().join(format!("gpu-lab-doctor-{}", std::process::id()));
    let result = (|| -> anyhow::Result<Result<String, String>> {
        std::fs::create_dir_all(&dir)?;
        let timing = dir.join("timing.json");
        write_json(&timing, &TimingConfig { max_seconds: 0.05, min_samples: 1, ..TimingConfig::default() })?;
        let exe = std::env::current_exe().context("finding the gpu-lab executable")?;
        let log = dir.join("ncu.log");
        let report_base = dir.join("probe");
        // The arguments every profile uses, so the probe tests what a run will do.
        let mut cmd = Command::new(&ncu.path);
        cmd.args(profiler::profile_args(&[metrics::DURATION.to_string()], "none", &report_base))
            .args(["--launch-count", "1"])
            .arg(exe)
            .args(["__bounds", "--bytes", "1048576", "--gpu", &gpu.to_string()])
            .arg("--out")
            .arg(dir.join("bounds.json"))
            .arg("--timing")
            .arg(&timing)
            .env("LC_ALL", "C");
        let end = run_logged(&mut cmd, &log, timeout)?;
        let text = std::fs::read_to_string(&log).unwrap_or_default();
        let report = report_base.with_extension("ncu-rep");
        Ok(match (end, profiler::diagnose(&text)) {
            (ChildEnd::TimedOut, _) => Err(format!("ncu did not finish profiling one copy kernel in {} s", timeout.as_secs())),
            (_, Some(why)) => Err(why),
            (ChildEnd::Failed(why), None) => Err(format!("ncu failed profiling one copy kernel: {why}")),
            (ChildEnd::Ok, None) if report.is_file() => Ok("ncu profiled a copy kernel (counters readable)".into()),
            (ChildEnd::Ok, None) if text.trim().is_empty() => Err(format!("{} ran but printed nothing and wrote no report: is it Nsight Compute?", ncu.path.display())),
            (ChildEnd::Ok, None) => Err(format!("ncu ran but wrote no report; its output:\n{}", text.trim())),
        })
    })();
    let _ = std::fs::remove_dir_all(&dir);
    result.unwrap_or_else(|e| Err(format!("could not run the probe: {e:#}")))
}

fn write_json<T: serde::Serialize>(path: &Path, v: &T) -> anyhow::Result<()> {
    store::write_atomic(path, &serde_json::to_vec(v)?).with_context(|| format!("writing {}", path.display()))
}

fn timing_config(args: &SuiteArgs) -> TimingConfig {
    TimingConfig { max_seconds: args.max_seconds, target_rel_ci: args.noise / 100.0, ..TimingConfig::default() }
}

/// Rewrites report.md and metrics.csv from what is on disk: partial results stay readable.
pub fn render_reports(dir: &Path) -> anyhow::Result<()> {
    let (run, _) = store::load_run(dir)?;
    for e in [report::exporter("md")?, report::exporter("csv")?, report::exporter("svg")?] {
        store::write_atomic(&dir.join(e.file_name()), e.render(&run)?.as_bytes())?;
    }
    Ok(())
}

/// A report that cannot be rendered must not stop the measuring: the results are on disk and
/// `gpu-lab report RUN` can render them later.
fn warn_on_error(result: anyhow::Result<()>) {
    if let Err(e) = result {
        eprintln!("warning: could not write the reports: {e:#}");
    }
}

/// Fails early, with the fix, where the run cannot work at all.
fn preflight(profile: bool, gpu: u32) -> anyhow::Result<Option<Ncu>> {
    if !crate::runner::driver_present() {
        bail!("no NVIDIA GPU driver found on this machine (libcuda.so could not be loaded)\n  fix: run on a machine with an NVIDIA GPU and its driver; `gpu-lab doctor` checks every requirement. `gpu-lab report RUN` works without a GPU.");
    }
    let count = cudarc::driver::CudaContext::device_count().map_err(|e| anyhow::anyhow!("the CUDA driver cannot count GPUs: {e}\n  fix: `gpu-lab doctor` checks the driver"))?;
    if gpu as i64 >= count as i64 {
        bail!("there is no GPU {gpu}: CUDA sees {count}\n  fix: pass --gpu 0 to {} (`gpu-lab devices` lists them)", count.max(1) - 1);
    }
    if profile { Ok(Some(profiler::find().map_err(anyhow::Error::msg)?)) } else { Ok(None) }
}

/// The suite's jobs, only those of the named variants when some are named (none may match: another suite may have them).
fn select_jobs(suite: &Suite, variants: &[String]) -> anyhow::Result<Vec<JobSpec>> {
    let mut jobs = suite.jobs.clone();
    if !variants.is_empty() {
        jobs.retain(|j| variants.contains(&j.variant));
    }
    Ok(jobs)
}

/// `gpu-lab run` and `gpu-lab profile`: returns the exit code (0, or 4 when some jobs failed).
pub fn execute(args: &SuiteArgs, profile: Option<ProfileOptions>, quiet: bool, command_line: String) -> anyhow::Result<i32> {
    execute_with(args, profile, quiet, command_line, &mut |dir| println!("{}", dir.display()))
}

/// As `execute`, handing each finished run directory to `finished` (which `execute` prints).
pub fn execute_with(args: &SuiteArgs, profile: Option<ProfileOptions>, quiet: bool, command_line: String, finished: &mut dyn FnMut(&Path)) -> anyhow::Result<i32> {
    let catalog = catalog(profile.as_ref().map(|p| p.metrics_files.as_slice()).unwrap_or_default())?;
    let suites = suite::load_named(&args.suite, &suite::search_dirs(&args.suite_dir))?;
    // Everything a suite needs is resolved before the first one starts: a typo must not stop `--suite all` halfway.
    let mut plans = Vec::new();
    for suite in &suites {
        let metric_defs: Vec<MetricDef> = match &profile {
            None => Vec::new(),
            Some(p) => {
                let mut names: Vec<String> = p.set.iter().cloned().collect();
                names.extend(p.metrics.iter().cloned());
                if names.is_empty() {
                    names.push(suite.manifest.suite.metric_set.clone().unwrap_or_else(|| "memory".into()));
                }
                catalog.resolve(&names).with_context(|| format!("suite `{}`", suite.name()))?
            }
        };
        plans.push((suite, select_jobs(suite, &args.variant)?, metric_defs));
    }
    if !args.variant.is_empty() && plans.iter().all(|(_, jobs, _)| jobs.is_empty()) {
        bail!("no suite has a variant named {}\n  fix: `gpu-lab list variants` shows them", args.variant.join(", "));
    }
    let ncu = preflight(profile.is_some(), args.gpu)?;
    let nvml = NvmlSession::open();
    let device = nvml.info(args.gpu).ok();
    let mut unavailable: Vec<Vec<String>> = vec![Vec::new(); plans.len()];
    if let Some(ncu) = &ncu {
        for ((suite, _, defs), left_out) in plans.iter_mut().zip(&mut unavailable) {
            let s = profiler::query::screen_for_device(ncu, device.as_ref().map(|d| d.name.as_str()), args.gpu, std::mem::take(defs)).with_context(|| format!("suite `{}`", suite.name()))?;
            *defs = s.collectable;
            *left_out = s.unavailable.into_iter().map(|(m, why)| format!("{m}: {why}")).collect();
        }
    }
    let mut exit = 0;
    for ((suite, jobs, metric_defs), unavailable_metrics) in plans.into_iter().zip(unavailable) {
        if jobs.is_empty() {
            continue;
        }
        let gpu_name = device.as_ref().map(|d| d.name.clone()).unwrap_or_else(|| format!("gpu{}", args.gpu));
        let dir = store::new_run_dir(&args.out, suite.name(), &gpu_name).with_context(|| format!("creating a run directory under {}", args.out.display()))?;
        let code = run_suite(suite, &jobs, &metric_defs, unavailable_metrics, args, profile.as_ref(), ncu.as_ref(), &nvml, device.clone(), &dir, quiet, &command_line)?;
        exit = exit.max(code);
        if !quiet {
            eprintln!("report: {}", dir.join("report.md").display());
        }
        finished(&dir);
    }
    Ok(exit)
}

#[allow(clippy::too_many_arguments)]
fn run_suite(
    suite: &Suite,
    jobs: &[JobSpec],
    metric_defs: &[MetricDef],
    unavailable_metrics: Vec<String>,
    args: &SuiteArgs,
    profile: Option<&ProfileOptions>,
    ncu: Option<&Ncu>,
    nvml: &NvmlSession,
    device: Option<crate::device::DeviceInfo>,
    dir: &Path,
    quiet: bool,
    command_line: &str,
) -> anyhow::Result<i32> {
    let started = Instant::now();
    let timing = timing_config(args);
    let mut info = RunInfo {
        gpu_lab_version: env!("CARGO_PKG_VERSION").into(),
        command: command_line.into(),
        started: chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
        suite: suite.name().into(),
        suite_description: suite.manifest.suite.description.clone(),
        suite_source_hash: suite.source_hash.clone(),
        device,
        nvml_error: nvml.error().map(String::from),
        ncu_version: ncu.map(|n| n.version.clone()),
        clock_policy: profile.map(|p| p.clock_control.clone()).unwrap_or_else(|| "none".into()),
        timing: timing.clone(),
        cache_state: "L2 warm (repeated launches over the same buffers)".into(),
        seed: args.seed,
        metrics: metric_defs.to_vec(),
        unavailable_metrics,
        ..Default::default()
    };
    store::save_info(dir, &info)?;
    let work = dir.join("work");
    std::fs::create_dir_all(&work)?;
    let results = dir.join(store::RESULTS);
    let append = |r: &Record| store::append_jsonl(&results, r).with_context(|| format!("appending to {}", results.display()));

    let groups = crate::model::groups_in_order(jobs.iter().map(|j| &j.group));
    let steps = jobs.len() as u64 + groups.len() as u64 * if profile.is_some() { 2 } else { 1 };
    let bar = if quiet { ProgressBar::hidden() } else { ProgressBar::new(steps) };
    bar.set_style(ProgressStyle::with_template("{elapsed_precise} [{bar:30}] {pos}/{len} {msg}").unwrap_or_else(|_| ProgressStyle::default_bar()).progress_chars("=> "));
    let mut exit = 0;
    let timeout = Duration::from_secs(args.timeout);
    write_json(&work.join("timing.json"), &timing)?;

    for (gi, group) in groups.iter().enumerate() {
        let group_jobs: Vec<&JobSpec> = jobs.iter().filter(|j| &j.group == group).collect();
        // Bounds: a copy of as many bytes as the largest buffer of the group, read once and written once.
        let bytes = group_jobs.iter().flat_map(|j| j.buffers.iter().map(|b| b.bytes())).max().unwrap_or(0);
        bar.set_message(format!("{group}: copy bounds"));
        let bounds_out = work.join(format!("bounds-{gi}.json"));
        let end = run_child(
            &["__bounds".into(), "--bytes".into(), bytes.to_string(), "--out".into(), bounds_out.display().to_string(), "--gpu".into(), args.gpu.to_string(), "--timing".into(), work.join("timing.json").display().to_string()],
            &work.join(format!("bounds-{gi}.log")),
            timeout,
        )?;
        let failed = |e: String| BoundsRecord { group: group.clone(), bytes, memcpy: None, copy_kernel: None, error: Some(e) };
        let bounds = match end {
            _ if bytes == 0 => failed("the group has no buffers to copy".into()),
            ChildEnd::Ok => match read_outcome::<BoundsOutcome>(&bounds_out) {
                Ok(o) => BoundsRecord { group: group.clone(), bytes: o.bytes, memcpy: stats::summarize(&o.memcpy_samples_ms), copy_kernel: stats::summarize(&o.kernel_samples_ms), error: None },
                Err(e) => failed(e),
            },
            ChildEnd::Failed(e) => failed(e),
            ChildEnd::TimedOut => failed(format!("no result after {} s", args.timeout)),
        };
        append(&Record::Bounds(bounds))?;
        bar.inc(1);

        let mut ran: Vec<&JobSpec> = Vec::new();
        for (ji, job) in group_jobs.iter().enumerate() {
            bar.set_message(format!("{group}: {}", job.label()));
            let t0 = Instant::now();
            let spec_path = work.join(format!("job-{gi}-{ji}.json"));
            let out_path = work.join(format!("job-{gi}-{ji}.out.json"));
            write_json(&spec_path, &(job, &timing))?;
            let before = nvml.snapshot(args.gpu);
            let end = run_child(
                &["__job".into(), "--spec".into(), spec_path.display().to_string(), "--out".into(), out_path.display().to_string(), "--gpu".into(), args.gpu.to_string(), "--seed".into(), args.seed.to_string()],
                &work.join(format!("job-{gi}-{ji}.log")),
                timeout,
            )?;
            let after = nvml.snapshot(args.gpu);
            let job_log = work.join(format!("job-{gi}-{ji}.log"));
            let description = suite.manifest.variants.iter().find(|v| v.name == job.variant).map(|v| v.description.clone()).unwrap_or_default();
            let mut record = JobRecord {
                id: job.id.clone(),
                variant: job.variant.clone(),
                label: job.label(),
                description,
                variant_params: job.variant_params.clone(),
                group: job.group.clone(),
                group_params: job.group_params.clone(),
                status: JobStatus::Failed,
                error: None,
                check: None,
                samples_ms: Vec::new(),
                runs_per_sample: 0,
                stopped_by: String::new(),
                summary: None,
                bytes: job.bytes,
                flops: job.flops,
                launches: job.launches.len(),
                nvml_before: before,
                nvml_after: after,
                wall_seconds: 0.0,
            };
            match end.and_then_read::<JobOutcome>(&out_path) {
                Ok(o) => {
                    record.status = if o.check.as_ref().is_none_or(|c| c.passed) { JobStatus::Ok } else { JobStatus::Wrong };
                    record.summary = stats::summarize(&o.samples_ms);
                    record.check = o.check;
                    record.samples_ms = o.samples_ms;
                    record.runs_per_sample = o.runs_per_sample;
                    record.stopped_by = o.stopped_by;
                    ran.push(job);
                }
                Err(ChildEnd::TimedOut) => {
                    record.status = JobStatus::TimedOut;
                    record.error = Some(format!("no result after {} s; the child was killed (raise --timeout if the kernel is just slow)", args.timeout));
                }
                Err(ChildEnd::Failed(e)) => record.error = Some(e),
                Err(ChildEnd::Ok) => unreachable!("and_then_read turns Ok into a result or a failure"),
            }
            if record.status != JobStatus::Ok {
                exit = 4;
            }
            if let Some(e) = record.error.as_mut() {
                // work/ goes when the run ends; a failed job's whole log stays.
                let kept = dir.join("logs").join(format!("job-{gi}-{ji}.log"));
                if std::fs::create_dir_all(dir.join("logs")).and_then(|_| std::fs::copy(&job_log, &kept)).is_ok() {
                    e.push_str(&format!("\n(full log: logs/job-{gi}-{ji}.log)"));
                }
            }
            record.wall_seconds = t0.elapsed().as_secs_f64();
            append(&Record::Job(record))?;
            bar.inc(1);
        }

        if let (Some(p), Some(ncu)) = (profile, ncu) {
            bar.set_message(format!("{group}: ncu ({} variants)", ran.len()));
            let records = profile_group(ncu, p, metric_defs, &ran, args, dir, &work, gi)
                .unwrap_or_else(|e| ran.iter().map(|j| ProfileRecord::failed(j, format!("{e:#}"), None)).collect());
            for r in &records {
                if r.error.is_some() || !r.missing.is_empty() {
                    exit = 4;
                }
                append(&Record::Profile(r.clone()))?;
            }
            bar.inc(1);
        }
        warn_on_error(render_reports(dir));
    }
    bar.finish_and_clear();
    info.finished = Some(chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true));
    info.wall_seconds = Some(started.elapsed().as_secs_f64());
    store::save_info(dir, &info)?;
    warn_on_error(render_reports(dir));
    let _ = std::fs::remove_dir_all(&work);
    Ok(exit)
}

/// One ncu session for a group: every job's launches once, in order, then mapped back to the jobs.
#[allow(clippy::too_many_arguments)]
fn profile_group(ncu: &Ncu, p: &ProfileOptions, defs: &[MetricDef], jobs: &[&JobSpec], args: &SuiteArgs, dir: &Path, work: &Path, gi: usize) -> anyhow::Result<Vec<ProfileRecord>> {
    if jobs.is_empty() {
        return Ok(Vec::new());
    }
    let failed = |msg: String| jobs.iter().map(|j| ProfileRecord::failed(j, msg.clone(), None)).collect();
    let specs_path = work.join(format!("profile-{gi}.json"));
    write_json(&specs_path, &jobs)?;
    let report_base: PathBuf = dir.join(format!("profile-{gi}"));
    let report_file = report_base.with_extension("ncu-rep");
    let exe = std::env::current_exe()?;
    let mut cmd = Command::new(&ncu.path);
    cmd.args(profiler::profile_args(&metrics::counters_needed(defs), &p.clock_control, &report_base))
        .arg(exe)
        .args(["__profile", "--specs", &specs_path.display().to_string(), "--gpu", &args.gpu.to_string(), "--seed", &args.seed.to_string()])
        .env("LC_ALL", "C");
    let log = dir.join(format!("profile-{gi}.log"));
    let timeout = Duration::from_secs(args.timeout * (jobs.len() as u64 + 1));
    let end = run_logged(&mut cmd, &log, timeout)?;
    let log_text = std::fs::read_to_string(&log).unwrap_or_default();
    let diagnosis = profiler::diagnose(&log_text);
    if let Some(why) = &diagnosis {
        if !report_file.exists() || log_text.contains("ERR_NVGPUCTRPERM") {
            return Ok(failed(why.clone()));
        }
    }
    // A problem ncu reported while still writing a report is attached to the jobs it left short.
    let mut trouble = diagnosis;
    match end {
        ChildEnd::TimedOut => return Ok(failed(format!("ncu did not finish within {} s", timeout.as_secs()))),
        ChildEnd::Failed(e) if !report_file.exists() => return Ok(failed(format!("ncu failed: {e}"))),
        ChildEnd::Failed(e) => trouble = Some(format!("ncu or the profiled pass failed: {e}")),
        ChildEnd::Ok => {}
    }
    let export = Command::new(&ncu.path).args(profiler::export_args(&report_file)).env("LC_ALL", "C").output().context("running ncu --import")?;
    if !export.status.success() {
        return Ok(failed(format!("`ncu --import {}` failed: {}", report_file.display(), String::from_utf8_lossy(&export.stderr).trim())));
    }
    let csv = String::from_utf8_lossy(&export.stdout).to_string();
    store::write_atomic(&dir.join(format!("profile-{gi}.csv")), csv.as_bytes())?;
    let parsed = match parse::parse_ncu_csv(&csv) {
        Ok(p) => p,
        Err(e) => return Ok(failed(format!("{e}; see {}", log.display()))),
    };
    let rel = report_file.file_name().map(|n| n.to_string_lossy().to_string());
    Ok(profiler::assign_kernels(jobs, &parsed.kernels)
        .into_iter()
        .map(|(job, rows)| match rows {
            Ok(rows) => {
                let mut r = profiler::profile_record(job, defs, &rows, rel.clone());
                if !r.missing.is_empty() && r.error.is_none() {
                    r.error = trouble.clone();
                }
                r
            }
            Err(e) => ProfileRecord::failed(job, e, rel.clone()),
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    // Orchestration only: stand-in children that hang or fail, no GPU and no numbers.
    #[test]
    fn a_hung_child_is_killed_at_its_timeout() {
        let d = tempfile::tempdir().unwrap();
        let t0 = Instant::now();
        let end = run_logged(Command::new("sh").args(["-c", "sleep 30"]), &d.path().join("log"), Duration::from_millis(300)).unwrap();
        assert!(matches!(end, ChildEnd::TimedOut));
        assert!(t0.elapsed() < Duration::from_secs(10));
    }

    #[test]
    fn a_failing_child_reports_the_end_of_its_output() {
        let d = tempfile::tempdir().unwrap();
        let script = "echo starting; echo 'error: CUDA driver error while running the variant: illegal address' >&2; exit 1";
        match run_logged(Command::new("sh").args(["-c", script]), &d.path().join("log"), Duration::from_secs(10)).unwrap() {
            ChildEnd::Failed(msg) => assert!(msg.contains("illegal address") && msg.contains("starting"), "{msg}"),
            _ => panic!("expected a failure"),
        }
        assert!(matches!(run_logged(Command::new("sh").args(["-c", "exit 0"]), &d.path().join("log2"), Duration::from_secs(10)).unwrap(), ChildEnd::Ok));
    }
}
