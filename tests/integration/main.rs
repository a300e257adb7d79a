//! The integration tests, built as one binary (one link of the heavy dependencies instead of one per file): a module per subject, and `common` for what they share.
//!
//! `cargo test --release` runs them all but the ignored ones, which need what a machine with only
//! Rust lacks: `slurm` (Slurm's packages) and `browser` (Chromium and chromedriver; `.ci/run`
//! installs both and runs them) and `toolkit` (a CUDA toolkit). Run one module with a filter: `cargo test --release --test integration mock::`.

mod common;

mod activity;
mod arch_specific;
mod architecture;
mod browser;
mod check;
mod cli;
mod command_line_bounds;
mod compiler_inputs;
mod cupti;
mod cxx;
mod file_graph;
mod hardening;
mod history;
mod hopper_bounds;
mod host_program;
mod hotspots;
mod import;
mod launch_features;
mod lessons;
mod matmul_checks;
mod mock;
mod names;
mod ncu_parse;
mod output_formats;
mod properties;
mod provenance;
mod quoted_figures;
mod report;
mod repository;
mod rowwise_checks;
mod sanitize;
mod shapes;
mod shards;
mod slurm;
mod special_files;
mod steps;
mod suites;
mod symlinks;
mod tensor_metrics;
mod terminal;
mod toolkit;
mod webdriver;
