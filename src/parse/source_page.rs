//! ncu's source page (`ncu --import R --page source --csv --print-source cuda`) read into per-kernel CUDA source lines with their counters, and the hottest lines of a kernel ranked from them (pure).

use std::collections::BTreeMap;

use crate::records::{HotLine, KernelHotspots, Stall};

use super::parse_number;

/// One profiled kernel's CUDA source lines.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct KernelSource {
    pub kernel: String,
    pub lines: Vec<SourceLine>,
}

/// One CUDA source line and its counters, by ncu's column name.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SourceLine {
    pub file: String,
    pub line: u32,
    pub source: String,
    pub values: BTreeMap<String, f64>,
}

#[derive(Debug, thiserror::Error, PartialEq)]
pub enum SourcePageError {
    #[error(
        "ncu's source page has no table of source lines{0}\n  fix: check that the kernels were built with -lineinfo and that ncu's SourceCounters section ran (the report's log says)"
    )]
    NoTable(String),
    #[error("ncu's source page could not be read: {0}")]
    Csv(String),
    #[error(
        "ncu's source page has no `{0}` column\n  fix: this ncu may name its columns otherwise; export the report again with `ncu --import REPORT --page source --csv --print-source cuda` and compare"
    )]
    MissingColumn(&'static str),
}

/// The column of warp samples at a line (issued or not).
pub const SAMPLES: &str = "Warp Stall Sampling (All Samples)";
/// Global L2 sectors beyond the ideal for the line's accesses.
pub const EXCESS_SECTORS: &str = "L2 Theoretical Sectors Global Excessive";
/// Shared-memory wavefronts of the line, and the ideal number for the same accesses.
pub const SHARED_WAVEFRONTS: &str = "L1 Wavefronts Shared";
pub const SHARED_WAVEFRONTS_IDEAL: &str = "L1 Wavefronts Shared Ideal";
/// Where the per-reason sample columns start: `stall_long_sb`, `stall_barrier`, ….
const STALL_PREFIX: &str = "stall_";

/// Every kernel's source lines, in the order ncu printed them (its launch order). Each kernel
/// opens with a `"Kernel Name","NAME"` row; a row that names a source file (`.cu`, `.cuh`, …)
/// says whose lines follow; a row with `Source` and a line or address column is a table's header.
pub fn parse(text: &str) -> Result<Vec<KernelSource>, SourcePageError> {
    // ncu's own lines and the profiled program's output are not the table.
    let table: String = text
        .lines()
        .filter(|l| l.starts_with('"'))
        .flat_map(|l| [l, "\n"])
        .collect();
    let mut reader = csv::ReaderBuilder::new()
        .has_headers(false)
        .flexible(true)
        .from_reader(table.as_bytes());
    let mut kernels: Vec<KernelSource> = Vec::new();
    let mut header: Option<Columns> = None;
    let mut file = String::new();
    for record in reader.records() {
        let record = record.map_err(|e| SourcePageError::Csv(e.to_string()))?;
        let cells: Vec<&str> = record.iter().collect();
        if cells.first().map(|c| c.trim()) == Some("Kernel Name") {
            kernels.push(KernelSource {
                kernel: cells.get(1).map_or("", |c| c.trim()).to_string(),
                lines: Vec::new(),
            });
            header = None;
            file.clear();
        } else if let Some(columns) = Columns::of_header(&cells)? {
            if kernels.is_empty() {
                kernels.push(KernelSource::default());
            }
            header = Some(columns);
        } else if let (Some(h), Some(k)) = (&header, kernels.last_mut())
            && cells.len() == h.names.len()
        {
            k.lines.push(h.line(&cells, &file));
        } else if let Some(path) = cells.iter().rev().find(|c| is_source_file(c)) {
            file = base_name(path);
        }
    }
    if kernels.is_empty() {
        return Err(SourcePageError::NoTable(format!(
            " ({} lines of output)",
            text.lines().count()
        )));
    }
    Ok(kernels)
}

/// Where the fixed columns of a source table are.
struct Columns {
    names: Vec<String>,
    line: usize,
    source: usize,
    file: Option<usize>,
}

impl Columns {
    /// The columns, when `cells` is a table's header.
    fn of_header(cells: &[&str]) -> Result<Option<Columns>, SourcePageError> {
        let find = |name: &str| cells.iter().position(|c| c.trim() == name);
        let Some(source) = find("Source") else {
            return Ok(None);
        };
        let Some(line) = ["# Line", "Line", "#", "Address", "# Address"]
            .iter()
            .find_map(|n| find(n))
        else {
            return Ok(None);
        };
        if find(SAMPLES).is_none() {
            return Err(SourcePageError::MissingColumn(SAMPLES));
        }
        Ok(Some(Columns {
            names: cells.iter().map(|c| c.trim().to_string()).collect(),
            line,
            source,
            file: ["File", "File Name", "Source File"]
                .iter()
                .find_map(|n| find(n)),
        }))
    }

    fn line(&self, cells: &[&str], file: &str) -> SourceLine {
        let values = self
            .names
            .iter()
            .zip(cells)
            .enumerate()
            .filter(|(i, _)| *i != self.line && *i != self.source)
            .filter_map(|(_, (name, raw))| Some((name.clone(), number(raw)?)))
            .collect();
        SourceLine {
            file: self
                .file
                .map_or_else(|| file.to_string(), |i| base_name(cells[i])),
            line: cells[self.line].trim().parse().unwrap_or(0),
            source: cells[self.source].to_string(),
            values,
        }
    }
}

/// Whether a cell names a source file (what ncu prints above the lines of each file).
fn is_source_file(cell: &str) -> bool {
    let c = cell.trim();
    [".cu", ".cuh", ".h", ".hpp", ".cpp", ".cc", ".inc", ".inl"]
        .iter()
        .any(|e| c.ends_with(e))
        && !c.contains(char::is_whitespace)
}

/// A path's last component: the directories are the machine's it ran on.
fn base_name(path: &str) -> String {
    path.trim().rsplit('/').next().unwrap_or("").to_string()
}

/// The kernel's `top` hottest lines (most samples first, ties by line number), each with its
/// dominant stall reason, excess sectors and shared wavefronts.
pub fn hot_lines(k: &KernelSource, top: usize) -> KernelHotspots {
    let samples_of = |l: &SourceLine| l.values.get(SAMPLES).copied().unwrap_or(0.0);
    let mut sampled: Vec<&SourceLine> = k.lines.iter().filter(|l| samples_of(l) > 0.0).collect();
    sampled.sort_by(|a, b| {
        samples_of(b)
            .total_cmp(&samples_of(a))
            .then(a.file.cmp(&b.file))
            .then(a.line.cmp(&b.line))
    });
    KernelHotspots {
        kernel: k.kernel.clone(),
        samples: k.lines.iter().map(samples_of).sum(),
        lines_sampled: sampled.len(),
        lines: sampled
            .into_iter()
            .take(top)
            .map(|l| HotLine {
                file: l.file.clone(),
                line: l.line,
                source: l.source.trim().to_string(),
                samples: samples_of(l),
                stall: dominant_stall(l),
                excess_sectors: l.values.get(EXCESS_SECTORS).copied().filter(|v| *v > 0.0),
                shared_wavefronts: l
                    .values
                    .get(SHARED_WAVEFRONTS)
                    .copied()
                    .filter(|v| *v > 0.0),
                shared_wavefronts_ideal: l.values.get(SHARED_WAVEFRONTS_IDEAL).copied(),
            })
            .collect(),
        note: None,
    }
}

/// The stall reason with the most samples at the line (ties: the name first in order).
fn dominant_stall(l: &SourceLine) -> Option<Stall> {
    l.values
        .iter()
        .filter_map(|(name, v)| Some((name.strip_prefix(STALL_PREFIX)?, *v)))
        .filter(|(_, v)| *v > 0.0)
        .fold(None, |best: Option<(&str, f64)>, (name, v)| match best {
            Some((_, b)) if b >= v => best,
            _ => Some((name, v)),
        })
        .map(|(reason, samples)| Stall {
            reason: reason.to_string(),
            samples,
        })
}

fn number(raw: &str) -> Option<f64> {
    parse_number(raw).filter(|v| v.is_finite())
}
