//! Tensor-core bounds and roofs on the CPU: the cuBLASLt contract a `bound` resolves to (per suite and per variant), its refusals, and a mock run's roofs per math.

use std::ffi::OsStr;
use std::path::{Path, PathBuf};

use gpu_lab::suite::{self, BoundSpec};

use crate::common::mock_run_in;

const CU: &str = "extern \"C\" __global__ void mm(int M, int N, int K, const void* A, const void* B, void* C) {}\n";

/// An f16 GEMM suite: `bound` and `math` on the suite; variants override either.
const F16: &str = r#"
[suite]
name = "tensor"
source = "k.cu"
flops = "2 * S * S * S"
bytes = "6 * S * S"
math = "f16-tensor"
bound = "cublas"
check = { op = "matmul", a = "A", b = "B", output = "C", m = "S", n = "S", k = "S" }
[axes]
S = [64]
[[buffers]]
name = "A"
type = "TYPE"
len = "S * S"
init = "random"
[[buffers]]
name = "B"
type = "TYPE"
len = "S * S"
init = "random"
[[buffers]]
name = "C"
type = "TYPE"
len = "S * S"
init = "zero"
[[variants]]
name = "mma"
kernel = "mm"
block = ["128"]
grid = ["S"]
args = ["S", "S", "S", "A", "B", "C"]
[[variants]]
name = "acc16"
math = "f16-tensor-f16acc"
kernel = "mm"
block = ["128"]
grid = ["S"]
args = ["S", "S", "S", "A", "B", "C"]
[[variants]]
name = "vs"
bound = "variant:mma"
kernel = "mm"
block = ["128"]
grid = ["S"]
args = ["S", "S", "S", "A", "B", "C"]
[[variants]]
name = "moved"
bound = "copy"
kernel = "mm"
block = ["128"]
grid = ["S"]
args = ["S", "S", "S", "A", "B", "C"]
"#;

fn write_suite(dir: &Path, toml: &str) -> PathBuf {
    let d = dir.join("tensor");
    std::fs::create_dir_all(&d).unwrap();
    std::fs::write(d.join("k.cu"), CU).unwrap();
    std::fs::write(d.join("suite.toml"), toml).unwrap();
    d.join("suite.toml")
}

fn bound_of<'a>(s: &'a suite::Suite, variant: &str) -> &'a BoundSpec {
    &s.jobs
        .iter()
        .find(|j| j.key.variant == variant)
        .unwrap()
        .bound
}

#[test]
fn an_f16_gemm_is_bounded_by_cublaslt_of_its_own_contract_per_variant() {
    let d = tempfile::tempdir().unwrap();
    let s = suite::load(&write_suite(d.path(), &F16.replace("TYPE", "f16"))).unwrap();
    assert_eq!(bound_of(&s, "mma").name(), "cuBLASLt GEMM f16·f16→f16");
    assert_eq!(
        bound_of(&s, "mma").key().as_deref(),
        Some("cuBLASLt GEMM f16·f16→f16 64x64x64 alpha 1 beta 0")
    );
    assert_eq!(
        bound_of(&s, "acc16").name(),
        "cuBLASLt GEMM f16·f16→f16, f16 accumulate"
    );
    assert_eq!(
        bound_of(&s, "vs"),
        &BoundSpec::Variant { name: "mma".into() }
    );
    assert!(bound_of(&s, "moved").is_copy());
}

#[test]
fn cublas_needs_only_its_own_variant_to_have_a_matmul_check() {
    // The suite checks nothing and is bounded by the copy; one variant checks a product and asks for cuBLAS.
    let toml = F16
        .replace("TYPE", "f32")
        .replace("bound = \"cublas\"\ncheck = { op = \"matmul\", a = \"A\", b = \"B\", output = \"C\", m = \"S\", n = \"S\", k = \"S\" }", "")
        .replace("math = \"f16-tensor\"", "math = \"tf32-tensor\"")
        .replace(
            "name = \"mma\"\n",
            "name = \"mma\"\nbound = \"cublas-tf32\"\ncheck = { op = \"matmul\", a = \"A\", b = \"B\", output = \"C\", m = \"S\", n = \"S\", k = \"S\" }\n",
        )
        .replace("math = \"f16-tensor-f16acc\"\n", "");
    let d = tempfile::tempdir().unwrap();
    let s = suite::load(&write_suite(d.path(), &toml)).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        bound_of(&s, "mma").name(),
        "cuBLASLt GEMM f32·f32→f32, TF32"
    );
    assert!(bound_of(&s, "acc16").is_copy());
}

#[test]
fn a_contract_cublas_lacks_is_refused_with_the_supported_ones() {
    let d = tempfile::tempdir().unwrap();
    let toml = F16
        .replace("TYPE", "f16")
        .replace("bound = \"cublas\"", "bound = \"cublas-tf32\"");
    let e = suite::load(&write_suite(d.path(), &toml))
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("TF32") && e.contains("i8·i8→i32") && e.contains("variant:NAME"),
        "{e}"
    );
    // A variant's own bound is reported at the variant.
    let toml = F16
        .replace("TYPE", "f16")
        .replace("bound = \"variant:mma\"", "bound = \"cublas-fast\"");
    let e = suite::load(&write_suite(d.path(), &toml))
        .unwrap_err()
        .to_string();
    assert!(e.contains("unknown bound `cublas-fast`"), "{e}");
}

#[test]
fn a_mock_run_measures_two_mock_roofs_for_each_declared_tensor_math() {
    let d = tempfile::tempdir().unwrap();
    write_suite(d.path(), &F16.replace("TYPE", "f16"));
    let run = mock_run_in(
        d.path(),
        [
            OsStr::new("--suite"),
            OsStr::new("tensor"),
            OsStr::new("--suite-dir"),
            d.path().as_os_str(),
        ],
    );
    let results = std::fs::read_to_string(run.join("results.jsonl")).unwrap();
    let lines: Vec<serde_json::Value> = results
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let roofs: Vec<&serde_json::Value> = lines
        .iter()
        .filter_map(|l| l.get("roofs"))
        .flat_map(|r| r.as_array().unwrap())
        .collect();
    let maths: Vec<&str> = roofs.iter().map(|r| r["math"].as_str().unwrap()).collect();
    assert_eq!(
        maths,
        [
            "f16-tensor",
            "f16-tensor",
            "f16-tensor-f16acc",
            "f16-tensor-f16acc"
        ],
        "{results}"
    );
    assert!(
        roofs
            .iter()
            .all(|r| r["what"].as_str().unwrap().contains("MOCK")
                && r["summary"].is_object()
                && r["error"].is_null())
    );
    assert!(
        results.contains("cuBLASLt GEMM f16·f16→f16 64x64x64 alpha 1 beta 0"),
        "{results}"
    );
}
