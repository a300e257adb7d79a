//! Every built-in manifest parses, expands and names kernels its sources declare; broken manifests get file:line errors.

use std::path::{Path, PathBuf};

use gpu_lab::suite::{self, CorrectnessSpec};

use crate::common::{kernels_dir, repo};

#[test]
fn every_builtin_suite_loads_and_expands() {
    let found = suite::discover(&[kernels_dir()]);
    assert!(found.contains_key("transpose"), "{found:?}");
    for (name, path) in found {
        let s = suite::load(&path).unwrap_or_else(|e| panic!("{name}: {e}"));
        let jobs = &s.jobs;
        assert!(!jobs.is_empty(), "{name} has no jobs");
        let mut ids: Vec<&str> = jobs.iter().map(|j| j.id()).collect();
        ids.sort();
        ids.dedup();
        assert_eq!(ids.len(), jobs.len(), "{name}: job ids must be unique");
        for j in jobs {
            let src = std::fs::read_to_string(&j.program.source_path).unwrap();
            // Kernels may live in the headers the source includes (the SGEMM tutorial's do).
            let src = format!(
                "{src}\n{}",
                suite::sources::local_includes(&j.program.source_path, &src, &[])
            );
            for l in &j.launches {
                assert!(
                    suite::source_declares_kernel(&src, &l.kernel),
                    "{}: kernel {} not in source",
                    j.id(),
                    l.kernel
                );
                assert!(l.block.iter().product::<u32>() <= 1024);
            }
        }
    }
}

#[test]
fn transpose_suite_has_every_seed_variant_and_size() {
    let s = suite::load(&kernels_dir().join("transpose/suite.toml")).unwrap();
    let jobs = &s.jobs;
    let groups: std::collections::BTreeSet<&str> =
        jobs.iter().map(|j| j.key.group.as_str()).collect();
    for g in [
        "NX=4000,NY=4000",
        "NX=8192,NY=8192",
        "NX=16384,NY=16384",
        "NX=1024,NY=2048",
    ] {
        assert!(groups.contains(g), "missing size {g}: {groups:?}");
    }
    for v in [
        "copy_row",
        "copy_column",
        "naive_row",
        "naive_column",
        "unroll4_row",
        "unroll4_col",
        "diagonal_row",
        "smem_32",
        "smem_pad_32",
        "smem_swizzle_32",
        "transpose_unrolled",
        "shared_block",
    ] {
        assert!(
            jobs.iter().any(|j| j.key.variant == v),
            "missing variant {v}"
        );
    }
    // The grid of every job covers the matrix: ceil_div, not truncating division.
    let naive = jobs
        .iter()
        .find(|j| j.key.variant == "naive_row" && j.key.group == "NX=4000,NY=4000")
        .unwrap();
    let l = &naive.launches[0];
    assert!(
        l.grid[0] as u64 * l.block[0] as u64 >= 4000
            && l.grid[1] as u64 * l.block[1] as u64 >= 4000
    );
    assert!(matches!(
        naive.correctness,
        CorrectnessSpec::Transpose {
            rows: 4000,
            cols: 4000,
            ..
        }
    ));
    let unrolled: Vec<_> = jobs
        .iter()
        .filter(|j| j.key.variant == "transpose_unrolled" && j.key.group == "NX=4000,NY=4000")
        .map(|j| j.label())
        .collect();
    assert_eq!(unrolled.len(), 3, "{unrolled:?}");
    assert!(
        naive.program.options.is_empty() || naive.program.options.iter().all(|o| !o.is_empty())
    );
}

fn write_suite(dir: &Path, toml: &str, cu: &str) -> PathBuf {
    let d = dir.join("mine");
    std::fs::create_dir_all(&d).unwrap();
    std::fs::write(d.join("k.cu"), cu).unwrap();
    std::fs::write(d.join("suite.toml"), toml).unwrap();
    d.join("suite.toml")
}

const CU: &str = "extern \"C\" __global__ void scale(const float* in, float* out, int n) {}\n";
const GOOD: &str = r#"
[suite]
name = "mine"
source = "k.cu"
bytes = "8 * N"
[axes]
N = [1000, 4096]
[[buffers]]
name = "in"
type = "f32"
len = "N"
init = "random"
[[buffers]]
name = "out"
type = "f32"
len = "N"
init = "poison"
[[variants]]
name = "ref"
kernel = "scale"
params = { RB = 256 }
block = ["RB"]
grid = ["ceil_div(N, RB)"]
args = ["in", "out", "N"]
check = { op = "copy", input = "in", output = "out" }
[[variants]]
name = "swept"
# The reference `ref` has no B: it must still resolve at these sizes.
kernel = "scale"
axes = { B = [64, 128] }
block = ["B"]
grid = ["ceil_div(N, B)"]
args = ["in", "out", "u32: N"]
defines = { WIDTH = "B * 2" }
check = { same_as = "ref", output = "out", tolerance = 1e-6 }
"#;

#[test]
fn user_suite_with_sweeps_defines_and_same_as() {
    let d = tempfile::tempdir().unwrap();
    let s = suite::load(&write_suite(d.path(), GOOD, CU)).unwrap();
    let jobs = &s.jobs;
    assert_eq!(jobs.len(), 2 * 3);
    let j = jobs
        .iter()
        .find(|j| j.label() == "swept[B=128]" && j.key.group == "N=1000")
        .unwrap();
    assert_eq!(j.launches[0].grid, [8, 1, 1]);
    assert_eq!(j.program.options, vec!["-DWIDTH=256"]);
    let r = j.reference.as_ref().unwrap();
    assert_eq!(r.variant, "ref");
    assert_eq!(
        (r.launches[0].block[0], r.launches[0].grid[0]),
        (256, 4),
        "the reference keeps its own RB"
    );
    assert_eq!(j.work.bytes, Some(8000.0));
    assert_eq!(j.id(), "swept[B=128] @ N=1000");
}

fn error_of(toml: &str, cu: &str) -> String {
    let d = tempfile::tempdir().unwrap();
    suite::load(&write_suite(d.path(), toml, cu))
        .unwrap_err()
        .to_string()
}

#[test]
fn manifest_errors_name_file_line_and_fix() {
    let e = error_of(
        &GOOD.replace("kernel = \"scale\"\nparams", "kernel = \"scal\"\nparams"),
        CU,
    );
    assert!(
        e.contains("suite.toml:")
            && e.contains("kernel `scal` is not a __global__ function")
            && e.contains("fix:"),
        "{e}"
    );
    let e = error_of(&GOOD.replace("ceil_div(N, RB)", "ceil_div(M, RB)"), CU);
    assert!(
        e.contains("unknown name `M`") && e.contains("suite.toml:"),
        "{e}"
    );
    let e = error_of(
        &GOOD.replace(
            "args = [\"in\", \"out\", \"N\"]",
            "args = [\"inn\", \"out\", \"N\"]",
        ),
        CU,
    );
    assert!(
        e.contains("unknown name `inn`") || e.contains("`inn`"),
        "{e}"
    );
    let e = error_of(&GOOD.replace("same_as = \"ref\"", "same_as = \"nope\""), CU);
    assert!(e.contains("nope"), "{e}");
    let e = error_of(&GOOD.replace("init = \"poison\"", "init = \"posion\""), CU);
    assert!(e.contains("suite.toml:") && e.contains("posion"), "{e}");
    let e = error_of(&GOOD.replace("block = [\"B\"]", "block = [\"B * 16\"]"), CU);
    assert!(e.contains("more than 1024 threads"), "{e}");
    let e = error_of(&GOOD.replace("\"u32: N\"", "\"N * N * N\""), CU);
    assert!(
        e.contains("does not fit in i32") && e.contains("i64:"),
        "{e}"
    );
    let e = error_of(&GOOD.replace("name = \"mine\"", "name = \"yours\""), CU);
    assert!(e.contains("its directory is `mine`"), "{e}");
    let e = error_of(&GOOD.replace("N = [1000, 4096]", "N = []"), CU);
    assert!(e.contains("sweep axis `N` has no values"), "{e}");
    let e = error_of(&GOOD.replace("init = \"random\"", "init = \"zero\""), CU);
    assert!(
        e.contains("cannot show wrong indexing") && e.contains("init = \"random\""),
        "{e}"
    );
    let e = error_of(
        &GOOD.replacen(
            "type = \"f32\"\nlen = \"N\"\ninit = \"poison\"",
            "type = \"f64\"\nlen = \"N\"\ninit = \"poison\"",
            1,
        ),
        CU,
    );
    assert!(
        e.contains("check input and output have different element types"),
        "{e}"
    );
}

#[test]
fn the_gpu_fault_suite_loads_as_a_user_suite() {
    let dirs = [repo().join("tests/gpu")];
    let suites = suite::load_named(&["faults".to_string()], &dirs).unwrap();
    let jobs = &suites[0].jobs;
    assert_eq!(jobs.len(), 6);
    assert!(
        jobs.iter()
            .any(|j| j.program.source_path.ends_with("broken.cu"))
    );
}

/// The GPU suite of issue 32 loads: every cheat and honest transpose a kernel of the source
/// (two as host programs), all checked as transposes.
#[test]
fn the_gpu_trust_cheats_suite_loads_as_a_user_suite() {
    let dirs = [repo().join("tests/gpu")];
    let suites = suite::load_named(&["trust-cheats".to_string()], &dirs).unwrap();
    let jobs = &suites[0].jobs;
    assert_eq!(jobs.len(), 11);
    assert_eq!(jobs.iter().filter(|j| j.steps.is_some()).count(), 2);
    assert!(
        jobs.iter()
            .all(|j| matches!(j.correctness, CorrectnessSpec::Transpose { .. }))
    );
}

#[test]
fn a_variant_of_several_launches() {
    let two_step = format!(
        "{GOOD}\n[[variants]]\nname = \"two_step\"\ncheck = {{ op = \"copy\", input = \"in\", output = \"out\" }}\n\
         [[variants.launches]]\nkernel = \"scale\"\nblock = [\"256\"]\ngrid = [\"ceil_div(N, 256)\"]\nargs = [\"in\", \"out\", \"N\"]\n\
         [[variants.launches]]\nkernel = \"scale\"\nblock = [\"32\"]\ngrid = [\"1\"]\nargs = [\"out\", \"out\", \"32\"]\nshared_bytes = \"4 * 32\"\n"
    );
    let d = tempfile::tempdir().unwrap();
    let s = suite::load(&write_suite(d.path(), &two_step, CU)).unwrap();
    let jobs = &s.jobs;
    let j = jobs
        .iter()
        .find(|j| j.key.variant == "two_step" && j.key.group == "N=4096")
        .unwrap();
    assert_eq!(j.launches.len(), 2);
    assert_eq!(
        (
            j.launches[0].grid[0],
            j.launches[1].grid[0],
            j.launches[1].shared_bytes
        ),
        (16, 1, 128)
    );
    let both = two_step.replace(
        "name = \"two_step\"",
        "name = \"two_step\"\nkernel = \"scale\"",
    );
    let e = suite::load(&write_suite(d.path(), &both, CU))
        .unwrap_err()
        .to_string();
    assert!(e.contains("both `kernel` and `launches`"), "{e}");
}

#[test]
fn the_headline_suites_hold_every_seed_lesson() {
    let found = suite::discover(&[kernels_dir()]);
    let variants = |name: &str| -> Vec<suite::JobSpec> {
        suite::load(&found[name])
            .unwrap_or_else(|e| panic!("{name}: {e}"))
            .jobs
    };
    let has = |jobs: &[suite::JobSpec], names: &[&str]| {
        for n in names {
            assert!(
                jobs.iter().any(|j| j.key.variant == *n),
                "missing variant {n}"
            );
        }
    };

    let reduction = variants("reduction");
    has(
        &reduction,
        &[
            "neighbored",
            "neighbored_less",
            "interleaved",
            "unrolled",
            "warp_unrolled",
            "complete_unrolled",
            "smem",
            "smem_shuffle",
            "best",
            "best_f32",
        ],
    );
    for j in &reduction {
        // Each block writes one partial: the check must add exactly as many as the grid has blocks.
        let CorrectnessSpec::Sum {
            count, tolerance, ..
        } = j.correctness
        else {
            panic!("{}: not a sum check", j.id())
        };
        assert_eq!(
            count,
            j.launches[0]
                .grid
                .iter()
                .map(|&g| g as u64)
                .product::<u64>(),
            "{}",
            j.id()
        );
        // Exact for both types: the float variants read whole numbers, whose float sums are exact.
        assert_eq!(tolerance, 0.0, "{}", j.id());
    }

    let shared = variants("shared-memory");
    has(
        &shared,
        &[
            "row_write_row_read",
            "row_write_col_read",
            "col_write_row_read",
            "dyn_row_write_col_read",
            "row_write_col_read_pad",
            "dyn_row_write_col_read_pad",
            "row_write_col_read_swizzle",
            "rect_row_write_col_read",
            "rect_pad_unroll2",
            "transpose_fast",
        ],
    );
    assert!(shared.iter().any(|j| j.key.group == "NX=8192,NY=8192"));
    assert!(
        shared
            .iter()
            .filter(|j| j.key.variant.starts_with("dyn_"))
            .all(|j| j.launches[0].shared_bytes > 0)
    );

    let global = variants("global-memory");
    has(
        &global,
        &[
            "misaligned_read",
            "misaligned_read_l2",
            "misaligned_write",
            "strided_read",
            "aos",
            "soa",
            "aos_sum_x",
            "soa_sum_x",
        ],
    );
    let offsets: Vec<i64> = global
        .iter()
        .filter(|j| j.key.variant == "misaligned_read")
        .map(|j| j.key.variant_params["OFFSET"])
        .collect();
    assert_eq!(offsets.first(), Some(&0));
    assert_eq!(offsets.last(), Some(&32));
    for j in global.iter().filter(|j| j.key.variant == "misaligned_read") {
        assert!(
            matches!(j.correctness, CorrectnessSpec::Copy { map, .. } if map.input_offset as i64 == j.key.variant_params["OFFSET"]),
            "{}",
            j.id()
        );
    }

    let divergence = variants("warp-divergence");
    for v in ["divergent", "warp_aligned", "seed_divergent"] {
        let g = format!("{v}_G");
        let (plain, debug) = (
            divergence.iter().find(|j| j.key.variant == v).unwrap(),
            divergence.iter().find(|j| j.key.variant == g).unwrap(),
        );
        assert!(
            !plain.program.options.contains(&"-G".to_string())
                && debug.program.options.contains(&"-G".to_string()),
            "{v}"
        );
    }

    let probes = variants("nvprof-probes");
    has(
        &probes,
        &[
            "copy_row",
            "copy_column",
            "aos",
            "soa",
            "misaligned_read",
            "smem_column_read",
            "smem_padded_column_read",
            "divergent_branch_G",
            "warp_unrolled_reduction",
        ],
    );
}

const MM_CU: &str = "extern \"C\" __global__ void mm(int M, int N, int K, const float* A, const float* B, float* C) {}\n";
const MM: &str = r#"
[suite]
name = "mine"
source = "k.cu"
flops = "2 * S * S * S"
bytes = "16 * S * S"
bound = "cublas"
check = { op = "matmul", a = "A", b = "B", output = "C", m = "S", n = "S", k = "S", beta = "0.5" }
[axes]
S = [64, 100]
[[buffers]]
name = "A"
type = "f32"
len = "S * S"
init = "random"
[[buffers]]
name = "B"
type = "f32"
len = "S * S"
init = "random"
[[buffers]]
name = "C"
type = "f32"
len = "S * S"
init = "random"
[[variants]]
name = "mine"
kernel = "mm"
block = ["16", "16"]
grid = ["ceil_div(S, 16)", "ceil_div(S, 16)"]
args = ["S", "S", "S", "A", "B", "C"]
"#;

#[test]
fn a_matmul_check_and_a_cublas_bound_resolve_at_each_shape() {
    let d = tempfile::tempdir().unwrap();
    let s = suite::load(&write_suite(d.path(), MM, MM_CU)).unwrap();
    let j = s.jobs.iter().find(|j| j.key.group == "S=100").unwrap();
    let CorrectnessSpec::Matmul {
        a: 0,
        b: 1,
        output: 2,
        shape,
        tolerance,
        ..
    } = j.correctness
    else {
        panic!("{:?}", j.correctness)
    };
    assert_eq!(
        (
            shape.m,
            shape.n,
            shape.k,
            shape.alpha,
            shape.beta,
            tolerance
        ),
        (100, 100, 100, 1.0, 0.5, 0.0)
    );
    assert_eq!(j.work.flops, Some(2e6));
    assert!(
        matches!(j.bound, suite::BoundSpec::Cublas { shape: s, elem: suite::ElemType::F32, a_elem: None, b_elem: None, tf32: false, .. } if s == shape)
    );
    assert_eq!(j.bound.name(), "cuBLAS SGEMM");
    // The built-in suites that declare it resolve the same way.
    let mm = suite::load(&kernels_dir().join("matmul/suite.toml")).unwrap();
    assert!(
        mm.jobs
            .iter()
            .all(|j| matches!(j.bound, suite::BoundSpec::Cublas { .. }) && j.work.flops.is_some())
    );
    let gemv = suite::load(&kernels_dir().join("gemv/suite.toml")).unwrap();
    assert!(gemv.jobs.iter().any(|j| j.bound.name() == "cuBLAS SGEMV"
        && matches!(j.correctness, CorrectnessSpec::Matmul { shape, .. } if shape.trans_a)));
}

#[test]
fn bounds_and_matmul_checks_that_cannot_work_are_named_with_their_fix() {
    let e = error_of(
        &MM.replace("bound = \"cublas\"", "bound = \"variant:nope\""),
        MM_CU,
    );
    assert!(
        e.contains("bound names variant `nope`") && e.contains("name one of: mine"),
        "{e}"
    );
    let e = error_of(&MM.replace("bound = \"cublas\"", "bound = \"cuda\""), MM_CU);
    assert!(
        e.contains("unknown bound `cuda`") && e.contains("variant:NAME"),
        "{e}"
    );
    let e = error_of(
        &MM.replace(", beta = \"0.5\" }", " }")
            .replace("check = { op = \"matmul\"", "check = { op = \"none\" }\n#"),
        MM_CU,
    );
    assert!(
        e.contains("bound = \"cublas\" measures cuBLAS at the shape of a matmul check"),
        "{e}"
    );
    let e = error_of(&MM.replace("m = \"S\"", "m = \"2 * S\""), MM_CU);
    assert!(e.contains("fewer than m * k"), "{e}");
    // Dimensions whose product overflows are an error too, not a wrapped number.
    let e = error_of(
        &MM.replace("m = \"S\"", "m = \"2^62\"")
            .replace("k = \"S\"", "k = \"2^62\""),
        MM_CU,
    );
    assert!(
        e.contains("fewer than m * k") || e.contains("check m"),
        "{e}"
    );
    let e = error_of(
        &MM.replace(
            "name = \"C\"\ntype = \"f32\"\nlen = \"S * S\"\ninit = \"random\"",
            "name = \"C\"\ntype = \"f32\"\nlen = \"S * S\"\ninit = \"poison\"",
        ),
        MM_CU,
    );
    assert!(
        e.contains("beta = 0.5 reads the output's initial values"),
        "{e}"
    );
    let e = error_of(&MM.replace("a = \"A\", ", ""), MM_CU);
    assert!(e.contains("the check has no `a` buffer"), "{e}");
    assert!(
        suite::load(&write_suite(
            tempfile::tempdir().unwrap().path(),
            &MM.replace("bound = \"cublas\"", "bound = \"variant:mine\""),
            MM_CU
        ))
        .is_ok()
    );
}

#[test]
fn a_sweep_that_repeats_a_value_is_an_error_not_a_lost_job() {
    let e = error_of(&GOOD.replace("N = [1000, 4096]", "N = [1000, 1000]"), CU);
    assert!(
        e.contains("appears twice") && e.contains("sweep axis repeats a value"),
        "{e}"
    );
}

/// The occupancy suite's sweeps (seed 002 §22-24): block sizes, dynamic shared memory, chains per
/// thread, register caps by option and by launch bounds; every job copy-checked, every grid
/// covering N with its chains, every chain's index mask a power of two at or above N.
#[test]
fn the_occupancy_suite_sweeps_every_limit_and_checks_every_job() {
    let s = suite::load(&kernels_dir().join("occupancy/suite.toml")).unwrap();
    let jobs = &s.jobs;
    let values = |variant: &str, param: &str| -> Vec<i64> {
        jobs.iter()
            .filter(|j| j.key.variant == variant)
            .map(|j| j.key.variant_params[param])
            .collect()
    };
    assert_eq!(values("block_size", "BLOCK"), [32, 64, 128, 256, 512, 1024]);
    assert_eq!(values("dynamic_smem", "SMEM_KB"), [0, 32, 48, 64, 100, 200]);
    assert_eq!(values("launch_bounds", "MIN_BLOCKS"), [1, 6, 8]);
    assert_eq!(jobs.iter().filter(|j| j.key.variant == "chains").count(), 9);
    for j in jobs {
        let n = j.key.group_params["N"] as u64;
        assert!(
            matches!(j.correctness, CorrectnessSpec::Copy { .. }),
            "{}: not copy-checked",
            j.id()
        );
        let l = &j.launches[0];
        let chains = j
            .program
            .options
            .iter()
            .find_map(|o| o.strip_prefix("-DCHAINS="))
            .unwrap_or_else(|| panic!("{}: no CHAINS define", j.id()))
            .parse::<u64>()
            .unwrap();
        assert!(
            l.grid[0] as u64 * l.block[0] as u64 * chains >= n,
            "{}: the grid misses elements",
            j.id()
        );
        let suite::ArgSpec::U32(mask) = l.args[4] else {
            panic!("{}: the mask is not a u32", j.id())
        };
        assert!(
            (mask as u64 + 1).is_power_of_two() && mask as u64 + 1 >= n,
            "{}: mask {mask}",
            j.id()
        );
        let suite::ArgSpec::U32(step) = l.args[5] else {
            panic!("{}: the step is not a u32", j.id())
        };
        assert_eq!(
            step % 32,
            0,
            "{}: a hop must start a warp on a 128-byte line",
            j.id()
        );
        assert_eq!(
            l.shared_bytes as i64,
            j.key.variant_params.get("SMEM_KB").copied().unwrap_or(0) * 1024,
            "{}",
            j.id()
        );
    }
    for (variant, cap) in [
        ("maxrregcount_40", "40"),
        ("maxrregcount_32", "32"),
        ("maxrregcount_24", "24"),
    ] {
        let j = jobs.iter().find(|j| j.key.variant == variant).unwrap();
        assert!(
            j.program.options.contains(&format!("--maxrregcount={cap}"))
                && j.program.options.contains(&"-DCHAINS=8".to_string()),
            "{:?}",
            j.program.options
        );
        assert!(
            gpu_lab::build::caps_registers(&j.program.options),
            "{variant}: its cap must reach the code (NVRTC's cubin)"
        );
    }
    let bounded: Vec<&str> = jobs
        .iter()
        .filter(|j| j.key.variant == "launch_bounds")
        .map(|j| j.launches[0].kernel.as_str())
        .collect();
    assert_eq!(
        bounded,
        [
            "occ::chase_bounded<256, 1>",
            "occ::chase_bounded<256, 6>",
            "occ::chase_bounded<256, 8>"
        ]
    );
    assert!(
        jobs.iter()
            .filter(|j| !j.key.variant.starts_with("maxrregcount"))
            .all(|j| !gpu_lab::build::caps_registers(&j.program.options))
    );
    assert_eq!(s.manifest.suite.metric_set.as_deref(), Some("occupancy"));
}

#[test]
fn the_scan_suite_adds_a_large_size_and_one_launch_lookbacks_without_losing_a_measured_job() {
    let s = suite::load(&kernels_dir().join("scan/suite.toml")).unwrap();
    // Every job of the committed H100 run is still there, by id (their variants are unchanged).
    let run = kernels_dir().join("../tests/fixtures/runs/20261122T193345Z-scan-h100-80gb-hbm3");
    let measured: Vec<String> = crate::common::results_text(&run)
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter(|v| v["kind"] == "job")
        .map(|v| v["id"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(measured.len(), 24);
    for id in &measured {
        assert!(
            s.jobs.iter().any(|j| j.id() == id),
            "the measured job {id} is gone"
        );
    }
    let groups: std::collections::BTreeSet<&str> =
        s.jobs.iter().map(|j| j.key.group.as_str()).collect();
    assert_eq!(
        groups,
        ["N=10000019", "N=134217728", "N=16777216"]
            .into_iter()
            .collect()
    );
    // Every job, old and new, is checked as a full scan of N elements.
    for j in &s.jobs {
        let n = j.key.group_params["N"] as u64;
        assert!(
            matches!(j.correctness, CorrectnessSpec::Scan { count, .. } if count == n),
            "{}: {:?}",
            j.id(),
            j.correctness
        );
    }
    let onepass: Vec<_> = s
        .jobs
        .iter()
        .filter(|j| j.key.variant == "lookback_onepass" && j.key.group == "N=134217728")
        .collect();
    // Its best tile only since issue 30 part 5b (the other three stay in the committed reports).
    assert_eq!(onepass.len(), 1);
    let ticket = s
        .manifest
        .buffers
        .iter()
        .position(|b| b.name == "ticket")
        .unwrap();
    for j in &onepass {
        // One launch, no zeroing pass; the ticket is the fourth argument and starts at zero.
        assert_eq!(j.launches.len(), 1, "{}", j.id());
        assert_eq!(j.launches[0].kernel, "scan_lookback_onepass");
        assert_eq!(j.launches[0].args[3], suite::ArgSpec::Buffer(ticket));
        assert_eq!(j.buffers[ticket].init, suite::Init::Zero);
        assert_eq!(j.buffers[ticket].elem, suite::ElemType::U64);
    }
    // Static shared memory of the staged look-backs stays under the 48 KiB a kernel may declare:
    // the tile as int4, plus one int4 in eight of padding (onepass), plus the small arrays.
    for j in s
        .jobs
        .iter()
        .filter(|j| j.key.variant == "lookback_smem" || j.key.variant == "lookback_onepass")
    {
        let (block, items) = (
            j.key.variant_params["BLOCK"] as u64,
            j.key.variant_params["ITEMS"] as u64,
        );
        let stage = block * items * 4 * 9 / 8;
        assert!(
            stage + 4 * (block / 32 + 1) + 16 <= 48 * 1024,
            "{}: {stage} bytes of staging",
            j.id()
        );
        assert_eq!(items % 4, 0, "{}: the kernels load int4", j.id());
        let grid = j.launches.last().unwrap().grid[0] as u64;
        assert_eq!(
            grid,
            (j.key.group_params["N"] as u64).div_ceil(block * items),
            "{}",
            j.id()
        );
    }
    // The tile status words cover every tile of every look-back, at every size.
    for j in s
        .jobs
        .iter()
        .filter(|j| j.key.variant.starts_with("lookback"))
    {
        let status = j.buffers.iter().find(|b| b.name == "status").unwrap();
        assert!(
            status.len >= j.launches.last().unwrap().grid[0] as u64,
            "{}",
            j.id()
        );
    }
}

#[test]
fn the_warp_specialised_scan_launches_its_consumers_and_two_role_warps_with_every_stage_in_shared_memory()
 {
    let s = suite::load(&kernels_dir().join("scan/suite.toml")).unwrap();
    let jobs: Vec<_> = s
        .jobs
        .iter()
        .filter(|j| j.key.variant == "lookback_specialized")
        .collect();
    assert!(!jobs.is_empty());
    let (status, counter) = (
        s.manifest
            .buffers
            .iter()
            .position(|b| b.name == "status")
            .unwrap(),
        s.manifest
            .buffers
            .iter()
            .position(|b| b.name == "counter")
            .unwrap(),
    );
    for j in jobs {
        let p = |k: &str| j.key.variant_params[k] as u64;
        let (block, items, stages, grid) = (p("BLOCK"), p("ITEMS"), p("STAGES"), p("GRID"));
        let n = j.key.group_params["N"] as u64;
        // A zeroing launch over every tile's status word and the counter, then the persistent kernel.
        assert_eq!(j.launches.len(), 2, "{}", j.id());
        let (init, scan) = (&j.launches[0], &j.launches[1]);
        assert_eq!(init.kernel, "lookback_init");
        assert_eq!(
            init.grid[0] as u64 * 256,
            n.div_ceil(block * items).div_ceil(256) * 256,
            "{}",
            j.id()
        );
        assert_eq!(scan.kernel, "scan_lookback_specialized");
        assert_eq!(scan.args[2], suite::ArgSpec::Buffer(status));
        assert_eq!(scan.args[3], suite::ArgSpec::Buffer(counter));
        assert!(
            j.buffers[status].len >= n.div_ceil(block * items),
            "{}",
            j.id()
        );
        // BLOCK consumer threads (whole warps), then the producer and the aggregator warp.
        assert_eq!(block % 32, 0, "{}", j.id());
        assert_eq!(scan.block[0] as u64, block + 64, "{}", j.id());
        // The stages are dynamic shared memory, within the 227 KB a block may opt into.
        assert_eq!(
            scan.shared_bytes as u64,
            stages * block * items * 4,
            "{}",
            j.id()
        );
        assert!(scan.shared_bytes <= 227 * 1024, "{}", j.id());
        // The unpadded stage (a bulk copy cannot pad) is read blocked without bank conflicts
        // only when a thread's int4 count is odd.
        assert_eq!(items % 8, 4, "{}: ITEMS / 4 must be odd", j.id());
        // GRID: whole waves of 132 SMs, no more blocks an SM than shared memory holds (228 KB,
        // 1 KB of it reserved a block, plus the kernel's small static arrays).
        assert_eq!(grid % 132, 0, "{}", j.id());
        let per_sm = 228 * 1024 / (scan.shared_bytes as u64 + 1024 + 512);
        assert!(
            grid / 132 <= per_sm,
            "{}: {} blocks an SM",
            j.id(),
            grid / 132
        );
        assert_eq!(scan.grid[0] as u64, grid, "{}", j.id());
    }
}

/// 1-based line of the first line of `text` that contains `needle`.
fn line_of(text: &str, needle: &str) -> usize {
    text.lines().position(|l| l.contains(needle)).unwrap() + 1
}

#[test]
fn relocatable_device_code_is_a_manifest_field_and_its_misuse_is_named_with_the_fix() {
    // rdc = true in [suite] reaches every variant; a variant may turn it off; pending_launches is
    // an expression evaluated per job.
    let toml = GOOD
        .replace("bytes = \"8 * N\"", "bytes = \"8 * N\"\nrdc = true")
        .replace(
            "params = { RB = 256 }",
            "params = { RB = 256 }\npending_launches = \"ceil_div(N, RB)\"",
        )
        .replace("name = \"swept\"", "name = \"swept\"\nrdc = false");
    let d = tempfile::tempdir().unwrap();
    let s = suite::load(&write_suite(d.path(), &toml, CU)).unwrap();
    let job = |id: &str| s.jobs.iter().find(|j| j.id() == id).unwrap();
    let r = job("ref[RB=256] @ N=1000");
    assert!(r.program.rdc);
    assert_eq!(r.pending_launches, Some(4));
    assert_eq!(job("ref[RB=256] @ N=4096").pending_launches, Some(16));
    let swept = job("swept[B=64] @ N=4096");
    assert!(!swept.program.rdc && swept.pending_launches.is_none());
    // The reference is built as its own variant says: relocatable.
    assert!(swept.reference.as_ref().unwrap().program.rdc);
    // Stored job specs of programs without rdc read and write as before (no new key).
    let json = serde_json::to_string(&swept.program).unwrap();
    assert!(!json.contains("rdc"), "{json}");
    assert!(
        serde_json::to_string(&r.program)
            .unwrap()
            .contains("\"rdc\":true")
    );

    // An rdc or device-link option is refused where it is written, with the field to use instead.
    for option in [
        "-rdc=true",
        "--relocatable-device-code=true",
        "-dc",
        "--device-c",
        "-dlink",
        "--device-link",
        "-lcudadevrt",
        "--cudadevrt=static",
        "-rdc",
    ] {
        let bad = GOOD.replace(
            "defines = { WIDTH = \"B * 2\" }",
            &format!("defines = {{ WIDTH = \"B * 2\" }}\noptions = [\"{option}\"]"),
        );
        let e = error_of(&bad, CU);
        let line = line_of(&bad, "options = [");
        assert!(
            e.contains(&format!("suite.toml:{line}:"))
                && e.contains(&format!("option `{option}`"))
                && e.contains("fix: remove the option and set rdc = true"),
            "{option}: {e}"
        );
    }
    let bad = GOOD.replace(
        "bytes = \"8 * N\"",
        "bytes = \"8 * N\"\noptions = [\"-O3\", \"-dc\"]",
    );
    let e = error_of(&bad, CU);
    assert!(
        e.contains(&format!("suite.toml:{}:", line_of(&bad, "options = [")))
            && e.contains("option `-dc`"),
        "{e}"
    );

    // pending_launches only means something for rdc programs, and must be a usable count.
    let bad = GOOD.replace(
        "params = { RB = 256 }",
        "params = { RB = 256 }\npending_launches = \"4096\"",
    );
    let e = error_of(&bad, CU);
    assert!(
        e.contains(&format!(
            "suite.toml:{}:",
            line_of(&bad, "pending_launches")
        )) && e.contains("variant `ref` sets pending_launches")
            && e.contains("fix: set rdc = true"),
        "{e}"
    );
    let bad = toml.replace("ceil_div(N, RB)\"\n", "0\"\n");
    let e = error_of(&bad, CU);
    assert!(
        e.contains("pending_launches = `0` gives 0, outside 1 to 1048576")
            && e.contains("default is 2048"),
        "{e}"
    );
    let e = error_of(&toml.replace("ceil_div(N, RB)\"\n", "N * N\"\n"), CU);
    assert!(e.contains("gives 16777216, outside 1 to 1048576"), "{e}");
    let e = error_of(
        &toml.replace("ceil_div(N, RB)\"\n", "ceil_div(N, RX)\"\n"),
        CU,
    );
    assert!(
        e.contains("variant `ref`, pending_launches") && e.contains("unknown name `RX`"),
        "{e}"
    );
    let bad = GOOD.replace("bytes = \"8 * N\"", "bytes = \"8 * N\"\nrdc = \"yes\"");
    let e = error_of(&bad, CU);
    assert!(
        e.contains(&format!("suite.toml:{}:", line_of(&bad, "rdc = "))),
        "{e}"
    );
}

#[test]
fn a_noise_threshold_is_set_per_suite_or_variant_and_must_be_a_percentage() {
    // The suite's reaches every variant; a variant's own replaces it.
    let toml = GOOD
        .replace(
            "bytes = \"8 * N\"",
            "bytes = \"8 * N\"\nnoise_threshold = 12.5",
        )
        .replace("name = \"swept\"", "name = \"swept\"\nnoise_threshold = 20");
    let d = tempfile::tempdir().unwrap();
    let s = suite::load(&write_suite(d.path(), &toml, CU)).unwrap();
    let of = |prefix: &str| {
        s.jobs
            .iter()
            .filter(|j| j.id().starts_with(prefix))
            .map(|j| j.noise_threshold_pct)
            .collect::<Vec<_>>()
    };
    assert_eq!(of("ref"), [Some(12.5), Some(12.5)]);
    assert_eq!(of("swept"), [Some(20.0); 4]);
    let plain = suite::load(&write_suite(tempfile::tempdir().unwrap().path(), GOOD, CU)).unwrap();
    assert!(plain.jobs.iter().all(|j| j.noise_threshold_pct.is_none()));
    // Not a percentage: named where it is written, with the fix.
    for value in ["0", "-5", "100", "250", "nan"] {
        let bad = GOOD.replace(
            "name = \"swept\"",
            &format!("name = \"swept\"\nnoise_threshold = {value}"),
        );
        let e = error_of(&bad, CU);
        assert!(
            e.contains(&format!("suite.toml:{}:", line_of(&bad, "noise_threshold")))
                && e.contains("not a percentage above 0 and below 100")
                && e.contains("fix: write the threshold in percent"),
            "{value}: {e}"
        );
    }
    let bad = GOOD.replace(
        "bytes = \"8 * N\"",
        "bytes = \"8 * N\"\nnoise_threshold = \"20%\"",
    );
    let e = error_of(&bad, CU);
    assert!(
        e.contains(&format!("suite.toml:{}:", line_of(&bad, "noise_threshold")))
            && e.contains("cannot evaluate `20%`")
            && e.contains("fix: write a percentage"),
        "{e}"
    );
}

#[test]
fn a_noise_threshold_can_depend_on_the_job_and_zero_leaves_the_command_lines() {
    // One job of a sweep that varies more between runs gets its own threshold; the others none.
    let toml = GOOD.replace(
        "name = \"swept\"",
        "name = \"swept\"\nnoise_threshold = \"if(N == 4096, 30, 0)\"",
    );
    let d = tempfile::tempdir().unwrap();
    let s = suite::load(&write_suite(d.path(), &toml, CU)).unwrap();
    let swept: Vec<_> = s
        .jobs
        .iter()
        .filter(|j| j.id().starts_with("swept"))
        .map(|j| (j.key.group.clone(), j.noise_threshold_pct))
        .collect();
    assert!(
        swept
            .iter()
            .all(|(group, pct)| *pct == if group == "N=4096" { Some(30.0) } else { None })
            && swept.iter().any(|(_, pct)| pct.is_some())
            && swept.iter().any(|(_, pct)| pct.is_none()),
        "{swept:?}"
    );
    // An expression that names no axis, or gives no percentage, is named where it is written.
    let bad = GOOD.replace(
        "name = \"swept\"",
        "name = \"swept\"\nnoise_threshold = \"if(CHILDREN == 32, 30, 0)\"",
    );
    let e = error_of(&bad, CU);
    assert!(
        e.contains(&format!("suite.toml:{}:", line_of(&bad, "noise_threshold")))
            && e.contains("unknown name `CHILDREN`"),
        "{e}"
    );
    let bad = GOOD.replace(
        "name = \"swept\"",
        "name = \"swept\"\nnoise_threshold = \"if(N == 4096, N, 0)\"",
    );
    let e = error_of(&bad, CU);
    assert!(
        e.contains(
            "variant `swept`: noise_threshold = `if(N == 4096, N, 0)` gives 4096 for the job with"
        ) && e.contains("N=4096")
            && e.contains("is not a percentage above 0 and below 100"),
        "{e}"
    );
    // Neither a number nor a string: what is expected, not serde's name for the type.
    let bad = GOOD.replace(
        "name = \"swept\"",
        "name = \"swept\"\nnoise_threshold = true",
    );
    let e = error_of(&bad, CU);
    assert!(
        e.contains("a percentage (noise_threshold = 20) or an expression string"),
        "{e}"
    );
}

#[test]
fn the_dynamic_parallelism_suite_builds_its_launching_kernels_as_rdc_and_checks_every_variant() {
    use suite::Compiler;
    let s = suite::load(&kernels_dir().join("dynamic-parallelism/suite.toml")).unwrap();
    let variants: std::collections::BTreeSet<&str> =
        s.jobs.iter().map(|j| j.key.variant.as_str()).collect();
    for v in [
        "copy_flat",
        "copy_children",
        "recursive_seed",
        "recursive_nested",
        "recursive_nested_nvrtc",
        "recursive_cutoff",
        "flat_interleaved",
        "two_pass_tail",
        "two_pass_host",
        "flat_best",
    ] {
        assert!(variants.contains(v), "missing variant {v}");
    }
    assert_eq!(s.jobs.len(), 2 * 12);
    for j in &s.jobs {
        let n = j.key.group_params["N"] as u64;
        let from_reduction = j.program.source_path.ends_with("reduction/reduction.cu");
        // The launching kernels are relocatable device code built by nvcc (one by NVRTC, the
        // other route); the reduction suite's kernels are built as that suite builds them.
        match j.key.variant.as_str() {
            "recursive_nested_nvrtc" => {
                assert!(j.program.rdc && j.program.compiler == Compiler::Nvrtc)
            }
            _ if from_reduction => assert!(
                !j.program.rdc && j.program.compiler == Compiler::Nvrtc,
                "{}",
                j.id()
            ),
            _ => assert!(
                j.program.rdc && j.program.compiler == Compiler::Nvcc,
                "{}",
                j.id()
            ),
        }
        // Every variant is checked with a built-in op: copies bit for bit, sums exactly.
        let grid = j.launches[0].grid[0] as u64;
        match (&j.correctness, j.key.variant.as_str()) {
            (CorrectnessSpec::Copy { .. }, v) => assert!(v.starts_with("copy_"), "{}", j.id()),
            (
                CorrectnessSpec::Sum {
                    count: 1,
                    tolerance,
                    ..
                },
                "two_pass_tail" | "two_pass_host",
            ) => assert_eq!(*tolerance, 0.0),
            (
                CorrectnessSpec::Sum {
                    count, tolerance, ..
                },
                _,
            ) => {
                // One partial per block of the host's grid, every one of them added.
                assert_eq!((*count, *tolerance), (grid, 0.0), "{}", j.id());
            }
            (other, _) => panic!("{}: {other:?}", j.id()),
        }
        // The seed's recursive kernels need whole blocks.
        if j.key.variant.starts_with("recursive") {
            let block = j.key.variant_params["BLOCK"] as u64;
            assert_eq!(grid * block, n, "{}", j.id());
        }
    }
    let job = |id: &str| {
        s.jobs
            .iter()
            .find(|j| j.id() == id)
            .unwrap_or_else(|| panic!("no job {id}"))
    };
    // Every child can wait to start at once: one launch slot each, never below the runtime's 2048;
    // the seed's chains 16 slots a block.
    assert_eq!(
        job("copy_children[CHILDREN=32768] @ N=16777216").pending_launches,
        Some(32768)
    );
    assert_eq!(
        job("copy_children[CHILDREN=32] @ N=16777216").pending_launches,
        Some(2048)
    );
    assert_eq!(
        job("recursive_seed[BLOCK=512] @ N=16777216").pending_launches,
        Some(16 * 32768)
    );
    assert_eq!(
        job("recursive_seed[BLOCK=512] @ N=1048576").pending_launches,
        Some(16 * 2048)
    );
    assert_eq!(
        job("recursive_nested[BLOCK=512] @ N=16777216").pending_launches,
        None
    );
    // The host variant runs the tail variant's two kernels itself.
    let host = job("two_pass_host[BLOCK=512,GRID=1024] @ N=1048576");
    assert_eq!(
        host.launches
            .iter()
            .map(|l| l.kernel.as_str())
            .collect::<Vec<_>>(),
        ["reduce_grid", "sum_partials"]
    );
    assert_eq!(
        job("two_pass_tail[BLOCK=512,GRID=1024] @ N=1048576")
            .launches
            .len(),
        1
    );
    let children = job("copy_children[CHILDREN=1024] @ N=16777216");
    assert_eq!(children.launches[0].args[3], suite::ArgSpec::I64(16384));
}

/// The stream of each step of a host program, by name (`NULL` for the NULL stream).
fn step_streams(j: &suite::JobSpec) -> Vec<String> {
    let p = j
        .steps
        .as_ref()
        .unwrap_or_else(|| panic!("{}: not a host program", j.id()));
    p.steps.iter().map(|s| p.stream_name(s.stream)).collect()
}

/// What each step of a host program does, in the manifest's words (`h2d`, `kernel`, `sync`, ...).
fn step_actions(j: &suite::JobSpec) -> Vec<&'static str> {
    use suite::{Action, Direction};
    j.steps
        .as_ref()
        .unwrap()
        .steps
        .iter()
        .map(|s| match &s.action {
            Action::Copy {
                direction: Direction::H2d,
                ..
            } => "h2d",
            Action::Copy {
                direction: Direction::D2h,
                ..
            } => "d2h",
            Action::Copy {
                direction: Direction::D2d,
                ..
            } => "d2d",
            Action::Kernel { .. } => "kernel",
            Action::Memset { .. } => "memset",
            Action::Prefetch { .. } => "prefetch",
            Action::Record { .. } => "record",
            Action::Wait { .. } => "wait",
            Action::Sync { .. } => "sync",
        })
        .collect()
}

#[test]
fn the_transfers_suite_runs_c_equals_a_plus_b_through_every_kind_of_host_memory_checked_on_the_host()
 {
    use suite::{Action, Location, Memory};
    let s = suite::load(&kernels_dir().join("transfers/suite.toml")).unwrap();
    let variants = [
        "pageable",
        "pinned",
        "pinned_async",
        "zero_copy",
        "managed",
        "managed_prefetch",
    ];
    assert_eq!(s.jobs.len(), variants.len() * 4);
    let sizes: std::collections::BTreeSet<i64> =
        s.jobs.iter().map(|j| j.key.group_params["N"]).collect();
    assert_eq!(
        sizes.into_iter().collect::<Vec<_>>(),
        [1 << 20, 1 << 22, 1 << 24, 1 << 26]
    );
    for j in &s.jobs {
        let n = j.key.group_params["N"] as u64;
        assert!(variants.contains(&j.key.variant.as_str()), "{}", j.id());
        // Checked on the buffer the host reads, where the host wrote a and b.
        let CorrectnessSpec::Add {
            a,
            b,
            output,
            tolerance,
        } = j.correctness
        else {
            panic!("{}: not an add check", j.id())
        };
        assert_eq!(tolerance, 0.0, "{}: float adds are exact", j.id());
        let memory = |i: usize| j.buffers[i].memory;
        assert!(
            [a, b, output]
                .iter()
                .all(|&i| memory(i) != Memory::Device && j.buffers[i].len == n),
            "{}",
            j.id()
        );
        assert_eq!(j.work.bytes, Some(3.0 * n as f64 * 4.0), "{}", j.id());
        // Zero-copy and managed kernels reach host memory without a copy: they cross the link too.
        assert!(j.crosses_host_link(), "{}", j.id());
        // One kernel over all of N.
        assert_eq!(j.launches.len(), 1);
        let l = &j.launches[0];
        assert_eq!(l.kernel, "sum_arrays");
        assert!(l.grid[0] as u64 * l.block[0] as u64 >= n, "{}", j.id());
        assert_eq!(l.args[3], suite::ArgSpec::I64(n as i64));
        let kind = |m: Memory| move |i: &suite::ArgSpec| matches!(i, suite::ArgSpec::Buffer(k) if j.buffers[*k].memory == m);
        let (actions, streams) = (step_actions(j), step_streams(j));
        match j.key.variant.as_str() {
            "pageable" | "pinned" => {
                let host = if j.key.variant == "pageable" {
                    Memory::Pageable
                } else {
                    Memory::Pinned
                };
                assert_eq!(memory(a), host);
                assert_eq!(actions, ["h2d", "h2d", "kernel", "d2h"]);
                assert!(streams.iter().all(|s| s == "NULL"));
                assert!(l.args[..3].iter().all(kind(Memory::Device)));
                for step in &j.steps.as_ref().unwrap().steps {
                    if let Action::Copy {
                        from,
                        to,
                        asynchronous,
                        ..
                    } = step.action
                    {
                        assert!(!asynchronous && from.len == n && to.len == n && from.offset == 0);
                    }
                }
            }
            "pinned_async" => {
                assert_eq!(memory(a), Memory::Pinned);
                assert_eq!(actions, ["h2d", "h2d", "kernel", "d2h", "sync"]);
                assert!(streams.iter().all(|s| s == "s"), "{streams:?}");
                let p = j.steps.as_ref().unwrap();
                assert!(p.streams[0].non_blocking);
                assert!(p.steps.iter().all(|s| !matches!(
                    s.action,
                    Action::Copy {
                        asynchronous: false,
                        ..
                    }
                )));
            }
            "zero_copy" => {
                assert_eq!(actions, ["kernel", "sync"]);
                assert!(
                    l.args[..3].iter().all(kind(Memory::Mapped)),
                    "the kernel reads and writes host memory"
                );
            }
            "managed" => {
                assert_eq!(actions, ["kernel", "sync"]);
                assert!(l.args[..3].iter().all(kind(Memory::Managed)));
            }
            "managed_prefetch" => {
                assert_eq!(
                    actions,
                    [
                        "prefetch", "prefetch", "prefetch", "kernel", "prefetch", "sync"
                    ]
                );
                let p = j.steps.as_ref().unwrap();
                let to: Vec<Location> = p
                    .steps
                    .iter()
                    .filter_map(|s| match s.action {
                        Action::Prefetch { to, region } => {
                            assert_eq!(region.len, n);
                            Some(to)
                        }
                        _ => None,
                    })
                    .collect();
                assert_eq!(
                    to,
                    [
                        Location::Device,
                        Location::Device,
                        Location::Device,
                        Location::Host
                    ]
                );
                assert!(l.args[..3].iter().all(kind(Memory::Managed)));
            }
            other => panic!("unexpected variant {other}"),
        }
    }
}

#[test]
fn the_streams_suite_splits_the_sum_array_program_over_streams_and_reproduces_the_null_stream_and_event_lessons()
 {
    use suite::{Action, ArgSpec};
    let s = suite::load(&kernels_dir().join("streams/suite.toml")).unwrap();
    // serial, depth_first x 4 stream counts, the four §64 cases and §67's wait.
    assert_eq!(s.jobs.len(), 1 + 4 + 4 + 1);
    let job = |id: &str| {
        s.jobs.iter().find(|j| j.id() == id).unwrap_or_else(|| {
            panic!(
                "no job {id}: {:?}",
                s.jobs.iter().map(|j| j.id()).collect::<Vec<_>>()
            )
        })
    };
    for j in &s.jobs {
        assert!(
            matches!(j.correctness, CorrectnessSpec::Add { tolerance, .. } if tolerance == 0.0),
            "{}: every variant is add-checked",
            j.id()
        );
        assert!(
            j.steps.is_some(),
            "{}: every variant is a host program",
            j.id()
        );
    }
    let n: u64 = 1 << 25;
    let serial = job("serial @ N=33554432");
    assert_eq!(step_actions(serial), ["h2d", "h2d", "kernel", "d2h"]);
    assert!(step_streams(serial).iter().all(|s| s == "NULL"));

    // Depth first: chunk k's four steps in turn on s[k % K], then one sync; 8 chunks of N/8.
    for k in [1usize, 2, 4, 8] {
        let j = job(&format!("depth_first[K={k}] @ N=33554432"));
        let p = j.steps.as_ref().unwrap();
        assert_eq!(p.streams.len(), k);
        assert!(p.streams.iter().all(|s| s.non_blocking), "{}", j.id());
        assert_eq!(p.steps.len(), 8 * 4 + 1);
        let mut want_actions = ["h2d", "h2d", "kernel", "d2h"].repeat(8);
        want_actions.push("sync");
        assert_eq!(step_actions(j), want_actions);
        let mut want_streams: Vec<String> = (0..8)
            .flat_map(|c| std::iter::repeat_n(format!("s[{}]", c % k), 4))
            .collect();
        want_streams.push("NULL".into());
        assert_eq!(step_streams(j), want_streams);
        assert_eq!(j.launches.len(), 8);
        let m = n / 8;
        for (c, l) in j.launches.iter().enumerate() {
            let at = c as u64 * m;
            assert_eq!(
                l.args[..3],
                [
                    ArgSpec::BufferAt(3, at),
                    ArgSpec::BufferAt(4, at),
                    ArgSpec::BufferAt(5, at)
                ],
                "{} chunk {c}",
                j.id()
            );
            assert_eq!(l.args[3], ArgSpec::I32(m as i32));
            assert!(l.grid[0] as u64 * l.block[0] as u64 >= m);
        }
        for step in &p.steps[..32] {
            if let Action::Copy {
                from,
                to,
                asynchronous,
                ..
            } = step.action
            {
                let c = step.chunk.unwrap();
                assert!(
                    asynchronous
                        && from.len == m
                        && to.len == m
                        && from.offset == c * m
                        && to.offset == c * m,
                    "{}: {step:?}",
                    j.id()
                );
            }
        }
    }

    // §64: which stream each of the three launches is on, and which streams are non-blocking.
    let null_cases = [
        (
            "blocking_streams",
            ["stm1", "stm2", "stm3"],
            vec![false, false, false],
        ),
        (
            "null_between_blocking",
            ["stm1", "NULL", "stm3"],
            vec![false, false],
        ),
        (
            "null_between_mixed",
            ["stm1", "NULL", "stm3"],
            vec![false, true],
        ),
        (
            "null_between_nonblocking",
            ["stm1", "NULL", "stm3"],
            vec![true, true],
        ),
    ];
    for (variant, streams, non_blocking) in null_cases {
        let j = job(&format!("{variant} @ N=33554432"));
        let p = j.steps.as_ref().unwrap();
        assert_eq!(
            step_actions(j),
            ["kernel", "kernel", "kernel", "sync"],
            "{variant}"
        );
        assert_eq!(step_streams(j)[..3], streams, "{variant}");
        assert_eq!(
            p.streams.iter().map(|s| s.non_blocking).collect::<Vec<_>>(),
            non_blocking,
            "{variant}"
        );
        // The three kernels add the three thirds of x and y into z, one block each.
        let thirds: Vec<ArgSpec> = j.launches.iter().map(|l| l.args[2]).collect();
        assert_eq!(
            thirds,
            [
                ArgSpec::Buffer(8),
                ArgSpec::BufferAt(8, 32768),
                ArgSpec::BufferAt(8, 65536)
            ],
            "{variant}"
        );
        assert!(
            j.launches
                .iter()
                .all(|l| l.grid == [1, 1, 1] && l.args[4] == ArgSpec::I64(1_000_000))
        );
        // Device buffers only, though the suite declares pinned ones: nothing crosses the host link.
        assert!(!j.crosses_host_link(), "{variant}");
    }

    // §67: stm3 waits on the event stm1 recorded after k1; k2 on stm2 waits for nothing.
    let j = job("event_wait @ N=33554432");
    let p = j.steps.as_ref().unwrap();
    assert_eq!(
        step_actions(j),
        ["kernel", "record", "wait", "kernel", "kernel", "sync"]
    );
    assert_eq!(
        step_streams(j),
        ["stm1", "stm1", "stm3", "stm2", "stm3", "NULL"]
    );
    assert_eq!(p.events, ["event1"]);
    assert_eq!(
        (&p.steps[1].action, &p.steps[2].action),
        (&Action::Record { event: 0 }, &Action::Wait { event: 0 })
    );
    assert_eq!(
        p.steps
            .iter()
            .map(|s| s.label.as_str())
            .filter(|l| l.starts_with('k'))
            .collect::<Vec<_>>(),
        ["k1 (stm1)", "k2 (stm2)", "k3 (stm3)"]
    );
}

#[test]
fn an_add_check_names_each_buffer_it_lacks_and_refuses_short_or_mismatched_ones() {
    const ADD: &str = r#"
[suite]
name = "mine"
source = "k.cu"
[[buffers]]
name = "in"
type = "f32"
len = "64"
init = "random"
[[buffers]]
name = "in2"
type = "f32"
len = "64"
init = "random"
[[buffers]]
name = "out"
type = "f32"
len = "64"
init = "poison"
[[buffers]]
name = "ints"
type = "i32"
len = "64"
init = "random"
[[buffers]]
name = "short"
type = "f32"
len = "32"
init = "random"
[[variants]]
name = "add"
kernel = "scale"
block = ["64"]
grid = ["1"]
args = ["in", "out", "64"]
check = { op = "add", a = "in", b = "in2", output = "out" }
"#;
    let d = tempfile::tempdir().unwrap();
    let s = suite::load(&write_suite(d.path(), ADD, CU)).unwrap();
    assert_eq!(
        s.jobs[0].correctness,
        CorrectnessSpec::Add {
            a: 0,
            b: 1,
            output: 2,
            tolerance: 0.0
        }
    );
    let check_line = line_of(ADD, "check = ");
    for (from, to, says) in [
        ("a = \"in\", ", "", "the check has no `a` buffer"),
        ("b = \"in2\", ", "", "the check has no `b` buffer"),
        (", output = \"out\"", "", "the check has no `output` buffer"),
        (
            "b = \"in2\"",
            "b = \"nope\"",
            "check b `nope` is not a buffer",
        ),
        (
            "b = \"in2\"",
            "b = \"short\"",
            "an add check's b `short` holds 32 elements, fewer than the 64 of output `out`",
        ),
        (
            "b = \"in2\"",
            "b = \"ints\"",
            "an add check's a `in` is f32 and its b `ints` is i32",
        ),
        (
            "a = \"in\", b = \"in2\"",
            "a = \"ints\", b = \"ints\"",
            "an add check's a and b are an integer (i32) and its output `out` is a float (f32)",
        ),
    ] {
        let e = error_of(&ADD.replace(from, to), CU);
        assert!(
            e.contains(&format!("suite.toml:{check_line}:"))
                && e.contains(says)
                && e.contains("fix:"),
            "{says}: {e}"
        );
    }
    // a and b are the check's inputs: they must start with data (the error is at the buffer's init).
    let e = error_of(&ADD.replace("a = \"in\"", "a = \"out\""), CU);
    assert!(
        e.contains(&format!(
            "suite.toml:{}:",
            line_of(ADD, "init = \"poison\"")
        )) && e.contains("check input `out` starts as Poison"),
        "{e}"
    );
    let e = error_of(&ADD.replace("op = \"add\"", "op = \"sub\""), CU);
    assert!(
        e.contains("unknown check op `sub`") && e.contains("\"add\""),
        "{e}"
    );
}
