//! Mixed-precision matmul checks in a manifest: the element types and the accumulator a job's
//! check resolves to, and the contracts it refuses with the ones it knows.

use std::path::{Path, PathBuf};

use gpu_lab::suite::{self, CorrectnessSpec, ElemType};

const CU: &str = "extern \"C\" __global__ void mm(int M, int N, int K, const void* A, const void* B, void* C) {}\n";

/// A 64³ product of A, B and C of the given types, with `extra` lines in `[suite]`.
fn manifest(a: &str, b: &str, c: &str, extra: &str, check_extra: &str) -> String {
    format!(
        r#"
[suite]
name = "mine"
source = "k.cu"
flops = "2 * S * S * S"
{extra}
check = {{ op = "matmul", a = "A", b = "B", output = "C", m = "S", n = "S", k = "S"{check_extra} }}
[axes]
S = [64]
[[buffers]]
name = "A"
type = "{a}"
len = "S * S"
init = "random"
[[buffers]]
name = "B"
type = "{b}"
len = "S * S"
init = "random"
[[buffers]]
name = "C"
type = "{c}"
len = "S * S"
init = "random"
[[variants]]
name = "mine"
kernel = "mm"
block = ["16", "16"]
grid = ["4", "4"]
args = ["S", "S", "S", "A", "B", "C"]
"#
    )
}

fn write(dir: &Path, toml: &str) -> PathBuf {
    let d = dir.join("mine");
    std::fs::create_dir_all(&d).unwrap();
    std::fs::write(d.join("k.cu"), CU).unwrap();
    std::fs::write(d.join("suite.toml"), toml).unwrap();
    d.join("suite.toml")
}

fn load(toml: &str) -> Result<CorrectnessSpec, String> {
    let d = tempfile::tempdir().unwrap();
    suite::load(&write(d.path(), toml))
        .map(|s| s.jobs[0].correctness.clone())
        .map_err(|e| e.to_string())
}

/// (a's type, b's type, accumulator) where the spec records them.
fn types(spec: &CorrectnessSpec) -> (Option<ElemType>, Option<ElemType>, Option<ElemType>) {
    let CorrectnessSpec::Matmul {
        a_elem,
        b_elem,
        accumulate,
        ..
    } = spec
    else {
        panic!("{spec:?}")
    };
    (*a_elem, *b_elem, *accumulate)
}

#[test]
fn mixed_precision_matmul_checks_record_their_input_types_and_the_maths_accumulator() {
    use ElemType::*;
    let spec = load(&manifest("f16", "f16", "f32", "", "")).unwrap();
    assert_eq!(types(&spec), (Some(F16), Some(F16), None));
    // An f32 product is stored as before: no new keys in the job.
    let spec = load(&manifest("f32", "f32", "f32", "", "")).unwrap();
    assert_eq!(types(&spec), (None, None, None));
    let json = serde_json::to_string(&spec).unwrap();
    assert!(
        !json.contains("a_elem") && !json.contains("accumulate"),
        "{json}"
    );
    let spec = load(&manifest(
        "e4m3",
        "e5m2",
        "bf16",
        "math = \"e4m3-tensor\"",
        "",
    ))
    .unwrap();
    assert_eq!(types(&spec), (Some(E4m3), Some(E5m2), None));
    let spec = load(&manifest("bf16", "bf16", "bf16", "", "")).unwrap();
    assert_eq!(types(&spec), (None, None, None));
    // f16 accumulation is the declared contract only where the math says so.
    let spec = load(&manifest(
        "f16",
        "f16",
        "f16",
        "math = \"f16-tensor-f16acc\"",
        "",
    ))
    .unwrap();
    assert_eq!(types(&spec), (None, None, Some(F16)));
    let spec = load(&manifest("f16", "f16", "f16", "math = \"f16-tensor\"", "")).unwrap();
    assert_eq!(types(&spec), (None, None, None));
    let spec = load(&manifest("i8", "i8", "i32", "math = \"i8-tensor\"", "")).unwrap();
    assert_eq!(types(&spec), (Some(I8), Some(I8), None));
}

#[test]
fn matmul_contracts_the_check_does_not_know_are_refused_with_the_ones_it_does() {
    for (a, b, c) in [
        ("f16", "bf16", "f32"),
        ("f16", "f16", "f64"),
        ("f32", "f32", "f16"),
        ("i8", "i8", "f32"),
        ("u8", "u8", "i32"),
        ("e4m3", "f16", "f32"),
    ] {
        let e = load(&manifest(a, b, c, "", "")).unwrap_err();
        assert!(
            e.contains(&format!(
                "a matmul check of {a}·{b}→{c} is not a contract it knows"
            )) && e.contains("i8·i8→i32")
                && e.contains("bf16·bf16"),
            "{e}"
        );
    }
    // Integers compare exactly and scale by whole numbers.
    let e = load(&manifest("i8", "i8", "i32", "", ", tolerance = 1e-3")).unwrap_err();
    assert!(
        e.contains("compared exactly") && e.contains("remove the tolerance"),
        "{e}"
    );
    let e = load(&manifest("i8", "i8", "i32", "", ", beta = \"0.5\"")).unwrap_err();
    assert!(e.contains("whole numbers"), "{e}");
    assert!(
        load(&manifest(
            "i8",
            "i8",
            "i32",
            "",
            ", alpha = \"2\", beta = \"1\""
        ))
        .is_ok()
    );
}
