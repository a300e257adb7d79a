//! The shape of `src/`, checked from its text: no import cycle between modules nor between files, only `cmd/` reads the CLI, only `cmd/` and `config` read the environment, the pure modules reach nothing that touches a GPU, disk, process or the environment, and no file is over 650 lines.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use crate::file_graph::{self, Target};

const SRC: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/src");

/// Modules whose code (and everything it imports) never touches the GPU, disk, processes or the
/// environment: every file under one of these paths (`report.rs`, `report/**`), present or future.
const PURE: [&str; 12] = [
    "records",
    "cxx",
    "verify",
    "parse",
    "metrics",
    "expr",
    "stats",
    "compare",
    "report",
    "frame",
    "occupancy",
    "history",
];
/// What a pure module must not mention.
const IMPURE_WORDS: [&str; 9] = [
    "cudarc",
    "nvml_wrapper",
    "std::fs",
    "std::process",
    "std::env::",
    "File::",
    "current_exe",
    "temp_dir()",
    "Command::new",
];

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let p = e.path();
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// Each file of `src/` (relative path) with its code outside `#[cfg(test)]` modules (which sit at the end of a file).
fn sources() -> Vec<(String, String)> {
    let mut files = Vec::new();
    rust_files(Path::new(SRC), &mut files);
    files.sort();
    files
        .into_iter()
        .filter(|p| p.file_name().is_some_and(|n| n != "tests.rs"))
        .map(|p| {
            let text = std::fs::read_to_string(&p).unwrap();
            let code = match text.find("#[cfg(test)]") {
                Some(at) => text[..at].to_string(),
                None => text,
            };
            (
                p.strip_prefix(SRC).unwrap().to_string_lossy().into_owned(),
                code,
            )
        })
        .collect()
}

/// `cmd/run.rs` -> `cmd`, `lib.rs` -> `lib`.
fn module_of(file: &str) -> String {
    file.split('/')
        .next()
        .unwrap()
        .trim_end_matches(".rs")
        .to_string()
}

/// Whether a file lies in a pure module, by its path alone: a file added under a pure module's
/// directory is held to the rule from the start.
fn is_pure(file: &str) -> bool {
    PURE.contains(&module_of(file).as_str()) || PURE_FILES.contains(&file)
}

/// Pure files of impure modules (the rules pulled out into files of their own, and the data types
/// they read), held to the same rule so that they stay testable without a GPU, files or processes.
const PURE_FILES: [&str; 11] = [
    "exit.rs",
    "runner/timing_rules.rs",
    "scheduler/rules.rs",
    "suite/args.rs",
    "suite/check/op.rs",
    "suite/device_grid.rs",
    "suite/job.rs",
    "suite/manifest.rs",
    "suite/options.rs",
    "suite/sweep.rs",
    "suite/tensor_map.rs",
];

/// What a pure file must not import from outside the crate (`use std::{env, fs}` included).
const IMPURE_PATHS: [&[&str]; 5] = [
    &["std", "fs"],
    &["std", "process"],
    &["std", "env"],
    &["cudarc"],
    &["nvml_wrapper"],
];

/// The most lines a file of `src/` may have (after rustfmt: CI runs `cargo fmt --check` first, so
/// a file's lines are its formatted lines).
const MAX_LINES: usize = 650;

/// Files of `src/` allowed past MAX_LINES, each with a comment saying why it cannot be split.
/// Empty: every file fits.
const LONG_FILES_ALLOWED: [&str; 0] = [];

/// Each file of `src/` (relative path) with all of its text, test modules included.
fn sources_with_tests() -> Vec<(String, String)> {
    let mut files = Vec::new();
    rust_files(Path::new(SRC), &mut files);
    files.sort();
    files
        .into_iter()
        .map(|p| {
            (
                p.strip_prefix(SRC).unwrap().to_string_lossy().into_owned(),
                std::fs::read_to_string(&p).unwrap(),
            )
        })
        .collect()
}

/// Top-level modules each module's code names as `crate::X`.
fn graph() -> BTreeMap<String, BTreeSet<String>> {
    graph_of(sources())
}

fn graph_of(sources: Vec<(String, String)>) -> BTreeMap<String, BTreeSet<String>> {
    let mut g: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (file, code) in sources {
        let from = module_of(&file);
        let deps = g.entry(from.clone()).or_default();
        for (at, _) in code.match_indices("crate::") {
            let name: String = code[at + 7..]
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect();
            if !name.is_empty() && name != from {
                deps.insert(name);
            }
        }
    }
    g
}

fn find_cycle(g: &BTreeMap<String, BTreeSet<String>>) -> Option<Vec<String>> {
    fn visit(
        n: &str,
        g: &BTreeMap<String, BTreeSet<String>>,
        path: &mut Vec<String>,
        done: &mut BTreeSet<String>,
    ) -> Option<Vec<String>> {
        if let Some(i) = path.iter().position(|p| p == n) {
            return Some(path[i..].iter().cloned().chain([n.to_string()]).collect());
        }
        if done.contains(n) {
            return None;
        }
        path.push(n.to_string());
        for d in g.get(n).into_iter().flatten() {
            if let Some(c) = visit(d, g, path, done) {
                return Some(c);
            }
        }
        path.pop();
        done.insert(n.to_string());
        None
    }
    let mut done = BTreeSet::new();
    g.keys()
        .find_map(|n| visit(n, g, &mut Vec::new(), &mut done))
}

#[test]
fn src_has_no_import_cycle() {
    let g = graph();
    assert!(g.len() > 15, "{g:?}");
    assert_eq!(find_cycle(&g), None);
    // Unit tests too: a test module that imports a module importing its own is a cycle all the same.
    assert_eq!(find_cycle(&graph_of(sources_with_tests())), None);
}

#[test]
fn the_cycle_finder_finds_a_cycle() {
    let g: BTreeMap<String, BTreeSet<String>> = [("a", "b"), ("b", "c"), ("c", "a")]
        .iter()
        .map(|(x, y)| (x.to_string(), BTreeSet::from([y.to_string()])))
        .collect();
    assert_eq!(
        find_cycle(&g),
        Some(vec!["a".into(), "b".into(), "c".into(), "a".into()])
    );
}

#[test]
fn src_files_import_each_other_in_one_direction_only() {
    let g = file_graph::file_graph(&sources_with_tests());
    let imports: usize = g.values().map(BTreeSet::len).sum();
    assert!(g.len() > 60 && imports > 100, "{g:?}");
    // The command layer renders reports: the graph sees imports across modules.
    assert!(
        g.iter()
            .any(|(f, deps)| f.starts_with("cmd/") && deps.iter().any(|d| d.starts_with("report"))),
        "{g:?}"
    );
    let cycles = file_graph::cycles(&g);
    let chains: Vec<String> = cycles.iter().map(|c| c.join(" -> ")).collect();
    assert!(
        cycles.is_empty(),
        "{} import cycles between files of src/ (move what both files need into a third):\n{}",
        cycles.len(),
        chains.join("\n")
    );
}

#[test]
fn only_the_command_layer_reads_the_cli_and_only_it_and_config_read_the_environment() {
    for (file, code) in sources() {
        let module = module_of(&file);
        if !["cmd", "cli", "main", "lib"].contains(&module.as_str()) {
            assert!(
                !code.contains("crate::cli") && !code.contains("gpu_lab::cli"),
                "{file} imports the CLI types"
            );
        }
        if !["cmd", "config", "main"].contains(&module.as_str()) {
            for word in [
                "std::env::var",
                "env::var_os",
                "current_exe",
                "temp_dir()",
                "std::env::args",
            ] {
                assert!(
                    !code.contains(word),
                    "{file} reads the environment ({word})"
                );
            }
        }
    }
}

#[test]
fn pure_modules_reach_nothing_impure() {
    let g = graph();
    let mut reach: BTreeSet<String> = PURE.iter().map(|s| s.to_string()).collect();
    loop {
        let next: BTreeSet<String> = reach
            .iter()
            .flat_map(|m| g.get(m).cloned().unwrap_or_default())
            .chain(reach.iter().cloned())
            .collect();
        if next == reach {
            break;
        }
        reach = next;
    }
    let impure: Vec<&String> = reach
        .iter()
        .filter(|m| !PURE.contains(&m.as_str()))
        .collect();
    assert!(impure.is_empty(), "pure modules reach {impure:?}");
    for (file, code) in sources()
        .into_iter()
        .filter(|(f, _)| PURE.contains(&module_of(f).as_str()))
    {
        for word in IMPURE_WORDS {
            assert!(
                !code.contains(word),
                "{file} is in a pure module but mentions {word}"
            );
        }
    }
}

#[test]
fn every_file_of_a_pure_module_imports_only_pure_files_and_nothing_impure_from_outside() {
    let sources = sources();
    let pure: Vec<&String> = sources
        .iter()
        .map(|(f, _)| f)
        .filter(|f| is_pure(f))
        .collect();
    assert!(pure.len() > 20, "{pure:?}");
    let g = file_graph::file_graph(&sources);
    for (file, code) in sources.iter().filter(|(f, _)| is_pure(f)) {
        let impure: Vec<&String> = g[file].iter().filter(|to| !is_pure(to)).collect();
        assert!(
            impure.is_empty(),
            "{file} is in a pure module but imports {impure:?}"
        );
        for word in IMPURE_WORDS {
            assert!(!code.contains(word), "{file} is pure but mentions {word}");
        }
        for target in file_graph::targets(file, code) {
            if let Target::Outside(path) = target {
                assert!(
                    !IMPURE_PATHS.iter().any(|bad| path
                        .starts_with(&bad.iter().map(|s| s.to_string()).collect::<Vec<_>>())),
                    "{file} is in a pure module but imports {}",
                    path.join("::")
                );
            }
        }
    }
}

#[test]
fn pure_files_are_found_by_path_wherever_they_are_nested() {
    assert!(is_pure("report.rs") && is_pure("report/markdown.rs"));
    assert!(is_pure("report/future/deeper.rs") && is_pure("stats/mod.rs"));
    assert!(!is_pure("store/mod.rs") && !is_pure("reporting.rs") && !is_pure("lib.rs"));
}

#[test]
fn no_source_file_is_over_650_lines() {
    let sources = sources_with_tests();
    for allowed in LONG_FILES_ALLOWED {
        let lines = sources
            .iter()
            .find(|(f, _)| f == allowed)
            .map(|(_, t)| t.lines().count());
        assert!(
            lines.is_some_and(|n| n > MAX_LINES),
            "{allowed} is allowed past {MAX_LINES} lines but has {lines:?}: take it off the list"
        );
    }
    let long: Vec<String> = sources
        .iter()
        .map(|(file, text)| (file, text.lines().count()))
        .filter(|(file, lines)| *lines > MAX_LINES && !LONG_FILES_ALLOWED.contains(&file.as_str()))
        .map(|(file, lines)| format!("{file}: {lines} lines"))
        .collect();
    assert!(
        long.is_empty(),
        "files of src/ over {MAX_LINES} lines (split them by stage or job):\n{}",
        long.join("\n")
    );
}

#[test]
fn every_source_file_says_what_it_is_for() {
    for (file, _) in sources() {
        let text = std::fs::read_to_string(Path::new(SRC).join(&file)).unwrap();
        assert!(
            text.starts_with("//! "),
            "{file} does not open with a //! line"
        );
    }
}

/// Functions of `src/` (tests included) may be this long after rustfmt; a longer one mixes steps.
const MAX_FUNCTION_LINES: usize = 110;

/// Each `fn` of a rustfmt-formatted text with its first line and length in lines: it ends at the
/// first later line that is its own indentation followed by `}` (rustfmt closes every body so).
fn function_lengths(text: &str) -> Vec<(String, usize, usize)> {
    let lines: Vec<&str> = text.lines().collect();
    let mut found = Vec::new();
    for (at, line) in lines.iter().enumerate() {
        let code = line.trim_start();
        let indent = &line[..line.len() - code.len()];
        let signature = code
            .split_once("fn ")
            .filter(|(before, _)| {
                before
                    .split_whitespace()
                    .all(|w| w.starts_with("pub") || ["const", "async", "unsafe"].contains(&w))
            })
            .map(|(_, after)| after);
        let Some(name) = signature.and_then(|s| s.split(['(', '<']).next()) else {
            continue;
        };
        let close = format!("{indent}}}");
        if let Some(end) = lines[at + 1..].iter().position(|l| *l == close) {
            found.push((name.to_string(), at + 1, end + 2));
        }
    }
    found
}

#[test]
fn the_function_scanner_measures_each_body_to_its_closing_brace() {
    let text = "pub fn a() {\n    x();\n}\n\nimpl S {\n    pub(crate) fn b<T>(t: T) {\n        if t {\n        }\n    }\n}\n";
    assert_eq!(
        function_lengths(text),
        vec![("a".to_string(), 1, 3), ("b".to_string(), 6, 4)]
    );
}

#[test]
fn no_function_is_over_110_lines() {
    let long: Vec<String> = sources_with_tests()
        .iter()
        .flat_map(|(file, text)| {
            function_lengths(text)
                .into_iter()
                .filter(|(_, _, lines)| *lines > MAX_FUNCTION_LINES)
                .map(move |(name, at, lines)| format!("{file}:{at} {name}: {lines} lines"))
        })
        .collect();
    assert!(
        long.is_empty(),
        "functions of src/ over {MAX_FUNCTION_LINES} lines (give their steps names):\n{}",
        long.join("\n")
    );
}
