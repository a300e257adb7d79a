//! Names in outputs: a suite, variant, buffer or step name that would break a markdown table, a CSV cell, XML, a file name or `plan`'s one line per job is refused when the manifest is loaded, and an over-long suite name gets a clear error instead of "File name too long".

use crate::common::{SMALL_SUITE, write_small_suite};

#[test]
fn names_that_break_an_output_format_are_refused_at_load() {
    let d = tempfile::tempdir().unwrap();
    for bad in [
        "a|b",
        "a\\nb",
        "a\\rb",
        "a\\u0007b",
        "a\\uFFFE",
        "a\\uFFFF",
        "=1+2",
        "+x",
        "-x",
        "@x",
        "<b>",
        "a,b",
    ] {
        for (from, to) in [
            ("name = \"v\"", format!("name = \"{bad}\"")),
            ("name = \"x\"", format!("name = \"{bad}\"")),
        ] {
            let m = SMALL_SUITE.replace(from, &to).replace(
                "args = [\"x\"",
                &format!("args = [\"{}\"", if from.contains('x') { bad } else { "x" }),
            );
            let e = gpu_lab::suite::load(&write_small_suite(d.path(), &m)).unwrap_err();
            assert!(
                e.message.contains("name") && e.fix.contains("letters, digits"),
                "{bad:?} in {from}: {e}"
            );
        }
    }
}

#[test]
fn an_over_long_suite_name_is_refused_at_load_with_a_fix() {
    let d = tempfile::tempdir().unwrap();
    let long = "s".repeat(250);
    let m = SMALL_SUITE.replace("name = \"mine\"", &format!("name = \"{long}\""));
    let e = gpu_lab::suite::load(&write_small_suite(d.path(), &m)).unwrap_err();
    assert!(
        e.message.contains("250 characters, more than the 64") && e.fix.contains("1 to 64"),
        "{e}"
    );
    assert_eq!(e.line, Some(2));
}
