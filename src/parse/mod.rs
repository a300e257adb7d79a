//! Reading Nsight Compute's CSV output (raw or details page) into one row of values per profiled kernel (pure).
//!
//! What real `ncu --csv` output contains (see tests/fixtures and ../shared/fixtures/ncu-h200):
//! the profiled program's own stdout and `==PROF==`/`==WARNING==`/`==ERROR==` lines mixed in,
//! a units row under the header (raw page), thousands separators (`"983,168"`), `n/a` and `nan`
//! values, kernel names with commas inside quotes, and, with `--print-units` left at its default,
//! scaled units (`Mbyte`, `us`, `Ghz`) that are converted to base units here.

use std::collections::BTreeMap;
use std::io::Cursor;

use polars::prelude::*;
use serde::{Deserialize, Serialize};

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
}

const FIXED: [&str; 11] = ["ID", "Process ID", "Process Name", "Host Name", "Kernel Name", "Context", "Stream", "Block Size", "Grid Size", "Device", "CC"];

/// Columns of the details page besides the fixed ones; they are not metrics.
const DETAILS_EXTRA: [&str; 8] = ["Section Name", "Metric Name", "Metric Unit", "Metric Value", "Rule Name", "Rule Type", "Rule Description", "Estimated Speedup Type"];

/// Splits ncu output into its CSV table and everything else.
fn split_lines(text: &str, out: &mut NcuOutput) -> String {
    let mut csv = String::new();
    for line in text.lines() {
        let t = line.trim_end_matches('\r');
        if t.starts_with('"') {
            csv.push_str(t);
            csv.push('\n');
        } else if t.starts_with("==ERROR==") {
            out.errors.push(t.to_string());
        } else if t.starts_with("==WARNING==") {
            out.warnings.push(t.to_string());
        } else if t.starts_with("==PROF==") || t.trim().is_empty() {
        } else {
            out.program_output.push(t.to_string());
        }
    }
    csv
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
        if let Some(p) = head.strip_suffix(base) {
            if p.len() == 1 {
                scale = prefix(p.chars().next().unwrap_or(' '));
            }
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
    let cleaned: String = s.chars().filter(|&c| c != ',').collect();
    if cleaned.is_empty() {
        return None;
    }
    cleaned.parse::<f64>().ok().filter(|_| cleaned.chars().any(|c| c.is_ascii_digit()))
}

fn read_frame(csv: String) -> Result<DataFrame, ParseError> {
    CsvReadOptions::default()
        .with_has_header(true)
        .with_infer_schema_length(Some(0)) // every column as text: values carry separators and units
        .map_parse_options(|o| o.with_missing_is_null(false))
        .into_reader_with_file_handle(Cursor::new(csv.into_bytes()))
        .finish()
        .map_err(|e| ParseError::Csv(e.to_string()))
}

fn column_strings(df: &DataFrame, name: &'static str) -> Result<Vec<String>, ParseError> {
    let col = df.column(name).map_err(|_| ParseError::MissingColumn(name))?;
    let s = col.str().map_err(|e| ParseError::Csv(e.to_string()))?;
    Ok(s.iter().map(|v| v.unwrap_or("").to_string()).collect())
}

/// Parses `ncu --csv` output of the raw page (`--page raw`, one column per metric) or the
/// details page (one row per metric).
pub fn parse_ncu_csv(text: &str) -> Result<NcuOutput, ParseError> {
    let mut out = NcuOutput::default();
    let csv = split_lines(text, &mut out);
    if csv.is_empty() {
        let why = out.errors.first().cloned().unwrap_or_else(|| "no kernel was profiled".into());
        return Err(ParseError::NoTable(why));
    }
    let df = read_frame(csv)?;
    let fixed: Vec<Vec<String>> = FIXED.iter().map(|&c| column_strings(&df, c)).collect::<Result<_, _>>()?;
    let names: Vec<String> = df.get_column_names().iter().map(|s| s.to_string()).collect();
    let is_details = names.iter().any(|n| n == "Metric Name") && names.iter().any(|n| n == "Metric Value");
    let metric_cols: Vec<(String, Vec<String>)> = names
        .iter()
        .filter(|n| !FIXED.contains(&n.as_str()) && !DETAILS_EXTRA.contains(&n.as_str()) && n.as_str() != "Estimated Speedup")
        .map(|n| {
            let s = df.column(n).and_then(|c| c.str().cloned()).map_err(|e| ParseError::Csv(e.to_string()))?;
            Ok((n.clone(), s.iter().map(|v| v.unwrap_or("").to_string()).collect()))
        })
        .collect::<Result<_, ParseError>>()?;
    let details: Option<[Vec<String>; 3]> = if is_details {
        Some([column_strings(&df, "Metric Name")?, column_strings(&df, "Metric Unit")?, column_strings(&df, "Metric Value")?])
    } else {
        None
    };
    // Raw page with units: the row under the header has an empty ID and the units.
    let units_row = (df.height() > 0 && fixed[0][0].is_empty()).then_some(0);
    let mut by_id: BTreeMap<(String, u64), KernelRow> = BTreeMap::new();
    for r in 0..df.height() {
        if Some(r) == units_row {
            continue;
        }
        let Some(id) = parse_number(&fixed[0][r]).filter(|v| v.is_finite()).map(|v| v as u64) else { continue };
        let key = (fixed[1][r].clone(), id);
        let row = by_id.entry(key).or_insert_with(|| KernelRow {
            id,
            process_id: fixed[1][r].clone(),
            kernel_name: fixed[4][r].clone(),
            block_size: fixed[7][r].clone(),
            grid_size: fixed[8][r].clone(),
            device: fixed[9][r].clone(),
            cc: fixed[10][r].clone(),
            values: BTreeMap::new(),
            text: BTreeMap::new(),
        });
        let mut put = |name: &str, unit: &str, raw: &str| match parse_number(raw) {
            Some(v) => {
                row.values.insert(name.to_string(), v * unit_scale(unit));
            }
            None if !raw.is_empty() => {
                row.text.insert(name.to_string(), raw.to_string());
            }
            None => {}
        };
        match &details {
            Some([name, unit, value]) => put(&name[r], &unit[r], &value[r]),
            None => {
                for (name, values) in &metric_cols {
                    let unit = units_row.map(|u| values[u].as_str()).unwrap_or("");
                    put(name, unit, &values[r]);
                }
            }
        }
    }
    // Launch order is by process, then ID (the order ncu profiled them).
    let mut kernels: Vec<KernelRow> = by_id.into_values().collect();
    kernels.sort_by(|a, b| (a.process_id.parse::<u64>().unwrap_or(0), a.id).cmp(&(b.process_id.parse::<u64>().unwrap_or(0), b.id)));
    out.kernels = kernels;
    Ok(out)
}
