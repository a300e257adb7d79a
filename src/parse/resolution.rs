//! How finely ncu printed each metric of a raw page: half a unit of its last printed digit, in base units (pure). ncu's CSV rounds percentages and ratios to two decimals, so a value read back from it is only known to that resolution, and a profiler that agrees within it agrees with ncu.

use std::collections::BTreeMap;

use super::{CsvTable, ParseError, column_strs, parse_number, read_ncu_csv, unit_scale};

/// Each raw-page metric's printed resolution: the smallest, over the page's kernels, of half a
/// unit of the value's last printed digit, times the column's unit scale (`"0.94"` → 0.005,
/// `"1024"` → 0.5). The smallest, so that no value is credited with more rounding than ncu gave
/// any of them; a bare `0` says nothing (ncu prints an exact 0 so in a column of two decimals,
/// where `0.00` is a rounded one), and a column of bare zeros, text or exponent forms has none.
/// The details page (one row per metric) gives an empty map.
pub fn printed_resolution(text: &str) -> Result<BTreeMap<String, f64>, ParseError> {
    let table = read_ncu_csv(text.to_string())?;
    if table.is_details() {
        return Ok(BTreeMap::new());
    }
    resolution_of(&table)
}

fn resolution_of(table: &CsvTable) -> Result<BTreeMap<String, f64>, ParseError> {
    let names: Vec<&str> = table.raw_metric_columns().map(String::as_str).collect();
    let mut wanted = vec!["ID"];
    wanted.extend(&names);
    let df = table.frame(wanted)?;
    let ids = column_strs(&df, "ID")?;
    // The row under the header holds the units where ncu printed them (an empty ID).
    let units_row = ids.first().is_some_and(|id| id.is_empty()).then_some(0);
    let mut out = BTreeMap::new();
    for name in names {
        let values = column_strs(&df, name)?;
        let scale = units_row.map_or(1.0, |u| unit_scale(values[u]));
        let finest = values
            .iter()
            .enumerate()
            .filter(|(r, _)| Some(*r) != units_row)
            .filter_map(|(_, v)| half_last_digit(v))
            .reduce(f64::min);
        if let Some(h) = finest {
            out.insert(name.to_string(), h * scale);
        }
    }
    Ok(out)
}

/// Half a unit of the last digit of a plainly printed number (`12,345.60` → 0.005, `-0.00` →
/// 0.005); None for a bare zero, text, `nan` and exponent forms.
fn half_last_digit(raw: &str) -> Option<f64> {
    let s = raw.trim().replace(',', "");
    parse_number(&s).filter(|v| v.is_finite())?;
    if s.trim_start_matches('-') == "0" {
        return None;
    }
    if s.contains(['e', 'E']) {
        return None;
    }
    let decimals = s.split_once('.').map_or(0, |(_, frac)| frac.len());
    Some(0.5 * 10f64.powi(-i32::try_from(decimals).ok()?))
}

#[cfg(test)]
mod tests {
    use super::*;

    const PAGE: &str = "\"ID\",\"Process ID\",\"Process Name\",\"Host Name\",\"Kernel Name\",\"Context\",\"Stream\",\"Block Size\",\"Grid Size\",\"Device\",\"CC\",\"a.ratio\",\"b.sum\",\"c.pct\",\"d.sum\",\"e\"\n\
\"\",\"\",\"\",\"\",\"\",\"\",\"\",\"\",\"\",\"\",\"\",\"inst\",\"Kbyte\",\"%\",\"byte\",\"\"\n\
\"0\",\"1\",\"p\",\"h\",\"k\",\"1\",\"7\",\"(32, 1, 1)\",\"(4, 1, 1)\",\"0\",\"9.0\",\"0.02\",\"1,024\",\"42.1\",\"212894905.60\",\"PolicySpread\"\n\
\"1\",\"1\",\"p\",\"h\",\"k\",\"1\",\"7\",\"(32, 1, 1)\",\"(4, 1, 1)\",\"0\",\"9.0\",\"0\",\"2,048\",\"7.25\",\"64\",\"PolicySpread\"\n";

    #[test]
    fn each_column_gets_half_its_finest_printed_digit_in_base_units() {
        let r = printed_resolution(PAGE).unwrap();
        // "0.02" and "0": an exact zero is printed without decimals, so "0.02" decides.
        assert!((r["a.ratio"] - 0.005).abs() < 1e-15);
        // Kbyte: half a unit is 500 bytes.
        assert_eq!(r["b.sum"], 500.0);
        // "42.1" and "7.25": the finer decides.
        assert!((r["c.pct"] - 0.005).abs() < 1e-15);
        assert!((r["d.sum"] - 0.005).abs() < 1e-15);
        assert!(!r.contains_key("e"), "text has no resolution");
    }

    #[test]
    fn plain_numbers_only() {
        assert_eq!(half_last_digit("12,345.60"), Some(0.005));
        assert_eq!(half_last_digit("3"), Some(0.5));
        assert_eq!(half_last_digit("1.5e+10"), None);
        assert_eq!(half_last_digit("nan"), None);
        assert_eq!(half_last_digit("0"), None);
        assert_eq!(half_last_digit("-0.00"), Some(0.005));
        assert_eq!(half_last_digit("n/a"), None);
    }
}
