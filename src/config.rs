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
    /// `GPU_LAB_DATA`, else `$XDG_DATA_HOME/gpu-lab`, else `~/.local/share/gpu-lab`: where runs
    /// (`runs/`) and their history (`history/`) go, outside any checkout. `None`: none is set.
    pub data_dir: Option<PathBuf>,
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
    /// Colour in what is printed for a person (the summary tables of `run` and `profile`):
    /// decided in `cmd/` from `--color`, `NO_COLOR` and whether stderr is a terminal.
    pub colour: bool,
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

/// How many jobs the in-process profiler may put in one pass (issue 31, item 4), for measuring
/// batching against one job a pass: `GPU_LAB_CUPTI_JOBS_PER_PASS=1` is one job a pass; unset,
/// every run of consecutive jobs that can share their buffers shares its passes.
pub fn cupti_jobs_per_pass(env: &Environment) -> anyhow::Result<Option<usize>> {
    let Some(v) = (env.var)("GPU_LAB_CUPTI_JOBS_PER_PASS").filter(|v| !v.is_empty()) else {
        return Ok(None);
    };
    let v = v.to_string_lossy();
    match v.parse::<usize>() {
        Ok(n) if n >= 1 => Ok(Some(n)),
        _ => anyhow::bail!(
            "GPU_LAB_CUPTI_JOBS_PER_PASS is {v:?}\n  fix: set it to a whole number of jobs, 1 or more, or unset it"
        ),
    }
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
        // The XDG base directory spec: a relative XDG_DATA_HOME is invalid and ignored.
        let absolute = |v: OsString| Some(PathBuf::from(v)).filter(|p| p.is_absolute());
        let data_dir = var("GPU_LAB_DATA").map(PathBuf::from).or_else(|| {
            var("XDG_DATA_HOME")
                .and_then(absolute)
                .map(|d| d.join("gpu-lab"))
                .or_else(|| {
                    var("HOME")
                        .and_then(absolute)
                        .map(|h| h.join(".local").join("share").join("gpu-lab"))
                })
        });
        Ok(Config {
            suite_dirs,
            cache_dir,
            data_dir,
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
            colour: false,
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

    /// Where run directories go: `--out` where given, else `runs/` of the data directory.
    pub fn runs_dir(&self, out: Option<&Path>) -> anyhow::Result<PathBuf> {
        match (out, &self.data_dir) {
            (Some(out), _) => Ok(out.to_path_buf()),
            (None, Some(data)) => Ok(data.join("runs")),
            (None, None) => anyhow::bail!(
                "{NO_DATA_DIR}\n  fix: pass --out DIR, or set GPU_LAB_DATA=DIR (runs go to DIR/runs, the history to DIR/history)"
            ),
        }
    }

    /// Where the history of runs is kept: `history/` of the data directory.
    pub fn history_dir(&self) -> anyhow::Result<PathBuf> {
        match &self.data_dir {
            Some(data) => Ok(data.join("history")),
            None => anyhow::bail!(
                "{NO_DATA_DIR}\n  fix: set GPU_LAB_DATA=DIR (the history is kept in DIR/history)"
            ),
        }
    }

    /// The command's `--suite-dir`s first (a user suite may replace a built-in of the same name),
    /// then the configured ones, then, where those lack a built-in suite (an installed binary),
    /// the copy of the built-in suites in the cache (`store::builtin_kernels`).
    pub fn suite_search(&self, extra: &[PathBuf]) -> anyhow::Result<Vec<PathBuf>> {
        let mut dirs: Vec<PathBuf> = extra.iter().chain(&self.suite_dirs).cloned().collect();
        let found = crate::suite::discover(&dirs);
        let builtin = crate::store::builtin_kernels::builtin_suite_names();
        if builtin.iter().all(|name| found.contains_key(*name)) {
            return Ok(dirs);
        }
        let cache = self.cache_dir.as_deref().context(
            "the built-in suites are copied into the cache directory, and there is none (no GPU_LAB_CACHE, XDG_CACHE_HOME or HOME)\n  fix: set GPU_LAB_CACHE=DIR, or GPU_LAB_KERNELS to a directory of suites",
        )?;
        let copy = crate::store::builtin_kernels::materialise(cache).with_context(|| {
            format!(
                "copying the built-in suites into {}\n  fix: make that directory writable, or set GPU_LAB_CACHE=DIR",
                cache.display()
            )
        })?;
        dirs.push(copy);
        Ok(dirs)
    }
}

const NO_DATA_DIR: &str = "no data directory for gpu-lab's runs and history: none of GPU_LAB_DATA, XDG_DATA_HOME (absolute) and HOME (absolute) is set";

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

    fn jobs_per_pass(value: Option<&'static str>) -> anyhow::Result<Option<usize>> {
        let var = move |name: &str| {
            (name == "GPU_LAB_CUPTI_JOBS_PER_PASS")
                .then_some(value)
                .flatten()
                .map(OsString::from)
        };
        cupti_jobs_per_pass(&Environment {
            var: &var,
            exe: None,
            temp_dir: PathBuf::from("/tmp"),
        })
    }

    #[test]
    fn jobs_share_passes_unless_the_environment_caps_them() {
        assert_eq!(jobs_per_pass(None).unwrap(), None);
        assert_eq!(jobs_per_pass(Some("")).unwrap(), None);
        assert_eq!(jobs_per_pass(Some("1")).unwrap(), Some(1));
        for bad in ["0", "-2", "all"] {
            let e = jobs_per_pass(Some(bad)).unwrap_err().to_string();
            assert!(
                e.contains("GPU_LAB_CUPTI_JOBS_PER_PASS") && e.contains("fix:"),
                "{e}"
            );
        }
    }

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
            // Run where ./kernels holds every built-in suite (the package root): no copy added.
            c.suite_search(&[PathBuf::from("mine")]).unwrap(),
            [
                PathBuf::from("mine"),
                "/suites".into(),
                "kernels".into(),
                "/src/gpu-lab/kernels".into()
            ]
        );
        assert_eq!(c.cache_dir, Some(PathBuf::from("/xdg/gpu-lab")));
        // No XDG_DATA_HOME: the data directory under HOME; --out wins for runs.
        assert_eq!(
            c.runs_dir(None).unwrap(),
            PathBuf::from("/home/u/.local/share/gpu-lab/runs")
        );
        assert_eq!(
            c.runs_dir(Some(Path::new("mine"))).unwrap(),
            PathBuf::from("mine")
        );
        assert_eq!(
            c.history_dir().unwrap(),
            PathBuf::from("/home/u/.local/share/gpu-lab/history")
        );
        assert_eq!(c.ncu.explicit, None, "an empty NCU is unset");
        assert_eq!(c.path_dirs, [PathBuf::from("/a"), "/b".into()]);
        // A bad metrics file fails the commands that read metric definitions, and only them.
        let bad = Config::new(&env, &[PathBuf::from("/no/such.toml")], false).unwrap();
        assert!(format!("{:#}", bad.catalog().unwrap_err()).contains("--metrics-file"));
        assert!(c.catalog().unwrap().metrics.contains_key("gld_efficiency"));
    }

    fn data_dir_of(vars: &[(&str, &str)]) -> Config {
        let vars: Vec<(String, OsString)> = vars
            .iter()
            .map(|(k, v)| (k.to_string(), OsString::from(v)))
            .collect();
        let lookup = move |name: &str| vars.iter().find(|(k, _)| k == name).map(|(_, v)| v.clone());
        let env = Environment {
            var: &lookup,
            exe: Some(PathBuf::from("/bin/gpu-lab")),
            temp_dir: PathBuf::from("/tmp"),
        };
        Config::new(&env, &[], false).unwrap()
    }

    #[test]
    fn the_data_directory_is_gpu_lab_data_then_xdg_then_home_and_never_guessed() {
        let all = [
            ("GPU_LAB_DATA", "/data"),
            ("XDG_DATA_HOME", "/xdg"),
            ("HOME", "/home/u"),
        ];
        assert_eq!(data_dir_of(&all).data_dir, Some(PathBuf::from("/data")));
        assert_eq!(
            data_dir_of(&all[1..]).data_dir,
            Some(PathBuf::from("/xdg/gpu-lab"))
        );
        // A relative XDG_DATA_HOME is ignored, as the XDG spec says.
        assert_eq!(
            data_dir_of(&[("XDG_DATA_HOME", "rel"), ("HOME", "/home/u")]).data_dir,
            Some(PathBuf::from("/home/u/.local/share/gpu-lab"))
        );
        let none = data_dir_of(&[("HOME", "")]);
        assert_eq!(none.data_dir, None);
        let e = format!("{:#}", none.runs_dir(None).unwrap_err());
        assert!(e.contains("GPU_LAB_DATA") && e.contains("--out"), "{e}");
        assert!(none.history_dir().is_err());
        assert_eq!(
            none.runs_dir(Some(Path::new("/r"))).unwrap(),
            PathBuf::from("/r")
        );
    }
}
