//! The trends as CSV: one row per job and run, in run order (for a spreadsheet or polars).

use super::super::Exporter;
use crate::frame::spreadsheet_safe;
use crate::history::Trends;

pub struct Csv;

impl Exporter<Trends> for Csv {
    fn file_name(&self) -> &'static str {
        "history.csv"
    }

    fn render(&self, t: &Trends) -> anyhow::Result<String> {
        let mut w = ::csv::Writer::from_writer(Vec::new());
        let mut header = vec![
            "suite",
            "fingerprint",
            "group",
            "job_id",
            "label",
            "measure",
            "unit",
            "run_id",
            "started",
            "commit",
            "dirty",
            "median",
            "ci_low",
            "ci_high",
            "samples",
            "change_vs_first_pct",
        ];
        // A mock history's numbers are stand-ins: a last column says so on every row.
        if t.mock {
            header.push("MOCK");
        }
        w.write_record(&header)?;
        for trend in &t.trends {
            for p in &trend.points {
                let mut row = vec![
                    spreadsheet_safe(&t.suite),
                    t.fingerprint.clone(),
                    spreadsheet_safe(&trend.group),
                    spreadsheet_safe(&trend.job_id),
                    spreadsheet_safe(&trend.label),
                    t.measure.name().to_string(),
                    t.measure.unit().to_string(),
                    spreadsheet_safe(&p.run_id),
                    spreadsheet_safe(&p.started),
                    spreadsheet_safe(p.commit.as_deref().unwrap_or_default()),
                    p.dirty.to_string(),
                    p.median.to_string(),
                    p.ci_low.to_string(),
                    p.ci_high.to_string(),
                    p.n.to_string(),
                    trend
                        .change_pct(p)
                        .map(|c| format!("{c:.3}"))
                        .unwrap_or_default(),
                ];
                if t.mock {
                    row.push("MOCK".into());
                }
                w.write_record(&row)?;
            }
        }
        Ok(String::from_utf8(w.into_inner()?)?)
    }
}
