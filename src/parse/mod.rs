//! Reading Nsight Compute's CSV output (raw or details page) into one row of values per profiled kernel (pure).
//!
//! What real `ncu --csv` output contains (see tests/fixtures and ../shared/fixtures/ncu-h200):
//! the profiled program's own stdout and `==PROF==`/`==WARNING==`/`==ERROR==` lines mixed in,
//! a units row under the header (raw page), thousands separators (`"983,168"`), `n/a` and `nan`
//! values, NVTX range columns, kernel names with commas inside quotes, and, with `--print-units` left at its default,
//! scaled units (`Mbyte`, `us`, `Ghz`) that are converted to base units here.

use std::collections::{BTreeMap, HashMap};
use std::io::Cursor;

use polars::prelude::*;
use serde::{Deserialize, Serialize};

pub mod non_finite;
pub mod query_metrics;
pub mod resolution;
pub mod sanitizer;
pub mod source_page;

/// One profiled kernel launch.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct KernelRow {
    /// ncu's launch ID: the order in which the launches were profiled.
    pub id: u64,
    pub process_id: String,
    pub kernel_name: String,
    pub block_size: String,
    pub grid_size: String,
    pub device: String,
    pub cc: String,
    /// Metric values in base units (bytes, ns, hz, …). NaN marks a `nan` value.
    pub values: BTreeMap<String, f64>,
    /// Metric values that are not numbers (`PolicySpread`, `n/a`), kept as text.
    pub text: BTreeMap<String, String>,
}

impl KernelRow {
    /// The kernel of row `r` of the `FIXED` columns, with no metric yet.
    fn from_fixed(fixed: &[Vec<&str>], r: usize, id: u64) -> KernelRow {
        KernelRow {
            id,
            process_id: fixed[1][r].to_string(),
            kernel_name: fixed[4][r].to_string(),
            block_size: fixed[7][r].to_string(),
            grid_size: fixed[8][r].to_string(),
            device: fixed[9][r].to_string(),
            cc: fixed[10][r].to_string(),
            values: BTreeMap::new(),
            text: BTreeMap::new(),
        }
    }

    /// Keeps metric `name`'s value `raw`: a number (times `scale`, to base units), else as text
    /// unless empty.
    fn put(&mut self, name: &str, scale: f64, raw: &str) {
        match parse_number(raw) {
            Some(v) => {
                self.values.insert(name.to_string(), v * scale);
            }
            None if !raw.is_empty() => {
                self.text.insert(name.to_string(), raw.to_string());
            }
            None => {}
        }
    }

    /// A faulted kernel reports `nan` metrics and a grid of `(0, 0, 0)`.
    pub fn looks_faulted(&self) -> bool {
        self.grid_size.replace(' ', "") == "(0,0,0)" || self.values.values().any(|v| v.is_nan())
    }
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct NcuOutput {
    pub kernels: Vec<KernelRow>,
    /// `==ERROR==` lines: ncu exits 0 even when it prints them (for example for an unknown metric).
    pub errors: Vec<String>,
    pub warnings: Vec<String>,
    /// Lines that were neither CSV nor ncu's own: the profiled program's output.
    pub program_output: Vec<String>,
}

#[derive(Debug, thiserror::Error)]
pub enum ParseError {
    #[error("no CSV table found in ncu output ({0})")]
    NoTable(String),
    #[error("ncu CSV could not be read: {0}")]
    Csv(String),
    #[error("ncu CSV has no `{0}` column; is this `ncu --csv` output?")]
    MissingColumn(&'static str),
    #[error(
        "line {line} of the ncu CSV is {bytes} bytes long, more than the {MAX_CSV_LINE_BYTES} gpu-lab reads (ncu's widest rows are tens of KB)\n  fix: export the report again (`ncu -i REPORT --csv --page raw --print-units base`): this file was cut, joined or is not an ncu export"
    )]
    LineTooLong { line: usize, bytes: usize },
    #[error(
        "ncu CSV has the column `{0}` twice: ncu never writes that\n  fix: export the report again (`ncu -i REPORT --csv --page raw --print-units base`) instead of editing the CSV"
    )]
    DuplicateColumn(String),
}

/// The longest CSV line read, in bytes. ncu's raw page is a few hundred columns (a row of some
/// 10 KB, kernel names included); a line of a gigabyte is not an export, and its header alone
/// would become tens of millions of column names.
pub const MAX_CSV_LINE_BYTES: usize = 4 << 20;

const FIXED: [&str; 11] = [
    "ID",
    "Process ID",
    "Process Name",
    "Host Name",
    "Kernel Name",
    "Context",
    "Stream",
    "Block Size",
    "Grid Size",
    "Device",
    "CC",
];

/// Columns of the details page besides the fixed ones; they are not metrics.
const DETAILS_EXTRA: [&str; 8] = [
    "Section Name",
    "Metric Name",
    "Metric Unit",
    "Metric Value",
    "Rule Name",
    "Rule Type",
    "Rule Description",
    "Estimated Speedup Type",
];

/// Splits ncu output into its CSV table and everything else.
fn split_lines(mut text: String, out: &mut NcuOutput) -> Result<String, ParseError> {
    let mut csv_lines: Vec<(usize, usize)> = Vec::new();
    let mut offset = 0;
    for (number, line) in text.split_inclusive('\n').enumerate() {
        let t = line.trim_end_matches(['\n', '\r']);
        if t.starts_with('"') {
            if t.len() > MAX_CSV_LINE_BYTES {
                return Err(ParseError::LineTooLong {
                    line: number + 1,
                    bytes: t.len(),
                });
            }
            csv_lines.push((offset, offset + line.len()));
        } else if t.starts_with("==ERROR==") {
            out.errors.push(t.to_string());
        } else if t.starts_with("==WARNING==") {
            out.warnings.push(t.to_string());
        } else if t.starts_with("==PROF==") || t.trim().is_empty() {
        } else {
            out.program_output.push(t.to_string());
        }
        offset += line.len();
    }
    let (Some(first), Some(last)) = (csv_lines.first(), csv_lines.last()) else {
        return Ok(String::new());
    };
    // Usually the table is one block after the program's output: cut it out in place, no copy of a large export.
    if csv_lines.windows(2).all(|w| w[0].1 == w[1].0) && !text.contains('\r') {
        text.truncate(last.1);
        text.drain(..first.0);
        return Ok(text);
    }
    let mut csv = String::with_capacity(last.1 - first.0);
    for (a, b) in csv_lines {
        csv.push_str(text[a..b].trim_end_matches(['\n', '\r']));
        csv.push('\n');
    }
    Ok(csv)
}

/// Multiplier from a unit to its base unit (`Mbyte` -> 1e6, `us` -> 1e3 ns).
pub fn unit_scale(unit: &str) -> f64 {
    let u = unit.trim();
    let time = |s: &str| match s {
        "ns" | "nsecond" => Some(1.0),
        "us" | "usecond" => Some(1e3),
        "ms" | "msecond" => Some(1e6),
        "s" | "second" => Some(1e9),
        _ => None,
    };
    if let Some(t) = time(u) {
        return t;
    }
    // SI prefixes on byte, hz, and their per-something forms (`Kbyte/block`, `Gbyte/second`).
    let (head, tail) = u.split_once('/').unwrap_or((u, ""));
    let prefix = |p: char| match p {
        'K' | 'k' => 1e3,
        'M' => 1e6,
        'G' => 1e9,
        'T' => 1e12,
        'P' => 1e15,
        _ => 1.0,
    };
    let mut scale = 1.0;
    for base in ["byte", "hz", "Hz", "bit"] {
        if let Some(p) = head.strip_suffix(base)
            && p.len() == 1
        {
            scale = prefix(p.chars().next().unwrap_or(' '));
        }
    }
    // Rates ncu prints per `second` scale by the time unit too (`byte/usecond`).
    match tail {
        "usecond" => scale * 1e6,
        "msecond" => scale * 1e3,
        "nsecond" => scale * 1e9,
        _ => scale,
    }
}

/// Parses one value: thousands separators removed, `n/a` kept as text, `nan` as NaN.
pub fn parse_number(raw: &str) -> Option<f64> {
    let s = raw.trim();
    if s.eq_ignore_ascii_case("nan") || s.eq_ignore_ascii_case("-nan") {
        return Some(f64::NAN);
    }
    let parse = |t: &str| {
        t.parse::<f64>()
            .ok()
            .filter(|_| t.bytes().any(|c| c.is_ascii_digit()))
    };
    if !s.contains(',') {
        return parse(s);
    }
    parse(&s.replace(',', ""))
}

fn column_strs<'a>(df: &'a DataFrame, name: &str) -> Result<Vec<&'a str>, ParseError> {
    let col = df
        .column(name)
        .map_err(|e| ParseError::Csv(e.to_string()))?;
    let s = col.str().map_err(|e| ParseError::Csv(e.to_string()))?;
    Ok(s.iter().map(|v| v.unwrap_or("")).collect())
}

/// An ncu CSV split from the text around it, its header read, its body not parsed yet: a caller
/// that needs a few metrics of a wide export (the raw page has ~330 columns) parses only those.
#[derive(Debug)]
pub struct CsvTable {
    csv: String,
    header: Vec<String>,
    /// ncu's messages and the program's output; `kernels` fills in the rest.
    notes: NcuOutput,
}

/// polars' CSV errors say what to change in polars' options; a user needs to hear what is wrong with the file.
fn plain_csv_error(polars: &str) -> String {
    let first = polars.lines().next().unwrap_or(polars);
    if polars.contains("truncate_ragged_lines") || polars.contains("found more fields") {
        format!("a row has more fields than the header: the export is cut or was edited ({first})")
    } else if polars.contains("infer_schema_length") || polars.contains("could not parse") {
        format!("a value does not fit its column: the export is cut or was edited ({first})")
    } else {
        first.to_string()
    }
}

/// Splits ncu output into its CSV table and the lines around it, and reads the header.
pub fn read_ncu_csv(text: String) -> Result<CsvTable, ParseError> {
    let mut notes = NcuOutput::default();
    let csv = split_lines(text, &mut notes)?;
    if csv.is_empty() {
        let why = notes
            .errors
            .first()
            .cloned()
            .unwrap_or_else(|| "no kernel was profiled".into());
        return Err(ParseError::NoTable(why));
    }
    let first = csv.lines().next().unwrap_or("");
    let header: Vec<String> = csv::ReaderBuilder::new()
        .has_headers(false)
        .from_reader(first.as_bytes())
        .records()
        .next()
        .transpose()
        .map_err(|e| ParseError::Csv(e.to_string()))?
        .map(|r| r.iter().map(String::from).collect())
        .unwrap_or_default();
    for name in FIXED {
        if !header.iter().any(|h| h == name) {
            return Err(ParseError::MissingColumn(name));
        }
    }
    let mut seen = std::collections::HashSet::new();
    if let Some(twice) = header.iter().find(|h| !seen.insert(h.as_str())) {
        return Err(ParseError::DuplicateColumn(twice.clone()));
    }
    Ok(CsvTable { csv, header, notes })
}

impl CsvTable {
    /// The details page: one row per (kernel, metric) instead of one column per metric.
    pub fn is_details(&self) -> bool {
        self.header.iter().any(|n| n == "Metric Name")
            && self.header.iter().any(|n| n == "Metric Value")
    }

    /// Columns that hold metrics on the raw page (NVTX range columns and ncu's fixed ones excluded).
    fn raw_metric_columns(&self) -> impl Iterator<Item = &String> {
        self.header.iter().filter(|n| {
            !FIXED.contains(&n.as_str())
                && !DETAILS_EXTRA.contains(&n.as_str())
                && n.as_str() != "Estimated Speedup"
                && !is_nvtx_column(n)
        })
    }

    fn frame(&self, columns: Vec<&str>) -> Result<DataFrame, ParseError> {
        CsvReadOptions::default()
            .with_has_header(true)
            .with_columns(Some(columns.into_iter().map(PlSmallStr::from).collect()))
            .with_infer_schema_length(Some(0)) // every column as text: values carry separators and units
            .map_parse_options(|o| o.with_missing_is_null(false))
            .into_reader_with_file_handle(Cursor::new(self.csv.as_bytes()))
            .finish()
            .map_err(|e| ParseError::Csv(plain_csv_error(&e.to_string())))
    }

    /// Every metric name the table holds: column names on the raw page, `Metric Name` values on the details page.
    pub fn metric_names(&self) -> Result<Vec<String>, ParseError> {
        if !self.is_details() {
            return Ok(self.raw_metric_columns().cloned().collect());
        }
        let df = self.frame(vec!["Metric Name"])?;
        let mut seen = std::collections::HashSet::new();
        Ok(column_strs(&df, "Metric Name")?
            .into_iter()
            .filter(|n| !n.is_empty() && seen.insert(*n))
            .map(String::from)
            .collect())
    }

    /// One row per profiled kernel, with the metrics `keep` accepts.
    pub fn kernels(&self, keep: &dyn Fn(&str) -> bool) -> Result<NcuOutput, ParseError> {
        let details = self.is_details();
        let metric_cols: Vec<&str> = if details {
            vec![]
        } else {
            self.raw_metric_columns()
                .filter(|n| keep(n))
                .map(String::as_str)
                .collect()
        };
        let mut wanted: Vec<&str> = FIXED.to_vec();
        wanted.extend(if details {
            vec!["Metric Name", "Metric Unit", "Metric Value"]
        } else {
            metric_cols.clone()
        });
        let df = self.frame(wanted)?;
        let fixed: Vec<Vec<&str>> = FIXED
            .iter()
            .map(|c| column_strs(&df, c))
            .collect::<Result<_, _>>()?;
        let values: Vec<Vec<&str>> = metric_cols
            .iter()
            .map(|c| column_strs(&df, c))
            .collect::<Result<_, _>>()?;
        let long: Option<[Vec<&str>; 3]> = if details {
            Some([
                column_strs(&df, "Metric Name")?,
                column_strs(&df, "Metric Unit")?,
                column_strs(&df, "Metric Value")?,
            ])
        } else {
            None
        };
        // Raw page with units: the row under the header has an empty ID and the units.
        let units_row = (df.height() > 0 && fixed[0][0].is_empty()).then_some(0);
        let scales: Vec<f64> = values
            .iter()
            .map(|v| units_row.map(|u| unit_scale(v[u])).unwrap_or(1.0))
            .collect();
        let mut out = self.notes.clone();
        let mut by_id: HashMap<(&str, u64), usize> = HashMap::new();
        for r in 0..df.height() {
            if Some(r) == units_row {
                continue;
            }
            let Some(id) = parse_number(fixed[0][r])
                .filter(|v| v.is_finite())
                .map(|v| v as u64)
            else {
                continue;
            };
            let index = *by_id.entry((fixed[1][r], id)).or_insert_with(|| {
                out.kernels.push(KernelRow::from_fixed(&fixed, r, id));
                out.kernels.len() - 1
            });
            if let Some([name, ..]) = &long {
                // A kernel stays even when none of its metrics is kept: it was profiled.
                if !keep(name[r]) {
                    continue;
                }
            }
            let row = &mut out.kernels[index];
            match &long {
                Some([name, unit, value]) => row.put(name[r], unit_scale(unit[r]), value[r]),
                None => {
                    for ((name, values), scale) in metric_cols.iter().zip(&values).zip(&scales) {
                        row.put(name, *scale, values[r]);
                    }
                }
            }
        }
        // Launch order is by process, then ID (the order ncu profiled them).
        out.kernels
            .sort_by_cached_key(|k| (k.process_id.parse::<u64>().unwrap_or(0), k.id));
        Ok(out)
    }
}

/// ncu's NVTX columns (`--print-nvtx-rename`/`--nvtx`): `thread Domain:Push/Pop_Range:...`, `Id:Domain:Start/Stop_Range:...`.
pub fn is_nvtx_column(name: &str) -> bool {
    name.contains("Push/Pop_Range") || name.contains("Start/Stop_Range")
}

/// Parses `ncu --csv` output of the raw page (`--page raw`, one column per metric) or the
/// details page (one row per metric), every metric kept.
pub fn parse_ncu_csv(text: &str) -> Result<NcuOutput, ParseError> {
    read_ncu_csv(text.to_string())?.kernels(&|_| true)
}
