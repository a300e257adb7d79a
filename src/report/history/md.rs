//! The trends as markdown: per group and job, one row per run with its date, commit, median, interval and change against the first run shown.

use super::super::Exporter;
use super::digits::sig4;
use crate::history::Trends;
use crate::records::CacheState;
use crate::report::markdown::table;

pub struct Markdown;

impl Exporter<Trends> for Markdown {
    fn file_name(&self) -> &'static str {
        "history.md"
    }

    fn render(&self, t: &Trends) -> anyhow::Result<String> {
        let mut out = String::new();
        let mock = if t.mock {
            " — MOCK (stand-in numbers, not measurements)"
        } else {
            ""
        };
        out.push_str(&format!("# History of `{}`{mock}\n\n", t.suite));
        out.push_str(&format!(
            "Environment fingerprint `{}`: {}. {} run{}; {} in {} (smaller is better: {}).\n\n",
            t.fingerprint,
            t.environment,
            t.runs.len(),
            if t.runs.len() == 1 { "" } else { "s" },
            t.measure.name(),
            t.measure.unit(),
            if t.measure.smaller_is_better() {
                "yes"
            } else {
                "no"
            }
        ));
        if t.trends.is_empty() {
            out.push_str("No job of these runs matches.\n");
            return Ok(out);
        }
        let unit = t.measure.unit();
        let mut group: Option<&str> = None;
        for trend in &t.trends {
            if group != Some(trend.group.as_str()) {
                out.push_str(&format!("## {}\n\n", table_free(&trend.group)));
                group = Some(&trend.group);
            }
            out.push_str(&format!("### {}\n\n", table_free(&trend.label)));
            let mut rows = vec![vec![
                "run started (UTC)".to_string(),
                "commit".into(),
                timed_cache(t).marked(&format!("median ({unit})")),
                "95% interval".into(),
                "samples".into(),
                "change vs first".into(),
            ]];
            for (i, p) in trend.points.iter().enumerate() {
                rows.push(vec![
                    p.started.clone(),
                    p.commit_label(),
                    sig4(p.median),
                    format!("{} – {}", sig4(p.ci_low), sig4(p.ci_high)),
                    p.n.to_string(),
                    match trend.change_pct(p) {
                        Some(c) if i > 0 => format!("{c:+.1}%"),
                        _ => "—".into(),
                    },
                ]);
            }
            out.push_str(&table(rows));
            out.push_str("\n\n");
        }
        Ok(out)
    }
}

/// The L2 state the trends' runs were timed in, so a warm history's medians say so.
fn timed_cache(t: &Trends) -> CacheState {
    if t.warm {
        CacheState::Warm
    } else {
        CacheState::Cold
    }
}

/// A heading's text on one line (names come from stored files).
fn table_free(text: &str) -> String {
    text.chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect()
}
