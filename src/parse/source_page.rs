//! ncu's source page (`ncu --import R --page source --csv --print-source cuda,sass`) read into per-kernel CUDA source lines with their counters, and the hottest lines of a kernel ranked from them (pure).

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
/// What ncu puts in place of a line's text when it could not open the source file (the program
/// was built on another machine, or the file has moved since).
const UNREADABLE_SOURCE: &str = "<Unable to open source file>";
/// A kernel's note when none of its lines has text.
pub const NO_SOURCE_TEXT: &str = "ncu could not open the source file at the path the program was built with (built on another machine, or moved since), so the lines have no text";
/// Where the per-reason sample columns start: `stall_long_sb`, `stall_barrier`, ….
const STALL_PREFIX: &str = "stall_";
const NOT_ISSUED: &str = " (Not Issued)";

/// Every kernel's source lines, in the order ncu printed them (its launch order).
///
/// The page (`--print-source cuda,sass`, ncu 2025.3) gives per kernel a `"File Path","PATH"` row,
/// a `"Function Name","NAME"` row, a header (`"Line No","Source","Address","Source",COUNTERS…`),
/// then each CUDA line with its counters summed over its SASS instructions, followed by those
/// instructions (line number empty) and `...` gaps; a kernel whose code comes from several files
/// (a header's functions inlined) has one such block per file, one after another. ncu writes the source text unescaped: a
/// line holding `"` or `","` is put back together from the cells it split into.
pub fn parse(text: &str) -> Result<Vec<KernelSource>, SourcePageError> {
    let mut kernels: Vec<KernelSource> = Vec::new();
    let mut header: Option<Columns> = None;
    let mut file = String::new();
    // The files of the last kernel's blocks so far.
    let mut files_of_last: Vec<String> = Vec::new();
    for row in text.lines().filter_map(cells) {
        match row.first().map(|c| c.trim()) {
            Some("File Path" | "File Name") => {
                file = row.get(1).map_or_else(String::new, |p| base_name(p));
            }
            Some("Function Name" | "Kernel Name") => {
                let name = row.get(1).map_or("", |c| c.trim()).to_string();
                // A kernel built from several files has a block per file: the same name in a file
                // its blocks have not had yet continues it; a file again starts the next launch.
                let continues = kernels.last().is_some_and(|k| k.kernel == name)
                    && !files_of_last.contains(&file);
                if !continues {
                    kernels.push(KernelSource {
                        kernel: name,
                        lines: Vec::new(),
                    });
                    files_of_last.clear();
                }
                files_of_last.push(file.clone());
                header = None;
            }
            Some("Line No") => {
                if kernels.is_empty() {
                    return Err(SourcePageError::NoTable(
                        ": a table before any `Function Name` row".into(),
                    ));
                }
                header = Some(Columns::of_header(&row)?);
            }
            // A CUDA line: its number first (SASS rows and gaps have none).
            Some(n) if n.parse::<u32>().is_ok() => {
                if let (Some(h), Some(k)) = (&header, kernels.last_mut()) {
                    k.lines.push(h.line(row, &file)?);
                }
            }
            _ => {}
        }
    }
    if kernels.is_empty() || kernels.iter().all(|k| k.lines.is_empty()) {
        return Err(SourcePageError::NoTable(format!(
            " ({} kernels, {} lines of output)",
            kernels.len(),
            text.lines().count()
        )));
    }
    Ok(kernels)
}

/// A row's cells: the text between its outer quotes split at `","` (ncu quotes every cell and
/// escapes nothing); None for a line that is not a row (ncu's `==PROF==` lines, the program's output).
fn cells(line: &str) -> Option<Vec<String>> {
    let inner = line
        .trim_end_matches(['\r', ','])
        .strip_prefix('"')?
        .strip_suffix('"')?;
    Some(inner.split("\",\"").map(str::to_string).collect())
}

/// Where the columns of a kernel's table are: the CUDA line's number and text come first, then
/// the SASS address and text, then the counters.
struct Columns {
    counters: Vec<String>,
}

/// The cells before the counters: line, CUDA source, address, SASS source.
const LEADING: usize = 4;

impl Columns {
    fn of_header(cells: &[String]) -> Result<Columns, SourcePageError> {
        let names: Vec<&str> = cells.iter().map(|c| c.trim()).collect();
        if names.len() <= LEADING || names[..LEADING] != ["Line No", "Source", "Address", "Source"]
        {
            return Err(SourcePageError::Csv(format!(
                "a table header that does not begin `Line No, Source, Address, Source`: {}",
                names
                    .iter()
                    .take(LEADING)
                    .cloned()
                    .collect::<Vec<_>>()
                    .join(", ")
            )));
        }
        if !names.contains(&SAMPLES) {
            return Err(SourcePageError::MissingColumn(SAMPLES));
        }
        Ok(Columns {
            counters: names[LEADING..].iter().map(|n| n.to_string()).collect(),
        })
    }

    /// One CUDA line: the counters are the last cells; whatever is left between the line number
    /// and the address and SASS text (`-` on a CUDA line) is the source text.
    fn line(&self, mut row: Vec<String>, file: &str) -> Result<SourceLine, SourcePageError> {
        let wanted = LEADING + self.counters.len();
        if row.len() < wanted {
            return Err(SourcePageError::Csv(format!(
                "line {} has {} cells where the header has {wanted}",
                row[0],
                row.len()
            )));
        }
        let counters = row.split_off(row.len() - self.counters.len());
        row.truncate(row.len() - 2);
        let line = row[0].trim().parse().unwrap_or(0);
        let source = row[1..].join("\",\"");
        // ncu's stand-in where it could not read the file at the path the binary records.
        let source = if source.trim() == UNREADABLE_SOURCE {
            String::new()
        } else {
            source
        };
        let values = self
            .counters
            .iter()
            .zip(&counters)
            .filter_map(|(name, raw)| Some((name.clone(), number(raw)?)))
            .collect();
        Ok(SourceLine {
            file: file.to_string(),
            line,
            source,
            values,
        })
    }
}

/// A path's last component: the directories are the machine's it ran on.
fn base_name(path: &str) -> String {
    path.trim().rsplit('/').next().unwrap_or("").to_string()
}

impl KernelSource {
    /// Adds another launch's counters of the same kernel, line by line (every column is a count
    /// over the launch: samples, sectors, wavefronts); a line only the other has is appended.
    pub fn absorb(&mut self, other: KernelSource) {
        for line in other.lines {
            match self
                .lines
                .iter_mut()
                .find(|l| l.file == line.file && l.line == line.line)
            {
                Some(mine) => {
                    for (name, v) in line.values {
                        *mine.values.entry(name).or_insert(0.0) += v;
                    }
                }
                None => self.lines.push(line),
            }
        }
    }
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
    let no_text = !sampled.is_empty() && sampled.iter().all(|l| l.source.trim().is_empty());
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
        note: no_text.then(|| NO_SOURCE_TEXT.to_string()),
    }
}

/// The stall reason with the most samples at the line (ties: the name first in order).
fn dominant_stall(l: &SourceLine) -> Option<Stall> {
    l.values
        .iter()
        // `stall_X (Not Issued)` are the same samples' subset where no instruction issued.
        .filter(|(name, _)| !name.ends_with(NOT_ISSUED))
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

#[cfg(test)]
mod tests {
    use super::*;

    const H200: &str = include_str!("../../tests/fixtures/ncu-source/transpose-h200.csv");

    #[test]
    fn the_real_page_gives_each_kernel_its_lines_with_the_unescaped_source_put_back() {
        let kernels = parse(H200).unwrap();
        let names: Vec<&str> = kernels.iter().map(|k| k.kernel.as_str()).collect();
        assert_eq!(names, ["naive_column", "smem_tile", "smem_tile"]);
        let head = &kernels[0].lines[0];
        assert_eq!((head.file.as_str(), head.line), ("transpose.cu", 103));
        assert_eq!(
            head.source,
            r#"extern "C" __global__ void naive_column(const float* __restrict__ in, float* __restrict__ out, int nx, int ny)"#
        );
        assert_eq!(head.values[SAMPLES], 26.0);
    }

    #[test]
    fn the_hot_lines_are_the_strided_load_and_the_conflicting_tile_read() {
        let kernels = parse(H200).unwrap();
        let naive = hot_lines(&kernels[0], 3);
        let top = &naive.lines[0];
        assert_eq!(top.line, 108);
        assert_eq!(
            top.source,
            "out[(size_t)iy * ny + ix] = in[(size_t)ix * nx + iy];"
        );
        assert_eq!(top.samples, 2240.0);
        assert_eq!(
            top.stall,
            Some(Stall {
                reason: "long_sb".into(),
                samples: 2191.0
            })
        );
        assert_eq!(top.excess_sectors, Some(3_670_016.0));
        assert_eq!(top.bank_conflict_ways(), None);
        assert!(naive.lines.len() == 3 && naive.lines_sampled > 3);
        assert!(naive.lines.windows(2).all(|w| w[0].samples >= w[1].samples));
        let line_185 = |k: &KernelSource| {
            hot_lines(k, usize::MAX)
                .lines
                .into_iter()
                .find(|l| l.line == 185)
                .unwrap()
        };
        // PAD = 0: every column read of the tile is 32-way; PAD = 1: none.
        let conflicting = line_185(&kernels[1]);
        assert_eq!(conflicting.bank_conflict_ways(), Some(32.0));
        assert_eq!(conflicting.samples, 1056.0);
        assert_eq!(line_185(&kernels[2]).bank_conflict_ways(), Some(1.0));
        let total: f64 = kernels[1].lines.iter().map(|l| l.values[SAMPLES]).sum();
        assert_eq!(hot_lines(&kernels[1], 1).samples, total);
    }

    const HEADER: &str = r#""File Path","/x/k.cu"
"Function Name","k"
"Line No","Source","Address","Source","Warp Stall Sampling (All Samples)","stall_wait","stall_wait (Not Issued)","stall_barrier""#;

    #[test]
    fn a_kernel_built_from_several_files_is_one_kernel_and_its_next_launch_another() {
        // As ncu 2025.3 printed a scan kernel whose code is partly in a header (H100, 2026-11-26).
        let block = |file: &str, kernel: &str, line: u32| {
            format!(
                "\"File Path\",\"/x/{file}\"\n\"Function Name\",\"{kernel}\"\n\"Line No\",\"Source\",\"Address\",\"Source\",\"Warp Stall Sampling (All Samples)\"\n\"{line}\",\"x\",\"\",\"\",\"5\"\n"
            )
        };
        let page = [
            block("scan.cu", "init", 1),
            block("scan.cu", "scan", 10),
            block("bulk.cuh", "scan", 20),
            block("scan.cu", "init", 1),
            block("scan.cu", "scan", 10),
            block("bulk.cuh", "scan", 20),
        ]
        .concat();
        let kernels = parse(&page).unwrap();
        let names: Vec<&str> = kernels.iter().map(|k| k.kernel.as_str()).collect();
        assert_eq!(names, ["init", "scan", "init", "scan"]);
        assert_eq!(kernels[1].lines.len(), 2);
        assert_eq!(kernels[3].lines[1].file, "bulk.cuh");
        // The same kernel launched twice in a row, each from one file: two kernels.
        let twice = [block("k.cu", "k", 1), block("k.cu", "k", 1)].concat();
        assert_eq!(parse(&twice).unwrap().len(), 2);
    }

    #[test]
    fn a_source_line_holding_the_separator_is_put_back_and_the_not_issued_subset_is_no_reason() {
        let page = format!(
            "{HEADER}\n\"7\",\"s = \"a\",\"b\";\",\"-\",\"-\",\"10\",\"4\",\"9\",\"6\"\n\"\",\"\",\"0x10\",\"  MOV R1, R2\",\"10\",\"4\",\"9\",\"6\"\n"
        );
        let kernels = parse(&page).unwrap();
        let line = &kernels[0].lines[0];
        assert_eq!(line.source, r#"s = "a","b";"#);
        assert_eq!(kernels[0].lines.len(), 1, "the SASS row is no CUDA line");
        let hot = hot_lines(&kernels[0], 5);
        assert_eq!(hot.lines[0].stall.as_ref().unwrap().reason, "barrier");
    }

    #[test]
    fn a_page_without_tables_a_short_row_or_no_samples_column_is_an_error_that_says_so() {
        assert!(matches!(
            parse(
                "==PROF== Disconnected\n\"File Path\",\"/x/k.cu\"\n\"Line No\",\"Source\"\n\"1\",\"int x;\""
            ),
            Err(SourcePageError::NoTable(_))
        ));
        let short = format!("{HEADER}\n\"7\",\"x;\",\"-\"\n");
        let e = parse(&short).unwrap_err();
        assert!(
            e.to_string()
                .contains("line 7 has 3 cells where the header has 8"),
            "{e}"
        );
        let no_samples = HEADER.replace("Warp Stall Sampling (All Samples)", "Other");
        assert_eq!(
            parse(&format!(
                "{no_samples}\n\"7\",\"x;\",\"-\",\"-\",\"1\",\"1\",\"1\",\"1\""
            ))
            .unwrap_err(),
            SourcePageError::MissingColumn(SAMPLES)
        );
        assert!(parse("").is_err());
    }

    #[test]
    fn absorbing_a_launch_sums_each_lines_counters_and_keeps_lines_only_one_launch_had() {
        let kernels = parse(H200).unwrap();
        let (a, b) = (kernels[1].clone(), kernels[2].clone());
        let samples_at = |k: &KernelSource, line: u32| {
            k.lines
                .iter()
                .find(|l| l.line == line)
                .map(|l| l.values[SAMPLES])
                .unwrap()
        };
        let mut both = a.clone();
        both.absorb(b.clone());
        assert_eq!(both.lines.len(), a.lines.len());
        assert_eq!(
            samples_at(&both, 185),
            samples_at(&a, 185) + samples_at(&b, 185)
        );
        let total = |k: &KernelSource| hot_lines(k, 0).samples;
        assert_eq!(total(&both), total(&a) + total(&b));
        let mut extra = b.clone();
        extra.lines[0].line = 9999;
        let mut with_extra = a.clone();
        with_extra.absorb(extra);
        assert_eq!(with_extra.lines.len(), a.lines.len() + 1);
        assert_eq!(with_extra.lines.last().unwrap().line, 9999);
    }

    #[test]
    fn a_source_file_ncu_could_not_open_gives_lines_without_text_and_says_why() {
        let page = concat!(
            "\"File Path\",\"/elsewhere/probe.cu\"\n",
            "\"Function Name\",\"copy_row(const float *, float *, int)\"\n",
            "\"Line No\",\"Source\",\"Address\",\"Source\",\"Warp Stall Sampling (All Samples)\",\"stall_long_sb\"\n",
            "\"13\",\"<Unable to open source file>\",\"-\",\"-\",\"2888\",\"2504\"\n",
            "\"\",\"\",\"0x7f1d177ac280\",\"      LDG.E R2, desc[UR4][R2.64]\",\"2888\",\"2504\"\n",
        );
        let kernels = parse(page).unwrap();
        assert_eq!(kernels[0].lines[0].source, "");
        let hot = hot_lines(&kernels[0], 8);
        assert_eq!(
            (hot.lines[0].file.as_str(), hot.lines[0].line),
            ("probe.cu", 13)
        );
        assert_eq!(hot.note.as_deref(), Some(NO_SOURCE_TEXT));
        assert_eq!(hot_lines(&parse(H200).unwrap()[0], 8).note, None);
    }
}
