//! `prof record --pid PID`: sampling a process that already runs, without stopping it. Each of
//! its threads gets a task-clock event per CPU (in wall mode a context-switch event too),
//! inherited by the threads and, with `children`, the processes it starts later, all of a CPU's
//! events writing to one ring; what the kernel would have said in MMAP2 and COMM records had
//! prof been there from the start is read from `/proc/PID/maps` and `/proc/PID/task/*/comm`.
//! In wall mode a thread already blocked when the events open has no switch-out to say where:
//! its stack is read from `/proc/PID/task/TID/syscall` and `/proc/PID/mem` as in-process wall
//! mode reads a blocked thread's (`sampler::wall`), and its wait counts from the start; the
//! threads still switched out at the end are charged up to it. The recording ends on Ctrl-C
//! (SIGINT, or SIGTERM: prof saves what it has), after `duration`, or when the process (and,
//! with `children`, every process it started) has ended.

use super::access::{self, Creds};
use super::records::Record;
use super::{
    drain_until, finish, map_ring, refused, EndedBy, Ending, RecordOptions, Recorder, Recording,
    Sample,
};
use prof_capture::sys::{self, PerfRing, RingEvent};
use prof_capture::tasks::{open_on_every_task, task_ids};
use prof_capture::unwind::blocked::{self, Blocked, TaskState};
use prof_session::session::Mode;
use prof_session::{Error, Result};
use std::collections::HashSet;
use std::os::fd::OwnedFd;
use std::os::unix::process::ExitStatusExt;
use std::process::ExitStatus;
use std::time::{Instant, SystemTime};

/// The processes to attach to: `pid`, and with `children` every process it has started that
/// still runs (from `/proc/*/task/*/children`), parents first.
fn family(pid: u32, children: bool) -> Vec<u32> {
    let mut all = vec![pid];
    let mut at = 0;
    while children && at < all.len() {
        for tid in task_ids(all[at]) {
            let path = format!("/proc/{}/task/{tid}/children", all[at]);
            let text = std::fs::read_to_string(path).unwrap_or_default();
            for child in text.split_whitespace().filter_map(|c| c.parse().ok()) {
                if !all.contains(&child) {
                    all.push(child);
                }
            }
        }
        at += 1;
    }
    all
}

/// The MMAP2 records of `pid`'s executable mappings, as `/proc/PID/maps` lists them now.
fn mappings(pid: u32) -> Vec<Record> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/maps")).unwrap_or_default();
    text.lines()
        .filter_map(|line| {
            // `start-end perms offset dev inode   path`
            let mut fields = line.splitn(6, ' ');
            let (range, perms, offset) = (fields.next()?, fields.next()?, fields.next()?);
            let path = fields.nth(2)?.trim_start();
            if !perms.contains('x') || path.is_empty() {
                return None;
            }
            let (start, end) = range.split_once('-')?;
            let addr = u64::from_str_radix(start, 16).ok()?;
            let end = u64::from_str_radix(end, 16).ok()?;
            Some(Record::Mmap {
                pid,
                time: 0,
                addr,
                len: end.checked_sub(addr)?,
                pgoff: u64::from_str_radix(offset, 16).ok()?,
                prot: (libc::PROT_READ | libc::PROT_EXEC) as u32,
                filename: path.to_owned(),
            })
        })
        .collect()
}

/// The COMM records of `pid`'s threads, named as `/proc` names them now.
fn names(pid: u32) -> Vec<Record> {
    task_ids(pid)
        .into_iter()
        .filter_map(|tid| {
            let name = std::fs::read_to_string(format!("/proc/{pid}/task/{tid}/comm")).ok()?;
            Some(Record::Comm {
                pid,
                tid,
                time: 0,
                exec: false,
                name: name.trim_end_matches('\n').to_owned(),
            })
        })
        .collect()
}

/// Wall mode: the threads of process `pid` blocked in a system call now, each one's wait
/// counted from `start_ns` (when the events began to open) at the stack `/proc` and its memory
/// show, as its switch-out sample would have said; its next switch-in ends it. A thread that
/// woke while its stack was read (its `syscall` file changed) is left out: its next switch-out
/// says where it waits.
fn blocked_at_start(rec: &mut Recorder, pid: u32, start_ns: u64) {
    let Ok(mem) = std::fs::File::open(format!("/proc/{pid}/mem")) else {
        return;
    };
    let maps = std::fs::read_to_string(format!("/proc/{pid}/maps")).unwrap_or_default();
    let state = |tid: u32| {
        let text = std::fs::read_to_string(format!("/proc/{pid}/task/{tid}/syscall")).ok()?;
        blocked::parse_syscall(&text)
    };
    for tid in task_ids(pid) {
        let Some(before @ TaskState::Blocked { sp, pc, .. }) = state(tid) else {
            continue;
        };
        let Some(hi) = mapping_end(&maps, sp) else {
            continue;
        };
        let process = rec.process(pid);
        let blocked = Blocked {
            mem: &mem,
            sp,
            pc,
            hi,
        };
        let stack = rec.processes[process].blocked(&mut rec.sections, &blocked, rec.max_depth);
        if let (true, Some(switches)) = (state(tid) == Some(before), &mut rec.wall) {
            switches.sampled(tid, start_ns, process, stack);
        }
    }
}

/// The end of the mapping of `/proc/PID/maps` (its text) that holds `addr`.
fn mapping_end(maps: &str, addr: u64) -> Option<u64> {
    maps.lines().find_map(|line| {
        let (start, end) = line.split_whitespace().next()?.split_once('-')?;
        let start = u64::from_str_radix(start, 16).ok()?;
        let end = u64::from_str_radix(end, 16).ok()?;
        (start..end).contains(&addr).then_some(end)
    })
}

/// Wall mode: the threads still switched out at `end` (the recording stops while they wait)
/// are charged up to it.
fn still_out_at(rec: &mut Recorder, end: u64) {
    let Some(switches) = &mut rec.wall else {
        return;
    };
    for (tid, off) in switches.still_out(end) {
        rec.samples.push(Sample::off_cpu(tid, off));
    }
}

/// The events of one CPU: the first one's ring, which the others write to.
struct CpuEvents {
    cpu: u32,
    ring: Option<(OwnedFd, PerfRing)>,
    others: Vec<OwnedFd>,
}

impl CpuEvents {
    /// Opens the event of thread `tid` (of process `pid`) on this CPU, and its `switches`
    /// event in wall mode; `Ok(false)` when the thread has ended.
    fn open(
        &mut self,
        pid: u32,
        tid: u32,
        event: &RingEvent,
        switches: Option<&RingEvent>,
    ) -> Result<bool> {
        let ended = |e: &Error| matches!(e, Error::Os { source, .. } if source.raw_os_error() == Some(libc::ESRCH));
        let fd = match sys::perf_event_ring(tid, self.cpu, event) {
            Ok(fd) => fd,
            Err(e) if ended(&e) => return Ok(false),
            Err(e) => return Err(refused_by(e, pid, event.kernel, switches.is_some())),
        };
        let ring = match &mut self.ring {
            None => {
                let keep = fd.try_clone().map_err(|source| Error::Os {
                    call: "dup(perf event)",
                    source,
                })?;
                &self.ring.insert((keep, map_ring(fd)?)).1
            }
            Some((owner, ring)) => {
                sys::perf_event_set_output(&fd, owner)?;
                self.others.push(fd);
                &*ring
            }
        };
        if let Some(switches) = switches {
            match sys::perf_switch_event(tid, self.cpu, switches, ring) {
                Ok(fd) => self.others.push(fd),
                Err(e) if ended(&e) => return Ok(false),
                Err(e) => return Err(refused_by(e, pid, event.kernel, true)),
            }
        }
        Ok(true)
    }
}

/// The error for a refused event on a thread of process `pid`: the process's owner or its
/// being non-dumpable when that is the reason ([`Error::AttachRefused`]), else what [`refused`]
/// says of the sysctl (for kernel frames, or wall mode's context `switches`).
fn refused_by(e: Error, pid: u32, kernel: bool, switches: bool) -> Error {
    if let Error::Os {
        call: "perf_event_open",
        source,
    } = &e
    {
        let denied = matches!(source.raw_os_error(), Some(libc::EACCES | libc::EPERM));
        if let (true, Some(caller), Some(target)) = (denied, Creds::own(), Creds::of(pid)) {
            let non_dumpable = access::non_dumpable(pid, &target);
            if let Some(why) = access::refusal(&caller, &target, non_dumpable) {
                let name = std::fs::read_to_string(format!("/proc/{pid}/comm"))
                    .map(|n| n.trim_end().to_owned())
                    .unwrap_or_default();
                return Error::AttachRefused { pid, name, why };
            }
        }
    }
    refused(e, kernel, switches)
}

/// Samples process `pid` (with `options.children`, the processes it starts too) until Ctrl-C,
/// `options.duration` or its end, in CPU or wall mode. Fails when no such process runs, or the
/// kernel refuses the events ([`Error::AttachRefused`]: another user's process, or a
/// non-dumpable one, needs `CAP_PERFMON` or ptrace rights; [`Error::PerfRefused`]: the sysctl).
pub fn attach(pid: u32, options: &RecordOptions) -> Result<Recording> {
    if options.interval.is_zero() {
        return Err(Error::InvalidOption("the interval must be above 0".into()));
    }
    let wall = match options.mode {
        Mode::Cpu => false,
        Mode::Wall => true,
        Mode::Alloc => {
            return Err(Error::InvalidOption(
                "--pid records CPU or wall time, not alloc mode (which loads prof's allocator \
                 into the program at its start)"
                    .into(),
            ))
        }
        // `Mode` may grow (it is the session model's, in another crate).
        mode => {
            return Err(Error::InvalidOption(format!(
                "--pid records CPU or wall time, not {} mode",
                mode.name()
            )))
        }
    };
    let Some(target) = prof_capture::assemble::process_from_proc(pid) else {
        return Err(Error::InvalidOption(format!(
            "--pid: no process {pid} is running"
        )));
    };
    // Before the events open: from then on Ctrl-C saves what was recorded.
    sys::catch_interrupts();
    let event = RingEvent {
        period_ns: u64::try_from(options.interval.as_nanos()).unwrap_or(u64::MAX),
        regs_mask: super::REGS_MASK,
        stack_bytes: options.stack_bytes.min(65_528) & !7,
        watermark: (super::RING_PAGES * 4096 / 4) as u32,
        kernel: options.kernel,
        // As `record`'s: a thread's time in system calls is running time in wall mode.
        kernel_time: options.kernel || wall,
        attach: true,
        read: false,
    };
    let event = RingEvent {
        read: super::counts_per_thread(&event),
        ..event
    };
    let switches = wall.then(|| super::switch_event(&event, options));
    let mut cpus: Vec<CpuEvents> = sys::online_cpus()
        .into_iter()
        .map(|cpu| CpuEvents {
            cpu,
            ring: None,
            others: Vec::new(),
        })
        .collect();
    let start_time = SystemTime::now();
    let started = Instant::now();
    let start_ns = sys::monotonic_ns();
    let processes = family(pid, options.children);
    let mut rec = Recorder::new(0, options.max_depth, event.read);
    if let Some(switches) = &switches {
        rec.wall = Some(super::switch::Switches::new(switches.stack_bytes));
        rec.first_time = Some(start_ns);
    }
    rec.keep = Some(processes.iter().copied().collect());
    rec.follow_children = options.children;
    // The functions to count, in the files the process has mapped executable.
    let mut counters = if options.calls.is_empty() {
        None
    } else {
        let files = prof_capture::calls::process_files(pid);
        Some(
            prof_capture::calls::CallProbes::find(&files, &options.calls, options.calls_max)?
                .counters(options.calls_timed)?,
        )
    };
    for &p in &processes {
        open_on_every_task(p, &mut HashSet::new(), |tid| {
            if let Some(counters) = &mut counters {
                counters.open_on(tid, true)?;
            }
            for cpu in &mut cpus {
                if !cpu.open(p, tid, &event, switches.as_ref())? {
                    break;
                }
            }
            Ok(())
        })?;
        rec.live.push(p);
        rec.table.look(p);
        rec.table.handled(p);
        // Mappings and names, no samples: no ring's count to follow.
        for r in mappings(p).into_iter().chain(names(p)) {
            rec.handle(0, r);
        }
    }
    if wall {
        for &p in &processes {
            blocked_at_start(&mut rec, p, start_ns);
        }
    }
    rec.calls = counters;
    let mut rings: Vec<PerfRing> = cpus
        .iter_mut()
        .filter_map(|c| c.ring.take().map(|(_, ring)| ring))
        .collect();
    let until = options.duration.map(|d| started + d);
    let mut by = EndedBy::AllExited;
    drain_until(&mut rings, &mut rec, |rec| {
        by = if sys::interrupted() {
            EndedBy::Interrupted
        } else if until.is_some_and(|t| Instant::now() >= t) {
            EndedBy::Duration
        } else if rec.others_gone() {
            EndedBy::AllExited
        } else {
            return false;
        };
        true
    });
    still_out_at(&mut rec, sys::monotonic_ns());
    // The calls until now, the recording's end (the process runs on).
    let counted = rec.counted();
    drop(cpus);
    drop(rings);
    let ending = Ending {
        by,
        command_exited: None,
        left_running: Vec::new(),
    };
    let timer = if wall {
        "perf_event_ring+context_switches"
    } else {
        "perf_event_ring"
    };
    let mut meta = prof_capture::assemble::at_start(options.mode, event.period_ns, timer);
    meta.program = target
        .executable
        .or_else(|| target.command_line.first().cloned())
        .unwrap_or(target.name);
    meta.args = target.command_line.iter().skip(1).cloned().collect();
    meta.pid = pid;
    Ok(finish(
        rec,
        meta,
        start_time,
        started,
        ExitStatus::from_raw(0),
        ending,
        counted,
    ))
}
