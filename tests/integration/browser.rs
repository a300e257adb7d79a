//! The HTML report in a real headless Chromium (ignored by a plain `cargo test`; `.ci/run` installs Debian's chromium and chromium-driver and runs it): every page loads with no console error, a table sorts on a click (numbers numerically, n/a last, both ways), every chart the markdown links is drawn, the page cannot fetch, and a stored name made of markup stays text.

use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::common::{gpu_lab_in, mock_host_program_run_in, mock_run_in, repo, stdout};
use crate::output_formats::{MARKUP, hostile_run_named};
use crate::webdriver::Browser;

/// The committed example and the committed report.md it was made from.
const EXAMPLE: &str = "examples/html/shared-memory-h100.html";
const EXAMPLE_MARKDOWN: &str = "examples/reports/shared-memory/h100/report.md";

/// The charts a markdown report links (`[…](….svg)`), each once.
fn linked_charts(markdown: &str) -> usize {
    let mut charts = BTreeSet::new();
    for part in markdown.split("](").skip(1) {
        if let Some((target, _)) = part.split_once(')')
            && target.ends_with(".svg")
        {
            charts.insert(target.to_string());
        }
    }
    charts.len()
}

/// The page's state once loaded: what the checks below read.
const PAGE_STATE: &str = r#"
var figures = Array.from(document.querySelectorAll('figure.chart'));
return {
  ready: document.readyState,
  title: document.title,
  scripts: document.scripts.length,
  figures: figures.length,
  drawn: figures.filter(function (f) {
    var img = f.querySelector('img');
    return img && img.complete && img.naturalWidth > 0 && img.src.indexOf('data:image/svg+xml;base64,') === 0;
  }).length,
  images: document.images.length,
  sortable: document.querySelectorAll('table.sortable').length,
  pwned: typeof window.pwned !== 'undefined',
  text: document.body.textContent
};"#;

/// Marks the first sortable column (of a table of three rows or more) that `test(header, cells)`
/// accepts for the clicks, as `MARK`; its index, or null.
const PICK_COLUMN: &str = r#"
var test = TEST;
var tables = document.querySelectorAll('table.sortable');
for (var t = 0; t < tables.length; t++) {
  var headers = tables[t].tHead.rows[0].cells;
  var rows = tables[t].tBodies[0].rows;
  for (var c = 0; c < headers.length && rows.length > 2; c++) {
    var cells = Array.from(rows, function (r) { return r.cells[c] ? r.cells[c].textContent.trim() : ''; });
    if (test(headers[c].textContent.trim(), cells)) {
      headers[c].querySelector('button').setAttribute('data-click-MARK', '');
      tables[t].setAttribute('data-column-MARK', c);
      return c;
    }
  }
}
return null;"#;

/// A column of times or rates.
const TIMES: &str = "function (header) { return /^(median ms|GB\\/s)/.test(header); }";
/// A column with missing values (`n/a`, `–`, empty) and two different numbers.
const MIXED: &str = "function (header, cells) { return cells.some(function (c) { return /^(n\\/a|–|)$/.test(c); }) && new Set(cells.filter(function (c) { return /^[0-9]/.test(c); })).size > 1; }";

const READ_COLUMN: &str = r#"
var table = document.querySelector('[data-column-MARK]');
var c = Number(table.getAttribute('data-column-MARK'));
return Array.from(table.tBodies[0].rows, function (r) { return r.cells[c] ? r.cells[c].textContent.trim() : ''; });"#;

/// Sorts the column `test` picks by two real clicks on its header and checks it went up, then
/// down, missing values last; false where the page has no such column.
fn sort_twice(browser: &Browser, page: &str, mark: &str, test: &str) -> bool {
    let pick = PICK_COLUMN.replace("MARK", mark).replace("TEST", test);
    if browser.run(&pick).is_null() {
        return false;
    }
    let read = READ_COLUMN.replace("MARK", mark);
    let click = format!("[data-click-{mark}]");
    browser.click(&click);
    let up: Vec<String> = serde_json::from_value(browser.run(&read)).unwrap();
    assert_sorted(&up, true, page);
    browser.click(&click);
    let down: Vec<String> = serde_json::from_value(browser.run(&read)).unwrap();
    assert_sorted(&down, false, page);
    let distinct: BTreeSet<&String> = up.iter().filter(|c| leading_number(c).is_some()).collect();
    assert!(distinct.len() >= 2, "{page}: nothing to sort: {up:?}");
    assert_ne!(up, down, "{page}: the second click did not reverse");
    true
}

/// A cell's leading number (`17.2 T` in TFLOP/s as 17200 GFLOP/s); None for n/a, `–` or empty.
fn leading_number(cell: &str) -> Option<f64> {
    let digits: String = cell
        .chars()
        .take_while(|c| c.is_ascii_digit() || *c == '.')
        .collect();
    let scale = if cell[digits.len()..].trim() == "T" {
        1e3
    } else {
        1.0
    };
    digits.parse::<f64>().ok().map(|n| n * scale)
}

/// The column as numbers: sorted one way (`ascending` or not), its missing cells all at the end.
fn assert_sorted(cells: &[String], ascending: bool, page: &str) {
    let keys: Vec<Option<f64>> = cells.iter().map(|c| leading_number(c)).collect();
    let numbers: Vec<f64> = keys.iter().map_while(|k| *k).collect();
    assert!(
        keys[numbers.len()..].iter().all(Option::is_none),
        "{page}: a missing value before a number: {cells:?}"
    );
    let in_order = numbers.windows(2).all(|w| {
        if ascending {
            w[0] <= w[1]
        } else {
            w[0] >= w[1]
        }
    });
    assert!(
        in_order,
        "{page}: not sorted {}: {cells:?}",
        if ascending { "up" } else { "down" }
    );
}

/// The browser console since the last look holds no error.
fn assert_no_console_error(browser: &Browser, page: &str, while_doing: &str) {
    let errors: Vec<(String, String)> = browser
        .console()
        .into_iter()
        .filter(|(level, _)| level == "SEVERE")
        .collect();
    assert!(
        errors.is_empty(),
        "{page}: console errors while {while_doing}: {errors:?}"
    );
}

/// Loads `page`, checks it, sorts a column of times and (where there is one) a column with
/// missing values by two clicks each, and tries a fetch; the page's text and whether it had a
/// column with missing values.
fn check_page(browser: &Browser, page: &Path, charts: usize) -> (String, bool) {
    let name = page.display().to_string();
    browser.open(&format!("file://{}", page.display()));
    let state = browser.run(PAGE_STATE);
    assert_eq!(state["ready"], "complete", "{name}");
    assert!(
        state["title"]
            .as_str()
            .unwrap()
            .starts_with("gpu-lab report"),
        "{name}: {}",
        state["title"]
    );
    assert!(charts >= 1, "{name}: the markdown links no chart");
    assert_eq!(state["figures"], charts, "{name}: one figure per chart");
    assert_eq!(state["drawn"], charts, "{name}: every chart drawn");
    assert_eq!(state["images"], charts, "{name}: no image but the charts");
    assert_eq!(state["scripts"], 1, "{name}: the page's own script only");
    assert_no_console_error(browser, &name, "loading");
    assert!(
        state["sortable"].as_u64().unwrap() >= 1,
        "{name}: no sortable table (did the page's script run?)"
    );
    assert_eq!(state["pwned"], false, "{name}: a stored name ran script");

    assert!(
        sort_twice(browser, &name, "times", TIMES),
        "{name}: no column of times to sort"
    );
    let sorted_missing = sort_twice(browser, &name, "mixed", MIXED);

    assert_no_console_error(browser, &name, "sorting");

    // chromedriver answers at this URL, so only the page's policy can stop the fetch.
    let fetch = browser.run(&format!(
        "return fetch('{}').then(function () {{ return 'fetched'; }}, function (e) {{ return 'blocked: ' + e; }});",
        browser.driver_url()
    ));
    assert!(
        fetch.as_str().unwrap().starts_with("blocked"),
        "{name}: the page fetched from the network: {fetch}"
    );
    let refusals = browser.console();
    assert!(
        refusals
            .iter()
            .any(|(_, m)| m.contains("Content Security Policy")),
        "{name}: the fetch was not refused by the page's policy: {refusals:?}"
    );
    (state["text"].as_str().unwrap().to_string(), sorted_missing)
}

/// `report.html` of a run directory and how many charts its report.md links.
fn written_page(run: &Path) -> (PathBuf, usize) {
    let markdown = fs::read_to_string(run.join("report.md")).unwrap();
    (run.join("report.html"), linked_charts(&markdown))
}

#[test]
#[ignore = "needs Chromium and chromedriver (Debian's chromium, chromium-driver); .ci/run runs it"]
fn the_html_report_loads_sorts_and_draws_every_chart_in_chromium() {
    let d = tempfile::tempdir().unwrap();
    let mut pages = vec![
        // Timelines, written at the end of a run beside report.md.
        written_page(&mock_host_program_run_in(d.path())),
        // The roofline.
        written_page(&mock_run_in(d.path(), ["--suite", "matmul"])),
        (
            repo().join(EXAMPLE),
            linked_charts(&fs::read_to_string(repo().join(EXAMPLE_MARKDOWN)).unwrap()),
        ),
    ];
    // Markup in every stored name, by `gpu-lab report RUN --format html`.
    let hostile = hostile_run_named(d.path(), MARKUP);
    let html = stdout(
        &gpu_lab_in(d.path())
            .args(["report", &hostile, "--format", "html"])
            .assert()
            .success(),
    );
    let markdown = stdout(&gpu_lab_in(d.path()).args(["report", &hostile]).assert());
    fs::write(d.path().join("hostile.html"), html).unwrap();
    pages.push((d.path().join("hostile.html"), linked_charts(&markdown)));

    let browser = Browser::start(&d.path().join("chromium-profile"));
    let mut checked: Vec<(String, bool)> = pages
        .iter()
        .map(|(page, charts)| check_page(&browser, page, *charts))
        .collect();
    assert!(
        checked.iter().any(|(_, sorted_missing)| *sorted_missing),
        "no page had a column with missing values to sort"
    );
    let (hostile_text, _) = checked.pop().unwrap();
    assert!(
        hostile_text.contains("</script><img src=x onerror="),
        "the stored markup is not shown as text"
    );
    let roofline: Value = charts_named(&browser, &pages[1].0);
    assert_eq!(roofline, true, "the matmul page draws its roofline");
}

/// Whether the page at `page` has a figure captioned `roofline.svg`.
fn charts_named(browser: &Browser, page: &Path) -> Value {
    browser.open(&format!("file://{}", page.display()));
    browser.run(
        "return Array.from(document.querySelectorAll('figcaption')).some(function (c) { return c.textContent === 'roofline.svg'; });",
    )
}
