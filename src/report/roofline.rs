//! Roofline exporter: the jobs that declare flops as points on log-log axes of flops per byte and GFLOP/s, under the roof of each math they declare (the FP32 peak unless they declare another) and the copy-bound slope measured in the same run (pure: data -> SVG text).

use plotters::prelude::*;

use std::collections::HashMap;

use super::exporter::Exporter;
use super::markdown::is_compute;
use crate::records::{JobStatus, Math, RunData, giga_unit};

pub struct Roofline;

/// One roof: its legend label, compute roof (giga-ops per second) and copy bound (GB/s).
struct Line {
    label: String,
    roof: f64,
    copy: f64,
}

/// One job: its label, intensity, rate, and the index of its roof line (`None`: drawn in blue
/// without one, as jobs always were, or grey where its math's roof was not measured).
struct Point {
    label: String,
    x: f64,
    y: f64,
    line: Option<usize>,
}

/// Every correct compute job, and each group's FP32 peak with its copy bound: how runs that
/// declare no other math have always been drawn.
fn fp32_points(run: &RunData) -> (Vec<Point>, Vec<Line>) {
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
            Some(Point {
                label: format!("{} @ {}", j.label, j.key.group),
                x: run
                    .roofline_under(j, peaks.get(&j.key.group).copied().flatten())?
                    .intensity,
                y: j.gflops()?,
                line: None,
            })
        })
        .collect();
    let roofs = run
        .groups()
        .into_iter()
        .filter_map(|g| {
            let (peak, copy) = (run.fp32_peak(&g)?.0, run.bounds.get(&g)?.copy_gbs()?);
            Some(Line {
                label: format!("{g}: peak {peak:.0} GFLOP/s, copy {copy:.0} GB/s"),
                roof: peak,
                copy,
            })
        })
        .collect();
    (jobs, roofs)
}

/// One roof line per math present in each group, labelled with its math, and each correct
/// compute job coloured as its math's roof (grey where that roof was not measured).
fn math_points(run: &RunData) -> (Vec<Point>, Vec<Line>) {
    let mut lines = Vec::new();
    let mut line_of: HashMap<(String, Math), usize> = HashMap::new();
    for g in run.groups() {
        let Some(copy) = run.bounds.get(&g).and_then(|b| b.copy_gbs()) else {
            continue;
        };
        for math in run.maths_of(&g) {
            let Some(roof) = run.roof(&g, math) else {
                continue;
            };
            line_of.insert((g.clone(), math), lines.len());
            lines.push(Line {
                label: format!(
                    "{g} · {}: roof {:.0} {}, copy {copy:.0} GB/s",
                    math.title(),
                    roof.gops,
                    giga_unit(math)
                ),
                roof: roof.gops,
                copy,
            });
        }
    }
    let jobs = run
        .jobs
        .iter()
        .filter(|j| is_compute(j) && j.status == JobStatus::Ok)
        .filter_map(|j| {
            let x = j.work.flops.filter(|f| *f > 0.0)? / j.work.bytes.filter(|b| *b > 0.0)?;
            Some(Point {
                label: format!("{} @ {} ({})", j.label, j.key.group, j.math().name()),
                x,
                y: j.gflops()?,
                line: line_of.get(&(j.key.group.clone(), j.math())).copied(),
            })
        })
        .collect();
    (jobs, lines)
}

fn draw(
    run: &RunData,
    area: &DrawingArea<SVGBackend, plotters::coord::Shift>,
) -> Result<(), Box<dyn std::error::Error>> {
    area.fill(&WHITE)?;
    let by_math = run.judges_by_math();
    let (jobs, roofs) = if by_math {
        math_points(run)
    } else {
        fp32_points(run)
    };
    let device = run.info.gpu_name();
    let xs = jobs.iter().map(|p| p.x).chain([0.1, 100.0]);
    let (x_lo, x_hi) = xs.fold((f64::MAX, f64::MIN), |(a, b), x| (a.min(x), b.max(x)));
    let y_hi = roofs
        .iter()
        .map(|r| r.roof)
        .chain(jobs.iter().map(|p| p.y))
        .fold(1.0, f64::max)
        * 2.0;
    let y_lo = jobs
        .iter()
        .map(|p| p.y)
        .chain(roofs.iter().map(|r| r.copy * x_lo / 2.0))
        .fold(y_hi, f64::min)
        .max(1e-3)
        / 2.0;
    let integer = by_math && run.jobs.iter().any(|j| j.math().is_integer());
    let mut chart = ChartBuilder::on(area)
        .caption(
            run.info.timing.cache.marked(&format!(
                "{} on {} ({}): roofline",
                run.info.suite, device, run.info.started
            )),
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
        .y_desc(if integer {
            "GFLOP/s (GOP/s for integer maths)"
        } else {
            "GFLOP/s"
        })
        .draw()?;
    for (i, Line { label, roof, copy }) in roofs.iter().enumerate() {
        let color = Palette99::pick(i).to_rgba();
        let knee = roof / copy;
        let line = [
            (x_lo / 2.0, copy * x_lo / 2.0),
            (knee, *roof),
            (x_hi * 2.0, *roof),
        ];
        chart
            .draw_series(std::iter::once(PathElement::new(
                line.iter()
                    .map(|&(x, y)| (x, y.min(*roof)))
                    .collect::<Vec<_>>(),
                color.stroke_width(2),
            )))?
            .label(label.clone())
            .legend(move |(x, y)| PathElement::new([(x, y), (x + 16, y)], color));
    }
    for p in &jobs {
        let color = match p.line {
            Some(i) => Palette99::pick(i).to_rgba(),
            None if by_math => RGBAColor(128, 128, 128, 1.0),
            None => BLUE.to_rgba(),
        };
        chart.draw_series(std::iter::once(Circle::new((p.x, p.y), 4, color.filled())))?;
        chart.draw_series(std::iter::once(Text::new(
            p.label.clone(),
            (p.x, p.y),
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
        // Group and variant names from stored files reach the labels.
        Ok(super::svg::xml_chars(svg))
    }
}

#[cfg(test)]
mod tests {
    use quick_xml::Reader;
    use quick_xml::events::Event;

    use super::*;
    use crate::records::fixtures::{job, run};

    /// The text of every `<text>` element, after checking that `svg` is well-formed XML: tags
    /// balanced, attributes and references valid.
    fn svg_texts(svg: &str) -> Vec<String> {
        let mut reader = Reader::from_str(svg);
        let (mut depth, mut texts, mut in_text) = (0usize, Vec::new(), false);
        loop {
            match reader.read_event().expect("well-formed XML") {
                Event::Start(e) => {
                    depth += 1;
                    in_text = e.name().as_ref() == b"text";
                    for a in e.attributes() {
                        a.expect("a valid attribute").unescape_value().unwrap();
                    }
                }
                Event::Empty(e) => {
                    for a in e.attributes() {
                        a.expect("a valid attribute").unescape_value().unwrap();
                    }
                }
                Event::End(_) => depth -= 1,
                Event::Text(t) if in_text => texts.push(t.decode().unwrap().into_owned()),
                Event::GeneralRef(r) => {
                    let known = r.is_char_ref()
                        || [&b"amp"[..], b"lt", b"gt", b"quot", b"apos"].contains(&&*r);
                    assert!(known, "unknown entity {r:?}");
                }
                Event::Eof => break,
                _ => {}
            }
        }
        assert_eq!(depth, 0, "every element closed");
        texts
    }

    #[test]
    fn a_roofline_with_two_maths_draws_a_labelled_roof_for_each_and_is_well_formed_xml() {
        let mut run = run(vec![
            job("simt <&> \"quoted\"", None, 0.05),
            job("bf16", Some(Math::Bf16Tensor), 0.5),
            job("fp8", Some(Math::E4m3Tensor), 1.0),
        ]);
        run.info.device = Some(crate::records::DeviceInfo {
            name: "MOCK GPU".into(),
            ..Default::default()
        });
        let svg = Roofline.render(&run).unwrap();
        let texts = svg_texts(&svg).join("\n");
        assert!(
            texts.contains("g · FP32 SIMT: roof 66908 GFLOP/s, copy 2000 GB/s")
                && texts.contains("g · BF16 tensor (f32 accumulate): roof 750000 GFLOP/s"),
            "{texts}"
        );
        // FP8's roof failed: its job is drawn (grey) without a roof line of its own.
        assert!(!texts.contains("E4M3 tensor"), "{texts}");
        assert!(texts.contains("fp8 @ g (e4m3-tensor)"), "{texts}");
        assert_eq!(svg.matches("<circle").count(), 3);
        assert!(svg.contains("&lt;&amp;&gt;"), "the label is escaped");
        // Each math's job is coloured as its roof line (two lines: two colours, plus grey).
        let fills: std::collections::BTreeSet<&str> = svg
            .split("<circle")
            .skip(1)
            .filter_map(|c| c.split("fill=\"").nth(1)?.split('"').next())
            .collect();
        assert_eq!(fills.len(), 3, "{fills:?}");
    }

    #[test]
    fn a_run_without_declared_maths_draws_the_fp32_peak_as_always() {
        let run = run(vec![job("simt", None, 0.05)]);
        let svg = Roofline.render(&run).unwrap();
        let texts = svg_texts(&svg).join("\n");
        assert!(
            texts.contains("g: peak 66908 GFLOP/s, copy 2000 GB/s"),
            "{texts}"
        );
        assert!(svg.contains("fill=\"#0000FF\""), "{svg}");
    }
}
