//! `gpu-lab report RUN`: re-render a stored run (no GPU needed).

use std::path::Path;

use crate::exit;
use crate::report::{self, Format};
use crate::store;

pub fn report(run: &Path, format: Format, write: bool) -> anyhow::Result<i32> {
    let (data, warnings) = store::load_run(run)?;
    for w in warnings {
        eprintln!("warning: {w}");
    }
    let e = report::exporter(format);
    let text = e.render(&data)?;
    if write {
        store::write_atomic(&run.join(e.file_name()), text.as_bytes())?;
    }
    print!("{text}");
    Ok(exit::OK)
}
