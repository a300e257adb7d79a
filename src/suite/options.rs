//! The compiler options a manifest may give: which ask for relocatable device code, which name an include directory.

use std::path::Path;

/// True for an option that asks for relocatable device code or a device link (`-rdc=true`, `-dc`,
/// `--device-link`, `-lcudadevrt`, …): the manifest's `rdc = true` says that instead, because the
/// harness runs the compile and link steps and must know which to run.
pub fn is_rdc_option(option: &str) -> bool {
    let name = option.split('=').next().unwrap_or(option);
    matches!(
        name,
        "-rdc"
            | "--relocatable-device-code"
            | "-dc"
            | "--device-c"
            | "-dw"
            | "--device-w"
            | "-dlink"
            | "--device-link"
            | "-lcudadevrt"
            | "--cudadevrt"
            | "-cudadevrt"
    ) || option == "--library=cudadevrt"
}

/// The directory of an NVRTC include option (`-Idir`, `--include-path=dir`), if it is one.
pub(crate) fn include_dir(option: &str) -> Option<&str> {
    option
        .strip_prefix("--include-path=")
        .or_else(|| option.strip_prefix("-I"))
        .filter(|d| !d.is_empty())
}

/// The file of a pre-include option (`--pre-include=file`, `-include=file`), if it is one: a
/// header the compiler reads before the source, so a path like an include directory's.
pub(crate) fn pre_include_file(option: &str) -> Option<&str> {
    option
        .strip_prefix("--pre-include=")
        .or_else(|| option.strip_prefix("-include="))
        .filter(|f| !f.is_empty())
}

/// True for the split forms of options that name a file or directory (`-I dir`, `-include f`),
/// which would name a path gpu-lab cannot confine or hash.
pub(crate) fn is_split_path_option(option: &str) -> bool {
    matches!(
        option,
        "-I" | "--include-path" | "-include" | "--pre-include"
    ) || option.starts_with("-isystem")
        || option.starts_with("--system-include")
}

/// The options with each include directory and pre-included file made relative to the suite's
/// directory, as sources are.
pub(crate) fn resolve_include_options<'a>(
    dir: &Path,
    options: impl Iterator<Item = &'a String>,
) -> Vec<String> {
    options
        .map(|o| {
            if let Some(d) = include_dir(o) {
                format!("-I{}", dir.join(d).display())
            } else if let Some(f) = pre_include_file(o) {
                format!("--pre-include={}", dir.join(f).display())
            } else {
                o.clone()
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rdc_options_are_recognised_with_or_without_a_value() {
        for o in [
            "-rdc=true",
            "-dc",
            "--device-link",
            "-lcudadevrt",
            "--library=cudadevrt",
        ] {
            assert!(is_rdc_option(o), "{o}");
        }
        for o in ["-O3", "-lineinfo", "--library=cublas", "-DRDC=1"] {
            assert!(!is_rdc_option(o), "{o}");
        }
    }

    #[test]
    fn include_dirs_are_read_from_joined_forms_only() {
        assert_eq!(include_dir("-Iinc"), Some("inc"));
        assert_eq!(include_dir("--include-path=../common"), Some("../common"));
        assert_eq!(include_dir("-I"), None);
        assert_eq!(include_dir("-O3"), None);
    }

    #[test]
    fn include_options_become_relative_to_the_suite() {
        let options = [
            "-Iinc".to_string(),
            "-O3".to_string(),
            "-include=pre.cuh".to_string(),
        ];
        let resolved = resolve_include_options(Path::new("kernels/s"), options.iter());
        assert_eq!(
            resolved,
            ["-Ikernels/s/inc", "-O3", "--pre-include=kernels/s/pre.cuh"]
        );
    }
}
