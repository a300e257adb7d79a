//! Build script: embeds the built-in suites (`kernels/`) as a table of files, and records the git commit gpu-lab is built from, and whether the tree had changes, so every run can name its build.

use std::path::{Path, PathBuf};
use std::process::Command;

/// `git args…` in the package's directory, its trimmed output when it succeeds.
fn git(args: &[&str]) -> Option<String> {
    let out = Command::new("git")
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
}

/// Every regular file under `dir`, sorted (links and anything else are left out: an installed
/// binary carries the suites' own files only).
fn files_under(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let mut paths: Vec<PathBuf> = entries.flatten().map(|e| e.path()).collect();
    paths.sort();
    for p in paths {
        match std::fs::symlink_metadata(&p).map(|m| m.file_type()) {
            Ok(t) if t.is_dir() => files_under(&p, out),
            Ok(t) if t.is_file() => out.push(p),
            _ => {}
        }
    }
}

/// `$OUT_DIR/builtin_kernels.rs`: `BUILTIN_KERNELS`, each file of `kernels/` by its path under
/// it and its bytes (`include_bytes!`, so a changed file rebuilds the binary).
fn embed_kernels() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("kernels");
    let mut files = Vec::new();
    files_under(&root, &mut files);
    let mut table = String::from(
        "/// The built-in suites' files: path under `kernels/`, bytes.\npub static BUILTIN_KERNELS: &[(&str, &[u8])] = &[\n",
    );
    for f in &files {
        let (Some(rel), Some(abs)) = (
            f.strip_prefix(&root).ok().and_then(|r| r.to_str()),
            f.to_str(),
        ) else {
            panic!("kernels/ holds a path that is not UTF-8: {}", f.display());
        };
        table.push_str(&format!("    ({rel:?}, include_bytes!({abs:?})),\n"));
    }
    table.push_str("];\n");
    let out = PathBuf::from(std::env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
    std::fs::write(out.join("builtin_kernels.rs"), table).expect("writing builtin_kernels.rs");
}

fn main() {
    embed_kernels();
    // A change to the sources makes a new build name itself anew; so does a commit, through git's
    // own files (asked of git: in a worktree they are not under `.git/`). A path that does not exist
    // would rerun this script on every build, so only existing ones are named.
    let branch = git(&["symbolic-ref", "-q", "HEAD"]);
    let git_files = ["HEAD", "index"]
        .into_iter()
        .map(str::to_string)
        .chain(branch)
        .filter_map(|f| git(&["rev-parse", "--git-path", &f]));
    for path in ["src", "kernels", "Cargo.toml", "Cargo.lock", "build.rs"]
        .into_iter()
        .map(str::to_string)
        .chain(git_files)
        .filter(|p| {
            std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
                .join(p)
                .exists()
        })
    {
        println!("cargo:rerun-if-changed={path}");
    }
    // Built outside a checkout (a source tarball, `cargo install` from a registry): no commit.
    let Some(commit) = git(&["rev-parse", "HEAD"]).filter(|c| c.len() == 40) else {
        return;
    };
    // Tracked files only: an untracked scratch file does not change what was built.
    let dirty =
        git(&["status", "--porcelain", "--untracked-files=no"]).is_none_or(|s| !s.is_empty());
    println!("cargo:rustc-env=GPU_LAB_COMMIT={commit}");
    println!(
        "cargo:rustc-env=GPU_LAB_DIRTY={}",
        if dirty { "1" } else { "0" }
    );
}
