//! Links planted where gpu-lab writes: at the temporary names of its atomic writes, at the files it replaces, and at the directories it writes into inside a run. The file a link points at must stay untouched; the command either succeeds without writing through the link or refuses with what is wrong and how to fix it.

use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};

use predicates::prelude::*;

use crate::common::{gpu_lab_in, gpu_lab_with_cache_in, h200_run, mock_host_program_run_in};

const PRECIOUS: &str = "precious: must survive every gpu-lab command";

/// A file outside every directory gpu-lab is asked to write into.
fn victim(dir: &Path) -> PathBuf {
    let v = dir.join("victim.txt");
    std::fs::write(&v, PRECIOUS).unwrap();
    v
}

/// A copy of the committed H200 run, which `report --write` may rewrite.
fn copy_of_h200_run(dir: &Path) -> PathBuf {
    let run = dir.join("run");
    std::fs::create_dir(&run).unwrap();
    for e in std::fs::read_dir(h200_run()).unwrap() {
        let e = e.unwrap();
        std::fs::copy(e.path(), run.join(e.file_name())).unwrap();
    }
    run
}

/// The process id Linux handed out last: the next processes get the ids just above it.
fn last_pid() -> u32 {
    let loadavg = std::fs::read_to_string("/proc/loadavg").unwrap();
    loadavg.split_whitespace().last().unwrap().parse().unwrap()
}

/// Links to `target` at every name of the form `prefix<pid>suffix` that the next few thousand
/// processes could guess from their own id (the helper's old temporary names were of this form).
fn plant_links_at_pid_names(dir: &Path, prefix: &str, suffix: &str, target: &Path) {
    let first = last_pid();
    for pid in first..first + 3000 {
        symlink(target, dir.join(format!("{prefix}{pid}{suffix}"))).unwrap();
    }
}

fn assert_untouched(victim: &Path) {
    assert!(std::fs::symlink_metadata(victim).unwrap().is_file());
    assert_eq!(std::fs::read_to_string(victim).unwrap(), PRECIOUS);
}

fn is_link(p: &Path) -> bool {
    std::fs::symlink_metadata(p)
        .unwrap()
        .file_type()
        .is_symlink()
}

#[test]
fn report_write_never_writes_through_a_link_at_a_temporary_name() {
    let d = tempfile::tempdir().unwrap();
    let victim = victim(d.path());
    let run = copy_of_h200_run(d.path());
    let before = std::fs::read_to_string(run.join("report.md")).unwrap();
    plant_links_at_pid_names(&run, ".report.md.tmp", "", &victim);
    plant_links_at_pid_names(&run, ".report.md.", ".tmp", &victim);
    gpu_lab_in(d.path())
        .args(["report", "run", "--write"])
        .assert()
        .code(0);
    assert_untouched(&victim);
    assert!(!is_link(&run.join("report.md")));
    assert_eq!(
        std::fs::read_to_string(run.join("report.md")).unwrap(),
        before
    );
    // The links are still links, and no temporary file was left beside them.
    let entries: Vec<_> = std::fs::read_dir(&run).unwrap().flatten().collect();
    assert_eq!(entries.iter().filter(|e| is_link(&e.path())).count(), 6000);
    assert_eq!(
        entries.len(),
        6000 + std::fs::read_dir(h200_run()).unwrap().count()
    );
}

#[test]
fn report_write_replaces_a_link_at_the_report_without_following_it() {
    let d = tempfile::tempdir().unwrap();
    let victim = victim(d.path());
    let run = copy_of_h200_run(d.path());
    let before = std::fs::read_to_string(run.join("chart.svg")).unwrap();
    std::fs::remove_file(run.join("chart.svg")).unwrap();
    symlink(&victim, run.join("chart.svg")).unwrap();
    gpu_lab_in(d.path())
        .args(["report", "run", "--format", "svg", "--write"])
        .assert()
        .code(0);
    assert_untouched(&victim);
    assert!(!is_link(&run.join("chart.svg")));
    assert_eq!(
        std::fs::read_to_string(run.join("chart.svg")).unwrap(),
        before
    );
}

#[test]
fn a_run_directory_reached_through_a_link_the_user_made_is_still_written() {
    let d = tempfile::tempdir().unwrap();
    let run = copy_of_h200_run(d.path());
    let before = std::fs::read_to_string(run.join("report.md")).unwrap();
    std::fs::remove_file(run.join("report.md")).unwrap();
    symlink(&run, d.path().join("latest")).unwrap();
    gpu_lab_in(d.path())
        .args(["report", "latest", "--write"])
        .assert()
        .code(0);
    assert_eq!(
        std::fs::read_to_string(run.join("report.md")).unwrap(),
        before
    );
}

#[test]
fn baseline_save_never_writes_through_a_link_at_a_temporary_name() {
    let d = tempfile::tempdir().unwrap();
    let victim = victim(d.path());
    let baselines = d.path().join("baselines");
    std::fs::create_dir(&baselines).unwrap();
    // The old names: `.NAME.json.new<pid>`, and the atomic writer's own temporary beside it.
    plant_links_at_pid_names(&baselines, ".b.json.new", "", &victim);
    let first = last_pid();
    for pid in first..first + 3000 {
        let name = format!("..b.json.new{pid}.tmp{pid}");
        symlink(&victim, baselines.join(name)).unwrap();
    }
    let save = |force: bool| {
        let mut c = gpu_lab_in(d.path());
        c.args(["baseline", "save", "b", "--from"]).arg(h200_run());
        if force {
            c.arg("--force");
        }
        c.assert().code(0);
    };
    save(false);
    assert_untouched(&victim);
    save(true);
    assert_untouched(&victim);
    let saved = baselines.join("b.json");
    assert!(!is_link(&saved));
    let text = std::fs::read_to_string(&saved).unwrap();
    assert!(text.contains("\"format\": \"gpu-lab baseline\""), "{text}");
    // Nothing but the saved baseline and the planted links.
    assert_eq!(std::fs::read_dir(&baselines).unwrap().count(), 6001);
}

#[test]
fn baseline_save_refuses_a_link_at_the_name_without_force_and_replaces_it_with_force() {
    let d = tempfile::tempdir().unwrap();
    let victim = victim(d.path());
    let baselines = d.path().join("baselines");
    std::fs::create_dir(&baselines).unwrap();
    symlink(&victim, baselines.join("b.json")).unwrap();
    gpu_lab_in(d.path())
        .args(["baseline", "save", "b", "--from"])
        .arg(h200_run())
        .assert()
        .code(1)
        .stderr(
            predicate::str::contains("already exists").and(predicate::str::contains("--force")),
        );
    assert_untouched(&victim);
    gpu_lab_in(d.path())
        .args(["baseline", "save", "b", "--force", "--from"])
        .arg(h200_run())
        .assert()
        .code(0);
    assert_untouched(&victim);
    assert!(!is_link(&baselines.join("b.json")));
}

#[test]
fn report_write_refuses_a_timelines_directory_that_is_a_link_to_elsewhere() {
    let d = tempfile::tempdir().unwrap();
    let run = mock_host_program_run_in(d.path());
    let timelines = run.join("timelines");
    let files: Vec<_> = std::fs::read_dir(&timelines)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(files.len(), 2);
    // Elsewhere holds precious files under the timelines' own names.
    let elsewhere = d.path().join("elsewhere");
    std::fs::create_dir(&elsewhere).unwrap();
    for f in &files {
        std::fs::write(elsewhere.join(f), PRECIOUS).unwrap();
    }
    std::fs::remove_dir_all(&timelines).unwrap();
    symlink(&elsewhere, &timelines).unwrap();
    gpu_lab_with_cache_in(d.path())
        .arg("report")
        .arg(&run)
        .arg("--write")
        .assert()
        .code(1)
        .stderr(
            predicate::str::contains("timelines is a symbolic link")
                .and(predicate::str::contains(elsewhere.to_str().unwrap()))
                .and(predicate::str::contains("fix: remove the link")),
        );
    let mut after: Vec<_> = std::fs::read_dir(&elsewhere)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    after.sort();
    assert_eq!(after.len(), 2, "{after:?}");
    for f in &after {
        assert_untouched(f);
    }
    // The fix the message gives works: without the link, the timelines are drawn again.
    std::fs::remove_file(&timelines).unwrap();
    gpu_lab_with_cache_in(d.path())
        .arg("report")
        .arg(&run)
        .arg("--write")
        .assert()
        .code(0);
    assert!(std::fs::symlink_metadata(&timelines).unwrap().is_dir());
    assert_eq!(std::fs::read_dir(&timelines).unwrap().count(), 2);
}

#[test]
fn report_write_replaces_a_link_at_a_timeline_file_without_following_it() {
    let d = tempfile::tempdir().unwrap();
    let victim = victim(d.path());
    let run = mock_host_program_run_in(d.path());
    let timelines = run.join("timelines");
    let first = std::fs::read_dir(&timelines)
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    let svg = std::fs::read_to_string(&first).unwrap();
    std::fs::remove_file(&first).unwrap();
    symlink(&victim, &first).unwrap();
    plant_links_at_pid_names(
        &timelines,
        &format!(".{}.tmp", first.file_name().unwrap().to_string_lossy()),
        "",
        &victim,
    );
    gpu_lab_with_cache_in(d.path())
        .arg("report")
        .arg(&run)
        .arg("--write")
        .assert()
        .code(0);
    assert_untouched(&victim);
    assert!(!is_link(&first));
    assert_eq!(std::fs::read_to_string(&first).unwrap(), svg);
}
