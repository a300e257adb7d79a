//! The history's three outputs of three runs (copies of the committed H200 run, the second 10% and the third 20% slower: test data, not measurements): the markdown table, the CSV read back, the SVG well-formed.

use super::*;
use crate::history::tests::three_runs;
use crate::history::{Measure, Selection, trends};

fn three() -> Trends {
    let rows = three_runs();
    let key = rows[0].fingerprint.clone();
    trends(
        &rows,
        &Selection {
            fingerprint: &key,
            measure: Measure::TimeMs,
            variants: &[],
            since: None,
        },
    )
}

#[test]
fn markdown_shows_each_job_run_by_run_with_its_change() {
    let t = three();
    let md = exporter(Format::Md).render(&t).unwrap();
    assert!(md.starts_with("# History of `transpose`"), "{md}");
    assert!(md.contains("3 runs"), "{md}");
    assert!(md.contains("| run started (UTC)"), "{md}");
    // The committed run was timed warm: its medians say so where they are shown.
    assert!(t.warm && md.contains("| median (ms) (L2 warm) |"), "{md}");
    assert!(md.contains("+10.0%") && md.contains("+20.0%"), "{md}");
    assert_eq!(md.matches("### ").count(), t.trends.len());
    assert!(!md.contains("MOCK"));
}

#[test]
fn csv_holds_one_row_per_job_and_run() {
    let t = three();
    let text = exporter(Format::Csv).render(&t).unwrap();
    let mut r = ::csv::Reader::from_reader(text.as_bytes());
    let header = r.headers().unwrap().clone();
    let rows: Vec<::csv::StringRecord> = r.records().map(Result::unwrap).collect();
    assert_eq!(rows.len(), t.trends.len() * 3);
    let change = header
        .iter()
        .position(|h| h == "change_vs_first_pct")
        .unwrap();
    let last = &rows[2];
    assert!(
        (last[change].parse::<f64>().unwrap() - 20.0).abs() < 1e-3,
        "{last:?}"
    );
}

#[test]
fn the_chart_is_well_formed_svg_with_a_panel_per_job() {
    let t = three();
    let svg = exporter(Format::Svg).render(&t).unwrap();
    let mut reader = quick_xml::Reader::from_str(&svg);
    loop {
        match reader.read_event() {
            Ok(quick_xml::events::Event::Eof) => break,
            Ok(_) => {}
            Err(e) => panic!("not well-formed: {e}"),
        }
    }
    assert_eq!(svg.matches("<circle").count(), t.trends.len() * 3);
    assert!(svg.contains("over 3 runs"));
}
