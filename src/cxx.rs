//! Kernels by their C++ name (pure): the `__global__` functions a source declares, the parts of a name expression such as `wt::gemm<float, 64>`, and which compiled symbol a name means.

/// The characters a kernel name expression may hold: identifiers, `::`, template arguments
/// (numbers, types, simple arithmetic, pointers, references). No `;`, `{`, `"` or newline: the
/// expression is pasted into generated source for nvcc, and must not be able to add code to it.
pub fn check_expression(expr: &str) -> Result<(), String> {
    let expr = expr.trim();
    if expr.is_empty() {
        return Err("the kernel name is empty".into());
    }
    if let Some(c) = expr
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || " _:<>,*&()+-/.%".contains(*c)))
    {
        return Err(format!(
            "kernel name `{expr}` holds `{c}`, which no C++ function name or template argument list here may"
        ));
    }
    // Digraphs (`<%` is `{`, `%:` is `#`) and comments could still add code to nvcc's wrapper.
    if let Some(pair) = ["<%", "%>", "%:", "<:", ":>", "//", "/*"]
        .iter()
        .find(|p| expr.contains(*p))
    {
        return Err(format!(
            "kernel name `{expr}` holds `{pair}`, which no C++ function name or template argument list here may"
        ));
    }
    let (mut angle, mut paren) = (0i32, 0i32);
    for c in expr.chars() {
        match c {
            '<' => angle += 1,
            '>' => angle -= 1,
            '(' => paren += 1,
            ')' => paren -= 1,
            _ => {}
        }
        if angle < 0 || paren < 0 {
            break;
        }
    }
    if angle != 0 || paren != 0 {
        return Err(format!("kernel name `{expr}` has unbalanced `<>` or `()`"));
    }
    if !expr.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_' || c == ':') {
        return Err(format!("kernel name `{expr}` does not start with a name"));
    }
    Ok(())
}

/// True when the name needs C++ name lowering (a template, a namespace), as opposed to a plain
/// identifier such as an `extern "C"` kernel's.
pub fn is_plain_identifier(expr: &str) -> bool {
    let e = expr.trim();
    !e.is_empty()
        && e.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        && !e.starts_with(|c: char| c.is_ascii_digit())
}

/// The qualified name without template arguments: `wt::gemm<float, 64>` -> `wt::gemm`.
pub fn qualified_base(expr: &str) -> String {
    let e: String = expr.chars().filter(|c| !c.is_whitespace()).collect();
    let e = e.trim_start_matches("::");
    e.split('<').next().unwrap_or(e).to_string()
}

/// A comma-separated list of C++ names split at the commas outside `<…>` and `(…)`, so that
/// `transpose_tile<1, 0>,copy_row` is two names; each trimmed, empty ones dropped.
pub fn split_names(list: &str) -> Vec<String> {
    let mut names = Vec::new();
    let (mut depth, mut start) = (0i32, 0usize);
    for (i, c) in list.char_indices() {
        match c {
            '<' | '(' => depth += 1,
            '>' | ')' => depth -= 1,
            ',' if depth <= 0 => {
                names.push(list[start..i].trim().to_string());
                start = i + 1;
            }
            _ => {}
        }
    }
    names.push(list[start..].trim().to_string());
    names.retain(|n| !n.is_empty());
    names
}

/// The function's own name: `wt::gemm<float, 64>` -> `gemm`.
pub fn base_name(expr: &str) -> String {
    let q = qualified_base(expr);
    q.rsplit("::").next().unwrap_or(&q).to_string()
}

/// The names of the `__global__` functions `src` declares, in order (each once), found by reading
/// each declaration from `__global__` to its parameter list: `__launch_bounds__(…)` and other
/// `__attribute__`-like groups between them are skipped.
pub fn global_functions(src: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let mut rest = src;
    while let Some(at) = rest.find("__global__") {
        rest = &rest[at + "__global__".len()..];
        let mut cursor = rest;
        let mut last_ident: Option<&str> = None;
        // Walk tokens up to the parameter list's `(`, skipping parenthesised attribute groups.
        loop {
            let trimmed = cursor.trim_start();
            let Some(c) = trimmed.chars().next() else {
                break;
            };
            if c == '(' {
                match last_ident {
                    Some(name) if name.starts_with("__") || name == "alignas" => {
                        // An attribute such as __launch_bounds__(256, 2): skip its arguments.
                        let Some(close) = matching_paren(trimmed) else {
                            break;
                        };
                        cursor = &trimmed[close + 1..];
                        last_ident = None;
                        continue;
                    }
                    Some(name) if !out.iter().any(|n| n == name) => out.push(name.to_string()),
                    _ => {}
                }
                break;
            }
            if c == ';' || c == '{' || c == '}' {
                break;
            }
            if c.is_ascii_alphabetic() || c == '_' {
                let end = trimmed
                    .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                    .unwrap_or(trimmed.len());
                last_ident = Some(&trimmed[..end]);
                cursor = &trimmed[end..];
            } else {
                cursor = &trimmed[c.len_utf8()..];
            }
        }
    }
    out
}

/// Index of the `)` closing the `(` that `s` starts with.
fn matching_paren(s: &str) -> Option<usize> {
    let mut depth = 0usize;
    for (i, c) in s.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => {
                depth -= 1;
                if depth == 0 {
                    return Some(i);
                }
            }
            _ => {}
        }
    }
    None
}

/// Substitutes `{EXPR}` in a kernel name with the value `eval` gives the expression inside the
/// braces: `tile_copy<{TILE}>` with TILE = 32 is `tile_copy<32>`.
pub fn substitute(
    name: &str,
    mut eval: impl FnMut(&str) -> Result<String, String>,
) -> Result<String, String> {
    let mut out = String::new();
    let mut rest = name;
    while let Some(open) = rest.find('{') {
        out.push_str(&rest[..open]);
        let close = rest[open..]
            .find('}')
            .ok_or_else(|| format!("kernel name `{name}` opens `{{` without closing it"))?
            + open;
        out.push_str(&eval(&rest[open + 1..close])?);
        rest = &rest[close + 1..];
    }
    if rest.contains('}') {
        return Err(format!(
            "kernel name `{name}` closes `}}` without opening it"
        ));
    }
    out.push_str(rest);
    Ok(out)
}

/// A name in one spelling for comparison: no whitespace, no literal casts such as `(int)64`
/// (how demanglers print non-type template arguments), no integer suffixes.
pub fn normalize(name: &str) -> String {
    let mut s: String = name.chars().filter(|c| !c.is_whitespace()).collect();
    for cast in [
        "(int)",
        "(unsignedint)",
        "(unsigned)",
        "(long)",
        "(unsignedlong)",
        "(longlong)",
        "(unsignedlonglong)",
        "(short)",
        "(unsignedshort)",
        "(char)",
        "(signedchar)",
        "(unsignedchar)",
        "(bool)",
        "(std::size_t)",
        "(size_t)",
    ] {
        s = s.replace(cast, "");
    }
    // 64u, 64ul, 64ll: the suffix follows a digit and precedes `,` or `>`.
    let chars: Vec<char> = s.chars().collect();
    let mut out = String::with_capacity(s.len());
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if (c == 'u' || c == 'U' || c == 'l' || c == 'L') && i > 0 && chars[i - 1].is_ascii_digit()
        {
            let mut j = i;
            while j < chars.len() && "uUlL".contains(chars[j]) {
                j += 1;
            }
            let starts_number = chars[..i]
                .iter()
                .rev()
                .take_while(|c| c.is_ascii_alphanumeric() || **c == '_')
                .all(|c| c.is_ascii_digit());
            if starts_number && (j == chars.len() || ",>)".contains(chars[j])) {
                i = j;
                continue;
            }
        }
        out.push(c);
        i += 1;
    }
    out
}

/// The function-name part of a demangled kernel symbol: `void wt::gemm<(int)64, float>(int, T2 *)`
/// -> `wt::gemm<(int)64, float>` (kernels return void; the parameter list is dropped).
pub fn demangled_name(demangled: &str) -> String {
    let d = demangled.trim();
    let d = d.strip_prefix("void ").unwrap_or(d);
    // The parameter list is the last top-level parenthesised group.
    let mut depth_angle = 0i32;
    let mut depth_paren = 0i32;
    let mut params_at = None;
    for (i, c) in d.char_indices() {
        match c {
            '<' => depth_angle += 1,
            '>' => depth_angle -= 1,
            '(' => {
                if depth_angle == 0 && depth_paren == 0 {
                    params_at = Some(i);
                }
                depth_paren += 1;
            }
            ')' => depth_paren -= 1,
            _ => {}
        }
    }
    match params_at {
        Some(i) => d[..i].trim().to_string(),
        None => d.to_string(),
    }
}

/// Which of a module's kernels `expr` names, given each kernel's symbol and its demangled form
/// (the symbol itself for `extern "C"` kernels): the one whose name matches in normalised
/// spelling, else the only one with the same qualified name (template arguments written as
/// expressions, `128/2`, do not match textually). Err: the names there are, for the message.
pub fn find_symbol<'a>(
    expr: &str,
    kernels: &'a [(String, String)],
) -> Result<&'a str, Vec<String>> {
    let want = normalize(expr);
    if let Some((symbol, _)) = kernels.iter().find(|(symbol, demangled)| {
        symbol == expr.trim() || normalize(&demangled_name(demangled)) == want
    }) {
        return Ok(symbol);
    }
    let base = qualified_base(expr);
    let same_base: Vec<&(String, String)> = kernels
        .iter()
        .filter(|(_, d)| qualified_base(&demangled_name(d)) == base)
        .collect();
    match same_base.as_slice() {
        [(symbol, _)] => Ok(symbol),
        _ => Err(kernels.iter().map(|(_, d)| demangled_name(d)).collect()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn global_functions_are_found_through_templates_attributes_and_namespaces() {
        let src = r#"
#include <cassert>
namespace wt {
template <const int BM, const int BN>
__global__ void __launch_bounds__((BM * BN) / 64, 1) sgemmWarptiling(int M, float *A) {}
}
extern "C" __global__ void copy(const float* in, float* out) {}
__global__ void copy(int);
__device__ void helper(float) {}
template <typename T> __global__ __launch_bounds__(256) void reduce(T* x);
"#;
        assert_eq!(
            global_functions(src),
            vec!["sgemmWarptiling", "copy", "reduce"]
        );
    }

    #[test]
    fn name_parts_and_substitution() {
        assert_eq!(qualified_base("wt::gemm<float, 64>"), "wt::gemm");
        assert_eq!(base_name("wt::gemm<float, 64>"), "gemm");
        assert_eq!(base_name("copy"), "copy");
        assert!(
            is_plain_identifier("transpose_naive")
                && !is_plain_identifier("gemm<64>")
                && !is_plain_identifier("wt::f")
        );
        let tile = |e: &str| {
            if e == "TILE" {
                Ok("32".to_string())
            } else {
                Err(format!("unknown {e}"))
            }
        };
        assert_eq!(
            substitute("tile_copy<{TILE}, float>", tile).unwrap(),
            "tile_copy<32, float>"
        );
        assert!(
            substitute("tile_copy<{TILE>", tile)
                .unwrap_err()
                .contains("without closing")
        );
        assert!(
            substitute("tile_copy<{N}>", tile)
                .unwrap_err()
                .contains("unknown N")
        );
    }

    #[test]
    fn expressions_that_could_add_code_are_refused() {
        assert!(check_expression("sgemm2DBlocktiling<128, 128, 8, 8, 8>").is_ok());
        assert!(check_expression("wt::gemm<float, 64 * 2>").is_ok());
        for bad in [
            "k; int x", "k<1>{}", "k\nint", "k\"", "gemm<64", "", "  ", "1abc",
        ] {
            assert!(check_expression(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn demangled_symbols_match_the_users_spelling() {
        let kernels = vec![
            (
                "_ZN2wt4gemmILi64EfEEviPT0_".to_string(),
                "void wt::gemm<(int)64, float>(int, T2 *)".to_string(),
            ),
            (
                "_Z5scaleILi128E6__halfEviPT0_".to_string(),
                "void scale<(int)128, __half>(int, T2 *)".to_string(),
            ),
            (
                "_Z5scaleILi256E6__halfEviPT0_".to_string(),
                "void scale<256, __half>(int, T2*)".to_string(),
            ),
            ("copy".to_string(), "copy".to_string()),
        ];
        assert_eq!(
            find_symbol("wt::gemm<64, float>", &kernels),
            Ok("_ZN2wt4gemmILi64EfEEviPT0_")
        );
        assert_eq!(
            find_symbol("scale<128, __half>", &kernels),
            Ok("_Z5scaleILi128E6__halfEviPT0_")
        );
        assert_eq!(
            find_symbol("scale<256u,__half>", &kernels),
            Ok("_Z5scaleILi256E6__halfEviPT0_")
        );
        assert_eq!(find_symbol("copy", &kernels), Ok("copy"));
        // An argument written as an expression still finds the only instantiation of its template.
        assert_eq!(
            find_symbol("wt::gemm<32 * 2, float>", &kernels),
            Ok("_ZN2wt4gemmILi64EfEEviPT0_")
        );
        // Two instantiations: an expression cannot choose, and the error lists what there is.
        let names = find_symbol("scale<64 * 2, __half>", &kernels).unwrap_err();
        assert!(
            names.contains(&"scale<(int)128, __half>".to_string()) && names.len() == 4,
            "{names:?}"
        );
        assert_eq!(normalize("f<(unsigned int)3u, 2ll>"), "f<3,2>");
        assert_eq!(normalize("f<uint4, float2>"), "f<uint4,float2>");
    }

    #[test]
    fn a_list_of_names_splits_only_at_commas_outside_template_and_parameter_lists() {
        assert_eq!(
            split_names("transpose_tile<1, 0>, copy_row,,void f(int, float)"),
            ["transpose_tile<1, 0>", "copy_row", "void f(int, float)"]
        );
        assert!(split_names("").is_empty());
        assert_eq!(split_names("a<b<c, d>, e>"), ["a<b<c, d>, e>"]);
    }
}
