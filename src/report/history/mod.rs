//! `gpu-lab history`'s outputs of one suite's trends: a markdown table per job, a CSV of every point, an SVG chart of each job's median and interval over the runs (pure; one exporter per file).

mod csv;
mod md;
mod svg;

use super::Exporter;
use crate::history::Trends;

/// The formats of `gpu-lab history`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    Md,
    Svg,
    Csv,
}

pub fn exporter(format: Format) -> Box<dyn Exporter<Trends>> {
    match format {
        Format::Md => Box::new(md::Markdown),
        Format::Svg => Box::new(svg::Chart),
        Format::Csv => Box::new(csv::Csv),
    }
}

/// A number with four significant digits, as the tables show times and rates.
fn sig4(x: f64) -> String {
    if x == 0.0 || !x.is_finite() {
        return format!("{x}");
    }
    let digits = (3 - x.abs().log10().floor() as i32).max(0) as usize;
    format!("{x:.digits$}")
}

#[cfg(test)]
mod tests;
