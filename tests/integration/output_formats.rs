//! Names from stored files in every output format, read back with a parser: a run whose variant, group-free label and GPU names hold `|`, `<&>`, a spreadsheet formula, control characters and U+FFFE still gives well-formed SVG and JUnit XML (quick-xml), a CSV whose rows all have the header's width and no formula cell (csv), markdown tables whose rows all have their header's columns, and an HTML report in which markup stays text (one script, the charts' images only, no link out).

use std::fs;
use std::path::Path;

use serde_json::Value;

use crate::common::{gpu_lab_in, h200_run, stdout};

/// What an edited or old run.json / results.jsonl may hold where a name goes.
const HOSTILE: &str = "=1+2|x<&>\u{7}\u{fffe}\r\nz";

/// Markup where a name goes: it must stay text in the HTML report (and in a browser, run no script).
pub const MARKUP: &str = "</script><img src=x onerror=\"window.pwned=1\"><b>b</b> [a](javascript:alert(1)) ![i](http://127.0.0.1:9/i.png)";

/// The committed H200 run copied to `runs/hostile` with every job's variant and label, and the
/// GPU's name, made `HOSTILE`.
fn hostile_run(dir: &Path) -> String {
    hostile_run_named(dir, HOSTILE)
}

/// The committed H200 run copied to `runs/hostile` with every job's variant and label, and the
/// GPU's name, made `name` (followed by the variant's own name, which keeps them apart).
pub fn hostile_run_named(dir: &Path, name: &str) -> String {
    let dst = dir.join("runs/hostile");
    fs::create_dir_all(&dst).unwrap();
    let mut info: Value =
        serde_json::from_str(&fs::read_to_string(h200_run().join("run.json")).unwrap()).unwrap();
    info["device"]["name"] = name.into();
    fs::write(dst.join("run.json"), info.to_string()).unwrap();
    let body: String = crate::common::results_text(&h200_run())
        .lines()
        .map(|l| {
            let mut v: Value = serde_json::from_str(l).unwrap();
            if v["kind"] == "job" {
                let variant = format!("{name}{}", v["variant"].as_str().unwrap());
                v["label"] = variant.clone().into();
                v["variant"] = variant.into();
            }
            format!("{v}\n")
        })
        .collect();
    fs::write(dst.join("results.jsonl"), body).unwrap();
    "runs/hostile".into()
}

fn output(dir: &Path, args: &[&str]) -> String {
    stdout(&gpu_lab_in(dir).args(args).assert())
}

/// Reads `xml` to its end with quick-xml, which stops at the first thing that is not well-formed.
fn assert_well_formed(xml: &str, what: &str) {
    let mut reader = quick_xml::Reader::from_str(xml);
    let mut elements = 0;
    loop {
        match reader.read_event() {
            Ok(quick_xml::events::Event::Eof) => break,
            Ok(quick_xml::events::Event::Start(e) | quick_xml::events::Event::Empty(e)) => {
                elements += 1;
                for a in e.attributes() {
                    a.unwrap_or_else(|err| panic!("{what}: an attribute is malformed: {err}"));
                }
            }
            Ok(quick_xml::events::Event::Text(t)) => {
                t.decode()
                    .unwrap_or_else(|err| panic!("{what}: text is malformed: {err}"));
            }
            Ok(_) => {}
            Err(err) => panic!("{what} is not well-formed XML: {err}"),
        }
    }
    assert!(elements > 10, "{what} drew nothing");
    assert!(
        !xml.contains(['\u{7}', '\u{fffe}']),
        "{what} holds characters XML 1.0 cannot"
    );
}

/// The cells of a markdown table row, split at `|` that are not escaped.
fn cells(row: &str) -> usize {
    let mut n = 0;
    let mut escaped = false;
    for c in row.chars() {
        if c == '|' && !escaped {
            n += 1;
        }
        escaped = c == '\\' && !escaped;
    }
    n
}

#[test]
fn hostile_stored_names_keep_svg_and_junit_well_formed() {
    let d = tempfile::tempdir().unwrap();
    let run = hostile_run(d.path());
    assert_well_formed(
        &output(d.path(), &["report", &run, "--format", "svg"]),
        "the chart",
    );
    assert_well_formed(
        &output(d.path(), &["compare", &run, &run, "--format", "svg"]),
        "compare's chart",
    );
    gpu_lab_in(d.path())
        .args(["baseline", "save", "b", "--from", &run])
        .assert()
        .success();
    let junit = output(
        d.path(),
        &[
            "check",
            "--baseline",
            "b",
            "--from",
            &run,
            "--format",
            "junit",
        ],
    );
    assert_well_formed(&junit, "the JUnit report");
}

#[test]
fn hostile_stored_names_keep_csv_rows_whole_and_free_of_formulas() {
    let d = tempfile::tempdir().unwrap();
    let run = hostile_run(d.path());
    for format in ["csv", "frame"] {
        let text = output(d.path(), &["report", &run, "--format", format]);
        let mut reader = csv::Reader::from_reader(text.as_bytes());
        let width = reader.headers().unwrap().len();
        let mut rows = 0;
        for record in reader.records() {
            let record = record.unwrap();
            assert_eq!(record.len(), width, "--format {format}: {record:?}");
            for cell in &record {
                assert!(
                    !cell.starts_with(['=', '+', '@']),
                    "--format {format}: a cell a spreadsheet reads as a formula: {cell:?}"
                );
            }
            rows += 1;
        }
        assert!(rows > 10, "--format {format}: {rows} rows");
    }
}

#[test]
fn hostile_stored_names_keep_every_markdown_table_row_at_its_headers_width() {
    let d = tempfile::tempdir().unwrap();
    let run = hostile_run(d.path());
    for md in [
        output(d.path(), &["report", &run]),
        output(d.path(), &["compare", &run, &run]),
    ] {
        let mut header: Option<usize> = None;
        let mut rows = 0;
        for line in md.lines() {
            match (line.starts_with('|'), header) {
                (true, None) => header = Some(cells(line)),
                (true, Some(width)) => {
                    assert_eq!(cells(line), width, "a row off its table's width: {line}");
                    rows += 1;
                }
                (false, _) => header = None,
            }
        }
        assert!(rows > 10, "{rows} table rows");
    }
}

#[test]
fn hostile_stored_names_stay_text_in_the_html_report() {
    for name in [HOSTILE, MARKUP] {
        let d = tempfile::tempdir().unwrap();
        let run = hostile_run_named(d.path(), name);
        let html = output(d.path(), &["report", &run, "--format", "html"]);
        assert_eq!(html.matches("<script").count(), 1, "{name:?}: one script");
        let figures = html.matches("<figure").count();
        assert!(figures >= 1, "{name:?}: no chart");
        assert_eq!(
            html.matches("<img").count(),
            figures,
            "{name:?}: an image other than the charts"
        );
        assert_eq!(
            html.matches("href=\"").count(),
            html.matches("href=\"#chart-").count() + 1,
            "{name:?}: a link other than to a chart (and the icon's data: URL)"
        );
        assert!(
            !html.contains(['\u{7}', '\u{fffe}']),
            "{name:?}: characters HTML calls errors"
        );
        let rows = html.matches("<tr>").count();
        assert!(rows > 10, "{name:?}: {rows} table rows");
    }
    let d = tempfile::tempdir().unwrap();
    let run = hostile_run_named(d.path(), MARKUP);
    let html = output(d.path(), &["report", &run, "--format", "html"]);
    assert!(
        html.contains("&lt;/script&gt;&lt;img src=x onerror=\"window.pwned=1\"&gt;"),
        "the markup is not shown as escaped text"
    );
    assert!(
        !html.contains("javascript:alert(1)\""),
        "a javascript: link"
    );
}
