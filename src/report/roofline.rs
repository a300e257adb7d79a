//! Roofline exporter: the jobs that declare flops as points on log-log axes of flops per byte and GFLOP/s, under the FP32 peak and the copy-bound slope measured in the same run (pure: data -> SVG text).

use plotters::prelude::*;

use super::exporter::Exporter;
use super::markdown::is_compute;
use crate::records::{JobStatus, RunData};

pub struct Roofline;

/// (label, intensity, GFLOP/s) of every correct compute job, and each group's (peak, copy GB/s).
type Points = (Vec<(String, f64, f64)>, Vec<(String, f64, f64)>);

fn points(run: &RunData) -> Points {
    // Each group's peak once: `fp32_peak` scans every job of the run.
    let peaks: std::collections::HashMap<String, Option<f64>> = run
        .groups()
        .into_iter()
        .map(|g| {
            let p = run.fp32_peak(&g).map(|p| p.0);
            (g, p)
        })
        .collect();
    let jobs = run
        .jobs
        .iter()
        .filter(|j| is_compute(j) && j.status == JobStatus::Ok)
        .filter_map(|j| {
            Some((
                format!("{} @ {}", j.label, j.key.group),
                run.roofline_under(j, peaks.get(&j.key.group).copied().flatten())?
                    .intensity,
                j.gflops()?,
            ))
        })
        .collect();
    let roofs = run
        .groups()
        .into_iter()
        .filter_map(|g| {
            Some((
                g.clone(),
                run.fp32_peak(&g)?.0,
                run.bounds.get(&g)?.copy_gbs()?,
            ))
        })
        .collect();
    (jobs, roofs)
}

fn draw(
    run: &RunData,
    area: &DrawingArea<SVGBackend, plotters::coord::Shift>,
) -> Result<(), Box<dyn std::error::Error>> {
    area.fill(&WHITE)?;
    let (jobs, roofs) = points(run);
    let device = run
        .info
        .device
        .as_ref()
        .map(|d| d.name.clone())
        .unwrap_or_else(|| "unknown GPU".into());
    let xs = jobs.iter().map(|p| p.1).chain([0.1, 100.0]);
    let (x_lo, x_hi) = xs.fold((f64::MAX, f64::MIN), |(a, b), x| (a.min(x), b.max(x)));
    let y_hi = roofs
        .iter()
        .map(|r| r.1)
        .chain(jobs.iter().map(|p| p.2))
        .fold(1.0, f64::max)
        * 2.0;
    let y_lo = jobs
        .iter()
        .map(|p| p.2)
        .chain(roofs.iter().map(|r| r.2 * x_lo / 2.0))
        .fold(y_hi, f64::min)
        .max(1e-3)
        / 2.0;
    let mut chart = ChartBuilder::on(area)
        .caption(
            format!(
                "{} on {} ({}): roofline",
                run.info.suite, device, run.info.started
            ),
            ("sans-serif", 15),
        )
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(60)
        .build_cartesian_2d(
            (x_lo / 2.0..x_hi * 2.0).log_scale(),
            (y_lo..y_hi).log_scale(),
        )?;
    chart
        .configure_mesh()
        .x_desc("flop / byte (declared)")
        .y_desc("GFLOP/s")
        .draw()?;
    for (i, (group, peak, copy)) in roofs.iter().enumerate() {
        let color = Palette99::pick(i).to_rgba();
        let knee = peak / copy;
        let line = [
            (x_lo / 2.0, copy * x_lo / 2.0),
            (knee, *peak),
            (x_hi * 2.0, *peak),
        ];
        chart
            .draw_series(std::iter::once(PathElement::new(
                line.iter()
                    .map(|&(x, y)| (x, y.min(*peak)))
                    .collect::<Vec<_>>(),
                color.stroke_width(2),
            )))?
            .label(format!(
                "{group}: peak {peak:.0} GFLOP/s, copy {copy:.0} GB/s"
            ))
            .legend(move |(x, y)| PathElement::new([(x, y), (x + 16, y)], color));
    }
    for (label, x, y) in &jobs {
        chart.draw_series(std::iter::once(Circle::new((*x, *y), 4, BLUE.filled())))?;
        chart.draw_series(std::iter::once(Text::new(
            label.clone(),
            (*x, *y),
            ("sans-serif", 10).into_font(),
        )))?;
    }
    chart
        .configure_series_labels()
        .background_style(WHITE.mix(0.8))
        .border_style(BLACK)
        .position(SeriesLabelPosition::LowerRight)
        .draw()?;
    Ok(())
}

impl Exporter<RunData> for Roofline {
    fn file_name(&self) -> &'static str {
        "roofline.svg"
    }

    fn render(&self, run: &RunData) -> anyhow::Result<String> {
        let mut svg = String::new();
        {
            let area = SVGBackend::with_string(&mut svg, (900, 600)).into_drawing_area();
            draw(run, &area).map_err(|e| anyhow::anyhow!("drawing the roofline: {e}"))?;
            area.present()
                .map_err(|e| anyhow::anyhow!("drawing the roofline: {e}"))?;
        }
        Ok(svg)
    }
}
