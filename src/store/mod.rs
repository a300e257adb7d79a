//! Files on disk: atomic writes (`atomic`), run directories with `results.jsonl` appended after every job, reading runs back, and baselines.

mod atomic;
pub mod baseline;
pub mod builtin_kernels;
pub mod history;
mod regular;

pub use regular::{FileKind, ReadError, read_regular, read_regular_text};

pub use atomic::{
    create_no_follow, open_append, real_subdir, write_atomic, write_atomic_new, write_atomic_under,
};

use std::fs;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use anyhow::Context;
use serde::Serialize;

use crate::records::{Record, RunData, RunInfo};

/// Writes `value` as JSON, atomically.
pub fn write_json<T: Serialize + ?Sized>(path: &Path, value: &T) -> anyhow::Result<()> {
    write_atomic(path, &serde_json::to_vec(value)?)
        .with_context(|| format!("writing {}", path.display()))
}

/// Appends one JSON line and syncs it: a crash later loses nothing already measured. A link at
/// `path` is refused, not followed.
pub fn append_jsonl<T: Serialize>(path: &Path, value: &T) -> io::Result<()> {
    let mut line = serde_json::to_string(value).map_err(io::Error::other)?;
    line.push('\n');
    let mut f = open_append(path)?;
    f.write_all(line.as_bytes())?;
    f.sync_data()
}

/// `ROOT/<UTC timestamp>-<suite>-<gpu>` (ROOT: `--out`, else the data directory's `runs/`); a suffix keeps two runs in one second apart.
pub fn new_run_dir(root: &Path, suite: &str, gpu: &str) -> io::Result<PathBuf> {
    let stamp = chrono::Utc::now().format("%Y%m%dT%H%M%SZ");
    let slug: String = gpu
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_lowercase()
            } else {
                '-'
            }
        })
        .collect();
    let slug = slug
        .split('-')
        .filter(|s| !s.is_empty() && *s != "nvidia")
        .collect::<Vec<_>>()
        .join("-");
    // The suite's name is checked where it comes from (a manifest, a run.json); here it is also
    // kept to a single path component of plain characters, whatever a caller passes.
    let suite: String = suite
        .chars()
        .take(64)
        .map(|c| {
            if c.is_ascii_alphanumeric() || "_.+-".contains(c) {
                c
            } else {
                '-'
            }
        })
        .collect::<String>()
        .replace("..", "-");
    let base = format!(
        "{stamp}-{suite}-{}",
        if slug.is_empty() { "nogpu" } else { &slug }
    );
    fs::create_dir_all(root)?;
    let mut n = 0;
    loop {
        let dir = root.join(if n == 0 {
            base.clone()
        } else {
            format!("{base}-{n}")
        });
        // create_dir fails on an existing directory: two runs started in one second never share one.
        match fs::create_dir(&dir) {
            Ok(()) => return Ok(dir),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => n += 1,
            Err(e) => return Err(e),
        }
    }
}

pub const RUN_JSON: &str = "run.json";
pub const RESULTS: &str = "results.jsonl";
/// A run's results stored gzipped: read when `results.jsonl` is absent (the committed examples and
/// test fixtures are stored so, at about a tenth of the size). gpu-lab never writes one.
pub const RESULTS_GZ: &str = "results.jsonl.gz";

pub fn save_info(dir: &Path, info: &RunInfo) -> anyhow::Result<()> {
    let json = serde_json::to_vec_pretty(info)?;
    write_atomic(&dir.join(RUN_JSON), &json)
        .with_context(|| format!("writing {}", dir.join(RUN_JSON).display()))
}

/// Reads a run directory back. A truncated last line (a run killed mid-write) is skipped with a warning.
pub fn load_run(dir: &Path) -> anyhow::Result<(RunData, Vec<String>)> {
    let info = load_info(dir)?;
    let (records, warnings) = load_records(dir)?;
    Ok((RunData::from_records(info, records), warnings))
}

/// A run directory's `run.json`.
pub fn load_info(dir: &Path) -> anyhow::Result<RunInfo> {
    let info_path = dir.join(RUN_JSON);
    let text = read_regular_text(&info_path, FileKind::RUN_INFO).with_context(|| {
        format!(
            "{} is not a gpu-lab run directory (no readable {RUN_JSON})",
            dir.display()
        )
    })?;
    serde_json::from_str(&text).with_context(|| {
        format!(
            "{} is not valid gpu-lab run information",
            info_path.display()
        )
    })
}

/// A run directory's records, read line by line: one that cannot be read costs that line only,
/// with a warning naming file and line.
pub fn load_records(dir: &Path) -> anyhow::Result<(Vec<Record>, Vec<String>)> {
    let mut warnings = Vec::new();
    let mut records = Vec::new();
    let (results, body) = read_results(dir)?;
    // Line by line, as bytes: a kill in the middle of an append can cut a multi-byte character,
    // and that must cost its own line only.
    for (i, line) in body.split(|&b| b == b'\n').enumerate() {
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        match std::str::from_utf8(line)
            .map_err(|e| e.to_string())
            .and_then(|l| serde_json::from_str::<Record>(l).map_err(|e| e.to_string()))
        {
            Ok(r) => records.push(r),
            Err(e) => warnings.push(format!(
                "{}:{}: skipped an unreadable record ({e})",
                results.display(),
                i + 1
            )),
        }
    }
    Ok((records, warnings))
}

/// The path and bytes of a run directory's results: `results.jsonl`, or where it is absent
/// `results.jsonl.gz`, decompressed (at most `FileKind::RESULTS` bytes of it).
pub fn read_results(dir: &Path) -> anyhow::Result<(PathBuf, Vec<u8>)> {
    let plain = dir.join(RESULTS);
    let gzipped = dir.join(RESULTS_GZ);
    let plain_absent =
        matches!(fs::symlink_metadata(&plain), Err(e) if e.kind() == io::ErrorKind::NotFound);
    let results = if plain_absent && fs::symlink_metadata(&gzipped).is_ok() {
        gzipped
    } else {
        plain
    };
    let body = match read_regular(&results, FileKind::RESULTS) {
        Ok(body) => body,
        // An empty report with exit 0 would pass for a run that measured nothing.
        Err(e) if e.is_not_found() => anyhow::bail!(
            "{} does not exist: the run recorded no result (it stopped before its first bound or job ended)\n  fix: run the suite again; a run directory without results has nothing to report",
            results.display()
        ),
        Err(e) => return Err(e).with_context(|| format!("cannot read {}\n  fix: it must be the run's results file (a regular file of JSON lines)", results.display())),
    };
    if results.ends_with(RESULTS_GZ) {
        let text = gunzip(&body, FileKind::RESULTS.max_bytes).with_context(|| {
            format!(
                "{} is not a readable gzip file of a run's results\n  fix: restore it, or replace it with the uncompressed results.jsonl",
                results.display()
            )
        })?;
        return Ok((results, text));
    }
    Ok((results, body))
}

/// The decompressed bytes of a gzip stream (every member), refused past `max_bytes`: a small
/// file can expand without bound.
fn gunzip(compressed: &[u8], max_bytes: u64) -> io::Result<Vec<u8>> {
    use std::io::Read;
    let mut out = Vec::new();
    flate2::read::MultiGzDecoder::new(compressed)
        .take(max_bytes.saturating_add(1))
        .read_to_end(&mut out)?;
    if out.len() as u64 > max_bytes {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!("it expands past the {max_bytes} bytes gpu-lab reads of a run's results"),
        ));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn run_dirs_are_unique_and_named_after_suite_and_gpu() {
        let d = tempfile::tempdir().unwrap();
        let a = new_run_dir(d.path(), "transpose", "NVIDIA H200").unwrap();
        let b = new_run_dir(d.path(), "transpose", "NVIDIA H200").unwrap();
        assert_ne!(a, b);
        assert!(
            a.file_name()
                .unwrap()
                .to_string_lossy()
                .ends_with("-transpose-h200"),
            "{a:?}"
        );
    }

    fn gzip(bytes: &[u8]) -> Vec<u8> {
        let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
        e.write_all(bytes).unwrap();
        e.finish().unwrap()
    }

    fn committed_fixture() -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/runs/20261122T044759Z-transpose-h200")
    }

    #[test]
    fn gzipped_results_read_as_the_plain_file_would() {
        let (plain_path, plain) = read_results(&committed_fixture()).unwrap();
        assert!(plain_path.ends_with(RESULTS_GZ), "{plain_path:?}");
        let d = tempfile::tempdir().unwrap();
        fs::copy(committed_fixture().join(RUN_JSON), d.path().join(RUN_JSON)).unwrap();
        fs::write(d.path().join(RESULTS), &plain).unwrap();
        let (from_plain, w1) = load_run(d.path()).unwrap();
        fs::remove_file(d.path().join(RESULTS)).unwrap();
        fs::write(d.path().join(RESULTS_GZ), gzip(&plain)).unwrap();
        let (from_gz, w2) = load_run(d.path()).unwrap();
        assert!(w1.is_empty() && w2.is_empty(), "{w1:?} {w2:?}");
        assert_eq!(from_plain.jobs.len(), from_gz.jobs.len());
        assert!(!from_gz.jobs.is_empty());
        assert_eq!(
            serde_json::to_string(&from_plain.jobs).unwrap(),
            serde_json::to_string(&from_gz.jobs).unwrap()
        );
    }

    #[test]
    fn the_plain_file_wins_over_the_gzipped_one() {
        let d = tempfile::tempdir().unwrap();
        fs::write(d.path().join(RESULTS), b"plain\n").unwrap();
        fs::write(d.path().join(RESULTS_GZ), gzip(b"gzipped\n")).unwrap();
        let (path, body) = read_results(d.path()).unwrap();
        assert!(path.ends_with(RESULTS), "{path:?}");
        assert_eq!(body, b"plain\n");
    }

    #[test]
    fn a_corrupt_gzip_is_an_error_naming_the_file_and_the_fix() {
        let d = tempfile::tempdir().unwrap();
        let mut cut = gzip(b"{\"a\": 1}\n".repeat(100).as_slice());
        cut.truncate(cut.len() / 2);
        for body in [b"not gzip at all".to_vec(), cut] {
            fs::write(d.path().join(RESULTS_GZ), &body).unwrap();
            let e = format!("{:#}", read_results(d.path()).unwrap_err());
            assert!(e.contains(RESULTS_GZ), "{e}");
            assert!(
                e.contains("not a readable gzip file") && e.contains("fix:"),
                "{e}"
            );
        }
    }

    #[test]
    fn a_gzip_that_expands_past_the_limit_is_refused() {
        let e = gunzip(&gzip(&[b'x'; 100]), 99).unwrap_err();
        assert!(e.to_string().contains("expands past the 99 bytes"), "{e}");
        assert_eq!(gunzip(&gzip(&[b'x'; 99]), 99).unwrap().len(), 99);
    }
}
