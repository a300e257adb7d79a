//! Counters in the process, through CUPTI's Profiler Host API (configuration image, pass count, evaluation) and Range Profiler (one auto range a kernel, user replay): libcupti loaded at run time, so gpu-lab builds and tests anywhere.
//!
//! `ffi` holds the C structs and entry points; `session` one context's collection of a list of
//! counters over a workload that the caller replays once per pass.

pub mod activity;
#[cfg(test)]
mod activity_fixtures;
pub mod activity_records;
pub mod crosscheck;
pub mod error;
pub mod ffi;
pub mod launch_stats;
pub mod rows;
pub mod session;

use std::path::{Path, PathBuf};

pub use error::CuptiError;
pub use session::{Collection, Counters, RangeValues};

/// Where libcupti may be, the loader's own search first; `toolkit` is the CUDA toolkit's root.
pub fn library_candidates(toolkit: Option<&Path>) -> Vec<PathBuf> {
    let mut roots: Vec<PathBuf> = toolkit.into_iter().map(Path::to_path_buf).collect();
    roots.push(PathBuf::from("/usr/local/cuda"));
    let mut out = vec![
        PathBuf::from("libcupti.so.13"),
        PathBuf::from("libcupti.so"),
    ];
    for root in roots {
        for dir in [
            "extras/CUPTI/lib64",
            "lib64",
            "targets/x86_64-linux/lib",
            "targets/sbsa-linux/lib",
        ] {
            for name in ["libcupti.so.13", "libcupti.so"] {
                out.push(root.join(dir).join(name));
            }
        }
    }
    out
}

/// Loads libcupti from the first candidate that opens (`open_library`) and resolves the
/// Profiler Host API and Range Profiler entry points.
pub fn load(toolkit: Option<&Path>) -> Result<ffi::Api, CuptiError> {
    let (lib, candidate) = open_library_at(toolkit)?;
    // SAFETY: a libcupti; `resolve` types each symbol as its header declares it.
    unsafe { ffi::Api::resolve(lib) }.map_err(|why| CuptiError::NotLoaded {
        tried: format!("{}: {why}", candidate.display()),
    })
}

/// Opens libcupti from the first candidate that opens. libnvperf_host, which CUPTI opens itself,
/// is opened first from the same folder (where the loader would not look), made global.
pub fn open_library(toolkit: Option<&Path>) -> Result<libloading::Library, CuptiError> {
    open_library_at(toolkit).map(|(lib, _)| lib)
}

fn open_library_at(toolkit: Option<&Path>) -> Result<(libloading::Library, PathBuf), CuptiError> {
    let mut tried = Vec::new();
    for candidate in library_candidates(toolkit) {
        if candidate.components().count() > 1 && !candidate.is_file() {
            continue;
        }
        if let Some(dir) = candidate.parent().filter(|d| !d.as_os_str().is_empty()) {
            open_perf_libraries(dir);
        }
        // SAFETY: libcupti's initialisers are NVIDIA's; the symbols are typed where resolved.
        match unsafe { libloading::Library::new(&candidate) } {
            Ok(lib) => return Ok((lib, candidate)),
            Err(e) => tried.push(format!("{}: {e}", candidate.display())),
        }
    }
    Err(CuptiError::NotLoaded {
        tried: tried.join("; "),
    })
}

fn open_perf_libraries(dir: &Path) {
    for perf in ["libnvperf_host.so", "libnvperf_target.so"] {
        let path = dir.join(perf);
        if path.is_file() {
            // SAFETY: NVIDIA's own library, opened for CUPTI to find; its initialisers
            // only register themselves. Leaked on purpose: CUPTI keeps using it.
            if let Ok(lib) = unsafe {
                libloading::os::unix::Library::open(
                    Some(&path),
                    libloading::os::unix::RTLD_NOW | libloading::os::unix::RTLD_GLOBAL,
                )
            } {
                std::mem::forget(lib);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn candidates_try_the_loader_then_the_toolkit_then_usr_local_cuda() {
        let c = library_candidates(Some(Path::new("/opt/cuda")));
        assert_eq!(c[0], PathBuf::from("libcupti.so.13"));
        assert!(c.contains(&PathBuf::from(
            "/opt/cuda/extras/CUPTI/lib64/libcupti.so.13"
        )));
        let toolkit_at = c.iter().position(|p| p.starts_with("/opt/cuda"));
        let default_at = c.iter().position(|p| p.starts_with("/usr/local/cuda"));
        assert!(toolkit_at < default_at, "{c:?}");
    }

    #[test]
    fn a_missing_library_says_what_was_tried_and_the_fix() {
        let e = CuptiError::NotLoaded {
            tried: "libcupti.so.13: not found".into(),
        }
        .to_string();
        assert!(e.contains("libcupti.so.13: not found"), "{e}");
        assert!(e.contains("--profiler ncu"), "{e}");
    }
}
