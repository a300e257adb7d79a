//! One kernel build from start to end: the source and its headers read, the toolkit's parts found, the cache asked, then NVRTC or nvcc run and the module cached.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Instant;

use super::cache::{cache_key, read_cache, write_cache};
use super::error::BuildError;
use super::image::{Compiled, Image};
use super::nvcc::{cubin_kernels, nvcc_compile};
use super::nvrtc::nvrtc_compile;
use super::plan::{BuildPlan, caps_registers, target_arch};
use super::toolkit::{Toolkit, nvcc_version, nvrtc_version};
use crate::cxx;
use crate::store::{FileKind, read_regular_text};
use crate::suite::sources::local_includes;
use crate::suite::{Compiler, Program};

/// A module image with the symbol of each kernel in it (by the name the manifest wrote).
type Built = (Image, BTreeMap<String, String>);

/// A kernel source as one build reads it.
struct Source<'a> {
    path: &'a Path,
    text: String,
    /// The text of the project's own headers it includes (the cache key hashes them too).
    headers: String,
}

impl Source<'_> {
    /// The program's source, with the project's headers it includes: found through its own
    /// directories only (the toolkit's are versioned with the compiler, and reading CUB on every
    /// build would be slow).
    fn read(program: &Program) -> Result<Source<'_>, BuildError> {
        let path = &program.source_path;
        let text = read_regular_text(path, FileKind::KERNEL_SOURCE).map_err(|source| {
            BuildError::Source {
                path: path.clone(),
                source,
            }
        })?;
        let own_options: Vec<String> = program
            .include_dirs
            .iter()
            .map(|d| format!("-I{}", d.display()))
            .chain(program.options.iter().cloned())
            .collect();
        let headers = local_includes(path, &text, &own_options);
        Ok(Source {
            path,
            text,
            headers,
        })
    }

    /// The `__global__` functions the source and its headers declare.
    fn declared(&self) -> Vec<String> {
        cxx::global_functions(&format!("{}\n{}", self.text, self.headers))
    }

    /// The error for a kernel the source does not have, with the ones it declares.
    fn unknown_kernel(&self, kernel: &str) -> BuildError {
        BuildError::UnknownKernel {
            path: self.path.to_path_buf(),
            kernel: kernel.to_string(),
            declared: self.declared(),
        }
    }
}

/// Compiles a program for `arch` (for example `sm_90`) so that each of `kernels` (names as the
/// manifest writes them: `copy`, `wt::gemm<float, 64>`) can be found, reusing the cache under
/// `cache_dir` when it can. `variant` names the variant in errors about a missing toolkit part.
pub fn compile(
    program: &Program,
    variant: &str,
    kernels: &[String],
    arch: &str,
    toolkit: &Toolkit,
    cache_dir: Option<&Path>,
) -> Result<Compiled, BuildError> {
    let start = Instant::now();
    let source = Source::read(program)?;
    // The toolkit's headers come last: a project's own directories win.
    let mut program = program.clone();
    program.include_dirs.extend(toolkit.include_dirs());
    let device_runtime = device_runtime(&program, variant, toolkit)?;
    let arch = target_arch(arch, program.arch_specific).map_err(|reason| {
        BuildError::NoArchSpecificTarget {
            variant: variant.to_string(),
            path: program.source_path.clone(),
            arch: arch.to_string(),
            reason,
        }
    })?;
    let plan = BuildPlan::new(&program, &arch, device_runtime.as_deref());
    let compiler = compiler_name(&program, variant, toolkit)?;
    // A program whose registers are capped loads NVRTC's cubin, not its PTX (relocatable code
    // excepted: its cubin is not loadable before linking): a PTX cached for the same options by
    // an older gpu-lab must not be taken for it.
    let nvrtc_cubin =
        program.compiler == Compiler::Nvrtc && caps_registers(&program.options) && !program.rdc;
    let image_kind = if nvrtc_cubin { " cubin" } else { "" };
    let key = cache_key(
        &format!("{}{}", source.text, source.headers),
        &plan.key_parts(program.rdc),
        kernels,
        &format!("{compiler}{image_kind}"),
    );
    let cached = cache_dir.map(|d| d.join("modules").join(&key));
    if let Some(entry) = cached.as_ref().and_then(|p| read_cache(p)) {
        return Ok(Compiled {
            cached: true,
            millis: start.elapsed().as_secs_f64() * 1e3,
            ..entry
        });
    }
    if source.text.contains('\0') {
        return Err(BuildError::Compile {
            compiler: program.compiler.name(),
            path: source.path.to_path_buf(),
            options: plan.compile.join(" "),
            log: "the source contains a NUL byte".into(),
        });
    }
    let (image, symbols) = match program.compiler {
        Compiler::Nvrtc => build_with_nvrtc(&source, &plan, kernels, nvrtc_cubin)?,
        Compiler::Nvcc => {
            let nvcc = nvcc_path(toolkit, variant, source.path)?;
            build_with_nvcc(&source, nvcc, &plan, kernels)?
        }
    };
    let compiled = Compiled {
        image,
        symbols,
        compiler,
        cached: false,
        millis: start.elapsed().as_secs_f64() * 1e3,
    };
    if let Some(cache_dir) = cache_dir {
        // A cache that cannot be written only costs a recompile next time.
        let _ = write_cache(cache_dir, &key, &compiled);
    }
    Ok(compiled)
}

/// The device runtime library relocatable device code is linked with (none without `rdc`), or
/// the error that names the variant and where the library was looked for.
fn device_runtime(
    program: &Program,
    variant: &str,
    toolkit: &Toolkit,
) -> Result<Option<PathBuf>, BuildError> {
    if !program.rdc {
        return Ok(None);
    }
    toolkit
        .device_runtime()
        .map(Some)
        .ok_or_else(|| BuildError::NoDeviceRuntime {
            variant: variant.to_string(),
            path: program.source_path.clone(),
            searched: toolkit.device_runtime_candidates(),
        })
}

/// The toolkit's nvcc, or the error that names the variant that needs it.
fn nvcc_path<'t>(toolkit: &'t Toolkit, variant: &str, path: &Path) -> Result<&'t Path, BuildError> {
    toolkit.nvcc.as_deref().ok_or_else(|| BuildError::NoNvcc {
        variant: variant.to_string(),
        path: path.to_path_buf(),
    })
}

/// The compiler and its version (`nvrtc 13.0`, `nvcc 13.0.88`), as the report's "compilers" line
/// shows it: for relocatable device code, also how it is linked.
fn compiler_name(
    program: &Program,
    variant: &str,
    toolkit: &Toolkit,
) -> Result<String, BuildError> {
    let path = &program.source_path;
    let compiler = match program.compiler {
        Compiler::Nvrtc => {
            let (major, minor) = nvrtc_version()?;
            format!("nvrtc {major}.{minor}")
        }
        Compiler::Nvcc => {
            nvcc_version(nvcc_path(toolkit, variant, path)?).map_err(|error| BuildError::Nvcc {
                path: path.clone(),
                error,
            })?
        }
    };
    // The report's "compilers" line says which variants are relocatable device code, and how linked.
    Ok(match (program.rdc, program.compiler) {
        (false, _) => compiler,
        (true, Compiler::Nvcc) => format!("{compiler} -rdc, device-linked with libcudadevrt"),
        (true, Compiler::Nvrtc) => {
            format!("{compiler} -rdc, linked with libcudadevrt by the driver")
        }
    })
}

/// NVRTC's image (relocatable PTX tied to the plan's device runtime when `rdc`) and symbols.
fn build_with_nvrtc(
    source: &Source,
    plan: &BuildPlan,
    kernels: &[String],
    cubin: bool,
) -> Result<Built, BuildError> {
    let options = &plan.compile;
    let (image, symbols) = nvrtc_compile(&source.text, source.path, options, kernels, cubin)
        .map_err(|log| {
            // A name NVRTC cannot resolve fails the whole compile: say which, and what there is.
            let declared = source.declared();
            match kernels
                .iter()
                .find(|k| !declared.contains(&cxx::base_name(k)))
            {
                Some(k) => source.unknown_kernel(k),
                None => BuildError::Compile {
                    compiler: "NVRTC",
                    path: source.path.to_path_buf(),
                    options: options.join(" "),
                    log,
                },
            }
        })?;
    let image = match (&plan.device_runtime, image) {
        (Some(lib), Image::Ptx(ptx)) => Image::RelocatablePtx {
            ptx,
            device_runtime: lib.clone(),
        },
        (_, image) => image,
    };
    Ok((image, symbols))
}

/// nvcc's cubin, each kernel's symbol found among the kernels the cubin defines.
fn build_with_nvcc(
    source: &Source,
    nvcc: &Path,
    plan: &BuildPlan,
    kernels: &[String],
) -> Result<Built, BuildError> {
    let cubin = nvcc_compile(nvcc, source.path, plan, kernels)?;
    let entries = cubin_kernels(&cubin).map_err(|error| BuildError::Nvcc {
        path: source.path.to_path_buf(),
        error,
    })?;
    let mut symbols = BTreeMap::new();
    for k in kernels {
        let symbol = cxx::find_symbol(k, &entries).map_err(|_| source.unknown_kernel(k))?;
        symbols.insert(k.clone(), symbol.to_string());
    }
    Ok((Image::Cubin(cubin), symbols))
}

#[cfg(test)]
mod tests {
    use super::super::toolkit::DEVICE_RUNTIME;
    use super::*;

    #[test]
    fn a_missing_device_runtime_or_nvcc_names_the_variant_before_anything_runs() {
        let d = tempfile::tempdir().unwrap();
        let root = d.path().join("cuda-13.0");
        std::fs::create_dir_all(root.join("include")).unwrap();
        let src = d.path().join("k.cu");
        std::fs::write(&src, "extern \"C\" __global__ void k() {}\n").unwrap();
        let p = Program {
            source_path: src.clone(),
            options: vec![],
            include_dirs: vec![],
            compiler: Compiler::Nvcc,
            rdc: true,
            arch_specific: false,
        };
        let build = |toolkit: &Toolkit| {
            compile(
                &p,
                "recursive_nested",
                &["k".to_string()],
                "sm_90",
                toolkit,
                None,
            )
            .unwrap_err()
            .to_string()
        };
        // No toolkit at all: which variant, what was searched and the fix.
        let e = build(&Toolkit::default());
        assert!(
            e.contains("variant `recursive_nested`")
                && e.contains("libcudadevrt.a")
                && e.contains("rdc = true")
                && e.contains("fix: install the CUDA toolkit"),
            "{e}"
        );
        let e = build(&Toolkit {
            root: Some(root.join("none")),
            nvcc: None,
        });
        assert!(
            e.contains("looked for") && e.contains("lib64/libcudadevrt.a"),
            "{e}"
        );
        // With the library there and no nvcc: the nvcc error, naming the variant too.
        std::fs::create_dir_all(root.join("lib64")).unwrap();
        std::fs::write(root.join("lib64").join(DEVICE_RUNTIME), "!<arch>\n").unwrap();
        let e = build(&Toolkit {
            root: Some(root.clone()),
            nvcc: None,
        });
        assert!(
            e.contains("variant `recursive_nested`") && e.contains("no nvcc was found"),
            "{e}"
        );
    }
}
