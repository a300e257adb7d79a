//! JSON exporter: the whole run (environment, jobs, bounds, metrics) as one document.

use serde_json::json;

use super::exporter::Exporter;
use crate::records::RunData;

pub struct Json;

impl Exporter<RunData> for Json {
    fn file_name(&self) -> &'static str {
        "report.json"
    }

    fn render(&self, run: &RunData) -> anyhow::Result<String> {
        let jobs: Vec<_> = run
            .jobs
            .iter()
            .map(|j| {
                json!({
                    "job": j,
                    "gbs": j.gbs(),
                    "copy_bound_gbs": run.bound_of(j).and_then(|b| b.copy_gbs()),
                    "profile": run.profiles.get(j.id()),
                })
            })
            .collect();
        Ok(serde_json::to_string_pretty(
            &json!({ "run": run.info, "bounds": run.bounds, "jobs": jobs }),
        )?)
    }
}
