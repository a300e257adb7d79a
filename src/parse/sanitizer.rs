//! compute-sanitizer's output read back (pure): its `--xml --save` file into findings, identical reports counted once, and the total its text summary prints.
//!
//! Real files (compute-sanitizer 2025.3.1, H100) are in tests/fixtures/sanitizer: each report is a
//! `<record>` with `<kind>`, `<what><text>` and `<where><func>/<path>/<line>`; racecheck's
//! analysis puts a `<source>` and a `<destination>` (with the hazard `<count>`) under `<what>`.
//! The file holds at most the print limit's reports, so the text summary's total is read too.

use std::collections::BTreeMap;

use quick_xml::Reader;
use quick_xml::events::Event;

use crate::records::Finding;

/// What one `<record>` said, by element path below it (`what/text`, `where/line`, …).
type Fields = BTreeMap<String, String>;

/// The distinct findings of an XML report, in the order first seen; `Err` says why the file
/// cannot be read (malformed, truncated, not compute-sanitizer's).
pub fn parse_xml(text: &str) -> Result<Vec<Finding>, String> {
    let mut reader = Reader::from_str(text);
    let mut path: Vec<String> = Vec::new();
    let mut record: Option<Fields> = None;
    let mut findings: Vec<Finding> = Vec::new();
    let mut root_seen = false;
    loop {
        let event = reader.read_event().map_err(|e| {
            format!(
                "malformed or truncated XML at byte {}: {e}",
                reader.buffer_position()
            )
        })?;
        match event {
            Event::Start(e) => {
                let name = String::from_utf8_lossy(e.name().as_ref()).into_owned();
                if path.is_empty() {
                    check_root(&name)?;
                    root_seen = true;
                }
                if path.len() == 1 && name == "record" {
                    record = Some(Fields::new());
                }
                path.push(name);
            }
            Event::Empty(e) if path.is_empty() => {
                check_root(&String::from_utf8_lossy(e.name().as_ref()))?;
                root_seen = true;
            }
            Event::End(_) => {
                if path.len() == 2
                    && path[1] == "record"
                    && let Some(fields) = record.take()
                {
                    add(&mut findings, finding(&fields));
                }
                path.pop();
            }
            Event::Text(t) => append(&mut record, &path, &t.decode().unwrap_or_default()),
            Event::GeneralRef(r) => {
                let name = String::from_utf8_lossy(&r).into_owned();
                append(&mut record, &path, &entity(&name));
            }
            Event::Eof => break,
            _ => {}
        }
    }
    if !root_seen {
        return Err(
            "no <ComputeSanitizerOutput> element: the file is empty or not compute-sanitizer's XML"
                .into(),
        );
    }
    if !path.is_empty() {
        return Err(format!(
            "the XML ends inside <{}>: the file is truncated (the sanitizer was killed or the disk filled)",
            path.join("><")
        ));
    }
    Ok(findings)
}

fn check_root(name: &str) -> Result<(), String> {
    if name == "ComputeSanitizerOutput" {
        Ok(())
    } else {
        Err(format!(
            "the root element is <{name}>, not <ComputeSanitizerOutput>: not compute-sanitizer's XML"
        ))
    }
}

/// Adds text inside a record to the field of its path below the record.
fn append(record: &mut Option<Fields>, path: &[String], text: &str) {
    if let Some(fields) = record.as_mut().filter(|_| path.len() > 2) {
        fields
            .entry(path[2..].join("/"))
            .or_default()
            .push_str(text);
    }
}

/// The character an XML entity or character reference stands for.
fn entity(name: &str) -> String {
    match name {
        "amp" => "&".into(),
        "lt" => "<".into(),
        "gt" => ">".into(),
        "quot" => "\"".into(),
        "apos" => "'".into(),
        _ => {
            let code = name
                .strip_prefix("#x")
                .and_then(|h| u32::from_str_radix(h, 16).ok())
                .or_else(|| name.strip_prefix('#').and_then(|d| d.parse().ok()));
            code.and_then(char::from_u32)
                .map(String::from)
                .unwrap_or_else(|| format!("&{name};"))
        }
    }
}

/// The finding one record makes.
fn finding(f: &Fields) -> Finding {
    let get = |k: &str| {
        f.get(k)
            .map(|v| v.trim().to_string())
            .filter(|v| !v.is_empty())
    };
    let place = |prefix: &str| {
        let file = get(&format!("{prefix}where/path"))?;
        let file = file.rsplit('/').next().unwrap_or(&file).to_string();
        Some(match get(&format!("{prefix}where/line")) {
            Some(line) if line != "0" => format!("{file}:{line}"),
            _ => file,
        })
    };
    let mut what = get("what/text").unwrap_or_else(|| "(no description)".into());
    if let Some(t) = get("what/type") {
        what = format!("{what}: {t}");
    }
    let race = get("what/source/direction").is_some();
    let (kernel, location, hazards) = if race {
        let side = |s: &str| {
            format!(
                "{} at {}",
                get(&format!("what/{s}/direction")).unwrap_or_default(),
                place(&format!("what/{s}/"))
                    .or_else(|| get(&format!("what/{s}/where/pc")))
                    .unwrap_or_else(|| "?".into())
            )
        };
        what = format!("{what}: {} and {}", side("source"), side("destination"));
        (
            get("what/source/where/func").unwrap_or_default(),
            place("what/source/"),
            get("what/destination/count").and_then(|c| c.parse().ok()),
        )
    } else {
        (get("where/func").unwrap_or_default(), place(""), None)
    };
    Finding {
        kind: get("kind").unwrap_or_default(),
        what,
        kernel,
        location,
        level: get("level"),
        reports: 1,
        hazards,
    }
}

/// Adds a finding, or counts it on an identical one already there.
fn add(findings: &mut Vec<Finding>, new: Finding) {
    let same = |f: &&mut Finding| {
        (&f.kind, &f.what, &f.kernel, &f.location, &f.level)
            == (&new.kind, &new.what, &new.kernel, &new.location, &new.level)
    };
    match findings.iter_mut().find(same) {
        Some(f) => {
            f.reports += 1;
            f.hazards = match (f.hazards, new.hazards) {
                (Some(a), Some(b)) => Some(a + b),
                (a, b) => a.or(b),
            };
        }
        None => findings.push(new),
    }
}

/// The total the text output's summary prints: `ERROR SUMMARY: N errors`, or racecheck's
/// `RACECHECK SUMMARY: N hazards displayed (E errors, W warnings)` (its hazards); `None` when
/// there is no summary line (the sanitizer died first).
pub fn summary_total(log: &str) -> Option<u64> {
    let number_after = |line: &str, marker: &str| -> Option<u64> {
        let rest = &line[line.find(marker)? + marker.len()..];
        rest.split_whitespace().next()?.parse().ok()
    };
    log.lines()
        .filter(|l| !l.contains("were not printed"))
        .filter_map(|l| {
            number_after(l, "ERROR SUMMARY:").or_else(|| number_after(l, "RACECHECK SUMMARY:"))
        })
        .max()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The captured files, compiled in (a pure module reads no file).
    fn fixture(name: &str) -> String {
        match name {
            "initcheck.xml" => include_str!("../../tests/fixtures/sanitizer/initcheck.xml"),
            "initcheck.txt" => include_str!("../../tests/fixtures/sanitizer/initcheck.txt"),
            "racecheck.xml" => include_str!("../../tests/fixtures/sanitizer/racecheck.xml"),
            "racecheck.txt" => include_str!("../../tests/fixtures/sanitizer/racecheck.txt"),
            "synccheck.xml" => include_str!("../../tests/fixtures/sanitizer/synccheck.xml"),
            "synccheck.txt" => include_str!("../../tests/fixtures/sanitizer/synccheck.txt"),
            "memcheck-clean.xml" => {
                include_str!("../../tests/fixtures/sanitizer/memcheck-clean.xml")
            }
            "memcheck-clean.txt" => {
                include_str!("../../tests/fixtures/sanitizer/memcheck-clean.txt")
            }
            _ => unreachable!("no fixture {name}"),
        }
        .to_string()
    }

    #[test]
    fn initchecks_one_report_per_thread_make_one_finding_with_a_count_and_a_place() {
        let found = parse_xml(&fixture("initcheck.xml")).unwrap();
        assert_eq!(found.len(), 1, "{found:?}");
        let f = &found[0];
        assert_eq!(f.kind, "Initcheck");
        assert_eq!(
            f.what,
            "Uninitialized __global__ memory read of size 4 bytes"
        );
        assert_eq!(f.kernel, "uninit_read");
        assert_eq!(f.location.as_deref(), Some("planted.cu:10"));
        assert_eq!(f.reports, 20);
        assert_eq!(
            summary_total(&fixture("initcheck.txt")),
            Some(1_048_576),
            "the summary counts past the print limit"
        );
    }

    #[test]
    fn a_racecheck_analysis_names_both_sides_and_its_hazards() {
        let found = parse_xml(&fixture("racecheck.xml")).unwrap();
        assert_eq!(found.len(), 1);
        let f = &found[0];
        assert_eq!(f.kind, "Analysis");
        assert_eq!(f.level.as_deref(), Some("Error"));
        assert_eq!(
            f.what,
            "Race condition: Write at planted.cu:22 and Read at planted.cu:24"
        );
        assert_eq!(f.kernel, "smem_race");
        assert_eq!(f.hazards, Some(4096));
        assert_eq!(summary_total(&fixture("racecheck.txt")), Some(1));
    }

    #[test]
    fn a_divergent_barrier_is_one_synccheck_finding() {
        let found = parse_xml(&fixture("synccheck.xml")).unwrap();
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!(found[0].what, "Barrier error: Divergent thread(s) in warp");
        assert_eq!(found[0].kernel, "divergent_sync");
        assert_eq!(found[0].location.as_deref(), Some("planted.cu:16"));
        assert_eq!(summary_total(&fixture("synccheck.txt")), Some(64));
    }

    #[test]
    fn a_clean_run_has_no_finding_and_a_zero_total() {
        assert_eq!(parse_xml(&fixture("memcheck-clean.xml")).unwrap(), []);
        assert_eq!(summary_total(&fixture("memcheck-clean.txt")), Some(0));
        assert_eq!(summary_total("the child crashed\n"), None);
    }

    #[test]
    fn a_truncated_empty_or_foreign_file_is_an_error_that_says_so() {
        let full = fixture("initcheck.xml");
        let cut = &full[..full.len() / 2];
        assert!(parse_xml(cut).unwrap_err().contains("truncated"));
        assert!(parse_xml("").unwrap_err().contains("empty"));
        assert!(
            parse_xml("<svg></svg>")
                .unwrap_err()
                .contains("not compute-sanitizer")
        );
        assert!(parse_xml("<ComputeSanitizerOutput><record><kind>x</record>").is_err());
    }

    #[test]
    fn entities_in_names_are_decoded() {
        let xml = "<ComputeSanitizerOutput><record><kind>Memcheck</kind><what><text>Invalid __global__ write of size 4 bytes</text></what><where><func>k&lt;float&gt;(float*, int)</func><path>/a/b/x.cu</path><line>7</line></where></record></ComputeSanitizerOutput>";
        let found = parse_xml(xml).unwrap();
        assert_eq!(found[0].kernel, "k<float>(float*, int)");
        assert_eq!(found[0].location.as_deref(), Some("x.cu:7"));
    }
}
