//! HTML exporter: the markdown report (`report.md`) read back and written as one self-contained page (`report.html`), its tables sortable (`sort.js`), its charts inline (`body`), nothing fetched (`page`).

mod body;
mod page;

use super::exporter::Exporter;
use super::markdown::{Markdown, is_compute};
use super::roofline::Roofline;
use super::svg::Svg;
use super::timeline::timeline_files;
use crate::records::RunData;

pub use body::Chart;

pub struct Html;

/// Every chart the markdown report links, under the name it links it by: the run's chart, the
/// roofline where a job declares flops (as `render_reports` writes it), and each host program's
/// timeline.
fn charts(run: &RunData) -> anyhow::Result<Vec<Chart>> {
    let mut charts = vec![Chart {
        file: Svg.file_name().to_string(),
        svg: Svg.render(run)?,
    }];
    if run.jobs.iter().any(is_compute) {
        charts.push(Chart {
            file: Roofline.file_name().to_string(),
            svg: Roofline.render(run)?,
        });
    }
    charts.extend(
        timeline_files(run)
            .into_iter()
            .map(|(file, svg)| Chart { file, svg }),
    );
    Ok(charts)
}

impl Exporter<RunData> for Html {
    fn file_name(&self) -> &'static str {
        "report.html"
    }

    /// The markdown report's own text, so that the page says what report.md says and no section
    /// is written twice.
    fn render(&self, run: &RunData) -> anyhow::Result<String> {
        let markdown = Markdown.render(run)?;
        let body = body::body(&markdown, &charts(run)?);
        Ok(page::page(&body.title, &body.html))
    }
}
