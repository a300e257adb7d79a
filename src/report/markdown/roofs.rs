//! The markdown report's line for the roof of each math a group's jobs declare: its rate, what
//! measured it and at what clock, the other measurements of it, or why it was not measured.

use std::fmt::Write;

use crate::records::{Math, RoofSource, RunData, rate_text};

/// The roof of `math` (not FP32: its peak has its own line) in `group`'s ladder.
pub(super) fn roof_line(run: &RunData, group: &str, math: Math, out: &mut String) {
    let bounds = run.bounds.get(group);
    let Some(roof) = run.roof(group, math) else {
        let why = bounds
            .map(|b| b.roof_missing_reason(math))
            .unwrap_or_else(|| "no bounds were measured for this group".into());
        let _ = writeln!(
            out,
            "{} roof: not measured in this run ({why}): its jobs get no % of roof, no roofline and no impossible-result gate (they are not judged against the FP32 peak instead).\n",
            math.title()
        );
        return;
    };
    let others: Vec<String> = bounds
        .into_iter()
        .flat_map(|b| b.roofs.iter())
        .filter(|r| r.math == math)
        .filter_map(|r| {
            let source = match r.source {
                RoofSource::Library => "library",
                RoofSource::Kernel => "gpu-lab kernel",
            };
            match r.gops() {
                Some(g) if g == roof.gops => None,
                Some(g) => Some(format!("{} ({source}): {}", r.what, rate_text(math, g))),
                None => Some(format!(
                    "{} ({source}): not measured ({})",
                    r.what,
                    r.error.as_deref().unwrap_or("no samples")
                )),
            }
        })
        .collect();
    let _ = write!(
        out,
        "{} roof: **{}**, the fastest measured in this run: {}.",
        math.title(),
        roof.rate_text(),
        roof.measured_by()
    );
    if !others.is_empty() {
        let _ = write!(out, " Also measured: {}.", others.join("; "));
    }
    out.push_str("\n\n");
}
