//! `gpu-lab completions SHELL` and `gpu-lab man`: what an installed gpu-lab needs beside the binary, generated from the clap definition (`cli.rs`) so that it never drifts from the commands.

use std::io::{self, Write};

use anyhow::Context;
use clap::CommandFactory;

use crate::cli::Cli;
use crate::exit;

/// The completion script for `shell`, on stdout.
pub fn completions(shell: clap_complete::Shell) -> anyhow::Result<i32> {
    let mut cmd = Cli::command();
    let mut out = io::stdout().lock();
    clap_complete::generate(shell, &mut cmd, "gpu-lab", &mut out);
    out.flush()
        .context("writing the completion script to stdout")?;
    Ok(exit::OK)
}

/// The man page (roff), on stdout.
pub fn man() -> anyhow::Result<i32> {
    let mut out = io::stdout().lock();
    clap_mangen::Man::new(Cli::command())
        .render(&mut out)
        .and_then(|()| out.flush())
        .context("writing the man page to stdout")?;
    Ok(exit::OK)
}
