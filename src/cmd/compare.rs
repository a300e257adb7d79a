//! `gpu-lab compare`: stored runs side by side, also across GPUs, without verdicts.

use std::path::Path;

use super::check::{definitions, load_run, render};
use crate::compare::{self, clocks::Normalize, Settings};
use crate::config::Config;
use crate::exit;

pub fn compare(config: &Config, a: &Path, b: &Path, format: compare::Format) -> anyhow::Result<i32> {
    let (base, new) = (load_run(a)?, load_run(b)?);
    let defs = definitions(config, &base, &new);
    // As measured: no clock normalisation, plain times; % of copy shows the cross-GPU view beside them.
    let s = Settings { normalize: Normalize::None, ..Settings::default() };
    let c = compare::compare(&base, &a.display().to_string(), &new, &b.display().to_string(), &defs, &s, false);
    print!("{}", render(&c, format)?.0);
    Ok(exit::OK)
}
