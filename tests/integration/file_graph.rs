//! The import graph between the files of `src/`, read from their text: every `use` tree (grouped ones expanded) and every path written inline (`crate::m::f(..)`, `super::f(..)`, `child::f(..)`) resolved to the file that defines it, and the cycles of that graph as chains of files.
//!
//! A path resolves to the longest prefix of it that is a file: `crate::a::b::c` is `a/b/c.rs` or
//! `a/b/c/mod.rs` if that exists, else `a/b.rs` or `a/b/mod.rs`, else `a.rs` or `a/mod.rs`, else
//! `lib.rs`. So a child that takes `super::X` from its `mod.rs` imports that `mod.rs`, even when
//! `X` is only re-exported there; declaring `mod child;` imports nothing. Comments and string
//! literals are not read; `super` and `self` count from the inline module (`mod tests { .. }`)
//! they are written in.

use std::collections::{BTreeMap, BTreeSet, VecDeque};

/// File -> the files it imports from (relative paths under `src/`).
pub type Graph = BTreeMap<String, BTreeSet<String>>;

/// Where a path that a file names leads.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    /// An item of this crate: its full module path from the crate root, items included.
    Crate(Vec<String>),
    /// Another crate (`std`, `serde`, ..) or a name in scope (`Kind::A`): the path as written.
    Outside(Vec<String>),
}

/// `text` with comments and the insides of string and character literals replaced by spaces
/// (newlines kept), so that what remains is code.
pub fn code_only(text: &str) -> String {
    let c: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len());
    let blank = |out: &mut String, ch: char| out.push(if ch == '\n' { '\n' } else { ' ' });
    let ident = |ch: char| ch.is_alphanumeric() || ch == '_';
    let mut i = 0;
    while i < c.len() {
        let at = |k: usize| c.get(i + k).copied().unwrap_or('\0');
        if at(0) == '/' && at(1) == '/' {
            while i < c.len() && c[i] != '\n' {
                blank(&mut out, c[i]);
                i += 1;
            }
        } else if at(0) == '/' && at(1) == '*' {
            let mut depth = 0;
            while i < c.len() {
                if c[i] == '/' && c.get(i + 1) == Some(&'*') {
                    depth += 1;
                    out.push_str("  ");
                    i += 2;
                } else if c[i] == '*' && c.get(i + 1) == Some(&'/') {
                    depth -= 1;
                    out.push_str("  ");
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    blank(&mut out, c[i]);
                    i += 1;
                }
            }
        } else if (at(0) == 'r' || (at(0) == 'b' && at(1) == 'r'))
            && (i == 0 || !ident(c[i - 1]))
            && raw_string_hashes(&c[i + usize::from(at(0) == 'b') + 1..]).is_some()
        {
            // r"..", r#".."#, br#".."#: no escapes, ends at a quote followed by as many #.
            let start = i + usize::from(at(0) == 'b') + 1;
            let hashes = raw_string_hashes(&c[start..]).unwrap_or(0);
            out.extend(&c[i..start + hashes + 1]);
            i = start + hashes + 1;
            let closing: Vec<char> = std::iter::once('"')
                .chain(std::iter::repeat_n('#', hashes))
                .collect();
            while i < c.len() && !c[i..].starts_with(&closing) {
                blank(&mut out, c[i]);
                i += 1;
            }
            out.extend(c[i..(i + closing.len()).min(c.len())].iter());
            i += closing.len();
        } else if at(0) == '"' {
            out.push('"');
            i += 1;
            while i < c.len() && c[i] != '"' {
                let width = if c[i] == '\\' { 2 } else { 1 };
                for &ch in &c[i..(i + width).min(c.len())] {
                    blank(&mut out, ch);
                }
                i += width;
            }
            if i < c.len() {
                out.push('"');
                i += 1;
            }
        } else if at(0) == '\'' && (at(1) == '\\' || (at(1) != '\'' && at(2) == '\'')) {
            // A character literal ('x', '\n', '\u{..}'); a lifetime ('a) has no closing quote.
            out.push('\'');
            i += 1;
            if c[i] == '\\' {
                out.push_str("  ");
                i += 2;
            }
            while i < c.len() && c[i] != '\'' {
                blank(&mut out, c[i]);
                i += 1;
            }
            if i < c.len() {
                out.push('\'');
                i += 1;
            }
        } else {
            out.push(c[i]);
            i += 1;
        }
    }
    out
}

/// The number of `#` after the `r` of a raw string, if `after_r` starts one.
fn raw_string_hashes(after_r: &[char]) -> Option<usize> {
    let hashes = after_r.iter().take_while(|&&ch| ch == '#').count();
    (after_r.get(hashes) == Some(&'"')).then_some(hashes)
}

#[derive(Debug, Clone, PartialEq)]
enum Token {
    Ident(String),
    PathSep,
    Punct(char),
}

fn tokens(code: &str) -> Vec<Token> {
    let c: Vec<char> = code.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < c.len() {
        let ch = c[i];
        if ch.is_alphanumeric() || ch == '_' {
            let start = i;
            while i < c.len() && (c[i].is_alphanumeric() || c[i] == '_') {
                i += 1;
            }
            if !ch.is_ascii_digit() {
                out.push(Token::Ident(c[start..i].iter().collect()));
            }
        } else if ch == ':' && c.get(i + 1) == Some(&':') {
            out.push(Token::PathSep);
            i += 2;
        } else {
            if !ch.is_whitespace() {
                out.push(Token::Punct(ch));
            }
            i += 1;
        }
    }
    out
}

/// The module path of a file under `src/`: `lib.rs` and `main.rs` are the root, `a.rs` and
/// `a/mod.rs` are `a`, `a/b.rs` is `a::b`.
pub fn module_path(file: &str) -> Vec<String> {
    let mut parts: Vec<String> = file
        .trim_end_matches(".rs")
        .split('/')
        .map(String::from)
        .collect();
    if parts == ["lib"] || parts == ["main"] || parts.last().is_some_and(|p| p == "mod") {
        parts.pop();
    }
    parts
}

/// The paths one file names, each with the module it is named in, before resolution.
struct Named {
    /// `mod` declarations (file or inline) by the module that declares them.
    children: BTreeMap<Vec<String>, BTreeSet<String>>,
    /// (module the path is written in, its segments as written).
    paths: Vec<(Vec<String>, Vec<String>)>,
}

/// Expands the use tree at `toks[*i]` into full paths (`a::{b, c::{d}}` -> `a::b`, `a::c::d`; a
/// glob or `self` names the module itself), moving `*i` past it.
fn use_tree(toks: &[Token], i: &mut usize, prefix: Vec<String>, out: &mut Vec<Vec<String>>) {
    let mut path = prefix;
    loop {
        match toks.get(*i) {
            Some(Token::PathSep) => *i += 1,
            Some(Token::Ident(name)) => {
                path.push(name.clone());
                *i += 1;
                match toks.get(*i) {
                    Some(Token::PathSep) => *i += 1,
                    Some(Token::Ident(word)) if word == "as" => {
                        *i += 2;
                        out.push(path);
                        return;
                    }
                    _ => {
                        out.push(path);
                        return;
                    }
                }
            }
            Some(Token::Punct('*')) => {
                *i += 1;
                out.push(path);
                return;
            }
            Some(Token::Punct('{')) => {
                *i += 1;
                loop {
                    match toks.get(*i) {
                        Some(Token::Punct('}')) => {
                            *i += 1;
                            return;
                        }
                        Some(Token::Punct(',')) => *i += 1,
                        None | Some(Token::Punct(';')) => return,
                        Some(_) => {
                            let before = *i;
                            use_tree(toks, i, path.clone(), out);
                            if *i == before {
                                *i += 1;
                            }
                        }
                    }
                }
            }
            _ => return,
        }
    }
}

/// The words that start a path this file may name inline: `crate`, `super`, `self`, a child
/// module of the scope, and in `main.rs` the library's name.
fn starts_inline_path(word: &str) -> bool {
    ["crate", "super", "self", "gpu_lab"].contains(&word)
}

/// Every `use` path and every inline path of a file's code, with the inline module it is in.
fn named(file: &str, code: &str) -> Named {
    let toks = tokens(code);
    let root = module_path(file);
    let mut scope = root.clone();
    let mut inline: Vec<usize> = Vec::new(); // brace depth at which each inline module opened
    let mut depth = 0usize;
    let mut children: BTreeMap<Vec<String>, BTreeSet<String>> = BTreeMap::new();
    let mut candidates: Vec<(Vec<String>, Vec<String>)> = Vec::new();
    let mut paths = Vec::new();
    let mut i = 0;
    while i < toks.len() {
        let before = if i == 0 { None } else { toks.get(i - 1) };
        let starts_path = !matches!(before, Some(Token::PathSep) | Some(Token::Punct('$')))
            && !matches!(before, Some(Token::Ident(w)) if w == "in");
        match &toks[i] {
            Token::Ident(word) if word == "use" && starts_path => {
                i += 1;
                let mut tree = Vec::new();
                use_tree(&toks, &mut i, Vec::new(), &mut tree);
                paths.extend(tree.into_iter().map(|p| (scope.clone(), p)));
                continue;
            }
            Token::Ident(word) if word == "mod" => {
                if let Some(Token::Ident(name)) = toks.get(i + 1) {
                    children
                        .entry(scope.clone())
                        .or_default()
                        .insert(name.clone());
                    if toks.get(i + 2) == Some(&Token::Punct('{')) {
                        scope.push(name.clone());
                        inline.push(depth);
                        depth += 1;
                        i += 3;
                        continue;
                    }
                }
            }
            Token::Ident(word) if starts_path && toks.get(i + 1) == Some(&Token::PathSep) => {
                let mut path = vec![word.clone()];
                let mut k = i + 1;
                while toks.get(k) == Some(&Token::PathSep) {
                    match toks.get(k + 1) {
                        Some(Token::Ident(next)) => {
                            path.push(next.clone());
                            k += 2;
                        }
                        _ => break,
                    }
                }
                candidates.push((scope.clone(), path));
                i = k;
                continue;
            }
            Token::Punct('{') => depth += 1,
            Token::Punct('}') => {
                depth = depth.saturating_sub(1);
                if inline.last() == Some(&depth) {
                    inline.pop();
                    scope.pop();
                }
            }
            _ => {}
        }
        i += 1;
    }
    // An inline path counts when it starts where a `use` path may: not `Foo::new`, not `std::..`.
    for (scope, path) in candidates {
        let first = path[0].as_str();
        let is_child = children.get(&scope).is_some_and(|c| c.contains(first));
        if starts_inline_path(first) || is_child {
            paths.push((scope, path));
        }
    }
    Named { children, paths }
}

/// Where `path`, named in module `scope` of `file`, leads.
fn resolve(
    file: &str,
    scope: &[String],
    path: &[String],
    children: &BTreeMap<Vec<String>, BTreeSet<String>>,
) -> Target {
    let first = path[0].as_str();
    let mut full: Vec<String> = match first {
        "crate" => Vec::new(),
        "gpu_lab" if file == "main.rs" => Vec::new(),
        "self" | "super" => scope.to_vec(),
        _ if children.get(scope).is_some_and(|c| c.contains(first)) => scope.to_vec(),
        _ => return Target::Outside(path.to_vec()),
    };
    let rest = if matches!(first, "crate" | "gpu_lab" | "self") {
        &path[1..]
    } else {
        path
    };
    for segment in rest {
        match segment.as_str() {
            "super" => {
                full.pop();
            }
            "self" => {}
            _ => full.push(segment.clone()),
        }
    }
    Target::Crate(full)
}

/// Every path a file names, resolved.
pub fn targets(file: &str, text: &str) -> Vec<Target> {
    let named = named(file, &code_only(text));
    named
        .paths
        .iter()
        .map(|(scope, path)| resolve(file, scope, path, &named.children))
        .collect()
}

/// The file that defines `path`: the longest prefix of it that is a file of `modules`.
fn file_of<'a>(path: &[String], modules: &'a BTreeMap<Vec<String>, String>) -> Option<&'a str> {
    (0..=path.len())
        .rev()
        .find_map(|k| modules.get(&path[..k]))
        .map(String::as_str)
}

/// The files each file imports from, over `(path under src/, text)` pairs.
pub fn file_graph(sources: &[(String, String)]) -> Graph {
    let modules: BTreeMap<Vec<String>, String> = sources
        .iter()
        .filter(|(file, _)| file != "main.rs")
        .map(|(file, _)| (module_path(file), file.clone()))
        .collect();
    let mut graph = Graph::new();
    for (file, text) in sources {
        let deps = graph.entry(file.clone()).or_default();
        for target in targets(file, text) {
            if let Target::Crate(path) = target
                && let Some(to) = file_of(&path, &modules)
                && to != file
            {
                deps.insert(to.to_string());
            }
        }
    }
    graph
}

/// The shortest chain of files from `from` to `to`, both included.
fn shortest_path(graph: &Graph, from: &str, to: &str) -> Option<Vec<String>> {
    let mut came_from: BTreeMap<&str, &str> = BTreeMap::new();
    let mut queue = VecDeque::from([from]);
    let mut seen = BTreeSet::from([from]);
    while let Some(at) = queue.pop_front() {
        if at == to {
            let mut chain = vec![to.to_string()];
            let mut step = to;
            while let Some(&prev) = came_from.get(step) {
                chain.push(prev.to_string());
                step = prev;
            }
            chain.reverse();
            return Some(chain);
        }
        for next in graph.get(at).into_iter().flatten() {
            if seen.insert(next.as_str()) {
                came_from.insert(next.as_str(), at);
                queue.push_back(next.as_str());
            }
        }
    }
    None
}

/// Every import that is part of a cycle, as the shortest cycle through it: a chain of files that
/// starts and ends with the same file (the smallest name of the cycle first), each cycle once.
pub fn cycles(graph: &Graph) -> Vec<Vec<String>> {
    let mut found: BTreeSet<Vec<String>> = BTreeSet::new();
    for (from, deps) in graph {
        for to in deps {
            if let Some(back) = shortest_path(graph, to, from) {
                let mut ring: Vec<String> = std::iter::once(from.clone()).chain(back).collect();
                ring.pop();
                let smallest = (0..ring.len()).min_by_key(|&k| &ring[k]).unwrap_or(0);
                ring.rotate_left(smallest);
                ring.push(ring[0].clone());
                found.insert(ring);
            }
        }
    }
    found.into_iter().collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn graph(files: &[(&str, &str)]) -> Graph {
        let sources: Vec<(String, String)> = files
            .iter()
            .map(|(f, t)| (f.to_string(), t.to_string()))
            .collect();
        file_graph(&sources)
    }

    fn edges(g: &Graph, from: &str) -> Vec<String> {
        g[from].iter().cloned().collect()
    }

    fn crate_path(p: &str) -> Target {
        Target::Crate(p.split("::").map(String::from).collect())
    }

    #[test]
    fn module_paths_of_files() {
        assert_eq!(module_path("lib.rs"), Vec::<String>::new());
        assert_eq!(module_path("main.rs"), Vec::<String>::new());
        assert_eq!(module_path("stats.rs"), ["stats"]);
        assert_eq!(module_path("report/mod.rs"), ["report"]);
        assert_eq!(module_path("report/csv.rs"), ["report", "csv"]);
        assert_eq!(module_path("a/b/mod.rs"), ["a", "b"]);
    }

    #[test]
    fn a_grouped_use_is_expanded_and_each_path_goes_to_its_own_file() {
        let text = "use crate::m::{a, b::{c, d as e}, n::{self, *}};\nuse std::{fs, env::var};";
        assert_eq!(
            targets("x.rs", text),
            [
                crate_path("m::a"),
                crate_path("m::b::c"),
                crate_path("m::b::d"),
                crate_path("m::n"),
                crate_path("m::n"),
                Target::Outside(vec!["std".into(), "fs".into()]),
                Target::Outside(vec!["std".into(), "env".into(), "var".into()]),
            ]
        );
        let g = graph(&[
            ("lib.rs", "pub mod m;\npub mod x;"),
            ("m/mod.rs", "pub mod b;\npub mod n;\npub fn a() {}"),
            ("m/b.rs", "pub fn c() {}\npub fn d() {}"),
            ("m/n/mod.rs", "pub fn f() {}"),
            ("x.rs", text),
        ]);
        assert_eq!(edges(&g, "x.rs"), ["m/b.rs", "m/mod.rs", "m/n/mod.rs"]);
        assert!(cycles(&g).is_empty(), "{:?}", cycles(&g));
    }

    #[test]
    fn a_child_taking_from_its_parent_that_takes_from_it_is_a_cycle_through_super() {
        let g = graph(&[
            ("lib.rs", "pub mod a;"),
            ("a/mod.rs", "mod b;\npub use b::B;\npub struct A;"),
            ("a/b.rs", "use super::A;\npub struct B(A);"),
        ]);
        assert_eq!(edges(&g, "a/mod.rs"), ["a/b.rs"]);
        assert_eq!(edges(&g, "a/b.rs"), ["a/mod.rs"]);
        assert_eq!(
            cycles(&g),
            [vec![
                "a/b.rs".to_string(),
                "a/mod.rs".into(),
                "a/b.rs".into()
            ]]
        );
    }

    #[test]
    fn a_parent_using_its_child_is_no_cycle_and_neither_is_a_child_using_a_declaring_parent() {
        // The parent imports from its child; the child imports only a sibling.
        let g = graph(&[
            ("lib.rs", "pub mod a;\npub mod c;"),
            (
                "a/mod.rs",
                "mod b;\npub use b::B;\npub fn f() -> B { b::make() }",
            ),
            (
                "a/b.rs",
                "pub struct B;\npub fn make() -> B { crate::c::g(); B }",
            ),
            ("c.rs", "pub fn g() {}"),
        ]);
        assert_eq!(edges(&g, "a/mod.rs"), ["a/b.rs"]);
        assert_eq!(edges(&g, "a/b.rs"), ["c.rs"]);
        assert!(cycles(&g).is_empty(), "{:?}", cycles(&g));
        // The child takes from the parent, which only declares it: no cycle either.
        let g = graph(&[
            ("lib.rs", "pub mod a;"),
            ("a/mod.rs", "mod b;\npub struct A;"),
            ("a/b.rs", "pub fn f(_: super::A) {}"),
        ]);
        assert!(edges(&g, "a/mod.rs").is_empty());
        assert_eq!(edges(&g, "a/b.rs"), ["a/mod.rs"]);
        assert!(cycles(&g).is_empty(), "{:?}", cycles(&g));
    }

    #[test]
    fn inline_paths_super_super_and_a_longer_cycle_are_found() {
        let g = graph(&[
            ("lib.rs", "pub mod p;\npub mod q;"),
            ("p/mod.rs", "pub mod deep;"),
            ("p/deep/mod.rs", "pub mod leaf;"),
            (
                "p/deep/leaf.rs",
                "pub fn f() { super::super::super::q::g() }",
            ),
            ("q.rs", "pub fn g() { let _ = crate::p::h(); }"),
        ]);
        assert_eq!(edges(&g, "p/deep/leaf.rs"), ["q.rs"]);
        assert_eq!(edges(&g, "q.rs"), ["p/mod.rs"]);
        assert!(cycles(&g).is_empty());
        let g = graph(&[
            ("lib.rs", "pub mod x;\npub mod y;\npub mod z;"),
            ("x.rs", "pub fn f() { crate::y::f() }"),
            ("y.rs", "use crate::z;\npub fn f() { z::f() }"),
            ("z.rs", "pub fn f() { self::g(); crate::x::f() }\nfn g() {}"),
        ]);
        assert_eq!(
            cycles(&g),
            [vec![
                "x.rs".to_string(),
                "y.rs".into(),
                "z.rs".into(),
                "x.rs".into()
            ]]
        );
    }

    #[test]
    fn comments_strings_and_an_inline_test_module_are_not_imports() {
        let text = r##"
            //! Uses crate::b in prose only.
            /* crate::b::f() /* nested */ crate::b */
            pub fn f() -> &'static str { let _c = '"'; "crate::b::f()" }
            pub fn g() -> &'static str { r#"crate::b "quoted""# }
            #[cfg(test)]
            mod tests {
                use super::*;
                #[test]
                fn t() { super::f(); }
            }
            pub fn h() { crate::c::k() }
        "##;
        let g = graph(&[
            ("lib.rs", "pub mod a;\npub mod b;\npub mod c;"),
            ("a.rs", text),
            ("b.rs", ""),
            ("c.rs", ""),
        ]);
        assert_eq!(edges(&g, "a.rs"), ["c.rs"]);
    }

    #[test]
    fn main_reaches_the_library_by_its_name_and_macros_crate_is_not_a_path() {
        let g = graph(&[
            (
                "lib.rs",
                "pub mod a;\nmacro_rules! m { () => { $crate::a::f() } }",
            ),
            ("a.rs", "pub fn f() {}"),
            ("main.rs", "fn main() { gpu_lab::a::f() }"),
        ]);
        assert_eq!(edges(&g, "main.rs"), ["a.rs"]);
        assert!(edges(&g, "lib.rs").is_empty());
    }
}
