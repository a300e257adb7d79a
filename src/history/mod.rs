//! The history of runs: one row per job x measure of every run, the environment fingerprint that decides which runs form one trend, and the trends built from the rows (pure).
//!
//! A run is appended to the history as rows (`rows_of`); `store/history.rs` keeps them as one
//! Parquet file per run under `<suite>/<fingerprint>/`. Runs of the same fingerprint (GPU model,
//! driver, CUDA, L2 state, clock policy, mock or not) are comparable; the gpu-lab commit is not
//! part of it: a trend over commits is what the history is for, so every row carries its commit.

pub mod baseline;
pub mod frame;
mod row;
pub mod trend;

pub use baseline::baseline_run;
pub use row::{EnvFingerprint, HistoryRow, Measure, rows_of};
pub use trend::{Selection, Trend, TrendPoint, Trends, fingerprints, last_runs, trends};

#[cfg(test)]
pub(crate) mod tests;
