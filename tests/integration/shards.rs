//! Shards that lie or died: a merge of a shard that did not finish is itself unfinished, a copy of one shard relabelled as another is refused, and a tampered shard count or suite name in run.json is refused without a panic or a directory outside --out.

use serde_json::Value;

use crate::common::{gpu_lab_with_cache_in, kernels_dir, stdout};

/// gpu-lab in `dir`, with its cache there and the built-in suites.
fn gpu_lab_in(dir: &std::path::Path) -> assert_cmd::Command {
    let mut c = gpu_lab_with_cache_in(dir);
    c.env("GPU_LAB_KERNELS", kernels_dir());
    c
}

/// Two mock shard runs of the reduction suite under `dir/runs`; their directories.
fn two_shards(dir: &std::path::Path) -> (String, String) {
    let shard = |s: &str| {
        stdout(
            &gpu_lab_in(dir)
                .args([
                    "--mock-gpu",
                    "run",
                    "--suite",
                    "reduction",
                    "--shard",
                    s,
                    "--out",
                    "runs",
                    "--quiet",
                ])
                .assert()
                .code(0),
        )
        .trim()
        .to_string()
    };
    (shard("0/2"), shard("1/2"))
}

fn edit_run_json(run: &std::path::Path, edit: impl FnOnce(&mut Value)) {
    let p = run.join("run.json");
    let mut v: Value = serde_json::from_str(&std::fs::read_to_string(&p).unwrap()).unwrap();
    edit(&mut v);
    std::fs::write(&p, serde_json::to_vec_pretty(&v).unwrap()).unwrap();
}

fn copy_run(from: &std::path::Path, to: &std::path::Path) {
    std::fs::create_dir_all(to).unwrap();
    for f in ["run.json", "results.jsonl"] {
        std::fs::copy(from.join(f), to.join(f)).unwrap();
    }
}

fn merge_error(dir: &std::path::Path, runs: &[&str]) -> String {
    let out = gpu_lab_in(dir)
        .arg("merge")
        .args(runs)
        .args(["--out", "merged"])
        .assert()
        .code(1)
        .get_output()
        .stderr
        .clone();
    String::from_utf8(out).unwrap()
}

#[test]
fn a_merge_with_a_shard_that_did_not_finish_is_itself_unfinished() {
    let d = tempfile::tempdir().unwrap();
    let (a, b) = two_shards(d.path());
    edit_run_json(&d.path().join(&b), |v| v["finished"] = Value::Null);
    let a_run = gpu_lab_in(d.path())
        .args(["merge", &a, &b, "--out", "merged"])
        .assert()
        .code(0);
    let err = String::from_utf8(a_run.get_output().stderr.clone()).unwrap();
    assert!(err.contains("did not finish"), "{err}");
    let merged = stdout(&a_run).trim().to_string();
    let info: Value = serde_json::from_str(
        &std::fs::read_to_string(d.path().join(merged).join("run.json")).unwrap(),
    )
    .unwrap();
    assert!(
        info["finished"].is_null(),
        "the merged run is unfinished: {info}"
    );
}

#[test]
fn a_shard_copied_and_relabelled_as_another_is_refused() {
    let d = tempfile::tempdir().unwrap();
    let (a, _) = two_shards(d.path());
    let copy = d.path().join("runs/copy");
    copy_run(&d.path().join(&a), &copy);
    edit_run_json(&copy, |v| {
        v["shard"]["index"] = 1.into();
        v["shard"]["run_id"] = "0123".into();
    });
    let err = merge_error(d.path(), &[&a, "runs/copy"]);
    assert!(
        err.contains("which another shard given owns") && err.contains("fix:"),
        "{err}"
    );
    // Its job list taken from the real shard 1 as well: its records are not that shard's.
    let (_, b) = two_shards(d.path());
    let b_info: Value =
        serde_json::from_str(&std::fs::read_to_string(d.path().join(&b).join("run.json")).unwrap())
            .unwrap();
    edit_run_json(&copy, |v| {
        v["shard"]["jobs"] = b_info["shard"]["jobs"].clone()
    });
    let err = merge_error(d.path(), &[&a, "runs/copy"]);
    assert!(err.contains("not one of the jobs that shard owns"), "{err}");
}

#[test]
fn a_tampered_shard_count_or_suite_name_is_refused_without_a_panic() {
    let d = tempfile::tempdir().unwrap();
    let (a, b) = two_shards(d.path());
    for (index, count) in [(0u64, u64::MAX), (9, 2), (0, 0), (0, 1_000_000_000)] {
        let t = d.path().join("runs/tampered");
        copy_run(&d.path().join(&b), &t);
        edit_run_json(&t, |v| {
            v["shard"]["index"] = index.into();
            v["shard"]["count"] = count.into();
        });
        for runs in [[a.as_str(), "runs/tampered"], ["runs/tampered", a.as_str()]] {
            let err = merge_error(d.path(), &runs);
            assert!(
                err.contains("cannot merge") && !err.contains("panicked"),
                "{index}/{count}: {err}"
            );
        }
    }
    // A suite name that would lead the merged directory out of --out.
    for name in ["../../escaped", "a/b", ".."] {
        for run in [&a, &b] {
            edit_run_json(&d.path().join(run), |v| v["suite"] = name.into());
        }
        let err = merge_error(d.path(), &[&a, &b]);
        assert!(err.contains("suite name in run.json"), "{name}: {err}");
        assert!(!d.path().join("escaped").exists());
    }
}
