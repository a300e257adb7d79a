//! The sanitizer section: each variant's verdict per compute-sanitizer tool, then each distinct finding with its kernel, place and count.

use std::fmt::Write;

use crate::records::{RunData, SanitizeRecord};

use super::cells::{cell_text, table};

/// A table of verdicts (variant x tool) and a list of findings; nothing when nothing was sanitized.
pub fn section(run: &RunData, out: &mut String) {
    if run.sanitize.is_empty() {
        return;
    }
    let _ = writeln!(
        out,
        "## Sanitizer (compute-sanitizer)\n\nEach variant launched once under each tool, at the job named; a finding fails the variant as a wrong result does. Seconds are the sanitized child's, which may have run several variants.\n"
    );
    let header = ["variant", "job", "tool", "verdict", "seconds"].map(String::from);
    let rows: Vec<Vec<String>> = std::iter::once(header.to_vec())
        .chain(run.sanitize.iter().map(|r| {
            vec![
                r.variant.clone(),
                r.job_id.clone(),
                r.tool.as_str().into(),
                r.verdict(),
                match (r.seconds, r.batch_of) {
                    (None, _) => "-".into(),
                    (Some(s), Some(n)) => format!("{s:.1} (one child for {n})"),
                    (Some(s), None) => format!("{s:.1}"),
                },
            ]
        }))
        .collect();
    out.push_str(&table(rows));
    out.push_str("\n\n");
    let found: Vec<&SanitizeRecord> = run.sanitize.iter().filter(|r| r.fails()).collect();
    if found.is_empty() {
        return;
    }
    let _ = writeln!(out, "\nFindings:\n");
    for r in found {
        if let Some(e) = &r.error {
            let _ = writeln!(
                out,
                "- {} {}: error: {}",
                cell_text(&r.variant),
                r.tool.as_str(),
                cell_text(e)
            );
        }
        for f in &r.findings {
            let _ = writeln!(
                out,
                "- {} {}: {} in {}{} ({} report{}{})",
                cell_text(&r.variant),
                r.tool.as_str(),
                cell_text(&f.what),
                cell_text(&f.kernel),
                f.location
                    .as_ref()
                    .map_or(String::new(), |l| format!(" at {}", cell_text(l))),
                f.reports,
                if f.reports == 1 { "" } else { "s" },
                f.hazards
                    .map_or(String::new(), |h| format!(", {h} hazards")),
            );
        }
    }
    out.push('\n');
}
