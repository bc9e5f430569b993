//! The `prof` command: parses arguments and calls the library.
#![deny(unsafe_code)]

mod cli;

fn main() -> std::process::ExitCode {
    cli::run()
}
