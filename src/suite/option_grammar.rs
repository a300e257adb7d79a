//! What a manifest may pass to a compiler (pure): an allow-list of options, each by its exact flag
//! and the grammar of its value, the grammar of a define's name, and the characters an argument
//! may hold at all. nvcc runs its steps through a shell, so no manifest string may carry one of
//! the shell's characters (`$`, a backtick, `;`, `|`, quotes, spaces, …) into an argument.

/// The characters any compiler argument built from a manifest may hold: letters, digits and
/// `_ . , = + - / : @ %`. None of them means anything to a POSIX shell.
pub fn shell_safe(arg: &str) -> bool {
    !arg.is_empty()
        && arg
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "_.,=+-/:@%".contains(c))
}

/// The first character of `arg` a shell could act on, for an error message.
pub fn first_unsafe(arg: &str) -> Option<char> {
    arg.chars()
        .find(|c| !(c.is_ascii_alphanumeric() || "_.,=+-/:@%".contains(*c)))
}

/// A C identifier, as a macro name must be: `[A-Za-z_][A-Za-z0-9_]*`, at most 128 characters.
pub fn is_define_name(name: &str) -> bool {
    name.len() <= 128
        && name.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// A define's value written in an option (`-DNAME=value`): a number or an identifier-like token
/// (`[A-Za-z0-9_.+-]`, at most 64 characters). An expression belongs in `defines`.
fn is_define_value(value: &str) -> bool {
    value.len() <= 64
        && value
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "_.+-".contains(c))
}

/// A path value (`-Idir`, `--pre-include=file`): relative or absolute, shell-safe, no `..` games
/// beyond what the containment check sees (it resolves the path).
fn is_path(value: &str) -> bool {
    shell_safe(value) && !value.starts_with('-')
}

/// The options that take no value.
const FLAGS: &[&str] = &[
    "-G",
    "--device-debug",
    "-lineinfo",
    "--generate-line-info",
    "--use_fast_math",
    "-use_fast_math",
    "--use-fast-math",
    "--extra-device-vectorization",
    "-extra-device-vectorization",
    "--restrict",
    "-restrict",
    "--expt-relaxed-constexpr",
    "-expt-relaxed-constexpr",
    "--extended-lambda",
    "-extended-lambda",
    "--expt-extended-lambda",
    "-expt-extended-lambda",
    "--disable-warnings",
    "-w",
    "--resource-usage",
    "-res-usage",
    "--Wno-deprecated-gpu-targets",
    "-Wno-deprecated-gpu-targets",
    "--Wno-deprecated-declarations",
    "-Wno-deprecated-declarations",
    "--Wreorder",
    "-Wreorder",
    "--dopt",
    "--device-as-default-execution-space",
    "-default-device",
];

/// Options of the form `FLAG=VALUE`, with the values each allows.
const VALUED: &[(&[&str], &[&str])] = &[
    (
        &["--std", "-std"],
        &["c++03", "c++11", "c++14", "c++17", "c++20"],
    ),
    (
        &[
            "--ftz",
            "-ftz",
            "--prec-div",
            "-prec-div",
            "--prec-sqrt",
            "-prec-sqrt",
            "--fmad",
            "-fmad",
        ],
        &["true", "false"],
    ),
    (&["--dopt", "-dopt"], &["on", "off"]),
];

/// Options whose value is a list of ptxas options (`-Xptxas=-v,-dlcm=cg`).
const PTXAS: &[&str] = &["-Xptxas", "--ptxas-options"];
/// Options whose value is a list of host-compiler options.
const HOST: &[&str] = &["-Xcompiler", "--compiler-options"];

/// Why an option is refused: the message and the fix.
pub struct Refusal {
    pub message: String,
    pub fix: String,
}

/// The options that take a separate value as the next entry (`"-Xptxas", "-v"`).
pub fn takes_next_value(option: &str) -> bool {
    PTXAS.contains(&option) || HOST.contains(&option)
}

/// One option (with `next`, the following entry, for the split forms of `takes_next_value`):
/// allowed by exact flag and value grammar, or refused with what is wrong and how to fix it.
pub fn check_option(option: &str) -> Result<(), Refusal> {
    let refuse = |message: String, fix: &str| {
        Err(Refusal {
            message,
            fix: fix.to_string(),
        })
    };
    if let Some(c) = first_unsafe(option) {
        return refuse(
            format!(
                "option `{}` holds `{}`, which nvcc's shell could act on (gpu-lab allows letters, digits and `_ . , = + - / : @ %` in options)",
                option.escape_debug(),
                c.escape_debug()
            ),
            "remove the character; a value with spaces or quotes cannot be passed to the compiler from a manifest (docs/trust.md)",
        );
    }
    if FLAGS.contains(&option) {
        return Ok(());
    }
    let (flag, value) = match option.split_once('=') {
        Some((f, v)) => (f, Some(v)),
        None => (option, None),
    };
    if let Some((_, values)) = VALUED.iter().find(|(flags, _)| flags.contains(&flag)) {
        return match value {
            Some(v) if values.contains(&v) => Ok(()),
            _ => refuse(
                format!(
                    "option `{option}` needs one of the values {}",
                    values.join(", ")
                ),
                &format!("write it as `{flag}={}`", values[0]),
            ),
        };
    }
    if matches!(flag, "--maxrregcount" | "-maxrregcount") {
        return match value.and_then(|v| v.parse::<u32>().ok()) {
            Some(n) if (1..=255).contains(&n) => Ok(()),
            _ => refuse(
                format!("option `{option}` needs a register count from 1 to 255"),
                "write it as `--maxrregcount=N`",
            ),
        };
    }
    if matches!(option, "-O0" | "-O1" | "-O2" | "-O3") {
        return Ok(());
    }
    if let Some(rest) = option
        .strip_prefix("-D")
        .or_else(|| option.strip_prefix("--define-macro="))
    {
        let (name, value) = rest.split_once('=').unwrap_or((rest, ""));
        return if is_define_name(name) && is_define_value(value) {
            Ok(())
        } else {
            refuse(
                format!(
                    "option `{option}` is not a define of a C identifier (`[A-Za-z_][A-Za-z0-9_]*`) with a number or name as its value"
                ),
                "write it as `-DNAME=value`, or put it in `defines = { NAME = \"expression\" }`",
            )
        };
    }
    if let Some(name) = option.strip_prefix("-U") {
        return if is_define_name(name) {
            Ok(())
        } else {
            refuse(
                format!("option `{option}` does not undefine a C identifier"),
                "write it as `-UNAME`",
            )
        };
    }
    if let Some(path) =
        super::options::include_dir(option).or_else(|| super::options::pre_include_file(option))
    {
        return if is_path(path) {
            Ok(())
        } else {
            refuse(
                format!("option `{option}` names a path gpu-lab cannot pass to a compiler"),
                "name a path relative to suite.toml of letters, digits and `_ . - /`",
            )
        };
    }
    if PTXAS.contains(&flag) || HOST.contains(&flag) {
        return match value {
            Some(v) => check_sub_options(flag, v),
            None => Ok(()), // the split form: the next entry is checked with check_sub_options
        };
    }
    refuse(
        format!(
            "option `{option}` is not one gpu-lab passes to a compiler from a manifest: options that pick the compiler's programs (`-ccbin`), its output, its architecture or other files are refused, and any option not on the list"
        ),
        "remove it; the options allowed are listed in docs/suite-format.md (compilers, headers and options); ask for one to be added if a kernel needs it",
    )
}

/// The value of `-Xptxas`/`-Xcompiler` (comma-separated): ptxas options of a small grammar, and
/// only warning, optimisation and debug options for the host compiler (`-fplugin=`, `-B` and
/// the like would run a program of the manifest's choosing).
pub fn check_sub_options(flag: &str, value: &str) -> Result<(), Refusal> {
    let host = HOST.contains(&flag);
    for part in value.split(',') {
        let ok = if host {
            matches!(
                part,
                "-O0" | "-O1" | "-O2" | "-O3" | "-g" | "-Wall" | "-Wextra" | "-w"
            ) || (part.starts_with("-Wno-")
                && part[5..]
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '-'))
        } else {
            part.starts_with('-')
                && part.len() > 1
                && part[1..]
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || "_=.-".contains(c))
                && !part.starts_with("--output")
                && !part.starts_with("-o")
        };
        if !ok {
            return Err(Refusal {
                message: format!(
                    "`{}` in `{flag}` is not an option gpu-lab passes on",
                    part.escape_debug()
                ),
                fix: if host {
                    "the host compiler gets only -O0..-O3, -g, -w, -Wall, -Wextra and -Wno-… from a manifest; remove the rest".into()
                } else {
                    "give ptxas options as `-Xptxas=-v,-dlcm=cg` (letters, digits, `_ = . -`)"
                        .into()
                },
            });
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn common_options_are_allowed() {
        for o in [
            "-G",
            "--use_fast_math",
            "--maxrregcount=32",
            "--std=c++17",
            "-O3",
            "-DTILE=32",
            "-DDEBUG",
            "-Iinc",
            "--include-path=../shared",
            "--pre-include=pre.cuh",
            "-Xptxas=-v,-dlcm=cg",
            "--ftz=true",
            "-Xcompiler=-O2,-Wall",
            "-Xptxas",
        ] {
            assert!(check_option(o).is_ok(), "{o}");
        }
    }

    #[test]
    fn options_that_run_programs_or_reach_a_shell_are_refused() {
        for o in [
            "-ccbin=/tmp/evil",
            "-ccbin",
            "--compiler-bindir=/tmp",
            "-DX=$(touch /tmp/p)",
            "-D$(id)",
            "-O3`id`",
            "-Xcompiler=-fplugin=/tmp/x.so",
            "-Xcompiler=-B/tmp",
            "-Xcompiler=;id",
            "--options-file=x",
            "-optf=x",
            "-o",
            "--output-file=/etc/x",
            "-arch=sm_50",
            "--run",
            "-DX=a b",
            "--maxrregcount=0",
            "--std=gnu++17;id",
            "-Xlinker=-rpath",
            "--keep-dir=/tmp",
            "-DX=1|id",
        ] {
            assert!(check_option(o).is_err(), "{o}");
        }
        assert!(check_sub_options("-Xcompiler", "-fplugin=x.so").is_err());
        assert!(check_sub_options("-Xptxas", "-v").is_ok());
    }

    #[test]
    fn define_names_are_c_identifiers() {
        for ok in ["TILE", "_X", "a1_b"] {
            assert!(is_define_name(ok), "{ok}");
        }
        for bad in ["", "1X", "X$(id)", "X Y", "X=1", "X`y`", "é"] {
            assert!(!is_define_name(bad), "{bad}");
        }
    }
}
