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
//! Per-CPU events, not one per process: the kernel refuses to map the ring of an inherited
//! per-task event (`cpu = -1`), as `perf record` works around the same way.

mod process;
pub(crate) mod records;

use crate::sampler::sys::{self, PerfRing, Regs, RingEvent};
use crate::session::{Metadata, Mode, Session, SessionBuilder};
use crate::{Error, Report, Result};
use process::{CopiedStack, Process};
use records::Record;
use std::collections::{HashMap, HashSet};
use std::process::{Command, ExitStatus};
use std::time::{Duration, Instant, SystemTime};

/// Bytes of user stack the kernel copies with each sample by default. Measured on the
/// `-O2 -fomit-frame-pointer` C program of `tests/tests/record.rs` (see the docs): the same as
/// samply's, four times perf's 8,192 default, so deep stacks still reach `main`.
pub const DEFAULT_STACK_BYTES: u32 = 32_000;

/// How often prof's thread drains the rings (rings of 1,024 data pages; smaller ones more often).
pub const DRAIN_EVERY: Duration = Duration::from_millis(5);

/// How long after its time a record may still be being written to its ring: records newer
/// than a drain's start less this wait for the next drain.
const WRITE_MARGIN_NS: u64 = 1_000_000;

/// Data pages of each CPU's ring (4 MiB with 4 KiB pages: over a hundred samples of 32 KB).
pub(crate) const RING_PAGES: usize = 1024;

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
    /// Frames kept per stack, from the leaf.
    pub max_depth: usize,
}

impl Default for RecordOptions {
    fn default() -> Self {
        RecordOptions {
            interval: crate::DEFAULT_INTERVAL,
            stack_bytes: DEFAULT_STACK_BYTES,
            max_depth: crate::DEFAULT_MAX_DEPTH,
        }
    }
}

/// What a recording gave.
#[derive(Debug)]
pub struct Recording {
    /// The profile.
    pub report: Report,
    /// How the command ended.
    pub status: ExitStatus,
    /// Samples whose stack reaches one of [`THREAD_ROOTS`].
    pub reached_root: u64,
}

/// Runs `command` to its end (and that of every process it started), sampling every thread.
/// Fails before the command runs when the kernel refuses the events
/// ([`Error::PerfRefused`]).
pub fn record(command: Command, options: &RecordOptions) -> Result<Recording> {
    let stack_bytes = options.stack_bytes.min(65_528) & !7;
    if options.interval.is_zero() {
        return Err(Error::InvalidOption("the interval must be above 0".into()));
    }
    let program = command.get_program().to_string_lossy().into_owned();
    let args = command
        .get_args()
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    let spawn_error = |source| Error::Spawn {
        program: program.clone(),
        source,
    };
    let held = sys::spawn_held(command).map_err(spawn_error)?;
    let pid = held.pid;
    let event = RingEvent {
        period_ns: u64::try_from(options.interval.as_nanos()).unwrap_or(u64::MAX),
        regs_mask: REGS_MASK,
        stack_bytes,
        watermark: (RING_PAGES * 4096 / 4) as u32,
    };
    let mut rings = Vec::new();
    for cpu in sys::online_cpus() {
        let ring = sys::perf_event_ring(pid, cpu, &event).and_then(map_ring);
        match ring {
            Ok(ring) => rings.push(ring),
            Err(e) => {
                held.abandon();
                return Err(refused(e));
            }
        }
    }
    let start_time = SystemTime::now();
    let started = Instant::now();
    let mut child = held.release().map_err(spawn_error)?;
    // Ctrl-C is the command's to act on, as without prof; prof saves what it has at its end.
    sys::ignore_terminal_interrupts();
    // Rings smaller than asked for (see `map_ring`) are read more often, down to every 0.5 ms.
    let smallest = rings.iter().map(PerfRing::data_bytes).min().unwrap_or(0);
    let full_size = RING_PAGES * 4096;
    let pause = (DRAIN_EVERY * smallest.min(full_size) as u32 / full_size as u32)
        .max(Duration::from_micros(500));
    let mut rec = Recorder::new(pid, options.max_depth);
    let mut buffers: Vec<Vec<u8>> = vec![Vec::new(); rings.len()];
    let mut status = None;
    loop {
        let ended = match status {
            Some(_) => true,
            None => {
                status = child.try_wait().map_err(|source| Error::Os {
                    call: "waitpid",
                    source,
                })?;
                status.is_some()
            }
        };
        let quiet = ended && rec.others_gone();
        let fullest = rec.drain(&mut rings, &mut buffers, quiet);
        if quiet {
            break;
        }
        // A ring an eighth full in one interval is filling fast (many threads, a high rate):
        // read again at once rather than let it overflow.
        if fullest < smallest / 8 {
            std::thread::sleep(pause);
        }
    }
    let status = status.unwrap_or_else(|| unreachable!("the loop ends after the wait"));
    let mut meta = crate::sampler::meta::at_start(Mode::Cpu, event.period_ns, "perf_event_ring");
    meta.program = program;
    meta.args = args;
    meta.pid = pid;
    meta.start_time = crate::sampler::meta::rfc3339(start_time);
    meta.duration_ns = u64::try_from(started.elapsed().as_nanos()).unwrap_or(u64::MAX);
    let session = rec.finish(meta);
    let reached_root = reached_root(&session);
    Ok(Recording {
        report: Report::new(session),
        status,
        reached_root,
    })
}

/// Maps the ring of `fd`: [`RING_PAGES`] data pages, or fewer where the user may lock no more
/// (users without `CAP_IPC_LOCK` get `/proc/sys/kernel/perf_event_mlock_kb` per CPU, 516 KiB
/// by default, plus `RLIMIT_MEMLOCK`), down to 16.
pub(crate) fn map_ring(fd: std::os::fd::OwnedFd) -> Result<PerfRing> {
    let mut pages = RING_PAGES;
    loop {
        let copy = fd.try_clone().map_err(|source| Error::Os {
            call: "dup(perf event)",
            source,
        })?;
        match PerfRing::new(copy, pages) {
            Err(Error::Os { source, .. })
                if pages > 16 && source.raw_os_error() == Some(libc::EPERM) =>
            {
                pages /= 2;
            }
            ring => return ring,
        }
    }
}

/// The error for a refused `perf_event_open`: a permission error names the sysctl.
fn refused(e: Error) -> Error {
    match e {
        Error::Os {
            call: "perf_event_open",
            source,
        } if matches!(source.raw_os_error(), Some(libc::EACCES | libc::EPERM)) => {
            let paranoid = std::fs::read_to_string("/proc/sys/kernel/perf_event_paranoid")
                .map(|s| s.trim().to_owned())
                .unwrap_or_else(|_| "unknown".into());
            Error::PerfRefused { paranoid, source }
        }
        e => e,
    }
}

/// The user registers each sample carries, in the kernel's numbering: x86_64's bp, sp, ip.
#[cfg(target_arch = "x86_64")]
pub(crate) const REGS_MASK: u64 = (1 << 6) | (1 << 7) | (1 << 8);
/// The user registers each sample carries, in the kernel's numbering: aarch64's x29, lr, sp, pc.
#[cfg(target_arch = "aarch64")]
pub(crate) const REGS_MASK: u64 = (1 << 29) | (1 << 30) | (1 << 31) | (1 << 32);

/// The sampler's registers from a sample's (ordered by register number, see [`REGS_MASK`]).
#[cfg(target_arch = "x86_64")]
pub(crate) fn regs_of(r: &[u64]) -> Option<Regs> {
    let [fp, sp, pc] = r.try_into().ok()?;
    Some(Regs { pc, sp, fp, lr: 0 })
}

/// The sampler's registers from a sample's (ordered by register number, see [`REGS_MASK`]).
#[cfg(target_arch = "aarch64")]
pub(crate) fn regs_of(r: &[u64]) -> Option<Regs> {
    let [fp, lr, sp, pc] = r.try_into().ok()?;
    Some(Regs { pc, sp, fp, lr })
}

/// One sample, its stack in its process's table.
struct Sample {
    /// The index of its process (an address space: a pid's each `exec` starts another).
    process: usize,
    tid: u32,
    time: u64,
    period: u64,
    stack: u32,
}

/// The state of a recording: the processes, threads and samples seen so far.
struct Recorder {
    child: u32,
    max_depth: usize,
    /// Every address space seen: a process from its start or `exec` to its next `exec` or end.
    processes: Vec<Process>,
    /// Each pid's current address space, an index in `processes`.
    current: HashMap<u32, usize>,
    /// Processes started (FORK with a new pid) and not yet ended (EXIT of their main thread).
    live: HashSet<u32>,
    /// Each thread's name (from COMM), and each process's (its main thread's) by pid.
    names: HashMap<u32, String>,
    segments: HashMap<String, Option<process::Segments>>,
    samples: Vec<Sample>,
    /// Records read but not yet handled (see [`Recorder::drain`]).
    pending: Vec<Record>,
    lost: u64,
    first_time: Option<u64>,
}

impl Recorder {
    fn new(child: u32, max_depth: usize) -> Recorder {
        Recorder {
            child,
            max_depth,
            processes: Vec::new(),
            current: HashMap::new(),
            live: HashSet::new(),
            names: HashMap::new(),
            segments: HashMap::new(),
            samples: Vec::new(),
            pending: Vec::new(),
            lost: 0,
            first_time: None,
        }
    }

    /// True when no process the command started is still running.
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

    /// The index of `pid`'s current address space (a new one for a pid not seen before).
    fn process(&mut self, pid: u32) -> usize {
        match self.current.get(&pid) {
            Some(&i) => i,
            None => self.start_process(pid, Vec::new()),
        }
    }

    /// Starts a new address space for `pid` with `objects` mapped (at `fork` or `exec`).
    fn start_process(&mut self, pid: u32, objects: Vec<crate::symbolize::LoadedObject>) -> usize {
        let mut process = Process::default();
        process.inherit(objects);
        self.processes.push(process);
        let i = self.processes.len() - 1;
        self.current.insert(pid, i);
        i
    }

    /// Reads what every ring holds and handles, in time order, the records older than the
    /// start of this drain (all of them when `last`). The rings are per CPU: a sample read from
    /// one can be newer than a mapping not yet read from another, so a record waits until every
    /// ring has been read past its time.
    /// Returns the most bytes one ring held.
    fn drain(&mut self, rings: &mut [PerfRing], buffers: &mut [Vec<u8>], last: bool) -> usize {
        let began = sys::monotonic_ns();
        let regs = REGS_MASK.count_ones() as usize;
        for (ring, buf) in rings.iter_mut().zip(buffers.iter_mut()) {
            buf.clear();
            ring.drain(buf);
        }
        let fullest = buffers.iter().map(Vec::len).max().unwrap_or(0);
        for buf in buffers.iter() {
            records::parse_all(buf, regs, |r| self.pending.push(r));
        }
        self.pending.sort_by_key(Record::time);
        let upto = if last {
            u64::MAX
        } else {
            began.saturating_sub(WRITE_MARGIN_NS)
        };
        let ready = self.pending.partition_point(|r| r.time() < upto);
        let ready: Vec<Record> = self.pending.drain(..ready).collect();
        for r in ready {
            self.handle(r);
        }
        fullest
    }

    fn handle(&mut self, r: Record) {
        match r {
            Record::Sample {
                pid,
                tid,
                time,
                period,
                regs,
                stack,
                ..
            } => {
                let Some(regs) = regs_of(&regs) else {
                    self.lost += 1;
                    return;
                };
                self.first_time.get_or_insert(time);
                let copied = CopiedStack {
                    sp: regs.sp,
                    bytes: &stack,
                };
                let process = self.process(pid);
                let stack = self.processes[process].unwind(regs, &copied, self.max_depth);
                self.samples.push(Sample {
                    process,
                    tid,
                    time,
                    period,
                    stack,
                });
            }
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
                if pid != ppid {
                    self.live.insert(pid);
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
            Record::Exit { pid, tid, .. } => {
                if pid == tid {
                    self.live.remove(&pid);
                }
            }
            Record::Lost { lost } => self.lost += lost,
            Record::Switch { .. } | Record::Other => {}
        }
    }

    /// The session: each process's stacks symbolized against its own objects.
    fn finish(self, mut meta: Metadata) -> Session {
        meta.dropped_samples = self.lost;
        let total: u64 = self.samples.iter().map(|s| s.period).sum();
        meta.achieved_interval_ns = total.checked_div(self.samples.len() as u64).unwrap_or(0);
        let mut builder = SessionBuilder::new(meta);
        let mut ids = Vec::new();
        for process in &self.processes {
            crate::sampler::mappings::add_mappings(&mut builder, &process.objects);
            let stack_ids = crate::sampler::assemble::intern_stacks(
                &mut builder,
                &process.stacks,
                &process.objects,
                crate::symbolize::AddressSpace::Other,
                self.max_depth,
                |_| false,
            );
            ids.push(stack_ids);
        }
        let first = self.first_time.unwrap_or(0);
        let mut threads = HashMap::new();
        for s in &self.samples {
            let Some(stack) = ids[s.process][s.stack as usize] else {
                continue;
            };
            let thread = *threads.entry(s.tid).or_insert_with(|| {
                let name = self.names.get(&s.tid).map(String::as_str).unwrap_or("");
                builder.thread(u64::from(s.tid), name)
            });
            builder.push_sample_full(
                stack,
                thread,
                s.time.saturating_sub(first),
                &[s.period, 1],
                1,
                None,
            );
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
        let e = refused(denied);
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
        // Other failures stay what they are.
        let other = Error::Os {
            call: "perf_event_open",
            source: std::io::Error::from_raw_os_error(libc::EMFILE),
        };
        assert!(matches!(refused(other), Error::Os { .. }));
    }

    #[test]
    fn copied_stack_words_are_read_from_the_copy_and_nowhere_else() {
        let bytes: Vec<u8> = (0u8..24).collect();
        let stack = CopiedStack {
            sp: 0x1000,
            bytes: &bytes,
        };
        use crate::sampler::unwind::StackWords;
        assert_eq!(
            stack.word(0x1008),
            Some(u64::from_ne_bytes([8, 9, 10, 11, 12, 13, 14, 15]))
        );
        assert_eq!(stack.word(0x0ff8), None);
        assert_eq!(stack.word(0x1011), None);
        assert_eq!(stack.word(u64::MAX), None);
    }
}
