//! Counting a function's calls in the kernel: a uprobe (a breakpoint the kernel puts on the
//! function's first instruction in the file's pages as a process maps them) defined in tracefs
//! (`uprobe_events`), and a perf event on its tracepoint that counts hits with no record, read
//! at the end.
//!
//! Why tracefs and not the `uprobe` PMU (`perf_event_open` with `uprobe_path`): a PMU event
//! re-reads its `uprobe_path` pointer when a thread or process inherits it, in the memory of the
//! process that is cloning, where it means nothing, and the kernel then fails that process's
//! `clone` with `EFAULT` (measured on Linux 6.18: `pthread_create` returned 14 in the profiled
//! program). A tracepoint event is inherited like any other, so one event on the command counts
//! the calls of every thread and child process it starts. The definitions are prof's own group
//! (`prof_PID`), removed when the recording ends; a group left by a prof that was killed is
//! removed by the next one that finds its process gone.

use super::super::last_error;
use super::perf::{open_event, PerfEventAttr};
use std::io::{self, Write};
use std::os::fd::{AsRawFd, OwnedFd};
use std::path::{Path, PathBuf};

/// `PERF_TYPE_TRACEPOINT`.
const PERF_TYPE_TRACEPOINT: u32 = 2;

/// Where tracefs may be mounted, in the order looked at.
const TRACEFS: &[&str] = &["/sys/kernel/tracing", "/sys/kernel/debug/tracing"];

/// The uprobes one recording defined: removed from tracefs when dropped (after the events
/// counting them are closed: a definition in use cannot be removed).
#[derive(Debug)]
pub struct Uprobes {
    tracefs: PathBuf,
    group: String,
    names: Vec<String>,
}

impl Uprobes {
    /// prof's group of uprobes in tracefs, empty; the groups of prof processes that are gone
    /// are removed first. tracefs is mounted at `/sys/kernel/tracing` when it is not mounted
    /// yet. Fails with a clear error when tracefs or its `uprobe_events` is missing (a kernel
    /// without `CONFIG_UPROBE_EVENTS`, or tracefs cannot be mounted).
    pub fn new() -> io::Result<Uprobes> {
        let found = || {
            TRACEFS
                .iter()
                .map(PathBuf::from)
                .find(|dir| dir.join("uprobe_events").exists())
        };
        let Some(tracefs) = found().or_else(|| mount_tracefs().then(found).flatten()) else {
            return Err(io::Error::new(
                io::ErrorKind::NotFound,
                "no uprobe_events in /sys/kernel/tracing, and tracefs could not be mounted there (it needs root, and a kernel built with CONFIG_UPROBE_EVENTS)",
            ));
        };
        remove_stale(&tracefs);
        Ok(Uprobes {
            tracefs,
            group: format!("prof_{}", std::process::id()),
            names: Vec::new(),
        })
    }

    /// Defines a uprobe on the byte `offset` of the file `path` (a function's entry) and
    /// returns its tracepoint's id, for [`tracepoint_counter`] or [`tracepoint_recorder`].
    pub fn add(&mut self, path: &Path, offset: u64) -> io::Result<u64> {
        self.define('p', path, offset)
    }

    /// Defines a return probe of the function whose entry is the byte `offset` of the file
    /// `path`: it fires as each call returns (the kernel replaces the call's return address on
    /// entry with its own trampoline's, and jumps back to the real one after), and returns its
    /// tracepoint's id.
    pub fn add_return(&mut self, path: &Path, offset: u64) -> io::Result<u64> {
        self.define('r', path, offset)
    }

    /// Defines a probe of `kind` (`p` entry, `r` return) and reads its tracepoint's id.
    fn define(&mut self, kind: char, path: &Path, offset: u64) -> io::Result<u64> {
        let path = path
            .to_str()
            .filter(|p| !p.contains([' ', '\n']))
            .ok_or_else(|| {
                io::Error::new(
                    io::ErrorKind::InvalidInput,
                    format!("{}: tracefs takes no such file name", path.display()),
                )
            })?;
        let name = format!("f{}", self.names.len());
        write_definition(
            &self.tracefs,
            &format!("{kind}:{}/{name} {path}:{offset:#x}\n", self.group),
        )?;
        self.names.push(name.clone());
        let id = std::fs::read_to_string(
            self.tracefs
                .join("events")
                .join(&self.group)
                .join(&name)
                .join("id"),
        )?;
        id.trim()
            .parse()
            .map_err(|_| io::Error::new(io::ErrorKind::InvalidData, "a tracepoint id not a number"))
    }
}

impl Drop for Uprobes {
    fn drop(&mut self) {
        for name in &self.names {
            let _ = write_definition(&self.tracefs, &format!("-:{}/{name}\n", self.group));
        }
    }
}

/// Mounts tracefs at `/sys/kernel/tracing`, the directory the kernel provides for it, when it
/// is not mounted anywhere prof looks (a machine where no tracing tool ran since boot), as
/// `perf probe` does; it stays mounted, for the next recording and any other tool. True when
/// the mount succeeded (it needs root).
fn mount_tracefs() -> bool {
    let target = c"/sys/kernel/tracing";
    // SAFETY: every pointer is a NUL-terminated string literal that outlives the call, and a
    // null `data` is allowed for tracefs; mounting changes no memory of this process.
    let r = unsafe {
        libc::mount(
            c"nodev".as_ptr(),
            target.as_ptr(),
            c"tracefs".as_ptr(),
            0,
            std::ptr::null(),
        )
    };
    r == 0
}

/// Appends one line to `uprobe_events` (appending: opening it to write from the start would
/// remove every uprobe on the machine).
fn write_definition(tracefs: &Path, line: &str) -> io::Result<()> {
    std::fs::OpenOptions::new()
        .append(true)
        .open(tracefs.join("uprobe_events"))?
        .write_all(line.as_bytes())
}

/// Removes the uprobes of groups `prof_PID` whose process is gone (a prof killed before it
/// could remove its own).
fn remove_stale(tracefs: &Path) {
    let Ok(listing) = std::fs::read_to_string(tracefs.join("uprobe_events")) else {
        return;
    };
    for line in listing.lines() {
        // `p:prof_123/f0 /path:0x...`
        let Some(event) = line
            .split_whitespace()
            .next()
            .and_then(|e| e.split_once(':'))
        else {
            continue;
        };
        let Some((group, _)) = event.1.split_once('/') else {
            continue;
        };
        let Some(pid) = group
            .strip_prefix("prof_")
            .and_then(|p| p.parse::<u32>().ok())
        else {
            continue;
        };
        if !Path::new(&format!("/proc/{pid}")).exists() {
            let _ = write_definition(tracefs, &format!("-:{}\n", event.1));
        }
    }
}

/// Opens an event counting the hits of tracepoint `id` (a uprobe of [`Uprobes::add`]) by task
/// `pid` and, inherited, by every thread and child process it starts, from its next `exec` on
/// (or at once when `attach`: a task that already runs). The count is read with
/// [`read_count`]; the event writes no record.
pub fn tracepoint_counter(id: u64, pid: u32, attach: bool) -> crate::Result<OwnedFd> {
    let attr = PerfEventAttr {
        kind: PERF_TYPE_TRACEPOINT,
        size: std::mem::size_of::<PerfEventAttr>() as u32,
        config: id,
        flags: tracepoint_flags(attach),
        ..PerfEventAttr::default()
    };
    open_event(&attr, pid, None)
}

/// disabled | inherit | exclude_hv | enable_on_exec; attached: enabled at once, no exec.
fn tracepoint_flags(attach: bool) -> u64 {
    if attach {
        (1 << 1) | (1 << 6)
    } else {
        1 | (1 << 1) | (1 << 6) | (1 << 12)
    }
}

/// `PERF_SAMPLE_TID | TIME | REGS_USER | STACK_USER | IDENTIFIER`: the layout of the records
/// of [`tracepoint_recorder`]'s events (`crate::perf::records::parse_calls` reads them).
pub const CALL_SAMPLE_TYPE: u64 = (1 << 1) | (1 << 2) | (1 << 12) | (1 << 13) | (1 << 16);

/// The stack pointer in `sample_regs_user` (the kernel's register numbering).
#[cfg(target_arch = "x86_64")]
pub const CALL_REGS_MASK: u64 = 1 << 7;
/// The stack pointer in `sample_regs_user` (the kernel's register numbering).
#[cfg(target_arch = "aarch64")]
pub const CALL_REGS_MASK: u64 = 1 << 31;
/// The stack pointer in `sample_regs_user`: none known on this architecture.
#[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
pub const CALL_REGS_MASK: u64 = 0;

/// Bytes of user stack each call record copies: the word at the stack pointer, which at a
/// function's entry on x86_64 is the address its call returns to.
pub const CALL_STACK_BYTES: u32 = 8;

/// Opens an event that writes a record (its id, the task, the time on `CLOCK_MONOTONIC`, the
/// stack pointer and the word it points at) at each hit of tracepoint `id` (a uprobe of
/// [`Uprobes::add`] or [`Uprobes::add_return`]) by task `pid` on `cpu` and, inherited, by
/// every thread and child process it starts, from its next `exec` on (or at once when
/// `attach`). Its records go to its own ring, or with [`super::perf_event_set_output`] to another
/// event's on the same CPU; [`perf_event_id`] tells whose a record is.
pub fn tracepoint_recorder(id: u64, pid: u32, cpu: u32, attach: bool) -> crate::Result<OwnedFd> {
    let attr = PerfEventAttr {
        kind: PERF_TYPE_TRACEPOINT,
        size: std::mem::size_of::<PerfEventAttr>() as u32,
        config: id,
        sample_period: 1,
        sample_type: CALL_SAMPLE_TYPE,
        // watermark | use_clockid: the reader polls; times on the samples' clock.
        flags: tracepoint_flags(attach) | (1 << 14) | (1 << 25),
        wakeup_events: 1 << 20,
        sample_regs_user: CALL_REGS_MASK,
        sample_stack_user: CALL_STACK_BYTES,
        clockid: libc::CLOCK_MONOTONIC,
        ..PerfEventAttr::default()
    };
    open_event(&attr, pid, Some(cpu))
}

/// `PERF_EVENT_IOC_ID`: `_IOR('$', 7, __u64 *)`.
const PERF_EVENT_IOC_ID: libc::c_ulong = 0x8008_2407;

/// The id the kernel gave event `fd`: what `PERF_SAMPLE_IDENTIFIER` writes in its records (and
/// in those of its inherited copies).
pub fn perf_event_id(fd: &OwnedFd) -> crate::Result<u64> {
    let mut id = 0u64;
    // SAFETY: `fd` is an open perf event descriptor we own; this ioctl writes one u64 to the
    // pointer it is given, which points at `id`, live for the call.
    if unsafe { libc::ioctl(fd.as_raw_fd(), PERF_EVENT_IOC_ID as _, &mut id as *mut u64) } != 0 {
        return Err(last_error("ioctl(PERF_EVENT_IOC_ID)"));
    }
    Ok(id)
}

/// The count of a counting event: its own and, for an inherited one, that of every copy in the
/// threads and processes that inherited it (those that ended were added to it as they did).
pub fn read_count(fd: &OwnedFd) -> crate::Result<u64> {
    let mut value = [0u8; 8];
    // SAFETY: reads at most 8 bytes into a live 8-byte buffer from a descriptor we own.
    let n = unsafe { libc::read(fd.as_raw_fd(), value.as_mut_ptr().cast(), value.len()) };
    if n != value.len() as isize {
        return Err(last_error("read(perf event)"));
    }
    Ok(u64::from_ne_bytes(value))
}

/// Raises this process's soft limit on open descriptors (`RLIMIT_NOFILE`) to `wanted`, or as
/// far as its hard limit allows: the limit it has now. Only prof's own limit changes: a
/// process it started before keeps the one it was given.
pub fn raise_open_files_limit(wanted: u64) -> u64 {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: `limit` is a live rlimit for the kernel to fill.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) } != 0 {
        return 0;
    }
    if limit.rlim_cur >= wanted {
        return limit.rlim_cur;
    }
    let raised = libc::rlimit {
        rlim_cur: wanted.min(limit.rlim_max),
        rlim_max: limit.rlim_max,
    };
    // SAFETY: `raised` is a live, initialized rlimit the kernel only reads.
    if unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &raised) } != 0 {
        return limit.rlim_cur;
    }
    raised.rlim_cur
}
