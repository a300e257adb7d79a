//! Kernel compilation with NVRTC (through cudarc), cached on disk by hash of source (with its local headers), options, architecture and NVRTC version.

use std::path::{Path, PathBuf};
use std::time::Instant;

use sha2::{Digest, Sha256};

use crate::store::write_atomic;
use crate::suite::sources::{hex, local_includes};
use crate::suite::Program;

#[derive(Debug, thiserror::Error)]
pub enum BuildError {
    #[error("cannot read kernel source {path}: {source}")]
    Source { path: PathBuf, source: std::io::Error },
    #[error("NVRTC could not compile {path} with options [{options}]:\n{log}")]
    Compile { path: PathBuf, options: String, log: String },
    #[error("NVRTC is not available: {0}\n  fix: install the CUDA toolkit's libnvrtc and put its directory on LD_LIBRARY_PATH")]
    Unavailable(String),
}

#[derive(Debug, Clone)]
pub struct Compiled {
    pub ptx: String,
    pub cached: bool,
    pub millis: f64,
}

/// The options NVRTC actually gets: the target first, line info for ncu's source view, then the program's own.
pub fn nvrtc_options(program: &Program, arch: &str) -> Vec<String> {
    let mut opts = vec![format!("--gpu-architecture={arch}")];
    // -G already carries full debug info; NVRTC warns when both are given.
    if !program.options.iter().any(|o| o == "-G" || o == "--device-debug") {
        opts.push("-lineinfo".to_string());
    }
    opts.extend(program.options.iter().cloned());
    opts
}

/// Cache key: anything that changes the PTX changes the key.
pub fn cache_key(source: &str, options: &[String], nvrtc_version: (i32, i32)) -> String {
    let mut h = Sha256::new();
    h.update(source.as_bytes());
    for o in options {
        h.update([0u8]);
        h.update(o.as_bytes());
    }
    h.update(format!("nvrtc {}.{}", nvrtc_version.0, nvrtc_version.1).as_bytes());
    hex(&h.finalize())
}

pub fn nvrtc_version() -> Result<(i32, i32), BuildError> {
    // SAFETY: the presence check runs first, so loading the library cannot panic; nvrtcVersion only writes two ints.
    unsafe {
        if !cudarc::nvrtc::sys::is_culib_present() {
            return Err(BuildError::Unavailable("libnvrtc was not found".into()));
        }
        let (mut major, mut minor) = (0, 0);
        cudarc::nvrtc::sys::nvrtcVersion(&mut major, &mut minor);
        Ok((major, minor))
    }
}

/// Compiles a program to PTX for `arch` (for example `sm_90`), reusing the cache under `cache_dir` when it can.
pub fn compile(program: &Program, arch: &str, cache_dir: Option<&Path>) -> Result<Compiled, BuildError> {
    let start = Instant::now();
    let source = std::fs::read_to_string(&program.source_path).map_err(|source| BuildError::Source { path: program.source_path.clone(), source })?;
    let options = nvrtc_options(program, arch);
    let headers = local_includes(&program.source_path, &source, &options);
    let key = cache_key(&format!("{source}{headers}"), &options, nvrtc_version()?);
    let cached_path = cache_dir.map(|d| d.join("ptx").join(format!("{key}.ptx")));
    if let Some(ptx) = cached_path.as_ref().and_then(|p| std::fs::read_to_string(p).ok()) {
        return Ok(Compiled { ptx, cached: true, millis: start.elapsed().as_secs_f64() * 1e3 });
    }
    if source.contains('\0') {
        return Err(BuildError::Compile { path: program.source_path.clone(), options: options.join(" "), log: "the source contains a NUL byte".into() });
    }
    let opts = cudarc::nvrtc::CompileOptions { options: options.clone(), name: Some(program.source_path.display().to_string()), ..Default::default() };
    let ptx = cudarc::nvrtc::compile_ptx_with_opts(&source, opts).map_err(|e| {
        let log = match &e {
            cudarc::nvrtc::CompileError::CompileError { log, .. } => log.to_string_lossy().to_string(),
            other => format!("{other:?}"),
        };
        BuildError::Compile { path: program.source_path.clone(), options: options.join(" "), log }
    })?;
    let text = ptx.to_src();
    if let Some(p) = &cached_path {
        // A cache that cannot be written only costs a recompile next time.
        let _ = write_atomic(p, text.as_bytes());
    }
    Ok(Compiled { ptx: text, cached: false, millis: start.elapsed().as_secs_f64() * 1e3 })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn key_changes_with_every_input() {
        let o = vec!["-DTILE=32".to_string()];
        let k = cache_key("src", &o, (13, 0));
        assert_eq!(k, cache_key("src", &o, (13, 0)));
        assert_ne!(k, cache_key("src2", &o, (13, 0)));
        assert_ne!(k, cache_key("src", &["-DTILE=64".to_string()], (13, 0)));
        assert_ne!(k, cache_key("src", &o, (13, 1)));
        // Option boundaries matter: ["-a", "b"] is not ["-ab"].
        assert_ne!(cache_key("s", &["-a".into(), "b".into()], (1, 0)), cache_key("s", &["-ab".into()], (1, 0)));
    }

    #[test]
    fn options_name_the_target_first() {
        let p = Program { source_path: "k.cu".into(), options: vec!["-DTILE=32".into()] };
        assert_eq!(nvrtc_options(&p, "sm_90"), vec!["--gpu-architecture=sm_90", "-lineinfo", "-DTILE=32"]);
        // -G carries full debug info already; line info beside it only draws a warning.
        let debug = Program { source_path: "k.cu".into(), options: vec!["-G".into()] };
        assert_eq!(nvrtc_options(&debug, "sm_90"), vec!["--gpu-architecture=sm_90", "-G"]);
    }
}
