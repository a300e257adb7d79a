//! Named metrics per kernel from profiled launches, printed in nvprof's `--metrics` layout (or markdown, CSV, JSON) (pure).
//!
//! nvprof grouped launches by kernel under a device header and gave, per metric, the number of
//! invocations and the min, max and plain average over them; `gpu-lab ncu` and `gpu-lab import`
//! print the same table from Nsight Compute's counters. Launches where a formula is undefined
//! (n/a) count as invocations but not in Min/Max/Avg; the table says how many there were.
//!
//! `summary` groups the launches and computes the metrics; `render` prints them.

mod render;
mod summary;

pub use render::{Format, nvprof_value, render, render_csv, render_markdown, render_table};
pub use summary::{DEVICE_NAME, KernelGroup, MetricLine, Missing, Summary, summarize};

#[cfg(test)]
mod tests;
