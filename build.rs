//! Build script: records the git commit gpu-lab is built from, and whether the tree had changes, so every run can name its build.

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

fn main() {
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
