//! Which source text a program is: its file and every local header it includes, hashed for the suite hash and the compile cache.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use crate::store::{FileKind, read_regular_text};

/// A local header a source includes.
#[derive(Debug, Clone)]
pub struct Header {
    /// As the `#include "…"` line names it.
    pub name: String,
    /// Where it was found, canonical.
    pub path: PathBuf,
    pub text: String,
}

/// Every `#include "…"` a source pulls in from its own directory or an `-I` directory (and every
/// `#include <…>` found in an `-I` directory),
/// recursively, in order. Headers the compiler provides (`<…>`) are not files of ours; a header
/// that cannot be found (or is not a regular file of at most 16 MiB) is left for the compiler to report.
pub fn headers(source_path: &Path, source: &str, options: &[String]) -> Vec<Header> {
    let search: Vec<PathBuf> = options
        .iter()
        .filter_map(|o| {
            o.strip_prefix("--include-path=")
                .or_else(|| o.strip_prefix("-I"))
        })
        .filter(|d| !d.is_empty())
        .map(PathBuf::from)
        .collect();
    let mut seen = BTreeSet::new();
    let mut out = Vec::new();
    // A pre-included file (`--pre-include=file`) is read by the compiler as if the source's first
    // line included it: its text and its headers count like the source's own.
    let pre: String = options
        .iter()
        .filter_map(|o| super::options::pre_include_file(o))
        .map(|f| {
            let p = Path::new(f);
            let p = p.canonicalize().unwrap_or_else(|_| p.to_path_buf());
            format!("#include \"{}\"\n", p.display())
        })
        .collect();
    collect_includes(
        source_path.parent().unwrap_or(Path::new(".")),
        &format!("{pre}{source}"),
        &search,
        &mut seen,
        &mut out,
        0,
    );
    // A pre-included file is named in the hash by its file name, not by where the suite lies, so
    // that one suite checked out in two places hashes the same.
    for h in out.iter_mut().filter(|h| Path::new(&h.name).is_absolute()) {
        if let Some(f) = h.path.file_name() {
            h.name = format!("pre-include:{}", f.to_string_lossy());
        }
    }
    out
}

/// The text of every local header (see `headers`): part of the cache key and of the suite hash,
/// so that editing a header recompiles and shows in the report.
pub fn local_includes(source_path: &Path, source: &str, options: &[String]) -> String {
    headers_text(&headers(source_path, source, options))
}

/// The headers as one text for a hash: each name, then its text.
pub fn headers_text(headers: &[Header]) -> String {
    headers
        .iter()
        .map(|h| format!("\0{}\0{}", h.name, h.text))
        .collect()
}

fn collect_includes(
    dir: &Path,
    text: &str,
    search: &[PathBuf],
    seen: &mut BTreeSet<PathBuf>,
    out: &mut Vec<Header>,
    depth: usize,
) {
    // Deep enough for any real header tree; stops a header that includes itself through a symlink loop.
    if depth > 16 {
        return;
    }
    for line in text.lines() {
        let Some(rest) = line.trim_start().strip_prefix('#') else {
            continue;
        };
        let Some(rest) = rest.trim_start().strip_prefix("include") else {
            continue;
        };
        let rest = rest.trim_start();
        // `"x.h"` is looked for beside the including file, then in the -I directories; `<x.h>`
        // only in the -I directories (a toolkit or system header is not ours).
        let (name, own_dir) = if let Some(r) = rest.strip_prefix('"') {
            (r.split('"').next(), true)
        } else if let Some(r) = rest.strip_prefix('<') {
            (r.split('>').next(), false)
        } else {
            (None, false)
        };
        let Some(name) = name.filter(|n| !n.is_empty()) else {
            continue;
        };
        let dirs = own_dir
            .then(|| dir.to_path_buf())
            .into_iter()
            .chain(search.iter().cloned());
        let Some(path) = dirs.map(|d| d.join(name)).find(|p| p.is_file()) else {
            continue;
        };
        // A header that is not a regular file, too large or not UTF-8 is not followed.
        let Ok(header) = read_regular_text(&path, FileKind::KERNEL_SOURCE) else {
            continue;
        };
        let canonical = path.canonicalize().unwrap_or(path.clone());
        if seen.insert(canonical.clone()) {
            out.push(Header {
                name: name.to_string(),
                path: canonical,
                text: header.clone(),
            });
            collect_includes(
                path.parent().unwrap_or(dir),
                &header,
                search,
                seen,
                out,
                depth + 1,
            );
        }
    }
}

/// Lower-case hex of a digest.
pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn local_headers_are_part_of_the_key_and_system_headers_are_not() {
        let d = tempfile::tempdir().unwrap();
        let (src_dir, inc_dir) = (d.path().join("suite"), d.path().join("inc"));
        std::fs::create_dir_all(src_dir.join("sub")).unwrap();
        std::fs::create_dir_all(&inc_dir).unwrap();
        std::fs::write(
            src_dir.join("sub/tile.cuh"),
            "#define TILE 32\n#include \"../common.cuh\"\n",
        )
        .unwrap();
        std::fs::write(src_dir.join("common.cuh"), "#pragma once\n").unwrap();
        std::fs::write(inc_dir.join("extra.cuh"), "#define EXTRA 1\n").unwrap();
        let source = "#include <cuda_fp16.h>\n  #  include \"sub/tile.cuh\"\n#include \"extra.cuh\"\n#include \"missing.cuh\"\n";
        let path = src_dir.join("k.cu");
        let opts = vec![format!("-I{}", inc_dir.display())];
        let text = local_includes(&path, source, &opts);
        assert!(
            text.contains("#define TILE 32")
                && text.contains("#pragma once")
                && text.contains("#define EXTRA 1"),
            "{text}"
        );
        assert!(
            !local_includes(&path, source, &[]).contains("EXTRA"),
            "only -I directories are searched besides the source's own"
        );
        // Editing a nested header changes what is hashed.
        std::fs::write(
            src_dir.join("common.cuh"),
            "#pragma once\n#define CHANGED\n",
        )
        .unwrap();
        assert_ne!(text, local_includes(&path, source, &opts));
    }
}
