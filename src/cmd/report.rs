//! `gpu-lab report RUN`: re-render a stored run (no GPU needed).

use std::path::Path;

use anyhow::Context;

use crate::exit;
use crate::report::{self, Format};
use crate::store;

pub fn report(run: &Path, format: Format, write: bool) -> anyhow::Result<i32> {
    let (data, warnings) = store::load_run(run)?;
    for w in &warnings {
        eprintln!("warning: {w}");
    }
    let e = report::exporter(format);
    let target = run.join(e.file_name());
    // A report from a partly unreadable results file would hold fewer jobs than the one it
    // replaces; refused before anything is printed, so that stdout holds a report only on success.
    if write && !warnings.is_empty() {
        anyhow::bail!(
            "{} was not rewritten: {} record(s) of the run could not be read (see the warnings above)\n  fix: repair or remove those lines of {}, then run `gpu-lab report {} --write` again",
            target.display(),
            warnings.len(),
            store::read_results(run)
                .map_or_else(|_| run.join(store::RESULTS), |(path, _)| path)
                .display(),
            run.display()
        );
    }
    let text = e.render(&data)?;
    print!("{text}");
    if write {
        store::write_atomic(&target, text.as_bytes())
            .with_context(|| format!("writing {}", target.display()))?;
        // The timelines the markdown report links go beside it.
        if format == Format::Md {
            crate::scheduler::write_timelines(run, &data)?;
        }
    }
    Ok(exit::OK)
}
