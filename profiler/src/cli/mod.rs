//! Argument parsing for the `prof` command. Each subcommand calls one library function.

mod convert;
mod exit;
mod report;

use clap::{Parser, Subcommand};
use std::process::ExitCode;

/// A sampling CPU profiler with a local web viewer.
#[derive(Debug, Parser)]
#[command(name = "prof", version, about, long_about = None)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Print the files of the embedded browser viewer.
    Assets,
    /// Print the top functions of a session file.
    Report(report::ReportArgs),
    /// Convert a profile to another format (folded, svg, speedscope, pprof, dot, session).
    Convert(convert::ConvertArgs),
}

/// Parses the command line, runs the command and returns the process exit code.
pub fn run() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {
        Command::Assets => {
            for path in prof::serve::assets::paths() {
                println!("{path}");
            }
            ExitCode::SUCCESS
        }
        Command::Report(args) => report::run(args),
        Command::Convert(args) => convert::run(args),
    }
}
