//! What a build will run, decided before anything runs (pure): the compiler's options, the device-link step of relocatable device code, and whether the registers are capped.

use std::path::{Path, PathBuf};

use crate::suite::{Compiler, Program};

/// Everything a build runs, decided before anything runs (pure, so the CPU tests see the exact
/// command lines): the compile step's options and, for relocatable device code, how it is linked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BuildPlan {
    /// NVRTC's options, or nvcc's for the compile step.
    pub compile: Vec<String>,
    /// nvcc with `rdc`: the device-link step's options (`-dlink -cubin`, the device runtime);
    /// empty otherwise (NVRTC's relocatable PTX is linked by the driver at load).
    pub link: Vec<String>,
    /// The device runtime library the program is linked with (`rdc` only).
    pub device_runtime: Option<PathBuf>,
}

impl BuildPlan {
    /// The compiler, options, link step and the rdc flag, for `program` built for `arch`
    /// (`device_runtime`: the toolkit's libcudadevrt.a, needed when `program.rdc`).
    pub fn new(program: &Program, arch: &str, device_runtime: Option<&Path>) -> BuildPlan {
        let device_runtime = device_runtime
            .filter(|_| program.rdc)
            .map(Path::to_path_buf);
        match (program.compiler, &device_runtime) {
            (Compiler::Nvrtc, _) => {
                let mut compile = nvrtc_options(program, arch);
                if program.rdc {
                    compile.insert(1, "--relocatable-device-code=true".to_string());
                }
                BuildPlan {
                    compile,
                    link: Vec::new(),
                    device_runtime,
                }
            }
            (Compiler::Nvcc, Some(lib)) => {
                // `-dc` is `-rdc=true -c`: an object of relocatable device code, which the
                // device link turns into one cubin with the device runtime (nvcc's documented
                // way to get a linked cubin for the driver API: `--device-link … --cubin`).
                let mut compile = nvcc_options(program, arch);
                compile[0] = "-dc".to_string();
                let lib_dir = lib
                    .parent()
                    .map(|d| d.display().to_string())
                    .unwrap_or_default();
                let link = vec![
                    "-dlink".to_string(),
                    "-cubin".to_string(),
                    format!("-arch={arch}"),
                    format!("-L{lib_dir}"),
                    "-lcudadevrt".to_string(),
                ];
                BuildPlan {
                    compile,
                    link,
                    device_runtime,
                }
            }
            (Compiler::Nvcc, None) => BuildPlan {
                compile: nvcc_options(program, arch),
                link: Vec::new(),
                device_runtime: None,
            },
        }
    }

    /// What the cache key hashes besides the source: both steps' options, the rdc flag and the
    /// device runtime's path, with markers so that no two plans give the same list.
    pub fn key_parts(&self, rdc: bool) -> Vec<String> {
        let mut parts = self.compile.clone();
        parts.push(format!("\u{1}rdc={rdc}"));
        parts.push("\u{1}link".to_string());
        parts.extend(self.link.iter().cloned());
        if let Some(lib) = &self.device_runtime {
            parts.push(format!("\u{1}devrt={}", lib.display()));
        }
        parts
    }
}

/// The options NVRTC actually gets: the target first, line info for ncu's source view, the
/// program's include directories, then its own options.
pub fn nvrtc_options(program: &Program, arch: &str) -> Vec<String> {
    let mut opts = vec![format!("--gpu-architecture={arch}")];
    // -G already carries full debug info; NVRTC warns when both are given.
    if !device_debug(program) {
        opts.push("-lineinfo".to_string());
    }
    opts.extend(
        program
            .include_dirs
            .iter()
            .map(|d| format!("--include-path={}", d.display())),
    );
    opts.extend(program.options.iter().cloned());
    opts
}

/// Whether the program's options ask for device debug information (`-G`), which carries line
/// information already (NVRTC warns when `-lineinfo` is given too).
fn device_debug(program: &Program) -> bool {
    program
        .options
        .iter()
        .any(|o| o == "-G" || o == "--device-debug")
}

/// The options nvcc gets (the same choices as NVRTC's, in nvcc's spelling).
pub fn nvcc_options(program: &Program, arch: &str) -> Vec<String> {
    let mut opts = vec!["-cubin".to_string(), format!("-arch={arch}")];
    if !device_debug(program) {
        opts.push("-lineinfo".to_string());
    }
    opts.extend(
        program
            .include_dirs
            .iter()
            .map(|d| format!("-I{}", d.display())),
    );
    opts.extend(program.options.iter().cloned());
    opts
}

/// The target a program is built for: `arch` (the GPU's `sm_XY`) itself, or with
/// `arch_specific` its arch-specific target `sm_XYa` (the instructions of that one compute
/// capability: `wgmma`, `setmaxnreg` on 9.0). Err: the compute capability (for example `8.6`)
/// when it is below 9.0, which has no arch-specific target.
pub fn target_arch(arch: &str, arch_specific: bool) -> Result<String, String> {
    if !arch_specific {
        return Ok(arch.to_string());
    }
    let digits = arch.strip_prefix("sm_").unwrap_or(arch);
    let cc: u32 = digits
        .parse()
        .map_err(|_| format!("an unrecognised architecture `{arch}`"))?;
    if cc < 90 {
        return Err(format!("compute capability {}.{}", cc / 10, cc % 10));
    }
    Ok(format!("sm_{digits}a"))
}

/// Whether NVRTC's options cap the registers per thread (`--maxrregcount=N`, `-maxrregcount=N`).
/// NVRTC applies the cap only to the SASS it assembles itself: the PTX it returns carries no
/// `.maxnreg`, so the driver, JIT-compiling that PTX at load, would not apply it. Measured with
/// NVRTC 13.5 for sm_90 on the occupancy suite's kernel (8 chains): with `--maxrregcount=16` NVRTC's
/// cubin has 24 registers (ptxas's floor), its PTX has no `.maxnreg` and assembles to 32; without the
/// option, 48. Programs with a cap therefore load NVRTC's cubin (the architecture is always the
/// GPU's own, `sm_XY`, so NVRTC builds one).
pub fn caps_registers(options: &[String]) -> bool {
    options.iter().any(|o| {
        ["--maxrregcount", "-maxrregcount"].iter().any(|flag| {
            o == flag
                || o.strip_prefix(flag)
                    .is_some_and(|rest| rest.starts_with('='))
        })
    })
}

#[cfg(test)]
mod tests {
    use super::super::test_programs::{program, rdc};
    use super::*;

    #[test]
    fn an_arch_specific_program_targets_sm_xya_from_9_0_and_nothing_below() {
        assert_eq!(target_arch("sm_90", false).unwrap(), "sm_90");
        assert_eq!(target_arch("sm_86", false).unwrap(), "sm_86");
        assert_eq!(target_arch("sm_90", true).unwrap(), "sm_90a");
        assert_eq!(target_arch("sm_100", true).unwrap(), "sm_100a");
        assert_eq!(target_arch("sm_120", true).unwrap(), "sm_120a");
        assert_eq!(
            target_arch("sm_86", true).unwrap_err(),
            "compute capability 8.6"
        );
        assert!(target_arch("sm_8x", true).unwrap_err().contains("sm_8x"));
        // The plan carries the target, so NVRTC and nvcc alike get `sm_90a`.
        let arch = target_arch("sm_90", true).unwrap();
        assert_eq!(
            nvrtc_options(&program(&[]), &arch)[0],
            "--gpu-architecture=sm_90a"
        );
        assert_eq!(nvcc_options(&program(&[]), &arch)[1], "-arch=sm_90a");
    }

    #[test]
    fn a_register_cap_is_recognised_in_nvrtc_spellings_only() {
        let caps =
            |o: &[&str]| caps_registers(&o.iter().map(|s| s.to_string()).collect::<Vec<_>>());
        assert!(
            caps(&["-DX=1", "--maxrregcount=32"])
                && caps(&["-maxrregcount=64"])
                && caps(&["--maxrregcount"])
        );
        assert!(
            !caps(&[])
                && !caps(&["-DMAXRREGCOUNT=32"])
                && !caps(&["--maxrregcountx=3"])
                && !caps(&["-G"])
        );
    }

    #[test]
    fn options_name_the_target_first() {
        assert_eq!(
            nvrtc_options(&program(&["-DTILE=32"]), "sm_90"),
            vec![
                "--gpu-architecture=sm_90",
                "-lineinfo",
                "--include-path=/p/inc",
                "-DTILE=32"
            ]
        );
        // -G carries full debug info already; line info beside it only draws a warning.
        assert_eq!(
            nvrtc_options(&program(&["-G"]), "sm_90"),
            vec!["--gpu-architecture=sm_90", "--include-path=/p/inc", "-G"]
        );
        assert_eq!(
            nvcc_options(&program(&["-Xptxas", "-dlcm=cg"]), "sm_90"),
            vec![
                "-cubin",
                "-arch=sm_90",
                "-lineinfo",
                "-I/p/inc",
                "-Xptxas",
                "-dlcm=cg"
            ]
        );
    }

    #[test]
    fn rdc_with_nvrtc_compiles_relocatable_ptx_for_the_drivers_linker() {
        let lib = Path::new("/cuda/lib64/libcudadevrt.a");
        let plan = BuildPlan::new(&rdc(Compiler::Nvrtc), "sm_90", Some(lib));
        assert_eq!(
            plan.compile,
            vec![
                "--gpu-architecture=sm_90",
                "--relocatable-device-code=true",
                "-lineinfo",
                "--include-path=/p/inc",
                "-DBLOCK=512"
            ]
        );
        // NVRTC has no link step of its own: the driver links the PTX with the library at load.
        assert!(plan.link.is_empty());
        assert_eq!(plan.device_runtime.as_deref(), Some(lib));
        assert_eq!(
            BuildPlan::new(&program(&[]), "sm_90", Some(lib)),
            BuildPlan {
                compile: nvrtc_options(&program(&[]), "sm_90"),
                link: vec![],
                device_runtime: None
            }
        );
    }
}
