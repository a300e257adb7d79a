//! Markdown verdict report: the two environments, what differs between them, and one table with regressions first (pure).

use std::fmt::Write;

use super::comparison::{Comparison, JobComparison};
use super::verdict::{Verdict, status_word};
use crate::records::Fingerprint;
use crate::report::Exporter;
use crate::report::markdown::table;

pub struct Markdown;

/// Four significant digits: 0.2178, 1.017, 0.005012.
pub fn ms(v: f64) -> String {
    let decimals = if v > 0.0 {
        (3 - v.log10().floor() as i32).clamp(0, 7) as usize
    } else {
        4
    };
    format!("{v:.decimals$}")
}

fn signed_pct(v: f64) -> String {
    format!("{:+.1}%", v * 100.0)
}

fn environment(c: &Comparison, verdicts: bool) -> String {
    let (a, b): (&Fingerprint, &Fingerprint) = (&c.base, &c.new);
    let or_dash = |v: &Option<String>| v.clone().unwrap_or_else(|| "–".into());
    let row = |k: &str, x: String, y: String| vec![k.to_string(), x, y];
    table(vec![
        row(
            "",
            if verdicts {
                "baseline".into()
            } else {
                "A".into()
            },
            if verdicts {
                "this run".into()
            } else {
                "B".into()
            },
        ),
        row("run", a.run.clone(), b.run.clone()),
        row(
            "GPU",
            format!("{} ({})", or_dash(&a.gpu), or_dash(&a.uuid)),
            format!("{} ({})", or_dash(&b.gpu), or_dash(&b.uuid)),
        ),
        row(
            "driver / CUDA",
            format!("{} / {}", or_dash(&a.driver), or_dash(&a.cuda)),
            format!("{} / {}", or_dash(&b.driver), or_dash(&b.cuda)),
        ),
        row("ncu", or_dash(&a.ncu), or_dash(&b.ncu)),
        row("clocks seen", a.clocks_seen.clone(), b.clocks_seen.clone()),
        row(
            "clock policy",
            a.clock_policy.clone(),
            b.clock_policy.clone(),
        ),
        row(
            "suite source sha256",
            a.suite_source_hash.chars().take(16).collect(),
            b.suite_source_hash.chars().take(16).collect(),
        ),
        row("date", a.started.clone(), b.started.clone()),
    ])
}

fn status(s: Option<crate::records::JobStatus>) -> &'static str {
    s.map(status_word).unwrap_or("–")
}

/// Clock changes, counters that moved and the job's notes: what explains the verdict.
fn what_moved(j: &JobComparison) -> String {
    let mut parts: Vec<String> = j.notes.clone();
    if let Some(t) = &j.timing {
        if t.verdict != Verdict::Same {
            parts.push(format!(
                "{}time",
                if t.verdict == Verdict::Regressed {
                    "**worse**: "
                } else {
                    "better: "
                }
            ));
        }
        for c in &t.clocks {
            parts.push(format!(
                "{} clock {} → {} MHz{}",
                c.clock.name(),
                c.base_mhz,
                c.new_mhz,
                if c.normalised { " (normalised)" } else { "" }
            ));
        }
    }
    for c in j.counters.iter().filter(|c| c.moved) {
        let v = |x: Option<f64>| {
            x.map(|x| format!("{}", (x * 100.0).round() / 100.0))
                .unwrap_or_else(|| "n/a".into())
        };
        let how = match (c.change, c.redefined) {
            (_, true) => format!(
                " ({}definition changed between the runs: not judged)",
                c.change
                    .map(|ch| format!("{}; ", signed_pct(ch)))
                    .unwrap_or_default()
            ),
            (Some(ch), false) => format!(
                " ({}, tolerance {:.0}%)",
                signed_pct(ch),
                c.tolerance * 100.0
            ),
            (None, false) => String::new(),
        };
        let judged = match c.verdict {
            Some(Verdict::Regressed) => "**worse**: ",
            Some(Verdict::Improved) => "better: ",
            _ => "",
        };
        parts.push(format!(
            "{judged}{} {} → {}{how}",
            c.metric,
            v(c.base),
            v(c.new)
        ));
    }
    parts.join("; ")
}

fn job_row(j: &JobComparison, verdicts: bool) -> Vec<String> {
    let name = if j.group.is_empty() || j.group == "-" {
        format!("`{}`", j.label)
    } else {
        format!("`{}` @ {}", j.label, j.group)
    };
    let (times, change, threshold, copy) = match &j.timing {
        Some(t) => (
            format!("{} → {}", ms(t.base_ms), ms(t.new_ms)),
            format!(
                "{} [{}, {}]",
                signed_pct(t.change.estimate),
                signed_pct(t.change.low),
                signed_pct(t.change.high)
            ),
            format!("±{:.1}%", t.threshold * 100.0),
            match (t.base_pct_of_copy, t.new_pct_of_copy) {
                (Some(a), Some(b)) => format!("{a:.0}% → {b:.0}%"),
                _ => "–".into(),
            },
        ),
        None => (
            format!("{} → {}", status(j.base_status), status(j.new_status)),
            "–".into(),
            "–".into(),
            "–".into(),
        ),
    };
    let mut row = Vec::new();
    if verdicts {
        row.push(match j.verdict {
            Verdict::Regressed => "**Regressed**".to_string(),
            v => v.word().to_string(),
        });
    }
    row.extend([name, times, change]);
    if verdicts {
        row.push(threshold);
    }
    row.extend([copy, what_moved(j)]);
    row
}

impl Exporter<Comparison> for Markdown {
    fn file_name(&self) -> &'static str {
        "md"
    }

    fn render(&self, c: &Comparison) -> anyhow::Result<String> {
        let verdicts = c.verdicts;
        let mut out = String::new();
        let n = c.jobs.len();
        if verdicts {
            let _ = writeln!(out, "# gpu-lab check: {}\n", c.new.suite);
            let counts = format!(
                "{} improved, {} same, {} new, {} missing",
                c.count(Verdict::Improved),
                c.count(Verdict::Same),
                c.count(Verdict::New),
                c.count(Verdict::Missing)
            );
            let _ = if c.regressed() {
                writeln!(
                    out,
                    "**REGRESSED: {} of {n} jobs** ({counts}).\n",
                    c.count(Verdict::Regressed)
                )
            } else {
                writeln!(out, "**No regression** in {n} jobs ({counts}).\n")
            };
        } else {
            let _ = writeln!(
                out,
                "# gpu-lab compare: {} and {}\n",
                c.base.suite, c.new.suite
            );
        }
        out.push_str(&environment(c, verdicts));
        out.push_str("\n\n");
        if !c.notes.is_empty() {
            let _ = writeln!(
                out,
                "Differences:\n\n{}\n",
                c.notes
                    .iter()
                    .map(|n| format!("- {n}"))
                    .collect::<Vec<_>>()
                    .join("\n")
            );
        }
        let quantity = if c.settings.relative_to_copy {
            "time relative to each run's copy bound"
        } else {
            "median time"
        };
        if verdicts {
            let _ = writeln!(
                out,
                "Rules: a job **regressed** when it is no longer correct, when the 95% interval of the change of its {quantity} lies wholly above the noise threshold (±{:.1}%, or the suite's own `noise_threshold`, or {:.2} µs over the baseline's median, whichever is more), or when a counter moved by its definition's tolerance or more in its worse direction; **improved** in the mirror cases; otherwise the same. Timings are normalised by the clock they scale with where that clock differs.\n",
                c.settings.noise_threshold * 100.0,
                c.settings.noise_floor_ms * 1000.0,
            );
        } else {
            let _ = writeln!(
                out,
                "Change: of the {quantity} from A to B, with its 95% bootstrap interval; no verdicts.\n"
            );
        }
        let mut head: Vec<String> = Vec::new();
        if verdicts {
            head.push("verdict".into());
        }
        head.extend([
            "job".into(),
            if verdicts {
                "ms: baseline → this run".into()
            } else {
                "ms: A → B".into()
            },
            "change [95% CI]".into(),
        ]);
        if verdicts {
            head.push("threshold".into());
        }
        head.extend(["% of copy".into(), "what moved".into()]);
        let mut jobs: Vec<&JobComparison> = c.jobs.iter().collect();
        if verdicts {
            jobs.sort_by_key(|j| j.verdict);
        }
        let mut rows = vec![head];
        rows.extend(jobs.iter().map(|j| job_row(j, verdicts)));
        out.push_str(&table(rows));
        out.push('\n');
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn milliseconds_keep_four_significant_digits() {
        assert_eq!(super::ms(0.217812), "0.2178");
        assert_eq!(super::ms(1.01724), "1.017");
        assert_eq!(super::ms(0.0050123), "0.005012");
        assert_eq!(super::ms(12.5), "12.50");
    }
}
