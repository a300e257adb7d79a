//! Bring-your-own-kernel manifests on the CPU: C++ kernel names and template arguments from parameters, headers in `include_dirs`, half and narrow integer buffers, tolerances in epsilons, nvcc as compiler, and the signature check's message.

use std::path::{Path, PathBuf};

use gpu_lab::suite::{self, ArgSpec, Compiler, CorrectnessSpec, ElemType};

fn write(dir: &Path, toml: &str, files: &[(&str, &str)]) -> PathBuf {
    let d = dir.join("mine");
    std::fs::create_dir_all(&d).unwrap();
    for (name, text) in files {
        let p = d.join(name);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    }
    std::fs::write(d.join("suite.toml"), toml).unwrap();
    d.join("suite.toml")
}

const HEADER: &str = r#"#pragma once
#include <cuda_fp16.h>
#include <cassert>
namespace wt {
template <typename T, int TILE>
__global__ void __launch_bounds__(TILE * 4) tile_copy(const T* in, T* out, long long n) {}
}
"#;
const SOURCE: &str = "#include \"tiles.cuh\"\nextern \"C\" __global__ void plain(const float* in, float* out, int n) {}\n";

const MANIFEST: &str = r#"
[suite]
name = "mine"
source = "k.cu"
include_dirs = ["inc"]
[axes]
N = [4096]
[[buffers]]
name = "x"
type = "f32"
len = "N"
init = "random"
[[buffers]]
name = "x_h"
type = "f16"
len = "N"
from = "x"
[[buffers]]
name = "out"
type = "f32"
len = "N"
init = "poison"
[[buffers]]
name = "out_h"
type = "half"
len = "N"
init = "poison"
[[variants]]
name = "f32"
kernel = "plain"
block = ["256"]
grid = ["ceil_div(N, 256)"]
args = ["x", "out", "N"]
check = { op = "copy", input = "x", output = "out" }
[[variants]]
name = "templated"
kernel = "wt::tile_copy<__half, {TILE}>"
axes = { TILE = [32, 64] }
block = ["TILE * 4"]
grid = ["ceil_div(N, TILE * 4)"]
args = ["x_h", "out_h", "i64: N", "f16: 0.5", "bf16: 2", "f64: 1e300"]
compiler = "nvcc"
options = ["-Xptxas", "-dlcm=cg"]
check = { same_as = "f32", output = "out_h", reference_output = "out", tolerance = "4 eps" }
"#;

fn files() -> Vec<(&'static str, &'static str)> {
    vec![("k.cu", SOURCE), ("inc/tiles.cuh", HEADER)]
}

fn error_of(toml: &str) -> String {
    let d = tempfile::tempdir().unwrap();
    suite::load(&write(d.path(), toml, &files()))
        .unwrap_err()
        .to_string()
}

#[test]
fn a_templated_kernel_in_a_header_is_named_with_arguments_from_parameters() {
    let d = tempfile::tempdir().unwrap();
    let s = suite::load(&write(d.path(), MANIFEST, &files())).unwrap();
    let names: Vec<&str> = s
        .jobs
        .iter()
        .flat_map(|j| j.launches.iter().map(|l| l.kernel.as_str()))
        .collect();
    assert_eq!(
        names,
        vec![
            "plain",
            "wt::tile_copy<__half, 32>",
            "wt::tile_copy<__half, 64>"
        ]
    );
    let t = &s.jobs[1];
    assert_eq!(t.program.compiler, Compiler::Nvcc);
    assert_eq!(
        s.jobs[0].program.compiler,
        Compiler::Nvrtc,
        "NVRTC unless a variant or the suite says otherwise"
    );
    assert_eq!(t.program.include_dirs, vec![s.dir.join("inc")]);
    assert_eq!(t.program.options, vec!["-Xptxas", "-dlcm=cg"]);
    assert_eq!(
        t.launches[0].args[3],
        ArgSpec::F16(half::f16::from_f32(0.5).to_bits())
    );
    assert_eq!(
        t.launches[0].args[4],
        ArgSpec::Bf16(half::bf16::from_f32(2.0).to_bits())
    );
    assert_eq!(t.launches[0].args[5], ArgSpec::F64(1e300));
    // Half buffers: 2 bytes an element; `from` names the buffer whose values it starts with.
    assert_eq!(
        (t.buffers[1].elem, t.buffers[1].from, t.buffers[1].bytes()),
        (ElemType::F16, Some(0), 8192)
    );
    assert_eq!(
        t.buffers[3].elem,
        ElemType::F16,
        "`half` is another name of f16"
    );
    match &t.correctness {
        CorrectnessSpec::SameAs {
            output: 3,
            reference_output: Some(2),
            tolerance,
        } => assert_eq!(*tolerance, 4.0 * 2f64.powi(-10)),
        other => panic!("{other:?}"),
    }
}

#[test]
fn headers_count_in_the_suite_hash() {
    let d = tempfile::tempdir().unwrap();
    let path = write(d.path(), MANIFEST, &files());
    let before = suite::load(&path).unwrap().source_hash;
    std::fs::write(
        path.parent().unwrap().join("inc/tiles.cuh"),
        HEADER.replace("TILE * 4", "TILE * 8"),
    )
    .unwrap();
    assert_ne!(
        before,
        suite::load(&path).unwrap().source_hash,
        "editing a header of include_dirs must show in the hash"
    );
}

#[test]
fn a_kernel_the_sources_do_not_declare_lists_the_ones_they_do() {
    let e = error_of(&MANIFEST.replace(
        "wt::tile_copy<__half, {TILE}>",
        "wt::tile_cpy<__half, {TILE}>",
    ));
    assert!(
        e.contains("kernel `wt::tile_cpy<__half, {TILE}>` is not a __global__ function")
            && e.contains("its __global__ functions: plain, tile_copy"),
        "{e}"
    );
    let e = error_of(&MANIFEST.replace("{TILE}>", "{TILES}>"));
    assert!(
        e.contains("`{TILES}`") && e.contains("unknown name `TILES`"),
        "{e}"
    );
    let e = error_of(&MANIFEST.replace("{TILE}>", "{TILE}>; int evil"));
    assert!(
        e.contains("holds `;`"),
        "a name that could add code to nvcc's wrapper is refused: {e}"
    );
    let e = error_of(&MANIFEST.replace("{TILE}>", "{TILE>"));
    assert!(e.contains("without closing"), "{e}");
}

#[test]
fn include_dirs_stay_inside_the_suite() {
    let e = error_of(&MANIFEST.replace("include_dirs = [\"inc\"]", "include_dirs = [\"..\"]"));
    assert!(
        e.contains("include directory `..` lies outside the suite's directory")
            && e.contains("allow_outside"),
        "{e}"
    );
    let e = error_of(&MANIFEST.replace("include_dirs = [\"inc\"]", "include_dirs = [\"k.cu\"]"));
    assert!(e.contains("is not a directory"), "{e}");
}

#[test]
fn buffer_types_and_tolerances_say_what_is_wrong() {
    let e = error_of(&MANIFEST.replace("from = \"x\"", "from = \"out_h\""));
    assert!(e.contains("not a buffer declared before it"), "{e}");
    let e = error_of(&MANIFEST.replace(
        "type = \"half\"\nlen = \"N\"\ninit = \"poison\"",
        "type = \"half\"\nlen = \"N\"\nfrom = \"out\"",
    ));
    assert!(
        e.contains("starting as Poison: it needs at least 4096 starting with data"),
        "{e}"
    );
    let e = error_of(&MANIFEST.replace("from = \"x\"", "from = \"x\"\ninit = \"random\""));
    assert!(e.contains("exactly one of `init` and `from`"), "{e}");
    let e = error_of(&MANIFEST.replace("\"4 eps\"", "\"four eps\""));
    assert!(
        e.contains("`four` is not a number") && e.contains("8 eps"),
        "{e}"
    );
    let e = error_of(&MANIFEST.replace("\"4 eps\"", "-1"));
    assert!(e.contains("must be a finite number >= 0"), "{e}");
    let e = error_of(&MANIFEST.replace("type = \"half\"", "type = \"f8\""));
    assert!(e.contains("f8") && e.contains("suite.toml:"), "{e}");
    // Integers are compared exactly: an epsilon of them means nothing.
    let e = error_of(
        &MANIFEST
            .replace("type = \"half\"", "type = \"i16\"")
            .replace("reference_output = \"out\", ", ""),
    );
    assert!(e.contains("integer type"), "{e}");
}

#[test]
fn a_wrong_argument_list_is_described_with_both_signatures() {
    let d = tempfile::tempdir().unwrap();
    let s = suite::load(&write(d.path(), MANIFEST, &files())).unwrap();
    let j = &s.jobs[0];
    let launch = &j.launches[0];
    // plain(const float*, float*, int): pointers are 8 bytes, int 4.
    assert_eq!(launch.signature_mismatch(&j.buffers, &[8, 8, 4]), None);
    let m = launch.signature_mismatch(&j.buffers, &[8, 8, 8]).unwrap();
    assert!(m.contains("the manifest passes 3 argument(s) to `plain` and the kernel takes 3 parameter(s); they first differ at #2"), "{m}");
    assert!(
        m.contains("manifest: (f32* x (8 bytes), f32* out (8 bytes), i32 4096 (4 bytes))")
            && m.contains("kernel:   (#0: 8 bytes, #1: 8 bytes, #2: 8 bytes)"),
        "{m}"
    );
    let m = launch.signature_mismatch(&j.buffers, &[8, 8]).unwrap();
    assert!(
        m.contains("takes 2 parameter(s); they first differ at #2"),
        "{m}"
    );
}

#[test]
fn nvcc_builds_are_named_in_the_manifest_and_refused_for_bad_compilers() {
    let e = error_of(&MANIFEST.replace("compiler = \"nvcc\"", "compiler = \"clang\""));
    assert!(e.contains("clang") && e.contains("suite.toml:"), "{e}");
    let d = tempfile::tempdir().unwrap();
    let s = suite::load(&write(
        d.path(),
        &MANIFEST.replace(
            "include_dirs = [\"inc\"]",
            "include_dirs = [\"inc\"]\ncompiler = \"nvcc\"",
        ),
        &files(),
    ))
    .unwrap();
    assert!(
        s.jobs.iter().all(|j| j.program.compiler == Compiler::Nvcc),
        "a suite-wide compiler applies to every variant"
    );
}
