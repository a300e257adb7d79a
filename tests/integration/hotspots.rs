//! `profile --hotspots`: the flag reaches the profile records of the variants asked for (and only theirs), the report gets its section, a variant that no selected job is refused, all without a GPU through the mock.

use serde_json::Value;

use crate::common::{gpu_lab_with_cache_in, kernels_dir, stdout};

fn profile_records(run_dir: &std::path::Path) -> Vec<Value> {
    std::fs::read_to_string(run_dir.join("results.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|v| v["kind"] == "profile")
        .collect()
}

#[test]
fn hot_spots_are_asked_for_the_named_variants_only_and_a_mock_says_it_has_no_lines() {
    let d = tempfile::tempdir().unwrap();
    let out = gpu_lab_with_cache_in(d.path())
        .env("GPU_LAB_KERNELS", kernels_dir())
        .args(["--mock-gpu", "profile", "--suite", "transpose"])
        .args(["--variant", "naive_column,smem_32", "--hotspots", "smem_32"])
        .args(["--out", "runs", "--quiet"])
        .assert()
        .code(0);
    let run_dir = d.path().join(stdout(&out).trim());
    let records = profile_records(&run_dir);
    assert_eq!(records.len(), 8, "two variants at four shapes");
    for r in &records {
        let job = r["job_id"].as_str().unwrap();
        let hotspots = &r["hotspots"];
        if job.starts_with("smem_32") {
            assert!(
                hotspots["error"]
                    .as_str()
                    .unwrap()
                    .starts_with("MOCK: no ncu ran"),
                "{r}"
            );
            assert_eq!(hotspots["kernels"], Value::Array(vec![]), "{r}");
        } else {
            assert!(hotspots.is_null(), "{r}");
        }
    }
    let report = std::fs::read_to_string(run_dir.join("report.md")).unwrap();
    let section = report.split("## Source hot spots").nth(1).unwrap();
    assert_eq!(
        section.matches("no hot spots: MOCK: no ncu ran").count(),
        4,
        "{section}"
    );
    assert!(!section.contains("naive_column @"), "{section}");
    // The HTML report is the markdown read back: the section is there too.
    let html = std::fs::read_to_string(run_dir.join("report.html")).unwrap();
    assert!(html.contains("Source hot spots"));
}

#[test]
fn hot_spots_alone_mean_every_variant_and_without_the_flag_no_record_has_them() {
    let d = tempfile::tempdir().unwrap();
    let run = |extra: &[&str]| {
        let out = gpu_lab_with_cache_in(d.path())
            .env("GPU_LAB_KERNELS", kernels_dir())
            .args(["--mock-gpu", "profile", "--suite", "transpose"])
            .args(["--variant", "copy_row,naive_row"])
            .args(extra)
            .args(["--out", "runs", "--quiet"])
            .assert()
            .code(0);
        profile_records(&d.path().join(stdout(&out).trim()))
    };
    let every = run(&["--hotspots"]);
    assert!(every.iter().all(|r| r["hotspots"].is_object()), "{every:?}");
    let none = run(&[]);
    assert!(none.iter().all(|r| r["hotspots"].is_null()), "{none:?}");
}

#[test]
fn hot_spots_of_a_variant_no_selected_job_is_are_refused_with_the_fix() {
    let d = tempfile::tempdir().unwrap();
    let err = gpu_lab_with_cache_in(d.path())
        .env("GPU_LAB_KERNELS", kernels_dir())
        .args(["--mock-gpu", "profile", "--suite", "transpose"])
        .args(["--variant", "copy_row", "--hotspots", "smem_32,nope"])
        .args(["--out", "runs", "--quiet"])
        .assert()
        .code(1)
        .get_output()
        .stderr
        .clone();
    let err = String::from_utf8_lossy(&err);
    assert!(
        err.contains("--hotspots names smem_32, nope") && err.contains("fix:"),
        "{err}"
    );
    assert!(!d.path().join("runs").exists(), "nothing ran");
}
