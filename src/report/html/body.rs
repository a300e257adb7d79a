//! The page's body: the markdown report parsed (pulldown-cmark, with tables) and written as HTML, every chart it links drawn inline after the block that first links it, and nothing from a stored name able to become markup, a fetch or a script.

use base64::Engine;
use pulldown_cmark::{CowStr, Event, LinkType, Options, Parser, Tag, TagEnd, html};

/// A chart of the run: the file the markdown report links it by (`chart.svg`,
/// `timelines/….svg`) and its SVG text.
pub struct Chart {
    pub file: String,
    pub svg: String,
}

/// The page's title (the text of the report's first heading) and its body.
pub(super) struct Body {
    pub title: String,
    pub html: String,
}

/// Where a chart is: its element id in the page, and whether it has been drawn yet.
struct Placed<'c> {
    chart: &'c Chart,
    id: String,
    drawn: bool,
}

/// The state of the walk over the markdown's events.
struct Walk<'c> {
    charts: Vec<Placed<'c>>,
    /// Charts linked inside the current top-level block, drawn when it ends (a figure cannot go
    /// inside a table cell or a paragraph).
    due: Vec<usize>,
    /// Per open link or image: the destination of one that is not a chart, written as text after
    /// its own text (a page that fetches nothing links nowhere); None for a link to a chart.
    links: Vec<Option<String>>,
    depth: usize,
    title: Option<String>,
    in_first_heading: bool,
}

pub(super) fn body(markdown: &str, charts: &[Chart]) -> Body {
    let mut walk = Walk {
        charts: charts
            .iter()
            .enumerate()
            .map(|(i, chart)| Placed {
                chart,
                id: format!("chart-{}", i + 1),
                drawn: false,
            })
            .collect(),
        due: Vec::new(),
        links: Vec::new(),
        depth: 0,
        title: None,
        in_first_heading: false,
    };
    let mut events = Vec::new();
    for event in Parser::new_ext(markdown, Options::ENABLE_TABLES) {
        walk.event(event, &mut events);
    }
    let undrawn: Vec<usize> = (0..walk.charts.len())
        .filter(|&i| !walk.charts[i].drawn)
        .collect();
    if !undrawn.is_empty() {
        events.push(Event::Html("<h2>Other charts</h2>\n".into()));
        walk.due = undrawn;
        walk.draw_due(&mut events);
    }
    let mut html = String::new();
    html::push_html(&mut html, events.into_iter());
    Body {
        title: walk.title.unwrap_or_else(|| "gpu-lab report".into()),
        html,
    }
}

impl<'c> Walk<'c> {
    fn event<'a>(&mut self, event: Event<'a>, out: &mut Vec<Event<'a>>) {
        match event {
            Event::Start(tag) => {
                self.depth += 1;
                if let Some(tag) = self.start(tag) {
                    out.push(Event::Start(tag));
                }
            }
            Event::End(end) => {
                self.depth = self.depth.saturating_sub(1);
                self.end(end, out);
                if self.depth == 0 {
                    self.draw_due(out);
                }
            }
            // Markup in a stored name (`</script><img onerror=…>`) is shown as the text it is.
            Event::Text(text) | Event::Html(text) | Event::InlineHtml(text) => {
                self.text(&text, out)
            }
            Event::Code(code) => out.push(Event::Code(printable(&code).into())),
            other => out.push(other),
        }
    }

    /// The tag to write for `tag`, if any: a link to a chart points at its figure; any other link
    /// or image is left out (its text stays, its destination follows as text); tables lose their
    /// column alignment, which pulldown-cmark writes as a `style` attribute the page's
    /// Content-Security-Policy would refuse.
    fn start<'a>(&mut self, tag: Tag<'a>) -> Option<Tag<'a>> {
        match tag {
            Tag::Link { dest_url, .. } | Tag::Image { dest_url, .. } => {
                match self.charts.iter().position(|p| p.chart.file == *dest_url) {
                    Some(i) => {
                        if !self.charts[i].drawn && !self.due.contains(&i) {
                            self.due.push(i);
                        }
                        self.links.push(None);
                        Some(Tag::Link {
                            link_type: LinkType::Inline,
                            dest_url: format!("#{}", self.charts[i].id).into(),
                            title: CowStr::Borrowed(""),
                            id: CowStr::Borrowed(""),
                        })
                    }
                    None => {
                        self.links.push(Some(dest_url.to_string()));
                        None
                    }
                }
            }
            Tag::Table(alignments) => Some(Tag::Table(
                alignments
                    .iter()
                    .map(|_| pulldown_cmark::Alignment::None)
                    .collect(),
            )),
            Tag::Heading { level, .. } => {
                if self.title.is_none() {
                    self.in_first_heading = true;
                    self.title = Some(String::new());
                }
                Some(Tag::Heading {
                    level,
                    id: None,
                    classes: Vec::new(),
                    attrs: Vec::new(),
                })
            }
            // A block of markup in a stored name: a paragraph of its text.
            Tag::HtmlBlock => Some(Tag::Paragraph),
            other => Some(other),
        }
    }

    fn end<'a>(&mut self, end: TagEnd, out: &mut Vec<Event<'a>>) {
        match end {
            TagEnd::Link | TagEnd::Image => match self.links.pop().flatten() {
                Some(dest) if !dest.is_empty() => {
                    out.push(Event::Text(printable(&format!(" ({dest})")).into()))
                }
                Some(_) => {}
                None => out.push(Event::End(TagEnd::Link)),
            },
            TagEnd::Heading(level) => {
                self.in_first_heading = false;
                out.push(Event::End(TagEnd::Heading(level)));
            }
            TagEnd::HtmlBlock => out.push(Event::End(TagEnd::Paragraph)),
            other => out.push(Event::End(other)),
        }
    }

    fn text<'a>(&mut self, text: &str, out: &mut Vec<Event<'a>>) {
        let text = printable(text);
        if self.in_first_heading
            && let Some(title) = self.title.as_mut()
        {
            title.push_str(&text);
        }
        out.push(Event::Text(text.into()));
    }

    /// The figures of the charts linked in the block that just ended, each drawn once.
    fn draw_due<'a>(&mut self, out: &mut Vec<Event<'a>>) {
        for i in std::mem::take(&mut self.due) {
            let placed = &mut self.charts[i];
            if placed.drawn {
                continue;
            }
            placed.drawn = true;
            out.push(Event::Html(figure(&placed.id, placed.chart).into()));
        }
    }
}

/// A chart as a figure: the SVG as a `data:` image, not inline markup, so that the charts' element
/// ids (plotters and the timelines reuse theirs) cannot collide and nothing in a chart can reach
/// the page's scripts or styles; its caption the file the markdown names.
fn figure(id: &str, chart: &Chart) -> String {
    let data = base64::engine::general_purpose::STANDARD.encode(chart.svg.as_bytes());
    let name = escape(&chart.file);
    format!(
        "<figure id=\"{id}\" class=\"chart\"><img src=\"data:image/svg+xml;base64,{data}\" alt=\"{name}\"><figcaption>{name}</figcaption></figure>\n"
    )
}

/// Text made safe for an attribute value or element content.
pub(super) fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in printable(text).chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// Text with the characters HTML calls parse errors (control characters other than tab, newline
/// and carriage return; the noncharacters U+FFFE and U+FFFF) made the replacement character.
fn printable(text: &str) -> String {
    text.chars()
        .map(|c| match c {
            '\t' | '\n' | '\r' => c,
            c if c.is_control() || matches!(c, '\u{fffe}' | '\u{ffff}') => '\u{fffd}',
            c => c,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chart(file: &str) -> Chart {
        Chart {
            file: file.into(),
            svg: format!("<svg><text>{file}</text></svg>"),
        }
    }

    #[test]
    fn a_linked_chart_is_drawn_once_after_the_block_that_first_links_it() {
        let md = "# gpu-lab report: s\n\nSee [chart.svg](chart.svg) and again [here](chart.svg).\n\n| a | t |\n|---|---|\n| x | [svg](timelines/x.svg) |\n| y | 2 |\n\nAfter.\n";
        let charts = [chart("chart.svg"), chart("timelines/x.svg")];
        let b = body(md, &charts);
        assert_eq!(b.title, "gpu-lab report: s");
        assert_eq!(b.html.matches("<figure").count(), 2, "{}", b.html);
        assert_eq!(b.html.matches("href=\"#chart-1\"").count(), 2);
        let first = b.html.find("id=\"chart-1\"").unwrap();
        assert!(
            b.html.find("and again").unwrap() < first && first < b.html.find("<table").unwrap()
        );
        let second = b.html.find("id=\"chart-2\"").unwrap();
        assert!(
            b.html.find("</table>").unwrap() < second && second < b.html.find("After.").unwrap()
        );
        let encoded = base64::engine::general_purpose::STANDARD.encode(charts[1].svg.as_bytes());
        assert!(
            b.html
                .contains(&format!("src=\"data:image/svg+xml;base64,{encoded}\""))
        );
        assert!(!b.html.contains("Other charts"));
    }

    #[test]
    fn a_chart_no_block_links_is_drawn_at_the_end() {
        let b = body("# r\n\ntext\n", &[chart("roofline.svg")]);
        let other = b.html.find("Other charts").unwrap();
        assert!(other < b.html.find("id=\"chart-1\"").unwrap(), "{}", b.html);
    }

    #[test]
    fn markup_links_and_images_from_names_stay_text() {
        let md = "# t\n\n<script>alert(1)</script>\n\nA </script><img src=x onerror=alert(1)> [a](javascript:alert(1)) ![i](http://h/i.png) `<b>` [![n](http://h/n.png)](chart.svg) [![m](chart.svg)](http://h)\n\n| a | b |\n|:--|--:|\n| <i>x</i> | \u{7}\u{fffe} |\n";
        let html = body(md, &[]).html;
        for tag in ["<script", "<img", "<i>", "<b>", "href", "style="] {
            assert!(!html.contains(tag), "{tag} in {html}");
        }
        assert!(
            html.contains("&lt;script&gt;alert(1)&lt;/script&gt;"),
            "{html}"
        );
        assert!(
            html.contains("&lt;img src=x onerror=alert(1)&gt;"),
            "{html}"
        );
        assert!(html.contains("a (javascript:alert(1))"), "{html}");
        assert!(html.contains("i (http://h/i.png)"), "{html}");
        assert!(html.contains("<code>&lt;b&gt;</code>"), "{html}");
        assert!(html.contains("<td>\u{fffd}\u{fffd}</td>"), "{html}");
        assert!(
            html.contains("<thead>") && html.contains("<tbody>"),
            "{html}"
        );
    }

    #[test]
    fn escape_covers_attribute_and_text_characters() {
        assert_eq!(
            escape("a<b>&\"c'\u{1}"),
            "a&lt;b&gt;&amp;&quot;c&#39;\u{fffd}"
        );
    }
}
