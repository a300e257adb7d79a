//! compute-sanitizer over gpu-lab's own child: find it (as ncu is found), run one tool over a child that launches one job once, and read its XML report into a record.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use crate::parse::sanitizer::{parse_xml, summary_total};
use crate::process::{self, FailureKind};
use crate::records::{SanitizeRecord, SanitizerTool};
use crate::store::{FileKind, read_regular_text};

/// Bytes of padding after every allocation under memcheck: without it a write one element past
/// the end of a buffer lands in the next allocation and memcheck reported 0 errors (H100, 2025.3.1).
pub const PADDING_BYTES: u32 = 256;

/// Reports the XML file keeps (compute-sanitizer's `--print-limit`); the text summary counts the rest.
pub const PRINT_LIMIT: u32 = 100;

#[derive(Debug, thiserror::Error)]
pub enum SanitizerError {
    #[error(
        "compute-sanitizer was not found\n  fix: install the CUDA toolkit (it ships compute-sanitizer) and put it on PATH, or set COMPUTE_SANITIZER=/path/to/compute-sanitizer"
    )]
    NotFound,
    #[error("COMPUTE_SANITIZER={} is not a file\n  fix: point COMPUTE_SANITIZER at the compute-sanitizer executable, or unset it to use the one on PATH", .0.display())]
    NotAFile(PathBuf),
}

/// Where compute-sanitizer is looked for: `COMPUTE_SANITIZER` when set, else `PATH`, else the CUDA toolkit's usual place.
#[derive(Debug, Clone, Default)]
pub struct SanitizerSearch {
    pub explicit: Option<PathBuf>,
    pub path_dirs: Vec<PathBuf>,
}

#[derive(Debug, Clone)]
pub struct Sanitizer {
    pub path: PathBuf,
    pub version: String,
}

/// The first compute-sanitizer found, with its version.
pub fn find(search: &SanitizerSearch) -> Result<Sanitizer, SanitizerError> {
    let mut candidates: Vec<PathBuf> = Vec::new();
    if let Some(p) = &search.explicit {
        if !p.is_file() {
            return Err(SanitizerError::NotAFile(p.clone()));
        }
        candidates.push(p.clone());
    }
    candidates.extend(search.path_dirs.iter().map(|d| d.join("compute-sanitizer")));
    candidates.push(PathBuf::from("/usr/local/cuda/bin/compute-sanitizer"));
    let path = candidates
        .into_iter()
        .find(|c| c.is_file())
        .ok_or(SanitizerError::NotFound)?;
    let printed = process::output(Command::new(&path).arg("--version"))
        .map(|f| f.text)
        .unwrap_or_default();
    let version = printed
        .lines()
        .find(|l| l.contains("Version"))
        .unwrap_or("")
        .trim()
        .to_string();
    Ok(Sanitizer { path, version })
}

/// compute-sanitizer's own options for `tool`, saving its XML report to `xml`.
pub fn arguments(tool: SanitizerTool, xml: &Path) -> Vec<OsString> {
    let mut args: Vec<OsString> = vec![
        "--tool".into(),
        tool.as_str().into(),
        "--xml".into(),
        "--save".into(),
        xml.as_os_str().to_os_string(),
        "--print-limit".into(),
        PRINT_LIMIT.to_string().into(),
        // Backtraces would make every report several kilobytes; the kernel and line say where.
        "--show-backtrace".into(),
        "no".into(),
        // gpu-lab's child is the one process to check (it starts none).
        "--target-processes".into(),
        "application-only".into(),
    ];
    if tool == SanitizerTool::Memcheck {
        args.extend([
            "--padding".into(),
            PADDING_BYTES.to_string().into(),
            // The child's own probing calls (attributes a driver may not know) are not the
            // kernel's errors.
            "--report-api-errors".into(),
            "no".into(),
        ]);
    }
    args
}

/// One tool over `target` (a child that launches one job once): the record `blank` filled with
/// what the tool found, or with why it could not say. Files go to `xml` and `log`.
pub fn sanitize(
    sanitizer: &Sanitizer,
    tool: SanitizerTool,
    target: &[OsString],
    files: (&Path, &Path),
    timeout: Duration,
    blank: SanitizeRecord,
) -> SanitizeRecord {
    sanitize_reading(sanitizer, tool, target, files, timeout, blank).0
}

/// As [`sanitize`], also saying whether the tool's XML report was read (a child that ran several
/// jobs and died still has the findings of those it finished).
pub fn sanitize_reading(
    sanitizer: &Sanitizer,
    tool: SanitizerTool,
    target: &[OsString],
    (xml, log): (&Path, &Path),
    timeout: Duration,
    blank: SanitizeRecord,
) -> (SanitizeRecord, bool) {
    let mut cmd = Command::new(&sanitizer.path);
    cmd.args(arguments(tool, xml)).args(target);
    // NVML numbers GPUs in PCI order; CUDA must agree for --gpu to mean one card.
    cmd.env("CUDA_DEVICE_ORDER", "PCI_BUS_ID");
    let began = Instant::now();
    let ran = process::run(
        &mut cmd,
        &process::Output::Log(log.to_path_buf()),
        Some(timeout),
    );
    let mut record = SanitizeRecord {
        seconds: Some(began.elapsed().as_secs_f64()),
        ..blank
    };
    let finished = match ran {
        Ok(f) => f,
        Err(e) => {
            let why = match e.kind {
                FailureKind::TimedOut(after) => format!(
                    "{} was still running after {} s and was killed (racecheck can take 1000x a launch)\n  fix: raise --sanitize-timeout",
                    tool.as_str(),
                    after.as_secs()
                ),
                _ => format!("{e}"),
            };
            return (record.failed(why), false);
        }
    };
    record.errors_reported = summary_total(&finished.text);
    let text = match read_regular_text(xml, FileKind::CHILD_MESSAGE) {
        Ok(t) => t,
        Err(e) => {
            let why = format!(
                "{} wrote no readable report {}: {e:#}; exit {}, its output ends:\n{}",
                tool.as_str(),
                xml.display(),
                finished.status,
                tail(&finished.text)
            );
            return (record.failed(why), false);
        }
    };
    match parse_xml(&text) {
        Ok(findings) => {
            record.findings = findings;
            record = record.unsupported_as_skipped();
        }
        Err(why) => return (record.failed(format!("{}: {why}", xml.display())), false),
    }
    // The child failing with nothing found is no answer (it could not build or load the job);
    // with findings it is expected (memcheck ends the context at the first bad access).
    if !finished.status.success() && !record.found_something() {
        let why = format!(
            "the sanitized child exited with {} and the tool reported nothing; its output ends:\n{}",
            finished.status,
            tail(&finished.text)
        );
        return (record.failed(why), true);
    }
    (record, true)
}

fn tail(text: &str) -> String {
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(20)..].join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn memcheck_pads_every_allocation_and_every_tool_saves_xml() {
        let args = |t| {
            arguments(t, Path::new("/r/x.xml"))
                .into_iter()
                .map(|a| a.into_string().unwrap())
                .collect::<Vec<_>>()
                .join(" ")
        };
        assert!(args(SanitizerTool::Memcheck).contains("--padding 256"));
        assert!(!args(SanitizerTool::Racecheck).contains("--padding"));
        for t in SanitizerTool::ALL {
            let a = args(t);
            assert!(
                a.starts_with(&format!("--tool {} --xml --save /r/x.xml", t.as_str())),
                "{a}"
            );
        }
    }

    /// A stand-in compute-sanitizer: copies a fixture to the `--save` path and prints a summary.
    fn fake(dir: &Path, xml_fixture: &str, summary: &str, exit: i32) -> Sanitizer {
        use std::os::unix::fs::PermissionsExt;
        let fixture = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/sanitizer")
            .join(xml_fixture);
        let script = dir.join("compute-sanitizer");
        std::fs::write(
            &script,
            format!(
                "#!/bin/sh\nwhile [ \"$1\" != --save ]; do shift; done\ncp '{}' \"$2\"\necho '========= {summary}'\nexit {exit}\n",
                fixture.display()
            ),
        )
        .unwrap();
        std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
        Sanitizer {
            path: script,
            version: "fake".into(),
        }
    }

    fn run_fake(s: &Sanitizer, dir: &Path) -> SanitizeRecord {
        sanitize(
            s,
            SanitizerTool::Initcheck,
            &["child".into()],
            (&dir.join("r.xml"), &dir.join("r.log")),
            Duration::from_secs(30),
            SanitizeRecord::new("v @ g", "v", "g", SanitizerTool::Initcheck),
        )
    }

    #[test]
    fn a_sanitizer_run_gives_findings_totals_and_errors_for_bad_files() {
        let dir = tempfile::tempdir().unwrap();
        let found = run_fake(
            &fake(
                dir.path(),
                "initcheck.xml",
                "ERROR SUMMARY: 1048576 errors",
                0,
            ),
            dir.path(),
        );
        assert_eq!(found.error, None);
        assert_eq!(found.findings.len(), 1);
        assert_eq!(found.errors_reported, Some(1_048_576));
        assert!(found.fails());
        let clean = run_fake(
            &fake(
                dir.path(),
                "memcheck-clean.xml",
                "ERROR SUMMARY: 0 errors",
                0,
            ),
            dir.path(),
        );
        assert!(!clean.fails(), "{clean:?}");
        let broken = run_fake(
            &fake(dir.path(), "initcheck.txt", "ERROR SUMMARY: 0 errors", 0),
            dir.path(),
        );
        let why = broken.error.unwrap();
        assert!(why.contains("r.xml"), "the error names the file: {why}");
        let died = run_fake(
            &fake(dir.path(), "memcheck-clean.xml", "nothing", 3),
            dir.path(),
        );
        assert!(died.error.unwrap().contains("exited"));
    }

    #[test]
    fn a_missing_explicit_path_says_how_to_fix_it() {
        let e = find(&SanitizerSearch {
            explicit: Some("/no/such/compute-sanitizer".into()),
            path_dirs: Vec::new(),
        })
        .unwrap_err();
        assert!(e.to_string().contains("COMPUTE_SANITIZER"));
    }
}
