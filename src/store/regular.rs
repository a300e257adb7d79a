//! Reading a file from disk, the one way gpu-lab does it: a regular file only (never a FIFO, which
//! would block the read forever, nor a device such as `/dev/zero`, which never ends), and at most a
//! stated number of bytes for each kind of file.

use std::fs::{File, Metadata, OpenOptions};
use std::io::{self, Read};
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

/// A kind of file gpu-lab reads, and the most bytes it reads of one: each limit lies far above the
/// largest real file of its kind, so it refuses only a file that is not one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FileKind {
    /// What the file is, for messages: "a run's results (results.jsonl)".
    pub what: &'static str,
    /// The most bytes read of one; a larger file is refused, never read in part.
    pub max_bytes: u64,
}

impl FileKind {
    /// `run.json`: the largest committed is 12 KB (most of it the metric list).
    pub const RUN_INFO: FileKind = FileKind {
        what: "a run's information (run.json)",
        max_bytes: 64 << 20,
    };
    /// `results.jsonl`: the largest committed is 0.8 MB, about 9 KB a job (samples, counters); 1 GiB
    /// holds the most jobs a suite may have (100 000) at 10 KB each, and a real run is far smaller.
    pub const RESULTS: FileKind = FileKind {
        what: "a run's results (results.jsonl)",
        max_bytes: 1 << 30,
    };
    /// A stored baseline holds a whole run, pretty-printed: about 1.4 times its results.
    pub const BASELINE: FileKind = FileKind {
        what: "a baseline",
        max_bytes: 2 << 30,
    };
    /// A kernel source, or a header it includes: far past any real one (the largest built-in source
    /// is 25 KB).
    pub const KERNEL_SOURCE: FileKind = FileKind {
        what: "a kernel source",
        max_bytes: 16 << 20,
    };
    /// A suite's manifest (`suite.toml`): the built-in ones are under 20 KiB; a manifest of 1 MiB
    /// (some 10 000 variants) loads in a fraction of a second, and one of 50 MB took 14 s and 2.6 GB.
    pub const MANIFEST: FileKind = FileKind {
        what: "a suite manifest",
        max_bytes: 1 << 20,
    };
    /// A CSV `import` reads (whole): a raw page of 100 000 kernels is about 1 GB. An `.ncu-rep`
    /// is read by ncu; what ncu exports from it meets the line limit.
    pub const NCU_CSV: FileKind = FileKind {
        what: "an ncu CSV export",
        max_bytes: 2 << 30,
    };
    /// One run's rows in the history (Parquet): a run of 1000 jobs at 300 samples is about 3 MB.
    pub const HISTORY: FileKind = FileKind {
        what: "a history file (Parquet)",
        max_bytes: 1 << 30,
    };
    /// A `--metrics-file` of metric definitions (the built-in catalog is under 100 KB).
    pub const METRIC_DEFINITIONS: FileKind = FileKind {
        what: "metric definitions",
        max_bytes: 16 << 20,
    };
    /// What gpu-lab and its children hand each other: job specs and results (JSON).
    pub const CHILD_MESSAGE: FileKind = FileKind {
        what: "a job's specification or result",
        max_bytes: 1 << 30,
    };
    /// The log of a compiler, a child or ncu, read back once it ends.
    pub const LOG: FileKind = FileKind {
        what: "a log",
        max_bytes: 1 << 30,
    };
    /// The exit code a program run under `gpu-lab ncu` leaves (a number).
    pub const EXIT_CODE: FileKind = FileKind {
        what: "an exit code file",
        max_bytes: 4 << 10,
    };
    /// ncu's metric list of a chip, cached (`--query-metrics` prints about 1 MB).
    pub const METRIC_LIST: FileKind = FileKind {
        what: "a cached metric list",
        max_bytes: 256 << 20,
    };
    /// A compiled image (cubin or PTX), from the compiler or the build cache, and its cache entry.
    pub const COMPILED: FileKind = FileKind {
        what: "a compiled kernel image",
        max_bytes: 1 << 30,
    };
}

/// Why a file was not read.
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    /// Its path leads nowhere (or through a directory that cannot be searched): the system's
    /// words, as `std::fs::read` gives them (the caller names the path and the fix, as it always has).
    #[error(transparent)]
    Find(io::Error),
    /// It is there but could not be opened (permissions): the system's words.
    #[error(transparent)]
    Open(io::Error),
    #[error("{} is {kind}, not a regular file: gpu-lab reads {what} only from a regular file (a FIFO would block it forever, a device would never end)\n  fix: replace it with the regular file meant, or name the path of one", .path.display())]
    NotRegular {
        path: PathBuf,
        /// "a FIFO", "a character device", "a directory", ...
        kind: &'static str,
        what: &'static str,
    },
    #[error("{} holds {size} bytes, more than the {max} gpu-lab reads of {what}\n  fix: check that it is the file meant; a real one is far smaller", .path.display())]
    TooLarge {
        path: PathBuf,
        /// Its size, or (for a file that grew while read) the bytes seen before reading stopped.
        size: u64,
        max: u64,
        what: &'static str,
    },
    /// Reading it failed midway, or (as text) it is not UTF-8: the system's words.
    #[error(transparent)]
    Read(io::Error),
}

impl ReadError {
    /// The file does not exist (some callers say more about a missing file than about others).
    pub fn is_not_found(&self) -> bool {
        matches!(self, ReadError::Find(e) | ReadError::Open(e) if e.kind() == io::ErrorKind::NotFound)
    }

    /// gpu-lab refused the file (not a regular one, or past its limit), as against failing to read it.
    pub fn is_refused(&self) -> bool {
        matches!(
            self,
            ReadError::NotRegular { .. } | ReadError::TooLarge { .. }
        )
    }
}

/// What a file that is not a regular one is, for the message that refuses it.
fn kind_of(meta: &Metadata) -> Option<&'static str> {
    let t = meta.file_type();
    if t.is_file() {
        None
    } else if t.is_fifo() {
        Some("a FIFO")
    } else if t.is_char_device() {
        Some("a character device")
    } else if t.is_block_device() {
        Some("a block device")
    } else if t.is_socket() {
        Some("a socket")
    } else if t.is_dir() {
        Some("a directory")
    } else {
        Some("a special file")
    }
}

/// Refuses `meta` unless it is a regular file of at most `kind.max_bytes`.
fn check(path: &Path, meta: &Metadata, kind: FileKind) -> Result<(), ReadError> {
    if let Some(what_it_is) = kind_of(meta) {
        return Err(ReadError::NotRegular {
            path: path.to_path_buf(),
            kind: what_it_is,
            what: kind.what,
        });
    }
    if meta.len() > kind.max_bytes {
        return Err(ReadError::TooLarge {
            path: path.to_path_buf(),
            size: meta.len(),
            max: kind.max_bytes,
            what: kind.what,
        });
    }
    Ok(())
}

/// Opens `path` for reading if it is a regular file within `kind`'s limit. The metadata of the
/// path is looked at first only so that a device is never opened at all (opening one can have
/// effects); what decides is the metadata of the opened handle, since the path can be replaced in
/// between. The open itself does not wait on a FIFO (`O_NONBLOCK`) nor adopt a terminal (`O_NOCTTY`).
fn open_regular(path: &Path, kind: FileKind) -> Result<File, ReadError> {
    check(
        path,
        &std::fs::metadata(path).map_err(ReadError::Find)?,
        kind,
    )?;
    let file = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY)
        .open(path)
        .map_err(ReadError::Open)?;
    check(path, &file.metadata().map_err(ReadError::Read)?, kind)?;
    Ok(file)
}

/// The bytes of the regular file at `path`, refused if it is anything else or larger than `kind` allows.
pub fn read_regular(path: &Path, kind: FileKind) -> Result<Vec<u8>, ReadError> {
    let file = open_regular(path, kind)?;
    let expected = file.metadata().map_or(0, |m| m.len());
    let mut bytes = Vec::with_capacity(usize::try_from(expected).unwrap_or(0));
    // One byte past the limit tells a file that grew past it while read.
    file.take(kind.max_bytes.saturating_add(1))
        .read_to_end(&mut bytes)
        .map_err(ReadError::Read)?;
    let seen = bytes.len() as u64;
    if seen > kind.max_bytes {
        return Err(ReadError::TooLarge {
            path: path.to_path_buf(),
            size: seen,
            max: kind.max_bytes,
            what: kind.what,
        });
    }
    Ok(bytes)
}

/// The text of the regular file at `path` (as `read_regular`), with `std::fs::read_to_string`'s
/// error for bytes that are not UTF-8.
pub fn read_regular_text(path: &Path, kind: FileKind) -> Result<String, ReadError> {
    String::from_utf8(read_regular(path, kind)?).map_err(|_| {
        ReadError::Read(io::Error::new(
            io::ErrorKind::InvalidData,
            "stream did not contain valid UTF-8",
        ))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const SMALL: FileKind = FileKind {
        what: "a test file",
        max_bytes: 8,
    };

    #[test]
    fn a_regular_file_within_its_limit_is_read_whole() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("f");
        std::fs::write(&p, b"12345678").unwrap();
        assert_eq!(read_regular(&p, SMALL).unwrap(), b"12345678");
        assert_eq!(read_regular_text(&p, SMALL).unwrap(), "12345678");
    }

    #[test]
    fn a_file_past_its_limit_is_refused_with_its_size() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("f");
        std::fs::write(&p, b"123456789").unwrap();
        let e = read_regular(&p, SMALL).unwrap_err();
        assert!(
            matches!(
                e,
                ReadError::TooLarge {
                    size: 9,
                    max: 8,
                    ..
                }
            ),
            "{e:?}"
        );
        assert!(e.to_string().contains("fix:"), "{e}");
    }

    #[test]
    fn a_fifo_a_device_and_a_directory_are_refused_without_blocking() {
        let d = tempfile::tempdir().unwrap();
        let fifo = d.path().join("fifo");
        let c = std::ffi::CString::new(fifo.as_os_str().as_encoded_bytes()).unwrap();
        // SAFETY: a valid NUL-terminated path; mkfifo touches nothing else.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        let zero = d.path().join("zero");
        std::os::unix::fs::symlink("/dev/zero", &zero).unwrap();
        for (p, kind) in [
            (&fifo, "a FIFO"),
            (&zero, "a character device"),
            (&d.path().to_path_buf(), "a directory"),
        ] {
            let e = read_regular(p, SMALL).unwrap_err();
            let text = e.to_string();
            assert!(
                text.contains(&p.display().to_string())
                    && text.contains(kind)
                    && text.contains("fix:"),
                "{text}"
            );
        }
    }

    #[test]
    fn a_missing_file_keeps_the_systems_words() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("absent");
        let e = read_regular(&p, SMALL).unwrap_err();
        assert!(e.is_not_found());
        assert_eq!(
            e.to_string(),
            std::fs::read(&p).unwrap_err().to_string(),
            "as before"
        );
    }

    #[test]
    fn text_that_is_not_utf8_gets_read_to_strings_error() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("f");
        std::fs::write(&p, b"\xff").unwrap();
        assert_eq!(
            read_regular_text(&p, SMALL).unwrap_err().to_string(),
            std::fs::read_to_string(&p).unwrap_err().to_string()
        );
    }
}
