//! Compiling with the toolkit's nvcc: a wrapper source that names each kernel, the command lines (with rdc, a compile then a device link), and the kernels of the cubin it leaves.

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use super::error::BuildError;
use super::plan::BuildPlan;
use crate::cxx;
use crate::process::{self, Output};
use crate::store::{FileKind, read_regular};

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

/// The cubin of `kernels` from the source at `path`: nvcc runs `plan`'s steps on a wrapper source
/// in a scratch directory, each step stopped after ten minutes.
pub(super) fn nvcc_compile(
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
    check_shell_safe(&steps).map_err(fail)?;
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
    read_regular(&cubin, FileKind::COMPILED).map_err(|e| fail(format!("nvcc left no cubin: {e}")))
}

/// nvcc runs its steps through a shell and does not quote their arguments: every argument must be
/// free of the shell's characters, whatever the manifest loader let through (a path of the
/// user's, the temporary directory), or a value could run a command.
pub fn check_shell_safe(steps: &[(Vec<String>, Vec<String>)]) -> Result<(), String> {
    use crate::suite::option_grammar::first_unsafe;
    for (_, args) in steps {
        if let Some((a, c)) = args.iter().find_map(|a| first_unsafe(a).map(|c| (a, c))) {
            return Err(format!(
                "nvcc's argument `{}` holds `{}`, which nvcc's shell could act on; gpu-lab passes only letters, digits and `_ . , = + - / : @ %` (move the suite, or TMPDIR, to a path of those characters)",
                a.escape_debug(),
                c.escape_debug()
            ));
        }
    }
    Ok(())
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
    use super::super::test_programs::{program, rdc};
    use super::*;
    use crate::suite::{Compiler, Program};

    #[test]
    fn the_wrapper_includes_the_source_and_takes_each_kernels_address() {
        let w = nvcc_wrapper(Path::new("/s/k.cuh"), &["wt::gemm<64, float>".to_string()]);
        assert_eq!(
            w,
            "#include \"/s/k.cuh\"\n[[maybe_unused]] static void* gpu_lab_kernel_0 = (void*)&wt::gemm<64, float>;\n"
        );
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
        assert!(check_shell_safe(&steps).is_ok());
        let mut hostile = steps.clone();
        hostile[0].1.push("-DX=$(touch /tmp/p)".into());
        assert!(check_shell_safe(&hostile).unwrap_err().contains("`$`"));
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
}
