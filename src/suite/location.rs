//! Where in a manifest something is (a path of keys and indices, and its line) and the error that says so.

use std::path::{Path, PathBuf};

use super::manifest::{Manifest, VariantDecl};

/// A manifest error: which file, which line when it can be found, what is wrong and how to fix it.
#[derive(Debug, thiserror::Error)]
#[error("{}{}: {message}\n  fix: {fix}", .file.display(), .line.map(|l| format!(":{l}")).unwrap_or_default())]
pub struct SuiteError {
    pub file: PathBuf,
    pub line: Option<usize>,
    pub message: String,
    pub fix: String,
}

/// 1-based line of byte `at` of `text`.
pub(crate) fn line_at(text: &str, at: usize) -> usize {
    text.as_bytes()[..at.min(text.len())]
        .iter()
        .filter(|&&b| b == b'\n')
        .count()
        + 1
}

/// One step of a path into the manifest: a key of a table, or an element of an array.
#[derive(Debug, Clone)]
pub(crate) enum Seg {
    Key(String),
    At(usize),
}

impl From<&str> for Seg {
    fn from(k: &str) -> Seg {
        Seg::Key(k.to_string())
    }
}

impl From<&String> for Seg {
    fn from(k: &String) -> Seg {
        Seg::Key(k.clone())
    }
}

impl From<usize> for Seg {
    fn from(i: usize) -> Seg {
        Seg::At(i)
    }
}

/// A path into the manifest: `at!["variants", 2, "grid"]`.
macro_rules! at {
    ($($seg:expr),* $(,)?) => { vec![$($crate::suite::location::Seg::from($seg)),*] };
}
pub(crate) use at;

/// The line of the deepest part of `path` the manifest has: the key's own line where the path
/// ends at a key (`len = ...` of the third buffer), the element's where it ends in an array.
pub(crate) fn line_of_path(text: &str, path: &[Seg]) -> Option<usize> {
    use toml::de::{DeTable, DeValue};
    // Parsed again only when an error is reported: loading a valid manifest pays nothing.
    let root = DeValue::Table(DeTable::parse(text).ok()?.into_inner());
    let mut found = None;
    let mut here = &root;
    for seg in path {
        let next = match (seg, here) {
            (Seg::Key(k), DeValue::Table(t)) => t
                .get_key_value(k.as_str())
                .map(|(key, v)| (key.span().start, v)),
            (Seg::At(i), DeValue::Array(a)) => a.get(*i).map(|v| (v.span().start, v)),
            _ => None,
        };
        let Some((start, v)) = next else { break };
        found = Some(start);
        here = v.get_ref();
    }
    found.map(|at| line_at(text, at))
}

/// What an error needs to say where it is: the manifest's file, its text, and the parsed manifest.
pub(crate) struct Ctx<'a> {
    pub(crate) path: &'a Path,
    pub(crate) text: &'a str,
    pub(crate) manifest: Option<&'a Manifest>,
}

impl Ctx<'_> {
    /// An error at the line of `path` in the manifest (its deepest part that is written there).
    pub(crate) fn err(
        &self,
        path: Vec<Seg>,
        message: impl Into<String>,
        fix: impl Into<String>,
    ) -> SuiteError {
        SuiteError {
            file: self.path.to_path_buf(),
            line: line_of_path(self.text, &path),
            message: message.into(),
            fix: fix.into(),
        }
    }

    /// Where variant `v` is: `[[variants]]` number i.
    pub(crate) fn variant(&self, v: &VariantDecl) -> Vec<Seg> {
        let i = self
            .manifest
            .and_then(|m| m.variants.iter().position(|x| std::ptr::eq(x, v)))
            .unwrap_or(0);
        at!["variants", i]
    }

    /// Where key `key` of variant `v` itself is.
    pub(crate) fn variant_key(&self, v: &VariantDecl, key: &str) -> Vec<Seg> {
        let mut p = self.variant(v);
        p.push(key.into());
        p
    }

    /// Where key `key` of variant `v` is, or of its launch `launch` when it has `[[variants.launches]]`.
    pub(crate) fn launch_key(&self, v: &VariantDecl, launch: usize, key: &str) -> Vec<Seg> {
        let mut p = self.variant(v);
        if !v.launches.is_empty() {
            p.extend(at!["launches", launch]);
        }
        p.push(key.into());
        p
    }

    /// Where key `key` of the check that applies to `v` is: the variant's own, else the suite's.
    pub(crate) fn check_key(&self, v: &VariantDecl, key: &str) -> Vec<Seg> {
        let mut p = if v.check.is_some() {
            self.variant(v)
        } else {
            at!["suite"]
        };
        p.extend(at!["check", key]);
        p
    }
}
