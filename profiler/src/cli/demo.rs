//! `prof demo`: profiles a built-in workload (in CPU, wall or alloc mode; in alloc mode it gets
//! an allocating thread), saves the session and serves it exactly as `prof serve demo.json` would.

use super::serve::{serve_files, ServeFlags};
use super::workload;
use clap::Args;
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

/// Arguments of `prof demo`.
#[derive(Debug, Args)]
pub struct DemoArgs {
    /// How long the workload runs, in seconds.
    #[arg(long, default_value_t = 2.0, value_name = "SECONDS")]
    seconds: f64,
    /// Sampling interval in microseconds.
    #[arg(long, default_value_t = 1000, value_name = "MICROS")]
    interval_us: u64,
    /// What to sample: CPU time, wall time (every thread, running or waiting), or allocations
    /// (sampled every 512 KiB on average; the workload then gets an allocating thread).
    #[arg(long, default_value = "cpu", value_parser = ["cpu", "wall", "alloc"])]
    mode: String,
    /// What triggers CPU-mode samples: auto (the best that works here), perf_event_sigtrap,
    /// perf_event, timer_create, setitimer or perf_ring (no signal; also wall mode's). A timer
    /// this system lacks is an error.
    #[arg(long, default_value = "auto", value_name = "TIMER", value_parser = parse_timer)]
    timer: prof::Timer,
    /// How stacks are walked: auto, dwarf or fp (frame pointers only).
    #[arg(long, default_value = "auto", value_name = "UNWIND", value_parser = parse_unwind)]
    unwind: prof::Unwind,
    /// Where to save the session.
    #[arg(short, long, default_value = "demo.json")]
    output: PathBuf,
    /// Save and print the profile, but do not serve it.
    #[arg(long)]
    no_serve: bool,
    #[command(flatten)]
    serve: ServeFlags,
}

/// `--timer`'s value: a [`prof::Timer`] name.
fn parse_timer(name: &str) -> Result<prof::Timer, String> {
    name.parse().map_err(|e: prof::Error| e.to_string())
}

/// `--unwind`'s value: a [`prof::Unwind`] name.
fn parse_unwind(name: &str) -> Result<prof::Unwind, String> {
    name.parse().map_err(|e: prof::Error| e.to_string())
}

/// Runs `prof demo`.
pub fn run(args: DemoArgs) -> ExitCode {
    if !(args.seconds > 0.0 && args.seconds <= 3600.0) || args.interval_us == 0 {
        eprintln!("prof: --seconds must be in (0, 3600] and --interval-us above 0");
        return ExitCode::from(2);
    }
    let duration = Duration::from_secs_f64(args.seconds);
    let mode = match args.mode.as_str() {
        "wall" => prof::Mode::Wall,
        "alloc" => prof::Mode::Alloc,
        _ => prof::Mode::Cpu,
    };
    let alloc = mode == prof::Mode::Alloc;
    let options = prof::Options::default()
        .mode(mode)
        .timer(args.timer)
        .unwind(args.unwind)
        .interval(Duration::from_micros(args.interval_us));
    eprintln!(
        "profiling the demo workload in {} mode for {:.1} s (primes on the main thread, Collatz \
         on another, a third waiting for progress reports{})",
        mode.name(),
        args.seconds,
        if alloc {
            ", records parsed and kept on a fourth"
        } else {
            ""
        }
    );
    let mut outcome = workload::Outcome::default();
    let report = match prof::profile(options, || outcome = workload::run(duration, alloc)) {
        Ok(report) => report,
        Err(e @ prof::Error::InvalidOption(_)) => {
            eprintln!("prof: {e}");
            return ExitCode::from(2);
        }
        Err(e) => {
            eprintln!("prof: {e}");
            return ExitCode::FAILURE;
        }
    };
    eprintln!(
        "found {} primes, {} Collatz steps, {} progress reports, parsed {} records (the last {} \
         still in use)",
        outcome.primes,
        outcome.collatz_steps,
        outcome.reports,
        outcome.records,
        outcome.kept.len()
    );
    // Save before printing: a closed pipe on stdout (`prof demo | head`) must not lose the file.
    if let Err(e) = report.save_as(&args.output, prof::export::Format::Session) {
        eprintln!("prof: {e}");
        return ExitCode::FAILURE;
    }
    let mut stdout = std::io::stdout().lock();
    let _ = write!(stdout, "{report}");
    let _ = writeln!(stdout, "saved {}", args.output.display());
    drop(stdout);
    if args.no_serve {
        return ExitCode::SUCCESS;
    }
    serve_files(&[args.output], &args.serve)
}
