//! gpu-lab's entry point: parse the command line, run it, print the error chain, exit with the documented code.

use clap::Parser;

fn main() {
    // Like other Unix tools, end quietly when the reader of stdout goes away (`gpu-lab list metrics | head`).
    // SAFETY: restoring the default disposition of SIGPIPE before any thread starts.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
    // `args_os`: a path that is not UTF-8 (Linux allows any bytes) must not panic here; clap
    // takes such a path as it is, refuses it as a text argument (a suite or baseline name), and
    // the recorded command line shows its stray bytes as U+FFFD.
    let command_line = gpu_lab::cli::command_line(std::env::args_os());
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
