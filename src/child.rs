//! The hidden child-process commands: each opens the GPU itself, so a fault or hang costs only that child.

use std::path::Path;

use anyhow::Context;

use crate::runner::{self, Gpu, TimingConfig};
use crate::store;
use crate::suite::JobSpec;

fn read_json<T: serde::de::DeserializeOwned>(path: &Path) -> anyhow::Result<T> {
    let text = std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    serde_json::from_str(&text).with_context(|| format!("parsing {}", path.display()))
}

pub fn job(spec: &Path, out: &Path, gpu: usize, seed: u64) -> anyhow::Result<()> {
    let (spec, timing): (JobSpec, TimingConfig) = read_json(spec)?;
    let gpu = Gpu::open(gpu)?;
    let outcome = runner::run_job(&gpu, &spec, &timing, seed)?;
    store::write_atomic(out, &serde_json::to_vec(&outcome)?)?;
    Ok(())
}

pub fn profile_pass(specs: &Path, gpu: usize, seed: u64) -> anyhow::Result<()> {
    let specs: Vec<JobSpec> = read_json(specs)?;
    let gpu = Gpu::open(gpu)?;
    runner::run_profile_pass(&gpu, &specs, seed)?;
    Ok(())
}

pub fn bounds(bytes: u64, out: &Path, gpu: usize, timing: &Path) -> anyhow::Result<()> {
    let timing: TimingConfig = read_json(timing)?;
    let gpu = Gpu::open(gpu)?;
    let outcome = runner::run_bounds(&gpu, bytes, &timing)?;
    store::write_atomic(out, &serde_json::to_vec(&outcome)?)?;
    Ok(())
}
