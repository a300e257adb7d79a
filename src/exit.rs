//! The process exit codes, as documented in `gpu-lab --help`; every command returns one of these.

/// Everything asked for was done.
pub const OK: i32 = 0;
/// An error stopped the command (its message says what and how to fix it).
pub const ERROR: i32 = 1;
/// The command line itself is wrong (clap's own code for usage errors).
pub const USAGE: i32 = 2;
/// `check` found a regression.
pub const REGRESSION: i32 = 3;
/// Some jobs failed, were wrong or could not be profiled; the others are kept (also `ncu`/`import`: the program or a kernel failed).
pub const JOBS_FAILED: i32 = 4;

/// The `--help` text that lists them.
pub const HELP: &str = "Exit codes: 0 ok, 1 error, 2 usage, 3 regression found, 4 some jobs failed (the others are kept).";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_help_text_lists_every_code() {
        for (code, word) in [
            (OK, "ok"),
            (ERROR, "error"),
            (USAGE, "usage"),
            (REGRESSION, "regression"),
            (JOBS_FAILED, "some jobs failed"),
        ] {
            assert!(HELP.contains(&format!("{code} {word}")), "{code} {word}");
        }
    }
}
