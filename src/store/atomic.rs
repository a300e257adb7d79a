//! Writing files that someone else may have planted links beside: whole-or-nothing writes through an unpredictable temporary file, and the directories gpu-lab writes into inside a run, cache or baseline directory, refused when they are links to elsewhere.

use std::fs::{self, OpenOptions, Permissions};
use std::io::{self, Write};
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Component, Path, PathBuf};

/// Writes through a temporary file in the same directory, then renames: readers never see half a
/// file. The temporary name is random and created exclusively (`O_EXCL`, which never follows a
/// link), and the bytes go through the open file, never through a path; the rename replaces a link
/// standing at `path` rather than writing through it. The directory is taken as given: a link the
/// user chose (a run directory reached through `latest`) is theirs to choose.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let tmp = write_temp_beside(path, bytes)?;
    tmp.persist(path).map(drop).map_err(|e| e.error)
}

/// [`write_atomic`] that never replaces: fails with [`io::ErrorKind::AlreadyExists`] when `path`
/// exists (a link included), so two writers cannot both win.
pub fn write_atomic_new(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let tmp = write_temp_beside(path, bytes)?;
    tmp.persist_noclobber(path).map(drop).map_err(|e| e.error)
}

/// [`write_atomic`] of `root/rel`, the directories of `rel` made by [`real_subdir`]: none of them
/// may be a link to elsewhere.
pub fn write_atomic_under(root: &Path, rel: &Path, bytes: &[u8]) -> io::Result<()> {
    let (dir, name) = match (rel.parent(), rel.file_name()) {
        (Some(parent), Some(name)) => (real_subdir(root, parent)?, name),
        _ => return Err(not_inside(root, rel)),
    };
    write_atomic(&dir.join(name), bytes)
}

/// The directory `root/rel`, each of `rel`'s parts made when missing. A part that is a symbolic
/// link, or anything but a directory, is refused with an error that says how to fix it: writing
/// through it would put files outside `root`. `root` itself is made when missing and taken as
/// given (the user chose it).
pub fn real_subdir(root: &Path, rel: &Path) -> io::Result<PathBuf> {
    fs::create_dir_all(nonempty(root))?;
    let mut dir = root.to_path_buf();
    for part in rel.components() {
        let Component::Normal(name) = part else {
            return Err(not_inside(root, rel));
        };
        dir.push(name);
        match fs::create_dir(&dir) {
            Ok(()) => continue,
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
            Err(e) => return Err(e),
        }
        let kind = fs::symlink_metadata(&dir)?.file_type();
        if kind.is_symlink() {
            return Err(link_refused(root, &dir));
        }
        if !kind.is_dir() {
            return Err(io::Error::other(format!(
                "{} is not a directory, and gpu-lab writes its files into it\n  fix: move it out of {}, then run the command again",
                dir.display(),
                root.display()
            )));
        }
    }
    Ok(dir)
}

/// Opens `path` for appending, made when missing; a symbolic link at `path` is refused (`O_NOFOLLOW`)
/// rather than followed, with an error that says how to fix it.
pub fn open_append(path: &Path) -> io::Result<fs::File> {
    OpenOptions::new()
        .create(true)
        .append(true)
        .custom_flags(libc::O_NOFOLLOW)
        .open(path)
        .map_err(|e| explain_link(path, e))
}

/// Creates (or truncates) `path` for writing; a symbolic link at `path` is refused (`O_NOFOLLOW`)
/// rather than followed, with an error that says how to fix it.
pub fn create_no_follow(path: &Path) -> io::Result<fs::File> {
    OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .custom_flags(libc::O_NOFOLLOW)
        .open(path)
        .map_err(|e| explain_link(path, e))
}

/// The bytes, synced, in a fresh temporary file beside `path` (its directory made when missing).
fn write_temp_beside(path: &Path, bytes: &[u8]) -> io::Result<tempfile::NamedTempFile> {
    let dir = nonempty(path.parent().unwrap_or(Path::new(".")));
    fs::create_dir_all(dir)?;
    let name = path.file_name().unwrap_or_default().to_string_lossy();
    let mut tmp = tempfile::Builder::new()
        .prefix(&format!(".{name}."))
        // Not `.json` at the end: `baseline list` reads every `*.json` of its directory.
        .suffix(".tmp")
        // What `File::create` gives (0666 less the umask), not tempfile's private 0600: a
        // report or baseline is as readable as it always was.
        .permissions(Permissions::from_mode(0o666))
        .tempfile_in(dir)?;
    tmp.write_all(bytes)?;
    tmp.as_file().sync_all()?;
    Ok(tmp)
}

fn nonempty(dir: &Path) -> &Path {
    if dir.as_os_str().is_empty() {
        Path::new(".")
    } else {
        dir
    }
}

fn link_refused(root: &Path, link: &Path) -> io::Error {
    let target = fs::read_link(link)
        .map(|t| format!(" (to {})", t.display()))
        .unwrap_or_default();
    io::Error::other(format!(
        "{} is a symbolic link{target}: gpu-lab writes only into real directories inside {}, never through a link to elsewhere\n  fix: remove the link (`rm {}`) and run the command again; gpu-lab makes the directory itself",
        link.display(),
        root.display(),
        link.display()
    ))
}

fn explain_link(path: &Path, e: io::Error) -> io::Error {
    if e.raw_os_error() != Some(libc::ELOOP) {
        return e;
    }
    let target = fs::read_link(path)
        .map(|t| format!(" (to {})", t.display()))
        .unwrap_or_default();
    io::Error::other(format!(
        "{} is a symbolic link{target}, and gpu-lab never writes through a link\n  fix: remove the link (`rm {}`) and run the command again",
        path.display(),
        path.display()
    ))
}

fn not_inside(root: &Path, rel: &Path) -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidInput,
        format!(
            "{} does not name a file inside {}",
            rel.display(),
            root.display()
        ),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    /// Names the old helper could have used, and a few a guesser might try: none may be followed.
    fn plant_links_at_guessable_temp_names(dir: &Path, file: &str, victim: &Path) {
        let pid = std::process::id();
        for name in [
            format!(".{file}.tmp{pid}"),
            format!(".{file}.tmp"),
            format!(".{file}.new{pid}"),
            format!("{file}.tmp"),
        ] {
            symlink(victim, dir.join(name)).unwrap();
        }
    }

    #[test]
    fn atomic_write_replaces_and_leaves_no_temp() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("a/b.txt");
        write_atomic(&p, b"one").unwrap();
        write_atomic(&p, b"two").unwrap();
        assert_eq!(fs::read_to_string(&p).unwrap(), "two");
        assert_eq!(fs::read_dir(p.parent().unwrap()).unwrap().count(), 1);
    }

    #[test]
    fn atomic_write_never_writes_through_a_link_at_a_temp_name() {
        let d = tempfile::tempdir().unwrap();
        let victim = d.path().join("victim");
        fs::write(&victim, "precious").unwrap();
        let run = d.path().join("run");
        fs::create_dir(&run).unwrap();
        plant_links_at_guessable_temp_names(&run, "report.md", &victim);
        write_atomic(&run.join("report.md"), b"report").unwrap();
        assert_eq!(fs::read_to_string(&victim).unwrap(), "precious");
        assert_eq!(fs::read_to_string(run.join("report.md")).unwrap(), "report");
        // The planted links are left as they were, and no temporary file is left beside them.
        assert_eq!(fs::read_dir(&run).unwrap().count(), 5);
    }

    #[test]
    fn atomic_write_replaces_a_link_at_the_final_name_without_following_it() {
        let d = tempfile::tempdir().unwrap();
        let victim = d.path().join("victim");
        fs::write(&victim, "precious").unwrap();
        let p = d.path().join("run.json");
        symlink(&victim, &p).unwrap();
        write_atomic(&p, b"{}").unwrap();
        assert_eq!(fs::read_to_string(&victim).unwrap(), "precious");
        assert!(!fs::symlink_metadata(&p).unwrap().file_type().is_symlink());
        assert_eq!(fs::read_to_string(&p).unwrap(), "{}");
    }

    #[test]
    fn atomic_write_keeps_the_permissions_a_plain_create_gives() {
        let d = tempfile::tempdir().unwrap();
        let ours = d.path().join("ours");
        let plain = d.path().join("plain");
        write_atomic(&ours, b"x").unwrap();
        fs::write(&plain, b"x").unwrap();
        let mode = |p: &Path| fs::metadata(p).unwrap().permissions().mode();
        assert_eq!(mode(&ours), mode(&plain));
    }

    #[test]
    fn a_new_file_is_never_written_over_an_existing_name_or_link() {
        let d = tempfile::tempdir().unwrap();
        let victim = d.path().join("victim");
        fs::write(&victim, "precious").unwrap();
        let p = d.path().join("h200.json");
        write_atomic_new(&p, b"one").unwrap();
        let e = write_atomic_new(&p, b"two").unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::AlreadyExists);
        assert_eq!(fs::read_to_string(&p).unwrap(), "one");
        let link = d.path().join("link.json");
        symlink(&victim, &link).unwrap();
        let e = write_atomic_new(&link, b"two").unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::AlreadyExists);
        assert_eq!(fs::read_to_string(&victim).unwrap(), "precious");
        assert_eq!(fs::read_dir(d.path()).unwrap().count(), 3, "no temp left");
    }

    #[test]
    fn a_subdirectory_that_is_a_link_is_refused_with_a_fix() {
        let d = tempfile::tempdir().unwrap();
        let elsewhere = d.path().join("elsewhere");
        fs::create_dir(&elsewhere).unwrap();
        let run = d.path().join("run");
        fs::create_dir(&run).unwrap();
        symlink(&elsewhere, run.join("timelines")).unwrap();
        let e = write_atomic_under(&run, Path::new("timelines/a.svg"), b"<svg/>")
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("timelines is a symbolic link") && e.contains("fix: remove the link"),
            "{e}"
        );
        assert_eq!(fs::read_dir(&elsewhere).unwrap().count(), 0);
        // A file where a directory belongs is refused as well.
        fs::write(run.join("logs"), "").unwrap();
        let e = real_subdir(&run, Path::new("logs"))
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("is not a directory") && e.contains("fix:"),
            "{e}"
        );
        // Missing directories are made, real ones used, and nothing escapes the root.
        write_atomic_under(&run, Path::new("a/b/c.txt"), b"c").unwrap();
        write_atomic_under(&run, Path::new("a/b/d.txt"), b"d").unwrap();
        assert_eq!(fs::read_to_string(run.join("a/b/c.txt")).unwrap(), "c");
        for bad in ["../x.txt", "/tmp/x.txt", "a/../../x.txt", ""] {
            assert!(
                write_atomic_under(&run, Path::new(bad), b"x").is_err(),
                "{bad}"
            );
        }
    }

    #[test]
    fn appends_and_logs_refuse_a_link_with_a_fix() {
        let d = tempfile::tempdir().unwrap();
        let victim = d.path().join("victim");
        fs::write(&victim, "precious").unwrap();
        let results = d.path().join("results.jsonl");
        symlink(&victim, &results).unwrap();
        let e = open_append(&results).unwrap_err().to_string();
        assert!(e.contains("symbolic link") && e.contains("fix:"), "{e}");
        let log = d.path().join("job.log");
        symlink(&victim, &log).unwrap();
        let e = create_no_follow(&log).unwrap_err().to_string();
        assert!(e.contains("symbolic link") && e.contains("fix:"), "{e}");
        assert_eq!(fs::read_to_string(&victim).unwrap(), "precious");
        // A real file is appended to and truncated as before.
        let plain = d.path().join("plain");
        open_append(&plain).unwrap().write_all(b"a").unwrap();
        open_append(&plain).unwrap().write_all(b"b").unwrap();
        assert_eq!(fs::read_to_string(&plain).unwrap(), "ab");
        create_no_follow(&plain).unwrap().write_all(b"c").unwrap();
        assert_eq!(fs::read_to_string(&plain).unwrap(), "c");
    }
}
