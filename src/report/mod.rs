//! Exporters: a stored run -> markdown, JSON or CSV bytes (pure; one exporter per file behind one trait).

pub mod csv;
pub mod json;
pub mod markdown;
pub mod nvprof;
pub mod svg;

use crate::model::RunData;

pub trait Exporter {
    /// File name the rendered output is saved under in a run directory.
    fn file_name(&self) -> &'static str;
    fn render(&self, run: &RunData) -> anyhow::Result<String>;
}

pub fn exporter(format: &str) -> anyhow::Result<Box<dyn Exporter>> {
    match format {
        "md" | "markdown" => Ok(Box::new(markdown::Markdown)),
        "json" => Ok(Box::new(json::Json)),
        "csv" => Ok(Box::new(csv::Csv)),
        "svg" => Ok(Box::new(svg::Svg)),
        other => anyhow::bail!("unknown report format `{other}`\n  fix: use --format md, json, csv or svg"),
    }
}
