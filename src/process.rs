//! Child processes, one way: start, send the output to a log, to our stderr or to memory, stop at a timeout, and fail with an error that keeps the command line and the end of what it printed.

use std::fmt;
use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};
use std::sync::Mutex;
use std::time::Duration;

use wait_timeout::ChildExt;

use crate::store::{FileKind, ReadError, read_regular, read_regular_text};

/// Lines of output an error keeps: the end of a child's output holds its error chain, and an NVRTC
/// log can be long.
pub const TAIL_LINES: usize = 40;

/// Where a child's stdout and stderr go (both to the same place, in the order printed).
#[derive(Debug, Clone)]
pub enum Output {
    /// A log file, read back for the error.
    Log(PathBuf),
    /// Our stderr, line by line as printed (`echo: false` keeps it silent), and memory.
    Stream { echo: bool },
    /// Memory, stdout apart from stderr: for output that is parsed (stderr is kept for the error).
    Stdout,
}

/// A child that ran to its end.
#[derive(Debug)]
pub struct Finished {
    pub command: String,
    pub status: ExitStatus,
    /// What it printed (for `Output::Log`, the log's text; for `Output::Stdout`, its stdout).
    pub text: String,
    /// What it printed on stderr, for `Output::Stdout` (empty otherwise: it is in `text`).
    pub stderr: String,
}

impl Finished {
    /// The child as an error unless it exited 0.
    pub fn success(self) -> Result<Finished, CommandError> {
        if self.status.success() {
            return Ok(self);
        }
        let said = if self.stderr.trim().is_empty() {
            &self.text
        } else {
            &self.stderr
        };
        Err(CommandError {
            command: self.command,
            kind: FailureKind::Exited {
                status: self.status.to_string(),
                tail: tail(said, TAIL_LINES),
            },
        })
    }
}

#[derive(Debug, Clone, PartialEq)]
pub enum FailureKind {
    /// It could not be started (no such program, no permission).
    Start(String),
    /// It exited non-zero or was killed by a signal; the end of its output.
    Exited { status: String, tail: String },
    /// It was still running at the timeout and was killed with everything it started.
    TimedOut(Duration),
}

/// A child process that failed: which command, and how (ripgrep's `CommandError` is the model).
#[derive(Debug, Clone, PartialEq)]
pub struct CommandError {
    pub command: String,
    pub kind: FailureKind,
}

impl CommandError {
    /// The end of the child's output, when it printed anything.
    pub fn output_tail(&self) -> Option<&str> {
        match &self.kind {
            FailureKind::Exited { tail, .. } if !tail.is_empty() => Some(tail),
            _ => None,
        }
    }
}

impl fmt::Display for CommandError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.kind {
            FailureKind::Start(e) => write!(f, "could not start `{}`: {e}", self.command),
            FailureKind::Exited { status, tail } if tail.is_empty() => write!(
                f,
                "`{}` failed ({status}) and printed nothing",
                self.command
            ),
            FailureKind::Exited { status, tail } => write!(
                f,
                "`{}` failed ({status}); the end of its output:\n{tail}",
                self.command
            ),
            FailureKind::TimedOut(after) => write!(
                f,
                "`{}` did not finish within {} s and was killed",
                self.command,
                after.as_secs_f64()
            ),
        }
    }
}

impl std::error::Error for CommandError {}

/// The command line as a shell user would read it.
pub fn command_line(cmd: &Command) -> String {
    std::iter::once(cmd.get_program())
        .chain(cmd.get_args())
        .map(|a| {
            let s = a.to_string_lossy();
            if s.is_empty() || s.contains(|c: char| c.is_whitespace() || c == '"' || c == '\'') {
                format!("{s:?}")
            } else {
                s.into_owned()
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// The last `n` non-empty lines of `text`.
pub fn tail(text: &str, n: usize) -> String {
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    lines[lines.len().saturating_sub(n)..].join("\n")
}

/// Runs `cmd` to its end, or kills it (and every process it started) at `timeout`. Stdin is
/// closed unless the output is streamed (then the child may talk to the user). A non-zero exit is
/// not an error here: `Finished::success` makes it one where the caller wants that.
pub fn run(
    cmd: &mut Command,
    output: &Output,
    timeout: Option<Duration>,
) -> Result<Finished, CommandError> {
    let command = command_line(cmd);
    if timeout.is_some() {
        // Its own process group, so that a timeout also ends what it started (ncu's profiled program).
        cmd.process_group(0);
    }
    let fail = |kind: FailureKind| CommandError {
        command: command.clone(),
        kind,
    };
    let (status, text, stderr) = match output {
        Output::Log(path) => run_to_log(cmd, path, timeout),
        Output::Stdout => run_to_memory(cmd, timeout),
        Output::Stream { echo } => run_streamed(cmd, *echo, timeout),
    }
    .map_err(fail)?;
    Ok(Finished {
        command,
        status,
        text,
        stderr,
    })
}

/// How a child ended: its status, what it printed (stdout and stderr together, or stdout alone)
/// and its stderr when that was kept apart.
type Ended = (ExitStatus, String, String);

fn start_failure(e: std::io::Error) -> FailureKind {
    FailureKind::Start(e.to_string())
}

/// The child's stdout and stderr both to the log at `path`, which is read back once it ends.
fn run_to_log(
    cmd: &mut Command,
    path: &Path,
    timeout: Option<Duration>,
) -> Result<Ended, FailureKind> {
    // A link planted at the log's name is refused, not written through.
    let log = crate::store::create_no_follow(path).map_err(|e| {
        FailureKind::Start(format!("cannot create its log {}: {e}", path.display()))
    })?;
    let copy = log.try_clone().map_err(start_failure)?;
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(copy)
        .stderr(log)
        .spawn()
        .map_err(start_failure)?;
    let status = wait(&mut child, timeout)?;
    Ok((
        status,
        read_regular_text(path, FileKind::LOG).unwrap_or_default(),
        String::new(),
    ))
}

/// The child's stdout and stderr each to memory, apart.
fn run_to_memory(cmd: &mut Command, timeout: Option<Duration>) -> Result<Ended, FailureKind> {
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(start_failure)?;
    let (out, err) = (Mutex::new(Vec::new()), Mutex::new(Vec::new()));
    let (stdout, stderr) = (child.stdout.take(), child.stderr.take());
    let status = std::thread::scope(|s| {
        if let Some(o) = stdout {
            let out = &out;
            s.spawn(move || pump(Box::new(o), false, out));
        }
        if let Some(e) = stderr {
            let err = &err;
            s.spawn(move || pump(Box::new(e), false, err));
        }
        wait(&mut child, timeout)
    })?;
    Ok((status, kept_text(out), kept_text(err)))
}

/// The child's stdout and stderr to memory together, each line echoed to our stderr as printed
/// when `echo`; stdin is ours unless there is a timeout.
fn run_streamed(
    cmd: &mut Command,
    echo: bool,
    timeout: Option<Duration>,
) -> Result<Ended, FailureKind> {
    let stdin = if timeout.is_some() {
        Stdio::null()
    } else {
        Stdio::inherit()
    };
    let mut child = cmd
        .stdin(stdin)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(start_failure)?;
    let kept = Mutex::new(Vec::new());
    let (stdout, stderr) = (child.stdout.take(), child.stderr.take());
    let status = std::thread::scope(|s| {
        for source in [
            stdout.map(|o| Box::new(o) as Box<dyn Read + Send>),
            stderr.map(|e| Box::new(e) as Box<dyn Read + Send>),
        ]
        .into_iter()
        .flatten()
        {
            let kept = &kept;
            s.spawn(move || pump(source, echo, kept));
        }
        wait(&mut child, timeout)
    })?;
    Ok((status, kept_text(kept), String::new()))
}

/// What the pumps kept, as text (a pump that panicked still leaves what it had kept).
fn kept_text(kept: Mutex<Vec<u8>>) -> String {
    String::from_utf8_lossy(&kept.into_inner().unwrap_or_else(|p| p.into_inner())).into_owned()
}

fn pump(source: Box<dyn Read + Send>, echo: bool, kept: &Mutex<Vec<u8>>) {
    let mut reader = BufReader::new(source);
    let mut line = Vec::new();
    while reader.read_until(b'\n', &mut line).unwrap_or(0) > 0 {
        if echo {
            let _ = std::io::stderr().lock().write_all(&line);
        }
        kept.lock()
            .unwrap_or_else(|p| p.into_inner())
            .extend_from_slice(&line);
        line.clear();
    }
}

fn wait(
    child: &mut std::process::Child,
    timeout: Option<Duration>,
) -> Result<ExitStatus, FailureKind> {
    let Some(limit) = timeout else {
        return child.wait().map_err(|e| FailureKind::Start(e.to_string()));
    };
    match child
        .wait_timeout(limit)
        .map_err(|e| FailureKind::Start(e.to_string()))?
    {
        Some(status) => Ok(status),
        None => {
            // SAFETY: signals the process group created in `run`, whose leader is our child.
            unsafe { libc::killpg(child.id() as libc::pid_t, libc::SIGKILL) };
            let _ = child.wait();
            Err(FailureKind::TimedOut(limit))
        }
    }
}

/// Runs `cmd` with no input, its stdout in memory, and fails unless it exits 0.
pub fn output(cmd: &mut Command) -> Result<Finished, CommandError> {
    run(cmd, &Output::Stdout, None)?.success()
}

#[derive(Debug, thiserror::Error)]
pub enum ResultError {
    #[error("the child exited cleanly but left no readable result at {}: {source}", .path.display())]
    Missing { path: PathBuf, source: ReadError },
    #[error("the child's result {} is not valid: {source}", .path.display())]
    Invalid {
        path: PathBuf,
        source: serde_json::Error,
    },
}

/// Reads a JSON result a child wrote; a child that exited 0 without one failed all the same.
pub fn read_result<T: serde::de::DeserializeOwned>(path: &Path) -> Result<T, ResultError> {
    let bytes =
        read_regular(path, FileKind::CHILD_MESSAGE).map_err(|source| ResultError::Missing {
            path: path.to_path_buf(),
            source,
        })?;
    serde_json::from_slice(&bytes).map_err(|source| ResultError::Invalid {
        path: path.to_path_buf(),
        source,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Instant;

    // Orchestration only: stand-in children that hang or fail, no GPU and no numbers.
    #[test]
    fn a_hung_child_is_killed_at_its_timeout() {
        let d = tempfile::tempdir().unwrap();
        let t0 = Instant::now();
        let e = run(
            Command::new("sh").args(["-c", "sleep 30"]),
            &Output::Log(d.path().join("log")),
            Some(Duration::from_millis(300)),
        )
        .unwrap_err();
        assert_eq!(e.kind, FailureKind::TimedOut(Duration::from_millis(300)));
        assert!(
            e.to_string()
                .starts_with("`sh -c \"sleep 30\"` did not finish within 0.3 s"),
            "{e}"
        );
        assert!(t0.elapsed() < Duration::from_secs(10));
    }

    #[test]
    fn a_failing_child_keeps_its_command_line_and_the_end_of_its_output() {
        let d = tempfile::tempdir().unwrap();
        let script = "echo starting; echo 'error: CUDA driver error while running the variant: illegal address' >&2; exit 1";
        for how in [
            Output::Log(d.path().join("log")),
            Output::Stream { echo: false },
        ] {
            let e = run(
                Command::new("sh").args(["-c", script]),
                &how,
                Some(Duration::from_secs(10)),
            )
            .unwrap()
            .success()
            .unwrap_err();
            let tail = e.output_tail().unwrap();
            assert!(
                tail.contains("illegal address") && tail.contains("starting"),
                "{tail}"
            );
            assert!(e.command.starts_with("sh -c"), "{}", e.command);
        }
        let ok = output(Command::new("sh").args(["-c", "echo fine; echo noise >&2"])).unwrap();
        assert_eq!(
            (ok.text.as_str(), ok.stderr.as_str()),
            ("fine\n", "noise\n"),
            "stdout apart from stderr"
        );
        let e =
            output(Command::new("sh").args(["-c", "echo table; echo 'why it failed' >&2; exit 2"]))
                .unwrap_err();
        assert_eq!(e.output_tail(), Some("why it failed"));
        let missing = output(&mut Command::new("/no/such/program")).unwrap_err();
        assert!(
            matches!(missing.kind, FailureKind::Start(_))
                && missing.to_string().contains("/no/such/program"),
            "{missing}"
        );
    }
}
