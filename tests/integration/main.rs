//! The integration tests, built as one binary (one link of the heavy dependencies instead of one per file): a module per subject, and `common` for what they share.
//!
//! `cargo test --release` runs them all but the ignored ones, which need what a machine with only
//! Rust lacks: `slurm` (Slurm's packages; `.ci/run` installs them and runs it) and `toolkit` (a
//! CUDA toolkit). Run one module with a filter: `cargo test --release --test integration mock::`.

mod common;

mod architecture;
mod check;
mod cli;
mod command_line_bounds;
mod compiler_inputs;
mod cxx;
mod file_graph;
mod hardening;
mod hopper_bounds;
mod host_program;
mod import;
mod launch_features;
mod matmul_checks;
mod mock;
mod names;
mod ncu_parse;
mod output_formats;
mod properties;
mod provenance;
mod report;
mod sanitize;
mod shards;
mod slurm;
mod special_files;
mod steps;
mod suites;
mod symlinks;
mod tensor_metrics;
mod toolkit;
