//! One configuration, built once from the command line's choices and the environment, and passed down: the only module besides `cmd/` that reads the environment.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use anyhow::Context;

use crate::metrics::Catalog;
use crate::profiler::NcuSearch;
use crate::store::{FileKind, read_regular_text};

/// Everything below `cmd/` needs from outside the program, read once.
#[derive(Debug, Clone)]
pub struct Config {
    /// Where suites are looked for after the command's own `--suite-dir`s: `GPU_LAB_KERNELS`,
    /// `./kernels`, and the checkout the binary was built in.
    pub suite_dirs: Vec<PathBuf>,
    /// `GPU_LAB_CACHE`, else `$XDG_CACHE_HOME/gpu-lab`, else `~/.cache/gpu-lab`: compiled PTX and ncu's metric lists.
    pub cache_dir: Option<PathBuf>,
    pub ncu: NcuSearch,
    /// `COMPUTE_SANITIZER`, else `PATH`, else the toolkit's place (`--sanitize`).
    pub sanitizer: crate::sanitizer::SanitizerSearch,
    /// The `PATH` directories, for programs named without a `/`.
    pub path_dirs: Vec<PathBuf>,
    /// This binary: children are its hidden subcommands.
    pub exe: PathBuf,
    pub temp_dir: PathBuf,
    /// `--metrics-file`: definitions that add to or override the built-ins (later files win).
    pub metrics_files: Vec<PathBuf>,
    /// The catalog, read on first use: commands that need no metric definitions do not fail on a bad file.
    catalog: OnceLock<Catalog>,
    pub quiet: bool,
}

/// The environment variables gpu-lab reads, by name.
pub struct Environment<'a> {
    pub var: &'a dyn Fn(&str) -> Option<OsString>,
    pub exe: Option<PathBuf>,
    pub temp_dir: PathBuf,
}

impl Environment<'_> {
    /// This process's environment.
    pub fn current() -> Environment<'static> {
        Environment {
            var: &|name| std::env::var_os(name),
            exe: std::env::current_exe().ok(),
            temp_dir: std::env::temp_dir(),
        }
    }
}

/// The CUDA toolkit the kernels are built with: `CUDA_HOME` or `CUDA_PATH`, else nvcc's on `PATH`, else /usr/local/cuda.
pub fn toolkit(env: &Environment) -> crate::build::Toolkit {
    let var = |name: &str| (env.var)(name).filter(|v| !v.is_empty());
    let home = var("CUDA_HOME")
        .or_else(|| var("CUDA_PATH"))
        .map(PathBuf::from);
    let path_dirs: Vec<PathBuf> = var("PATH")
        .map(|p| std::env::split_paths(&p).collect())
        .unwrap_or_default();
    crate::build::Toolkit::locate(home, &path_dirs)
}

impl Config {
    pub fn new(
        env: &Environment,
        metrics_files: &[PathBuf],
        quiet: bool,
    ) -> anyhow::Result<Config> {
        let var = |name: &str| (env.var)(name).filter(|v| !v.is_empty());
        let mut suite_dirs: Vec<PathBuf> = var("GPU_LAB_KERNELS")
            .map(PathBuf::from)
            .into_iter()
            .collect();
        suite_dirs.push(PathBuf::from("kernels"));
        // target/release/gpu-lab -> the repository root's kernels/
        if let Some(root) = env.exe.as_deref().and_then(|e| e.ancestors().nth(3)) {
            suite_dirs.push(root.join("kernels"));
        }
        let cache_dir = var("GPU_LAB_CACHE")
            .map(PathBuf::from)
            .or_else(|| var("XDG_CACHE_HOME").map(|d| PathBuf::from(d).join("gpu-lab")))
            .or_else(|| var("HOME").map(|h| Path::new(&h).join(".cache").join("gpu-lab")));
        let path_dirs: Vec<PathBuf> = var("PATH")
            .map(|p| std::env::split_paths(&p).collect())
            .unwrap_or_default();
        Ok(Config {
            suite_dirs,
            cache_dir,
            ncu: NcuSearch {
                explicit: var("NCU").map(PathBuf::from),
                path_dirs: path_dirs.clone(),
            },
            sanitizer: crate::sanitizer::SanitizerSearch {
                explicit: var("COMPUTE_SANITIZER").map(PathBuf::from),
                path_dirs: path_dirs.clone(),
            },
            path_dirs,
            exe: env.exe.clone().context(
                "cannot find the gpu-lab executable itself (it starts its own children)",
            )?,
            temp_dir: env.temp_dir.clone(),
            metrics_files: metrics_files.to_vec(),
            catalog: OnceLock::new(),
            quiet,
        })
    }

    /// The built-in metrics plus `--metrics-file`, read once.
    pub fn catalog(&self) -> anyhow::Result<&Catalog> {
        if let Some(c) = self.catalog.get() {
            return Ok(c);
        }
        let built = catalog(&self.metrics_files)?;
        Ok(self.catalog.get_or_init(|| built))
    }

    /// The command's `--suite-dir`s first (a user suite may replace a built-in of the same name), then the configured ones.
    pub fn suite_search(&self, extra: &[PathBuf]) -> Vec<PathBuf> {
        extra.iter().chain(&self.suite_dirs).cloned().collect()
    }
}

/// The built-in metric definitions plus the user's files.
fn catalog(user_files: &[PathBuf]) -> anyhow::Result<Catalog> {
    let mut c = Catalog::builtin()?;
    for file in user_files {
        let text = read_regular_text(file, FileKind::METRIC_DEFINITIONS)
            .with_context(|| format!("reading metric definitions {}\n  fix: pass an existing TOML file to --metrics-file (format: docs/metrics.md)", file.display()))?;
        c.add_toml(&file.display().to_string(), &text)?;
    }
    Ok(c)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_environment_decides_the_search_paths_and_the_cache() {
        let vars = |name: &str| match name {
            "GPU_LAB_KERNELS" => Some(OsString::from("/suites")),
            "XDG_CACHE_HOME" => Some(OsString::from("/xdg")),
            "HOME" => Some(OsString::from("/home/u")),
            "PATH" => Some(OsString::from("/a:/b")),
            "NCU" => Some(OsString::from("")),
            _ => None,
        };
        let env = Environment {
            var: &vars,
            exe: Some(PathBuf::from("/src/gpu-lab/target/release/gpu-lab")),
            temp_dir: PathBuf::from("/tmp"),
        };
        let c = Config::new(&env, &[], false).unwrap();
        assert_eq!(
            c.suite_search(&[PathBuf::from("mine")]),
            [
                PathBuf::from("mine"),
                "/suites".into(),
                "kernels".into(),
                "/src/gpu-lab/kernels".into()
            ]
        );
        assert_eq!(c.cache_dir, Some(PathBuf::from("/xdg/gpu-lab")));
        assert_eq!(c.ncu.explicit, None, "an empty NCU is unset");
        assert_eq!(c.path_dirs, [PathBuf::from("/a"), "/b".into()]);
        // A bad metrics file fails the commands that read metric definitions, and only them.
        let bad = Config::new(&env, &[PathBuf::from("/no/such.toml")], false).unwrap();
        assert!(format!("{:#}", bad.catalog().unwrap_err()).contains("--metrics-file"));
        assert!(c.catalog().unwrap().metrics.contains_key("gld_efficiency"));
    }
}
