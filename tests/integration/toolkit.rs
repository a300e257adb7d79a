//! Builds the dynamic-parallelism and scan suites with a real CUDA toolkit and no GPU (nvcc's rdc compile and device link, NVRTC's relocatable PTX): ignored by default, run with `CUDA_HOME=DIR LD_LIBRARY_PATH=DIR/lib:DIR/lib64 cargo test --release --test integration -- --ignored toolkit::`.

use std::collections::BTreeMap;
use std::path::PathBuf;

use gpu_lab::build::{self, Image, Toolkit};
use gpu_lab::suite::{self, Compiler, Program};

use crate::common::kernels_dir;

const HOW: &str = "needs a CUDA 12+ toolkit (nvcc, libnvrtc, libcudadevrt.a) and no GPU: CUDA_HOME=DIR LD_LIBRARY_PATH=DIR/lib:DIR/lib64 cargo test --release --test integration -- --ignored toolkit::";

fn toolkit() -> Toolkit {
    let home = std::env::var_os("CUDA_HOME").map(PathBuf::from).expect(HOW);
    let toolkit = Toolkit::locate(Some(home), &[]);
    assert!(
        toolkit.nvcc.is_some() && toolkit.device_runtime().is_some(),
        "{HOW}: found {toolkit:?}"
    );
    toolkit
}

/// Every distinct program of a built-in suite with the kernels its jobs launch from it.
fn programs(name: &str) -> BTreeMap<String, (Program, Vec<String>, String)> {
    let s = suite::load(&kernels_dir().join(name).join("suite.toml")).unwrap();
    let mut out: BTreeMap<String, (Program, Vec<String>, String)> = BTreeMap::new();
    for j in &s.jobs {
        let key = format!("{:?}", j.program);
        let entry = out
            .entry(key)
            .or_insert_with(|| (j.program.clone(), Vec::new(), j.key.variant.clone()));
        for l in &j.launches {
            if !entry.1.contains(&l.kernel) {
                entry.1.push(l.kernel.clone());
            }
        }
    }
    out
}

#[test]
#[ignore = "needs a CUDA toolkit; see the file's first line"]
fn the_dynamic_parallelism_suite_builds_with_nvcc_rdc_and_nvrtc_rdc() {
    let toolkit = toolkit();
    let cache = tempfile::tempdir().unwrap();
    let (mut nvcc_rdc, mut nvrtc_rdc, mut plain) = (0, 0, 0);
    for (program, kernels, variant) in programs("dynamic-parallelism").into_values() {
        let built = build::compile(
            &program,
            &variant,
            &kernels,
            "sm_90",
            &toolkit,
            Some(cache.path()),
        )
        .unwrap_or_else(|e| panic!("{variant}: {e}"));
        match (&built.image, program.compiler, program.rdc) {
            // nvcc: one linked cubin that holds every kernel, found by its ELF symbols.
            (Image::Cubin(cubin), Compiler::Nvcc, true) => {
                let symbols: Vec<String> = build::cubin_kernels(cubin)
                    .unwrap()
                    .into_iter()
                    .map(|(s, _)| s)
                    .collect();
                for k in &kernels {
                    assert!(
                        symbols.contains(&built.symbols[k]),
                        "{variant}: {k} not in the linked cubin: {symbols:?}"
                    );
                }
                // The device runtime was linked in: its launch entry point is defined in the cubin.
                assert!(
                    symbols.iter().any(|s| s.contains("LaunchDevice")),
                    "{variant}: no device runtime in {symbols:?}"
                );
                nvcc_rdc += 1;
            }
            // NVRTC: relocatable PTX that calls the device runtime, with the library to link it with.
            (
                Image::RelocatablePtx {
                    ptx,
                    device_runtime,
                },
                Compiler::Nvrtc,
                true,
            ) => {
                assert!(
                    ptx.contains(".extern .func") && ptx.contains("LaunchDevice"),
                    "{variant}: no device launch in the PTX"
                );
                assert_eq!(Some(device_runtime.clone()), toolkit.device_runtime());
                nvrtc_rdc += 1;
            }
            (Image::Ptx(_), Compiler::Nvrtc, false) => plain += 1,
            (image, compiler, rdc) => panic!(
                "{variant}: {compiler:?} rdc={rdc} gave {}",
                match image {
                    Image::Ptx(_) => "PTX",
                    Image::Cubin(_) => "a cubin",
                    Image::RelocatablePtx { .. } => "relocatable PTX",
                }
            ),
        }
        // A second build of the same program is the cache's.
        assert!(
            build::compile(
                &program,
                &variant,
                &kernels,
                "sm_90",
                &toolkit,
                Some(cache.path())
            )
            .unwrap()
            .cached,
            "{variant}"
        );
    }
    assert!(
        nvcc_rdc >= 2 && nvrtc_rdc == 1 && plain == 2,
        "{nvcc_rdc} nvcc rdc, {nvrtc_rdc} NVRTC rdc, {plain} plain programs"
    );
}

#[test]
#[ignore = "needs a CUDA toolkit; see the file's first line"]
fn a_kernel_that_launches_a_kernel_does_not_build_without_rdc() {
    let toolkit = toolkit();
    let dir = kernels_dir().join("dynamic-parallelism/dynpar.cu");
    let program = Program {
        source_path: dir,
        options: vec![],
        include_dirs: vec![],
        compiler: Compiler::Nvcc,
        rdc: false,
        arch_specific: false,
    };
    let e = build::compile(
        &program,
        "no_rdc",
        &["copy_parent".to_string()],
        "sm_90",
        &toolkit,
        None,
    )
    .unwrap_err()
    .to_string();
    assert!(
        e.contains("separate compilation") || e.contains("rdc"),
        "{e}"
    );
}

#[test]
#[ignore = "needs a CUDA toolkit; see the file's first line"]
fn every_scan_program_builds_with_nvrtc() {
    let toolkit = toolkit();
    let programs = programs("scan");
    // Nine distinct option sets: the tile shapes, the exclusive and the float builds.
    assert!(programs.len() >= 9, "{}", programs.len());
    for (program, kernels, variant) in programs.into_values() {
        let built = build::compile(&program, &variant, &kernels, "sm_90", &toolkit, None)
            .unwrap_or_else(|e| panic!("{variant} {:?}: {e}", program.options));
        assert!(matches!(built.image, Image::Ptx(_)), "{variant}");
        assert_eq!(built.symbols.len(), kernels.len(), "{variant}");
    }
}

#[test]
#[ignore = "needs a CUDA toolkit; see the file's first line"]
fn the_tensor_gemm_hopper_rungs_build_for_sm_90a_with_nvrtc_and_nvcc_and_not_below_9_0() {
    let toolkit = toolkit();
    let cache = tempfile::tempdir().unwrap();
    let mut hopper = 0;
    for (program, kernels, variant) in programs("tensor-gemm").into_values() {
        let built = build::compile(
            &program,
            &variant,
            &kernels,
            "sm_90",
            &toolkit,
            Some(cache.path()),
        )
        .unwrap_or_else(|e| panic!("{variant}: {e}"));
        let Image::Ptx(ptx) = &built.image else {
            panic!("{variant}: NVRTC gives PTX")
        };
        // wgmma and setmaxnreg assemble only for sm_90a: the Hopper programs target it.
        assert_eq!(
            ptx.contains(".target sm_90a"),
            program.arch_specific,
            "{variant}"
        );
        if program.arch_specific {
            hopper += 1;
            assert!(
                ptx.contains("wgmma.mma_async") && ptx.contains("setmaxnreg"),
                "{variant}"
            );
            let nvcc = Program {
                compiler: Compiler::Nvcc,
                ..program.clone()
            };
            let cubin = build::compile(&nvcc, &variant, &kernels, "sm_90", &toolkit, None)
                .unwrap_or_else(|e| panic!("{variant} (nvcc): {e}"));
            assert!(matches!(cubin.image, Image::Cubin(_)), "{variant}");
            let e = build::compile(&program, &variant, &kernels, "sm_86", &toolkit, None)
                .unwrap_err()
                .to_string();
            assert!(
                e.contains("arch = \"specific\"")
                    && e.contains("compute capability 8.6")
                    && e.contains("fix:"),
                "{e}"
            );
        }
    }
    assert!(hopper > 0, "the suite's Hopper programs were not built");
}
