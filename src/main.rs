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
    let code = match gpu_lab::run(cli, command_line) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("error: {e}");
            for cause in e.chain().skip(1) {
                eprintln!("  caused by: {cause}");
            }
            1
        }
    };
    std::process::exit(code);
}
