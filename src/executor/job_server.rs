//! The child that stays: one `__jobs` process per GPU serves a suite's jobs and its CUPTI passes one after another (its CUDA context, cold-flush kernel, drawn inputs and host buffers kept between them); a request that fails or hangs ends it, with its own log, and the next request starts another.

use std::fs::File;
use std::io::{BufRead, BufReader, Read, Seek, SeekFrom, Write};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::contract::{Failure, RunContext};
use crate::process::{FailureKind, TAIL_LINES, tail};

/// The line the child prints on stdout when a job's outcome is written; any other line it
/// prints there goes to its log.
pub const REPLY: &str = "__gpu_lab_job_done";

/// One job asked of the child: the files the per-job child takes as arguments.
#[derive(Debug, Serialize, Deserialize)]
pub struct JobRequest {
    pub spec: PathBuf,
    pub out: PathBuf,
    pub seed: u64,
}

/// A CUPTI pass asked of the child: the files the `__cupti` child takes as arguments.
#[derive(Debug, Serialize, Deserialize)]
pub struct CuptiRequest {
    pub specs: PathBuf,
    pub counters: PathBuf,
    pub out: PathBuf,
    pub seed: u64,
}

/// What one line on the child's stdin asks for: a job, a CUPTI pass, or a group's bounds (each
/// with the files and values its own child takes as arguments).
#[derive(Debug, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Request {
    Job(JobRequest),
    CuptiPass(CuptiRequest),
    Bounds {
        bytes: u64,
        out: PathBuf,
        timing: PathBuf,
        fma: bool,
        host_link: bool,
    },
    ComputeBound {
        bound: PathBuf,
        out: PathBuf,
        timing: PathBuf,
    },
    Roofs {
        math: String,
        out: PathBuf,
        timing: PathBuf,
    },
}

/// How a job the server was asked for ended, when it did not write its outcome.
#[derive(Debug)]
pub struct ServerFailure {
    pub kind: FailureKind,
    /// What the child printed while it ran this job (its error chain at the end).
    pub log_text: String,
}

/// The serving child of one GPU, while one runs, and how many were started (their logs are numbered).
#[derive(Default)]
pub struct Serving {
    server: Mutex<Option<JobServer>>,
    started: AtomicUsize,
}

impl Serving {
    /// Asks the serving child for `request`, started with `command` (its log `NAME-K.log` in the
    /// scratch directory) where none runs for this scratch directory, and waits at most `timeout`
    /// until it is answered; its output files are the request's to read. A request that fails or
    /// hangs ends that child and leaves its part of the child's log at `log`, as a child of its
    /// own would.
    pub fn ask(
        &self,
        command: impl FnOnce() -> Command,
        name: &str,
        ctx: &RunContext,
        request: &Request,
        log: &Path,
        timeout: Duration,
    ) -> Result<(), Failure> {
        let mut held = self.server.lock().unwrap_or_else(|e| e.into_inner());
        if held.as_ref().is_some_and(|s| s.work != ctx.work) {
            *held = None;
        }
        let server = match held.as_mut() {
            Some(server) => server,
            None => {
                let n = self.started.fetch_add(1, Ordering::SeqCst);
                let server_log = ctx.work.join(format!("{name}-{n}.log"));
                let server = JobServer::start(command(), &server_log, ctx.work)
                    .map_err(|why| Failure::of_child("the serving child", why, None))?;
                held.insert(server)
            }
        };
        let Err(failed) = server.serve(request, timeout) else {
            return Ok(());
        };
        *held = None;
        let log = crate::store::write_atomic(log, failed.log_text.as_bytes())
            .is_ok()
            .then(|| log.to_path_buf());
        Err(Failure::of_child("the serving child", failed.kind, log))
    }

    /// Ends the serving child: a profiler or sanitizer is about to run its own on this GPU.
    pub fn stop(&self) {
        *self.server.lock().unwrap_or_else(|e| e.into_inner()) = None;
    }
}

/// A running `__jobs` child.
pub struct JobServer {
    child: Child,
    /// Taken (closed) when the server is dropped: the child ends at the end of its stdin.
    stdin: Option<ChildStdin>,
    replies: Receiver<()>,
    log: PathBuf,
    /// The scratch directory it was started for (a new one, a new child).
    pub work: PathBuf,
}

impl JobServer {
    /// Starts `cmd` (the `__jobs` child) in its own process group, its stderr and any stray
    /// stdout lines to `log`.
    pub fn start(mut cmd: Command, log: &Path, work: &Path) -> Result<JobServer, FailureKind> {
        let start = |e: std::io::Error| FailureKind::Start(e.to_string());
        let file = crate::store::create_no_follow(log).map_err(|e| {
            FailureKind::Start(format!("cannot create its log {}: {e}", log.display()))
        })?;
        let stray = file.try_clone().map_err(start)?;
        let mut child = cmd
            .process_group(0)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(file)
            .spawn()
            .map_err(start)?;
        let (stdin, stdout) = match (child.stdin.take(), child.stdout.take()) {
            (Some(i), Some(o)) => (i, o),
            _ => return Err(FailureKind::Start("its pipes could not be opened".into())),
        };
        let (tx, replies) = mpsc::channel();
        std::thread::spawn(move || read_replies(stdout, stray, tx));
        Ok(JobServer {
            child,
            stdin: Some(stdin),
            replies,
            log: log.to_path_buf(),
            work: work.to_path_buf(),
        })
    }

    /// Asks for one job or pass and waits until its output is written, at most `timeout`. A
    /// child that ends or is killed on the way is reaped, and the request's part of its log kept.
    pub fn serve(&mut self, request: &Request, timeout: Duration) -> Result<(), ServerFailure> {
        let offset = std::fs::metadata(&self.log).map_or(0, |m| m.len());
        let line = serde_json::to_string(request).unwrap_or_default();
        let sent = match self.stdin.as_mut() {
            Some(stdin) => writeln!(stdin, "{line}").and_then(|_| stdin.flush()),
            None => Err(std::io::ErrorKind::BrokenPipe.into()),
        };
        let kind = match (sent, self.replies.recv_timeout(timeout)) {
            (Ok(()), Ok(())) => return Ok(()),
            (_, Err(RecvTimeoutError::Timeout)) => {
                self.kill();
                FailureKind::TimedOut(timeout)
            }
            // Its stdout closed (or its stdin did): the child has ended.
            _ => {
                let status = self
                    .child
                    .wait()
                    .map_or_else(|e| e.to_string(), |s| s.to_string());
                FailureKind::Exited {
                    status,
                    tail: tail(&self.log_since(offset), TAIL_LINES),
                }
            }
        };
        Err(ServerFailure {
            log_text: self.log_since(offset),
            kind,
        })
    }

    fn log_since(&self, offset: u64) -> String {
        let mut text = String::new();
        if let Ok(mut f) = File::open(&self.log)
            && f.seek(SeekFrom::Start(offset)).is_ok()
        {
            let mut bytes = Vec::new();
            let _ = f.read_to_end(&mut bytes);
            text = String::from_utf8_lossy(&bytes).into_owned();
        }
        text
    }

    /// Ends the child and everything it started.
    fn kill(&mut self) {
        // SAFETY: signals the process group created in `start`, whose leader is our child.
        unsafe { libc::killpg(self.child.id() as libc::pid_t, libc::SIGKILL) };
        let _ = self.child.wait();
    }
}

impl Drop for JobServer {
    /// Closing its stdin ends the child after its current job; one that does not end soon is killed.
    fn drop(&mut self) {
        drop(self.stdin.take());
        for _ in 0..50 {
            if matches!(self.child.try_wait(), Ok(Some(_))) {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        self.kill();
    }
}

/// Passes each reply line on; any other line the child prints on stdout goes to its log.
fn read_replies(stdout: impl Read, mut log: File, replies: mpsc::Sender<()>) {
    let mut reader = BufReader::new(stdout);
    let mut line = String::new();
    while reader.read_line(&mut line).unwrap_or(0) > 0 {
        if line.trim_end() == REPLY {
            if replies.send(()).is_err() {
                return;
            }
        } else {
            let _ = log.write_all(line.as_bytes());
        }
        line.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Instant;

    // Orchestration only: stand-in children speaking the protocol, no GPU and no numbers.
    fn request(d: &Path) -> Request {
        Request::Job(JobRequest {
            spec: d.join("spec.json"),
            out: d.join("out.json"),
            seed: 1,
        })
    }

    fn stand_in(script: &str) -> Command {
        let mut c = Command::new("sh");
        c.args(["-c", script]);
        c
    }

    #[test]
    fn a_server_answers_job_after_job_and_its_stray_output_goes_to_its_log() {
        let d = tempfile::tempdir().unwrap();
        let script = format!("while read l; do echo stray; echo {REPLY}; done");
        let mut s = JobServer::start(stand_in(&script), &d.path().join("log"), d.path()).unwrap();
        for _ in 0..3 {
            s.serve(&request(d.path()), Duration::from_secs(10))
                .unwrap();
        }
        drop(s);
        let log = std::fs::read_to_string(d.path().join("log")).unwrap();
        assert_eq!(log.matches("stray").count(), 3, "{log}");
    }

    #[test]
    fn a_cupti_pass_and_a_job_are_told_apart_on_the_line_the_child_reads() {
        let d = tempfile::tempdir().unwrap();
        let pass = Request::CuptiPass(CuptiRequest {
            specs: d.path().join("specs.json"),
            counters: d.path().join("counters.json"),
            out: d.path().join("pass.json"),
            seed: 7,
        });
        let line = serde_json::to_string(&pass).unwrap();
        assert!(line.contains(r#""kind":"cupti_pass""#), "{line}");
        match serde_json::from_str::<Request>(&line).unwrap() {
            Request::CuptiPass(p) => assert_eq!((p.seed, p.out), (7, d.path().join("pass.json"))),
            other => panic!("read back as {other:?}"),
        }
        let job = serde_json::to_string(&request(d.path())).unwrap();
        assert!(matches!(
            serde_json::from_str::<Request>(&job).unwrap(),
            Request::Job(JobRequest { seed: 1, .. })
        ));
        // One server answers both kinds in turn.
        let script = format!("while read l; do echo {REPLY}; done");
        let mut s = JobServer::start(stand_in(&script), &d.path().join("log"), d.path()).unwrap();
        s.serve(&pass, Duration::from_secs(10)).unwrap();
        s.serve(&request(d.path()), Duration::from_secs(10))
            .unwrap();
    }

    #[test]
    fn a_job_that_ends_the_server_fails_with_its_own_part_of_the_log() {
        let d = tempfile::tempdir().unwrap();
        let script = format!(
            "read l; echo first job >&2; echo {REPLY}; read l; echo 'error: the kernel trapped' >&2; exit 3"
        );
        let mut s = JobServer::start(stand_in(&script), &d.path().join("log"), d.path()).unwrap();
        s.serve(&request(d.path()), Duration::from_secs(10))
            .unwrap();
        let failed = s
            .serve(&request(d.path()), Duration::from_secs(10))
            .unwrap_err();
        assert_eq!(failed.log_text, "error: the kernel trapped\n");
        match failed.kind {
            FailureKind::Exited { status, tail } => {
                assert!(status.contains('3'), "{status}");
                assert_eq!(tail, "error: the kernel trapped");
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_hung_job_is_killed_at_its_timeout_with_the_server() {
        let d = tempfile::tempdir().unwrap();
        let mut s = JobServer::start(
            stand_in("read l; sleep 30"),
            &d.path().join("log"),
            d.path(),
        )
        .unwrap();
        let t0 = Instant::now();
        let failed = s
            .serve(&request(d.path()), Duration::from_millis(300))
            .unwrap_err();
        assert!(
            matches!(failed.kind, FailureKind::TimedOut(_)),
            "{:?}",
            failed.kind
        );
        assert!(t0.elapsed() < Duration::from_secs(10));
    }
}
