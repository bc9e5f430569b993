//! Perf events that copy each sample's registers and the top of its user stack into an mmap'd
//! ring (no signal), and starting a command held before `exec` until its events are open: what
//! `prof record` (see `crate::record`) is built on.

use super::super::last_error;
use super::perf::{
    PerfEventAttr, PERF_COUNT_SW_TASK_CLOCK, PERF_FLAG_FD_CLOEXEC, PERF_TYPE_SOFTWARE,
};
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::process::CommandExt;
use std::process::{Child, Command};
use std::sync::atomic::{fence, Ordering};

/// `PERF_SAMPLE_IP | TID | TIME | PERIOD | REGS_USER | STACK_USER`: the layout of the sample
/// records `crate::record::records` parses.
pub const RING_SAMPLE_TYPE: u64 = 1 | (1 << 1) | (1 << 2) | (1 << 8) | (1 << 12) | (1 << 13);

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
}

/// Opens a task-clock event on process `pid` (and, inherited, every thread and child process it
/// starts) on `cpu`, disabled until `pid` calls `exec`, writing samples and the MMAP2, COMM,
/// FORK and EXIT records (each with the task and its `CLOCK_MONOTONIC` time, as `monotonic_ns`
/// reads it) to its ring.
///
/// Time in the kernel is sampled too where `perf_event_paranoid` allows it (each such sample
/// carries the user registers and stack at the kernel's entry): a user-only task clock counts
/// that time but drops the samples whose timer fires in the kernel, 2-4% of a busy thread's
/// (`perf record -e task-clock:u` loses the same). Where it is refused, user space only.
pub fn perf_event_ring(pid: u32, cpu: u32, event: &RingEvent) -> crate::Result<OwnedFd> {
    // disabled | inherit | exclude_hv | mmap | comm | enable_on_exec | task | watermark |
    // sample_id_all | mmap2 | comm_exec | use_clockid
    let flags = 1
        | (1 << 1)
        | (1 << 6)
        | (1 << 8)
        | (1 << 9)
        | (1 << 12)
        | (1 << 13)
        | (1 << 14)
        | (1 << 18)
        | (1 << 23)
        | (1 << 24)
        | (1 << 25);
    let mut attr = PerfEventAttr {
        kind: PERF_TYPE_SOFTWARE,
        config: PERF_COUNT_SW_TASK_CLOCK,
        size: std::mem::size_of::<PerfEventAttr>() as u32,
        sample_period: event.period_ns.max(1),
        sample_type: RING_SAMPLE_TYPE,
        flags,
        wakeup_events: event.watermark,
        sample_regs_user: event.regs_mask,
        sample_stack_user: event.stack_bytes,
        clockid: libc::CLOCK_MONOTONIC,
        ..PerfEventAttr::default()
    };
    let open = |attr: &PerfEventAttr| {
        // SAFETY: `attr` is a properly sized, initialized perf_event_attr (its `size` field
        // says how much the kernel may read); the other arguments are plain integers.
        unsafe {
            libc::syscall(
                libc::SYS_perf_event_open,
                attr as *const PerfEventAttr,
                pid as libc::pid_t,
                cpu as libc::c_int,
                -1 as libc::c_int,
                PERF_FLAG_FD_CLOEXEC,
            )
        }
    };
    let mut fd = open(&attr);
    let denied = || {
        matches!(
            io::Error::last_os_error().raw_os_error(),
            Some(libc::EACCES | libc::EPERM)
        )
    };
    if fd < 0 && denied() {
        // exclude_kernel: what any paranoid level up to 2 allows on one's own processes.
        attr.flags |= 1 << 5;
        fd = open(&attr);
    }
    if fd < 0 {
        return Err(last_error("perf_event_open"));
    }
    // SAFETY: the kernel just returned this descriptor to us and nothing else owns it.
    Ok(unsafe { OwnedFd::from_raw_fd(fd as libc::c_int) })
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
    _fd: OwnedFd,
    base: *mut u8,
    len: usize,
    page: usize,
}

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
            _fd: fd,
            base: base.cast(),
            len,
            page,
        })
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

/// Makes this process ignore the terminal's interrupt and quit keys (SIGINT, SIGQUIT), which
/// reach the recorded command too: it decides whether to end, and prof saves what it has when
/// it does. Call after the command has started (a child forked later would inherit the
/// disposition across `exec`).
pub fn ignore_terminal_interrupts() {
    for signal in [libc::SIGINT, libc::SIGQUIT] {
        // SAFETY: setting a standard signal's disposition to SIG_IGN installs no handler and
        // touches no memory of this process.
        unsafe { libc::signal(signal, libc::SIG_IGN) };
    }
}
