//! `prof record -- CMD`: profiling another program without changing it and without sending it
//! a signal. The command is started held before its `exec`; per-CPU task-clock perf events on
//! it (inherited by every thread and child process it starts, enabled at its `exec`) have the
//! kernel copy each sample's registers and the top of its user stack into one mmap'd ring per
//! CPU, with the MMAP2, COMM, FORK and EXIT records that say which objects each process has
//! loaded. prof's thread drains the rings every [`DRAIN_EVERY`], unwinds each copied stack with
//! the sampler's unwinder (framehop over the objects' unwind tables, read from their files;
//! frame pointers where that fails), and after the command's end symbolizes each distinct
//! address once from the files (`symbolize`) and builds a [`Session`] as the sampler does.
//!
//! For how long: until the command exits, keeping what the processes it started did until
//! then (as `perf record` and samply do); with [`RecordOptions::follow_descendants`], until
//! the last of them has exited too (a daemon that left the command's session included); in
//! both, at most [`RecordOptions::duration`]. Nothing left running is waited for or signalled
//! (see [`Ending`]).
//!
//! Per-CPU events, not one per process: the kernel refuses to map the ring of an inherited
//! per-task event (`cpu = -1`), as `perf record` works around the same way.

mod access;
mod attach;
mod calls;
mod interposer;
mod jit;
mod kernel;
mod privileged;
mod process;
mod processes;
mod stitch;
mod switch;

pub use attach::attach;
pub use privileged::{IdChange, UnsampledExec};
pub use prof_capture::calls::DEFAULT_CALLS_MAX;
pub use prof_capture::perf::{DEFAULT_STACK_BYTES, DRAIN_EVERY};

use crate::report::Report;
use process::{CopiedStack, Process};
use prof_capture::calls::CallCounters;
use prof_capture::perf::records::{self, CallRecord, Record, SampleRecord};
use prof_capture::perf::{map_ring, regs_of, REGS_MASK, RING_PAGES};
use prof_capture::sys::{self, PerfRing, RingEvent};
use prof_capture::timed_calls::CallTimer;
use prof_capture::unwind::dwarf::SectionCache;
use prof_session::session::{
    CountedFunction, Metadata, Mode, ProcessIdx, SampleState, Session, SessionBuilder,
};
use prof_session::{Error, Result};
use std::collections::{HashMap, HashSet};
use std::os::unix::process::ExitStatusExt;
use std::process::{Command, ExitStatus};
use std::time::{Duration, Instant, SystemTime};

/// Bytes of user stack the kernel copies with each context switch of wall mode by default:
/// enough for the frames of a blocking call below the code that made it; a stack that goes on
/// past them is completed from its thread's previous or next stack (see `stitch`). Measured in
/// docs/record.md ("Wall mode at high switch rates").
pub const DEFAULT_SWITCH_STACK_BYTES: u32 = 2_048;

/// How long after its time a record may still be being written to its ring: records newer
/// than a drain's start less this wait for the next drain.
const WRITE_MARGIN_NS: u64 = 1_000_000;

/// The functions a complete stack ends in: its thread's start (the dynamic loader's, while it
/// loads a program).
pub const THREAD_ROOTS: &[&str] = &[
    "_start",
    "main",
    "start_thread",
    "clone3",
    "__clone3",
    "clone",
    "__libc_start_main",
    "__libc_start_call_main",
    "_dl_start",
    "_dl_start_user",
];

/// How to record.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct RecordOptions {
    /// CPU time between samples of each thread.
    pub interval: Duration,
    /// Bytes of user stack copied with each sample (a multiple of 8, at most 65,528).
    pub stack_bytes: u32,
    /// Wall mode: bytes of user stack copied with each context switch (a multiple of 8, at
    /// most [`RecordOptions::stack_bytes`]); see [`DEFAULT_SWITCH_STACK_BYTES`].
    pub switch_stack_bytes: u32,
    /// Frames kept per stack, from the leaf.
    pub max_depth: usize,
    /// What is sampled: [`Mode::Cpu`] (time on CPU, from perf rings), [`Mode::Wall`] (also
    /// each thread's time switched out, charged to the stack it blocked in) or [`Mode::Alloc`]
    /// (allocations, from an interposer library loaded with `LD_PRELOAD`: see
    /// [`RecordOptions::alloc_library`]). [`attach`] records CPU or wall time.
    pub mode: Mode,
    /// Whether to record kernel frames (and time in the kernel) too: needs
    /// `perf_event_paranoid` 1 or lower (or `CAP_PERFMON`). Alloc mode has none.
    pub kernel: bool,
    /// Alloc mode: the mean number of bytes allocated between samples of each thread.
    pub alloc_interval_bytes: u64,
    /// Alloc mode: the image of prof's allocation interposer (the `prof-preload` crate's
    /// `cdylib`), which the `prof` binary embeds.
    pub alloc_library: Option<&'static [u8]>,
    /// How long to record at most. [`record`] then leaves the command running, untouched
    /// ([`Ending::command_exited`] is `None` and [`Recording::status`] a success); [`attach`]
    /// records until Ctrl-C or the process's end when `None`.
    pub duration: Option<Duration>,
    /// [`record`] only: go on after the command has exited, until every process it started
    /// (through any number of forks, a daemon that called `setsid` included) has exited too, or
    /// Ctrl-C, SIGTERM or SIGHUP (one received while the command ran ends the recording at the
    /// command's exit), or [`RecordOptions::duration`]. Without it the recording ends when the
    /// command exits: what its descendants did until then is kept, and those still running
    /// are listed in [`Ending::left_running`].
    pub follow_descendants: bool,
    /// [`attach`] only: also the processes it has started and starts (else only its threads).
    pub children: bool,
    /// Regular expressions (each found anywhere in a name): every function of the program and
    /// of the libraries it links whose demangled name one matches has its calls counted
    /// exactly, by the kernel (uprobes: root or `CAP_PERFMON`), into
    /// [`Session::counted`](prof_session::session::Session::counted). CPU and wall mode.
    pub calls: Vec<String>,
    /// The most functions [`RecordOptions::calls`] may match ([`DEFAULT_CALLS_MAX`]): more is
    /// refused before the command runs, saying how many matched.
    pub calls_max: usize,
    /// Also record each entry into and return from the counted functions, timing every call:
    /// [`CountedFunction::timed`] gives their total and self time, and the calls are spans on
    /// the session's timeline (the scopes model: [`Session::scopes`](prof_session::session::Session::scopes)),
    /// each sample in the innermost call open on its thread. A return probe puts the kernel's
    /// trampoline in place of each timed call's return address while it runs: prof unwinds its
    /// samples past it (x86_64), but a program that reads its own stack then sees it.
    pub calls_timed: bool,
}

impl Default for RecordOptions {
    fn default() -> Self {
        RecordOptions {
            interval: crate::options::DEFAULT_INTERVAL,
            stack_bytes: DEFAULT_STACK_BYTES,
            switch_stack_bytes: DEFAULT_SWITCH_STACK_BYTES,
            max_depth: crate::options::DEFAULT_MAX_DEPTH,
            mode: Mode::Cpu,
            kernel: true,
            alloc_interval_bytes: crate::options::DEFAULT_ALLOC_INTERVAL_BYTES,
            alloc_library: None,
            duration: None,
            children: false,
            follow_descendants: false,
            calls: Vec::new(),
            calls_max: DEFAULT_CALLS_MAX,
            calls_timed: false,
        }
    }
}

/// What a recording gave.
#[derive(Debug)]
pub struct Recording {
    /// The profile.
    pub report: Report,
    /// How the command ended (a success when it still ran at the recording's end: see
    /// [`Ending::command_exited`]; always a success for [`attach`]).
    pub status: ExitStatus,
    /// Why the recording ended, and what was still running then.
    pub ending: Ending,
    /// Samples whose stack reaches one of [`THREAD_ROOTS`].
    pub reached_root: u64,
    /// The processes that could not be sampled after an `exec` (of a set-uid or set-gid
    /// program), with why: the reason they have no samples.
    pub unsampled: Vec<UnsampledExec>,
    /// Alloc mode: the processes seen running after they closed prof's channel (whose later
    /// allocations were not sampled), in the order seen; empty in the other modes.
    pub channel_closed: Vec<ChannelClosed>,
    /// Wall mode: samples whose switch-out stack ran past its copy and was completed from
    /// another stack of its thread (see [`RecordOptions::switch_stack_bytes`]); 0 in the
    /// others.
    pub stitched: u64,
}

/// Why a recording ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EndedBy {
    /// The command exited ([`record`] without [`RecordOptions::follow_descendants`]).
    CommandExited,
    /// Every process recorded had exited: the command and all it started (with
    /// [`RecordOptions::follow_descendants`]), the attached process (and its children).
    AllExited,
    /// [`RecordOptions::duration`] had passed.
    Duration,
    /// Ctrl-C, SIGTERM or SIGHUP: at once for [`attach`]; for [`record`] with
    /// [`RecordOptions::follow_descendants`], once the command had exited.
    Interrupted,
}

/// How a recording ended: why, when the command exited, and what it left running.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Ending {
    /// Why.
    pub by: EndedBy,
    /// [`record`]: when the command exited, from the recording's start; `None` when it still
    /// ran at the recording's end (after [`RecordOptions::duration`]: it runs on, untouched),
    /// and for [`attach`].
    pub command_exited: Option<Duration>,
    /// The processes the command started that still ran when the recording ended, in the order
    /// they started; their samples end there. They are not signalled or waited for.
    pub left_running: Vec<Running>,
}

/// A process still running at the end of a recording.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Running {
    /// Its pid.
    pub pid: u32,
    /// Its name (its main thread's, as the kernel names it: at most 15 bytes).
    pub name: String,
}

/// A process that closed prof's channel (alloc mode) while it ran.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ChannelClosed {
    /// Its pid.
    pub pid: u32,
    /// When prof saw it, from the recording's start (within a tenth of a second after it
    /// closed the channel).
    pub after: Duration,
}

/// Runs `command`, sampling every thread of it and of every process it starts, until it exits
/// (with [`RecordOptions::follow_descendants`], until they all have; at most
/// [`RecordOptions::duration`]). Fails before the command runs when the kernel refuses the
/// events ([`Error::PerfRefused`]).
pub fn record(command: Command, options: &RecordOptions) -> Result<Recording> {
    let stack_bytes = options.stack_bytes.min(65_528) & !7;
    if options.interval.is_zero() {
        return Err(Error::InvalidOption("the interval must be above 0".into()));
    }
    let wall = match options.mode {
        Mode::Cpu => false,
        Mode::Wall => true,
        Mode::Alloc if !options.calls.is_empty() => {
            return Err(Error::Calls(
                "counts calls in CPU and wall mode, not with --mode alloc".into(),
            ));
        }
        Mode::Alloc => {
            let Some(image) = options.alloc_library else {
                return Err(Error::InvalidOption(
                    "alloc mode needs the allocation interposer's image (RecordOptions::alloc_library)"
                        .into(),
                ));
            };
            let options = RecordOptions {
                stack_bytes,
                ..options.clone()
            };
            return interposer::record(command, &options, image);
        }
        // `Mode` may grow (it is the session model's, in another crate).
        mode => {
            return Err(Error::InvalidOption(format!(
                "prof record has no {} mode",
                mode.name()
            )))
        }
    };
    let program = command.get_program().to_string_lossy().into_owned();
    let program_os = command.get_program().to_owned();
    let args = command
        .get_args()
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    let spawn_error = |source| Error::Spawn {
        program: program.clone(),
        source,
    };
    // The functions to count are found before the command starts (a pattern that matches none
    // or too many is refused without running anything).
    let probes = if options.calls.is_empty() {
        None
    } else {
        let files = prof_capture::calls::command_files(&command).unwrap_or_default();
        Some(prof_capture::calls::CallProbes::find(
            &files,
            &options.calls,
            options.calls_max,
        )?)
    };
    let held = sys::spawn_held(command).map_err(spawn_error)?;
    let pid = held.pid;
    let event = RingEvent {
        period_ns: u64::try_from(options.interval.as_nanos()).unwrap_or(u64::MAX),
        regs_mask: REGS_MASK,
        stack_bytes,
        watermark: (RING_PAGES * 4096 / 4) as u32,
        kernel: options.kernel,
        // Wall mode needs the kernel's permission anyway: a thread's time in system calls is
        // running time, on the user stack that made the call when frames are user only.
        kernel_time: options.kernel || wall,
        attach: false,
        read: false,
    };
    let event = RingEvent {
        read: counts_per_thread(&event),
        ..event
    };
    let switch_event = switch_event(&event, options);
    let mut rings = Vec::new();
    // The context-switch events of wall mode, writing to the rings (kept open while recording).
    let mut switch_events = Vec::new();
    for cpu in sys::online_cpus() {
        let ring = sys::perf_event_ring(pid, cpu, &event)
            .and_then(map_ring)
            .map_err(|e| refused(e, event.kernel, wall))
            .and_then(|ring| {
                if wall {
                    let fd = sys::perf_switch_event(pid, cpu, &switch_event, &ring);
                    switch_events.push(fd.map_err(|e| refused(e, event.kernel, true))?);
                }
                Ok(ring)
            });
        match ring {
            Ok(ring) => rings.push(ring),
            Err(e) => {
                held.abandon();
                return Err(e);
            }
        }
    }
    let counters = match probes.map(|p| {
        let mut counters = p.counters(options.calls_timed)?;
        counters.open_on(pid, false)?;
        Ok(counters)
    }) {
        None => None,
        Some(Ok(counters)) => Some(counters),
        Some(Err(e)) => {
            held.abandon();
            return Err(e);
        }
    };
    let start_time = SystemTime::now();
    // Before `started`: the recording lasts at least `duration` by either clock.
    let start_ns = sys::monotonic_ns();
    let started = Instant::now();
    let mut child = held.release().map_err(spawn_error)?;
    // Ctrl-C is the command's to act on, as without prof; prof saves what it has at its end.
    sys::note_terminal_interrupts();
    // SIGTERM or SIGHUP sent to prof alone goes on to the command; prof saves at its end.
    sys::catch_ending_signals();
    let mut rec = Recorder::new(pid, options.max_depth, event.read);
    rec.wall = wall.then(|| switch::Switches::new(switch_event.stack_bytes));
    rec.execs = privileged::Execs::for_command(pid, &program_os, access::Creds::own().as_ref());
    rec.cut_at_command_exit = !options.follow_descendants;
    rec.start_ns = Some(start_ns);
    rec.calls = counters;
    let until = options.duration.map(|d| started + d);
    let mut status = None;
    let mut wait_error = None;
    let mut by = EndedBy::CommandExited;
    drain_until(&mut rings, &mut rec, |rec| {
        if status.is_none() {
            // Before the wait: an unreaped child's pid is still its own.
            sys::forward_ending_signals(pid);
            match child.try_wait() {
                Ok(s) => status = s,
                Err(source) => {
                    wait_error = Some(Error::Os {
                        call: "waitpid",
                        source,
                    });
                    return true;
                }
            }
        }
        let exited = status.is_some();
        let end = if until.is_some_and(|t| Instant::now() >= t) {
            Some(EndedBy::Duration)
        } else if exited && !options.follow_descendants {
            Some(EndedBy::CommandExited)
        } else if exited && (sys::interrupted() || sys::ending_signal_arrived()) {
            Some(EndedBy::Interrupted)
        } else if exited && rec.descendants_gone() {
            Some(EndedBy::AllExited)
        } else {
            None
        };
        let Some(end) = end else {
            return false;
        };
        by = end;
        // Nothing after this moment is kept (nor, without `follow_descendants`, after the
        // command's last thread exited, when its records said when).
        rec.end_at(sys::monotonic_ns());
        true
    });
    if let Some(e) = wait_error {
        return Err(e);
    }
    // The calls until now, the recording's end (what still runs is counted no more).
    let counted = rec.counted();
    // What still runs is sampled no more.
    drop(switch_events);
    drop(rings);
    let ending = rec.ending(by, start_ns, status.is_some());
    // Still running after `duration`: it runs on, and prof ends as if it had succeeded.
    let status = status.unwrap_or_else(|| ExitStatus::from_raw(0));
    let timer = if wall {
        "perf_event_ring+context_switches"
    } else {
        "perf_event_ring"
    };
    let mut meta = prof_capture::assemble::at_start(options.mode, event.period_ns, timer);
    meta.program = program;
    meta.args = args;
    meta.pid = pid;
    Ok(finish(
        rec, meta, start_time, started, status, ending, counted,
    ))
}

/// How many of the latest samples are searched for one whose stack a later sample completed
/// (see `Recorder::sample`): a thread's next complete stack comes soon after its cut one.
const LATER_WITHIN: usize = 100_000;

/// Records handled between two copies of the rings while a drain handles its records (see
/// `Recorder::drain`).
const FETCH_EVERY: usize = 256;

/// Copies out what the rings hold, appending to `buffers`, as long as each ring's buffer holds
/// less than four times the ring (past that prof is behind for good, and the ring fills and
/// counts its losses rather than prof's memory growing without end).
fn fetch(rings: &mut [PerfRing], buffers: &mut [Vec<u8>]) {
    for (ring, buf) in rings.iter_mut().zip(buffers.iter_mut()) {
        if buf.len() < 4 * ring.data_bytes() {
            ring.drain(buf);
        }
    }
}

/// The context-switch event of wall mode: `event`'s, with the stack copy of
/// [`RecordOptions::switch_stack_bytes`].
fn switch_event(event: &RingEvent, options: &RecordOptions) -> RingEvent {
    RingEvent {
        stack_bytes: options.switch_stack_bytes.min(event.stack_bytes) & !7,
        ..*event
    }
}

/// Reads the rings into `rec` until `done` (asked before each drain) says the recording is
/// over; the last drain handles every record read.
fn drain_until(
    rings: &mut [PerfRing],
    rec: &mut Recorder,
    mut done: impl FnMut(&mut Recorder) -> bool,
) {
    // Rings smaller than asked for (see `map_ring`) are read more often, down to every 0.5 ms.
    let smallest = rings.iter().map(PerfRing::data_bytes).min().unwrap_or(0);
    let full_size = RING_PAGES * 4096;
    let pause = (DRAIN_EVERY * smallest.min(full_size) as u32 / full_size as u32)
        .max(Duration::from_micros(500));
    let mut buffers: Vec<Vec<u8>> = vec![Vec::new(); rings.len()];
    loop {
        let quiet = done(rec);
        if quiet {
            // Every record stamped before now is written by the time the last drain reads.
            std::thread::sleep(Duration::from_nanos(WRITE_MARGIN_NS));
        }
        let fullest = rec.drain(rings, &mut buffers, quiet);
        if quiet {
            break;
        }
        // A ring an eighth full in one interval is filling fast (many threads, a high rate):
        // read again at once rather than let it overflow.
        if fullest < smallest / 8 {
            std::thread::sleep(pause);
        }
    }
}

/// The recording: `meta` (program, arguments, pid) completed with the times and the samples,
/// and the functions whose calls were `counted` (with the calls their `timer` kept).
fn finish(
    mut rec: Recorder,
    mut meta: Metadata,
    start_time: SystemTime,
    started: Instant,
    status: ExitStatus,
    ending: Ending,
    (counted, timer): (Vec<CountedFunction>, Option<CallTimer>),
) -> Recording {
    meta.start_time_ns = Some(prof_capture::assemble::start_time_ns(start_time));
    // To the recording's end when it is known (not to this moment, after the last drain).
    meta.duration_ns = match (rec.start_ns, rec.end) {
        (Some(start), Some(end)) => end.saturating_sub(start),
        _ => u64::try_from(started.elapsed().as_nanos()).unwrap_or(u64::MAX),
    };
    let unsampled = std::mem::take(&mut rec.execs).finish(rec.lost);
    let stitched = rec.wall.as_ref().map_or(0, |w| w.stitched);
    let mut session = rec.finish(meta, &counted, timer.as_ref());
    session.counted = counted;
    let reached_root = reached_root(&session);
    Recording {
        report: Report::new(session),
        status,
        ending,
        reached_root,
        unsampled,
        channel_closed: Vec::new(),
        stitched,
    }
}

/// Makes Ctrl-C end prof again once a recording is saved (a recording leaves it to the
/// command, or catches it to save): before serving the session, for example.
pub fn interrupts_end_prof() {
    sys::default_interrupts();
}

/// Whether this kernel gives each sample of an inherited ring event (`event`'s kind) its
/// thread's own count (`PERF_SAMPLE_READ`, Linux 6.12 and later): tried on an event of this
/// process that is never enabled, closed at once.
fn counts_per_thread(event: &RingEvent) -> bool {
    let probe = RingEvent {
        read: true,
        attach: false,
        stack_bytes: 8,
        ..*event
    };
    let cpu = sys::online_cpus().first().copied().unwrap_or(0);
    sys::perf_event_ring(std::process::id(), cpu, &probe).is_ok()
}

/// The error for a refused `perf_event_open` (of an event with the `kernel`'s frames, or in
/// wall mode, whose context `switches` and time count in the kernel): a permission error names
/// the sysctl and the value it needs (1 for the kernel's frames or wall mode, 2 for user space
/// only).
fn refused(e: Error, kernel: bool, switches: bool) -> Error {
    match e {
        Error::Os {
            call: "perf_event_open",
            source,
        } if matches!(source.raw_os_error(), Some(libc::EACCES | libc::EPERM)) => {
            let paranoid = std::fs::read_to_string("/proc/sys/kernel/perf_event_paranoid")
                .map(|s| s.trim().to_owned())
                .unwrap_or_else(|_| "unknown".into());
            let (what, needed) = if switches {
                ("wall mode (it samples the scheduler's context switches)", 1)
            } else if kernel {
                (
                    "recording kernel frames (--user-only records without them)",
                    1,
                )
            } else {
                ("recording one's own programs", 2)
            };
            Error::PerfRefused {
                paranoid,
                what,
                needed,
                source,
            }
        }
        e => e,
    }
}

/// The ring index the records of counted calls are handled with (they have rings of their own,
/// and no sample of the task clock's).
const CALL_RING: usize = usize::MAX;

/// The period of a context switch's sample (see `sys::perf_switch_event`).
const SWITCH_PERIOD: u64 = 1;

/// One sample, its stack in its process's table.
struct Sample {
    /// The index of its process (an address space: a pid's each `exec` starts another).
    process: usize,
    tid: u32,
    time: u64,
    period: u64,
    stack: u32,
    /// Wall mode's running/waiting column.
    state: Option<SampleState>,
}

impl Sample {
    /// Thread `tid`'s interval off CPU `off`.
    fn off_cpu(tid: u32, off: switch::OffCpu) -> Sample {
        Sample {
            process: off.process,
            tid,
            time: off.time,
            period: off.weight,
            stack: off.stack,
            state: Some(off.state),
        }
    }
}

/// The state of a recording: the processes, threads and samples seen so far.
struct Recorder {
    child: u32,
    max_depth: usize,
    /// Every address space seen: a process from its start or `exec` to its next `exec` or end.
    processes: Vec<Process>,
    /// The unwind sections of the files the processes map, read once for all of them.
    sections: SectionCache,
    /// Each pid's current address space, an index in `processes`.
    current: HashMap<u32, usize>,
    /// Processes started (FORK with a new pid) and not yet ended (EXIT of their main thread),
    /// in the order they started.
    live: Vec<u32>,
    /// The command's threads not yet ended (its main thread, then those FORK records add).
    command_threads: HashSet<u32>,
    /// When the command's last thread ended (its EXIT record's time).
    command_exit: Option<u64>,
    /// Whether records after `command_exit` are dropped (the recording ends there).
    cut_at_command_exit: bool,
    /// When the command started ([`record`]; `CLOCK_MONOTONIC`).
    start_ns: Option<u64>,
    /// Records after this time are dropped: the recording's end, once known.
    end: Option<u64>,
    /// Every record before this time has been handled (the last drain's bound).
    horizon: u64,
    /// How many processes FORK records have started.
    forks: u64,
    /// A look at `/proc` that found every process started gone: when (after the look), and
    /// how many had been started then (see [`Recorder::descendants_gone`]).
    gone_look: Option<(u64, u64)>,
    /// Each thread's name (from COMM), and each process's (its main thread's) by pid.
    names: HashMap<u32, String>,
    segments: HashMap<String, Option<process::Segments>>,
    samples: Vec<Sample>,
    /// Records read but not yet handled, with the index of their ring (see
    /// [`Recorder::drain`]).
    pending: Vec<(usize, Record)>,
    /// Whether samples carry their event's count ([`counts_per_thread`]).
    read: bool,
    /// The count at each thread's last task-clock sample, by ring (the thread's own copy of
    /// the event on each CPU counts from 0).
    counts: HashMap<u32, Vec<u64>>,
    /// The processes for the session's table.
    table: processes::ProcessTable,
    /// [`attach`]: the processes recorded (records of others are dropped), and whether the
    /// processes they start join them; `None` records everything (`record`).
    keep: Option<HashSet<u32>>,
    follow_children: bool,
    lost: u64,
    first_time: Option<u64>,
    /// Wall mode's threads switched out (`None` in CPU mode).
    wall: Option<switch::Switches>,
    /// The task clock's samples and their periods' sum.
    clock: (u64, u64),
    jit: jit::JitCode,
    /// The `exec`s nothing has followed yet.
    execs: privileged::Execs,
    /// The counted functions' events (`--calls`), and with `--calls-timed` their entries and
    /// returns paired into timed calls, from `call_bytes` read off their rings.
    calls: Option<CallCounters>,
    call_bytes: Vec<u8>,
}

impl Recorder {
    fn new(child: u32, max_depth: usize, read: bool) -> Recorder {
        Recorder {
            child,
            max_depth,
            processes: Vec::new(),
            sections: SectionCache::default(),
            current: HashMap::new(),
            live: Vec::new(),
            command_threads: HashSet::from([child]),
            command_exit: None,
            cut_at_command_exit: false,
            start_ns: None,
            end: None,
            horizon: 0,
            forks: 0,
            gone_look: None,
            names: HashMap::new(),
            segments: HashMap::new(),
            samples: Vec::new(),
            pending: Vec::new(),
            read,
            counts: HashMap::new(),
            table: processes::ProcessTable::default(),
            keep: None,
            follow_children: false,
            lost: 0,
            first_time: None,
            wall: None,
            clock: (0, 0),
            jit: jit::JitCode::default(),
            execs: privileged::Execs::default(),
            calls: None,
            call_bytes: Vec::new(),
        }
    }

    /// The counted functions' calls until now (the recording's end: what still runs is counted
    /// no more), timed when their calls were, and the timer with the calls it kept; their
    /// events are closed.
    fn counted(&mut self) -> (Vec<CountedFunction>, Option<CallTimer>) {
        self.calls
            .take()
            .map(CallCounters::finish)
            .unwrap_or_default()
    }

    /// True when no process the command started is still running (or, for [`attach`], no
    /// process recorded), by `/proc`: those whose FORK records have been handled.
    fn others_gone(&mut self) -> bool {
        self.live.retain(|&pid| {
            std::fs::read_to_string(format!("/proc/{pid}/stat"))
                .ok()
                .and_then(|s| {
                    s.rsplit_once(')')
                        .map(|(_, rest)| rest.trim_start().to_owned())
                })
                .is_some_and(|rest| !rest.starts_with('Z') && !rest.starts_with('X'))
        });
        self.live.iter().all(|&p| p == self.child)
    }

    /// True when no process the command started can still run: a look at `/proc` found every
    /// one known gone, every record older than that look has been handled since, and none of
    /// them started another process (a process started before the look by one that ended
    /// before it is known only from a record not yet handled at the look). After that nothing
    /// can start one any more.
    fn descendants_gone(&mut self) -> bool {
        if let Some((at, forks)) = self.gone_look {
            if self.horizon < at {
                return false;
            }
            if self.forks == forks {
                return true;
            }
            self.gone_look = None;
        }
        if self.others_gone() {
            self.gone_look = Some((sys::monotonic_ns(), self.forks));
        }
        false
    }

    /// Ends the recording at `time` (`CLOCK_MONOTONIC`) at the latest: later records are
    /// dropped.
    fn end_at(&mut self, time: u64) {
        self.end = Some(self.end.map_or(time, |end| end.min(time)));
    }

    /// How the recording ended, `by` what, after the last drain: when the command exited
    /// (`exited`: it was reaped; `start_ns` is when it started), and the processes it started
    /// that still run.
    fn ending(&mut self, by: EndedBy, start_ns: u64, exited: bool) -> Ending {
        let command_exited = exited.then(|| {
            let at = self.command_exit.or(self.end).unwrap_or(start_ns);
            Duration::from_nanos(at.saturating_sub(start_ns))
        });
        self.others_gone();
        let left_running = self
            .live
            .iter()
            .filter(|&&pid| pid != self.child)
            .map(|&pid| Running {
                pid,
                // Its name now (the records after the end, an `exec`'s among them, were not
                // read), else the last its records gave.
                name: std::fs::read_to_string(format!("/proc/{pid}/comm"))
                    .map(|n| n.trim_end_matches('\n').to_owned())
                    .ok()
                    .or_else(|| self.names.get(&pid).cloned())
                    .unwrap_or_default(),
            })
            .collect();
        Ending {
            by,
            command_exited,
            left_running,
        }
    }

    /// The index of `pid`'s current address space (a new one for a pid not seen before).
    fn process(&mut self, pid: u32) -> usize {
        match self.current.get(&pid) {
            Some(&i) => i,
            None => self.start_process(pid, Vec::new()),
        }
    }

    /// Starts a new address space for `pid` with `objects` mapped (at `fork` or `exec`).
    fn start_process(
        &mut self,
        pid: u32,
        objects: Vec<prof_capture::symbolize::LoadedObject>,
    ) -> usize {
        let mut process = Process::default();
        process.inherit(objects);
        self.processes.push(process);
        let i = self.processes.len() - 1;
        if let Some(before) = self.current.insert(pid, i) {
            // An `exec` ends the address space it replaces.
            self.processes[before].release();
        }
        i
    }

    /// Reads what every ring holds and handles, in time order, the records older than the
    /// start of this drain (all of them when `last`). The rings are per CPU: a sample read from
    /// one can be newer than a mapping not yet read from another, so a record waits until every
    /// ring has been read past its time. While handling, the rings are copied out again every
    /// [`FETCH_EVERY`] records (into `buffers`, read at the next drain), so that they do not
    /// fill while prof unwinds: at thousands of context switches a second a drain's records
    /// take longer to handle than a ring takes to fill.
    /// Returns the most bytes one ring held.
    fn drain(&mut self, rings: &mut [PerfRing], buffers: &mut [Vec<u8>], last: bool) -> usize {
        let began = sys::monotonic_ns();
        let regs = REGS_MASK.count_ones() as usize;
        for (ring, buf) in rings.iter_mut().zip(buffers.iter_mut()) {
            ring.drain(buf);
        }
        let fullest = buffers.iter().map(Vec::len).max().unwrap_or(0);
        for (ring, buf) in buffers.iter().enumerate() {
            records::parse_all(buf, regs, self.read, |r| {
                self.table.read(&r);
                self.execs.read(&r);
                self.pending.push((ring, r));
            });
        }
        buffers.iter_mut().for_each(Vec::clear);
        if let Some(calls) = &mut self.calls {
            calls.drain(&mut self.call_bytes);
            let pending = &mut self.pending;
            let lost = records::parse_calls(&self.call_bytes, |c| {
                pending.push((CALL_RING, Record::Call(c)));
            });
            self.call_bytes.clear();
            calls.lost(lost);
        }
        self.pending.sort_by_key(|(_, r)| r.time());
        let upto = if last {
            u64::MAX
        } else {
            began.saturating_sub(WRITE_MARGIN_NS)
        };
        let ready = self.pending.partition_point(|(_, r)| r.time() < upto);
        let ready: Vec<(usize, Record)> = self.pending.drain(..ready).collect();
        for (i, (ring, r)) in ready.into_iter().enumerate() {
            self.handle(ring, r);
            if !last && i % FETCH_EVERY == FETCH_EVERY - 1 {
                fetch(rings, buffers);
            }
        }
        self.horizon = self.horizon.max(upto);
        fullest
    }

    /// False for a record of a process not recorded ([`attach`] without `children`, a
    /// process the attached one started); a process started by a recorded one joins them
    /// when `follow_children`.
    fn wanted(&mut self, r: &Record) -> bool {
        let Some(keep) = &mut self.keep else {
            return true;
        };
        match *r {
            Record::Fork { pid, ppid, .. } if pid != ppid => {
                if self.follow_children && keep.contains(&ppid) {
                    keep.insert(pid);
                }
                keep.contains(&pid)
            }
            Record::Sample(ref s) => keep.contains(&s.pid),
            Record::Switch { pid, .. }
            | Record::Mmap { pid, .. }
            | Record::Comm { pid, .. }
            | Record::Fork { pid, .. }
            | Record::Exit { pid, .. }
            | Record::Call(CallRecord { pid, .. }) => keep.contains(&pid),
            Record::Lost { .. } | Record::Other => true,
        }
    }

    /// Unwinds a sample's copied stack in its process's address space and keeps it: a task
    /// clock's sample, or in wall mode a context switch's (whose stack the thread's time
    /// switched out is charged to). A task-clock sample read from ring `ring` weighs the CPU
    /// time its thread spent on that ring's CPU since its previous sample there, when samples
    /// carry their count: the period alone comes short of the thread's CPU time on a busy
    /// machine, where the kernel's timer fires late and the periods it skipped are not sampled.
    fn sample(&mut self, ring: usize, mut s: SampleRecord) {
        // A context switch's sample (task-clock periods are at least 10 µs).
        let switch = self.wall.is_some() && s.period == SWITCH_PERIOD;
        let weight = match s.read {
            Some(count) if !switch => {
                let counts = self.counts.entry(s.tid).or_default();
                if counts.len() <= ring {
                    counts.resize(ring + 1, 0);
                }
                records::count_since(std::mem::replace(&mut counts[ring], count), count)
            }
            _ => s.period,
        };
        if weight == 0 && !switch {
            return;
        }
        let Some(regs) = regs_of(&s.regs) else {
            // An exiting thread's last switch has no user registers left to copy.
            self.lost += u64::from(!switch);
            return;
        };
        self.first_time.get_or_insert(s.time);
        // The return addresses of timed calls still open, where the kernel put its trampoline's.
        if let Some(timer) = self.calls.as_ref().and_then(CallCounters::timer) {
            timer.restore(s.tid, regs.sp, &mut s.stack);
        }
        let copied = CopiedStack {
            sp: regs.sp,
            bytes: &s.stack,
        };
        // A switch-out's copy ends where it was asked to stop, when the stack went on.
        let full = self
            .wall
            .as_ref()
            .is_some_and(|w| switch && s.stack.len() == w.copy_bytes);
        let thread = process::Sampled {
            tid: s.tid,
            time: s.time,
            copy_end: full.then(|| regs.sp.wrapping_add(s.stack.len() as u64)),
            may_stitch: switch,
        };
        let process = self.process(s.pid);
        let jit = self.jit.ranges(process);
        let (stack, completed) = self.processes[process].unwind(
            &mut self.sections,
            &s.kernel,
            regs,
            &copied,
            self.max_depth,
            jit,
            thread,
        );
        if let Some(wall) = &mut self.wall {
            // Earlier switch-outs of the thread whose cut stacks this one completed.
            for (tid, time, stack) in self.processes[process].take_later() {
                let at = self.samples.iter_mut().rev().take(LATER_WITHIN).find(|o| {
                    (o.tid, o.time, o.process) == (tid, time, process) && o.state.is_some()
                });
                let restacked = match at {
                    Some(sample) => {
                        sample.stack = stack;
                        true
                    }
                    None => wall.restack(tid, time, process, stack),
                };
                wall.stitched += u64::from(restacked);
            }
        }
        if let (true, Some(wall)) = (switch, &mut self.wall) {
            wall.stitched += u64::from(completed == stitch::Completed::Stitched);
            wall.sampled(s.tid, s.time, process, stack);
            return;
        }
        self.clock = (self.clock.0 + 1, self.clock.1 + weight);
        self.samples.push(Sample {
            process,
            tid: s.tid,
            time: s.time,
            period: weight,
            stack,
            state: self.wall.is_some().then_some(SampleState::Running),
        });
    }

    fn handle(&mut self, ring: usize, r: Record) {
        // A LOST record (time 0) counts whenever it comes.
        if !self.wanted(&r) || self.end.is_some_and(|end| r.time() > end) {
            return;
        }
        self.table.handle(&r);
        self.execs.handle(&r);
        match r {
            Record::Sample(s) => self.sample(ring, s),
            Record::Mmap {
                pid,
                addr,
                len,
                pgoff,
                prot,
                filename,
                ..
            } => {
                if prot & libc::PROT_EXEC as u32 != 0 {
                    let process = self.process(pid);
                    if jit::is_anonymous(&filename) {
                        self.jit.mapped(process, pid, addr..addr + len);
                    }
                    self.processes[process].map(&filename, addr, len, pgoff, &mut self.segments);
                }
            }
            Record::Comm {
                pid,
                tid,
                exec,
                name,
                ..
            } => {
                if exec {
                    self.start_process(pid, Vec::new());
                }
                self.names.insert(tid, name);
            }
            Record::Fork { pid, ppid, tid, .. } => {
                if pid == self.child {
                    self.command_threads.insert(tid);
                }
                if pid != ppid {
                    self.forks += 1;
                    if !self.live.contains(&pid) {
                        self.live.push(pid);
                    }
                    // A child process starts with its parent's mappings.
                    let objects = match self.current.get(&ppid) {
                        Some(&parent) => self.processes[parent].objects.clone(),
                        None => Vec::new(),
                    };
                    self.start_process(pid, objects);
                }
                if let Some(name) = self.names.get(&ppid).cloned() {
                    self.names.entry(tid).or_insert(name);
                }
            }
            Record::Exit { pid, tid, time } => {
                // A new thread given this id counts from 0 again.
                self.counts.remove(&tid);
                if let Some(calls) = &mut self.calls {
                    calls.thread_ended(tid);
                }
                if let Some(&process) = self.current.get(&pid) {
                    self.processes[process].thread_ended(tid);
                }
                if pid == tid {
                    self.live.retain(|&p| p != pid);
                    if let Some(&i) = self.current.get(&pid) {
                        self.processes[i].release();
                    }
                }
                if pid == self.child
                    && self.command_threads.remove(&tid)
                    && self.command_threads.is_empty()
                {
                    self.command_exit = Some(time);
                    if self.cut_at_command_exit {
                        self.end_at(time);
                    }
                }
            }
            Record::Switch {
                tid,
                time,
                out,
                preempt,
                ..
            } => {
                let off = self
                    .wall
                    .as_mut()
                    .and_then(|w| w.switched(tid, time, out, preempt));
                if let Some(off) = off {
                    self.samples.push(Sample::off_cpu(tid, off));
                }
            }
            Record::Call(c) => {
                if let Some(calls) = &mut self.calls {
                    calls.record(&c);
                }
            }
            Record::Lost { lost } => self.lost += lost,
            Record::Other => {}
        }
    }

    /// The session: each process's stacks symbolized against its own objects, and with
    /// `--calls-timed` the calls `timer` kept of the `counted` functions as spans.
    fn finish(
        mut self,
        mut meta: Metadata,
        counted: &[CountedFunction],
        timer: Option<&CallTimer>,
    ) -> Session {
        // Nothing is unwound from here on: the unwind tables go before the symbols come in.
        self.sections = SectionCache::default();
        for process in &mut self.processes {
            process.release();
        }
        meta.dropped_samples = self.lost;
        meta.achieved_interval_ns = self.clock.1.checked_div(self.clock.0).unwrap_or(0);
        let mut builder = SessionBuilder::new(meta);
        let owners = std::mem::take(&mut self.table).build(&mut builder);
        let mut ids = Vec::new();
        let kernel = kernel::kernel_ranges(
            self.processes
                .iter()
                .flat_map(|p| p.stacks.iter().map(|s| &s[..])),
        );
        for (i, process) in self.processes.iter().enumerate() {
            prof_capture::assemble::add_mappings(&mut builder, &process.objects);
            let jit = self.jit.object(i, &process.stacks);
            let objects = kernel::with_kernel(&process.objects, &process.stacks, &kernel, jit);
            let stack_ids = prof_capture::assemble::intern_stacks(
                &mut builder,
                &process.stacks,
                &objects,
                prof_capture::symbolize::AddressSpace::Other,
                prof_capture::assemble::Cut::depth(self.max_depth),
            );
            ids.push(stack_ids);
        }
        let first = match (self.first_time, timer.and_then(CallTimer::first_time)) {
            (Some(a), Some(b)) => a.min(b),
            (a, b) => a.or(b).unwrap_or(0),
        };
        let mut threads = HashMap::new();
        let mut thread_of = |builder: &mut SessionBuilder, tid: u32| {
            *threads.entry(tid).or_insert_with(|| {
                let name = self.names.get(&tid).map(String::as_str).unwrap_or("");
                let process = owners.get(&tid).copied().unwrap_or(ProcessIdx(0));
                builder.thread_in(process, u64::from(tid), name)
            })
        };
        let spans = timer.map(|timer| {
            let spans = calls::add_spans(&mut builder, timer, counted, first, &mut thread_of);
            builder.add_dropped_events(timer.spans_dropped());
            spans
        });
        for s in &self.samples {
            let Some(stack) = ids[s.process][s.stack as usize] else {
                continue;
            };
            let thread = thread_of(&mut builder, s.tid);
            builder.push_sample_full(
                stack,
                thread,
                s.time.saturating_sub(first),
                &[s.period, 1],
                1,
                s.state,
            );
            if let Some(spans) = &spans {
                builder.set_last_sample_context(spans.innermost(s.tid, s.time), None);
            }
        }
        builder.finish()
    }
}

/// How many samples of `session` have a stack that reaches one of [`THREAD_ROOTS`].
fn reached_root(session: &Session) -> u64 {
    let mut known: HashMap<usize, bool> = HashMap::new();
    let mut n = 0;
    for (i, &stack) in session.samples.stack.iter().enumerate() {
        let reaches = *known.entry(stack.index()).or_insert_with(|| {
            session
                .stack_frames(stack)
                .any(|f| THREAD_ROOTS.contains(&session.frame_name(f)))
        });
        if reaches {
            n += session.samples.multiplicity(i);
        }
    }
    n
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_refused_perf_event_names_the_paranoid_sysctl_in_one_line() {
        let denied = Error::Os {
            call: "perf_event_open",
            source: std::io::Error::from_raw_os_error(libc::EACCES),
        };
        let e = refused(denied, false, false);
        assert!(matches!(e, Error::PerfRefused { .. }), "{e:?}");
        let text = e.to_string();
        assert!(
            text.contains("/proc/sys/kernel/perf_event_paranoid is "),
            "{text}"
        );
        assert!(
            text.contains("sysctl kernel.perf_event_paranoid=2"),
            "{text}"
        );
        assert!(!text.contains('\n'));
        // Kernel frames (and wall mode's context switches, which count in the kernel) need 1.
        let denied = || Error::Os {
            call: "perf_event_open",
            source: std::io::Error::from_raw_os_error(libc::EACCES),
        };
        let text = refused(denied(), true, false).to_string();
        assert!(
            text.contains("kernel frames (--user-only records without them) needs 1 or lower")
                && text.contains("sudo sysctl kernel.perf_event_paranoid=1")
                && !text.contains('\n'),
            "{text}"
        );
        let text = refused(denied(), false, true).to_string();
        assert!(
            text.contains("wall mode (it samples the scheduler's context switches) needs 1")
                && !text.contains('\n'),
            "{text}"
        );
        // Other failures stay what they are.
        let other = Error::Os {
            call: "perf_event_open",
            source: std::io::Error::from_raw_os_error(libc::EMFILE),
        };
        assert!(matches!(refused(other, false, false), Error::Os { .. }));
    }

    /// Pids above the kernel's largest (`pid_max` is at most 2^22): no such process runs.
    const COMMAND: u32 = 1 << 23;

    #[test]
    fn the_recording_ends_at_the_exit_of_the_commands_last_thread_not_its_first() {
        let mut rec = Recorder::new(COMMAND, 8, false);
        rec.cut_at_command_exit = true;
        let (thread, child) = (COMMAND + 1, COMMAND + 2);
        let records = [
            Record::Fork {
                pid: COMMAND,
                ppid: COMMAND,
                tid: thread,
                time: 5,
            },
            Record::Fork {
                pid: child,
                ppid: COMMAND,
                tid: child,
                time: 6,
            },
            // The main thread ends first; the other runs on.
            Record::Exit {
                pid: COMMAND,
                tid: COMMAND,
                time: 10,
            },
            Record::Comm {
                pid: child,
                tid: child,
                time: 11,
                exec: true,
                name: "before".into(),
            },
            Record::Exit {
                pid: COMMAND,
                tid: thread,
                time: 20,
            },
            Record::Comm {
                pid: child,
                tid: child,
                time: 21,
                exec: true,
                name: "after".into(),
            },
            Record::Lost { lost: 3 },
        ];
        for r in records {
            rec.handle(0, r);
        }
        assert_eq!(rec.command_exit, Some(20));
        assert_eq!(rec.end, Some(20));
        // What the child did before the end is kept, not what it did after; losses count.
        assert_eq!(rec.names[&child], "before");
        assert_eq!(rec.lost, 3);
        let ending = rec.ending(EndedBy::CommandExited, 2, true);
        assert_eq!(ending.command_exited, Some(Duration::from_nanos(18)));
        // The child is no process that runs.
        assert_eq!(ending.left_running, []);
    }

    #[test]
    fn descendants_count_as_gone_only_once_every_record_older_than_the_look_is_handled() {
        let mut rec = Recorder::new(COMMAND, 8, false);
        let fork = |pid, time| Record::Fork {
            pid,
            ppid: COMMAND,
            tid: pid,
            time,
        };
        rec.handle(0, fork(COMMAND + 1, 1));
        rec.horizon = 2;
        // Not running: the look finds them gone, but records up to the look are not all read.
        assert!(!rec.descendants_gone());
        assert!(!rec.descendants_gone());
        // A process started before the look, read after it: another look is needed.
        rec.handle(0, fork(COMMAND + 2, 3));
        rec.horizon = u64::MAX;
        assert!(!rec.descendants_gone());
        assert!(rec.descendants_gone());
    }

    #[test]
    fn copied_stack_words_are_read_from_the_copy_and_nowhere_else() {
        let bytes: Vec<u8> = (0u8..24).collect();
        let stack = CopiedStack {
            sp: 0x1000,
            bytes: &bytes,
        };
        use prof_capture::unwind::StackWords;
        assert_eq!(
            stack.word(0x1008),
            Some(u64::from_ne_bytes([8, 9, 10, 11, 12, 13, 14, 15]))
        );
        assert_eq!(stack.word(0x0ff8), None);
        assert_eq!(stack.word(0x1011), None);
        assert_eq!(stack.word(u64::MAX), None);
    }
}
