//! Kernel compilation, with NVRTC (through cudarc, C++ names lowered by name expressions) or the toolkit's nvcc (a cubin), cached on disk by hash of source (with its local headers), options, kernels, architecture and compiler version.

use std::collections::BTreeMap;
use std::ffi::{CStr, CString};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use sha2::{Digest, Sha256};

use crate::cxx;
use crate::process::{self, Output};
use crate::store::{write_atomic, write_json};
use crate::suite::sources::{hex, local_includes};
use crate::suite::{Compiler, Program};

#[derive(Debug, thiserror::Error)]
pub enum BuildError {
    #[error("cannot read kernel source {path}: {source}")]
    Source {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{compiler} could not compile {path} with options [{options}]:\n{log}")]
    Compile {
        compiler: &'static str,
        path: PathBuf,
        options: String,
        log: String,
    },
    #[error("{path} has no kernel `{kernel}`{}\n  fix: name one of the source's __global__ functions, with its template arguments (`name<64, float>`) and namespace (`ns::name`)", if .declared.is_empty() { " (it declares no __global__ function)".to_string() } else { format!("; the __global__ functions it declares: {}", .declared.join(", ")) })]
    UnknownKernel {
        path: PathBuf,
        kernel: String,
        declared: Vec<String>,
    },
    #[error(
        "NVRTC is not available: {0}\n  fix: install the CUDA toolkit's libnvrtc and put its directory on LD_LIBRARY_PATH"
    )]
    Unavailable(String),
    #[error(
        "variant `{variant}` ({path}) is to be built with nvcc (compiler = \"nvcc\"), and no nvcc was found (looked in $CUDA_HOME/bin, $CUDA_PATH/bin, PATH and /usr/local/cuda/bin)\n  fix: install the CUDA toolkit and put its bin/ on PATH (or set CUDA_HOME), or build the variant with compiler = \"nvrtc\""
    )]
    NoNvcc { variant: String, path: PathBuf },
    #[error("variant `{variant}` ({path}) is built with rdc = true (relocatable device code: kernels that launch kernels), which must be linked with the CUDA device runtime, libcudadevrt.a, and it was not found{}\n  fix: install the CUDA toolkit's libraries (libcudadevrt.a ships with the toolkit, in lib64/ or targets/<platform>/lib/) and set CUDA_HOME to the toolkit's directory", if .searched.is_empty() { " (no CUDA toolkit was found: looked for $CUDA_HOME, $CUDA_PATH, the nvcc on PATH and /usr/local/cuda)".to_string() } else { format!(" (looked for {})", .searched.iter().map(|p| p.display().to_string()).collect::<Vec<_>>().join(", ")) })]
    NoDeviceRuntime {
        variant: String,
        path: PathBuf,
        searched: Vec<PathBuf>,
    },
    #[error("cannot run nvcc for {path}: {error}")]
    Nvcc { path: PathBuf, error: String },
}

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

/// A module image ready to load.
#[derive(Debug, Clone)]
pub enum Image {
    Ptx(String),
    Cubin(Vec<u8>),
    /// NVRTC's relocatable PTX (`rdc = true`): loadable only once the driver's JIT linker has
    /// linked it with this device runtime library (done where the GPU is, at load).
    RelocatablePtx {
        ptx: String,
        device_runtime: PathBuf,
    },
}

#[derive(Debug, Clone)]
pub struct Compiled {
    pub image: Image,
    /// Each kernel name as the manifest wrote it -> its symbol in the module (the mangled name of a C++ kernel).
    pub symbols: BTreeMap<String, String>,
    /// Which compiler built it, with its version (`nvrtc 13.0`, `nvcc 13.0.88`).
    pub compiler: String,
    pub cached: bool,
    pub millis: f64,
}

/// What the cache keeps beside an image.
#[derive(serde::Serialize, serde::Deserialize)]
struct CacheEntry {
    cubin: bool,
    symbols: BTreeMap<String, String>,
    compiler: String,
    /// Relocatable PTX still to be linked with this device runtime library.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    device_runtime: Option<PathBuf>,
}

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
    if !program
        .options
        .iter()
        .any(|o| o == "-G" || o == "--device-debug")
    {
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

/// The options nvcc gets (the same choices as NVRTC's, in nvcc's spelling).
pub fn nvcc_options(program: &Program, arch: &str) -> Vec<String> {
    let mut opts = vec!["-cubin".to_string(), format!("-arch={arch}")];
    if !program
        .options
        .iter()
        .any(|o| o == "-G" || o == "--device-debug")
    {
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

/// Cache key: anything that changes the module changes the key.
pub fn cache_key(source: &str, options: &[String], kernels: &[String], compiler: &str) -> String {
    let mut h = Sha256::new();
    h.update(source.as_bytes());
    for part in options
        .iter()
        .chain([&"\u{1}kernels".to_string()])
        .chain(kernels)
    {
        h.update([0u8]);
        h.update(part.as_bytes());
    }
    h.update(compiler.as_bytes());
    hex(&h.finalize())
}

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
    let path = &program.source_path;
    let source = std::fs::read_to_string(path).map_err(|source| BuildError::Source {
        path: path.clone(),
        source,
    })?;
    // The project's headers, for the cache key: found through its own directories only (the
    // toolkit's are versioned with the compiler, and reading CUB on every build would be slow).
    let own_options: Vec<String> = program
        .include_dirs
        .iter()
        .map(|d| format!("-I{}", d.display()))
        .chain(program.options.iter().cloned())
        .collect();
    let headers = local_includes(path, &source, &own_options);
    // The toolkit's headers come last: a project's own directories win.
    let mut program = program.clone();
    program.include_dirs.extend(toolkit.include_dirs());
    let device_runtime = match program.rdc {
        true => Some(
            toolkit
                .device_runtime()
                .ok_or_else(|| BuildError::NoDeviceRuntime {
                    variant: variant.to_string(),
                    path: path.clone(),
                    searched: toolkit.device_runtime_candidates(),
                })?,
        ),
        false => None,
    };
    let plan = BuildPlan::new(&program, arch, device_runtime.as_deref());
    let compiler = match program.compiler {
        Compiler::Nvrtc => {
            let (major, minor) = nvrtc_version()?;
            format!("nvrtc {major}.{minor}")
        }
        Compiler::Nvcc => {
            let nvcc = toolkit.nvcc.as_ref().ok_or_else(|| BuildError::NoNvcc {
                variant: variant.to_string(),
                path: path.clone(),
            })?;
            nvcc_version(nvcc).map_err(|error| BuildError::Nvcc {
                path: path.clone(),
                error,
            })?
        }
    };
    // The report's "compilers" line says which variants are relocatable device code, and how linked.
    let compiler = match (program.rdc, program.compiler) {
        (false, _) => compiler,
        (true, Compiler::Nvcc) => format!("{compiler} -rdc, device-linked with libcudadevrt"),
        (true, Compiler::Nvrtc) => {
            format!("{compiler} -rdc, linked with libcudadevrt by the driver")
        }
    };
    // A program whose registers are capped loads NVRTC's cubin, not its PTX (relocatable code
    // excepted: its cubin is not loadable before linking): a PTX cached for the same options by
    // an older gpu-lab must not be taken for it.
    let nvrtc_cubin =
        program.compiler == Compiler::Nvrtc && caps_registers(&program.options) && !program.rdc;
    let image_kind = if nvrtc_cubin { " cubin" } else { "" };
    let key = cache_key(
        &format!("{source}{headers}"),
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
    let options = &plan.compile;
    if source.contains('\0') {
        return Err(BuildError::Compile {
            compiler: program.compiler.name(),
            path: path.clone(),
            options: options.join(" "),
            log: "the source contains a NUL byte".into(),
        });
    }
    let unknown = |kernel: &str| BuildError::UnknownKernel {
        path: path.clone(),
        kernel: kernel.to_string(),
        declared: cxx::global_functions(&format!("{source}\n{headers}")),
    };
    let (image, symbols) = match program.compiler {
        Compiler::Nvrtc => {
            let (image, symbols) = nvrtc_compile(&source, path, options, kernels, nvrtc_cubin)
                .map_err(|log| {
                    // A name NVRTC cannot resolve fails the whole compile: say which, and what there is.
                    let declared = cxx::global_functions(&format!("{source}\n{headers}"));
                    match kernels
                        .iter()
                        .find(|k| !declared.contains(&cxx::base_name(k)))
                    {
                        Some(k) => unknown(k),
                        None => BuildError::Compile {
                            compiler: "NVRTC",
                            path: path.clone(),
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
            (image, symbols)
        }
        Compiler::Nvcc => {
            let nvcc = toolkit.nvcc.as_ref().expect("checked above");
            let cubin = nvcc_compile(nvcc, path, &plan, kernels)?;
            let entries = cubin_kernels(&cubin).map_err(|error| BuildError::Nvcc {
                path: path.clone(),
                error,
            })?;
            let mut symbols = BTreeMap::new();
            for k in kernels {
                let symbol = cxx::find_symbol(k, &entries).map_err(|_| unknown(k))?;
                symbols.insert(k.clone(), symbol.to_string());
            }
            (Image::Cubin(cubin), symbols)
        }
    };
    let compiled = Compiled {
        image,
        symbols,
        compiler,
        cached: false,
        millis: start.elapsed().as_secs_f64() * 1e3,
    };
    if let Some(p) = &cached {
        // A cache that cannot be written only costs a recompile next time.
        let _ = write_cache(p, &compiled);
    }
    Ok(compiled)
}

fn read_cache(base: &Path) -> Option<Compiled> {
    let entry: CacheEntry =
        serde_json::from_slice(&std::fs::read(base.with_extension("json")).ok()?).ok()?;
    let bytes = std::fs::read(base.with_extension("image")).ok()?;
    let image = match (entry.cubin, entry.device_runtime) {
        (true, _) => Image::Cubin(bytes),
        (false, None) => Image::Ptx(String::from_utf8(bytes).ok()?),
        (false, Some(device_runtime)) => Image::RelocatablePtx {
            ptx: String::from_utf8(bytes).ok()?,
            device_runtime,
        },
    };
    Some(Compiled {
        image,
        symbols: entry.symbols,
        compiler: entry.compiler,
        cached: true,
        millis: 0.0,
    })
}

fn write_cache(base: &Path, c: &Compiled) -> anyhow::Result<()> {
    let (cubin, bytes, device_runtime) = match &c.image {
        Image::Ptx(p) => (false, p.as_bytes(), None),
        Image::Cubin(b) => (true, b.as_slice(), None),
        Image::RelocatablePtx {
            ptx,
            device_runtime,
        } => (false, ptx.as_bytes(), Some(device_runtime.clone())),
    };
    // The image first: an entry is only read when its description exists.
    write_atomic(&base.with_extension("image"), bytes)?;
    write_json(
        &base.with_extension("json"),
        &CacheEntry {
            cubin,
            symbols: c.symbols.clone(),
            compiler: c.compiler.clone(),
            device_runtime,
        },
    )?;
    Ok(())
}

fn cstring(what: &str, text: &str) -> Result<CString, String> {
    CString::new(text).map_err(|_| format!("the {what} contains a NUL byte"))
}

/// NVRTC with every kernel added as a name expression, so templates are instantiated and each
/// name's lowered (mangled) symbol is known; the image is NVRTC's PTX, or with `cubin` the SASS it
/// assembled (see `caps_registers`). Err: NVRTC's log.
fn nvrtc_compile(
    source: &str,
    path: &Path,
    options: &[String],
    kernels: &[String],
    cubin: bool,
) -> Result<(Image, BTreeMap<String, String>), String> {
    use cudarc::nvrtc::{result, sys};
    let program = result::create_program(
        &cstring("source", source)?,
        Some(&cstring("path", &path.display().to_string())?),
    )
    .map_err(|e| format!("{e:?}"))?;
    let names: Vec<CString> = kernels
        .iter()
        .map(|k| cstring("kernel name", k))
        .collect::<Result<_, _>>()?;
    // cudarc turns each option into a C string and panics on a NUL byte: refuse it here.
    for o in options {
        cstring("compiler option", o)?;
    }
    // SAFETY: `program` is a live NVRTC program until the destroy at the end; every string passed
    // is a NUL-terminated CString that outlives the call; lowered names are copied out before destroy.
    unsafe {
        let outcome = (|| -> Result<(Image, BTreeMap<String, String>), String> {
            for n in &names {
                sys::nvrtcAddNameExpression(program, n.as_ptr())
                    .result()
                    .map_err(|e| format!("adding name expression {n:?}: {e:?}"))?;
            }
            if result::compile_program(program, options).is_err() {
                let log = result::get_program_log(program).map_err(|e| format!("{e:?}"))?;
                return Err(CStr::from_ptr(log.as_ptr())
                    .to_string_lossy()
                    .trim()
                    .to_string());
            }
            let mut symbols = BTreeMap::new();
            for (k, n) in kernels.iter().zip(&names) {
                let mut lowered: *const std::ffi::c_char = std::ptr::null();
                sys::nvrtcGetLoweredName(program, n.as_ptr(), &mut lowered)
                    .result()
                    .map_err(|e| format!("name expression `{k}`: {e:?}"))?;
                if lowered.is_null() {
                    return Err(format!("name expression `{k}` has no lowered name"));
                }
                symbols.insert(
                    k.clone(),
                    CStr::from_ptr(lowered).to_string_lossy().to_string(),
                );
            }
            if cubin {
                let mut size = 0usize;
                sys::nvrtcGetCUBINSize(program, &mut size)
                    .result()
                    .map_err(|e| format!("asking for NVRTC's cubin: {e:?}"))?;
                if size == 0 {
                    return Err("NVRTC built no cubin (the target is a virtual architecture), so the register cap (--maxrregcount) cannot reach the code".into());
                }
                let mut bytes = vec![0u8; size];
                sys::nvrtcGetCUBIN(program, bytes.as_mut_ptr().cast())
                    .result()
                    .map_err(|e| format!("reading NVRTC's cubin: {e:?}"))?;
                return Ok((Image::Cubin(bytes), symbols));
            }
            let ptx = result::get_ptx(program).map_err(|e| format!("{e:?}"))?;
            Ok((
                Image::Ptx(CStr::from_ptr(ptx.as_ptr()).to_string_lossy().to_string()),
                symbols,
            ))
        })();
        let _ = result::destroy_program(program);
        outcome
    }
}

/// The source nvcc compiles: the user's file, included unmodified, and one use of each kernel by
/// address, which instantiates a template kernel the file only declares.
pub fn nvcc_wrapper(source: &Path, kernels: &[String]) -> String {
    let mut text = format!("#include \"{}\"\n", source.display());
    for (i, k) in kernels.iter().enumerate() {
        text.push_str(&format!(
            "[[maybe_unused]] static void* gpu_lab_kernel_{i} = (void*)&{k};\n"
        ));
    }
    text
}

fn nvcc_compile(
    nvcc: &Path,
    path: &Path,
    plan: &BuildPlan,
    kernels: &[String],
) -> Result<Vec<u8>, BuildError> {
    let fail = |error: String| BuildError::Nvcc {
        path: path.to_path_buf(),
        error,
    };
    let absolute = path
        .canonicalize()
        .map_err(|e| fail(format!("cannot resolve the source path: {e}")))?;
    if absolute.to_string_lossy().contains(['"', '\n', '\\']) {
        return Err(fail(
            "the source path holds a quote, backslash or newline, which an #include cannot name"
                .into(),
        ));
    }
    for k in kernels {
        cxx::check_expression(k).map_err(fail)?;
    }
    let dir = tempfile::Builder::new()
        .prefix("gpu-lab-nvcc-")
        .tempdir()
        .map_err(|e| fail(format!("cannot create a build directory: {e}")))?;
    let (wrapper, cubin, log) = (
        dir.path().join("gpu_lab_kernels.cu"),
        dir.path().join("kernels.cubin"),
        dir.path().join("nvcc.log"),
    );
    std::fs::write(&wrapper, nvcc_wrapper(&absolute, kernels))
        .map_err(|e| fail(format!("cannot write {}: {e}", wrapper.display())))?;
    let steps = nvcc_steps(plan, &wrapper, &dir.path().join("kernels.o"), &cubin);
    for (options, args) in &steps {
        let mut cmd = Command::new(nvcc);
        cmd.args(args);
        // Ten minutes is far past any kernel's build; a hung compiler must not hang the run.
        process::run(
            &mut cmd,
            &Output::Log(log.clone()),
            Some(Duration::from_secs(600)),
        )
        .and_then(|f| f.success())
        .map_err(|e| BuildError::Compile {
            compiler: "nvcc",
            path: path.to_path_buf(),
            options: options.join(" "),
            log: e.output_tail().unwrap_or(&e.to_string()).to_string(),
        })?;
    }
    std::fs::read(&cubin).map_err(|e| fail(format!("nvcc left no cubin: {e}")))
}

/// nvcc's command lines for a plan, each with the options it reports on failure: one step to a
/// cubin; with rdc, a compile to an object of relocatable device code, then its device link with
/// the device runtime into the cubin.
pub fn nvcc_steps(
    plan: &BuildPlan,
    wrapper: &Path,
    object: &Path,
    cubin: &Path,
) -> Vec<(Vec<String>, Vec<String>)> {
    let path = |p: &Path| p.display().to_string();
    if plan.link.is_empty() {
        let args = plan
            .compile
            .iter()
            .cloned()
            .chain(["-o".to_string(), path(cubin), path(wrapper)])
            .collect();
        return vec![(plan.compile.clone(), args)];
    }
    let compile = plan
        .compile
        .iter()
        .cloned()
        .chain(["-o".to_string(), path(object), path(wrapper)])
        .collect();
    let link = plan
        .link
        .iter()
        .cloned()
        .chain(["-o".to_string(), path(cubin), path(object)])
        .collect();
    vec![(plan.compile.clone(), compile), (plan.link.clone(), link)]
}

/// The kernels of a cubin (global functions of its ELF symbol table), each with its demangled name.
pub fn cubin_kernels(cubin: &[u8]) -> Result<Vec<(String, String)>, String> {
    use object::{Object, ObjectSymbol, SymbolKind};
    let file =
        object::File::parse(cubin).map_err(|e| format!("the cubin is not an ELF file: {e}"))?;
    Ok(file
        .symbols()
        .filter(|s| s.kind() == SymbolKind::Text && s.is_global() && s.is_definition())
        .filter_map(|s| s.name().ok().map(str::to_string))
        .map(|name| {
            let demangled = cpp_demangle::Symbol::new(name.as_bytes())
                .ok()
                .and_then(|s| s.demangle().ok())
                .unwrap_or_else(|| name.clone());
            (name, demangled)
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn program(options: &[&str]) -> Program {
        Program {
            source_path: "k.cu".into(),
            options: options.iter().map(|s| s.to_string()).collect(),
            include_dirs: vec!["/p/inc".into()],
            compiler: Compiler::Nvrtc,
            rdc: false,
        }
    }

    #[test]
    fn key_changes_with_every_input() {
        let o = vec!["-DTILE=32".to_string()];
        let ks = vec!["k<32>".to_string()];
        let k = cache_key("src", &o, &ks, "nvrtc 13.0");
        assert_eq!(k, cache_key("src", &o, &ks, "nvrtc 13.0"));
        assert_ne!(k, cache_key("src2", &o, &ks, "nvrtc 13.0"));
        assert_ne!(
            k,
            cache_key("src", &["-DTILE=64".to_string()], &ks, "nvrtc 13.0")
        );
        assert_ne!(
            k,
            cache_key("src", &o, &["k<64>".to_string()], "nvrtc 13.0")
        );
        assert_ne!(k, cache_key("src", &o, &ks, "nvrtc 13.1"));
        assert_ne!(k, cache_key("src", &o, &ks, "nvcc 13.0.88"));
        // Option boundaries matter: ["-a", "b"] is not ["-ab"].
        assert_ne!(
            cache_key("s", &["-a".into(), "b".into()], &[], "c"),
            cache_key("s", &["-ab".into()], &[], "c")
        );
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
    fn nvcc_versions_and_wrappers() {
        let text = "nvcc: NVIDIA (R) Cuda compiler driver\nCuda compilation tools, release 13.0, V13.0.88\nBuild cuda_13.0.r13.0/compiler.36424714_0\n";
        assert_eq!(parse_nvcc_version(text).as_deref(), Some("nvcc 13.0.88"));
        assert_eq!(parse_nvcc_version("garbage"), None);
        let w = nvcc_wrapper(Path::new("/s/k.cuh"), &["wt::gemm<64, float>".to_string()]);
        assert_eq!(
            w,
            "#include \"/s/k.cuh\"\n[[maybe_unused]] static void* gpu_lab_kernel_0 = (void*)&wt::gemm<64, float>;\n"
        );
    }

    fn rdc(compiler: Compiler) -> Program {
        Program {
            compiler,
            rdc: true,
            ..program(&["-DBLOCK=512"])
        }
    }

    #[test]
    fn rdc_with_nvcc_compiles_an_object_then_device_links_a_cubin_with_the_device_runtime() {
        let lib = Path::new("/cuda/lib64/libcudadevrt.a");
        let plan = BuildPlan::new(&rdc(Compiler::Nvcc), "sm_90", Some(lib));
        assert_eq!(
            plan.compile,
            vec!["-dc", "-arch=sm_90", "-lineinfo", "-I/p/inc", "-DBLOCK=512"]
        );
        assert_eq!(
            plan.link,
            vec![
                "-dlink",
                "-cubin",
                "-arch=sm_90",
                "-L/cuda/lib64",
                "-lcudadevrt"
            ]
        );
        assert_eq!(plan.device_runtime.as_deref(), Some(lib));
        let steps = nvcc_steps(
            &plan,
            Path::new("/b/w.cu"),
            Path::new("/b/k.o"),
            Path::new("/b/k.cubin"),
        );
        assert_eq!(steps.len(), 2);
        assert_eq!(
            steps[0].1.join(" "),
            "-dc -arch=sm_90 -lineinfo -I/p/inc -DBLOCK=512 -o /b/k.o /b/w.cu"
        );
        assert_eq!(
            steps[1].1.join(" "),
            "-dlink -cubin -arch=sm_90 -L/cuda/lib64 -lcudadevrt -o /b/k.cubin /b/k.o"
        );
        // What a failed step reports: its own options.
        assert_eq!(steps[1].0, plan.link);
        // Without rdc: one step straight to a cubin, as before, and no library.
        let plain = BuildPlan::new(
            &Program {
                compiler: Compiler::Nvcc,
                ..program(&[])
            },
            "sm_90",
            Some(lib),
        );
        assert_eq!((plain.link.len(), &plain.device_runtime), (0, &None));
        let steps = nvcc_steps(
            &plain,
            Path::new("/b/w.cu"),
            Path::new("/b/k.o"),
            Path::new("/b/k.cubin"),
        );
        assert_eq!(steps.len(), 1);
        assert_eq!(
            steps[0].1.join(" "),
            "-cubin -arch=sm_90 -lineinfo -I/p/inc -o /b/k.cubin /b/w.cu"
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

    #[test]
    fn the_cache_key_changes_with_rdc_the_link_and_the_device_runtime() {
        let lib = Path::new("/cuda/lib64/libcudadevrt.a");
        let key = |p: &Program, lib: &Path| {
            cache_key(
                "src",
                &BuildPlan::new(p, "sm_90", Some(lib)).key_parts(p.rdc),
                &["k".to_string()],
                "nvcc 13.0.88",
            )
        };
        let (plain, with_rdc) = (
            Program {
                compiler: Compiler::Nvcc,
                ..program(&[])
            },
            rdc(Compiler::Nvcc),
        );
        let with_rdc_same_options = Program {
            options: vec![],
            ..with_rdc.clone()
        };
        assert_ne!(key(&plain, lib), key(&with_rdc_same_options, lib));
        assert_ne!(
            key(&with_rdc, lib),
            key(&with_rdc, Path::new("/other/lib/libcudadevrt.a"))
        );
        assert_eq!(key(&with_rdc, lib), key(&with_rdc, lib));
        // NVRTC: the flag alone (its options also change) moves the key.
        let nvrtc = |rdc: bool| {
            BuildPlan::new(
                &Program {
                    rdc,
                    ..program(&[])
                },
                "sm_90",
                Some(lib),
            )
            .key_parts(rdc)
        };
        assert_ne!(nvrtc(false), nvrtc(true));
        assert!(nvrtc(true).contains(&"\u{1}rdc=true".to_string()));
    }

    #[test]
    fn the_device_runtime_is_found_in_lib64_lib_or_targets_and_its_absence_names_the_variant() {
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

        // compile() says which variant, what was searched and the fix, before anything runs.
        let empty = Toolkit::default();
        let src = d.path().join("k.cu");
        std::fs::write(&src, "extern \"C\" __global__ void k() {}\n").unwrap();
        let p = Program {
            source_path: src.clone(),
            options: vec![],
            include_dirs: vec![],
            compiler: Compiler::Nvcc,
            rdc: true,
        };
        let e = compile(
            &p,
            "recursive_nested",
            &["k".to_string()],
            "sm_90",
            &empty,
            None,
        )
        .unwrap_err()
        .to_string();
        assert!(
            e.contains("variant `recursive_nested`")
                && e.contains("libcudadevrt.a")
                && e.contains("rdc = true")
                && e.contains("fix: install the CUDA toolkit"),
            "{e}"
        );
        let e = compile(
            &p,
            "recursive_nested",
            &["k".to_string()],
            "sm_90",
            &Toolkit {
                root: Some(root.join("none")),
                nvcc: None,
            },
            None,
        )
        .unwrap_err()
        .to_string();
        assert!(
            e.contains("looked for") && e.contains("lib64/libcudadevrt.a"),
            "{e}"
        );
        // With the library there and no nvcc: the nvcc error, naming the variant too.
        let no_nvcc = Toolkit {
            root: Some(root.clone()),
            nvcc: None,
        };
        let e = compile(
            &p,
            "recursive_nested",
            &["k".to_string()],
            "sm_90",
            &no_nvcc,
            None,
        )
        .unwrap_err()
        .to_string();
        assert!(
            e.contains("variant `recursive_nested`") && e.contains("no nvcc was found"),
            "{e}"
        );
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
