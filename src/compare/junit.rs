//! JUnit XML verdict report for CI systems (GitHub, GitLab, Jenkins): one test case per job, a regression a failure, a missing job skipped (pure).

use std::fmt::Write;

use super::comparison::{Comparison, JobComparison};
use super::verdict::Verdict;
use crate::report::Exporter;

pub struct Junit;

/// Text made safe for an XML attribute or element.
fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            // XML 1.0 cannot hold other control characters at all.
            c if (c as u32) < 0x20 && !matches!(c, '\n' | '\r' | '\t') => out.push('?'),
            // Nor the noncharacters U+FFFE and U+FFFF.
            '\u{fffe}' | '\u{ffff}' => out.push('?'),
            c => out.push(c),
        }
    }
    out
}

/// What moved, in one line: the timing change with its interval and threshold, and the counters.
fn summary(j: &JobComparison) -> String {
    let mut parts = Vec::new();
    if let Some(t) = &j.timing {
        parts.push(format!(
            "time {:.4} -> {:.4} ms, {:+.1}% [{:+.1}%, {:+.1}%], threshold ±{:.1}%",
            t.base_ms,
            t.new_ms,
            t.change.estimate * 100.0,
            t.change.low * 100.0,
            t.change.high * 100.0,
            t.threshold * 100.0
        ));
    }
    for c in j
        .counters
        .iter()
        .filter(|c| c.verdict.is_some_and(|v| v == j.verdict))
    {
        parts.push(format!("{} {:?} -> {:?}", c.metric, c.base, c.new));
    }
    parts.extend(j.notes.iter().cloned());
    parts.join("; ")
}

impl Exporter<Comparison> for Junit {
    fn file_name(&self) -> &'static str {
        "xml"
    }

    fn render(&self, c: &Comparison) -> anyhow::Result<String> {
        let (failures, skipped) = (c.count(Verdict::Regressed), c.count(Verdict::Missing));
        let suite = format!("{} against {}", c.new.suite, c.base.run);
        let mut out = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
        let _ = writeln!(
            out,
            "<testsuites name=\"gpu-lab check\" tests=\"{}\" failures=\"{failures}\" skipped=\"{skipped}\">",
            c.jobs.len()
        );
        let _ = writeln!(
            out,
            "  <testsuite name=\"{}\" tests=\"{}\" failures=\"{failures}\" skipped=\"{skipped}\" timestamp=\"{}\">",
            escape(&suite),
            c.jobs.len(),
            escape(&c.new.started)
        );
        for j in &c.jobs {
            // Seconds, as JUnit counts: the job's median in this run.
            let time = j.timing.as_ref().map_or(0.0, |t| t.new_ms / 1e3);
            let _ = write!(
                out,
                "    <testcase classname=\"{}\" name=\"{}\" time=\"{time:.6}\"",
                escape(&format!(
                    "{}.{}",
                    c.new.suite,
                    if j.group.is_empty() { "-" } else { &j.group }
                )),
                escape(&j.label)
            );
            let what = escape(&summary(j));
            match j.verdict {
                Verdict::Regressed => {
                    let _ = writeln!(
                        out,
                        ">\n      <failure message=\"Regressed: {what}\" type=\"regression\">{what}</failure>\n    </testcase>"
                    );
                }
                Verdict::Missing => {
                    let _ = writeln!(
                        out,
                        ">\n      <skipped message=\"Missing: the baseline has this job, this run does not\"/>\n    </testcase>"
                    );
                }
                v => {
                    let _ = writeln!(
                        out,
                        ">\n      <system-out>{}: {what}</system-out>\n    </testcase>",
                        v.word()
                    );
                }
            }
        }
        out.push_str("  </testsuite>\n</testsuites>\n");
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::escape;

    #[test]
    fn text_is_escaped_for_xml() {
        assert_eq!(escape("a<b>&\"c'\u{1}"), "a&lt;b&gt;&amp;&quot;c&apos;?");
    }
}
