//! Perf events that copy each sample's registers and the top of its user stack into an mmap'd
//! ring (no signal), and starting a command held before `exec` until its events are open: what
//! `prof record` (see `crate::record`) is built on.

use super::super::last_error;
use super::perf::{open_event, PerfEventAttr, PERF_COUNT_SW_TASK_CLOCK, PERF_TYPE_SOFTWARE};
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::process::CommandExt;
use std::process::{Child, Command};
use std::sync::atomic::{fence, Ordering};

/// `PERF_SAMPLE_IP | TID | TIME | PERIOD | CALLCHAIN | REGS_USER | STACK_USER`: the layout of
/// the sample records `crate::perf::records` parses. The call chain is the kernel's part only
/// (`exclude_callchain_user`: user stacks are unwound from the copy), empty for events that
/// exclude the kernel: 8 bytes a sample for one layout in every mode.
pub const RING_SAMPLE_TYPE: u64 = OWN_RING_SAMPLE_TYPE | (1 << 5);

/// What the library's own ring (`Timer::PerfRing`) samples: `IP | TID | TIME | PERIOD |
/// REGS_USER | STACK_USER`, without the call chain (it records no kernel frames).
pub const OWN_RING_SAMPLE_TYPE: u64 = 1 | (1 << 1) | (1 << 2) | (1 << 8) | (1 << 12) | (1 << 13);

/// `PERF_COUNT_SW_CONTEXT_SWITCHES`: fires as a thread is switched out (on the scheduler's
/// kernel stack, so only for events that include the kernel).
const PERF_COUNT_SW_CONTEXT_SWITCHES: u64 = 3;

/// `PERF_EVENT_IOC_SET_OUTPUT`: write an event's records to another event's ring.
const PERF_EVENT_IOC_SET_OUTPUT: libc::c_ulong = 0x2405;

/// What a ring event samples.
#[derive(Clone, Copy, Debug)]
pub struct RingEvent {
    /// Task-clock nanoseconds between samples.
    pub period_ns: u64,
    /// `sample_regs_user`: the registers copied with each sample (the kernel's numbering).
    pub regs_mask: u64,
    /// `sample_stack_user`: bytes of user stack copied with each sample (a multiple of 8).
    pub stack_bytes: u32,
    /// Bytes of ring data past which the reader is woken.
    pub watermark: u32,
    /// Whether samples carry the kernel's call chain (needs `perf_event_paranoid` 1 or lower,
    /// or `CAP_PERFMON`).
    pub kernel: bool,
    /// Whether the task clock counts time in the kernel (implied by `kernel`; the same
    /// permission): without it, user space only.
    pub kernel_time: bool,
    /// The task already runs (`prof record --pid`): count from now, not from its next `exec`.
    pub attach: bool,
    /// Whether each sample carries its event's count (`PERF_SAMPLE_READ`): for an inherited
    /// event, the count of the sampled thread's own copy on that CPU (Linux 6.12 and later;
    /// older kernels refuse it with `EINVAL`).
    pub read: bool,
}

/// The attribute flags of ring events, as `perf_event_attr`'s bit field numbers them.
mod bit {
    pub const DISABLED: u64 = 1;
    pub const INHERIT: u64 = 1 << 1;
    pub const EXCLUDE_KERNEL: u64 = 1 << 5;
    pub const EXCLUDE_HV: u64 = 1 << 6;
    pub const MMAP: u64 = 1 << 8;
    pub const COMM: u64 = 1 << 9;
    pub const ENABLE_ON_EXEC: u64 = 1 << 12;
    pub const TASK: u64 = 1 << 13;
    pub const WATERMARK: u64 = 1 << 14;
    pub const SAMPLE_ID_ALL: u64 = 1 << 18;
    pub const EXCLUDE_CALLCHAIN_KERNEL: u64 = 1 << 21;
    pub const EXCLUDE_CALLCHAIN_USER: u64 = 1 << 22;
    pub const MMAP2: u64 = 1 << 23;
    pub const COMM_EXEC: u64 = 1 << 24;
    pub const USE_CLOCKID: u64 = 1 << 25;
    pub const CONTEXT_SWITCH: u64 = 1 << 26;
}

/// Opens a task-clock event on process `pid` (and, inherited, every thread and child process it
/// starts) on `cpu`, disabled until `pid` calls `exec`, user space only unless `event.kernel`
/// (then with the kernel's call chain of each sample) or `event.kernel_time`, writing samples
/// and the
/// MMAP2, COMM, FORK and EXIT records (each with the task and its `CLOCK_MONOTONIC` time, as
/// `monotonic_ns` reads it) to its ring.
pub fn perf_event_ring(pid: u32, cpu: u32, event: &RingEvent) -> crate::Result<OwnedFd> {
    use bit::*;
    let flags = DISABLED
        | INHERIT
        | EXCLUDE_HV
        | MMAP
        | COMM
        | ENABLE_ON_EXEC
        | TASK
        | WATERMARK
        | SAMPLE_ID_ALL
        | MMAP2
        | COMM_EXEC
        | USE_CLOCKID
        | EXCLUDE_CALLCHAIN_USER
        | kernel_flags(event);
    // Attached to a running task: enabled at once (neither `disabled` nor `enable_on_exec`).
    let flags = if event.attach {
        flags & !(DISABLED | ENABLE_ON_EXEC)
    } else {
        flags
    };
    let attr = PerfEventAttr {
        kind: PERF_TYPE_SOFTWARE,
        config: PERF_COUNT_SW_TASK_CLOCK,
        size: std::mem::size_of::<PerfEventAttr>() as u32,
        // The kernel takes at least 10 µs between task-clock samples; saying so here keeps a
        // task-clock sample's period apart from a context switch's (1).
        sample_period: event.period_ns.max(10_000),
        sample_type: ring_sample_type(event),
        flags,
        wakeup_events: event.watermark,
        sample_regs_user: event.regs_mask,
        sample_stack_user: event.stack_bytes,
        clockid: libc::CLOCK_MONOTONIC,
        ..PerfEventAttr::default()
    };
    open(&attr, pid, cpu)
}

/// [`RING_SAMPLE_TYPE`], with the event's count when `event.read`: the events of one ring lay
/// out their samples alike.
fn ring_sample_type(event: &RingEvent) -> u64 {
    if event.read {
        RING_SAMPLE_TYPE | PERF_SAMPLE_READ
    } else {
        RING_SAMPLE_TYPE
    }
}

/// `exclude_kernel` unless the kernel's time or frames are asked for, `exclude_callchain_kernel`
/// unless its frames are.
fn kernel_flags(event: &RingEvent) -> u64 {
    let mut flags = 0;
    if !event.kernel {
        flags |= bit::EXCLUDE_CALLCHAIN_KERNEL;
        if !event.kernel_time {
            flags |= bit::EXCLUDE_KERNEL;
        }
    }
    flags
}

/// Opens a context-switch event on `pid` (inherited as [`perf_event_ring`]'s) on `cpu`, one
/// sample per switch-out with the same registers, stack copy and layout (its period is 1), plus
/// the `PERF_RECORD_SWITCH` records of every switch in and out, written to `ring`'s ring (the
/// event [`perf_event_ring`] opened on the same CPU, already mapped). The event counts in the
/// scheduler, in the kernel, so the kernel refuses it at `perf_event_paranoid` 2 and above
/// unless the caller has `CAP_PERFMON`; `event.kernel` only says whether its samples carry the
/// kernel's call chain.
pub fn perf_switch_event(
    pid: u32,
    cpu: u32,
    event: &RingEvent,
    ring: &PerfRing,
) -> crate::Result<OwnedFd> {
    use bit::*;
    let callchain = if event.kernel {
        0
    } else {
        EXCLUDE_CALLCHAIN_KERNEL
    };
    let attr = PerfEventAttr {
        kind: PERF_TYPE_SOFTWARE,
        config: PERF_COUNT_SW_CONTEXT_SWITCHES,
        size: std::mem::size_of::<PerfEventAttr>() as u32,
        sample_period: 1,
        sample_type: ring_sample_type(event),
        flags: (DISABLED
            | INHERIT
            | EXCLUDE_HV
            | ENABLE_ON_EXEC
            | SAMPLE_ID_ALL
            | USE_CLOCKID
            | EXCLUDE_CALLCHAIN_USER
            | CONTEXT_SWITCH
            | callchain)
            & if event.attach {
                // Attached to a running task: enabled at once.
                !(DISABLED | ENABLE_ON_EXEC)
            } else {
                !0
            },
        sample_regs_user: event.regs_mask,
        sample_stack_user: event.stack_bytes,
        clockid: libc::CLOCK_MONOTONIC,
        ..PerfEventAttr::default()
    };
    let fd = open(&attr, pid, cpu)?;
    perf_event_set_output(&fd, &ring.fd)?;
    Ok(fd)
}

/// `perf_event_open(attr, pid, cpu, no group, close-on-exec)`.
fn open(attr: &PerfEventAttr, pid: u32, cpu: u32) -> crate::Result<OwnedFd> {
    open_event(attr, pid, Some(cpu))
}

/// What an event of the library's own threads ([`perf_event_own_ring`]) counts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OwnRingKind {
    /// The thread's CPU time: a sample every `period_ns` of it.
    TaskClock,
    /// Every time the thread leaves its CPU (a sample at each switch-out, with the stack it
    /// blocked or was preempted at), and a `PERF_RECORD_SWITCH` at each switch in and out.
    /// The kernel takes these samples in its scheduler, so the event must count kernel
    /// context (`exclude_kernel` off): refused where `perf_event_paranoid` is above 1.
    Switches,
}

/// `PERF_SAMPLE_READ`: the sample carries the event's count (after its period).
const PERF_SAMPLE_READ: u64 = 1 << 4;
const PERF_EVENT_IOC_ENABLE: libc::c_ulong = 0x2400;

/// Opens a disabled event on thread `tid` of this process, counted on `cpu` only, and
/// inherited by the threads it creates (not by child processes: `inherit_thread`), sampling
/// as `event` says with each record's `CLOCK_MONOTONIC` time (`sample_id_all`), and with
/// `event.read` each sample's count of the event (`PERF_SAMPLE_READ`: the thread's own, inherited or
/// not, since Linux 6.12, which refuses it with `EINVAL` before): what
/// `Timer::PerfRing` samples the library's own threads with. Per CPU, because the kernel maps
/// no ring of an inherited per-task (`cpu = -1`) event; every event of one CPU writes to one
/// ring ([`perf_event_set_output`]).
pub fn perf_event_own_ring(
    tid: u32,
    cpu: u32,
    event: &RingEvent,
    kind: OwnRingKind,
) -> crate::Result<OwnedFd> {
    // disabled | inherit | exclude_hv | watermark | sample_id_all | use_clockid |
    // inherit_thread
    let mut flags = 1 | (1 << 1) | (1 << 6) | (1 << 14) | (1 << 18) | (1 << 25) | (1 << 35);
    let (config, period) = match kind {
        // exclude_kernel
        OwnRingKind::TaskClock => (PERF_COUNT_SW_TASK_CLOCK, event.period_ns.max(1)),
        OwnRingKind::Switches => (PERF_COUNT_SW_CONTEXT_SWITCHES, 1),
    };
    match kind {
        OwnRingKind::TaskClock => flags |= 1 << 5,
        // context_switch
        OwnRingKind::Switches => flags |= 1 << 26,
    }
    let attr = PerfEventAttr {
        kind: PERF_TYPE_SOFTWARE,
        config,
        size: std::mem::size_of::<PerfEventAttr>() as u32,
        sample_period: period,
        sample_type: if event.read {
            OWN_RING_SAMPLE_TYPE | PERF_SAMPLE_READ
        } else {
            OWN_RING_SAMPLE_TYPE
        },
        flags,
        wakeup_events: event.watermark,
        sample_regs_user: event.regs_mask,
        sample_stack_user: event.stack_bytes,
        clockid: libc::CLOCK_MONOTONIC,
        ..PerfEventAttr::default()
    };
    open(&attr, tid, cpu)
}

/// Sends the records of event `fd` to the ring of event `ring` (both on the same CPU).
pub fn perf_event_set_output(fd: &OwnedFd, ring: &OwnedFd) -> crate::Result<()> {
    // SAFETY: both are open perf event descriptors we own; this ioctl takes the target
    // descriptor as a plain integer and touches no memory of ours (the kernel holds a reference
    // to the ring it writes to).
    let r = unsafe {
        libc::ioctl(
            fd.as_raw_fd(),
            PERF_EVENT_IOC_SET_OUTPUT as _,
            ring.as_raw_fd(),
        )
    };
    if r != 0 {
        return Err(last_error("ioctl(PERF_EVENT_IOC_SET_OUTPUT)"));
    }
    Ok(())
}

/// Starts a disabled perf event counting.
pub fn perf_event_enable(fd: &OwnedFd) -> crate::Result<()> {
    // SAFETY: `fd` is an open perf event descriptor we own; this ioctl takes no argument.
    if unsafe { libc::ioctl(fd.as_raw_fd(), PERF_EVENT_IOC_ENABLE as _, 0) } != 0 {
        return Err(last_error("ioctl(PERF_EVENT_IOC_ENABLE)"));
    }
    Ok(())
}

/// The most descriptors this process may have open (`RLIMIT_NOFILE`'s soft limit).
pub fn open_files_limit() -> u64 {
    // SAFETY: an all-zero rlimit is valid storage for getrlimit to fill.
    let mut limit: libc::rlimit = unsafe { std::mem::zeroed() };
    // SAFETY: getrlimit fills `limit`, which this frame owns.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) } != 0 {
        return 1024;
    }
    limit.rlim_cur
}

/// The CPUs a per-CPU event can be opened on (`/sys/devices/system/cpu/online`).
pub fn online_cpus() -> Vec<u32> {
    let text = std::fs::read_to_string("/sys/devices/system/cpu/online").unwrap_or_default();
    let mut cpus = Vec::new();
    for part in text.trim().split(',').filter(|p| !p.is_empty()) {
        let (lo, hi) = part.split_once('-').unwrap_or((part, part));
        if let (Ok(lo), Ok(hi)) = (lo.parse::<u32>(), hi.parse::<u32>()) {
            cpus.extend(lo..=hi);
        }
    }
    if cpus.is_empty() {
        let n = std::thread::available_parallelism().map_or(1, |n| n.get());
        cpus.extend(0..n as u32);
    }
    cpus
}

/// The ring of one perf event: a metadata page and `2^n` data pages shared with the kernel,
/// which writes records at `data_head`; the reader copies them out and advances `data_tail`.
pub struct PerfRing {
    fd: OwnedFd,
    base: *mut u8,
    len: usize,
    page: usize,
}

// SAFETY: a `PerfRing` owns its mapping and descriptor outright; nothing else in the process
// refers to them, and the mapping is only touched through `&mut self` (`drain`) or in `drop`,
// so moving it to another thread (the collector's) shares nothing.
unsafe impl Send for PerfRing {}

/// Offsets of `data_head` and `data_tail` in `struct perf_event_mmap_page`.
const DATA_HEAD: usize = 1024;
const DATA_TAIL: usize = 1032;

impl PerfRing {
    /// Maps the ring of `fd` with `data_pages` data pages (a power of two).
    pub fn new(fd: OwnedFd, data_pages: usize) -> crate::Result<PerfRing> {
        // SAFETY: sysconf has no preconditions.
        let page = usize::try_from(unsafe { libc::sysconf(libc::_SC_PAGESIZE) }).unwrap_or(4096);
        let len = page * (data_pages + 1);
        // SAFETY: a fresh shared mapping of a perf event descriptor we own, at an address the
        // kernel chooses; the result is checked before use.
        let base = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED,
                fd.as_raw_fd(),
                0,
            )
        };
        if base == libc::MAP_FAILED {
            return Err(last_error("mmap(perf ring)"));
        }
        Ok(PerfRing {
            fd,
            base: base.cast(),
            len,
            page,
        })
    }

    /// The event whose ring it is (for [`perf_event_set_output`]).
    pub fn fd(&self) -> &OwnedFd {
        &self.fd
    }

    /// The size of its data area, in bytes.
    pub fn data_bytes(&self) -> usize {
        self.len - self.page
    }

    /// Appends the bytes of the records written since the last call to `out` and hands their
    /// space back to the kernel. Records come whole (the kernel publishes `data_head` only past
    /// complete records).
    pub fn drain(&mut self, out: &mut Vec<u8>) {
        let size = (self.len - self.page) as u64;
        // SAFETY: `base` maps `len` bytes (checked in `new`) and stays mapped while `self`
        // lives; `data_head` and `data_tail` are aligned u64s of the metadata page, which the
        // kernel writes (head) and reads (tail) concurrently: hence volatile accesses, with the
        // fences the perf ABI prescribes (read head, then data; data read, then write tail).
        // The data area is `size` bytes after the first page, and the copies below stay in it.
        unsafe {
            let head_ptr = self.base.add(DATA_HEAD).cast::<u64>();
            let tail_ptr = self.base.add(DATA_TAIL).cast::<u64>();
            let head = std::ptr::read_volatile(head_ptr);
            fence(Ordering::Acquire);
            let tail = std::ptr::read_volatile(tail_ptr);
            if head == tail {
                return;
            }
            let data = self.base.add(self.page);
            let mut at = tail;
            while at < head {
                let offset = at % size;
                let run = (size - offset).min(head - at);
                let bytes = std::slice::from_raw_parts(data.add(offset as usize), run as usize);
                out.extend_from_slice(bytes);
                at += run;
            }
            fence(Ordering::Release);
            std::ptr::write_volatile(tail_ptr, head);
        }
    }
}

impl Drop for PerfRing {
    fn drop(&mut self) {
        // SAFETY: `base` and `len` are the mapping made in `new`, not used after this.
        unsafe { libc::munmap(self.base.cast(), self.len) };
    }
}

/// A command started and held before its `exec` until [`Held::release`].
pub struct Held {
    /// The held process.
    pub pid: u32,
    release: OwnedFd,
    spawning: std::thread::JoinHandle<io::Result<Child>>,
}

impl Held {
    /// Lets the held command go on to `exec`; its `Child` once it has (or why it could not).
    pub fn release(self) -> io::Result<Child> {
        let byte = [1u8];
        // SAFETY: writes one byte from a live buffer to a pipe descriptor we own.
        let n = unsafe { libc::write(self.release.as_raw_fd(), byte.as_ptr().cast(), 1) };
        if n != 1 {
            return Err(io::Error::last_os_error());
        }
        self.spawning
            .join()
            .unwrap_or_else(|_| Err(io::Error::other("the spawning thread panicked")))
    }

    /// Ends the held command without running it: it fails before `exec`.
    pub fn abandon(self) {
        drop(self.release);
        let _ = self.spawning.join();
    }
}

/// A pipe, both ends close-on-exec: (read, write).
fn pipe() -> io::Result<(OwnedFd, OwnedFd)> {
    let mut fds = [0 as libc::c_int; 2];
    // SAFETY: `fds` is a live array of two ints for the kernel to fill.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: both descriptors were just made by pipe2 and are owned by nothing else.
    Ok(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
}

/// Starts `command` (its arguments, environment, standard streams and working directory as they
/// are), the new process waiting before `exec` until [`Held::release`].
///
/// `Command::spawn` returns only once the child has called `exec` (it reports `exec` errors),
/// so it runs on a thread of its own, and the child sends its pid over a pipe before it waits.
pub fn spawn_held(mut command: Command) -> io::Result<Held> {
    let (release_read, release_write) = pipe()?;
    let (ready_read, ready_write) = pipe()?;
    let wait_on = release_read.as_raw_fd();
    let other_end = release_write.as_raw_fd();
    let tell = ready_write.as_raw_fd();
    // SAFETY: the closure runs in the forked child before `exec` and only calls `getpid`,
    // `write`, `close` and `read`, which are async-signal-safe, on descriptors the child
    // inherited (all close-on-exec, so the program never sees them): `tell` is kept open by the
    // spawning thread until `spawn` returns, the release pipe by prof until the child execs.
    // Closing its copy of the release pipe's write end makes prof's the only one: if prof lets
    // go without releasing, the read sees the end of the pipe and the child fails before `exec`.
    // It allocates nothing and takes no lock.
    unsafe {
        command.pre_exec(move || {
            libc::close(other_end);
            let pid = libc::getpid().to_ne_bytes();
            if libc::write(tell, pid.as_ptr().cast(), pid.len()) != pid.len() as isize {
                return Err(io::Error::last_os_error());
            }
            let mut byte = 0u8;
            loop {
                let n = libc::read(wait_on, (&mut byte as *mut u8).cast(), 1);
                if n == 1 {
                    return Ok(());
                }
                if n == 0 {
                    return Err(io::Error::from(io::ErrorKind::BrokenPipe));
                }
                if *libc::__errno_location() != libc::EINTR {
                    return Err(io::Error::last_os_error());
                }
            }
        });
    }
    let spawning = std::thread::Builder::new()
        .name("prof-spawn".into())
        .spawn(move || {
            let child = command.spawn();
            // Now no child can inherit them any more.
            drop((ready_write, release_read));
            child
        })?;
    let mut pid = [0u8; 4];
    let mut got = 0;
    while got < pid.len() {
        // SAFETY: reads into the live buffer's remaining bytes from a pipe descriptor we own.
        let n = unsafe {
            libc::read(
                ready_read.as_raw_fd(),
                pid[got..].as_mut_ptr().cast(),
                pid.len() - got,
            )
        };
        if n > 0 {
            got += n as usize;
        } else if n == 0 || io::Error::last_os_error().kind() != io::ErrorKind::Interrupted {
            // The child did not get as far as its pre-exec step: `spawn` says why.
            drop(release_write);
            return Err(match spawning.join() {
                Ok(Err(e)) => e,
                _ => io::Error::other("the command did not start"),
            });
        }
    }
    Ok(Held {
        pid: i32::from_ne_bytes(pid) as u32,
        release: release_write,
        spawning,
    })
}
