//! gpu-lab's entry point: parse the command line, run it, print the error chain, exit with the documented code.

use clap::Parser;

fn main() {
    // Like other Unix tools, end quietly when the reader of stdout goes away (`gpu-lab list metrics | head`).
    // SAFETY: restoring the default disposition of SIGPIPE before any thread starts.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
    let command_line = std::env::args().collect::<Vec<_>>().join(" ");
    let cli = gpu_lab::cli::Cli::parse();
    let code = gpu_lab::cmd::dispatch(cli, command_line).unwrap_or_else(|e| {
        eprintln!("error: {e}");
        for cause in e.chain().skip(1) {
            eprintln!("  caused by: {cause}");
        }
        gpu_lab::exit::ERROR
    });
    std::process::exit(code);
}
