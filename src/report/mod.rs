//! Exporters: data -> markdown, HTML, JSON, CSV or SVG bytes (pure; one exporter per file behind one trait, for runs here and for comparisons in `compare/`).

pub mod bmf;
pub mod csv;
mod exporter;
pub mod frame;
pub mod github_benchmark;
pub mod history;
pub mod html;
pub mod json;
pub mod markdown;
pub mod nvprof;
pub mod roofline;
pub mod runs_svg;
pub mod svg;
pub mod terminal;
pub mod timeline;

pub use exporter::Exporter;

use crate::records::RunData;

/// The formats of a run's report.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    Md,
    Json,
    Csv,
    Svg,
    /// The run's polars frame (`results.csv`): one row per job, every column joined in.
    Frame,
    /// The roofline of the jobs that declare flops (`roofline.svg`).
    Roofline,
    /// The markdown report as one self-contained page (`report.html`): sortable tables, the
    /// charts inline, nothing fetched.
    Html,
    /// Bencher Metric Format JSON (`bencher run --adapter json`): latency in ns, GB/s, GFLOP/s.
    Bmf,
    /// github-action-benchmark's `customSmallerIsBetter` JSON: each job's median time.
    GithubBenchmark,
    /// github-action-benchmark's `customBiggerIsBetter` JSON: each job's GB/s and GFLOP/s.
    GithubBenchmarkBigger,
}

pub fn exporter(format: Format) -> Box<dyn Exporter<RunData>> {
    match format {
        Format::Md => Box::new(markdown::Markdown),
        Format::Json => Box::new(json::Json),
        Format::Csv => Box::new(csv::Csv),
        Format::Svg => Box::new(svg::Svg),
        Format::Frame => Box::new(frame::Results),
        Format::Roofline => Box::new(roofline::Roofline),
        Format::Html => Box::new(html::Html),
        Format::Bmf => Box::new(bmf::Bmf),
        Format::GithubBenchmark => Box::new(github_benchmark::GithubBenchmark(
            github_benchmark::Direction::SmallerIsBetter,
        )),
        Format::GithubBenchmarkBigger => Box::new(github_benchmark::GithubBenchmark(
            github_benchmark::Direction::BiggerIsBetter,
        )),
    }
}
