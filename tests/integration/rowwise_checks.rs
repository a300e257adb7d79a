//! Row-wise checks in a manifest (softmax, layernorm, rmsnorm): what a job's check resolves to,
//! the built-in `rowwise` suite's jobs, and the mistakes refused with their line and fix.

use std::path::{Path, PathBuf};

use crate::common::kernels_dir;
use gpu_lab::suite::{self, CorrectnessSpec, RowwiseSpec};

const CU: &str = "extern \"C\" __global__ void norm(const float* x, float* y, int r, int c) {}\n";

/// An R x C layernorm manifest with `check` as its check table's inside.
fn manifest(check: &str) -> String {
    format!(
        r#"
[suite]
name = "mine"
source = "k.cu"
[axes]
shape = [{{ R = 4, C = 64 }}]
[[buffers]]
name = "x"
type = "f32"
len = "R * C"
init = "random"
[[buffers]]
name = "y"
type = "f32"
len = "R * C"
init = "poison"
[[buffers]]
name = "g"
type = "f32"
len = "C"
init = "random"
[[buffers]]
name = "b"
type = "f32"
len = "C"
init = "random"
[[buffers]]
name = "y_bf"
type = "bf16"
len = "R * C"
init = "poison"
[[buffers]]
name = "short"
type = "f32"
len = "8"
init = "random"
[[variants]]
name = "mine"
kernel = "norm"
block = ["64"]
grid = ["R"]
args = ["x", "y", "R", "C"]
check = {{ {check} }}
"#
    )
}

fn load(toml: &str) -> Result<CorrectnessSpec, String> {
    let d = tempfile::tempdir().unwrap();
    let dir = d.path().join("mine");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("k.cu"), CU).unwrap();
    std::fs::write(dir.join("suite.toml"), toml).unwrap();
    let path: PathBuf = dir.join("suite.toml");
    suite::load(Path::new(&path))
        .map(|s| s.jobs[0].correctness.clone())
        .map_err(|e| e.to_string())
}

const LN: &str = r#"op = "layernorm", input = "x", output = "y", rows = "R", cols = "C", eps = "0.00001", gamma = "g", beta = "b""#;

#[test]
fn row_wise_checks_resolve_their_shape_scalar_and_per_column_buffers() {
    let want = RowwiseSpec {
        input: 0,
        output: 1,
        rows: 4,
        cols: 64,
        scalar: 1e-5,
        gamma: Some(2),
        beta: Some(3),
        tolerance: None,
    };
    assert_eq!(
        load(&manifest(LN)).unwrap(),
        CorrectnessSpec::Layernorm(want.clone())
    );
    let rms = r#"op = "rmsnorm", input = "x", output = "y", rows = "R", cols = "C", eps = "0", tolerance = 1e-3"#;
    assert_eq!(
        load(&manifest(rms)).unwrap(),
        CorrectnessSpec::Rmsnorm(RowwiseSpec {
            scalar: 0.0,
            gamma: None,
            beta: None,
            tolerance: Some(1e-3),
            ..want.clone()
        })
    );
    let softmax = r#"op = "softmax", input = "x", output = "y", rows = "R", cols = "C / 2""#;
    let CorrectnessSpec::Softmax(s) = load(&manifest(softmax)).unwrap() else {
        panic!("not a softmax check")
    };
    assert_eq!((s.cols, s.scalar, s.gamma), (32, 1.0, None));
    // The spec reads back from what a run stores.
    let json = serde_json::to_string(&CorrectnessSpec::Layernorm(want.clone())).unwrap();
    assert!(json.contains(r#""op":"layernorm""#), "{json}");
    let back: CorrectnessSpec = serde_json::from_str(&json).unwrap();
    assert_eq!(back, CorrectnessSpec::Layernorm(want));
}

#[test]
fn row_wise_check_mistakes_are_named_with_their_fix() {
    for (from, to, says) in [
        (r#", eps = "0.00001""#, "", "a layernorm check needs `eps`"),
        (r#"rows = "R", "#, "", "a layernorm check needs `rows`"),
        (
            r#"cols = "C""#,
            r#"cols = "2 * C""#,
            "fewer than rows x cols = 4 x 128",
        ),
        (
            r#"output = "y""#,
            r#"output = "y_bf""#,
            "float input and output of one type",
        ),
        (
            r#"gamma = "g""#,
            r#"gamma = "short""#,
            "gamma `short` is f32 of 8 elements",
        ),
        (r#"eps = "0.00001""#, r#"eps = "-1""#, "check's eps is -1"),
        (
            r#"op = "layernorm""#,
            r#"op = "softmax""#,
            "a softmax check takes no `gamma`",
        ),
        (
            r#"op = "layernorm", "#,
            r#"op = "rmsnorm", "#,
            "a rmsnorm check takes no `beta`",
        ),
    ] {
        let text = manifest(&LN.replace(from, to));
        let e = load(&text).unwrap_err();
        assert!(
            e.contains(says) && e.contains("fix:"),
            "{from} -> {to}: {e}"
        );
    }
    let e = load(&manifest(
        r#"op = "softmax", input = "x", output = "y", rows = "R", cols = "C", scale = "0""#,
    ))
    .unwrap_err();
    assert!(e.contains("scale is 0") && e.contains("scale > 0"), "{e}");
}

#[test]
fn the_rowwise_suite_checks_every_job_with_its_op_in_f32_and_bf16() {
    let s = suite::load(&kernels_dir().join("rowwise/suite.toml")).unwrap();
    assert_eq!(s.jobs.len(), 41 * 3);
    for j in &s.jobs {
        let (op, spec) = match &j.correctness {
            CorrectnessSpec::Softmax(r) => ("softmax", r),
            CorrectnessSpec::Layernorm(r) => ("layernorm", r),
            CorrectnessSpec::Rmsnorm(r) => ("rmsnorm", r),
            other => panic!("{}: {other:?}", j.id()),
        };
        assert!(j.label().starts_with(op), "{}", j.id());
        assert_eq!(j.label().ends_with("_bf16"), spec.input == 4, "{}", j.id());
        let elements: u64 = if spec.cols == 131072 {
            128 << 20
        } else {
            32 << 20
        };
        assert_eq!(spec.rows * spec.cols, elements, "{}", j.id());
    }
    // The long rows run split over clusters of 8 blocks, each holding a 16384-element slice.
    let long = s
        .jobs
        .iter()
        .find(|j| j.label() == "softmax_cluster" && j.key.group.contains("C=131072"))
        .unwrap();
    assert_eq!(long.launches[0].cluster, Some([8, 1, 1]));
    assert_eq!(
        (long.launches[0].block[0], long.launches[0].grid[0]),
        (512, 8192)
    );
    // The persistent rung: 15 clusters of 8 (as many as an H100 or H200 holds at once at one
    // block an SM) walk the 1024 long rows; at the shorter rows it is the vec rung's launch.
    let launch_of = |label: &str, shape: &str| {
        let job = s
            .jobs
            .iter()
            .find(|j| j.label() == label && j.key.group.contains(shape))
            .unwrap_or_else(|| panic!("{label} @ {shape}"));
        let l = &job.launches[0];
        (l.cluster, l.block[0], l.grid[0])
    };
    for label in [
        "softmax_persistent",
        "layernorm_persistent_bf16",
        "softmax_persistent_rb2_bf16",
    ] {
        let (cluster, block, grid) = launch_of(label, "C=131072");
        assert_eq!((cluster, grid), (Some([8, 1, 1]), 15 * 8), "{label}");
        assert!(block == 512 || block == 1024, "{label}: {block}");
        let vec = label
            .replace("persistent_rb2", "vec")
            .replace("persistent", "vec");
        for shape in ["C=8192", "C=1024"] {
            let (_, vec_block, vec_grid) = launch_of(&vec, shape);
            let (cluster, block, grid) = launch_of(label, shape);
            assert_eq!((block, grid), (vec_block, vec_grid), "{label} @ {shape}");
            assert!(
                cluster.is_none() || cluster == Some([1, 1, 1]),
                "{label} @ {shape}"
            );
        }
    }
}
