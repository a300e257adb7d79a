//! SVG exporter: one bar chart per group of each variant's GB/s against the copy bound measured in the same run.

use plotters::prelude::*;

use super::exporter::Exporter;
use crate::records::{JobStatus, RunData};

pub struct Svg;

const ROW: i32 = 18;
const LABEL_W: i32 = 300;
const BAR_W: i32 = 520;
const WIDTH: u32 = (LABEL_W + BAR_W + 90) as u32;

fn draw(
    run: &RunData,
    area: &DrawingArea<SVGBackend, plotters::coord::Shift>,
) -> Result<(), Box<dyn std::error::Error>> {
    area.fill(&WHITE)?;
    let text = ("sans-serif", 12).into_font();
    let title = ("sans-serif", 15).into_font();
    let device = run.info.gpu_name();
    area.draw(&Text::new(
        run.info.timing.cache.marked(&format!(
            "{} on {} ({}): effective GB/s, copy bound dashed",
            run.info.suite, device, run.info.started
        )),
        (10, 8),
        title,
    ))?;
    let mut y = 36;
    for group in run.groups() {
        let jobs: Vec<_> = run.jobs.iter().filter(|j| j.group() == group).collect();
        let copy = run.bounds.get(&group).and_then(|b| b.copy_gbs());
        let scale = jobs
            .iter()
            .filter_map(|j| j.gbs())
            .chain(copy)
            .fold(1.0f64, f64::max)
            * 1.05;
        area.draw(&Text::new(
            group.to_string(),
            (10, y),
            ("sans-serif", 13).into_font().style(FontStyle::Bold),
        ))?;
        y += ROW;
        let top = y;
        for j in &jobs {
            area.draw(&Text::new(j.label.clone(), (10, y + 2), text.clone()))?;
            match (j.status, j.gbs()) {
                (JobStatus::Ok, Some(g)) => {
                    let w = (g / scale * BAR_W as f64) as i32;
                    area.draw(&Rectangle::new(
                        [(LABEL_W, y + 2), (LABEL_W + w, y + ROW - 3)],
                        BLUE.mix(0.7).filled(),
                    ))?;
                    area.draw(&Text::new(
                        format!("{g:.0}"),
                        (LABEL_W + w + 4, y + 2),
                        text.clone(),
                    ))?;
                }
                (status, _) => {
                    let why = if status == JobStatus::Wrong {
                        "wrong output"
                    } else {
                        "failed"
                    };
                    area.draw(&Text::new(why, (LABEL_W + 4, y + 2), text.color(&RED)))?;
                }
            }
            y += ROW;
        }
        if let Some(c) = copy {
            let x = LABEL_W + (c / scale * BAR_W as f64) as i32;
            for seg in (top..y).step_by(6) {
                area.draw(&PathElement::new(
                    vec![(x, seg), (x, (seg + 3).min(y))],
                    BLACK.stroke_width(2),
                ))?;
            }
            area.draw(&Text::new(
                format!("copy {c:.0}"),
                (x - 30, y + 2),
                text.clone(),
            ))?;
        }
        y += ROW + 10;
    }
    Ok(())
}

/// Height the chart needs: a title, then per group a heading, one row per job and the copy label.
fn height(run: &RunData) -> u32 {
    let rows: usize = run
        .groups()
        .iter()
        .map(|g| run.jobs.iter().filter(|j| j.group() == g).count() + 2)
        .sum();
    (50 + rows as i32 * ROW + run.groups().len() as i32 * 10).max(80) as u32
}

impl Exporter<RunData> for Svg {
    fn file_name(&self) -> &'static str {
        "chart.svg"
    }

    fn render(&self, run: &RunData) -> anyhow::Result<String> {
        let mut out = String::new();
        {
            let area = SVGBackend::with_string(&mut out, (WIDTH, height(run))).into_drawing_area();
            draw(run, &area).map_err(|e| anyhow::anyhow!("drawing the chart: {e}"))?;
            area.present()
                .map_err(|e| anyhow::anyhow!("drawing the chart: {e}"))?;
        }
        Ok(xml_chars(out))
    }
}

/// SVG text with every character XML 1.0 cannot hold (control characters other than tab, newline
/// and carriage return; U+FFFE, U+FFFF) made `?`: names from stored files reach chart text, and
/// plotters escapes only `< > & " '`.
pub fn xml_chars(svg: String) -> String {
    let bad = |c: char| {
        ((c as u32) < 0x20 && !matches!(c, '\t' | '\n' | '\r'))
            || matches!(c, '\u{fffe}' | '\u{ffff}')
    };
    if !svg.contains(bad) {
        return svg;
    }
    svg.chars().map(|c| if bad(c) { '?' } else { c }).collect()
}

#[cfg(test)]
mod xml_chars_tests {
    #[test]
    fn characters_xml_cannot_hold_are_replaced() {
        assert_eq!(
            super::xml_chars("<t>a\u{1}b\u{fffe}\u{ffff}\n</t>".into()),
            "<t>a?b??\n</t>"
        );
        assert_eq!(super::xml_chars("plain".into()), "plain");
    }
}
