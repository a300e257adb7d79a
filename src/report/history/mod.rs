//! `gpu-lab history`'s outputs of one suite's trends: a markdown table per job, a CSV of every point, an SVG chart of each job's median and interval over the runs (pure; one exporter per file).

mod csv;
mod digits;
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

#[cfg(test)]
mod tests;
