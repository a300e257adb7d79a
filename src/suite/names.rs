//! The grammar of names a manifest gives (suite, variant, buffer, step label) (pure): they reach
//! directory and file names, markdown tables, CSV cells, SVG and XML text, and `plan`'s one line
//! per job, so they are kept to characters none of those treat specially.

/// The longest suite name: it is part of each run's directory name (with a 16-character time
/// stamp and the GPU's slug), which most file systems cap at 255 bytes.
pub const MAX_SUITE_NAME: usize = 64;
/// The longest variant, buffer or step name.
pub const MAX_NAME: usize = 128;

/// Why `name` (a `what`, e.g. "suite name") breaks the grammar, if it does: 1 to `max`
/// characters of `A-Z a-z 0-9 _ . - +`, starting with a letter, a digit or `_` (so never `=`,
/// `+`, `-`, `@`, which a spreadsheet reads as a formula, nor `.`), not `..`.
pub fn name_problem(what: &str, name: &str, max: usize) -> Option<String> {
    let shown = name
        .chars()
        .take(40)
        .collect::<String>()
        .escape_debug()
        .to_string();
    if name.is_empty() {
        return Some(format!("the {what} is empty"));
    }
    if name.chars().count() > max {
        return Some(format!(
            "the {what} `{shown}…` has {} characters, more than the {max} allowed (it becomes part of file names)",
            name.chars().count()
        ));
    }
    if let Some(c) = name
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || "_.-+".contains(*c)))
    {
        return Some(format!(
            "the {what} `{shown}` holds `{}`, which names may not (they reach file names, tables, CSV and XML)",
            c.escape_debug()
        ));
    }
    if !name.starts_with(|c: char| c.is_ascii_alphanumeric() || c == '_') {
        return Some(format!(
            "the {what} `{shown}` starts with `{}`; a name starts with a letter, a digit or `_`",
            name.chars().next().unwrap_or(' ')
        ));
    }
    if name.contains("..") {
        return Some(format!("the {what} `{shown}` holds `..`"));
    }
    None
}

/// The fix every name error gives.
pub fn name_fix(max: usize) -> String {
    format!(
        "use 1 to {max} characters of letters, digits, `_`, `.`, `-` and `+`, starting with a letter, a digit or `_` (docs/suite-format.md, names)"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_of_plain_characters_pass() {
        for n in ["transpose", "v1_tiled-32", "gemm.f16", "_x", "9a", "a+b"] {
            assert_eq!(name_problem("name", n, MAX_NAME), None, "{n}");
        }
    }

    #[test]
    fn names_that_break_an_output_format_are_refused() {
        for n in [
            "",
            "a|b",
            "a\nb",
            "a\rb",
            "a\u{7}b",
            "a\u{fffe}",
            "a\u{ffff}",
            "=1+2",
            "+x",
            "-x",
            "@x",
            ".hidden",
            "a/b",
            "a..b",
            "a b",
            "<svg>",
            "a&b",
            "a\"b",
            "a,b",
        ] {
            assert!(name_problem("name", n, MAX_NAME).is_some(), "{n:?}");
        }
        let long = "a".repeat(MAX_SUITE_NAME + 1);
        assert!(
            name_problem("suite name", &long, MAX_SUITE_NAME)
                .unwrap()
                .contains("more than the 64")
        );
    }
}
