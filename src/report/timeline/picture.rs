//! The timeline picture of a host-program job (pure: a recorded `Timeline` -> SVG text): one lane per stream, one bar per step coloured by its kind, the overlap in the title.

use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use crate::records::{StepKind, Timeline};

const WIDTH: u32 = 1100;
/// Font sizes as plotters takes them (its SVG backend writes about 0.8 of each as pixels).
const TITLE_PT: u32 = 18;
const TEXT_PT: u32 = 15;
const BAR_PT: u32 = 13;
/// Above the plot: two title lines and the legend.
const HEADER_H: u32 = 78;
const LANE_H: u32 = 30;
/// Below the plot: the x axis, its ticks and its description.
const AXIS_H: u32 = 48;
/// The share of a lane's height each bar leaves free above and below it.
const BAR_INSET: f64 = 0.15;
/// A bar's width, at the least, in pixels: a step too short to see at this scale still shows.
const MIN_BAR_PX: i32 = 2;
/// About the width of a character of the bar labels (10.5 px sans-serif), to leave out labels that would not fit.
const BAR_CHAR_PX: f64 = 6.2;
/// About the width of a character of the other text (12 px sans-serif).
const TEXT_CHAR_PX: f64 = 7.2;

/// What a timeline's title says when the mock executor made it.
pub const MOCK_MARK: &str = "MOCK: stand-in times, nothing ran";

/// Every kind in a fixed order, each with its own colour (Tableau's, which stay apart on white).
fn color_of(kind: StepKind) -> RGBColor {
    match kind {
        StepKind::H2d => RGBColor(31, 119, 180),
        StepKind::D2h => RGBColor(255, 127, 14),
        StepKind::D2d => RGBColor(148, 103, 189),
        StepKind::Kernel => RGBColor(44, 160, 44),
        StepKind::Memset => RGBColor(127, 127, 127),
        StepKind::Prefetch => RGBColor(23, 190, 207),
    }
}

/// What the legend calls each kind.
fn legend_name(kind: StepKind) -> &'static str {
    match kind {
        StepKind::H2d => "host to device",
        StepKind::D2h => "device to host",
        StepKind::D2d => "device to device",
        StepKind::Kernel => "kernel",
        StepKind::Memset => "memset",
        StepKind::Prefetch => "prefetch (managed)",
    }
}

fn pct_text(p: Option<f64>, none: &str) -> String {
    p.map_or(none.to_string(), |p| format!("{p:.0}%"))
}

/// The second title line: the sample's total and how much of the kernels' time the transfers hid.
fn summary_line(t: &Timeline) -> String {
    let o = t.overlap();
    format!(
        "sample total {:.4} ms; kernel time hidden behind transfers: {}; transfer time hidden behind kernels: {}",
        t.total_ms,
        pct_text(o.kernel_hidden_pct(), "no kernels"),
        pct_text(o.transfer_hidden_pct(), "no transfers"),
    )
}

/// The first title line: the caller's title, after the MOCK mark when nothing ran.
fn title_line(title: &str, t: &Timeline) -> String {
    if t.mock {
        format!("{MOCK_MARK} | {title}")
    } else {
        title.to_string()
    }
}

/// How many decimals the axis needs for ticks a tenth of `span` apart to differ.
fn decimals(span: f64) -> usize {
    (1.0 - (span / 10.0).log10().floor()).clamp(0.0, 6.0) as usize
}

type Root<'a> = DrawingArea<SVGBackend<'a>, plotters::coord::Shift>;
type Drawn = Result<(), Box<dyn std::error::Error>>;
/// Chart coordinates (ms, lanes from the bottom) to the picture's pixels.
type ToPixels<'a> = &'a dyn Fn(f64, f64) -> (i32, i32);

/// Lane `i` (the i-th stream issued) is drawn from the top down: the chart's y of its top edge.
fn lane_top(lanes: usize, i: usize) -> f64 {
    (lanes - i) as f64
}

/// Steps with times that are not numbers (only ever from an edited file) are left out, not drawn at NaN.
fn finite(a: f64, b: f64) -> bool {
    a.is_finite() && b.is_finite()
}

fn draw(title: &str, t: &Timeline, root: &Root) -> Drawn {
    root.fill(&WHITE)?;
    draw_header(title, t, root)?;
    let streams = t.streams();
    let lanes = streams.len().max(1);
    let lane_names: Vec<&str> = if streams.is_empty() {
        vec!["(no steps)"]
    } else {
        streams.clone()
    };
    // Wide enough for the longest stream name, and no wider than a quarter of the picture.
    let label_w = (lane_names
        .iter()
        .map(|n| n.chars().count())
        .max()
        .unwrap_or(0) as f64
        * TEXT_CHAR_PX
        + 20.0)
        .clamp(60.0, WIDTH as f64 / 4.0) as u32;
    let end = t
        .steps
        .iter()
        .filter(|s| finite(s.start_ms, s.end_ms))
        .map(|s| s.end_ms.max(s.start_ms))
        .chain([t.total_ms].into_iter().filter(|x| x.is_finite()))
        .fold(0.0, f64::max);
    let x_max = if end > 0.0 { end * 1.02 } else { 1.0 };
    let (_, plot_area) = root.split_vertically(HEADER_H);
    let places = decimals(x_max);
    let mut chart = ChartBuilder::on(&plot_area)
        .margin_right(20)
        .y_label_area_size(label_w)
        .x_label_area_size(AXIS_H)
        .build_cartesian_2d(0f64..x_max, 0f64..lanes as f64)?;
    chart
        .configure_mesh()
        .disable_y_mesh()
        .y_labels(0)
        .x_labels(12)
        .x_label_formatter(&|v| format!("{v:.places$}"))
        .x_desc("ms from the sample's start")
        .label_style(("sans-serif", TEXT_PT))
        .axis_desc_style(("sans-serif", TEXT_PT))
        .draw()?;
    let px = |x: f64, y: f64| chart.backend_coord(&(x, y));
    draw_lanes(root, &px, &lane_names, label_w, x_max)?;
    if t.steps.is_empty() {
        let (x, y) = px(0.0, lane_top(lanes, 0) - 0.5);
        root.draw(&Text::new(
            "no step was timed",
            (x + 10, y),
            TextStyle::from(("sans-serif", TEXT_PT).into_font())
                .pos(Pos::new(HPos::Left, VPos::Center)),
        ))?;
    }
    draw_bars(root, &px, t, &streams, lanes)?;
    // Where the sample ended, dashed.
    if t.total_ms.is_finite() && t.total_ms > 0.0 {
        let (x, top) = px(t.total_ms, lanes as f64);
        let (_, bottom) = px(t.total_ms, 0.0);
        for y in (top..bottom).step_by(6) {
            root.draw(&PathElement::new(
                vec![(x, y), (x, (y + 3).min(bottom))],
                BLACK.stroke_width(1),
            ))?;
        }
    }
    Ok(())
}

/// The two title lines and the legend: the kinds present, in a fixed order.
fn draw_header(title: &str, t: &Timeline, root: &Root) -> Drawn {
    let title_color = if t.mock { RGBColor(200, 0, 0) } else { BLACK };
    root.draw(&Text::new(
        title_line(title, t),
        (10, 8),
        ("sans-serif", TITLE_PT)
            .into_font()
            .style(FontStyle::Bold)
            .color(&title_color),
    ))?;
    root.draw(&Text::new(
        summary_line(t),
        (10, 31),
        ("sans-serif", TEXT_PT).into_font(),
    ))?;
    let mut kinds: Vec<StepKind> = t.steps.iter().map(|s| s.kind).collect();
    kinds.sort();
    kinds.dedup();
    let mut x = 10;
    for kind in &kinds {
        root.draw(&Rectangle::new(
            [(x, 54), (x + 14, 66)],
            color_of(*kind).filled(),
        ))?;
        let name = legend_name(*kind);
        root.draw(&Text::new(
            name,
            (x + 19, 53),
            ("sans-serif", TEXT_PT).into_font(),
        ))?;
        x += 19 + (name.len() as f64 * TEXT_CHAR_PX) as i32 + 18;
    }
    Ok(())
}

/// Each lane's stream name left of the plot, and a grey line between lanes.
fn draw_lanes(root: &Root, px: ToPixels, lane_names: &[&str], label_w: u32, x_max: f64) -> Drawn {
    let lanes = lane_names.len();
    let text = ("sans-serif", TEXT_PT).into_font();
    for (i, name) in lane_names.iter().enumerate() {
        let (_, y) = px(0.0, lane_top(lanes, i) - 0.5);
        root.draw(&Text::new(
            name.to_string(),
            (label_w as i32 - 8, y),
            TextStyle::from(text.clone()).pos(Pos::new(HPos::Right, VPos::Center)),
        ))?;
        if i > 0 {
            let (x0, y0) = px(0.0, lane_top(lanes, i));
            let (x1, _) = px(x_max, lane_top(lanes, i));
            root.draw(&PathElement::new(
                vec![(x0, y0), (x1, y0)],
                RGBColor(200, 200, 200).stroke_width(1),
            ))?;
        }
    }
    Ok(())
}

/// A bar per step in its stream's lane, with the longest of its names that fits.
fn draw_bars(root: &Root, px: ToPixels, t: &Timeline, streams: &[&str], lanes: usize) -> Drawn {
    let label_style = TextStyle::from(("sans-serif", BAR_PT).into_font())
        .pos(Pos::new(HPos::Center, VPos::Center));
    for step in t.steps.iter().filter(|s| finite(s.start_ms, s.end_ms)) {
        let lane = streams.iter().position(|s| *s == step.stream).unwrap_or(0);
        let top = lane_top(lanes, lane);
        let (x0, y0) = px(step.start_ms.max(0.0), top - BAR_INSET);
        let (x1, y1) = px(
            step.end_ms.max(step.start_ms).max(0.0),
            top - 1.0 + BAR_INSET,
        );
        // One pixel off the right end keeps back-to-back steps of one kind apart.
        let x1 = (x1 - 1).max(x0 + MIN_BAR_PX);
        root.draw(&Rectangle::new(
            [(x0, y0), (x1, y1)],
            color_of(step.kind).mix(0.85).filled(),
        ))?;
        if let Some(label) = bar_label(&step.label, (x1 - x0) as f64) {
            root.draw(&Text::new(
                label.to_string(),
                ((x0 + x1) / 2, (y0 + y1) / 2),
                label_style.clone(),
            ))?;
        }
    }
    Ok(())
}

/// The longest of a step's names that fits a bar `width_px` wide: its label (`kernel add #1`),
/// the label without its chunk (`kernel add`), or the label's last word (`add`); None when none fits.
fn bar_label(label: &str, width_px: f64) -> Option<&str> {
    let without_chunk = crate::records::without_chunk(label);
    let last_word = without_chunk.rsplit(' ').next().unwrap_or(without_chunk);
    [label, without_chunk, last_word]
        .into_iter()
        .find(|l| !l.is_empty() && l.chars().count() as f64 * BAR_CHAR_PX + 6.0 < width_px)
}

/// A picture that says what went wrong, for the one case plotters fails on a string backend.
fn failed_svg(title: &str, error: &str) -> String {
    let escape = |s: &str| {
        s.replace('&', "&amp;")
            .replace('<', "&lt;")
            .replace('>', "&gt;")
    };
    format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{WIDTH}\" height=\"60\"><text x=\"10\" y=\"20\">{}</text><text x=\"10\" y=\"44\">the timeline could not be drawn: {}</text></svg>\n",
        escape(title),
        escape(error)
    )
}

/// The timeline of one sample of a host program as SVG: a lane per stream (in the order their
/// first step was issued), a bar per step from its start to its end coloured by kind, a legend of
/// the kinds present, the sample's total and its overlap in the title; MOCK in the title when the
/// mock executor made it.
pub fn timeline_svg(title: &str, t: &Timeline) -> String {
    let height = HEADER_H + LANE_H * t.streams().len().max(1) as u32 + AXIS_H + 12;
    let mut out = String::new();
    let drawn = {
        let root = SVGBackend::with_string(&mut out, (WIDTH, height)).into_drawing_area();
        draw(title, t, &root)
            .map_err(|e| e.to_string())
            .and_then(|()| root.present().map_err(|e| e.to_string()))
    };
    crate::report::svg::xml_chars(match drawn {
        Ok(()) => out,
        Err(e) => failed_svg(&title_line(title, t), &e),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::records::StepTime;

    fn step(label: &str, kind: StepKind, stream: &str, start_ms: f64, end_ms: f64) -> StepTime {
        StepTime {
            label: label.into(),
            kind,
            stream: stream.into(),
            start_ms,
            end_ms,
            bytes: if kind == StepKind::Kernel { 0 } else { 1 << 20 },
            median_ms: end_ms - start_ms,
        }
    }

    /// Two chunks over two streams: each copies in, adds, copies out.
    fn chunked() -> Timeline {
        let mut steps = Vec::new();
        for (c, stream) in ["s[0]", "s[1]"].iter().enumerate() {
            let t0 = c as f64 * 0.5;
            steps.push(step(
                &format!("h2d a #{c}"),
                StepKind::H2d,
                stream,
                t0,
                t0 + 1.0,
            ));
            steps.push(step(
                &format!("kernel add #{c}"),
                StepKind::Kernel,
                stream,
                t0 + 1.0,
                t0 + 1.4,
            ));
            steps.push(step(
                &format!("d2h c #{c}"),
                StepKind::D2h,
                stream,
                t0 + 1.4,
                t0 + 2.4,
            ));
        }
        Timeline {
            total_ms: 2.9,
            steps,
            mock: false,
        }
    }

    fn rects(svg: &str) -> usize {
        svg.matches("<rect").count()
    }

    /// The text of every `<text>` element, trimmed (the backend puts it on lines of its own).
    fn texts(svg: &str) -> Vec<String> {
        svg.split("<text")
            .skip(1)
            .filter_map(|t| {
                Some(
                    t.split_once('>')?
                        .1
                        .split_once("</text>")?
                        .0
                        .trim()
                        .to_string(),
                )
            })
            .collect()
    }

    #[test]
    fn one_lane_per_stream_and_one_bar_per_step() {
        let t = chunked();
        let svg = timeline_svg("add @ N=1", &t);
        assert!(
            svg.starts_with("<svg") && svg.trim_end().ends_with("</svg>"),
            "{svg}"
        );
        // The background, a legend swatch per kind (h2d, d2h, kernel), a bar per step.
        assert_eq!(rects(&svg), 1 + 3 + t.steps.len(), "{svg}");
        let texts = texts(&svg);
        for lane in ["s[0]", "s[1]"] {
            assert_eq!(
                texts.iter().filter(|t| *t == lane).count(),
                1,
                "one lane label for {lane}: {texts:?}"
            );
        }
        for label in [
            "host to device",
            "device to host",
            "kernel",
            "h2d a #0",
            "kernel add #1",
            "d2h c #1",
        ] {
            assert!(texts.iter().any(|t| t == label), "{label}: {texts:?}");
        }
        assert!(
            texts.iter().any(|t| t.starts_with("ms from the sample")),
            "{texts:?}"
        );
        assert!(!svg.contains("MOCK"));
        // Each kind's colour is its own: three kinds, three fills among the bars.
        for kind in [StepKind::H2d, StepKind::D2h, StepKind::Kernel] {
            let RGBColor(r, g, b) = color_of(kind);
            assert!(
                svg.contains(&format!("#{r:02X}{g:02X}{b:02X}")),
                "{kind:?}: {svg}"
            );
        }
    }

    #[test]
    fn the_title_says_the_job_the_total_and_the_overlap() {
        let svg = timeline_svg("streams: chunked @ N=1", &chunked());
        assert!(svg.contains("streams: chunked @ N=1"), "{svg}");
        assert!(svg.contains("sample total 2.9000 ms"), "{svg}");
        // Kernels run 1.0-1.4 and 1.5-1.9; transfers cover 0-2.9 but for nothing: every kernel ms is hidden.
        assert!(
            svg.contains("kernel time hidden behind transfers: 100%"),
            "{svg}"
        );
    }

    #[test]
    fn a_mock_timeline_says_mock_in_its_title() {
        let t = Timeline {
            mock: true,
            ..chunked()
        };
        let svg = timeline_svg("add", &t);
        assert!(svg.contains(&format!("{MOCK_MARK} | add")), "{svg}");
    }

    #[test]
    fn labels_that_do_not_fit_their_bar_are_left_out_and_the_bar_stays() {
        // A 0.001 ms kernel among 10 ms copies is a sliver: its bar is drawn, its label is not.
        let t = Timeline {
            total_ms: 20.0,
            steps: vec![
                step("h2d a", StepKind::H2d, "NULL", 0.0, 10.0),
                step("kernel tiny", StepKind::Kernel, "NULL", 10.0, 10.001),
                step("d2h c", StepKind::D2h, "NULL", 10.001, 20.0),
            ],
            mock: false,
        };
        let svg = timeline_svg("t", &t);
        assert_eq!(rects(&svg), 1 + 3 + 3);
        let texts = texts(&svg);
        assert!(
            texts.iter().any(|t| t == "h2d a") && !texts.iter().any(|t| t == "kernel tiny"),
            "{texts:?}"
        );
    }

    #[test]
    fn a_narrow_bar_gets_the_longest_name_that_fits() {
        assert_eq!(bar_label("kernel add #12", 200.0), Some("kernel add #12"));
        assert_eq!(bar_label("kernel add #12", 75.0), Some("kernel add"));
        assert_eq!(bar_label("kernel add #12", 30.0), Some("add"));
        assert_eq!(bar_label("kernel add #12", 10.0), None);
        // A label of the manifest's own that merely contains ` #` keeps it.
        assert_eq!(bar_label("sum #a", 30.0), Some("#a"));
    }

    #[test]
    fn empty_and_degenerate_timelines_draw_without_panicking() {
        let empty = Timeline {
            total_ms: 0.0,
            steps: Vec::new(),
            mock: false,
        };
        let svg = timeline_svg("nothing", &empty);
        assert!(
            svg.contains("no step was timed")
                && svg.contains("sample total 0.0000 ms")
                && svg.contains("no kernels"),
            "{svg}"
        );
        assert_eq!(rects(&svg), 1);
        // Zero-length steps, all at 0, and a step whose end is before its start: still one bar each.
        let zero = Timeline {
            total_ms: 0.0,
            steps: vec![
                step("kernel k", StepKind::Kernel, "NULL", 0.0, 0.0),
                step("memset m", StepKind::Memset, "s", 0.0, 0.0),
                step("backwards", StepKind::D2d, "s", 2.0, 1.0),
            ],
            mock: true,
        };
        let svg = timeline_svg("zero", &zero);
        assert_eq!(rects(&svg), 1 + 3 + 3, "{svg}");
        assert!(svg.contains("MOCK"));
        // Times that are not numbers (an edited file) are left out.
        let nan = Timeline {
            total_ms: f64::NAN,
            steps: vec![
                step("h2d a", StepKind::H2d, "NULL", f64::NAN, 1.0),
                step("h2d b", StepKind::H2d, "NULL", 0.0, 1.0),
            ],
            mock: false,
        };
        let svg = timeline_svg("nan", &nan);
        assert_eq!(rects(&svg), 1 + 1 + 1, "{svg}");
    }
}
