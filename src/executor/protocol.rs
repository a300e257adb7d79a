//! The hidden subcommands the executor's children run (`cli/child.rs` declares them, `cmd/child.rs` serves them), and the arguments a child of its own takes for what the serving child is asked.

use std::ffi::OsString;
use std::path::Path;

use super::job_server::Request;

pub const JOB: &str = "__job";
pub const JOBS: &str = "__jobs";
pub const BUILD: &str = "__build";
pub const PROFILE_PASS: &str = "__profile";
pub const CUPTI_PASS: &str = "__cupti";
pub const BOUNDS: &str = "__bounds";
pub const COMPUTE_BOUND: &str = "__compute_bound";
pub const ROOFS: &str = "__roofs";

/// The subcommand and arguments (after `--gpu` and `--cache`) of the child of its own that does
/// what `request` asks the serving child: `--child-per-job`'s way.
pub fn own_child(request: &Request) -> (&'static str, Vec<OsString>) {
    let path = |p: &Path| p.as_os_str().to_os_string();
    match request {
        Request::Job(j) => (
            JOB,
            vec![
                "--spec".into(),
                path(&j.spec),
                "--out".into(),
                path(&j.out),
                "--seed".into(),
                j.seed.to_string().into(),
            ],
        ),
        Request::CuptiPass(p) => (
            CUPTI_PASS,
            vec![
                "--specs".into(),
                path(&p.specs),
                "--counters".into(),
                path(&p.counters),
                "--out".into(),
                path(&p.out),
                "--seed".into(),
                p.seed.to_string().into(),
            ],
        ),
        Request::Bounds {
            bytes,
            out,
            timing,
            fma,
            host_link,
        } => {
            let mut args: Vec<OsString> = vec![
                "--bytes".into(),
                bytes.to_string().into(),
                "--out".into(),
                path(out),
                "--timing".into(),
                path(timing),
            ];
            if *fma {
                args.push("--fma".into());
            }
            if *host_link {
                args.push("--host-link".into());
            }
            (BOUNDS, args)
        }
        Request::ComputeBound { bound, out, timing } => (
            COMPUTE_BOUND,
            vec![
                "--bound".into(),
                path(bound),
                "--out".into(),
                path(out),
                "--timing".into(),
                path(timing),
            ],
        ),
        Request::Roofs { math, out, timing } => (
            ROOFS,
            vec![
                "--math".into(),
                math.into(),
                "--out".into(),
                path(out),
                "--timing".into(),
                path(timing),
            ],
        ),
    }
}

/// The argument list of a bounds child for `bytes` bytes, for the doctor's counter probe.
pub fn bounds_target(
    exe: &Path,
    gpu: u32,
    cache_dir: Option<&Path>,
    bytes: u64,
    out: &Path,
    timing: &Path,
) -> Vec<OsString> {
    let (subcommand, args) = own_child(&Request::Bounds {
        bytes,
        out: out.to_path_buf(),
        timing: timing.to_path_buf(),
        fma: false,
        host_link: false,
    });
    let mut t: Vec<OsString> = vec![
        exe.as_os_str().to_os_string(),
        subcommand.into(),
        "--gpu".into(),
        gpu.to_string().into(),
    ];
    if let Some(d) = cache_dir {
        t.extend(["--cache".into(), d.as_os_str().to_os_string()]);
    }
    t.extend(args);
    t
}
