//! `prof record --mode alloc -- CMD`: allocations of another program, sampled by bytes.
//!
//! The command starts with prof's interposer (`preload/`, a library the dynamic loader binds
//! before the C library) in `LD_PRELOAD`, loaded from an in-memory file of prof's. It samples
//! `malloc`, `calloc`, `realloc`, `posix_memalign` and the rest with a Poisson process over
//! bytes and sends each sample's registers and a copy of its stack over a socket; prof unwinds
//! the copies with the unwinder of the perf rings (`process::Process`), against the objects the
//! process's `/proc/self/maps` listed when the library loaded (and `/proc/PID/maps` read again
//! when a stack reaches an address in none of them, after a `dlopen`). Each sample weighs the
//! unbiased estimate the in-process alloc mode uses (`sampler::alloc::assemble::estimate`), and
//! counts as in use when its block was not freed by the end. No perf event is opened, so this
//! mode works at any `perf_event_paranoid`.
//!
//! A statically linked program loads no library: it is refused before it starts.
//!
//! What the program can see of prof, and for how long: the channel sits at a descriptor above
//! the program's range (`sys::preload_socket`), and the interposer checks its identity before
//! each record, so it never writes into a descriptor the program opened; the interposer takes
//! prof's variables out of the program's environment at load and gives them only to programs
//! started while prof still reads (`preload/src/env.rs`). The recording ends when the command
//! exits, as in CPU mode (what its processes sent before is still read; nothing sent after is
//! kept); with [`RecordOptions::follow_descendants`] prof waits, after the command's end, for
//! the processes it heard from that still hold the channel, wherever they went (a daemon that
//! left the session included): one that closed the channel is not waited for. A process seen
//! alive without the channel (it closed it) is reported in [`Recording::channel_closed`]: its
//! later allocations went unsampled.

use super::access::Creds;
use super::privileged::{program_path, Execs};
use super::process::{CopiedStack, Process, Segments};
use super::{reached_root, ChannelClosed, EndedBy, RecordOptions, Recording, Running};
use crate::report::Report;
use prof_capture::assemble::Cut;
use prof_capture::assemble::{estimate, is_allocator_frame, splitmix};
use prof_capture::sys::{self, Regs};
use prof_capture::unwind::dwarf::SectionCache;
use prof_session::session::{Metadata, Mode, SessionBuilder};
use prof_session::{Error, Result};
use std::collections::{HashMap, HashSet};
use std::ffi::OsStr;
use std::io::Read;
use std::os::fd::AsRawFd;
use std::os::unix::net::UnixStream;
use std::os::unix::process::ExitStatusExt;
use std::path::PathBuf;
use std::process::{Command, ExitStatus};
use std::time::{Duration, Instant, SystemTime};

// The wire format of `preload/src/lib.rs` (see its documentation).
const KIND_START: u32 = 1;
const KIND_FORK: u32 = 3;
const KIND_ALLOC: u32 = 4;
const KIND_FREE: u32 = 5;
const HEADER: usize = 24;
const ALLOC_FIXED: usize = HEADER + 6 * 8 + 16;

/// How the interposer's memory file is named in a maps file.
const MEMFD_PREFIX: &str = "/memfd:prof-preload";

/// How often one process's maps may be read again for a stack that left its known objects.
const REREAD_EVERY: Duration = Duration::from_millis(100);

/// How often prof looks at the processes it heard from (alive, holding the channel) while it
/// reads the channel.
const WATCH_EVERY: Duration = Duration::from_millis(100);

/// How often prof looks whether the command has exited, while it reads the channel: the
/// recording's end is at most this late.
const STATUS_EVERY: Duration = Duration::from_millis(10);

/// At the end, how long prof reads what the processes sent before it (what a sender blocked on
/// a full socket sends last), unless the socket falls quiet for [`STATUS_EVERY`] first.
const LAST_READ: Duration = Duration::from_millis(250);

/// How long a process whose channel ended may take to exit before it counts as having
/// closed the channel while running.
const EXIT_GRACE: Duration = Duration::from_millis(250);

/// Runs `command` with the interposer `image` preloaded and samples its allocations (and those
/// of every process it starts that keeps the environment).
pub fn record(command: Command, options: &RecordOptions, image: &[u8]) -> Result<Recording> {
    let program = command.get_program().to_string_lossy().into_owned();
    let args = command
        .get_args()
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    if let Some(path) = static_program(command.get_program()) {
        return Err(Error::InvalidOption(format!(
            "alloc mode needs a dynamically linked program (it loads its sampler with \
             LD_PRELOAD), and {} is statically linked",
            path.display()
        )));
    }
    let os = |call: &'static str| move |source| Error::Os { call, source };
    let library = sys::memory_file(c"prof-preload", image).map_err(os("memfd_create"))?;
    let library_path = format!("/proc/{}/fd/{}", std::process::id(), library.as_raw_fd());
    let (ours, theirs) = sys::preload_socket().map_err(os("socketpair"))?;
    let channel = Channel {
        fd: theirs.as_raw_fd(),
        link: std::fs::read_link(format!("/proc/self/fd/{}", theirs.as_raw_fd()))
            .map_err(os("readlink"))?,
    };
    let mut command = command;
    // `LIB:OLD` whenever the user set one, even empty: the interposer restores OLD exactly.
    let preload = match std::env::var_os("LD_PRELOAD") {
        Some(old) => {
            let mut v = std::ffi::OsString::from(&library_path);
            v.push(":");
            v.push(old);
            v
        }
        None => library_path.clone().into(),
    };
    command
        .env("LD_PRELOAD", preload)
        .env("PROF_ALLOC_LIB", &library_path)
        .env("PROF_ALLOC_FD", theirs.as_raw_fd().to_string())
        .env(
            "PROF_ALLOC_MEAN",
            options.alloc_interval_bytes.max(1).to_string(),
        )
        .env("PROF_ALLOC_STACK", options.stack_bytes.to_string())
        .env("PROF_ALLOC_PID", std::process::id().to_string());
    let start_time = SystemTime::now();
    let started = Instant::now();
    let program_os = command.get_program().to_owned();
    let mut child = command.spawn().map_err(|source| Error::Spawn {
        program: program.clone(),
        source,
    })?;
    let execs = Execs::for_command(child.id(), &program_os, Creds::own().as_ref());
    // Only the command's processes hold the other end now: the stream ends when the last ends.
    drop(theirs);
    // Ctrl-C is the command's to act on, as without prof; prof saves what it has at its end.
    sys::note_terminal_interrupts();
    // SIGTERM or SIGHUP sent to prof alone goes on to the command; prof saves at its end.
    sys::catch_ending_signals();
    let mut rec = Recorder::new(options.max_depth, library_path);
    // Reads wake at least this often to see whether the command exited and pass signals on,
    // however quiet the program is.
    let mut stream = UnixStream::from(ours);
    stream
        .set_read_timeout(Some(STATUS_EVERY))
        .map_err(os("setsockopt"))?;
    let follow = options.follow_descendants;
    let until = options.duration.map(|d| started + d);
    let mut watch = Watch::default();
    let mut status = None;
    let mut exited_after = None;
    let mut buf = Vec::new();
    let mut chunk = vec![0u8; 1 << 20];
    let mut watched = Instant::now();
    let mut checked = Instant::now();
    let mut done_looks = 0;
    let by = loop {
        // Not once the command is reaped: its pid could be another process's then.
        if status.is_none() {
            sys::forward_ending_signals(child.id());
        }
        let ended = read_once(&mut stream, &mut buf, &mut chunk, &mut rec)?.is_none();
        if status.is_none() && (ended || checked.elapsed() >= STATUS_EVERY) {
            checked = Instant::now();
            status = child.try_wait().map_err(os("waitpid"))?;
            if status.is_some() {
                exited_after = Some(started.elapsed());
                if !follow {
                    // The recording ends here: what was sent until now is read below.
                    rec.end_at(sys::monotonic_ns());
                    break EndedBy::CommandExited;
                }
            }
        }
        if until.is_some_and(|t| Instant::now() >= t) {
            rec.end_at(sys::monotonic_ns());
            break EndedBy::Duration;
        }
        if status.is_some() && (sys::interrupted() || sys::ending_signal_arrived()) {
            rec.end_at(sys::monotonic_ns());
            break EndedBy::Interrupted;
        }
        if !ended && watched.elapsed() < WATCH_EVERY {
            continue;
        }
        watched = Instant::now();
        watch.heard(rec.heard.drain(..));
        let waiting = watch.look(&channel, started.elapsed());
        if ended && status.is_none() && watch.closed.is_empty() {
            // Every holder let the channel go, the command among them. A process closes its
            // descriptors as it exits, a moment before it can be reaped: one that is still
            // running after [`EXIT_GRACE`] closed the channel itself.
            let after = started.elapsed();
            let grace = Instant::now();
            while status.is_none() && grace.elapsed() < EXIT_GRACE {
                std::thread::sleep(Duration::from_millis(5));
                status = child.try_wait().map_err(os("waitpid"))?;
            }
            if status.is_none() {
                watch.closed.push(ChannelClosed {
                    pid: child.id(),
                    after,
                });
            } else {
                exited_after = Some(started.elapsed());
            }
        }
        // Two looks in a row, so that what a process sent before the first (a child started
        // just before the command ended says it loaded) is read and that child looked at too.
        done_looks = if status.is_some() && !waiting {
            done_looks + 1
        } else {
            0
        };
        if ended || done_looks == 2 {
            break EndedBy::AllExited;
        }
    };
    if by != EndedBy::AllExited {
        // What the processes sent before the end, still in the socket (or being sent).
        read_rest(&mut stream, &mut buf, &mut chunk, &mut rec)?;
    }
    // Processes still holding the channel see it close now: their later allocations are not
    // sampled (nor held up: the interposer stops sending).
    drop(stream);
    watch.heard(rec.heard.drain(..));
    let left_running = watch.running(child.id());
    // The stream ended with the channel closed but the command running: the recording ends
    // with the command (or the duration) all the same.
    while status.is_none() && until.is_none_or(|t| Instant::now() < t) {
        std::thread::sleep(STATUS_EVERY);
        status = child.try_wait().map_err(os("waitpid"))?;
        if status.is_some() {
            exited_after = Some(started.elapsed());
        }
    }
    let ending = super::Ending {
        by: if status.is_none() {
            EndedBy::Duration
        } else {
            by
        },
        command_exited: exited_after.filter(|_| status.is_some()),
        left_running,
    };
    // Still running after `duration`: it runs on, and prof ends as if it had succeeded.
    let status = status.unwrap_or_else(|| ExitStatus::from_raw(0));
    let mut meta = prof_capture::assemble::at_start(Mode::Alloc, 0, "LD_PRELOAD");
    meta.program = program;
    meta.args = args;
    meta.pid = child.id();
    meta.start_time_ns = Some(prof_capture::assemble::start_time_ns(start_time));
    meta.duration_ns = u64::try_from(started.elapsed().as_nanos()).unwrap_or(u64::MAX);
    // The dynamic loader ignores LD_PRELOAD in a set-uid or set-gid command.
    let unsampled = execs.expected_unless(rec.current.contains_key(&child.id()));
    let session = rec
        .finish(meta, options.alloc_interval_bytes.max(1))
        .finish();
    // Symbolized (from the interposer's file too): the memory file may go.
    drop(library);
    let reached_root = reached_root(&session);
    Ok(Recording {
        report: Report::new(session),
        status,
        ending,
        reached_root,
        unsampled,
        channel_closed: watch.closed,
        stitched: 0,
    })
}

/// The program's end of the channel, as every process that inherited it holds it.
struct Channel {
    /// Its descriptor number (the same in every process: inherited).
    fd: i32,
    /// What `/proc/PID/fd/N` reads for it (`socket:[INODE]`).
    link: PathBuf,
}

/// The processes prof heard from, watched while it reads.
#[derive(Default)]
struct Watch {
    /// Each pid's start time (`/proc/PID/stat` field 22) when first looked at: a pid reused
    /// by another process is not the one prof heard from.
    pids: HashMap<u32, Option<u64>>,
    /// Who closed the channel while alive, in the order seen.
    closed: Vec<ChannelClosed>,
    /// Processes seen alive without the channel once, and when: an exiting process looks so
    /// for a moment (its descriptors are closed before it becomes a zombie), so a process
    /// counts as having closed it when the next look sees the same.
    suspects: HashMap<u32, Duration>,
}

impl Watch {
    fn heard(&mut self, pids: impl Iterator<Item = u32>) {
        for pid in pids {
            self.pids.insert(pid, None);
        }
    }

    /// Looks at every process heard from: forgets those gone, notes those alive without the
    /// channel; true while one of them still holds it (or may: its descriptors are not
    /// readable to prof).
    fn look(&mut self, channel: &Channel, now: Duration) -> bool {
        let mut waiting = false;
        let (closed, suspects) = (&mut self.closed, &mut self.suspects);
        self.pids.retain(|&pid, started| {
            let seen = look_at(pid, channel).filter(|s| started.is_none_or(|t| t == s.started));
            let Some(seen) = seen else {
                suspects.remove(&pid);
                return false;
            };
            *started = Some(seen.started);
            match seen.holds {
                Some(false) => match suspects.remove(&pid) {
                    Some(after) => {
                        closed.push(ChannelClosed { pid, after });
                        false
                    }
                    None => {
                        suspects.insert(pid, now);
                        true
                    }
                },
                // Unknown (its descriptors are not readable to prof): as if it held it.
                Some(true) | None => {
                    waiting = true;
                    true
                }
            }
        });
        waiting
    }
}

impl Watch {
    /// The processes heard from that still run, but `command`, in the order they started.
    fn running(&self, command: u32) -> Vec<Running> {
        let mut running: Vec<(u64, Running)> = Vec::new();
        for (&pid, &started) in &self.pids {
            let Some(seen) = live_process(pid).filter(|&(t, _)| started.is_none_or(|s| s == t))
            else {
                continue;
            };
            if pid != command {
                running.push((seen.0, Running { pid, name: seen.1 }));
            }
        }
        running.sort_by_key(|&(started, ref r)| (started, r.pid));
        running.into_iter().map(|(_, r)| r).collect()
    }
}

/// Reads what is left in the channel until it falls quiet for [`STATUS_EVERY`] or
/// [`LAST_READ`] has passed (records after the recording's end are dropped as they are read).
fn read_rest(
    stream: &mut UnixStream,
    buf: &mut Vec<u8>,
    chunk: &mut [u8],
    rec: &mut Recorder,
) -> Result<()> {
    let until = Instant::now() + LAST_READ;
    while Instant::now() < until {
        if read_once(stream, buf, chunk, rec)? != Some(true) {
            break;
        }
    }
    Ok(())
}

/// Reads the channel once (waiting at most its read timeout) and hands `rec` the whole records
/// read, keeping the rest in `buf`: whether anything was read, `None` at its end (every
/// holder closed it).
fn read_once(
    stream: &mut UnixStream,
    buf: &mut Vec<u8>,
    chunk: &mut [u8],
    rec: &mut Recorder,
) -> Result<Option<bool>> {
    match stream.read(chunk) {
        Ok(0) => Ok(None),
        Ok(n) => {
            buf.extend_from_slice(&chunk[..n]);
            let used = rec.take(buf)?;
            buf.drain(..used);
            Ok(Some(true))
        }
        Err(e)
            if matches!(
                e.kind(),
                std::io::ErrorKind::Interrupted
                    | std::io::ErrorKind::WouldBlock
                    | std::io::ErrorKind::TimedOut
            ) =>
        {
            Ok(Some(false))
        }
        Err(source) => Err(Error::Os {
            call: "read",
            source,
        }),
    }
}

/// A live process's start time (`/proc/PID/stat` field 22) and name; `None` when it is gone or
/// a zombie.
fn live_process(pid: u32) -> Option<(u64, String)> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let (head, rest) = stat.rsplit_once(')')?;
    let name = head.split_once('(')?.1.to_owned();
    let fields: Vec<&str> = rest.split_whitespace().collect();
    if matches!(fields.first(), Some(&("Z" | "X")) | None) {
        return None;
    }
    Some((fields.get(19)?.parse().ok()?, name))
}

/// What `/proc` says of a live process.
struct Seen {
    started: u64,
    /// Whether it holds the channel at its number (`None`: not readable).
    holds: Option<bool>,
}

/// `pid` as `/proc` shows it; `None` when it is gone or a zombie.
fn look_at(pid: u32, channel: &Channel) -> Option<Seen> {
    let (started, _) = live_process(pid)?;
    let holds = match std::fs::read_link(format!("/proc/{pid}/fd/{}", channel.fd)) {
        Ok(link) => Some(link == channel.link),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Some(false),
        Err(_) => None,
    };
    Some(Seen { started, holds })
}

/// The path of `program` (searched in `PATH` as `exec` does) when it is an ELF file without
/// an interpreter: statically linked. `None` for anything else, including what cannot be read
/// (`spawn` then says why).
fn static_program(program: &OsStr) -> Option<PathBuf> {
    let path = program_path(program)?;
    let file = std::fs::File::open(&path).ok()?;
    let cache = object::ReadCache::new(file);
    use object::read::elf::{ElfFile64, ProgramHeader};
    let elf = ElfFile64::<object::Endianness, _>::parse(&cache).ok()?;
    let endian = elf.endian();
    let interpreted = elf
        .elf_program_headers()
        .iter()
        .any(|ph| ph.p_type(endian) == object::elf::PT_INTERP);
    (!interpreted).then_some(path)
}

/// One record of the stream.
enum Wire<'a> {
    Start { pid: u32, maps: &'a [u8] },
    Fork { pid: u32, parent: u32 },
    Alloc(Alloc<'a>),
    Free { pid: u32, addr: u64 },
    Other,
}

/// A sampled allocation as the interposer sent it.
struct Alloc<'a> {
    pid: u32,
    tid: u32,
    time: u64,
    addr: u64,
    size: u64,
    regs: Regs,
    name: &'a [u8],
    stack: &'a [u8],
}

fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_ne_bytes(b[at..at + 4].try_into().expect("4 bytes"))
}

fn u64_at(b: &[u8], at: usize) -> u64 {
    u64::from_ne_bytes(b[at..at + 8].try_into().expect("8 bytes"))
}

/// The first record of `bytes` and its length; `Ok(None)` when it is not all there yet.
fn parse(bytes: &[u8]) -> Result<Option<(Wire<'_>, usize)>> {
    if bytes.len() < HEADER {
        return Ok(None);
    }
    let kind = u32_at(bytes, 0);
    let len = u32_at(bytes, 4) as usize;
    let short = |need: usize| len < need;
    if short(HEADER) {
        return Err(corrupt(format!("a record of {len} bytes")));
    }
    if bytes.len() < len {
        return Ok(None);
    }
    let r = &bytes[..len];
    let pid = u32_at(r, 8);
    let wire = match kind {
        KIND_START => Wire::Start {
            pid,
            maps: &r[HEADER..],
        },
        KIND_FORK if !short(HEADER + 8) => Wire::Fork {
            pid,
            parent: u32_at(r, HEADER),
        },
        KIND_ALLOC if !short(ALLOC_FIXED) => {
            let w = |i: usize| u64_at(r, HEADER + 8 * i);
            Wire::Alloc(Alloc {
                pid,
                tid: u32_at(r, 12),
                time: u64_at(r, 16),
                addr: w(0),
                size: w(1),
                regs: Regs {
                    pc: w(2),
                    sp: w(3),
                    fp: w(4),
                    lr: w(5),
                },
                name: &r[HEADER + 48..ALLOC_FIXED],
                stack: &r[ALLOC_FIXED..],
            })
        }
        KIND_FREE if !short(HEADER + 8) => Wire::Free {
            pid,
            addr: u64_at(r, HEADER),
        },
        KIND_FORK | KIND_ALLOC | KIND_FREE => {
            return Err(corrupt(format!("a record of kind {kind} of {len} bytes")))
        }
        _ => Wire::Other,
    };
    Ok(Some((wire, len)))
}

fn corrupt(what: String) -> Error {
    Error::Os {
        call: "reading the allocation sampler's stream",
        source: std::io::Error::new(std::io::ErrorKind::InvalidData, what),
    }
}

/// A sampled allocation, its stack in its process's table.
struct Sample {
    process: usize,
    pid: u32,
    tid: u32,
    time: u64,
    size: u64,
    stack: u32,
    live: bool,
}

/// The ranges (start, length) mapped into a process so far, and when its maps were last read
/// again.
type Mapped = (HashSet<(u64, u64)>, Option<Instant>);

/// The state of an allocation recording.
struct Recorder {
    max_depth: usize,
    /// The interposer's path as processes map it: its frames are cut from every stack.
    library: String,
    processes: Vec<Process>,
    /// The unwind sections of the files the processes map, read once for all of them.
    sections: SectionCache,
    /// What is known of each process's maps.
    mapped: Vec<Mapped>,
    /// Each pid's current address space, an index in `processes`.
    current: HashMap<u32, usize>,
    segments: HashMap<String, Option<Segments>>,
    samples: Vec<Sample>,
    /// The sample of each block still live, by pid and address.
    blocks: HashMap<(u32, u64), usize>,
    names: HashMap<u32, String>,
    /// The session's process table: each pid's entry, read from `/proc` when it started
    /// (the interposer loaded, or it forked).
    table: Vec<prof_session::session::Process>,
    owner: HashMap<u32, usize>,
    first_time: Option<u64>,
    /// Pids heard from since the reader last took them (see `Watch`).
    heard: Vec<u32>,
    /// Records sent after this time (`CLOCK_MONOTONIC`) are dropped: the recording's end.
    end: Option<u64>,
}

impl Recorder {
    fn new(max_depth: usize, library: String) -> Recorder {
        Recorder {
            max_depth,
            library,
            processes: Vec::new(),
            sections: SectionCache::default(),
            mapped: Vec::new(),
            current: HashMap::new(),
            segments: HashMap::new(),
            samples: Vec::new(),
            blocks: HashMap::new(),
            names: HashMap::new(),
            table: Vec::new(),
            owner: HashMap::new(),
            first_time: None,
            heard: Vec::new(),
            end: None,
        }
    }

    /// Handles the whole records at the start of `bytes`; returns how many bytes they took.
    fn take(&mut self, bytes: &[u8]) -> Result<usize> {
        let mut used = 0;
        while let Some((wire, len)) = parse(&bytes[used..])? {
            // Every record's header has its time (`parse` checked the length).
            let time = u64_at(&bytes[used..], 16);
            if self.end.is_none_or(|end| time <= end) {
                self.handle(wire);
            }
            used += len;
        }
        Ok(used)
    }

    /// Ends the recording at `time` (`CLOCK_MONOTONIC`): later records are dropped.
    fn end_at(&mut self, time: u64) {
        self.end = Some(self.end.map_or(time, |end| end.min(time)));
    }

    /// Lists process `pid` in the session's table (again after an `exec`: its latest name,
    /// command line and executable), as `/proc` describes it now; `parent` when known.
    fn list(&mut self, pid: u32, parent: Option<u32>) {
        let mut entry = prof_capture::assemble::process_from_proc(pid).unwrap_or_else(|| {
            prof_session::session::Process {
                pid,
                parent_pid: None,
                name: String::new(),
                command_line: Vec::new(),
                executable: None,
            }
        });
        entry.parent_pid = entry.parent_pid.or(parent);
        match self.owner.get(&pid) {
            Some(&i) => self.table[i] = entry,
            None => {
                self.owner.insert(pid, self.table.len());
                self.table.push(entry);
            }
        }
    }

    fn new_process(&mut self, pid: u32, process: Process) -> usize {
        self.processes.push(process);
        self.mapped.push((HashSet::new(), None));
        let i = self.processes.len() - 1;
        if let Some(before) = self.current.insert(pid, i) {
            // An `exec` (or a reused pid) ends the address space it replaces.
            self.processes[before].release();
        }
        i
    }

    /// Maps the executable mappings `maps` (the text of a maps file) lists into process `i`.
    fn map(&mut self, i: usize, maps: &[u8]) {
        let text = String::from_utf8_lossy(maps);
        for line in text.lines() {
            let Some((start, len, offset, path)) = executable_mapping(line) else {
                continue;
            };
            // The interposer's memory file reads `/memfd:prof-preload (deleted)` in the maps;
            // prof reads it through its own descriptor.
            let path = if path.starts_with(MEMFD_PREFIX) {
                self.library.as_str()
            } else {
                path
            };
            if self.mapped[i].0.insert((start, len)) {
                let segments = &mut self.segments;
                self.processes[i].map(path, start, len, offset, segments);
            }
        }
    }

    fn handle(&mut self, wire: Wire<'_>) {
        match wire {
            Wire::Start { pid, maps } => {
                self.heard.push(pid);
                self.list(pid, None);
                let i = self.new_process(pid, Process::default());
                self.map(i, maps);
            }
            Wire::Fork { pid, parent } => {
                self.heard.push(pid);
                self.list(pid, Some(parent));
                let mut process = Process::default();
                if let Some(&p) = self.current.get(&parent) {
                    process.inherit(self.processes[p].objects.clone());
                }
                let i = self.new_process(pid, process);
                if let Some(&p) = self.current.get(&parent) {
                    self.mapped[i].0 = self.mapped[p].0.clone();
                }
                self.blocks.retain(|&(owner, _), _| owner != pid);
            }
            Wire::Alloc(a) => self.sampled(a),
            Wire::Free { pid, addr } => {
                if let Some(s) = self.blocks.remove(&(pid, addr)) {
                    self.samples[s].live = false;
                }
            }
            Wire::Other => {}
        }
    }

    fn sampled(&mut self, a: Alloc<'_>) {
        let i = match self.current.get(&a.pid) {
            Some(&i) => i,
            None => self.new_process(a.pid, Process::default()),
        };
        self.first_time.get_or_insert(a.time);
        let copied = CopiedStack {
            sp: a.regs.sp,
            bytes: a.stack,
        };
        let thread = super::process::Sampled::whole(a.tid, a.time);
        let (mut stack, _) = self.processes[i].unwind(
            &mut self.sections,
            &[],
            a.regs,
            &copied,
            self.max_depth,
            &[],
            thread,
        );
        if !self.covered(i, stack) && self.may_reread(i) {
            // A `dlopen` since the maps were read: read them again while the process lives.
            if let Ok(maps) = std::fs::read(format!("/proc/{}/maps", a.pid)) {
                self.map(i, &maps);
                stack = self.processes[i]
                    .unwind(
                        &mut self.sections,
                        &[],
                        a.regs,
                        &copied,
                        self.max_depth,
                        &[],
                        thread,
                    )
                    .0;
            }
        }
        let end = a.name.iter().position(|&b| b == 0).unwrap_or(a.name.len());
        let name = String::from_utf8_lossy(&a.name[..end]);
        if self.names.get(&a.tid).is_none_or(|n| *n != name) {
            self.names.insert(a.tid, name.into_owned());
        }
        if let Some(old) = self.blocks.insert((a.pid, a.addr), self.samples.len()) {
            // The block's free went unreported (its table slot was full): it is not in use.
            self.samples[old].live = false;
        }
        if !self.owner.contains_key(&a.pid) {
            self.list(a.pid, None);
        }
        self.samples.push(Sample {
            process: i,
            pid: a.pid,
            tid: a.tid,
            time: a.time,
            size: a.size,
            stack,
            live: true,
        });
    }

    /// True when every address of stack `stack` of process `i` lies in an object it maps.
    fn covered(&self, i: usize, stack: u32) -> bool {
        let process = &self.processes[i];
        process.stacks[stack as usize].iter().all(|&a| {
            process
                .objects
                .iter()
                .any(|o| o.exec.iter().any(|r| r.contains(&a)))
        })
    }

    /// True (and the time noted) when process `i`'s maps were not read in the last
    /// [`REREAD_EVERY`].
    fn may_reread(&mut self, i: usize) -> bool {
        let last = &mut self.mapped[i].1;
        if last.is_some_and(|t| t.elapsed() < REREAD_EVERY) {
            return false;
        }
        *last = Some(Instant::now());
        true
    }

    /// The session: each process's stacks (without the interposer's frames, nor the
    /// allocation layers of a Rust program) symbolized against its own objects.
    fn finish(mut self, meta: Metadata, mean: u64) -> SessionBuilder {
        // Nothing is unwound from here on: the unwind tables go before the symbols come in.
        self.sections = SectionCache::default();
        for process in &mut self.processes {
            process.release();
        }
        let mut builder = SessionBuilder::new(meta);
        let mut ids = Vec::new();
        for process in &self.processes {
            prof_capture::assemble::add_mappings(&mut builder, &process.objects);
            let ours: Vec<_> = process
                .objects
                .iter()
                .filter(|o| o.name == self.library)
                .flat_map(|o| o.exec.iter().cloned())
                .collect();
            let stacks: Vec<Box<[u64]>> = process
                .stacks
                .iter()
                .map(|s| {
                    let skip = s
                        .iter()
                        .take_while(|&&a| ours.iter().any(|r| r.contains(&a)))
                        .count();
                    s[skip..].into()
                })
                .collect();
            ids.push(prof_capture::assemble::intern_stacks(
                &mut builder,
                &stacks,
                &process.objects,
                prof_capture::symbolize::AddressSpace::Other,
                Cut {
                    leaf: &is_allocator_frame,
                    ..Cut::depth(self.max_depth)
                },
            ));
        }
        let listed: Vec<_> = self
            .table
            .iter()
            .map(|p| builder.push_process(p.clone()))
            .collect();
        let first = self.first_time.unwrap_or(0);
        let mut threads = HashMap::new();
        for (n, s) in self.samples.iter().enumerate() {
            let Some(stack) = ids[s.process][s.stack as usize] else {
                continue;
            };
            let thread = *threads.entry(s.tid).or_insert_with(|| {
                let name = self.names.get(&s.tid).map_or("", String::as_str);
                let process = listed[self.owner[&s.pid]];
                builder.thread_in(process, u64::from(s.tid), name)
            });
            let (bytes, objects) = estimate(s.size, mean, splitmix(n as u64));
            let (inuse_bytes, inuse_objects) = if s.live { (bytes, objects) } else { (0, 0) };
            builder.push_sample_full(
                stack,
                thread,
                s.time.saturating_sub(first),
                &[bytes, objects, inuse_bytes, inuse_objects],
                1,
                None,
            );
        }
        builder
    }
}

/// An executable mapping of a file from a maps line: (start, length, file offset, path).
fn executable_mapping(line: &str) -> Option<(u64, u64, u64, &str)> {
    let mut fields = line.splitn(6, ' ');
    let range = fields.next()?;
    let perms = fields.next()?;
    let offset = fields.next()?;
    let _device = fields.next()?;
    let _inode = fields.next()?;
    let path = fields.next()?.trim_start();
    if !perms.contains('x') || path.is_empty() {
        return None;
    }
    let (start, end) = range.split_once('-')?;
    let start = u64::from_str_radix(start, 16).ok()?;
    let end = u64::from_str_radix(end, 16).ok()?;
    let offset = u64::from_str_radix(offset, 16).ok()?;
    Some((start, end.checked_sub(start)?, offset, path))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn maps_lines_give_executable_file_mappings_only() {
        let line = "7f1c2a400000-7f1c2a595000 r-xp 00028000 08:01 1050 /usr/lib/x86_64-linux-gnu/libc.so.6";
        assert_eq!(
            executable_mapping(line),
            Some((
                0x7f1c2a400000,
                0x195000,
                0x28000,
                "/usr/lib/x86_64-linux-gnu/libc.so.6"
            ))
        );
        let spaced = "55d0c9a00000-55d0c9a01000 r-xp 00001000 08:01 7 /tmp/my dir/a.out (deleted)";
        assert_eq!(
            executable_mapping(spaced).unwrap().3,
            "/tmp/my dir/a.out (deleted)"
        );
        assert_eq!(
            executable_mapping("7ffd1-7ffd2 r-xp 00000000 00:00 0                  [vdso]")
                .unwrap()
                .3,
            "[vdso]"
        );
        for other in [
            "7f1c2a400000-7f1c2a595000 r--p 00000000 08:01 1050 /usr/lib/libc.so.6",
            "7f1c2a400000-7f1c2a595000 rwxp 00000000 00:00 0 ",
            "garbage",
            "",
        ] {
            assert_eq!(executable_mapping(other), None, "{other}");
        }
    }

    #[test]
    fn records_are_parsed_whole_and_bad_lengths_are_errors() {
        let mut free = Vec::new();
        for word in [KIND_FREE, 32, 7, 8] {
            free.extend_from_slice(&word.to_ne_bytes());
        }
        free.extend_from_slice(&5u64.to_ne_bytes());
        free.extend_from_slice(&0xabcu64.to_ne_bytes());
        // Cut anywhere, it waits for the rest.
        for cut in 0..free.len() {
            assert!(parse(&free[..cut]).unwrap().is_none(), "{cut}");
        }
        match parse(&free).unwrap() {
            Some((
                Wire::Free {
                    pid: 7,
                    addr: 0xabc,
                },
                32,
            )) => {}
            _ => panic!("a free record"),
        }
        let mut bad = free.clone();
        bad[4..8].copy_from_slice(&8u32.to_ne_bytes());
        assert!(parse(&bad).is_err());
        let mut short_alloc = free;
        short_alloc[0..4].copy_from_slice(&KIND_ALLOC.to_ne_bytes());
        assert!(parse(&short_alloc).is_err());
    }

    #[test]
    fn a_process_is_waited_for_while_it_holds_the_channel_and_said_to_have_closed_it_after_two_looks(
    ) {
        let (a, _b) = UnixStream::pair().unwrap();
        let fd = a.as_raw_fd();
        let me = std::process::id();
        let holding = Channel {
            fd,
            link: std::fs::read_link(format!("/proc/self/fd/{fd}")).unwrap(),
        };
        let mut watch = Watch::default();
        watch.heard([me].into_iter());
        assert!(watch.look(&holding, Duration::from_millis(1)));
        assert!(watch.look(&holding, Duration::from_millis(2)));
        assert!(watch.closed.is_empty());
        // The descriptor is something else now: noted on the second look, with the first's time.
        let gone = Channel {
            fd,
            link: PathBuf::from("socket:[0]"),
        };
        assert!(!watch.look(&gone, Duration::from_millis(3)));
        assert!(watch.closed.is_empty());
        assert!(!watch.look(&gone, Duration::from_millis(4)));
        assert_eq!(
            watch.closed,
            [ChannelClosed {
                pid: me,
                after: Duration::from_millis(3)
            }]
        );
        // A pid that is gone is forgotten, never said to have closed anything.
        let mut watch = Watch::default();
        watch.heard([u32::MAX - 1].into_iter());
        assert!(!watch.look(&gone, Duration::ZERO) && !watch.look(&gone, Duration::ZERO));
        assert!(watch.closed.is_empty() && watch.pids.is_empty());
    }

    #[test]
    fn static_programs_are_told_apart_from_dynamic_ones() {
        // prof's own test binary is dynamically linked.
        assert_eq!(
            static_program(std::env::current_exe().unwrap().as_os_str()),
            None
        );
        assert_eq!(static_program(OsStr::new("/nonexistent/program")), None);
    }
}
