//! Launch features in manifests: tensor maps (`[[tensor_maps]]`, a 128-byte argument), clusters (`cluster = [...]`) and programmatic dependent launch (`pdl`), resolved into jobs or refused with a fix.

use std::path::{Path, PathBuf};

use gpu_lab::suite::tensor_map::{Swizzle, TensorDataType};
use gpu_lab::suite::{self, ArgSpec, BufferSpec, LaunchSpec};

fn write_suite(dir: &Path, toml: &str, cu: &str) -> PathBuf {
    let d = dir.join("hopper");
    std::fs::create_dir_all(&d).unwrap();
    std::fs::write(d.join("k.cu"), cu).unwrap();
    std::fs::write(d.join("suite.toml"), toml).unwrap();
    d.join("suite.toml")
}

const CU: &str = "#include <cuda.h>\n\
extern \"C\" __global__ void tma_copy(const __grid_constant__ CUtensorMap in, float* out, int cols) {}\n\
extern \"C\" __global__ void cluster_sum(const float* in, float* out, int n) {}\n";

fn tma_suite(cols: &str, tensor_map_extra: &str) -> String {
    format!(
        r#"
[suite]
name = "hopper"
source = "k.cu"
[params]
ROWS = 256
COLS = {cols}
[[buffers]]
name = "input"
type = "f32"
len = "ROWS * COLS"
init = "random"
[[buffers]]
name = "output"
type = "f32"
len = "ROWS * COLS"
init = "poison"
[[tensor_maps]]
name = "tmap_in"
buffer = "input"
dims = ["COLS", "ROWS"]
box = ["32", "32"]
{tensor_map_extra}
[[variants]]
name = "tma"
kernel = "tma_copy"
grid = ["COLS / 32", "ROWS / 32"]
block = ["128"]
args = ["tmap_in", "output", "COLS"]
check = {{ op = "copy", input = "input", output = "output" }}
"#
    )
}

fn load(toml: &str) -> Result<suite::Suite, String> {
    let d = tempfile::tempdir().unwrap();
    suite::load(&write_suite(d.path(), toml, CU)).map_err(|e| e.to_string())
}

#[test]
fn a_tensor_map_argument_resolves_to_a_descriptor_of_the_job() {
    let s = load(&tma_suite("1024", "swizzle = \"128B\"")).unwrap();
    let j = &s.jobs[0];
    assert_eq!(j.launches[0].args[0], ArgSpec::TensorMap(0));
    assert_eq!(j.launches[0].args[0].size(), 128);
    assert_eq!(j.tensor_maps.len(), 1);
    let t = &j.tensor_maps[0];
    assert_eq!((t.index, t.buffer), (0, 0));
    assert_eq!(t.data_type, TensorDataType::Float32);
    assert_eq!(t.dims, vec![1024, 256]);
    assert_eq!(t.strides, vec![4096], "packed by default");
    assert_eq!(t.box_dims, vec![32, 32]);
    assert_eq!(t.element_strides, vec![1, 1]);
    assert_eq!(t.swizzle, Swizzle::B128);
}

#[test]
fn tensor_map_rules_are_refused_at_load_with_the_line_and_a_fix() {
    // 1001 f32 columns: rows of 4004 bytes, not a multiple of 16.
    let e = load(&tma_suite("1001", "")).unwrap_err();
    assert!(e.contains("multiple of 16 bytes"), "{e}");
    assert!(e.contains("fix:") && e.contains("4016"), "{e}");
    assert!(e.contains("suite.toml:"), "the error names its line: {e}");
    // A 128-byte inner box edge does not fit a 64-byte swizzle.
    let e = load(&tma_suite("1024", "swizzle = \"64B\"")).unwrap_err();
    assert!(e.contains("64-byte span"), "{e}");
    // Strides that reach past the buffer.
    let e = load(&tma_suite("1024", "strides = [\"8192\"]")).unwrap_err();
    assert!(e.contains("reaches") && e.contains("buffer"), "{e}");
    // Box edges above 256.
    let e =
        load(&tma_suite("1024", "").replace("box = [\"32\", \"32\"]", "box = [\"32\", \"512\"]"))
            .unwrap_err();
    assert!(e.contains("box[1] = 512"), "{e}");
    // NaN fill of an integer buffer.
    let e =
        load(&tma_suite("1024", "oob_fill = \"nan\"").replace("type = \"f32\"", "type = \"i32\""))
            .unwrap_err();
    assert!(e.contains("NaN"), "{e}");
}

#[test]
fn tensor_map_names_and_buffers_are_checked() {
    let clash = tma_suite("1024", "").replace("name = \"tmap_in\"", "name = \"output\"");
    let e = load(&clash).unwrap_err();
    assert!(e.contains("shares its name"), "{e}");
    let missing = tma_suite("1024", "").replace("buffer = \"input\"", "buffer = \"nope\"");
    let e = load(&missing).unwrap_err();
    assert!(e.contains("not a buffer"), "{e}");
    let unknown = tma_suite("1024", "").replace("args = [\"tmap_in\"", "args = [\"tmap_x\"");
    let e = load(&unknown).unwrap_err();
    assert!(
        e.contains("tensor map"),
        "the refusal names tensor maps as a kind: {e}"
    );
    let host = tma_suite("1024", "").replace(
        "len = \"ROWS * COLS\"\ninit = \"random\"",
        "len = \"ROWS * COLS\"\ninit = \"random\"\nmemory = \"pinned\"",
    );
    let e = load(&host).unwrap_err();
    assert!(e.contains("not device memory"), "{e}");
}

#[test]
fn an_unused_tensor_map_is_not_resolved() {
    let s = load(&tma_suite("1024", "").replace(
        "args = [\"tmap_in\", \"output\", \"COLS\"]",
        "args = [\"input\", \"output\", \"COLS\"]",
    ))
    .unwrap();
    assert!(s.jobs[0].tensor_maps.is_empty());
}

const CLUSTER: &str = r#"
[suite]
name = "hopper"
source = "k.cu"
[params]
N = 1048576
[[buffers]]
name = "input"
type = "f32"
len = "N"
init = "random"
[[buffers]]
name = "output"
type = "f32"
len = "N / 256"
init = "poison"
[[variants]]
name = "cluster16"
kernel = "cluster_sum"
grid = ["N / 256"]
block = ["256"]
cluster = ["16", "1", "1"]
args = ["input", "output", "N"]
"#;

#[test]
fn a_cluster_resolves_and_must_divide_the_grid() {
    let s = load(CLUSTER).unwrap();
    assert_eq!(s.jobs[0].launches[0].cluster, Some([16, 1, 1]));
    assert!(!s.jobs[0].launches[0].pdl);
    let e = load(&CLUSTER.replace("grid = [\"N / 256\"]", "grid = [\"N / 256 + 1\"]")).unwrap_err();
    assert!(e.contains("whole number of clusters"), "{e}");
    assert!(e.contains("fix:"), "{e}");
    let e = load(&CLUSTER.replace("[\"16\", \"1\", \"1\"]", "[\"16\", \"1\", \"1\", \"1\"]"))
        .unwrap_err();
    assert!(e.contains("cluster needs 1 to 3 entries"), "{e}");
    let e = load(&CLUSTER.replace("[\"16\", \"1\", \"1\"]", "[\"0\"]")).unwrap_err();
    assert!(e.contains("cluster[0]"), "{e}");
}

#[test]
fn a_cluster_on_launches_and_on_kernel_steps() {
    let launches = CLUSTER.replace(
        "kernel = \"cluster_sum\"\ngrid = [\"N / 256\"]\nblock = [\"256\"]\ncluster = [\"16\", \"1\", \"1\"]\nargs = [\"input\", \"output\", \"N\"]\n",
        "[[variants.launches]]\nkernel = \"cluster_sum\"\ngrid = [\"N / 256\"]\nblock = [\"256\"]\ncluster = [\"8\"]\nargs = [\"input\", \"output\", \"N\"]\n\
         [[variants.launches]]\nkernel = \"cluster_sum\"\ngrid = [\"16\"]\nblock = [\"256\"]\nargs = [\"output\", \"output\", \"N / 256\"]\npdl = true\n",
    );
    let s = load(&launches).unwrap();
    let l = &s.jobs[0].launches;
    assert_eq!((l[0].cluster, l[0].pdl), (Some([8, 1, 1]), false));
    assert_eq!((l[1].cluster, l[1].pdl), (None, true));
    let steps = CLUSTER.replace(
        "kernel = \"cluster_sum\"\ngrid = [\"N / 256\"]\nblock = [\"256\"]\ncluster = [\"16\", \"1\", \"1\"]\nargs = [\"input\", \"output\", \"N\"]\n",
        "[[variants.steps]]\nkernel = \"cluster_sum\"\ngrid = [\"N / 256\"]\nblock = [\"256\"]\ncluster = [\"16\"]\nargs = [\"input\", \"output\", \"N\"]\n",
    );
    let s = load(&steps).unwrap();
    assert_eq!(s.jobs[0].launches[0].cluster, Some([16, 1, 1]));
    let on_copy = steps.replace(
        "[[variants.steps]]\nkernel",
        "[[variants.steps]]\ncopy = \"d2d\"\nfrom = \"input\"\nto = \"output\"\ncount = \"16\"\ncluster = [\"2\"]\n[[variants.steps]]\nkernel",
    );
    assert!(load(&on_copy).is_err());
}

#[test]
fn pdl_on_the_first_launch_is_refused() {
    let first = CLUSTER.replace(
        "kernel = \"cluster_sum\"\ngrid = [\"N / 256\"]\nblock = [\"256\"]\ncluster = [\"16\", \"1\", \"1\"]\nargs = [\"input\", \"output\", \"N\"]\n",
        "[[variants.launches]]\nkernel = \"cluster_sum\"\ngrid = [\"N / 256\"]\nblock = [\"256\"]\nargs = [\"input\", \"output\", \"N\"]\npdl = true\n",
    );
    let e = load(&first).unwrap_err();
    assert!(e.contains("first launch has pdl = true"), "{e}");
    assert!(e.contains("fix:"), "{e}");
    // `pdl` is a key of launches only: a variant's single launch has no launch before it.
    let single = CLUSTER.replace("cluster = [\"16\", \"1\", \"1\"]", "pdl = true");
    assert!(load(&single).is_err());
}

#[test]
fn the_signature_check_knows_a_tensor_map_parameter() {
    let buffers: Vec<BufferSpec> = Vec::new();
    let launch = |args: Vec<ArgSpec>| LaunchSpec {
        kernel: "tma_copy".into(),
        grid: [1, 1, 1],
        block: [128, 1, 1],
        shared_bytes: 0,
        args,
        cluster: None,
        pdl: false,
        grid_of_sms: None,
    };
    // The kernel takes (CUtensorMap, float*, int).
    let kernel = [128, 8, 4];
    assert!(
        launch(vec![
            ArgSpec::TensorMap(0),
            ArgSpec::Buffer(1),
            ArgSpec::I32(4)
        ])
        .signature_mismatch(&buffers, &kernel)
        .is_none()
    );
    let m = launch(vec![
        ArgSpec::Buffer(0),
        ArgSpec::Buffer(1),
        ArgSpec::I32(4),
    ])
    .signature_mismatch(&buffers, &kernel)
    .unwrap();
    assert!(m.contains("[[tensor_maps]]"), "{m}");
    let m = launch(vec![ArgSpec::TensorMap(0), ArgSpec::I32(4)])
        .signature_mismatch(&buffers, &[8, 4])
        .unwrap();
    assert!(
        m.contains("is not a `const __grid_constant__ CUtensorMap`"),
        "{m}"
    );
}

/// The GPU smoke suite (tests/gpu/hopper-launch) loads: a tensor-map copy, a compiled and a
/// runtime 16-block cluster, and a PDL pair.
#[test]
fn the_gpu_smoke_suite_loads() {
    let path = crate::common::repo().join("tests/gpu/hopper-launch/suite.toml");
    let s = suite::load(&path).unwrap();
    let job = |name: &str| s.jobs.iter().find(|j| j.key.variant == name).unwrap();
    assert_eq!(job("tma_copy").tensor_maps[0].dims, vec![2048, 1024]);
    assert_eq!(job("cluster16_compiled").launches[0].cluster, None);
    assert_eq!(
        job("cluster16_runtime").launches[0].cluster,
        Some([16, 1, 1])
    );
    let pdl = &job("pdl_pair").launches;
    assert_eq!((pdl[0].pdl, pdl[1].pdl), (false, true));
}

#[test]
fn a_grid_of_sms_loads_at_the_nominal_count_and_binds_each_gpus_own() {
    let persistent = CLUSTER.replace(
        "grid = [\"N / 256\"]\nblock = [\"256\"]\ncluster = [\"16\", \"1\", \"1\"]",
        "grid = [\"SMS - SMS % 2\"]\nblock = [\"256\"]\ncluster = [\"2\", \"1\", \"1\"]",
    );
    let s = load(&persistent).unwrap();
    let mut jobs = s.jobs.clone();
    assert_eq!(jobs[0].launches[0].grid, [suite::NOMINAL_SMS, 1, 1]);
    assert!(jobs[0].launches[0].grid_of_sms.is_some());
    suite::bind_sms(&mut jobs, 114).unwrap();
    assert_eq!(jobs[0].launches[0].grid, [114, 1, 1]);
    suite::bind_sms(&mut jobs, 133).unwrap();
    assert_eq!(jobs[0].launches[0].grid, [132, 1, 1]);
    // A grid of SMS alone in clusters of 2 loads (132 is even) and is refused, with the fix, on
    // a GPU whose count is odd.
    let mut odd = load(&persistent.replace("SMS - SMS % 2", "SMS"))
        .unwrap()
        .jobs;
    let e = suite::bind_sms(&mut odd, 133).unwrap_err().to_string();
    assert!(
        e.contains("SMS = 133") && e.contains("clusters of 2"),
        "{e}"
    );
    assert!(e.contains("fix:") && e.contains("SMS - SMS % 2"), "{e}");
    // A grid without SMS is left alone.
    let mut fixed = load(CLUSTER).unwrap().jobs;
    let before = fixed[0].launches[0].grid;
    suite::bind_sms(&mut fixed, 7).unwrap();
    assert_eq!(fixed[0].launches[0].grid, before);
    assert!(!suite::any_sms_grid(&fixed));
}

#[test]
fn sms_outside_a_grid_or_bound_by_the_suite_is_refused_with_the_fix() {
    let e = load(&CLUSTER.replace("block = [\"256\"]", "block = [\"SMS\"]")).unwrap_err();
    assert!(
        e.contains("block names `SMS`") && e.contains("only a grid"),
        "{e}"
    );
    assert!(e.contains("fix:"), "{e}");
    let e = load(&CLUSTER.replace("N = 1048576", "N = 1048576\nSMS = 4")).unwrap_err();
    assert!(e.contains("binds `SMS`"), "{e}");
    assert!(e.contains("fix:") && e.contains("rename"), "{e}");
}
