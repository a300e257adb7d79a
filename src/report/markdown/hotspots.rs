//! The source hot-spot section (`--hotspots`): per job and kernel, the CUDA source lines with the most warp samples, each with its dominant stall reason, excess global sectors, shared-memory bank conflicts and its text.

use std::fmt::Write;

use crate::records::{HotLine, Hotspots, KernelHotspots, ProgramKernel, RunData};

use super::cells::{cell_text, table};

/// One table per kernel of every job that asked for hot spots, in the order the jobs ran (by id
/// in a `--counters-only` run, which has profiles and no timed jobs: the section was lost there
/// until 2026-11-26); nothing when none did.
pub fn section(run: &RunData, out: &mut String) {
    let mut ids: Vec<&str> = run.jobs.iter().map(|j| j.id()).collect();
    if ids.is_empty() {
        ids = run.profiles.keys().map(String::as_str).collect();
    }
    let asked: Vec<(String, &Hotspots)> = ids
        .into_iter()
        .filter_map(|id| {
            let h = run.profiles.get(id)?.hotspots.as_ref()?;
            Some((id.to_string(), h))
        })
        .collect();
    if asked.is_empty() {
        return;
    }
    let _ = write!(
        out,
        "## Source hot spots\n\nPer kernel, the CUDA source lines where ncu's warp-state sampling (SourceCounters, WarpStateStats) found its warps most often, in one extra ncu session of the jobs asked for (`--hotspots`). {COLUMNS}\n\n"
    );
    for (label, h) in asked {
        job(&label, h, out);
    }
}

/// What the columns of a hot-spot table mean.
const COLUMNS: &str = "samples = warp samples at the line (every SASS instruction of the line), % = of the kernel's samples; stall = the reason with most of the line's samples, % of its samples; excess sectors = global L2 sectors beyond the ideal for the line's accesses (uncoalesced); bank conflicts = shared-memory wavefronts per ideal wavefront (n-way; 1× = none).";

/// `gpu-lab ncu --hotspots`: one table per kernel of the program, its launches summed, in the
/// order of their first launch; `report` is the `.ncu-rep` kept (`--export`), if any.
pub fn program_section(kernels: &[ProgramKernel], report: Option<&str>) -> String {
    let mut out = format!(
        "## Source hot spots\n\nPer kernel (its launches summed), the CUDA source lines where ncu's warp-state sampling (SourceCounters, WarpStateStats) found its warps most often. {COLUMNS}\n\n"
    );
    for k in kernels {
        let label = format!(
            "{} launch{}",
            k.launches,
            if k.launches == 1 { "" } else { "es" }
        );
        kernel(&label, &k.hotspots, report, &mut out);
    }
    out
}

fn job(label: &str, h: &Hotspots, out: &mut String) {
    if let Some(why) = &h.error {
        let _ = writeln!(
            out,
            "- {}: no hot spots: {}\n",
            cell_text(label),
            cell_text(why)
        );
        return;
    }
    for k in &h.kernels {
        kernel(label, k, h.report_file.as_deref(), out);
    }
}

fn kernel(label: &str, k: &KernelHotspots, report: Option<&str>, out: &mut String) {
    let _ = writeln!(
        out,
        "### {} — {}\n\n{:.0} warp samples over {} source line{}{}.{}\n",
        cell_text(label),
        code_span(&k.kernel),
        k.samples,
        k.lines_sampled,
        if k.lines_sampled == 1 { "" } else { "s" },
        report.map_or(String::new(), |r| format!(" (ncu report {})", code_span(r))),
        k.note
            .as_ref()
            .map_or(String::new(), |n| format!(" {}", cell_text(n))),
    );
    if k.lines.is_empty() {
        return;
    }
    let header = [
        "line",
        "source",
        "samples",
        "%",
        "stall",
        "excess sectors",
        "bank conflicts",
    ]
    .map(String::from);
    let rows = std::iter::once(header.to_vec())
        .chain(k.lines.iter().map(|l| line_row(l, k.samples)))
        .collect();
    out.push_str(&table(rows));
    out.push_str("\n\n");
}

fn line_row(l: &HotLine, kernel_samples: f64) -> Vec<String> {
    let share = |part: f64, whole: f64| {
        if whole > 0.0 {
            format!("{:.1}%", 100.0 * part / whole)
        } else {
            "–".into()
        }
    };
    vec![
        format!("{}:{}", l.file, l.line),
        if l.source.is_empty() {
            "–".into()
        } else {
            code_span(&l.source)
        },
        format!("{:.0}", l.samples),
        share(l.samples, kernel_samples),
        l.stall.as_ref().map_or("–".into(), |s| {
            format!("{} ({})", s.reason, share(s.samples, l.samples))
        }),
        l.excess_sectors.map_or("–".into(), |e| format!("{e:.0}")),
        l.bank_conflict_ways()
            .map_or("–".into(), |w| format!("{w:.1}×")),
    ]
}

/// Text as a markdown code span: a fence of more backticks than any run inside it, so source
/// text (`a*b`, `<T>`, `_x_`) shows as written and never turns into markup.
fn code_span(text: &str) -> String {
    let longest = text.split(|c| c != '`').map(str::len).max().unwrap_or(0);
    let fence = "`".repeat(longest + 1);
    let pad = if text.starts_with('`') || text.ends_with('`') {
        " "
    } else {
        ""
    };
    format!("{fence}{pad}{text}{pad}{fence}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::records::Stall;

    #[test]
    fn a_code_span_outfences_the_backticks_inside_and_keeps_markup_characters() {
        assert_eq!(code_span("a * b"), "`a * b`");
        assert_eq!(code_span("x = `y`"), "`` x = `y` ``");
        assert_eq!(code_span("a``b"), "```a``b```");
    }

    #[test]
    fn a_line_row_gives_its_share_its_stall_and_the_conflict_ways() {
        let l = HotLine {
            file: "transpose.cu".into(),
            line: 185,
            source: "out[i] = tile[tx][ty];".into(),
            samples: 400.0,
            stall: Some(Stall {
                reason: "mio_throttle".into(),
                samples: 300.0,
            }),
            excess_sectors: None,
            shared_wavefronts: Some(32_768.0),
            shared_wavefronts_ideal: Some(1_024.0),
        };
        assert_eq!(
            line_row(&l, 1_000.0),
            [
                "transpose.cu:185",
                "`out[i] = tile[tx][ty];`",
                "400",
                "40.0%",
                "mio_throttle (75.0%)",
                "–",
                "32.0×"
            ]
        );
    }
}
