//! The repository as shipped: every relative link in its markdown resolves, every run directory a document links re-renders, examples/reports holds a current, cold run of every built-in suite, and every CUDA source of ours opens with a `//!` line saying what it is.

use std::path::{Path, PathBuf};

use crate::common::repo;

/// Every `.md` file of the repository, outside build output and hidden folders.
fn markdown_files(dir: &Path, found: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().to_string();
        if name.starts_with('.') || name == "target" {
            continue;
        }
        if path.is_dir() {
            markdown_files(&path, found);
        } else if name.ends_with(".md") {
            found.push(path);
        }
    }
}

/// The targets of a markdown text's inline links `[text](target)`, outside fenced code blocks.
fn link_targets(text: &str) -> Vec<String> {
    let mut targets = Vec::new();
    let mut in_code = false;
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            in_code = !in_code;
            continue;
        }
        if in_code {
            continue;
        }
        let mut rest = line;
        while let Some(at) = rest.find("](") {
            let after = &rest[at + 2..];
            let end = after.find(')').unwrap_or(after.len());
            targets.push(after[..end].to_string());
            rest = &after[end..];
        }
    }
    targets
}

/// A link to a file or folder of the repository: not a URL, not an anchor of the same page.
fn local_path(target: &str) -> Option<&str> {
    let path = target.split('#').next().unwrap_or("");
    let is_url = target.contains("://") || target.starts_with("mailto:");
    (!is_url && !path.is_empty()).then_some(path)
}

/// The run directory a link names: the folder itself, or the folder of a file in it.
fn run_dir_of(target: &Path) -> Option<PathBuf> {
    let dir = if target.is_dir() {
        target.to_path_buf()
    } else {
        target.parent()?.to_path_buf()
    };
    dir.join("run.json").is_file().then_some(dir)
}

/// `gpu-lab report` on a stored run, through the library: every record read, the report rendered.
fn rerender(run: &Path) -> (gpu_lab::records::RunData, String) {
    let (data, warnings) = gpu_lab::store::load_run(run)
        .unwrap_or_else(|e| panic!("{}: cannot be read: {e:#}", run.display()));
    assert!(warnings.is_empty(), "{}: {warnings:?}", run.display());
    // A `--counters-only` run holds profile records and no job records; a `sanitize` run
    // compute-sanitizer's records only.
    assert!(
        !data.jobs.is_empty() || !data.profiles.is_empty() || !data.sanitize.is_empty(),
        "{}: no jobs, profiles or sanitizer records",
        run.display()
    );
    let report = gpu_lab::report::exporter(gpu_lab::report::Format::Md)
        .render(&data)
        .unwrap_or_else(|e| panic!("{}: does not render: {e:#}", run.display()));
    (data, report)
}

#[test]
fn every_relative_link_in_the_markdown_resolves_and_every_linked_run_re_renders() {
    let mut files = Vec::new();
    markdown_files(repo(), &mut files);
    assert!(files.len() > 50, "{} markdown files", files.len());
    let mut broken = Vec::new();
    let mut runs = std::collections::BTreeSet::new();
    for file in &files {
        let text = std::fs::read_to_string(file).unwrap();
        for target in link_targets(&text) {
            let Some(path) = local_path(&target) else {
                continue;
            };
            let resolved = file.parent().unwrap().join(path);
            if !resolved.exists() {
                broken.push(format!(
                    "{}: {target}",
                    file.strip_prefix(repo()).unwrap().display()
                ));
            } else if let Some(run) = run_dir_of(&resolved) {
                runs.insert(run.canonicalize().unwrap());
            }
        }
    }
    assert!(
        broken.is_empty(),
        "links to nothing:\n{}",
        broken.join("\n")
    );
    // README.md and docs/results.md link a run of every built-in suite.
    assert!(runs.len() >= 24, "{} linked runs", runs.len());
    for run in &runs {
        rerender(run);
    }
}

#[test]
fn examples_hold_a_cold_re_renderable_run_of_every_built_in_suite_on_each_gpu() {
    let examples = repo().join("examples/reports");
    let mut suites = 0;
    for entry in std::fs::read_dir(repo().join("kernels")).unwrap() {
        let kernel_dir = entry.unwrap().path();
        if !kernel_dir.join("suite.toml").is_file() {
            continue;
        }
        suites += 1;
        let suite = kernel_dir
            .file_name()
            .unwrap()
            .to_string_lossy()
            .to_string();
        // Every suite has its H100 run; the Hopper-only suites have no H200 run yet.
        assert!(
            examples.join(&suite).join("h100/run.json").is_file(),
            "examples/reports/{suite}/h100 is missing"
        );
        for gpu in ["h100", "h200"] {
            let run = examples.join(&suite).join(gpu);
            if !run.exists() {
                continue;
            }
            let (data, report) = rerender(&run);
            assert!(
                report.starts_with(&format!("# gpu-lab report: {suite}\n")),
                "{suite}/{gpu}: {}",
                report.lines().next().unwrap_or("")
            );
            assert_eq!(data.info.suite, suite, "{suite}/{gpu}");
            assert!(
                data.info.cache_state.starts_with("L2 cold"),
                "{suite}/{gpu}: {}",
                data.info.cache_state
            );
            let device = data.info.device.as_ref().map(|d| d.name.as_str());
            assert!(
                device.is_some_and(|name| name.to_lowercase().contains(gpu)),
                "{suite}/{gpu}: measured on {device:?}"
            );
            assert!(
                run.join("report.md").is_file(),
                "{suite}/{gpu}: no report.md"
            );
            // Stored gzipped to keep the tracked tree under issue 34's 10 MB.
            assert!(
                run.join("results.jsonl.gz").is_file() && !run.join("results.jsonl").exists(),
                "{suite}/{gpu}: results must be stored as results.jsonl.gz (gzip -9 -n)"
            );
        }
    }
    assert!(suites >= 24, "{suites} suites in kernels/");
}

#[test]
fn the_link_parser_finds_inline_links_outside_code_blocks() {
    let text = "see [a](x/y.md#top) and [b](https://e.org)\n```\n[c](not-a-link)\n```\n[d](#here)";
    assert_eq!(
        link_targets(text),
        ["x/y.md#top", "https://e.org", "#here"].map(String::from)
    );
    assert_eq!(local_path("x/y.md#top"), Some("x/y.md"));
    assert_eq!(local_path("https://e.org"), None);
    assert_eq!(local_path("#here"), None);
}

/// The CUDA sources and headers (`.cu`, `.cuh`, `.h`) under `dir`, ours in `own` and those of a
/// folder that holds a LICENSE (code copied unmodified from another project, with its licence)
/// in `copied`: those keep their first line as published.
fn cuda_sources(dir: &Path, copied_here: bool, own: &mut Vec<PathBuf>, copied: &mut Vec<PathBuf>) {
    let copied_here = copied_here || dir.join("LICENSE").is_file();
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            cuda_sources(&path, copied_here, own, copied);
        } else if path
            .extension()
            .is_some_and(|x| x == "cu" || x == "cuh" || x == "h")
        {
            if copied_here {
                copied.push(path);
            } else {
                own.push(path);
            }
        }
    }
}

#[test]
fn every_kernel_source_opens_with_one_line_saying_what_it_is() {
    let (mut own, mut copied) = (Vec::new(), Vec::new());
    for dir in ["kernels", "tests/gpu"] {
        cuda_sources(&repo().join(dir), false, &mut own, &mut copied);
    }
    assert!(own.len() >= 30, "{own:?}");
    // siboehm's SGEMM tutorial, copied unmodified under its MIT licence, keeps its `#pragma once`.
    assert!(
        copied
            .iter()
            .any(|p| p.ends_with("sgemm-tutorial/src/kernels.cuh")),
        "{copied:?}"
    );
    let wrong: Vec<String> = own
        .iter()
        .filter_map(|p| {
            let text = std::fs::read_to_string(p).unwrap();
            let mut lines = text.lines();
            let first = lines.next().unwrap_or("");
            let second = lines.next().unwrap_or("");
            let says = first
                .strip_prefix("//! ")
                .is_some_and(|t| t.trim().len() >= 20);
            (!says || second.starts_with("//!")).then(|| {
                format!(
                    "{}: {first:?}",
                    p.strip_prefix(repo()).unwrap_or(p).display()
                )
            })
        })
        .collect();
    assert!(
        wrong.is_empty(),
        "these CUDA sources do not open with one `//! what this file is` line (the rest of the header is `//`; docs/suite-format.md):\n{}",
        wrong.join("\n")
    );
}
