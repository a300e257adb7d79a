//! Property tests over every reader of outside text (a bounded fuzz run on every `cargo test`): expressions, manifests, ncu CSV, run records, baselines, metric files; whatever comes in, an answer or an error comes out, never a panic.

use proptest::prelude::*;

fn config() -> ProptestConfig {
    // Bounded, so that CI's 2 cores finish in seconds, and seeded, so that CI runs the cases that
    // were run here (`PROPTEST_RNG_SEED=random PROPTEST_CASES=100000` explores further by hand).
    let seeded = std::env::var("PROPTEST_RNG_SEED").is_ok();
    let cases = std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|c| c.parse().ok())
        .unwrap_or(256);
    ProptestConfig {
        cases,
        failure_persistence: None,
        rng_seed: if seeded {
            ProptestConfig::default().rng_seed
        } else {
            proptest::test_runner::RngSeed::Fixed(20261122)
        },
        ..ProptestConfig::default()
    }
}

/// What a `--shard` value is made of.
const SHARD: &[&str] = &[
    "0",
    "1",
    "/",
    "4",
    "10000",
    "10001",
    "18446744073709551615",
    "18446744073709551616",
    "-",
    "+",
    " ",
    "٣",
    "0x1",
    "1e3",
    "\u{0}",
];

/// Text that looks like what each reader takes: its own tokens, mixed with anything.
fn tokens(words: &'static [&'static str]) -> impl Strategy<Value = String> {
    prop::collection::vec(
        prop_oneof![
            prop::sample::select(words).prop_map(String::from),
            any::<String>(),
            "[0-9]{1,25}".prop_map(String::from)
        ],
        0..40,
    )
    .prop_map(|v| v.concat())
}

const EXPR: &[&str] = &[
    "ceil_div(",
    ")",
    "(",
    ",",
    "*",
    "/",
    "+",
    "-",
    "^",
    "%",
    "N",
    "NX",
    "2",
    "0",
    "9223372036854775807",
    "1e308",
    "float(",
    "max(",
    "min(",
    ".",
    " ",
];
const TOML: &[&str] = &[
    "[suite]\n",
    "name = \"mine\"\n",
    "source = \"k.cu\"\n",
    "[axes]\n",
    "N = [",
    "]\n",
    "[[buffers]]\n",
    "[[variants]]\n",
    "kernel = \"k\"\n",
    "len = \"N\"\n",
    "type = \"f32\"\n",
    "init = \"random\"\n",
    "block = [\"256\"]\n",
    "grid = [\"ceil_div(N, 256)\"]\n",
    "args = [\"x\", \"N\"]\n",
    "check = { op = \"matmul\" }\n",
    "bound = \"cublas\"\n",
    "\"",
    "=",
    "\n",
];
const CSV: &[&str] = &[
    "\"ID\",\"Process ID\",\"Process Name\",\"Host Name\",\"Kernel Name\",\"Context\",\"Stream\",\"Block Size\",\"Grid Size\",\"Device\",\"CC\",\"gpu__time_duration.sum\"\n",
    "\"0\",",
    "\"1\",",
    "\"(1, 1, 1)\",",
    "\"nan\",",
    "\"n/a\",",
    "\"983,168\",",
    "\"ns\",",
    "==ERROR== x\n",
    "==PROF==\n",
    "\n",
    ",",
    "\"",
];
const BASELINE: &[&str] = &[
    "{",
    "}",
    "\"name\":",
    "\"x/../../tmp/y\"",
    "\"b\"",
    "\"jobs\":",
    "[",
    "]",
    "\"run\":",
    "\"bounds\":",
    "\"job\":",
    "\"summary\":",
    "{\"median\":0,\"n\":1}",
    "null",
    ",",
    ":",
    "1e400",
    "-0",
    "\"\u{2026}\"",
];
const METRICS: &[&str] = &[
    "[metrics.m]\n",
    "description = \"d\"\n",
    "unit = \"%\"\n",
    "counters = { a = \"a__x.sum\", b = \"b__y.sum\" }\n",
    "formula = \"a / b\"\n",
    "formula = \"if(a > 0.0, a, false)\"\n",
    "[[metrics.m.not_applicable]]\n",
    "when = \"a == 0.0\"\n",
    "reason = \"r\"\n",
    "[[metrics.m.alternatives]]\n",
    "[sets.s]\n",
    "metrics = [\"m\"]\n",
    "\"",
    "=",
    "\n",
];
const JSONL: &[&str] = &[
    "{\"kind\":\"job\",",
    "\"id\":\"a @ -\",",
    "\"samples_ms\":[",
    "1.0",
    "]",
    "}",
    "{\"kind\":\"bounds\"",
    "{\"kind\":\"profile\"",
    "null",
    "\n",
    "\u{2026}",
    "\"",
    ":",
];

/// A baseline saved from a committed run, as JSON text (built once).
fn real_baseline() -> &'static str {
    static TEXT: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    TEXT.get_or_init(|| {
        let dir = crate::common::h200_run();
        let (run, _) = gpu_lab::store::load_run(&dir).unwrap();
        serde_json::to_string(&gpu_lab::store::baseline::Baseline::from_run(
            "b",
            "run",
            &run,
            "now".into(),
        ))
        .unwrap()
    })
}

/// What a compiler option or define name of a manifest is made of: flags, shell characters, paths.
const OPTION: &[&str] = &[
    "-",
    "--",
    "-D",
    "-U",
    "-I",
    "-O3",
    "=",
    ",",
    "-ccbin",
    "--compiler-bindir",
    "-Xcompiler",
    "-Xptxas",
    "-fplugin",
    "-B",
    "--pre-include=",
    "-include=",
    "--maxrregcount",
    "$(",
    ")",
    "`",
    ";",
    "|",
    "&",
    " ",
    "\"",
    "'",
    "\\",
    "\n",
    "..",
    "/",
    "/tmp/x",
    "X",
    "_",
    "1",
];

/// What a name is made of: plain characters, and those that break a table, CSV, XML or a line.
const NAME: &[&str] = &[
    "v", "_", "1", ".", "-", "+", "=", "@", "|", "\n", "\r", "\t", "\u{7}", "\u{fffe}", "\u{ffff}",
    "<", "&", ",", "\"", " ", "/", "..",
];

proptest! {
    #![proptest_config(config())]

    #[test]
    fn compiler_options_and_define_names_that_load_reach_no_shell(option in tokens(OPTION), name in tokens(OPTION)) {
        let d = tempfile::tempdir().unwrap();
        let m = crate::common::SMALL_SUITE
            .replace("source = \"k.cu\"", &format!("source = \"k.cu\"\noptions = [{}]", serde_json::to_string(&option).unwrap()))
            .replace("kernel = \"k\"", &format!("kernel = \"k\"\ndefines = {{ {} = \"N\" }}", serde_json::to_string(&name).unwrap()));
        if let Ok(suite) = gpu_lab::suite::load(&crate::common::write_small_suite(d.path(), &m)) {
            for o in suite.jobs.iter().flat_map(|j| &j.program.options) {
                prop_assert!(gpu_lab::suite::option_grammar::shell_safe(o), "{o:?} reached the compiler");
                prop_assert!(!o.starts_with("-ccbin") && !o.starts_with("--compiler-bindir") && !o.contains("-fplugin"), "{o:?}");
            }
            prop_assert!(gpu_lab::suite::option_grammar::is_define_name(&name), "{name:?}");
        }
    }

    #[test]
    fn shard_strings_parse_in_range_or_fail_cleanly(text in prop_oneof![
        tokens(SHARD),
        (any::<u64>(), any::<u64>()).prop_map(|(i, n)| format!("{i}/{n}")),
        (0u64..20_000, 0u64..20_000).prop_map(|(i, n)| format!("{i}/{n}")),
    ]) {
        match gpu_lab::scheduler::Shard::parse(&text) {
            Ok(s) => {
                prop_assert!(s.index < s.count && s.count <= gpu_lab::scheduler::MAX_SHARDS, "{text}: {s:?}");
                prop_assert_eq!(gpu_lab::scheduler::Shard::parse(&format!("{}/{}", s.index, s.count)), Ok(s));
            }
            Err(why) => prop_assert!(!why.is_empty()),
        }
    }

    #[test]
    fn names_that_load_break_no_output_format(name in tokens(NAME)) {
        let d = tempfile::tempdir().unwrap();
        let m = crate::common::SMALL_SUITE.replace("name = \"v\"", &format!("name = {}", serde_json::to_string(&name).unwrap()));
        if gpu_lab::suite::load(&crate::common::write_small_suite(d.path(), &m)).is_ok() {
            prop_assert!(!name.is_empty() && name.len() <= 128, "{name:?}");
            prop_assert!(!name.starts_with(['=', '+', '-', '@']), "{name:?}");
            prop_assert!(name.chars().all(|c| c.is_ascii_alphanumeric() || "_.-+".contains(c)), "{name:?}");
        }
    }

    #[test]
    fn tampered_shard_run_json_is_refused_or_merged_never_a_panic(
        shards in prop::collection::vec((any::<usize>(), prop_oneof![Just(0usize), 1usize..4, any::<usize>()], tokens(SHARD), prop::collection::vec(tokens(SHARD), 0..3)), 0..4),
    ) {
        let runs: Vec<(String, gpu_lab::records::RunInfo)> = shards
            .into_iter()
            .enumerate()
            .map(|(i, (index, count, run_id, jobs))| {
                let info = gpu_lab::records::RunInfo {
                    shard: Some(gpu_lab::records::ShardInfo { index, count, plan: gpu_lab::records::plan_hash(&jobs), run_id, jobs }),
                    ..Default::default()
                };
                (format!("run-{i}"), info)
            })
            .collect();
        let _ = gpu_lab::records::merge_refusal(&runs);
    }

    #[test]
    fn expressions_evaluate_or_fail_cleanly(text in tokens(EXPR)) {
        let env = gpu_lab::expr::Bindings::from([("N".to_string(), 1024.0), ("NX".to_string(), 4000.0)]);
        let _ = gpu_lab::expr::eval(&text, &env);
        let _ = gpu_lab::expr::eval_count(&text, &env);
    }

    #[test]
    fn manifests_load_or_fail_cleanly(text in tokens(TOML)) {
        let d = tempfile::tempdir().unwrap();
        let dir = d.path().join("mine");
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("k.cu"), "extern \"C\" __global__ void k(float* x, int n) {}\n").unwrap();
        std::fs::write(dir.join("suite.toml"), &text).unwrap();
        let _ = gpu_lab::suite::load(&dir.join("suite.toml"));
    }

    #[test]
    fn ncu_csv_parses_or_fails_cleanly(text in tokens(CSV)) {
        let _ = gpu_lab::parse::parse_ncu_csv(&text);
    }

    #[test]
    fn run_records_read_line_by_line(text in tokens(JSONL)) {
        let d = tempfile::tempdir().unwrap();
        let run = crate::common::h200_run().join("run.json");
        std::fs::copy(run, d.path().join("run.json")).unwrap();
        std::fs::write(d.path().join("results.jsonl"), &text).unwrap();
        let (data, _) = gpu_lab::store::load_run(d.path()).unwrap();
        for format in [gpu_lab::report::Format::Md, gpu_lab::report::Format::Csv, gpu_lab::report::Format::Json, gpu_lab::report::Format::Frame] {
            let _ = gpu_lab::report::exporter(format).render(&data);
        }
    }

    #[test]
    fn baselines_load_or_fail_cleanly(text in tokens(BASELINE), cut in any::<prop::sample::Index>(), edit in tokens(BASELINE), from_real in any::<bool>()) {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("b.json");
        // Either loose tokens, or a real baseline with a piece replaced (mostly still JSON, wrong in one place).
        let text = if from_real {
            let real = real_baseline();
            let at = cut.index(real.len() + 1);
            let at = (0..=at).rev().find(|&i| real.is_char_boundary(i)).unwrap_or(0);
            let end = (at + edit.len().min(64)).min(real.len());
            let end = (end..=real.len()).find(|&i| real.is_char_boundary(i)).unwrap_or(real.len());
            format!("{}{edit}{}", &real[..at], &real[end..])
        } else {
            text
        };
        std::fs::write(&p, &text).unwrap();
        if let Ok(b) = gpu_lab::store::baseline::load(&p) {
            let _ = gpu_lab::report::exporter(gpu_lab::report::Format::Md).render(&b.to_run());
        }
    }

    #[test]
    fn metric_files_load_and_evaluate_or_fail_cleanly(text in tokens(METRICS), a in prop_oneof![Just(0.0), Just(f64::NAN), any::<f64>()], b in prop_oneof![Just(0.0), any::<f64>()]) {
        let mut c = gpu_lab::metrics::Catalog::default();
        if c.add_toml("user.toml", &text).is_ok() {
            let values = std::collections::BTreeMap::from([("a__x.sum".to_string(), a), ("b__y.sum".to_string(), b)]);
            for def in c.metrics.values() {
                let _ = gpu_lab::metrics::evaluate(def, &values);
            }
        }
    }
}
