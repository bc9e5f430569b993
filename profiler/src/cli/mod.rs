//! Argument parsing for the `prof` command. Each subcommand calls one library function.

mod convert;
mod demo;
mod diff;
#[cfg(target_os = "linux")]
mod record;
mod serve;
mod workload;

use clap::{Parser, Subcommand};
use std::process::ExitCode;

mod exit;
mod load;
#[cfg(test)]
mod reference;
mod report;

use load::{load, InputLimit, Reading};

/// A sampling CPU profiler with a local web viewer.
#[derive(Debug, Parser)]
#[command(name = "prof", version, about, long_about = None)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Profile a built-in workload, save it as demo.json and show it in the browser viewer.
    Demo(demo::DemoArgs),
    /// Show profiles in the browser viewer.
    Serve(serve::ServeArgs),
    /// Run a command and profile it (every thread and child process), then save the session.
    ///
    /// The recording ends when CMD exits, keeping what the processes it started did until then;
    /// those still running are named, and neither waited for nor signalled. prof then exits
    /// with CMD's status. `--follow-descendants` records them until the last has exited (or
    /// Ctrl-C, or `--duration`); `--duration` ends any recording early, leaving CMD running.
    #[cfg(target_os = "linux")]
    Record(record::RecordArgs),
    /// Print the top functions of a profile.
    Report(report::ReportArgs),
    /// Convert a profile to another format (folded, svg, speedscope, pprof, dot, session).
    Convert(convert::ConvertArgs),
    /// Compare two profiles: the functions whose weight changed most.
    Diff(diff::DiffArgs),
    /// Print the files of the embedded browser viewer (for checking a build).
    #[command(hide = true)]
    Assets,
}

/// Parses the command line, runs the command and returns the process exit code.
pub fn run() -> ExitCode {
    let cli = Cli::parse();
    if matches!(
        cli.command,
        Command::Convert(_) | Command::Diff(_) | Command::Report(_) | Command::Serve(_)
    ) {
        // The commands that read profiles build large tables in turn; the others
        // run workloads whose allocations keep glibc's own tuning.
        prof::alloc::keep_large_blocks_mapped();
    }
    match cli.command {
        Command::Assets => {
            for path in prof_serve::assets::paths() {
                println!("{path}");
            }
            ExitCode::SUCCESS
        }
        Command::Convert(args) => convert::run(args),
        Command::Demo(args) => demo::run(args),
        Command::Diff(args) => diff::run(args),
        Command::Serve(args) => serve::run(args),
        #[cfg(target_os = "linux")]
        Command::Record(args) => record::run(args),
        Command::Report(args) => report::run(args),
    }
}
