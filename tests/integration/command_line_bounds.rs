//! Issue 33's command-line bounds and numbers: every count or index typed on the command line is refused with its allowed range (never a panic, an abort or a huge allocation), a path that is not UTF-8 never panics, more shards than jobs still merge, and no exporter prints a number its reader cannot take back.

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

use crate::common::gpu_lab_in;

/// `gpu-lab --mock-gpu ARGS` in `dir`, with the build cache inside it.
fn mock(dir: &Path, args: &[&str]) -> assert_cmd::assert::Assert {
    let mut c = gpu_lab_in(crate::common::repo());
    c.env("GPU_LAB_CACHE", dir.join("cache"))
        .arg("--mock-gpu")
        .args(args);
    c.assert()
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// Runs `args`, expects a usage error (exit 2) whose message holds `says`, and no panic.
fn usage_error(args: &[&str], says: &str) {
    let d = tempfile::tempdir().unwrap();
    let out = d.path().join("runs");
    let mut all: Vec<&str> = args.to_vec();
    if args.first() == Some(&"run") {
        all.extend(["--out", out.to_str().unwrap()]);
    }
    let a = mock(d.path(), &all).code(2);
    let err = text(&a.get_output().stderr);
    assert!(err.contains(says), "{args:?}: {err}");
    assert!(!err.contains("panicked"), "{args:?}: {err}");
    assert!(!out.exists(), "{args:?}: nothing may run");
}

#[test]
fn a_shard_count_of_billions_or_u64_max_is_a_usage_error_not_a_panic_or_an_abort() {
    for shard in ["0/18446744073709551615", "0/1000000000", "0/10001"] {
        usage_error(
            &["run", "--suite", "search-sort", "--shard", shard],
            "1 to 10000",
        );
    }
}

#[test]
fn a_shard_count_of_zero_names_the_allowed_range() {
    usage_error(
        &["run", "--suite", "search-sort", "--shard", "0/0"],
        "a plan has 1 to 10000 shards",
    );
}

#[test]
fn a_shard_index_past_its_count_is_refused_not_wrapped() {
    for shard in ["4/4", "5/4", "18446744073709551615/4", "+1/4"] {
        let d = tempfile::tempdir().unwrap();
        let out = d.path().join("runs");
        let a = mock(
            d.path(),
            &[
                "run",
                "--suite",
                "search-sort",
                "--shard",
                shard,
                "--out",
                out.to_str().unwrap(),
            ],
        )
        .code(2);
        let err = text(&a.get_output().stderr);
        assert!(err.contains("0 to 3"), "{shard}: {err}");
        assert!(!out.exists(), "{shard}");
    }
}

#[test]
fn every_numeric_option_out_of_range_is_a_usage_error_naming_the_range() {
    let run = |opt: &'static str, value: &'static str| -> Vec<&'static str> {
        vec!["run", "--suite", "search-sort", opt, value]
    };
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (run("--rounds", "0"), "1..=100"),
        (run("--rounds", "4294967296"), "4294967296"),
        (run("--verify-every", "301"), "0..=300"),
        (run("--timeout", "0"), "1..=86400"),
        (
            run("--timeout", "18446744073709551616"),
            "18446744073709551616",
        ),
        (
            run("--seed", "18446744073709551616"),
            "18446744073709551616",
        ),
        (run("--seed", "-1"), "'-1'"),
        (run("--gpu", "1024"), "0..=1023"),
        (run("--gpus", "0,4000000000"), "0 to 1023"),
        (run("--max-seconds", "1e308"), "0.001 to 3600"),
        (run("--max-seconds", "inf"), "0.001 to 3600"),
        (run("--noise", "1e300"), "to 100"),
        (run("--noise", "NaN"), "to 100"),
        (
            vec!["plan", "--suite", "search-sort", "--shards", "10001"],
            "1..=10000",
        ),
        (
            vec!["plan", "--suite", "search-sort", "--shards", "0"],
            "1..=10000",
        ),
        (
            vec![
                "profile",
                "--suite",
                "search-sort",
                "--duration-runs",
                "4294967295",
            ],
            "0..=100",
        ),
        (
            vec![
                "check",
                "--baseline",
                "b",
                "--from",
                "x",
                "--noise-threshold",
                "1e308",
            ],
            "to 1000",
        ),
        (
            vec![
                "check",
                "--baseline",
                "b",
                "--from",
                "x",
                "--noise-floor-us",
                "1e308",
            ],
            "0 to 3600000000",
        ),
        (
            vec!["baseline", "export", "b", "--noise-threshold", "inf"],
            "to 1000",
        ),
        (
            vec!["ncu", "--launch-count", "0", "--", "true"],
            "--launch-count",
        ),
        (
            vec!["run", "--suite", "search-sort", "--mock-slow", "v=1e308"],
            "to 1000000",
        ),
    ];
    for (args, says) in cases {
        usage_error(&args, says);
    }
}

#[test]
fn more_shards_than_jobs_still_merge_because_an_empty_shard_writes_a_run() {
    let d = tempfile::tempdir().unwrap();
    let shards = d.path().join("shards");
    let plan = mock(
        d.path(),
        &["plan", "--suite", "search-sort", "--shards", "6"],
    )
    .success();
    assert!(
        text(&plan.get_output().stderr).contains("shards 4 to 5 hold none"),
        "{}",
        text(&plan.get_output().stderr)
    );
    let mut dirs = Vec::new();
    for i in 0..6 {
        let shard = format!("{i}/6");
        let a = mock(
            d.path(),
            &[
                "run",
                "--suite",
                "search-sort",
                "--shard",
                &shard,
                "--out",
                shards.to_str().unwrap(),
            ],
        )
        .success();
        let printed = text(&a.get_output().stdout);
        let dir = printed
            .lines()
            .last()
            .unwrap_or_default()
            .trim()
            .to_string();
        assert!(
            Path::new(&dir).join("run.json").is_file(),
            "shard {shard}: {printed}"
        );
        if i >= 4 {
            assert!(
                text(&a.get_output().stderr).contains("holds no job of suite search-sort"),
                "shard {shard}"
            );
            let results = std::fs::read_to_string(Path::new(&dir).join("results.jsonl")).unwrap();
            assert!(results.is_empty(), "an empty shard records nothing");
        }
        dirs.push(dir);
    }
    let merged = d.path().join("merged");
    let mut args = vec!["merge"];
    args.extend(dirs.iter().map(String::as_str));
    args.extend(["--out", merged.to_str().unwrap()]);
    let a = mock(d.path(), &args).success();
    let dir = text(&a.get_output().stdout).trim().to_string();
    let results = std::fs::read_to_string(Path::new(&dir).join("results.jsonl")).unwrap();
    let jobs = results
        .lines()
        .filter(|l| l.contains("\"summary\""))
        .count();
    assert_eq!(jobs, 4, "every job of the plan once: {results}");
}

#[test]
fn a_path_argument_that_is_not_utf8_never_panics() {
    let d = tempfile::tempdir().unwrap();
    // Accepted as a path: the run directory goes under it.
    let mut out = d.path().as_os_str().to_os_string();
    out.push(OsStr::from_bytes(b"/runs-\xff"));
    let mut c = gpu_lab_in(crate::common::repo());
    c.env("GPU_LAB_CACHE", d.path().join("cache"))
        .args([
            "--mock-gpu",
            "run",
            "--suite",
            "search-sort",
            "--quiet",
            "--out",
        ])
        .arg(&out);
    let a = c.assert().success();
    assert!(!text(&a.get_output().stderr).contains("panicked"));
    let run = std::fs::read_dir(&out)
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    let info = std::fs::read_to_string(run.join("run.json")).unwrap();
    assert!(
        info.contains("runs-\u{fffd}"),
        "the command line records U+FFFD"
    );
    // A missing one is an error that names it; text arguments are refused by clap.
    let mut c = gpu_lab_in(crate::common::repo());
    c.arg("report").arg(OsStr::from_bytes(b"/nonexistent-\xff"));
    let a = c.assert().code(1);
    assert!(!text(&a.get_output().stderr).contains("panicked"));
    let mut c = gpu_lab_in(crate::common::repo());
    c.args(["list", "variants", "--suite"])
        .arg(OsStr::from_bytes(b"\xff"));
    let a = c.assert().code(2);
    assert!(text(&a.get_output().stderr).contains("invalid UTF-8"));
}

/// A mock run of search-sort whose stored medians (and samples) are replaced by `medians`, one per job in turn.
fn run_with_medians(dir: &Path, medians: &[f64]) -> std::path::PathBuf {
    let runs = dir.join("runs");
    let a = mock(
        dir,
        &[
            "run",
            "--suite",
            "search-sort",
            "--quiet",
            "--out",
            runs.to_str().unwrap(),
        ],
    )
    .success();
    let run = std::path::PathBuf::from(text(&a.get_output().stdout).trim());
    let path = run.join("results.jsonl");
    let mut job = 0;
    let lines: Vec<String> = std::fs::read_to_string(&path)
        .unwrap()
        .lines()
        .map(|line| {
            let mut record: serde_json::Value = serde_json::from_str(line).unwrap();
            if record.get("kind").and_then(|k| k.as_str()) != Some("job") {
                return line.to_string();
            }
            let job_record = &mut record;
            let m = medians[job % medians.len()];
            job += 1;
            if let Some(summary) = job_record
                .get_mut("summary")
                .and_then(|s| s.as_object_mut())
            {
                for k in ["median", "ci_low", "ci_high", "mean", "min", "max"] {
                    summary.insert(k.into(), m.into());
                }
            }
            if let Some(samples) = job_record
                .get_mut("samples_ms")
                .and_then(|s| s.as_array_mut())
            {
                for s in samples.iter_mut() {
                    *s = m.into();
                }
            }
            record.to_string()
        })
        .collect();
    assert!(job > 0, "the run has job records");
    std::fs::write(&path, lines.join("\n") + "\n").unwrap();
    run
}

#[test]
fn a_denormal_median_exports_no_inf_and_baseline_export_says_so() {
    let d = tempfile::tempdir().unwrap();
    let run = run_with_medians(d.path(), &[1e-320, 0.25]);
    let bl = d.path().join("bl");
    mock(
        d.path(),
        &[
            "baseline",
            "save",
            "tiny",
            "--from",
            run.to_str().unwrap(),
            "--dir",
            bl.to_str().unwrap(),
            "--allow-mock",
        ],
    )
    .success();
    let a = mock(
        d.path(),
        &["baseline", "export", "tiny", "--dir", bl.to_str().unwrap()],
    )
    .code(gpu_lab::exit::JOBS_FAILED);
    let module = text(&a.get_output().stdout);
    let err = text(&a.get_output().stderr);
    assert!(
        err.contains("no ReFrame reference") && err.contains("1e-320"),
        "{err}"
    );
    assert!(
        !module.contains("inf") && !module.contains("nan"),
        "{module}"
    );
    // Every reference line's numbers are finite Python floats; the good jobs are still there.
    let lines: Vec<&str> = module.lines().filter(|l| l.ends_with("'ms'),")).collect();
    assert_eq!(lines.len(), 2, "{module}");
    for line in lines {
        let numbers = line
            .split_once(": (")
            .unwrap()
            .1
            .trim_end_matches(", 'ms'),");
        for n in numbers.split(", ") {
            assert!(n.parse::<f64>().unwrap().is_finite(), "{line}");
        }
    }
}

#[test]
fn stored_medians_of_every_extreme_keep_every_report_format_readable() {
    let d = tempfile::tempdir().unwrap();
    let run = run_with_medians(d.path(), &[1e-320, 1e308, 0.0, -1.0]);
    for format in ["md", "json", "csv", "svg", "frame", "roofline"] {
        let a = mock(
            d.path(),
            &["report", run.to_str().unwrap(), "--format", format],
        )
        .success();
        let out = text(&a.get_output().stdout);
        assert!(
            !text(&a.get_output().stderr).contains("panicked"),
            "{format}"
        );
        match format {
            "json" => {
                serde_json::from_str::<serde_json::Value>(&out).unwrap();
            }
            "csv" | "frame" => {
                let mut reader = csv::Reader::from_reader(out.as_bytes());
                let width = reader.headers().unwrap().len();
                for row in reader.records() {
                    assert_eq!(row.unwrap().len(), width, "{format}");
                }
            }
            _ => assert!(!out.is_empty(), "{format}"),
        }
    }
}

#[test]
fn a_shard_of_several_suites_writes_a_run_for_each_suite_it_holds_no_job_of() {
    let d = tempfile::tempdir().unwrap();
    let out = d.path().join("runs");
    // 12 jobs in 20 shards: shard 19 holds none of either suite, yet each suite's merge needs it.
    let a = mock(
        d.path(),
        &[
            "run",
            "--suite",
            "search-sort,warp-divergence",
            "--shard",
            "19/20",
            "--out",
            out.to_str().unwrap(),
        ],
    )
    .success();
    let printed = text(&a.get_output().stdout);
    let dirs: Vec<&str> = printed.lines().filter(|l| !l.trim().is_empty()).collect();
    assert_eq!(dirs.len(), 2, "{printed}");
    for dir in dirs {
        let info: serde_json::Value = serde_json::from_str(
            &std::fs::read_to_string(Path::new(dir).join("run.json")).unwrap(),
        )
        .unwrap();
        assert_eq!(info["shard"]["index"], 19, "{info}");
        assert!(
            info["finished"].is_string(),
            "an empty shard's run is finished: {info}"
        );
    }
}
