//! `gpu-lab ncu -- PROGRAM ARGS`: profile a program gpu-lab did not build under ncu and print nvprof's `--metrics` table per kernel.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, bail};

use super::import::{print_summary, read_kernels};
use crate::cli::NcuArgs;
use crate::config::Config;
use crate::device::NvmlSession;
use crate::exit;
use crate::metrics::{self, MetricDef};
use crate::parse::{self, NcuOutput, source_page};
use crate::process;
use crate::profiler::hotspots::{self, HotspotRequest};
use crate::profiler::{self, ClockControl, ProfilerError};
use crate::report::markdown;
use crate::report::nvprof::Format;
use crate::store::{FileKind, read_regular_text};

/// What `gpu-lab ncu` shows when no metric is named: each kernel's duration, like nvprof's plain summary.
const DEFAULT_METRIC: &str = "duration";

/// The program as the shell would find it, or an error with the fix.
fn locate_program(program: &str, path_dirs: &[PathBuf]) -> anyhow::Result<PathBuf> {
    let candidates: Vec<PathBuf> = if program.contains('/') {
        vec![PathBuf::from(program)]
    } else {
        path_dirs.iter().map(|d| d.join(program)).collect()
    };
    let Some(found) = candidates.into_iter().find(|c| c.is_file()) else {
        let hint = if program.contains('/') {
            ""
        } else {
            " on PATH (a program in this directory needs ./)"
        };
        bail!(
            "program `{program}` not found{hint}\n  fix: build it first (for example `nvcc -o probe probe.cu`) and pass its path: gpu-lab ncu --metrics ... -- ./probe"
        );
    };
    if found
        .metadata()
        .map(|m| m.permissions().mode() & 0o111 == 0)
        .unwrap_or(true)
    {
        bail!(
            "`{}` is not executable\n  fix: `chmod +x {}`, or check that it is the compiled program",
            found.display(),
            found.display()
        );
    }
    Ok(found)
}

/// Runs the program through a shell that writes its exit status to this file: ncu's own exit
/// code cannot tell the program's failure from ncu's.
const WRAPPER: &str = r#""$0" "$@"; status=$?; echo $status > "$GPU_LAB_EXIT_FILE"; exit $status"#;

/// The ncu command line: gpu-lab's profile arguments, the hot-spot sections if asked for, the
/// kernel filters, then the wrapped program.
pub fn ncu_command_args(
    counters: &[String],
    report_base: &Path,
    hotspots: bool,
    kernel: Option<&str>,
    launch_count: Option<u64>,
    program: &Path,
    program_args: &[String],
) -> Vec<String> {
    let mut a = profiler::profile_args(counters, ClockControl::None, report_base);
    if hotspots {
        a.extend(hotspots::section_args());
    }
    if let Some(k) = kernel {
        a.extend(["--kernel-name".into(), format!("regex:{k}")]);
    }
    if let Some(n) = launch_count {
        a.extend(["--launch-count".into(), n.to_string()]);
    }
    a.extend([
        "/bin/sh".into(),
        "-c".into(),
        WRAPPER.into(),
        program.display().to_string(),
    ]);
    a.extend(program_args.iter().cloned());
    a
}

/// `gpu-lab ncu -- PROGRAM ARGS`
pub fn ncu(config: &Config, args: &NcuArgs) -> anyhow::Result<i32> {
    let request = hotspot_request(args)?;
    let catalog = config.catalog()?;
    let names = match args.choice.names() {
        n if n.is_empty() => vec![DEFAULT_METRIC.to_string()],
        n => n,
    };
    let defs = catalog.resolve(&names)?;
    // Before ncu is looked for or anything runs: a list too long for one argument can never start.
    profiler::check_counters(&metrics::counters_needed(&defs))?;
    let program = locate_program(&args.program[0], &config.path_dirs)?;
    let ncu = profiler::find(&config.ncu)?;
    let defs = collectable(config, &ncu, defs)?;
    // ncu's raw page carries the device attributes (its name included) without asking.
    let counters = metrics::counters_needed(&defs);
    profiler::check_counters(&counters)?;

    // ncu's report when the user keeps none; removed when dropped.
    let scratch = tempfile::Builder::new()
        .prefix("gpu-lab-ncu-")
        .tempdir_in(&config.temp_dir)
        .with_context(|| {
            format!(
                "creating a scratch directory under {}",
                config.temp_dir.display()
            )
        })?;
    let report_base = match &args.export {
        Some(p) => PathBuf::from(p.to_string_lossy().trim_end_matches(".ncu-rep")),
        None => scratch.path().join("profile"),
    };
    let report = profiler::report_path(&report_base);
    // A report left by an earlier run must not pass for this one's when ncu profiles nothing;
    // it is kept as it is until ncu overwrites it.
    let modified = || std::fs::metadata(&report).and_then(|m| m.modified()).ok();
    let earlier = modified();
    let mut cmd = ncu.command();
    cmd.args(ncu_command_args(
        &counters,
        &report_base,
        request.is_some(),
        args.kernel.as_deref(),
        args.launch_count,
        &program,
        &args.program[1..],
    ));
    let (log, status) = run_program(config, args, cmd, &scratch.path().join("exit-status"))?;
    if let Some(e @ ProfilerError::CountersNotPermitted) = profiler::diagnose(&log) {
        return Err(e.into());
    }
    let shown = args.program.join(" ");
    let program_failed = status != Some(0);
    let failure = match status {
        Some(0) => String::new(),
        Some(code) => format!("`{shown}` exited with code {code}"),
        None => format!("`{shown}` did not run to its end under ncu"),
    };
    if modified().is_none_or(|t| Some(t) == earlier) {
        let stale = match earlier {
            Some(_) => format!(
                "\n  {} is from an earlier run and was left as it was",
                report.display()
            ),
            None => String::new(),
        };
        return no_report(
            args,
            &log,
            program_failed.then_some(failure.as_str()),
            &stale,
        );
    }
    let csv = profiler::export_raw(&ncu, &report)?;
    let table = parse::read_ncu_csv(csv).context("reading ncu's export")?;
    let out = read_kernels(&table, &defs)?;
    let mut code = print_summary(&out, &defs, args.choice.format, 0, "ncu's report")?;
    if let Some(request) = &request
        && let Err(why) = print_hotspots(&ncu, &report, &out, request, args.export.is_some())
    {
        eprintln!("error: no hot spots: {why:#}");
        code = code.max(exit::ERROR);
    }
    if args.export.is_some() {
        eprintln!("report: {}", report.display());
    }
    if program_failed {
        eprintln!("error: {failure}; the table shows the kernels profiled before that");
        return Ok(exit::JOBS_FAILED);
    }
    Ok(code)
}

/// `--hotspots [KERNELS]`, refused before anything runs where its tables cannot go.
fn hotspot_request(args: &NcuArgs) -> anyhow::Result<Option<HotspotRequest>> {
    let Some(names) = &args.hotspots else {
        return Ok(None);
    };
    if matches!(args.choice.format, Format::Csv | Format::Json) {
        bail!(
            "--hotspots prints markdown tables after the metric table, which --format {} would mix with its own output\n  fix: use --format table or md with --hotspots, or keep the report (--export R) and run `ncu --import R.ncu-rep --page source --csv --print-source cuda,sass`",
            if args.choice.format == Format::Csv {
                "csv"
            } else {
                "json"
            }
        );
    }
    // Template arguments hold commas: `transpose_tile<1, 0>,copy_row` is two names.
    Ok(Some(HotspotRequest::new(crate::cxx::split_names(names))))
}

/// After the table: the source page of the same report, each kernel asked for with its top lines.
fn print_hotspots(
    ncu: &profiler::Ncu,
    report: &Path,
    profiled: &NcuOutput,
    request: &HotspotRequest,
    kept: bool,
) -> anyhow::Result<()> {
    let launched: Vec<&str> = profiled
        .kernels
        .iter()
        .map(|k| k.kernel_name.as_str())
        .collect();
    let unmatched = request.unmatched_kernels(&launched);
    if !unmatched.is_empty() {
        eprintln!(
            "warning: --hotspots names kernels not profiled: {} (a name is a function's, as `copy_row`, or ncu's with template arguments, as `transpose_tile<1, 0>`)",
            unmatched.join(", ")
        );
    }
    let page = hotspots::export_source(ncu, report)?;
    let kernels = hotspots::by_kernel(source_page::parse(&page)?, &launched, request)
        .map_err(anyhow::Error::msg)?;
    if kernels.is_empty() {
        bail!("none of the kernels --hotspots names was profiled");
    }
    let report_name = report.file_name().map(|n| n.to_string_lossy().to_string());
    print!(
        "\n{}",
        markdown::program_hotspots(&kernels, report_name.as_deref().filter(|_| kept))
    );
    Ok(())
}

/// The metrics of `defs` that this GPU can collect (the others are warned about), or an error
/// when none can be.
fn collectable(
    config: &Config,
    ncu: &profiler::Ncu,
    defs: Vec<MetricDef>,
) -> anyhow::Result<Vec<MetricDef>> {
    let gpu_name = NvmlSession::open().info(0).ok().map(|d| d.name);
    let screened = profiler::query::screen_for_device(
        ncu,
        config.cache_dir.as_deref(),
        gpu_name.as_deref(),
        0,
        defs,
    )?;
    if screened.collectable.is_empty() {
        bail!(
            "none of the requested metrics can be collected on this GPU (see the warnings above)\n  fix: `gpu-lab list metrics` shows the alternatives"
        );
    }
    Ok(screened.collectable)
}

/// Runs the program under ncu (`cmd`), its output shown between two rules unless quiet: what ncu
/// and the program printed, and the program's exit code (none when it did not finish), which the
/// wrapper writes to `exit_file`.
fn run_program(
    config: &Config,
    args: &NcuArgs,
    mut cmd: Command,
    exit_file: &Path,
) -> anyhow::Result<(String, Option<i32>)> {
    cmd.env("GPU_LAB_EXIT_FILE", exit_file);
    let quiet = config.quiet;
    if !quiet {
        eprintln!("──── output of `{}` under ncu ────", args.program.join(" "));
    }
    // ncu's own exit code says nothing the exit file and the report do not: it is not used.
    let log = process::run(&mut cmd, &process::Output::Stream { echo: !quiet }, None)?.text;
    let status: Option<i32> = read_regular_text(exit_file, FileKind::EXIT_CODE)
        .ok()
        .and_then(|s| s.trim().parse().ok());
    if !quiet {
        eprintln!(
            "──── end of output ({}) ────",
            status
                .map(|s| format!("exit code {s}"))
                .unwrap_or_else(|| "the program did not finish".into())
        );
    }
    Ok((log, status))
}

/// ncu wrote no report of this run: the program's `failure` reported with exit code 1, else an
/// error saying why no kernel was profiled. `stale` says that a report there is an earlier one.
fn no_report(args: &NcuArgs, log: &str, failure: Option<&str>, stale: &str) -> anyhow::Result<i32> {
    let why = profiler::diagnose(log)
        .map(|e| e.to_string())
        .unwrap_or_else(|| "ncu profiled no kernel".into());
    if let Some(failure) = failure {
        eprintln!(
            "error: {failure}, and {why}{stale}\n  fix: run the program alone to see why it fails; its output is above"
        );
        return Ok(exit::JOBS_FAILED);
    }
    let filter = if args.kernel.is_some() {
        " (no kernel matched --kernel: ncu matches the regex against the function name, without arguments)"
    } else {
        ""
    };
    bail!(
        "{why}{filter}{stale}\n  fix: check that the program launches CUDA kernels; its output and ncu's are above"
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_ncu_command_line_filters_kernels_and_wraps_the_program() {
        let a = ncu_command_args(
            &["gpu__time_duration.sum".into()],
            Path::new("/tmp/r"),
            false,
            Some("copy_.*"),
            Some(2),
            Path::new("./probe"),
            &["8192".into()],
        );
        let s = a.join(" ");
        assert!(
            s.starts_with("--clock-control none --metrics gpu__time_duration.sum"),
            "{s}"
        );
        assert!(
            s.contains("--kernel-name regex:copy_.* --launch-count 2 /bin/sh -c"),
            "{s}"
        );
        assert!(s.ends_with("./probe 8192"), "{s}");
    }

    #[test]
    fn the_wrapper_reports_the_programs_exit_status() {
        let d = tempfile::tempdir().unwrap();
        let f = d.path().join("status");
        let out = std::process::Command::new("/bin/sh")
            .args(["-c", WRAPPER, "/bin/sh", "-c", "exit 3"])
            .env("GPU_LAB_EXIT_FILE", &f)
            .status()
            .unwrap();
        assert_eq!(out.code(), Some(3));
        assert_eq!(std::fs::read_to_string(&f).unwrap().trim(), "3");
    }

    #[test]
    fn missing_and_non_executable_programs_get_their_fix() {
        let e = locate_program("./no-such-probe", &[])
            .unwrap_err()
            .to_string();
        assert!(e.contains("not found") && e.contains("fix:"), "{e}");
        let e = locate_program("no-such-probe-on-path", &[])
            .unwrap_err()
            .to_string();
        assert!(e.contains("needs ./"), "{e}");
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("plain");
        std::fs::write(&p, "x").unwrap();
        assert!(
            locate_program(p.to_str().unwrap(), &[])
                .unwrap_err()
                .to_string()
                .contains("chmod +x")
        );
        assert!(locate_program("sh", &[PathBuf::from("/bin")]).is_ok());
    }
}
