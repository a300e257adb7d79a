//! Bencher Metric Format (BMF) JSON of a run, for `bencher run --adapter json`: one benchmark per job, its median time as `latency` (ns, Bencher's built-in Measure) with the 95% interval as lower and upper values, and its GB/s and GFLOP/s as Measures of their own.
//!
//! The format, as documented at https://bencher.dev/docs/reference/bencher-metric-format/: an
//! object of benchmark names, each an object of Measure names (or slugs), each an object with a
//! number `value` and optional numbers `lower_value` and `upper_value`.

use serde_json::{Map, Value, json};

use super::exporter::Exporter;
use crate::history::{Measure, rows_of};
use crate::records::RunData;

pub struct Bmf;

/// The Measure a history measure is sent as, and the factor from its unit to the Measure's.
fn measure(m: Measure) -> (&'static str, f64) {
    match m {
        // Bencher's built-in Latency Measure is in nanoseconds.
        Measure::TimeMs => ("latency", 1e6),
        Measure::Gbs => ("gb-per-s", 1.0),
        Measure::Gflops => ("gflop-per-s", 1.0),
    }
}

/// `suite: job id`, marked MOCK for a mock run (its numbers are stand-ins).
pub fn benchmark_name(run: &RunData, job_id: &str) -> String {
    format!(
        "{}{}: {job_id}",
        if run.info.mock { "MOCK " } else { "" },
        run.info.suite
    )
}

impl Exporter<RunData> for Bmf {
    fn file_name(&self) -> &'static str {
        "bmf.json"
    }

    fn render(&self, run: &RunData) -> anyhow::Result<String> {
        let mut benchmarks = Map::new();
        for row in rows_of("", run) {
            let (name, scale) = measure(row.measure);
            let entry = benchmarks
                .entry(benchmark_name(run, &row.job_id))
                .or_insert_with(|| Value::Object(Map::new()));
            if let Value::Object(measures) = entry {
                measures.insert(
                    name.to_string(),
                    json!({
                        "value": row.median * scale,
                        "lower_value": row.ci_low * scale,
                        "upper_value": row.ci_high * scale,
                    }),
                );
            }
        }
        Ok(serde_json::to_string_pretty(&Value::Object(benchmarks))? + "\n")
    }
}
