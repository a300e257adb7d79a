//! github-action-benchmark's custom JSON of a run: `customSmallerIsBetter` (each job's median time) or `customBiggerIsBetter` (its GB/s and GFLOP/s), for the action's charts and alerts.
//!
//! The format, as the action documents it (https://github.com/benchmark-action/github-action-benchmark,
//! "Examples", custom benchmarks; read by `extractCustomBenchmarkResult` in its src/extract.ts): a
//! JSON array of objects with a string `name`, a number `value`, a string `unit`, and optional
//! strings `range` and `extra` (shown in the chart's tooltip). One file holds one direction, as
//! the action's `tool` input names it.

use serde_json::json;

use super::exporter::Exporter;
use crate::history::rows_of;
use crate::records::RunData;

/// Which of the action's two custom tools the file is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Direction {
    /// `tool: customSmallerIsBetter`: times.
    SmallerIsBetter,
    /// `tool: customBiggerIsBetter`: GB/s and GFLOP/s.
    BiggerIsBetter,
}

pub struct GithubBenchmark(pub Direction);

impl Exporter<RunData> for GithubBenchmark {
    fn file_name(&self) -> &'static str {
        match self.0 {
            Direction::SmallerIsBetter => "github-benchmark-smaller.json",
            Direction::BiggerIsBetter => "github-benchmark-bigger.json",
        }
    }

    fn render(&self, run: &RunData) -> anyhow::Result<String> {
        let smaller = self.0 == Direction::SmallerIsBetter;
        let commit = run
            .info
            .build
            .as_ref()
            .map_or_else(|| "unknown build".to_string(), |b| b.describe());
        let gpu = run.info.gpu_name();
        let entries: Vec<_> = rows_of("", run)
            .into_iter()
            .filter(|r| r.measure.smaller_is_better() == smaller)
            .map(|r| {
                let name = super::bmf::benchmark_name(run, &r.job_id);
                json!({
                    "name": if smaller { name } else { format!("{name} ({})", r.measure.unit()) },
                    "value": r.median,
                    "unit": r.measure.unit(),
                    "range": format!("95% CI {:.6} to {:.6}", r.ci_low, r.ci_high),
                    "extra": format!(
                        "{}{gpu}, {} samples, {} L2, {commit}",
                        if run.info.mock { "MOCK run (stand-in numbers), " } else { "" },
                        r.samples.len(),
                        r.cache
                    ),
                })
            })
            .collect();
        Ok(serde_json::to_string_pretty(&entries)? + "\n")
    }
}
