//! The built-in suites embedded in the binary (every file of `kernels/`, by build.rs), and their copy on disk for an installed binary: a content-hashed directory in the cache, made whole or not at all, so that nvcc and NVRTC can read the sources by path.

use std::fs;
use std::io;
use std::path::{Component, Path, PathBuf};

use sha2::{Digest, Sha256};

use super::atomic::real_subdir;

include!(concat!(env!("OUT_DIR"), "/builtin_kernels.rs"));

/// The cache's folder of built-in suite trees, one per content hash.
const FOLDER: &str = "builtin-kernels";

/// The names of the built-in suites: the directories with a `suite.toml`.
pub fn builtin_suite_names() -> Vec<&'static str> {
    BUILTIN_KERNELS
        .iter()
        .filter_map(|(path, _)| path.strip_suffix("/suite.toml"))
        .filter(|name| !name.contains('/'))
        .collect()
}

/// The first 16 hex digits of the SHA-256 of every embedded file, path and bytes: two builds
/// with the same suites share one copy; a changed file makes a new one.
pub fn content_hash() -> String {
    let mut h = Sha256::new();
    for (path, bytes) in BUILTIN_KERNELS {
        h.update((path.len() as u64).to_le_bytes());
        h.update(path.as_bytes());
        h.update((bytes.len() as u64).to_le_bytes());
        h.update(bytes);
    }
    h.finalize()[..8]
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// The directory holding the built-in suites under `cache`, written now when missing: into a
/// fresh private temporary directory beside it, then renamed into place in one step, so that an
/// interrupted write never leaves a half suite where it is looked for. Another process that wins
/// the race leaves its copy, which is the same.
pub fn materialise(cache: &Path) -> io::Result<PathBuf> {
    let parent = real_subdir(cache, Path::new(FOLDER))?;
    let target = parent.join(content_hash());
    match fs::symlink_metadata(&target) {
        Ok(m) if m.is_dir() => return Ok(target),
        Ok(_) => {
            return Err(io::Error::other(format!(
                "{} is not a directory of built-in suites\n  fix: remove it; gpu-lab writes it anew",
                target.display()
            )));
        }
        Err(e) if e.kind() == io::ErrorKind::NotFound => {}
        Err(e) => return Err(e),
    }
    let tmp = tempfile::Builder::new()
        .prefix(".partial-")
        .tempdir_in(&parent)?;
    write_tree(tmp.path())?;
    let partial = tmp.keep();
    match fs::rename(&partial, &target) {
        Ok(()) => Ok(target),
        // Another gpu-lab renamed its copy first.
        Err(_) if target.is_dir() => {
            let _ = fs::remove_dir_all(&partial);
            Ok(target)
        }
        Err(e) => {
            let _ = fs::remove_dir_all(&partial);
            Err(e)
        }
    }
}

/// Every embedded file under `dir` (a directory only this process writes into).
fn write_tree(dir: &Path) -> io::Result<()> {
    for (rel, bytes) in BUILTIN_KERNELS {
        let rel = Path::new(rel);
        // build.rs names plain relative paths; anything else is refused, never written outside `dir`.
        if !rel.components().all(|c| matches!(c, Component::Normal(_))) {
            return Err(io::Error::other(format!(
                "embedded suite file {} is not a plain relative path",
                rel.display()
            )));
        }
        let path = dir.join(rel);
        if let Some(p) = path.parent() {
            fs::create_dir_all(p)?;
        }
        fs::write(&path, bytes)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_built_in_suite_is_embedded_with_its_files() {
        let names = builtin_suite_names();
        assert!(
            names.contains(&"reduction") && names.contains(&"matmul"),
            "{names:?}"
        );
        let on_disk = fs::read_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/kernels"))
            .unwrap()
            .flatten()
            .filter(|e| e.path().join("suite.toml").is_file())
            .count();
        assert_eq!(names.len(), on_disk);
    }

    #[test]
    fn the_copy_is_made_once_whole_and_reused() {
        let cache = tempfile::tempdir().unwrap();
        let dir = materialise(cache.path()).unwrap();
        assert_eq!(dir.file_name().unwrap().to_str(), Some(&*content_hash()));
        for (rel, bytes) in BUILTIN_KERNELS {
            assert_eq!(&fs::read(dir.join(rel)).unwrap(), bytes, "{rel}");
        }
        // A second call finds it; no partial directory is left beside it.
        assert_eq!(materialise(cache.path()).unwrap(), dir);
        let beside: Vec<_> = fs::read_dir(dir.parent().unwrap())
            .unwrap()
            .flatten()
            .map(|e| e.file_name())
            .collect();
        assert_eq!(beside, vec![dir.file_name().unwrap().to_owned()]);
    }

    #[test]
    fn a_half_written_copy_is_never_the_one_used() {
        let cache = tempfile::tempdir().unwrap();
        // What an interrupted write leaves: a partial directory, never the hashed name.
        let partial = cache.path().join(FOLDER).join(".partial-abc");
        fs::create_dir_all(partial.join("matmul")).unwrap();
        let dir = materialise(cache.path()).unwrap();
        assert!(dir.join("matmul/suite.toml").is_file());
        assert_ne!(dir, partial);
    }

    #[test]
    fn a_file_where_the_copy_goes_is_refused_with_a_fix() {
        let cache = tempfile::tempdir().unwrap();
        fs::create_dir_all(cache.path().join(FOLDER)).unwrap();
        fs::write(cache.path().join(FOLDER).join(content_hash()), b"x").unwrap();
        let e = materialise(cache.path()).unwrap_err().to_string();
        assert!(e.contains("fix: remove it"), "{e}");
    }
}
