//! `gpu-lab ncu` (profile a program gpu-lab did not build) and `gpu-lab import` (read ncu output it did not produce): named metrics per kernel in nvprof's table.

use std::collections::HashSet;
use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Mutex;

use anyhow::{bail, Context};

use crate::cli::{ImportArgs, NcuArgs};
use crate::device::NvmlSession;
use crate::metrics::{self, Catalog, MetricDef, MetricsError};
use crate::parse::{self, CsvTable, NcuOutput};
use crate::profiler::{self, Ncu};
use crate::report::nvprof::{self, DEVICE_NAME};
use crate::scheduler;

/// Exit code when the table was printed but the program or a kernel failed (as `run`'s "some jobs failed").
const FAILED: i32 = 4;

/// What `gpu-lab ncu` shows when no metric is named: each kernel's duration, like nvprof's plain summary.
const DEFAULT_METRIC: &str = "duration";

/// The metrics to show from a table holding `available`: the ones asked for (names found in the
/// file are accepted as they are), or every catalog metric the file can give, and how many were skipped.
pub fn choose_metrics(catalog: &Catalog, requested: &[String], available: &[String]) -> anyhow::Result<(Vec<MetricDef>, usize)> {
    let present: HashSet<&str> = available.iter().map(String::as_str).collect();
    if requested.is_empty() {
        let defs: Vec<MetricDef> = catalog.metrics.values().filter(|d| d.counters.values().all(|c| present.contains(c.as_str()))).cloned().collect();
        if defs.is_empty() {
            let sample: Vec<&str> = available.iter().take(5).map(String::as_str).collect();
            bail!(
                "no gpu-lab metric can be computed from this file: it holds {} metrics ({}{}), none of the counters gpu-lab's metrics need\n  fix: export the raw page with the counters (`ncu -i REPORT --csv --page raw --print-units base`), or name metrics of the file with --metrics",
                available.len(),
                sample.join(", "),
                if available.len() > sample.len() { ", …" } else { "" }
            );
        }
        return Ok((defs.clone(), catalog.metrics.len() - defs.len()));
    }
    let mut defs: Vec<MetricDef> = Vec::new();
    for name in requested {
        let resolved = if present.contains(name.as_str()) && !catalog.metrics.contains_key(name) && !catalog.sets.contains_key(name) {
            vec![metrics::raw_metric(name)]
        } else {
            catalog.resolve(std::slice::from_ref(name)).map_err(|e| match e {
                MetricsError::Unknown { .. } => match metrics::nearest(name, available) {
                    near if near.is_empty() => e.into(),
                    near => anyhow::anyhow!("{e}\n  the file's own metrics closest to it: {}", near.join(", ")),
                },
                other => other.into(),
            })?
        };
        for d in resolved {
            if !defs.iter().any(|o| o.name == d.name) {
                defs.push(d);
            }
        }
    }
    Ok((defs, 0))
}

/// Reads the kernels with only the columns these metrics need (plus the device's name).
fn read_kernels(table: &CsvTable, defs: &[MetricDef]) -> anyhow::Result<NcuOutput> {
    let mut wanted: HashSet<&str> = defs.iter().flat_map(|d| d.counters.values().map(String::as_str)).collect();
    wanted.insert(DEVICE_NAME);
    Ok(table.kernels(&|name| wanted.contains(name))?)
}

/// Prints the table to stdout and what could not be shown to stderr; returns the exit code.
fn print_summary(out: &NcuOutput, defs: &[MetricDef], format: &str, skipped: usize, source: &str) -> anyhow::Result<i32> {
    for e in &out.errors {
        eprintln!("ncu: {e}");
    }
    if out.kernels.is_empty() {
        bail!("{source} holds no profiled kernel\n  fix: check that the program launched kernels (and that --kernel/--launch-count selected some)");
    }
    let summary = nvprof::summarize(&out.kernels, defs)?;
    if summary.missing.len() == defs.len() {
        let needs: Vec<String> = summary.missing.iter().map(|m| format!("{} needs {}", m.metric, m.counters.join(", "))).collect();
        bail!("none of the requested metrics can be computed from {source}: {}\n  fix: profile with these counters (`gpu-lab ncu --metrics ...` collects them), or ask for metrics the file holds", needs.join("; "));
    }
    print!("{}", nvprof::render(&summary, format)?);
    for m in &summary.missing {
        eprintln!("warning: {} not computed: {source} lacks {}", m.metric, m.counters.join(", "));
    }
    if skipped > 0 {
        eprintln!("note: {skipped} other gpu-lab metrics skipped: their counters are not in {source} (`gpu-lab list metrics` shows what each needs)");
    }
    let faulted = summary.faulted_launches();
    if faulted > 0 {
        eprintln!("warning: {faulted} kernel launch(es) faulted: ncu reported nan values or a (0, 0, 0) grid; their numbers are not measurements");
        return Ok(FAILED);
    }
    Ok(0)
}

/// ncu's raw page of a report, as the CSV this module reads.
fn export_report(ncu: &Ncu, report: &Path) -> anyhow::Result<String> {
    let out = Command::new(&ncu.path).args(profiler::export_args(report)).env("LC_ALL", "C").output().with_context(|| format!("running {} --import", ncu.path.display()))?;
    let stdout = String::from_utf8_lossy(&out.stdout).to_string();
    if !out.status.success() || !stdout.contains("\"ID\"") {
        let said = format!("{}{}", stdout.trim(), String::from_utf8_lossy(&out.stderr).trim());
        bail!("`ncu --import {}` gave no table: {}\n  fix: check that the file is a report of this ncu version or older ({})", report.display(), said.lines().last().unwrap_or("no output"), ncu.version);
    }
    Ok(stdout)
}

fn is_report(path: &Path) -> bool {
    path.extension().is_some_and(|e| e == "ncu-rep")
}

/// `gpu-lab import FILE`
pub fn import(args: &ImportArgs, metrics_files: &[PathBuf]) -> anyhow::Result<i32> {
    let catalog = scheduler::catalog(metrics_files)?;
    let file = &args.file;
    if !file.is_file() {
        bail!("{} does not exist or is not a file\n  fix: pass an .ncu-rep report or a CSV that `ncu --csv` printed", file.display());
    }
    let text = if is_report(file) {
        let ncu = profiler::find().map_err(|e| anyhow::anyhow!("{e}\n  (an .ncu-rep is read through `ncu -i`; a CSV export of it needs no ncu)"))?;
        export_report(&ncu, file)?
    } else {
        let bytes = std::fs::read(file).with_context(|| format!("reading {}", file.display()))?;
        if bytes.contains(&0) {
            bail!("{} is not text: is it an ncu report?\n  fix: give a report the .ncu-rep extension, or export it: `ncu -i REPORT --csv --page raw --print-units base > file.csv`", file.display());
        }
        String::from_utf8(bytes).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned())
    };
    let source = file.display().to_string();
    let table = parse::read_ncu_csv(text).with_context(|| format!("reading {source} as ncu CSV output"))?;
    let (defs, skipped) = choose_metrics(&catalog, &args.choice.names(), &table.metric_names()?)?;
    let out = read_kernels(&table, &defs)?;
    print_summary(&out, &defs, &args.choice.format, skipped, &source)
}

/// The program as the shell would find it, or an error with the fix.
fn locate_program(program: &str) -> anyhow::Result<PathBuf> {
    let candidates: Vec<PathBuf> = if program.contains('/') {
        vec![PathBuf::from(program)]
    } else {
        std::env::var_os("PATH").map(|p| std::env::split_paths(&p).map(|d| d.join(program)).collect()).unwrap_or_default()
    };
    let Some(found) = candidates.into_iter().find(|c| c.is_file()) else {
        let hint = if program.contains('/') { "" } else { " on PATH (a program in this directory needs ./)" };
        bail!("program `{program}` not found{hint}\n  fix: build it first (for example `nvcc -o probe probe.cu`) and pass its path: gpu-lab ncu --metrics ... -- ./probe");
    };
    if found.metadata().map(|m| m.permissions().mode() & 0o111 == 0).unwrap_or(true) {
        bail!("`{}` is not executable\n  fix: `chmod +x {}`, or check that it is the compiled program", found.display(), found.display());
    }
    Ok(found)
}

/// A directory removed when dropped, for ncu's report when the user keeps none.
struct ScratchDir(PathBuf);

impl ScratchDir {
    fn new() -> anyhow::Result<Self> {
        let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_nanos()).unwrap_or(0);
        let dir = std::env::temp_dir().join(format!("gpu-lab-ncu-{}-{nanos}", std::process::id()));
        std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
        Ok(ScratchDir(dir))
    }
}

impl Drop for ScratchDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Runs the program through a shell that writes its exit status to this file: ncu's own exit
/// code cannot tell the program's failure from ncu's.
const WRAPPER: &str = r#""$0" "$@"; status=$?; echo $status > "$GPU_LAB_EXIT_FILE"; exit $status"#;

/// Runs `cmd`, copying its stdout and stderr line by line to our stderr (unless `quiet`) and keeping them.
fn run_streamed(cmd: &mut Command, quiet: bool) -> anyhow::Result<String> {
    let mut child = cmd.stdin(Stdio::inherit()).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().with_context(|| format!("starting {:?}", cmd.get_program()))?;
    let kept = Mutex::new(Vec::new());
    let pump = |source: Box<dyn Read + Send>| {
        let mut reader = BufReader::new(source);
        let mut line = Vec::new();
        while reader.read_until(b'\n', &mut line).unwrap_or(0) > 0 {
            if !quiet {
                let _ = std::io::stderr().lock().write_all(&line);
            }
            kept.lock().unwrap_or_else(|p| p.into_inner()).extend_from_slice(&line);
            line.clear();
        }
    };
    let (stdout, stderr) = (child.stdout.take(), child.stderr.take());
    std::thread::scope(|s| {
        if let Some(o) = stdout {
            s.spawn(|| pump(Box::new(o)));
        }
        if let Some(e) = stderr {
            s.spawn(|| pump(Box::new(e)));
        }
    });
    child.wait().context("waiting for ncu")?;
    Ok(String::from_utf8_lossy(&kept.into_inner().unwrap_or_else(|p| p.into_inner())).into_owned())
}

/// The ncu command line: gpu-lab's profile arguments, the kernel filters, then the wrapped program.
pub fn ncu_command_args(counters: &[String], report_base: &Path, kernel: Option<&str>, launch_count: Option<u64>, program: &Path, program_args: &[String]) -> Vec<String> {
    let mut a = profiler::profile_args(counters, "none", report_base);
    if let Some(k) = kernel {
        a.extend(["--kernel-name".into(), format!("regex:{k}")]);
    }
    if let Some(n) = launch_count {
        a.extend(["--launch-count".into(), n.to_string()]);
    }
    a.extend(["/bin/sh".into(), "-c".into(), WRAPPER.into(), program.display().to_string()]);
    a.extend(program_args.iter().cloned());
    a
}

/// `gpu-lab ncu -- PROGRAM ARGS`
pub fn ncu(args: &NcuArgs, metrics_files: &[PathBuf], quiet: bool) -> anyhow::Result<i32> {
    let catalog = scheduler::catalog(metrics_files)?;
    let names = match args.choice.names() {
        n if n.is_empty() => vec![DEFAULT_METRIC.to_string()],
        n => n,
    };
    let defs = catalog.resolve(&names)?;
    let program = locate_program(&args.program[0])?;
    let ncu = profiler::find().map_err(anyhow::Error::msg)?;
    let gpu_name = NvmlSession::open().info(0).ok().map(|d| d.name);
    let screened = profiler::query::screen_for_device(&ncu, gpu_name.as_deref(), 0, defs)?;
    if screened.collectable.is_empty() {
        bail!("none of the requested metrics can be collected on this GPU (see the warnings above)\n  fix: `gpu-lab list metrics` shows the alternatives");
    }
    let defs = screened.collectable;
    // ncu's raw page carries the device attributes (its name included) without asking.
    let counters = metrics::counters_needed(&defs);

    let scratch = ScratchDir::new()?;
    let report_base = match &args.export {
        Some(p) => PathBuf::from(p.to_string_lossy().trim_end_matches(".ncu-rep")),
        None => scratch.0.join("profile"),
    };
    let report = PathBuf::from(format!("{}.ncu-rep", report_base.display()));
    // A report left by an earlier run must not pass for this one's when ncu profiles nothing;
    // it is kept as it is until ncu overwrites it.
    let modified = || std::fs::metadata(&report).and_then(|m| m.modified()).ok();
    let earlier = modified();
    let exit_file = scratch.0.join("exit-status");
    let mut cmd = Command::new(&ncu.path);
    cmd.args(ncu_command_args(&counters, &report_base, args.kernel.as_deref(), args.launch_count, &program, &args.program[1..]))
        .env("GPU_LAB_EXIT_FILE", &exit_file)
        .env("LC_ALL", "C");
    let shown = args.program.join(" ");
    if !quiet {
        eprintln!("──── output of `{shown}` under ncu ────");
    }
    let log = run_streamed(&mut cmd, quiet)?;
    let status: Option<i32> = std::fs::read_to_string(&exit_file).ok().and_then(|s| s.trim().parse().ok());
    if !quiet {
        eprintln!("──── end of output ({}) ────", status.map(|s| format!("exit code {s}")).unwrap_or_else(|| "the program did not finish".into()));
    }
    if log.contains("ERR_NVGPUCTRPERM") {
        bail!("{}", profiler::diagnose(&log).unwrap_or_default());
    }
    let program_failed = status != Some(0);
    let failure = match status {
        Some(0) => String::new(),
        Some(code) => format!("`{shown}` exited with code {code}"),
        None => format!("`{shown}` did not run to its end under ncu"),
    };
    if modified().is_none_or(|t| Some(t) == earlier) {
        let why = profiler::diagnose(&log).unwrap_or_else(|| "ncu profiled no kernel".into());
        let stale = match earlier {
            Some(_) => format!("\n  {} is from an earlier run and was left as it was", report.display()),
            None => String::new(),
        };
        if program_failed {
            eprintln!("error: {failure}, and {why}{stale}\n  fix: run the program alone to see why it fails; its output is above");
            return Ok(FAILED);
        }
        let filter = if args.kernel.is_some() { " (no kernel matched --kernel: ncu matches the regex against the function name, without arguments)" } else { "" };
        bail!("{why}{filter}{stale}\n  fix: check that the program launches CUDA kernels; its output and ncu's are above");
    }
    let csv = export_report(&ncu, &report)?;
    let table = parse::read_ncu_csv(csv).context("reading ncu's export")?;
    let out = read_kernels(&table, &defs)?;
    let code = print_summary(&out, &defs, &args.choice.format, 0, "ncu's report")?;
    if args.export.is_some() {
        eprintln!("report: {}", report.display());
    }
    if program_failed {
        eprintln!("error: {failure}; the table shows the kernels profiled before that");
        return Ok(FAILED);
    }
    Ok(code)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_ncu_command_line_filters_kernels_and_wraps_the_program() {
        let a = ncu_command_args(&["gpu__time_duration.sum".into()], Path::new("/tmp/r"), Some("copy_.*"), Some(2), Path::new("./probe"), &["8192".into()]);
        let s = a.join(" ");
        assert!(s.starts_with("--clock-control none --metrics gpu__time_duration.sum"), "{s}");
        assert!(s.contains("--kernel-name regex:copy_.* --launch-count 2 /bin/sh -c"), "{s}");
        assert!(s.ends_with("./probe 8192"), "{s}");
    }

    #[test]
    fn the_wrapper_reports_the_programs_exit_status() {
        let d = tempfile::tempdir().unwrap();
        let f = d.path().join("status");
        let out = Command::new("/bin/sh").args(["-c", WRAPPER, "/bin/sh", "-c", "exit 3"]).env("GPU_LAB_EXIT_FILE", &f).status().unwrap();
        assert_eq!(out.code(), Some(3));
        assert_eq!(std::fs::read_to_string(&f).unwrap().trim(), "3");
    }

    #[test]
    fn missing_and_non_executable_programs_get_their_fix() {
        let e = locate_program("./no-such-probe").unwrap_err().to_string();
        assert!(e.contains("not found") && e.contains("fix:"), "{e}");
        let e = locate_program("no-such-probe-on-path").unwrap_err().to_string();
        assert!(e.contains("needs ./"), "{e}");
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("plain");
        std::fs::write(&p, "x").unwrap();
        assert!(locate_program(p.to_str().unwrap()).unwrap_err().to_string().contains("chmod +x"));
        assert!(locate_program("sh").is_ok());
    }

    #[test]
    fn metrics_are_chosen_from_what_the_file_holds() {
        let c = Catalog::builtin().unwrap();
        let available: Vec<String> = ["gpu__time_duration.sum", "Duration", "DRAM Frequency"].iter().map(|s| s.to_string()).collect();
        let (defs, skipped) = choose_metrics(&c, &[], &available).unwrap();
        assert_eq!(defs.iter().map(|d| d.name.as_str()).collect::<Vec<_>>(), ["duration"]);
        assert_eq!(skipped, c.metrics.len() - 1);
        // A details-page display name is taken as it is; an unknown one gets the file's closest names.
        let (defs, _) = choose_metrics(&c, &["Duration".into()], &available).unwrap();
        assert!(metrics::is_raw_metric(&defs[0]));
        let e = choose_metrics(&c, &["Durations".into()], &available).unwrap_err().to_string();
        assert!(e.contains("closest to it: Duration"), "{e}");
        assert!(choose_metrics(&c, &[], &["DRAM Frequency".into()]).unwrap_err().to_string().contains("fix:"));
    }
}
