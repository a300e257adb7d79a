//! SVG of several runs side by side (`gpu-lab compare RUN... --format svg`): per group and job, one bar per run showing its % of that run's own bound (copy, or the compute bound it names), so GPU models compare by how near each comes to its own limit.

use plotters::prelude::*;

use crate::records::{JobStatus, RunData};

const ROW: i32 = 14;
const LABEL_W: i32 = 320;
const BAR_W: i32 = 420;
const WIDTH: u32 = (LABEL_W + BAR_W + 120) as u32;
const COLORS: [RGBColor; 6] = [
    RGBColor(31, 119, 180),
    RGBColor(255, 127, 14),
    RGBColor(44, 160, 44),
    RGBColor(214, 39, 40),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
];

/// Groups and job ids in the order they first appear across the runs.
fn rows(runs: &[(&str, &RunData)]) -> Vec<(String, Vec<(String, String)>)> {
    let mut out: Vec<(String, Vec<(String, String)>)> = Vec::new();
    for (_, run) in runs {
        for j in &run.jobs {
            let group = j.group().to_string();
            let i = match out.iter().position(|(g, _)| *g == group) {
                Some(i) => i,
                None => {
                    out.push((group.clone(), Vec::new()));
                    out.len() - 1
                }
            };
            if !out[i].1.iter().any(|(id, _)| *id == j.key.id) {
                out[i].1.push((j.key.id.clone(), j.label.clone()));
            }
        }
    }
    out
}

/// A job's throughput over its own bound measured in that run: the compute bound it names
/// (cuBLAS, a variant) by GFLOP/s, else the copy bound by GB/s.
fn percent_of_bound(run: &RunData, j: &crate::records::JobRecord) -> Option<f64> {
    match run.compute_bound_gflops(j) {
        Some((_, bound)) => Some(j.gflops()? / bound? * 100.0),
        None => Some(j.gbs()? / run.bound_of(j)?.copy_gbs()? * 100.0),
    }
}

fn draw(
    runs: &[(&str, &RunData)],
    area: &DrawingArea<SVGBackend, plotters::coord::Shift>,
) -> Result<(), Box<dyn std::error::Error>> {
    area.fill(&WHITE)?;
    let text = ("sans-serif", 11).into_font();
    let suite = runs.first().map_or("", |(_, r)| r.info.suite.as_str());
    area.draw(&Text::new(format!("{suite}: % of each run's own bound, measured in that run (copy; cuBLAS or a variant where the suite names one)"), (10, 8), ("sans-serif", 14).into_font()))?;
    let mut y = 30;
    for (i, (label, run)) in runs.iter().enumerate() {
        let gpu = run.info.gpu_name();
        let color = COLORS[i % COLORS.len()];
        area.draw(&Rectangle::new(
            [(10, y + 2), (22, y + ROW - 2)],
            color.filled(),
        ))?;
        area.draw(&Text::new(
            format!(
                "{gpu}{}: {label}",
                if run.info.mock { " (MOCK)" } else { "" }
            ),
            (28, y),
            text.clone(),
        ))?;
        y += ROW;
    }
    y += 8;
    for (group, jobs) in rows(runs) {
        area.draw(&Text::new(
            group.clone(),
            (10, y),
            ("sans-serif", 12).into_font().style(FontStyle::Bold),
        ))?;
        y += ROW + 2;
        let top = y;
        for (id, label) in jobs {
            area.draw(&Text::new(label, (10, y + 2), text.clone()))?;
            for (i, (_, run)) in runs.iter().enumerate() {
                let color = COLORS[i % COLORS.len()];
                let job = run.jobs.iter().find(|j| j.key.id == id);
                let pct = job
                    .filter(|j| j.status == JobStatus::Ok)
                    .and_then(|j| percent_of_bound(run, j));
                match pct {
                    Some(p) => {
                        let w = (p.clamp(0.0, 150.0) / 150.0 * BAR_W as f64) as i32;
                        area.draw(&Rectangle::new(
                            [(LABEL_W, y + 1), (LABEL_W + w, y + ROW - 2)],
                            color.mix(0.8).filled(),
                        ))?;
                        area.draw(&Text::new(
                            format!("{p:.0}%"),
                            (LABEL_W + w + 4, y),
                            text.clone(),
                        ))?;
                    }
                    None => {
                        let why = match job.map(|j| j.status) {
                            None => "not in this run",
                            Some(JobStatus::Ok) => "no bytes or copy bound",
                            Some(JobStatus::Wrong) => "wrong output",
                            Some(_) => "failed",
                        };
                        area.draw(&Text::new(why, (LABEL_W + 4, y), text.color(&color)))?;
                    }
                }
                y += ROW;
            }
            y += 4;
        }
        // 100% of copy, dashed.
        let x = LABEL_W + (100.0 / 150.0 * BAR_W as f64) as i32;
        for seg in (top..y).step_by(6) {
            area.draw(&PathElement::new(
                vec![(x, seg), (x, (seg + 3).min(y))],
                BLACK.stroke_width(1),
            ))?;
        }
        area.draw(&Text::new("100% of the bound", (x - 40, y), text.clone()))?;
        y += ROW + 6;
    }
    Ok(())
}

fn height(runs: &[(&str, &RunData)]) -> u32 {
    let rows = rows(runs);
    let jobs: usize = rows.iter().map(|(_, j)| j.len()).sum();
    (40 + runs.len() as i32 * ROW
        + rows.len() as i32 * (2 * ROW + 8)
        + jobs as i32 * (runs.len() as i32 * ROW + 4))
        .max(80) as u32
}

/// The chart as SVG text.
pub fn render(runs: &[(&str, &RunData)]) -> anyhow::Result<String> {
    let mut out = String::new();
    {
        let area = SVGBackend::with_string(&mut out, (WIDTH, height(runs))).into_drawing_area();
        draw(runs, &area).map_err(|e| anyhow::anyhow!("drawing the comparison: {e}"))?;
        area.present()
            .map_err(|e| anyhow::anyhow!("drawing the comparison: {e}"))?;
    }
    Ok(super::svg::xml_chars(out))
}
