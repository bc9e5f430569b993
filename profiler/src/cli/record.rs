//! `prof record [-o FILE] [-F HZ | --interval DURATION] [--mode cpu|wall|alloc] [--user-only]
//! [--follow-descendants] [--duration D] -- CMD [ARGS...]`: runs CMD, samples every thread of
//! it and of the processes it starts until it exits (see `prof::record`), saves the session,
//! prints its name and the top functions on standard error, and exits as CMD did.
//! `prof record --pid PID [--duration D] [--children] [--mode cpu|wall]` attaches to a running process instead
//! (see `prof::record::attach`), until Ctrl-C, the duration or its end.

use super::exit::{fail, BAD_INPUT, FAILURE};
use clap::Args;
use std::ffi::OsString;
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

/// The allocation interposer (`preload/`), built by the build script: empty in a cross build.
static ALLOC_LIBRARY: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/libprof_preload.so"));

/// Arguments of `prof record`.
#[derive(Debug, Args)]
pub struct RecordArgs {
    /// Where to save the session: a name ending in `.json.gz` (gzipped) or `.json`, or a
    /// character device or FIFO (`/dev/stdout`), which gets the JSON whatever its name.
    #[arg(short, long, default_value = "prof.json.gz")]
    output: PathBuf,
    /// Samples per second of CPU time of each thread.
    #[arg(
        short = 'F',
        long = "frequency",
        value_name = "HZ",
        conflicts_with = "interval"
    )]
    frequency: Option<u32>,
    /// CPU time between samples of each thread, e.g. `1ms`, `250us`, `100000ns` (default 1ms).
    #[arg(long, value_name = "DURATION", value_parser = parse_duration)]
    interval: Option<Duration>,
    /// What to record: `cpu` (time on CPU), `wall` (also time switched out: sleeping,
    /// waiting, blocked, charged to the stack that blocked) or `alloc` (allocations of a
    /// dynamically linked program, through an interposed `malloc`; weights are bytes and
    /// objects, allocated and still in use at the end).
    #[arg(long, value_name = "MODE", default_value = "cpu", value_parser = parse_mode)]
    mode: prof::Mode,
    /// Record user-space frames only (no kernel frames, no time in the kernel): allowed at
    /// `perf_event_paranoid` 2, where kernel frames need 1.
    #[arg(long)]
    user_only: bool,
    /// Bytes of user stack copied with each sample (a multiple of 8, up to 65528).
    #[arg(long, value_name = "BYTES", default_value_t = prof::record::DEFAULT_STACK_BYTES)]
    stack_bytes: u32,
    /// Wall mode: bytes of user stack copied with each context switch (a multiple of 8; at
    /// most --stack-bytes are); a stack going on past them is completed from the thread's
    /// previous (or next) stack where that has the same frame, and such stacks are counted.
    #[arg(long, value_name = "BYTES", default_value_t = prof::record::DEFAULT_SWITCH_STACK_BYTES)]
    switch_stack_bytes: u32,
    /// Alloc mode: mean bytes allocated between samples of each thread.
    #[arg(long, value_name = "BYTES", default_value_t = prof::DEFAULT_ALLOC_INTERVAL_BYTES)]
    alloc_interval: u64,
    /// Attach to this running process (all its threads, and those it starts) instead of
    /// running a command; it is not stopped. Ends on Ctrl-C, `--duration`, or its end. CPU or
    /// wall mode.
    #[arg(long, value_name = "PID", conflicts_with = "command")]
    pid: Option<u32>,
    /// Record for this long at most, e.g. `30s`, `500ms`, then save and exit 0: a command
    /// still running then runs on, untouched and no longer recorded (as a process attached
    /// with `--pid` does).
    #[arg(long, value_name = "DURATION", value_parser = parse_duration)]
    duration: Option<Duration>,
    /// Go on recording after CMD exits, until every process it started has exited too (a
    /// daemon that left its session included), or Ctrl-C (one pressed while CMD ran counts),
    /// or `--duration`. Without it the recording ends when CMD exits, keeping what the
    /// processes it started did until then; those left running are named, not waited for.
    #[arg(long, conflicts_with = "pid")]
    follow_descendants: bool,
    /// With `--pid`: also the processes it has started and starts.
    #[arg(long, requires = "pid")]
    children: bool,
    /// Count every call of the functions whose demangled names this regular expression
    /// matches (anywhere in the name: `'^parse$'` for one), in the program and the libraries
    /// it links, exactly, with no change to the program (uprobes: needs root or CAP_PERFMON).
    /// Repeat for more. The session keeps the counts; `prof report FILE --calls` prints them
    /// with time per call. CPU and wall mode.
    #[arg(long, value_name = "REGEX")]
    calls: Vec<String>,
    /// With `--calls`: the most functions the patterns may match before prof refuses.
    #[arg(long, value_name = "N", default_value_t = prof::record::DEFAULT_CALLS_MAX, requires = "calls")]
    calls_max: usize,
    /// With `--calls`: also record each call's entry and return, so every call is timed
    /// (wall time: `prof report --calls` gives each function's total and self time per call,
    /// exact) and is a span on the timeline (`--scopes`, the viewer's Scopes and stack chart).
    /// Costs a second trap per call, and a record each way. While a timed call runs, its
    /// return address on the stack is the kernel's trampoline: a program that reads its own
    /// stack (a C++ exception, a backtrace) sees that.
    #[arg(long, requires = "calls")]
    calls_timed: bool,
    /// Then serve the session in the viewer (as `prof serve FILE`) until Ctrl-C.
    #[arg(long)]
    serve: bool,
    /// With `--serve`: how to serve.
    #[command(flatten)]
    serve_flags: super::serve::ServeFlags,
    /// The command to run, with its arguments.
    #[arg(
        required_unless_present = "pid",
        trailing_var_arg = true,
        allow_hyphen_values = true,
        value_name = "CMD"
    )]
    command: Vec<OsString>,
}

/// `--mode`'s value.
fn parse_mode(text: &str) -> Result<prof::Mode, String> {
    match text {
        "cpu" => Ok(prof::Mode::Cpu),
        "wall" => Ok(prof::Mode::Wall),
        "alloc" => Ok(prof::Mode::Alloc),
        _ => Err(format!("{text:?}: the mode is cpu, wall or alloc")),
    }
}

/// `--interval`'s value: a number with a unit (`ns`, `us`, `µs`, `ms`, `s`).
fn parse_duration(text: &str) -> Result<Duration, String> {
    let split = text
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(text.len());
    let (number, unit) = text.split_at(split);
    let value: f64 = number
        .parse()
        .map_err(|_| format!("{text:?} is not a duration such as 1ms or 250us"))?;
    let scale = match unit {
        "ns" => 1e-9,
        "us" | "µs" => 1e-6,
        "ms" => 1e-3,
        "s" => 1.0,
        _ => return Err(format!("{text:?}: the unit must be ns, us, ms or s")),
    };
    let d = Duration::try_from_secs_f64(value * scale).map_err(|e| e.to_string())?;
    if d.is_zero() {
        return Err("it must be above 0".into());
    }
    Ok(d)
}

/// Runs `prof record`.
pub fn run(args: RecordArgs) -> ExitCode {
    let mut options = prof::record::RecordOptions::default();
    match (args.frequency, args.interval) {
        (Some(0), _) => {
            eprintln!("prof: -F must be above 0");
            return ExitCode::from(BAD_INPUT);
        }
        (Some(hz), _) => options.interval = Duration::from_nanos(1_000_000_000 / u64::from(hz)),
        (None, Some(interval)) => options.interval = interval,
        (None, None) => {}
    }
    if args.stack_bytes % 8 != 0 || args.stack_bytes > 65_528 {
        eprintln!("prof: --stack-bytes must be a multiple of 8 up to 65528");
        return ExitCode::from(BAD_INPUT);
    }
    options.stack_bytes = args.stack_bytes;
    if args.switch_stack_bytes % 8 != 0 || args.switch_stack_bytes > 65_528 {
        eprintln!("prof: --switch-stack-bytes must be a multiple of 8 up to 65528");
        return ExitCode::from(BAD_INPUT);
    }
    options.switch_stack_bytes = args.switch_stack_bytes;
    options.mode = args.mode;
    options.kernel = !args.user_only;
    if args.mode == prof::Mode::Alloc {
        if args.alloc_interval == 0 {
            eprintln!("prof: --alloc-interval must be above 0");
            return ExitCode::from(BAD_INPUT);
        }
        options.alloc_interval_bytes = args.alloc_interval;
        options.alloc_library = Some(ALLOC_LIBRARY).filter(|image| !image.is_empty());
        if options.alloc_library.is_none() {
            eprintln!("prof: this prof was built for another platform than its build machine's, without its allocation interposer: alloc mode is not available");
            return ExitCode::from(BAD_INPUT);
        }
    }
    if let Err(e) = prof::session::check_writable(&args.output) {
        return fail(&e);
    }
    if let Err(e) = session_name(&args.output) {
        eprintln!("prof: {e}");
        return ExitCode::from(BAD_INPUT);
    }
    options.duration = args.duration;
    options.children = args.children;
    options.follow_descendants = args.follow_descendants;
    options.calls = args.calls.clone();
    options.calls_max = args.calls_max;
    options.calls_timed = args.calls_timed;
    let recorded = match args.pid {
        Some(pid) => prof::record::attach(pid, &options),
        None => {
            let mut command = std::process::Command::new(&args.command[0]);
            command.args(&args.command[1..]);
            prof::record::record(command, &options)
        }
    };
    let recording = match recorded {
        Ok(recording) => recording,
        Err(
            e @ (prof::Error::PerfRefused { .. }
            | prof::Error::AttachRefused { .. }
            | prof::Error::Calls(_)),
        ) => {
            eprintln!("prof: {e}");
            return ExitCode::from(BAD_INPUT);
        }
        Err(prof::Error::Spawn { program, source }) => {
            // As a shell says it: 127 for a command not found, 126 for one it cannot run.
            eprintln!("prof: cannot run {program}: {source}");
            let not_found = source.kind() == std::io::ErrorKind::NotFound;
            return ExitCode::from(if not_found { 127 } else { 126 });
        }
        Err(e) => return fail(&e),
    };
    let report = &recording.report;
    let Some(saved) = save(report, &args.output) else {
        // Nothing could be written anywhere: the command's failure, or prof's when it succeeded.
        let code = exit_code(recording.status);
        return ExitCode::from(if code == 0 { FAILURE } else { code });
    };
    // Why a program has no samples, when prof knows: before the counts, which it explains.
    for unsampled in &recording.unsampled {
        eprintln!("prof: {unsampled}");
    }
    let samples = report.total_samples();
    let closed = channel_closed(&recording.channel_closed);
    let ended = ending(&recording.ending, options.duration);
    if samples == 0 && !recording.unsampled.is_empty() {
        eprintln!(
            "prof: no samples; saved an empty session to {}",
            saved.display()
        );
    } else if let (0, Some(closed)) = (samples, &closed) {
        eprintln!(
            "prof: no samples: {closed}; saved an empty session to {}",
            saved.display()
        );
    } else if let (0, Some(ended)) = (samples, &ended) {
        eprintln!(
            "prof: no samples: {ended}; saved an empty session to {}",
            saved.display()
        );
    } else if samples == 0 {
        let what = if options.mode == prof::Mode::Alloc {
            format!(
                "allocated less than the sampling interval ({} bytes on average)",
                options.alloc_interval_bytes
            )
        } else {
            format!(
                "ran for less than one sampling interval of CPU time ({:?})",
                options.interval
            )
        };
        let what = match recording.ending.command_exited {
            Some(after) => format!("exited after {}: it {what}", elapsed(after)),
            None => what,
        };
        eprintln!(
            "prof: no samples: the {} {what}; saved an empty session to {}",
            if args.pid.is_some() {
                "process"
            } else {
                "command"
            },
            saved.display()
        );
    } else {
        eprint!("{report}");
        if !report.session().counted.is_empty() {
            if let Ok(calls) = prof::aggregate::TableOptions::default().calls(report.session()) {
                eprint!("{calls}");
            }
        }
        let dropped = report.session().meta.dropped_samples;
        eprintln!(
            "saved {} ({samples} samples, {} with a stack reaching the thread's start{}{})",
            saved.display(),
            recording.reached_root,
            if recording.stitched > 0 {
                format!(
                    " ({} completed from another stack of their thread)",
                    recording.stitched
                )
            } else {
                String::new()
            },
            if dropped > 0 {
                format!(", {dropped} dropped")
            } else {
                String::new()
            }
        );
        if let Some(closed) = closed {
            eprintln!("prof: {closed}");
        }
        if let Some(ended) = ended {
            eprintln!("prof: {ended}");
        }
    }
    if args.serve {
        prof::record::interrupts_end_prof();
        return super::serve::serve_files(std::slice::from_ref(&saved), &args.serve_flags);
    }
    ExitCode::from(exit_code(recording.status))
}

/// Checks `-o`'s name (after [`prof::session::check_writable`]): a file, or a new name, must end
/// in `.json` or `.json.gz`, what a session is saved as, so that nothing silently writes JSON
/// under another format's name; a character device or a FIFO is written whatever its name.
fn session_name(output: &Path) -> Result<(), String> {
    use std::os::unix::fs::FileTypeExt;
    let stream = std::fs::metadata(output)
        .is_ok_and(|m| m.file_type().is_char_device() || m.file_type().is_fifo());
    let name = output
        .file_name()
        .map(|n| n.to_string_lossy().to_ascii_lowercase())
        .unwrap_or_default();
    if stream || name.ends_with(".json") || name.ends_with(".json.gz") {
        return Ok(());
    }
    Err(format!(
        "-o {}: prof record saves a session, as NAME.json or NAME.json.gz (gzipped); prof \
         convert turns it into other formats",
        output.display()
    ))
}

/// The exit code a shell gives for `status`: the command's own, or 128 + the signal that ended
/// it.
fn exit_code(status: std::process::ExitStatus) -> u8 {
    let code = match (status.code(), status.signal()) {
        (Some(code), _) => code,
        (None, Some(signal)) => 128 + signal,
        (None, None) => 1,
    };
    u8::try_from(code).unwrap_or(1)
}

/// `d` as the report prints times: `2.13 ms`, `1.50 s`.
fn elapsed(d: Duration) -> String {
    let ns = u64::try_from(d.as_nanos()).unwrap_or(u64::MAX);
    prof::aggregate::format_weight(&prof::Mode::Cpu.sample_type(), ns)
}

/// What a recording left unrecorded at its end, when it did: the processes still running (the
/// command, or those it started) and why the recording ended before them.
fn ending(ending: &prof::record::Ending, duration: Option<Duration>) -> Option<String> {
    use prof::record::EndedBy;
    let running = &ending.left_running;
    let listed = {
        let mut shown: Vec<String> = running
            .iter()
            .take(3)
            .map(|p| format!("pid {} `{}`", p.pid, p.name))
            .collect();
        if running.len() > 3 {
            shown.push(format!("{} more", running.len() - 3));
        }
        shown.join(", ")
    };
    let processes = match running.len() {
        1 => "1 process".to_owned(),
        n => format!("{n} processes"),
    };
    let why = match (ending.by, duration) {
        (EndedBy::Duration, Some(d)) => format!("recorded for --duration {}", elapsed(d)),
        (EndedBy::Interrupted, _) => "interrupted".to_owned(),
        _ => String::new(),
    };
    let text = match ending.command_exited {
        // Every process recorded ended with the recording.
        Some(_) if running.is_empty() => return None,
        Some(after) => {
            let left = format!(
                "the command exited after {}, leaving {processes} running ({listed}), not \
                 recorded after that",
                elapsed(after)
            );
            if why.is_empty() {
                format!("{left}: --follow-descendants records them until they end")
            } else {
                format!("{why}: {left}")
            }
        }
        // An attached process that ended (or, with `--children`, every one): all recorded.
        None if running.is_empty() && why.is_empty() => return None,
        None if running.is_empty() => {
            format!("{why}: the command runs on, not recorded after that")
        }
        None => format!(
            "{why}: the command and {processes} it started ({listed}) run on, not recorded \
             after that"
        ),
    };
    Some(text)
}

/// What alloc mode lost when the program closed prof's channel: the first process seen, when,
/// and how many did.
fn channel_closed(closed: &[prof::record::ChannelClosed]) -> Option<String> {
    let first = closed.first()?;
    let others = match closed.len() - 1 {
        0 => String::new(),
        1 => ", and 1 other process".to_owned(),
        n => format!(", and {n} other processes"),
    };
    Some(format!(
        "the program closed prof's channel at {:.2} s (pid {}{others}); allocations after it \
         were not sampled",
        first.after.as_secs_f64(),
        first.pid
    ))
}

/// Saves `report` to `output`, or, when that fails (a full disk, a device that refuses, a
/// FIFO nobody reads), to a new file in the temporary directory and then in the current one,
/// saying so on standard error: the recording is not lost to where it was to go. The name it
/// was saved under; `None` (said too) when it could be saved nowhere.
fn save(report: &prof::Report, output: &Path) -> Option<PathBuf> {
    // Always a session (`session_name` checked the name; a FIFO or a device may have any),
    // never a format guessed from the name.
    let session = prof::export::Format::Session;
    let error = match report.save_as(output, session) {
        Ok(()) => return Some(output.to_owned()),
        Err(e) => e,
    };
    let name = format!(
        "prof-record-{}-{}.json.gz",
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs())
    );
    let mut tried = Vec::new();
    for dir in [std::env::temp_dir(), PathBuf::from(".")] {
        let fallback = dir.join(&name);
        // A new name only: never over a file that is there.
        if fallback.exists() {
            continue;
        }
        match report.save_as(&fallback, session) {
            Ok(()) => {
                eprintln!(
                    "prof: {error}; saved the session to {} instead",
                    fallback.display()
                );
                return Some(fallback);
            }
            Err(e) => tried.push(e.to_string()),
        }
    }
    eprintln!(
        "prof: {error}; the session is lost: it could not be saved elsewhere either ({})",
        tried.join("; ")
    );
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use prof::record::{EndedBy, Ending};

    #[test]
    fn an_attached_process_that_ended_is_no_news_and_one_left_running_after_duration_is() {
        let ended = Ending {
            by: EndedBy::AllExited,
            command_exited: None,
            left_running: Vec::new(),
        };
        assert_eq!(ending(&ended, Some(Duration::from_secs(1))), None);
        let cut = Ending {
            by: EndedBy::Duration,
            ..ended
        };
        assert_eq!(
            ending(&cut, Some(Duration::from_secs(1))).as_deref(),
            Some("recorded for --duration 1.00 s: the command runs on, not recorded after that")
        );
    }
}
