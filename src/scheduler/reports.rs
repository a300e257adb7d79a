//! A run's reports, re-rendered from what is on disk after every step, so partial results stay readable.

use std::path::Path;

use anyhow::Context;

use crate::report;
use crate::store;

/// Rewrites the reports from what is on disk: partial results stay readable.
pub fn render_reports(dir: &Path) -> anyhow::Result<()> {
    let (run, _) = store::load_run(dir)?;
    let roofline = run
        .jobs
        .iter()
        .any(report::markdown::is_compute)
        .then_some(report::Format::Roofline);
    for format in [
        report::Format::Md,
        report::Format::Html,
        report::Format::Csv,
        report::Format::Svg,
        report::Format::Frame,
    ]
    .into_iter()
    .chain(roofline)
    {
        let e = report::exporter(format);
        store::write_atomic(&dir.join(e.file_name()), e.render(&run)?.as_bytes())?;
    }
    write_timelines(dir, &run)
}

/// The host programs' timelines, which report.md links, beside it (in `timelines/`, refused when
/// that is a link to elsewhere).
pub fn write_timelines(dir: &Path, run: &crate::records::RunData) -> anyhow::Result<()> {
    for (file, svg) in report::timeline::timeline_files(run) {
        store::write_atomic_under(dir, Path::new(&file), svg.as_bytes())
            .with_context(|| format!("writing {}", dir.join(&file).display()))?;
    }
    Ok(())
}

/// A report that cannot be rendered must not stop the measuring: the results are on disk and
/// `gpu-lab report RUN` can render them later.
pub(super) fn warn_on_error(result: anyhow::Result<()>) {
    if let Err(e) = result {
        eprintln!("warning: could not write the reports: {e:#}");
    }
}
