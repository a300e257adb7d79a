//! The trends as an SVG chart: one panel per job, its median at each run (a line through them) with the 95% interval as a whisker, on the job's own scale; runs evenly spaced, oldest at the left, the first and last run's commit below.

use plotters::prelude::*;

use super::super::Exporter;
use super::digits::sig4;
use crate::history::{Trend, Trends};

const LABEL_W: i32 = 300;
const PLOT_W: i32 = 460;
const PANEL_H: i32 = 96;
const PLOT_H: i32 = 60;
const TOP: i32 = 52;
const WIDTH: u32 = (LABEL_W + PLOT_W + 90) as u32;
const LINE: RGBColor = RGBColor(31, 119, 180);

pub struct Chart;

type Area<'a> = DrawingArea<SVGBackend<'a>, plotters::coord::Shift>;
type DrawResult = Result<(), Box<dyn std::error::Error>>;

/// The job's value range, padded a little so that no whisker touches the panel's edge.
fn value_range(trend: &Trend) -> (f64, f64) {
    let low = trend
        .points
        .iter()
        .map(|p| p.ci_low.min(p.median))
        .fold(f64::INFINITY, f64::min);
    let high = trend
        .points
        .iter()
        .map(|p| p.ci_high.max(p.median))
        .fold(f64::NEG_INFINITY, f64::max);
    let pad = ((high - low) * 0.1).max(high.abs() * 1e-3).max(1e-12);
    (low - pad, high + pad)
}

fn panel(area: &Area, t: &Trends, trend: &Trend, top: i32) -> DrawResult {
    let text = ("sans-serif", 11).into_font();
    area.draw(&Text::new(
        trend.label.clone(),
        (10, top + 4),
        ("sans-serif", 12).into_font().style(FontStyle::Bold),
    ))?;
    area.draw(&Text::new(
        trend.group.clone(),
        (10, top + 20),
        text.clone(),
    ))?;
    if let Some(last) = trend.points.last() {
        let change = trend
            .change_pct(last)
            .filter(|_| trend.points.len() > 1)
            .map_or_else(String::new, |c| format!(", {c:+.1}% vs first"));
        area.draw(&Text::new(
            format!("last {} {}{change}", sig4(last.median), t.measure.unit()),
            (10, top + 36),
            text.clone(),
        ))?;
    }
    let (low, high) = value_range(trend);
    let x0 = LABEL_W;
    let y_of = |v: f64| top + PLOT_H - ((v - low) / (high - low) * PLOT_H as f64) as i32;
    let n = t.runs.len().max(2) as f64 - 1.0;
    let x_of = |run: &str| {
        let i = t.runs.iter().position(|r| r == run).unwrap_or(0) as f64;
        x0 + (i / n * PLOT_W as f64) as i32
    };
    area.draw(&Rectangle::new(
        [(x0, top), (x0 + PLOT_W, top + PLOT_H)],
        RGBColor(200, 200, 200).stroke_width(1),
    ))?;
    area.draw(&Text::new(
        sig4(high),
        (x0 + PLOT_W + 6, top - 4),
        text.clone(),
    ))?;
    area.draw(&Text::new(
        sig4(low),
        (x0 + PLOT_W + 6, top + PLOT_H - 10),
        text.clone(),
    ))?;
    let points: Vec<(i32, i32)> = trend
        .points
        .iter()
        .map(|p| (x_of(&p.run_id), y_of(p.median)))
        .collect();
    area.draw(&PathElement::new(points.clone(), LINE.stroke_width(2)))?;
    for (p, &(x, y)) in trend.points.iter().zip(&points) {
        area.draw(&PathElement::new(
            vec![(x, y_of(p.ci_low)), (x, y_of(p.ci_high))],
            LINE.mix(0.6).stroke_width(1),
        ))?;
        area.draw(&Circle::new((x, y), 3, LINE.filled()))?;
    }
    if let (Some(first), Some(last)) = (trend.points.first(), trend.points.last()) {
        area.draw(&Text::new(
            first.commit_label(),
            (x_of(&first.run_id), top + PLOT_H + 4),
            text.clone(),
        ))?;
        if trend.points.len() > 1 {
            area.draw(&Text::new(
                last.commit_label(),
                (x_of(&last.run_id) - 70, top + PLOT_H + 4),
                text,
            ))?;
        }
    }
    Ok(())
}

fn draw(area: &Area, t: &Trends) -> DrawResult {
    area.fill(&WHITE)?;
    let mock = if t.mock {
        " — MOCK (stand-in numbers)"
    } else {
        ""
    };
    area.draw(&Text::new(
        format!(
            "{}: {} ({}) over {} runs{mock}",
            t.suite,
            t.measure.name(),
            t.measure.unit(),
            t.runs.len()
        ),
        (10, 8),
        ("sans-serif", 14).into_font(),
    ))?;
    area.draw(&Text::new(
        format!(
            "fingerprint {}: {}; dots: medians, whiskers: 95% intervals",
            t.fingerprint, t.environment
        ),
        (10, 28),
        ("sans-serif", 11).into_font(),
    ))?;
    for (i, trend) in t.trends.iter().enumerate() {
        panel(area, t, trend, TOP + 10 + i as i32 * PANEL_H)?;
    }
    Ok(())
}

impl Exporter<Trends> for Chart {
    fn file_name(&self) -> &'static str {
        "history.svg"
    }

    fn render(&self, t: &Trends) -> anyhow::Result<String> {
        let height = (TOP + 20 + t.trends.len() as i32 * PANEL_H).max(80) as u32;
        let mut out = String::new();
        {
            let area = SVGBackend::with_string(&mut out, (WIDTH, height)).into_drawing_area();
            draw(&area, t).map_err(|e| anyhow::anyhow!("drawing the history: {e}"))?;
            area.present()
                .map_err(|e| anyhow::anyhow!("drawing the history: {e}"))?;
        }
        Ok(crate::report::svg::xml_chars(out))
    }
}
