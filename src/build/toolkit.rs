//! Finding the CUDA toolkit (its headers, nvcc, the device runtime library) and the versions of NVRTC and nvcc.

use std::path::{Path, PathBuf};
use std::process::Command;

use super::error::BuildError;
use crate::process;

/// Where the CUDA toolkit is: its headers (given to NVRTC, so `cuda_fp16.h`, `cub/…` and
/// `cuda/std/…` need no path from the user) and its nvcc.
#[derive(Debug, Clone, Default)]
pub struct Toolkit {
    pub root: Option<PathBuf>,
    pub nvcc: Option<PathBuf>,
}

impl Toolkit {
    /// The toolkit of `cuda_home` (`CUDA_HOME` or `CUDA_PATH`), else the one whose nvcc is on `PATH`, else /usr/local/cuda.
    pub fn locate(cuda_home: Option<PathBuf>, path_dirs: &[PathBuf]) -> Toolkit {
        let nvcc_on_path = path_dirs
            .iter()
            .map(|d| d.join("nvcc"))
            .find(|p| p.is_file());
        let root = cuda_home
            .filter(|r| r.join("include").is_dir())
            .or_else(|| {
                nvcc_on_path
                    .as_ref()
                    .and_then(|n| n.canonicalize().ok())
                    .and_then(|n| n.parent()?.parent().map(Path::to_path_buf))
            })
            .or_else(|| {
                Some(PathBuf::from("/usr/local/cuda")).filter(|r| r.join("include").is_dir())
            });
        let nvcc = root
            .as_ref()
            .map(|r| r.join("bin").join("nvcc"))
            .filter(|p| p.is_file())
            .or(nvcc_on_path);
        Toolkit { root, nvcc }
    }

    /// The toolkit's header directories: `include/` and, since CUDA 13, `include/cccl/` (CUB, Thrust, libcu++).
    pub fn include_dirs(&self) -> Vec<PathBuf> {
        let Some(root) = &self.root else {
            return Vec::new();
        };
        [root.join("include"), root.join("include").join("cccl")]
            .into_iter()
            .filter(|d| d.is_dir())
            .collect()
    }

    /// Where the device runtime library is looked for, in order: `lib64/`, `lib/`, then each
    /// `targets/<platform>/lib/` (the toolkit's own layout; `lib64` is a link into it), sorted.
    pub fn device_runtime_candidates(&self) -> Vec<PathBuf> {
        let Some(root) = &self.root else {
            return Vec::new();
        };
        let mut found = vec![
            root.join("lib64").join(DEVICE_RUNTIME),
            root.join("lib").join(DEVICE_RUNTIME),
        ];
        let mut targets: Vec<PathBuf> = std::fs::read_dir(root.join("targets"))
            .into_iter()
            .flatten()
            .flatten()
            .map(|e| e.path().join("lib").join(DEVICE_RUNTIME))
            .collect();
        targets.sort();
        found.extend(targets);
        found
    }

    /// The CUDA device runtime (`libcudadevrt.a`) that relocatable device code is linked with.
    pub fn device_runtime(&self) -> Option<PathBuf> {
        self.device_runtime_candidates()
            .into_iter()
            .find(|p| p.is_file())
    }
}

/// The static library of the CUDA device runtime: what a kernel's own launches call.
pub const DEVICE_RUNTIME: &str = "libcudadevrt.a";

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

/// `nvcc 13.0.88`, from `nvcc --version`'s last lines.
pub fn nvcc_version(nvcc: &Path) -> Result<String, String> {
    let out = process::output(Command::new(nvcc).arg("--version")).map_err(|e| e.to_string())?;
    parse_nvcc_version(&out.text).ok_or_else(|| {
        format!(
            "`{} --version` printed no version:\n{}",
            nvcc.display(),
            out.text
        )
    })
}

/// The version in `Cuda compilation tools, release 13.0, V13.0.88`.
pub fn parse_nvcc_version(text: &str) -> Option<String> {
    let v = text.lines().find_map(|l| l.split(", V").nth(1))?;
    Some(format!("nvcc {}", v.trim()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nvcc_versions_are_read_from_its_version_banner() {
        let text = "nvcc: NVIDIA (R) Cuda compiler driver\nCuda compilation tools, release 13.0, V13.0.88\nBuild cuda_13.0.r13.0/compiler.36424714_0\n";
        assert_eq!(parse_nvcc_version(text).as_deref(), Some("nvcc 13.0.88"));
        assert_eq!(parse_nvcc_version("garbage"), None);
    }

    #[test]
    fn the_device_runtime_is_found_in_lib64_lib_or_targets() {
        let d = tempfile::tempdir().unwrap();
        let root = d.path().join("cuda-13.0");
        std::fs::create_dir_all(root.join("include")).unwrap();
        let toolkit = Toolkit::locate(Some(root.clone()), &[]);
        assert_eq!(toolkit.device_runtime(), None);
        assert_eq!(
            toolkit.device_runtime_candidates(),
            vec![
                root.join("lib64/libcudadevrt.a"),
                root.join("lib/libcudadevrt.a")
            ]
        );
        // The toolkit's own layout: targets/<platform>/lib (lib64 is a link to it in an install).
        let target = root.join("targets/x86_64-linux/lib");
        std::fs::create_dir_all(&target).unwrap();
        std::fs::create_dir_all(root.join("targets/sbsa-linux/lib")).unwrap();
        std::fs::write(target.join(DEVICE_RUNTIME), "!<arch>\n").unwrap();
        assert_eq!(toolkit.device_runtime(), Some(target.join(DEVICE_RUNTIME)));
        assert_eq!(
            toolkit.device_runtime_candidates()[2..],
            [
                root.join("targets/sbsa-linux/lib/libcudadevrt.a"),
                target.join(DEVICE_RUNTIME)
            ]
        );
        // lib64 comes first (the pip wheels have lib/ only).
        std::fs::create_dir_all(root.join("lib64")).unwrap();
        std::fs::write(root.join("lib64").join(DEVICE_RUNTIME), "!<arch>\n").unwrap();
        assert_eq!(
            toolkit.device_runtime(),
            Some(root.join("lib64").join(DEVICE_RUNTIME))
        );
        assert!(Toolkit::default().device_runtime_candidates().is_empty());
    }

    #[test]
    fn a_toolkit_is_found_from_its_home_or_its_nvcc() {
        let d = tempfile::tempdir().unwrap();
        let root = d.path().join("cuda-13.0");
        std::fs::create_dir_all(root.join("include/cccl")).unwrap();
        std::fs::create_dir_all(root.join("bin")).unwrap();
        std::fs::write(root.join("bin/nvcc"), "").unwrap();
        let from_home = Toolkit::locate(Some(root.clone()), &[]);
        assert_eq!(from_home.nvcc, Some(root.join("bin/nvcc")));
        assert_eq!(
            from_home.include_dirs(),
            vec![root.join("include"), root.join("include/cccl")]
        );
        let from_path = Toolkit::locate(None, &[root.join("bin")]);
        assert_eq!(from_path.root, Some(root.canonicalize().unwrap()));
        assert!(Toolkit::default().include_dirs().is_empty());
    }
}
