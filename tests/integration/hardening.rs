//! Hostile and broken inputs, one test each, named after what it guards: an error that says what is wrong, never a panic, a hang, a lost record or a silently wrong value.

use predicates::prelude::*;
use serde_json::Value;

use crate::common::{
    H200_RUN as RUN, SMALL_SUITE as SMALL, gpu_lab_in as gpu_lab, repo, write_small_suite as suite,
};

#[test]
fn a_sweep_of_millions_of_jobs_is_refused_before_it_is_expanded() {
    let d = tempfile::tempdir().unwrap();
    let values = (0..2000)
        .map(|i| i.to_string())
        .collect::<Vec<_>>()
        .join(", ");
    let m = SMALL.replace("N = [1024]", &format!("N = [{values}]\nM = [{values}]"));
    let e = gpu_lab::suite::load(&suite(d.path(), &m))
        .unwrap_err()
        .to_string();
    assert!(e.contains("4000000 jobs") && e.contains("fix:"), "{e}");
}

#[test]
fn a_source_that_is_a_device_or_not_a_file_is_never_read() {
    let d = tempfile::tempdir().unwrap();
    // Outside the suite's directory, so allowed explicitly: the file check is what refuses it.
    let e = gpu_lab::suite::load(&suite(
        d.path(),
        &SMALL.replace(
            "source = \"k.cu\"",
            "source = \"/dev/zero\"\nallow_outside = true",
        ),
    ))
    .unwrap_err()
    .to_string();
    assert!(
        e.contains("/dev/zero") && e.contains("not a regular file"),
        "{e}"
    );
    let e = gpu_lab::suite::load(&suite(
        d.path(),
        &SMALL.replace("source = \"k.cu\"", "source = \".\""),
    ))
    .unwrap_err()
    .to_string();
    assert!(e.contains("not a regular file"), "{e}");
}

#[test]
fn a_manifest_that_is_not_utf8_is_named_as_such() {
    let d = tempfile::tempdir().unwrap();
    let p = suite(d.path(), SMALL);
    let mut bytes = std::fs::read(&p).unwrap();
    bytes.extend_from_slice(b"# \xff\xfe\n");
    std::fs::write(&p, bytes).unwrap();
    let e = gpu_lab::suite::load(&p).unwrap_err().to_string();
    assert!(e.contains("not UTF-8"), "{e}");
}

#[test]
fn an_expression_too_long_for_the_evaluator_is_an_error_not_a_stack_overflow() {
    let d = tempfile::tempdir().unwrap();
    let long = vec!["1"; 20_000].join("+");
    let e = gpu_lab::suite::load(&suite(
        d.path(),
        &SMALL.replace("len = \"N\"", &format!("len = \"{long}\"")),
    ))
    .unwrap_err()
    .to_string();
    assert!(e.contains("limited to"), "{e}");
}

#[test]
fn an_ncu_csv_with_a_column_twice_is_an_error_not_a_panic() {
    let d = tempfile::tempdir().unwrap();
    let text =
        std::fs::read_to_string(repo().join("tests/fixtures/h200/transpose-raw-8192x8192.csv"))
            .unwrap();
    let doubled: String = text
        .lines()
        .map(|l| {
            if l.starts_with('"') {
                format!("{l},{}\n", l.rsplit(',').next().unwrap())
            } else {
                format!("{l}\n")
            }
        })
        .collect();
    std::fs::write(d.path().join("dup.csv"), doubled).unwrap();
    gpu_lab(d.path())
        .args(["import", "dup.csv"])
        .assert()
        .code(1)
        .stderr(predicate::str::contains("twice").and(predicate::str::contains("panicked").not()));
}

#[test]
fn a_baseline_without_jobs_cannot_pass_the_gate() {
    let d = tempfile::tempdir().unwrap();
    gpu_lab(d.path())
        .args([
            "baseline",
            "save",
            "b",
            "--from",
            repo().join(RUN).to_str().unwrap(),
        ])
        .assert()
        .code(0);
    let p = d.path().join("baselines/b.json");
    let mut v: Value = serde_json::from_str(&std::fs::read_to_string(&p).unwrap()).unwrap();
    v["jobs"] = Value::Array(vec![]);
    std::fs::write(&p, v.to_string()).unwrap();
    gpu_lab(d.path())
        .args([
            "check",
            "--baseline",
            "b",
            "--from",
            repo().join(RUN).to_str().unwrap(),
        ])
        .assert()
        .code(1)
        .stderr(predicate::str::contains("holds no job"));
}

#[test]
fn a_zero_median_or_negative_bytes_render_as_not_measured_never_inf_or_nan() {
    let d = tempfile::tempdir().unwrap();
    std::fs::copy(repo().join(RUN).join("run.json"), d.path().join("run.json")).unwrap();
    let body: String = crate::common::results_text(&repo().join(RUN))
        .lines()
        .map(|l| {
            let mut v: Value = serde_json::from_str(l).unwrap();
            if v["kind"] == "job" {
                v["summary"]["median"] = Value::from(0.0);
                v["bytes"] = Value::from(-5.0);
            }
            format!("{v}\n")
        })
        .collect();
    std::fs::write(d.path().join("results.jsonl"), body).unwrap();
    let out = gpu_lab(d.path()).args(["report", "."]).assert().code(0);
    let md = String::from_utf8(out.get_output().stdout.clone()).unwrap();
    assert!(!md.contains("inf") && !md.contains("NaN"), "{md}");
}

#[test]
fn a_source_outside_the_suite_directory_needs_allow_outside() {
    let d = tempfile::tempdir().unwrap();
    std::fs::write(
        d.path().join("shared.cu"),
        "extern \"C\" __global__ void k(float* x, int n) {}\n",
    )
    .unwrap();
    let outside = SMALL.replace("source = \"k.cu\"", "source = \"../shared.cu\"");
    let e = gpu_lab::suite::load(&suite(d.path(), &outside))
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("lies outside the suite's directory") && e.contains("allow_outside = true"),
        "{e}"
    );
    let allowed = outside.replace("[suite]\n", "[suite]\nallow_outside = true\n");
    assert!(gpu_lab::suite::load(&suite(d.path(), &allowed)).is_ok());
    // An absolute path is outside too.
    let absolute = SMALL.replace(
        "source = \"k.cu\"",
        &format!("source = \"{}\"", d.path().join("shared.cu").display()),
    );
    assert!(
        gpu_lab::suite::load(&suite(d.path(), &absolute))
            .unwrap_err()
            .to_string()
            .contains("outside")
    );
}

#[test]
fn serde_words_become_the_manifests_own() {
    let d = tempfile::tempdir().unwrap();
    let e = gpu_lab::suite::load(&suite(
        d.path(),
        &SMALL.replace("N = [1024]", "N = [1024.5]"),
    ))
    .unwrap_err()
    .to_string();
    assert!(
        e.contains("a sweep value must be a whole number") && !e.contains("untagged"),
        "{e}"
    );
    let e = gpu_lab::suite::load(&suite(
        d.path(),
        &SMALL.replace("[axes]", "[params]\nB = 2.5\n[axes]"),
    ))
    .unwrap_err()
    .to_string();
    assert!(e.contains("a whole number is needed here"), "{e}");
}

#[test]
fn a_compute_run_of_many_jobs_is_judged_in_linear_time() {
    // 40 000 compute jobs: with the FP32 peak recomputed per job (a scan of every job), the report
    // took minutes; once per group, about a second.
    let run = repo().join("tests/fixtures/runs/20261122T171826Z-matmul-h200");
    let d = tempfile::tempdir().unwrap();
    std::fs::copy(run.join("run.json"), d.path().join("run.json")).unwrap();
    let mut body = String::new();
    let mut jobs = Vec::new();
    for l in crate::common::results_text(&run).lines() {
        let v: Value = serde_json::from_str(l).unwrap();
        if v["kind"] == "job" {
            jobs.push(v)
        } else {
            body.push_str(&format!("{v}\n"))
        }
    }
    for i in 0..40_000 {
        let mut v = jobs[i % jobs.len()].clone();
        v["id"] = Value::from(format!("{}#{i}", v["id"].as_str().unwrap()));
        if i == 7 {
            // A thousand times its flops: past the FP32 peak.
            v["flops"] = Value::from(v["flops"].as_f64().unwrap() * 1000.0);
        }
        body.push_str(&format!("{v}\n"));
    }
    std::fs::write(d.path().join("results.jsonl"), body).unwrap();
    let (data, _) = gpu_lab::store::load_run(d.path()).unwrap();
    let started = std::time::Instant::now();
    let all = data.impossible_jobs();
    let md = gpu_lab::report::exporter(gpu_lab::report::Format::Md)
        .render(&data)
        .unwrap();
    assert!(started.elapsed().as_secs() < 20, "{:?}", started.elapsed());
    // The same verdicts as asking job by job.
    for j in data.jobs.iter().step_by(997).chain(data.jobs.get(7)) {
        assert_eq!(all.get(j.id()).cloned(), data.impossible(j), "{}", j.id());
    }
    assert!(all.len() == 1 && md.contains("IMPOSSIBLE"), "{all:?}");
}

/// The line of the first line of `text` that starts with `prefix`.
fn line_starting(text: &str, prefix: &str) -> usize {
    text.lines().position(|l| l.starts_with(prefix)).unwrap() + 1
}

#[test]
fn manifest_errors_point_at_the_line_of_the_offending_key() {
    let d = tempfile::tempdir().unwrap();
    // A variant named like a buffer: the error is about its args, not the buffer's `name = "x"`.
    let m = SMALL
        .replace("name = \"v\"", "name = \"x\"")
        .replace("args = [\"x\", \"N\"]", "args = [\"y\", \"N\"]");
    let e = gpu_lab::suite::load(&suite(d.path(), &m)).unwrap_err();
    assert_eq!(e.line, Some(line_starting(&m, "args =")), "{e}");
    // A buffer's bad len: its `len` line, never the `[suite]` line (the buffer shares the suite's name).
    let m = SMALL
        .replace("name = \"x\"", "name = \"mine\"")
        .replace("\"x\", \"N\"", "\"mine\", \"N\"")
        .replace("len = \"N\"", "len = \"M\"");
    let e = gpu_lab::suite::load(&suite(d.path(), &m)).unwrap_err();
    assert_eq!(e.line, Some(line_starting(&m, "len =")), "{e}");
    // A grid of 0: the variant's `grid` line.
    let m = SMALL.replace("grid = [\"ceil_div(N, 256)\"]", "grid = [\"0\"]");
    let e = gpu_lab::suite::load(&suite(d.path(), &m)).unwrap_err();
    assert_eq!(e.line, Some(line_starting(&m, "grid =")), "{e}");
    // A repeated sweep value: the axis's line.
    let m = SMALL.replace("N = [1024]", "N = [1024, 1024]");
    let e = gpu_lab::suite::load(&suite(d.path(), &m)).unwrap_err();
    assert_eq!(e.line, Some(line_starting(&m, "N =")), "{e}");
    // A source that cannot be read: the manifest's file and line, the source named in the message.
    let m = SMALL.replace("source = \"k.cu\"", "source = \"missing.cu\"");
    let e = gpu_lab::suite::load(&suite(d.path(), &m)).unwrap_err();
    assert!(
        e.file.ends_with("suite.toml")
            && e.line == Some(line_starting(&m, "source ="))
            && e.message.contains("missing.cu"),
        "{e}"
    );
}

#[test]
fn a_manifest_that_is_not_utf8_gets_its_line_and_an_encoding_fix() {
    let d = tempfile::tempdir().unwrap();
    let m = SMALL.replace("[axes]", "description = \"caf\u{e9}\"\n[axes]");
    let p = suite(d.path(), &m);
    // Latin-1 é: one byte 0xe9 where UTF-8 has two.
    let latin1: Vec<u8> = m
        .replace('\u{e9}', "\u{1}")
        .bytes()
        .map(|b| if b == 1 { 0xe9 } else { b })
        .collect();
    std::fs::write(&p, latin1).unwrap();
    let e = gpu_lab::suite::load(&p).unwrap_err();
    assert_eq!(e.line, Some(line_starting(&m, "description")), "{e}");
    assert!(
        e.message.contains("0xe9") && e.fix.contains("UTF-8") && !e.fix.contains("readable"),
        "{e}"
    );
}

#[test]
fn a_manifest_past_its_size_limit_is_refused_before_it_is_parsed() {
    let d = tempfile::tempdir().unwrap();
    let padding =
        "# padding padding padding padding padding padding padding padding\n".repeat(20_000);
    let e = gpu_lab::suite::load(&suite(d.path(), &format!("{SMALL}{padding}")))
        .unwrap_err()
        .to_string();
    assert!(
        e.contains(&format!(
            "more than the {} gpu-lab reads",
            gpu_lab::suite::MAX_MANIFEST_BYTES
        )) && e.contains("fix:"),
        "{e}"
    );
}

#[test]
fn an_ncu_csv_of_one_huge_line_is_refused_in_linear_time() {
    // A 1 GB line took minutes (64 MB: 3.5 s and 2 GB of column names); past the line limit it is
    // refused after one pass over the text.
    let d = tempfile::tempdir().unwrap();
    let line = format!(
        "\"ID\",{}\n",
        "\"x\",".repeat(gpu_lab::parse::MAX_CSV_LINE_BYTES / 4 + 1)
    );
    std::fs::write(d.path().join("one-line.csv"), &line).unwrap();
    gpu_lab(d.path())
        .args(["import", "one-line.csv"])
        .timeout(std::time::Duration::from_secs(20))
        .assert()
        .code(1)
        .stderr(
            predicate::str::contains(format!(
                "line 1 of the ncu CSV is {} bytes long, more than the {}",
                line.len() - 1,
                gpu_lab::parse::MAX_CSV_LINE_BYTES
            ))
            .and(predicate::str::contains("fix:")),
        );
    let e = gpu_lab::parse::parse_ncu_csv(&line).unwrap_err();
    assert!(
        matches!(e, gpu_lab::parse::ParseError::LineTooLong { line: 1, .. }),
        "{e}"
    );
}

#[test]
fn ncu_with_more_counters_than_one_argument_holds_is_refused_with_the_limit() {
    // 3000 counters: a `--metrics` argument of 140 KB, past Linux's 128 KiB per argument, which
    // failed as "Argument list too long" from execve. Refused before ncu is even looked for.
    let d = tempfile::tempdir().unwrap();
    let counters: Vec<String> = (0..3000)
        .map(|i| format!("c{i} = \"smsp__sass_inst_executed_op_global_ld_{i}.sum\""))
        .collect();
    std::fs::write(d.path().join("many.toml"), format!("[metrics.many]\ndescription = \"d\"\nunit = \"x\"\ncounters = {{ {} }}\nformula = \"c0\"\n", counters.join(", "))).unwrap();
    gpu_lab(d.path())
        .args([
            "--metrics-file",
            "many.toml",
            "ncu",
            "--metrics",
            "many",
            "--",
            "/bin/true",
        ])
        .env("NCU", d.path().join("no-ncu-here"))
        .assert()
        .code(1)
        .stderr(
            predicate::str::contains("3001 ncu counters")
                .and(predicate::str::contains(
                    gpu_lab::profiler::MAX_METRICS_ARG_BYTES.to_string(),
                ))
                .and(predicate::str::contains("fix:")),
        );
}

#[test]
fn an_include_directory_outside_the_suite_directory_needs_allow_outside() {
    let d = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(d.path().join("shared")).unwrap();
    std::fs::write(d.path().join("shared/tile.cuh"), "#define TILE 32\n").unwrap();
    for option in ["-I../shared", "--include-path=../shared"] {
        let m = SMALL.replace(
            "source = \"k.cu\"",
            &format!("source = \"k.cu\"\noptions = [\"--use_fast_math\", \"{option}\"]"),
        );
        let e = gpu_lab::suite::load(&suite(d.path(), &m)).unwrap_err();
        assert!(
            e.message.contains("lies outside the suite's directory")
                && e.fix.contains("allow_outside = true")
                && e.line == Some(line_starting(&m, "options =")),
            "{e}"
        );
    }
    // An absolute directory is outside too, also in a variant's options.
    let m = SMALL.replace(
        "kernel = \"k\"",
        &format!(
            "kernel = \"k\"\noptions = [\"-I{}\"]",
            d.path().join("shared").display()
        ),
    );
    assert!(
        gpu_lab::suite::load(&suite(d.path(), &m))
            .unwrap_err()
            .message
            .contains("outside")
    );
    // Allowed, the directory is taken relative to suite.toml, like a source.
    let allowed = SMALL.replace(
        "source = \"k.cu\"",
        "source = \"k.cu\"\nallow_outside = true\noptions = [\"-I../shared\"]",
    );
    let s = gpu_lab::suite::load(&suite(d.path(), &allowed)).unwrap();
    let dir = d.path().join("mine");
    assert!(
        s.jobs[0]
            .program
            .options
            .contains(&format!("-I{}", dir.join("../shared").display())),
        "{:?}",
        s.jobs[0].program.options
    );
    // A directory inside the suite's needs nothing.
    std::fs::create_dir_all(dir.join("inc")).unwrap();
    assert!(
        gpu_lab::suite::load(&suite(
            d.path(),
            &SMALL.replace(
                "source = \"k.cu\"",
                "source = \"k.cu\"\noptions = [\"-Iinc\"]"
            )
        ))
        .is_ok()
    );
}

#[test]
fn loads_through_cp_async_or_tma_make_gld_efficiency_not_applicable_never_zero() {
    // The transpose export with copy_row's LD loads taken away and LDGSTS instructions in their
    // place (a cuBLAS SGEMM's loads are all LDGSTS): n/a with the reason, never 0%.
    let d = tempfile::tempdir().unwrap();
    let text =
        std::fs::read_to_string(repo().join("tests/fixtures/h200/transpose-raw-8192x8192.csv"))
            .unwrap();
    let mut lines: Vec<String> = text.lines().map(String::from).collect();
    let header: Vec<String> = csv::ReaderBuilder::new()
        .has_headers(false)
        .from_reader(lines[0].as_bytes())
        .records()
        .next()
        .unwrap()
        .unwrap()
        .iter()
        .map(String::from)
        .collect();
    let zeroed: Vec<usize> = [
        "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum",
        "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum",
        "smsp__sass_data_bytes_mem_global_op_ld.sum",
    ]
    .iter()
    .map(|c| header.iter().position(|h| h == c).unwrap())
    .collect();
    for (i, line) in lines.iter_mut().enumerate() {
        let mut cells: Vec<String> = csv::ReaderBuilder::new()
            .has_headers(false)
            .from_reader(line.as_bytes())
            .records()
            .next()
            .unwrap()
            .unwrap()
            .iter()
            .map(String::from)
            .collect();
        let added = match i {
            0 => "smsp__inst_executed_op_ldgsts.sum",
            1 => "inst",
            2 => "4096",
            _ => "0",
        };
        if i == 2 {
            for &z in &zeroed {
                cells[z] = "0".into();
            }
        }
        cells.push(added.into());
        *line = cells
            .iter()
            .map(|c| format!("\"{c}\""))
            .collect::<Vec<_>>()
            .join(",");
    }
    std::fs::write(d.path().join("ldgsts.csv"), lines.join("\n") + "\n").unwrap();
    let out = gpu_lab(d.path())
        .args([
            "import",
            "ldgsts.csv",
            "--metrics",
            "gld_efficiency",
            "--format",
            "csv",
        ])
        .assert()
        .code(0);
    let csv_out = String::from_utf8(out.get_output().stdout.clone()).unwrap();
    let copy_row = csv_out.lines().find(|l| l.contains("copy_row")).unwrap();
    assert!(
        copy_row.ends_with(",%,1,1,,,"),
        "one invocation, n/a, no min, max or avg: {copy_row}"
    );
    let out = gpu_lab(d.path())
        .args(["import", "ldgsts.csv", "--metrics", "gld_efficiency"])
        .assert()
        .code(0);
    let table = String::from_utf8(out.get_output().stdout.clone()).unwrap();
    let line = table
        .lines()
        .skip_while(|l| !l.contains("Kernel: copy_row"))
        .nth(1)
        .unwrap();
    assert!(
        line.ends_with("n/a (loads via cp.async/TMA)") && !line.contains("0.00%"),
        "{line}"
    );
    // The other kernels keep their LD loads and their values.
    assert!(
        table.contains("12.50%") && table.contains("100.00%"),
        "{table}"
    );
}

#[test]
fn a_run_without_results_is_an_error_not_an_empty_report() {
    let d = tempfile::tempdir().unwrap();
    let run = d.path().join("run");
    std::fs::create_dir_all(&run).unwrap();
    std::fs::copy(repo().join(RUN).join("run.json"), run.join("run.json")).unwrap();
    gpu_lab(d.path())
        .args(["report", "run"])
        .assert()
        .code(1)
        .stderr(
            predicate::str::contains("results.jsonl does not exist")
                .and(predicate::str::contains("fix:")),
        );
    gpu_lab(d.path())
        .args(["baseline", "save", "b", "--from", "run"])
        .assert()
        .code(1)
        .stderr(predicate::str::contains("does not exist"));
}

#[test]
fn a_header_included_from_outside_the_suite_needs_allow_outside() {
    let d = tempfile::tempdir().unwrap();
    std::fs::write(d.path().join("secret.cuh"), "#define SECRET 1\n").unwrap();
    let manifest = suite(d.path(), SMALL);
    std::fs::write(
        manifest.parent().unwrap().join("k.cu"),
        "#include \"../secret.cuh\"\nextern \"C\" __global__ void k(float* x, int n) {}\n",
    )
    .unwrap();
    let err = gpu_lab(d.path())
        .args(["--mock-gpu", "run", "--suite", "mine", "--suite-dir", "."])
        .assert()
        .code(1)
        .get_output()
        .stderr
        .clone();
    let err = String::from_utf8(err).unwrap();
    assert!(
        err.contains("header `../secret.cuh`")
            && err.contains("outside the suite's directory")
            && err.contains("allow_outside"),
        "{err}"
    );
    std::fs::write(
        &manifest,
        SMALL.replace(
            "source = \"k.cu\"",
            "source = \"k.cu\"\nallow_outside = true",
        ),
    )
    .unwrap();
    gpu_lab(d.path())
        .args([
            "--mock-gpu",
            "run",
            "--suite",
            "mine",
            "--suite-dir",
            ".",
            "--out",
            "runs",
            "--quiet",
        ])
        .assert()
        .code(0);
}

#[test]
fn include_directories_in_split_form_and_empty_buffers_are_refused() {
    let d = tempfile::tempdir().unwrap();
    for (manifest, want) in [
        (
            SMALL.replace(
                "source = \"k.cu\"",
                "source = \"k.cu\"\noptions = [\"-I\", \"/etc\"]",
            ),
            "names an include directory or file in a form gpu-lab cannot check",
        ),
        (
            SMALL.replace(
                "source = \"k.cu\"",
                "source = \"k.cu\"\noptions = [\"-isystem/etc\"]",
            ),
            "-isystem/etc",
        ),
        (
            SMALL.replace("len = \"N\"", "len = \"N - 1024\""),
            "has len 0",
        ),
    ] {
        suite(d.path(), &manifest);
        let err = gpu_lab(d.path())
            .args(["--mock-gpu", "run", "--suite", "mine", "--suite-dir", "."])
            .assert()
            .code(1)
            .get_output()
            .stderr
            .clone();
        let err = String::from_utf8(err).unwrap();
        assert!(err.contains(want) && err.contains("fix:"), "{err}");
    }
}
