//! gpu-lab: compare CUDA kernel variants — check, time, profile with Nsight Compute, report.
//!
//! Data flow, one module per step:
//!
//! ```text
//! cli ─> cmd/ ─> config (environment + metric catalog, built once)
//!          │
//!          ├─ run/profile: suite/ (manifest -> jobs) ─> scheduler ─> executor/ ─┬─ child: a process per job ─> runner/ (build/, verify/, CUDA events)
//!          │                                                                    │         and ncu over a pass ─> profiler/ ─> parse/ ─> metrics/
//!          │                                                                    └─ mock: stand-ins, no GPU (says MOCK)
//!          │                            records (what a run holds) ─> store/ (after every job) ─> report/ (markdown, csv, json, svg)
//!          │                            every finished run ─> history (rows, pure) ─> store/history.rs (one Parquet file per run)
//!          ├─ check/compare: store/ ─> compare/ (verdicts) ─> exit code; history: store/history.rs ─> history ─> report/history
//!          └─ ncu/import: profiler/ ─> parse/ ─> metrics/ ─> report/nvprof
//! ```
//!
//! Pure modules (no GPU, disk, process or environment): `records`, `verify`, `parse`, `metrics`,
//! `expr`, `stats`, `compare`, `report`, `frame`, `occupancy`, `history`. Only `cmd/` reads `cli`; only `cmd/` and
//! `config` read the environment; `src/` has no import cycle, between modules or files
//! (tests/integration/architecture.rs checks each of these).

pub mod build;
pub mod cli;
pub mod cmd;
pub mod compare;
pub mod config;
pub mod cupti;
pub mod cxx;
pub mod device;
pub mod executor;
pub mod exit;
pub mod expr;
pub mod frame;
pub mod history;
pub mod metrics;
pub mod occupancy;
pub mod parse;
pub mod process;
pub mod profiler;
pub mod records;
pub mod report;
pub mod runner;
pub mod sanitizer;
pub mod scheduler;
pub mod stats;
pub mod store;
pub mod suite;
pub mod verify;
