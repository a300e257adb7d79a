//! CSV exporter: one row per job with its timing, bandwidth and every metric (the run's `metrics.csv`).

use super::exporter::Exporter;
use crate::frame::spreadsheet_safe;
use crate::records::RunData;

pub struct Csv;

impl Exporter<RunData> for Csv {
    fn file_name(&self) -> &'static str {
        "metrics.csv"
    }

    fn render(&self, run: &RunData) -> anyhow::Result<String> {
        let metric_names: Vec<String> = run.info.metrics.iter().map(|m| m.name.clone()).collect();
        let mut w = ::csv::Writer::from_writer(Vec::new());
        let mut header = vec![
            "group",
            "variant",
            "params",
            "status",
            "median_ms",
            "ci_low_ms",
            "ci_high_ms",
            "samples",
            "gbs",
            "copy_bound_gbs",
        ]
        .into_iter()
        .map(String::from)
        .collect::<Vec<_>>();
        header.extend(metric_names.iter().map(|m| spreadsheet_safe(m)));
        // `--energy` runs only: runs without it keep their columns.
        let energy = run.jobs.iter().any(|j| j.energy.is_some());
        if energy {
            header.extend(ENERGY_COLUMNS.map(String::from));
        }
        // A mock run's numbers are stand-ins: a last column says so on every row (measured runs have none).
        if run.info.mock {
            header.push("MOCK".into());
        }
        w.write_record(&header)?;
        let num = |v: Option<f64>| v.map(|x| format!("{x}")).unwrap_or_default();
        for j in &run.jobs {
            let s = j.summary;
            let mut row = vec![
                spreadsheet_safe(&j.key.group),
                spreadsheet_safe(&j.key.variant),
                spreadsheet_safe(&crate::records::format_params(&j.key.variant_params)),
                serde_json::to_value(j.status)
                    .ok()
                    .and_then(|v| v.as_str().map(String::from))
                    .unwrap_or_default(),
                num(s.map(|s| s.median)),
                num(s.map(|s| s.ci_low)),
                num(s.map(|s| s.ci_high)),
                s.map(|s| s.n.to_string()).unwrap_or_default(),
                num(j.gbs()),
                num(run.bound_of(j).and_then(|b| b.copy_gbs())),
            ];
            let profile = run.profiles.get(j.id());
            for m in &metric_names {
                row.push(num(
                    profile.and_then(|p| p.metrics.get(m).copied().flatten())
                ));
            }
            if energy {
                row.extend(energy_cells(j));
            }
            if run.info.mock {
                row.push("MOCK: stand-in, not measured".into());
            }
            w.write_record(&row)?;
        }
        Ok(String::from_utf8(w.into_inner()?)?)
    }
}

const ENERGY_COLUMNS: [&str; 6] = [
    "joules_per_run",
    "watts",
    "joules_per_tflop",
    "joules_per_gb",
    "power_limit_w",
    "energy_clock_lowered",
];

/// A job's `--energy` cells (empty where it has none or it failed).
fn energy_cells(j: &crate::records::JobRecord) -> Vec<String> {
    let num = |v: Option<f64>| v.map(|x| format!("{x}")).unwrap_or_default();
    match &j.energy {
        Some(e) => vec![
            num(e.joules_per_run()),
            num(e.mean_watts()),
            num(e.joules_per_tera_op(j.work.flops)),
            num(e.joules_per_gb(j.work.bytes)),
            num(e.power_limit_w),
            if e.error.is_some() {
                String::new()
            } else {
                e.clock_lowered().to_string()
            },
        ],
        None => vec![String::new(); ENERGY_COLUMNS.len()],
    }
}
