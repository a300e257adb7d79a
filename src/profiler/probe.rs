//! Whether ncu may read the counters here: profile one real launch (the only honest test) with the arguments every profile uses.

use std::ffi::OsString;
use std::path::Path;
use std::time::Duration;

use super::{ClockControl, Ncu, ProfilerError, diagnose, profile_args, report_path};
use crate::metrics;
use crate::process;

/// Profiles the first kernel `target` launches; `dir` receives the report and the log.
pub fn counters_readable(
    ncu: &Ncu,
    target: &[OsString],
    dir: &Path,
    timeout: Duration,
) -> Result<String, ProfilerError> {
    let report_base = dir.join("probe");
    let mut cmd = ncu.command_over_child();
    cmd.args(profile_args(
        &[metrics::DURATION.to_string()],
        ClockControl::None,
        &report_base,
    ))
    .args(["--launch-count", "1"])
    .args(target);
    let finished = process::run(
        &mut cmd,
        &process::Output::Log(dir.join("ncu.log")),
        Some(timeout),
    );
    let text = match &finished {
        Ok(f) => f.text.clone(),
        Err(_) => String::new(),
    };
    if let Some(why) = diagnose(&text) {
        return Err(why);
    }
    let finished = finished?.success()?;
    if report_path(&report_base).is_file() {
        return Ok("ncu profiled a copy kernel (counters readable)".into());
    }
    let why = if finished.text.trim().is_empty() {
        format!(
            ": {} ran but printed nothing and wrote no report: is it Nsight Compute?",
            ncu.path.display()
        )
    } else {
        format!(
            ": ncu wrote no report; its output:\n{}",
            finished.text.trim()
        )
    };
    Err(ProfilerError::NothingProfiled { why })
}
