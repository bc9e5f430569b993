//! Every system call and raw memory access of the sampler, each `unsafe` block argued in a
//! `// SAFETY:` comment. The rest of the sampler is safe Rust over the wrappers here.

use std::io;
#[cfg(target_os = "linux")]
use std::os::fd::FromRawFd;
use std::os::fd::OwnedFd;

/// The signal every timer mechanism delivers, except perf events with [`PerfDelivery::Sigtrap`].
pub const SIGNAL: libc::c_int = libc::SIGPROF;
/// The signal a perf event with [`PerfDelivery::Sigtrap`] delivers.
pub const TRAP: libc::c_int = libc::SIGTRAP;
/// `si_code` of a SIGTRAP sent by a perf event (`TRAP_PERF`).
#[cfg(target_os = "linux")]
const TRAP_PERF: i32 = 6;
/// The high half of the data our perf events attach to their SIGTRAP ("prof"); the low half is
/// the thread id. Tells our SIGTRAPs from a debugger's or another tool's.
#[cfg(target_os = "linux")]
const TRAP_TAG: u64 = 0x7072_6f66;

#[cfg(target_os = "linux")]
const F_SETSIG: libc::c_int = 10;
#[cfg(target_os = "linux")]
const F_SETOWN_EX: libc::c_int = 15;
#[cfg(target_os = "linux")]
const F_OWNER_TID: libc::c_int = 0;

#[cfg(target_os = "linux")]
#[repr(C)]
struct FOwnerEx {
    kind: libc::c_int,
    pid: libc::pid_t,
}

#[cfg(target_os = "linux")]
/// `struct perf_event_attr` up to `PERF_ATTR_SIZE_VER7` (128 bytes), the fields we set named.
#[repr(C)]
#[derive(Default)]
struct PerfEventAttr {
    kind: u32,
    size: u32,
    config: u64,
    sample_period: u64,
    sample_type: u64,
    read_format: u64,
    /// Bit field: disabled (bit 0), exclude_kernel (bit 5), exclude_hv (bit 6), remove_on_exec
    /// (bit 36), sigtrap (bit 37).
    flags: u64,
    wakeup_events: u32,
    bp_type: u32,
    config1: u64,
    config2: u64,
    branch_sample_type: u64,
    sample_regs_user: u64,
    sample_stack_user: u32,
    clockid: i32,
    sample_regs_intr: u64,
    aux_watermark: u32,
    sample_max_stack: u16,
    reserved: u16,
    aux_sample_size: u32,
    reserved3: u32,
    /// Copied into `si_perf_data` of the SIGTRAP a `sigtrap` event sends.
    sig_data: u64,
}

#[cfg(target_os = "linux")]
const PERF_TYPE_SOFTWARE: u32 = 1;
#[cfg(target_os = "linux")]
const PERF_COUNT_SW_TASK_CLOCK: u64 = 1;
#[cfg(target_os = "linux")]
const PERF_FLAG_FD_CLOEXEC: libc::c_ulong = 8;
#[cfg(target_os = "linux")]
const PERF_EVENT_IOC_ENABLE: libc::c_ulong = 0x2400;
#[cfg(target_os = "linux")]
const PERF_EVENT_IOC_DISABLE: libc::c_ulong = 0x2401;

fn last_error(call: &'static str) -> crate::Error {
    crate::Error::Os {
        call,
        source: io::Error::last_os_error(),
    }
}

/// The kernel's id of the calling thread.
#[cfg(target_os = "linux")]
pub fn gettid() -> u32 {
    // SAFETY: gettid has no arguments and no preconditions; it is async-signal-safe (a plain
    // system call).
    unsafe { libc::syscall(libc::SYS_gettid) as u32 }
}

fn clock_ns(clock: libc::clockid_t) -> Option<u64> {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec owned by this frame; clock_gettime writes only
    // into it and is async-signal-safe (POSIX lists it).
    let rc = unsafe { libc::clock_gettime(clock, &mut ts) };
    (rc == 0).then(|| ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64)
}

/// The system's id of the calling thread (truncated to 32 bits).
#[cfg(not(target_os = "linux"))]
pub fn gettid() -> u32 {
    let mut id = 0u64;
    // SAFETY: a null thread means the calling thread; `id` is a valid, writable u64.
    unsafe { libc::pthread_threadid_np(0 as libc::pthread_t, &mut id) };
    id as u32
}

/// CPU time consumed by the calling thread, in nanoseconds.
pub fn thread_cpu_ns() -> u64 {
    clock_ns(libc::CLOCK_THREAD_CPUTIME_ID).unwrap_or(0)
}

/// CPU time consumed by thread `tid` of this process, or `None` if it has exited (or, off
/// Linux, cannot be read for another thread).
pub fn thread_cpu_ns_of(tid: u32) -> Option<u64> {
    if cfg!(target_os = "linux") {
        // The kernel's per-thread CPU clock id: MAKE_THREAD_CPUCLOCK(tid, CPUCLOCK_SCHED).
        let clock = ((!(tid as libc::clockid_t)) << 3) | 6;
        clock_ns(clock)
    } else {
        None
    }
}

/// The monotonic clock, in nanoseconds.
pub fn monotonic_ns() -> u64 {
    clock_ns(libc::CLOCK_MONOTONIC).unwrap_or(0)
}

/// User plus system CPU time of the whole process so far (`getrusage(RUSAGE_SELF)`), in ns.
pub fn process_cpu_ns() -> u64 {
    // SAFETY: an all-zero rusage is a valid value of this plain C struct.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: `usage` is a valid, writable rusage owned by this frame.
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut usage) };
    let tv = |t: libc::timeval| t.tv_sec as u64 * 1_000_000_000 + t.tv_usec as u64 * 1_000;
    tv(usage.ru_utime) + tv(usage.ru_stime)
}

/// A signal's disposition that was in place before ours, to put back at stop.
pub struct SavedAction {
    signal: libc::c_int,
    action: libc::sigaction,
}

impl SavedAction {
    /// True when the saved disposition was the default one (for SIGPROF and SIGTRAP: terminate
    /// the process).
    pub fn is_default(&self) -> bool {
        self.action.sa_sigaction == libc::SIG_DFL
    }
}

/// The raw handler: reads the registers and errno, then hands over to safe code.
extern "C" fn on_signal(sig: libc::c_int, info: *mut libc::siginfo_t, ctx: *mut libc::c_void) {
    // SAFETY: errno_location returns the calling thread's errno slot, valid for the thread's
    // life; saving it here and restoring it below keeps the interrupted code's errno intact.
    let errno = unsafe { *errno_location() };
    match source(sig, info) {
        Source::Foreign => foreign_trap(),
        source => super::handler::on_sample(registers(ctx), source),
    }
    // SAFETY: as above; the slot is still the calling thread's.
    unsafe { *errno_location() = errno };
}

/// A SIGTRAP that is not from our perf events (a breakpoint, `kill -TRAP`). We only take over
/// SIGTRAP when its disposition was the default or "ignore" (see [`trap_is_unclaimed`]), so
/// do what that would have done: nothing for "ignore" (the state we leave after a session),
/// and for the default put it back and raise the signal again, so the process ends the way it
/// would have without us (SIGTRAP is blocked in this handler, so it is delivered on return).
fn foreign_trap() {
    if TRAP_IGNORED_BEFORE.load(Ordering::Relaxed) {
        return;
    }
    // SAFETY: an all-zero sigaction with SIG_DFL as handler is the default disposition.
    let mut default: libc::sigaction = unsafe { std::mem::zeroed() };
    default.sa_sigaction = libc::SIG_DFL;
    // SAFETY: `default` is a valid sigaction owned by this frame; sigaction and raise are
    // async-signal-safe.
    unsafe {
        libc::sigaction(TRAP, &default, std::ptr::null_mut());
        libc::raise(TRAP);
    }
}

/// Whether SIGTRAP was ignored before we took it over (otherwise it was the default).
static TRAP_IGNORED_BEFORE: AtomicBool = AtomicBool::new(false);

/// Who sent a signal, as far as the sampler cares.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(not(target_os = "linux"), allow(dead_code))]
pub enum Source {
    /// A per-thread POSIX timer whose value carries the target thread's id.
    Timer(u32),
    /// A file descriptor's owner signal (a perf event routed with `F_SETSIG`).
    Fd(i32),
    /// A perf event's own SIGTRAP, whose data carries the target thread's id.
    Perf(u32),
    /// A SIGTRAP that is not ours: passed on, never sampled.
    Foreign,
    /// Any other SIGPROF (`setitimer`, `raise`, `kill`).
    Other,
}

/// Reads the sender from the siginfo (Linux layout, same on x86_64 and aarch64: `si_code` at
/// byte 8, the union at 16; `si_fd` of a SIGPOLL-style signal, the `sigval` of a timer signal
/// and the 64-bit `si_perf_data` of a perf SIGTRAP all at 24).
#[cfg(target_os = "linux")]
fn source(sig: libc::c_int, info: *const libc::siginfo_t) -> Source {
    const SI_TIMER: i32 = -2;
    if info.is_null() {
        return if sig == TRAP {
            Source::Foreign
        } else {
            Source::Other
        };
    }
    let base = info as *const u8;
    // SAFETY: the kernel passes a valid 128-byte siginfo_t (8-aligned) for the handler's
    // duration; offsets 8 and 24 are aligned i32 fields inside it, and 24 an aligned u64.
    let (code, word, data) = unsafe {
        (
            (base.add(8) as *const i32).read(),
            (base.add(24) as *const i32).read(),
            (base.add(24) as *const u64).read(),
        )
    };
    if sig == TRAP {
        return if code == TRAP_PERF && data >> 32 == TRAP_TAG {
            Source::Perf(data as u32)
        } else {
            Source::Foreign
        };
    }
    match code {
        SI_TIMER => Source::Timer(word as u32),
        // POLL_IN ..= POLL_HUP: the band of an F_SETSIG signal; si_fd is set.
        1..=6 => Source::Fd(word),
        _ => Source::Other,
    }
}

#[cfg(not(target_os = "linux"))]
fn source(sig: libc::c_int, _info: *const libc::siginfo_t) -> Source {
    if sig == TRAP {
        Source::Foreign
    } else {
        Source::Other
    }
}

#[cfg(target_os = "linux")]
use libc::__errno_location as errno_location;
#[cfg(not(target_os = "linux"))]
use libc::__error as errno_location;

/// The interrupted registers needed to unwind: instruction, stack and frame pointers.
#[derive(Clone, Copy, Debug, Default)]
pub struct Regs {
    /// Instruction pointer.
    pub pc: u64,
    /// Stack pointer.
    pub sp: u64,
    /// Frame pointer (rbp / x29).
    pub fp: u64,
    /// Link register (x30) on aarch64; 0 elsewhere.
    #[cfg_attr(not(target_arch = "aarch64"), allow(dead_code))]
    pub lr: u64,
}

#[cfg(all(target_os = "linux", target_arch = "x86_64"))]
fn registers(ctx: *mut libc::c_void) -> Regs {
    if ctx.is_null() {
        return Regs::default();
    }
    // SAFETY: for an SA_SIGINFO handler the kernel passes a pointer to the ucontext_t it saved
    // on the signal stack; it is valid for reads for the duration of the handler.
    let uc = unsafe { &*(ctx as *const libc::ucontext_t) };
    let g = &uc.uc_mcontext.gregs;
    Regs {
        pc: g[libc::REG_RIP as usize] as u64,
        sp: g[libc::REG_RSP as usize] as u64,
        fp: g[libc::REG_RBP as usize] as u64,
        lr: 0,
    }
}

#[cfg(all(target_os = "linux", target_arch = "aarch64"))]
fn registers(ctx: *mut libc::c_void) -> Regs {
    if ctx.is_null() {
        return Regs::default();
    }
    // SAFETY: for an SA_SIGINFO handler the kernel passes a pointer to the ucontext_t it saved
    // on the signal stack; it is valid for reads for the duration of the handler.
    let uc = unsafe { &*(ctx as *const libc::ucontext_t) };
    let m = &uc.uc_mcontext;
    Regs {
        pc: m.pc,
        sp: m.sp,
        fp: m.regs[29],
        lr: m.regs[30],
    }
}

#[cfg(target_os = "macos")]
fn registers(ctx: *mut libc::c_void) -> Regs {
    if ctx.is_null() {
        return Regs::default();
    }
    // SAFETY: for an SA_SIGINFO handler the kernel passes the saved ucontext, valid for reads
    // during the handler; its uc_mcontext points to the saved machine state, also valid then.
    let state = unsafe {
        let uc = &*(ctx as *const libc::ucontext_t);
        if uc.uc_mcontext.is_null() {
            return Regs::default();
        }
        &(*uc.uc_mcontext).__ss
    };
    registers_of(state)
}

#[cfg(all(target_os = "macos", target_arch = "x86_64"))]
fn registers_of(s: &libc::__darwin_x86_thread_state64) -> Regs {
    Regs {
        pc: s.__rip,
        sp: s.__rsp,
        fp: s.__rbp,
        lr: 0,
    }
}

#[cfg(all(target_os = "macos", target_arch = "aarch64"))]
fn registers_of(s: &libc::__darwin_arm_thread_state64) -> Regs {
    Regs {
        pc: s.__pc,
        sp: s.__sp,
        fp: s.__fp,
        lr: s.__lr,
    }
}

#[cfg(not(any(
    all(target_os = "linux", target_arch = "x86_64"),
    all(target_os = "linux", target_arch = "aarch64"),
    target_os = "macos"
)))]
fn registers(_ctx: *mut libc::c_void) -> Regs {
    Regs::default()
}

/// Installs the sampling handler for `signal` (SIGPROF, or SIGTRAP for perf events with
/// [`PerfDelivery::Sigtrap`]) with `SA_RESTART`, returning the old disposition.
pub fn install_handler(signal: libc::c_int) -> crate::Result<SavedAction> {
    // SAFETY: an all-zero sigaction is a valid value of this plain C struct (empty mask, no
    // flags); every field we rely on is set below.
    let mut action: libc::sigaction = unsafe { std::mem::zeroed() };
    action.sa_sigaction = on_signal as *const () as usize;
    action.sa_flags = libc::SA_SIGINFO | libc::SA_RESTART;
    // SAFETY: `action.sa_mask` is a valid sigset_t owned by this frame.
    unsafe { libc::sigemptyset(&mut action.sa_mask) };
    // SAFETY: as for `action`.
    let mut old: libc::sigaction = unsafe { std::mem::zeroed() };
    // SAFETY: both pointers are to valid sigaction structs owned by this frame; `on_signal` has
    // the three-argument signature SA_SIGINFO requires and only calls async-signal-safe code.
    let rc = unsafe { libc::sigaction(signal, &action, &mut old) };
    if rc != 0 {
        return Err(last_error("sigaction"));
    }
    if signal == TRAP {
        TRAP_IGNORED_BEFORE.store(old.sa_sigaction == libc::SIG_IGN, Ordering::Relaxed);
    }
    Ok(SavedAction {
        signal,
        action: old,
    })
}

/// Puts back a disposition saved by [`install_handler`]. A saved default disposition (which
/// would kill the process on a signal still in flight) is replaced by "ignore". For SIGTRAP
/// that changes nothing for breakpoints and other traps the CPU raises (the kernel forces the
/// default action on those when the signal is ignored), only a `kill -TRAP` from outside is
/// then ignored.
pub fn restore_handler(saved: &SavedAction) -> crate::Result<()> {
    let mut action = saved.action;
    if saved.is_default() {
        action.sa_sigaction = libc::SIG_IGN;
    }
    // SAFETY: `action` is a valid sigaction copied from what the kernel gave us earlier (or
    // that with SIG_IGN as handler); passing a null old-action pointer is allowed.
    let rc = unsafe { libc::sigaction(saved.signal, &action, std::ptr::null_mut()) };
    if rc != 0 {
        return Err(last_error("sigaction"));
    }
    Ok(())
}

/// The current handler address of `signal` (or `SIG_DFL` / `SIG_IGN`), for tests and checks.
pub fn current_handler(signal: libc::c_int) -> usize {
    // SAFETY: an all-zero sigaction is a valid value of this plain C struct.
    let mut old: libc::sigaction = unsafe { std::mem::zeroed() };
    // SAFETY: a null new action only queries; `old` is a valid, writable sigaction.
    unsafe { libc::sigaction(signal, std::ptr::null(), &mut old) };
    old.sa_sigaction
}

/// True when SIGTRAP has its default disposition or is ignored: nobody in the process handles
/// it, so perf events may deliver through it and our handler can pass other traps on.
pub fn trap_is_unclaimed() -> bool {
    matches!(current_handler(TRAP), libc::SIG_DFL | libc::SIG_IGN)
}

/// The address of our own handler, to compare with [`current_handler`].
pub fn our_handler() -> usize {
    on_signal as *const () as usize
}

#[cfg(not(target_os = "linux"))]
fn unsupported(call: &'static str) -> crate::Error {
    crate::Error::Os {
        call,
        source: io::Error::new(io::ErrorKind::Unsupported, "not available on this OS"),
    }
}

/// How a perf event's overflow reaches its thread.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PerfDelivery {
    /// The kernel sends SIGTRAP itself on the thread's way back to user space (`attr.sigtrap`,
    /// Linux 5.13+). Cheaper: no self-interrupt to run the signal code later.
    Sigtrap,
    /// SIGPROF through the descriptor's owner (`O_ASYNC`, `F_SETSIG`, `F_SETOWN_EX`), sent from
    /// an irq_work, which costs a self-interrupt (a VM exit on a virtual machine) per sample.
    Sigio,
}

/// Opens a task-clock perf event on thread `tid`. Linux only.
#[cfg(not(target_os = "linux"))]
pub fn perf_event_thread(
    _tid: u32,
    _period_ns: u64,
    _delivery: PerfDelivery,
) -> crate::Result<OwnedFd> {
    Err(unsupported("perf_event_open"))
}

/// Stops a perf event from counting before it is closed.
#[cfg(not(target_os = "linux"))]
pub fn perf_event_disable(_fd: &OwnedFd) {}

/// A per-thread POSIX timer: none exist off Linux.
#[cfg(not(target_os = "linux"))]
#[derive(Debug)]
pub enum Timer {}

/// Creates a per-thread timer. Linux only.
#[cfg(not(target_os = "linux"))]
pub fn timer_thread(_tid: u32, _interval_ns: u64) -> crate::Result<Timer> {
    Err(unsupported("timer_create(SIGEV_THREAD_ID)"))
}

/// Deletes a per-thread timer.
#[cfg(not(target_os = "linux"))]
pub fn timer_delete(timer: Timer) {
    match timer {}
}

/// The objects loaded: only read on Linux (elsewhere unwinding uses frame pointers).
#[cfg(not(target_os = "linux"))]
pub fn loaded_objects() -> (Vec<LoadedObject>, (u64, u64)) {
    (Vec::new(), (0, 0))
}

#[cfg(target_os = "linux")]
/// Opens a task-clock perf event on thread `tid` that signals that thread every `period_ns` of
/// its CPU time, as `delivery` says. The event starts enabled.
pub fn perf_event_thread(
    tid: u32,
    period_ns: u64,
    delivery: PerfDelivery,
) -> crate::Result<OwnedFd> {
    // disabled | exclude_kernel | exclude_hv
    let mut flags = 1 | (1 << 5) | (1 << 6);
    if delivery == PerfDelivery::Sigtrap {
        // remove_on_exec (which the kernel requires with sigtrap) | sigtrap
        flags |= (1 << 36) | (1 << 37);
    }
    let attr = PerfEventAttr {
        kind: PERF_TYPE_SOFTWARE,
        size: std::mem::size_of::<PerfEventAttr>() as u32,
        config: PERF_COUNT_SW_TASK_CLOCK,
        sample_period: period_ns.max(1),
        flags,
        wakeup_events: 1,
        sig_data: (TRAP_TAG << 32) | u64::from(tid),
        ..PerfEventAttr::default()
    };
    // SAFETY: `attr` is a properly sized, initialized perf_event_attr (its `size` field says how
    // much the kernel may read); the other arguments are plain integers.
    let fd = unsafe {
        libc::syscall(
            libc::SYS_perf_event_open,
            &attr as *const PerfEventAttr,
            tid as libc::pid_t,
            -1 as libc::c_int,
            -1 as libc::c_int,
            PERF_FLAG_FD_CLOEXEC,
        )
    };
    if fd < 0 {
        return Err(last_error("perf_event_open"));
    }
    // SAFETY: the kernel just returned this descriptor to us and nothing else owns it.
    let owned = unsafe { OwnedFd::from_raw_fd(fd as libc::c_int) };
    let raw = fd as libc::c_int;
    let owner = FOwnerEx {
        kind: F_OWNER_TID,
        pid: tid as libc::pid_t,
    };
    // SAFETY: `raw` is an open descriptor we own; the fcntl commands take an int or a pointer
    // to a valid f_owner_ex owned by this frame; the ioctl takes no argument.
    unsafe {
        if delivery == PerfDelivery::Sigtrap {
            if libc::ioctl(raw, PERF_EVENT_IOC_ENABLE as _, 0) != 0 {
                return Err(last_error("ioctl(PERF_EVENT_IOC_ENABLE)"));
            }
            return Ok(owned);
        }
        let flags = libc::fcntl(raw, libc::F_GETFL);
        if libc::fcntl(raw, libc::F_SETFL, flags | libc::O_ASYNC) != 0 {
            return Err(last_error("fcntl(F_SETFL, O_ASYNC)"));
        }
        if libc::fcntl(raw, F_SETSIG, SIGNAL) != 0 {
            return Err(last_error("fcntl(F_SETSIG)"));
        }
        if libc::fcntl(raw, F_SETOWN_EX, &owner as *const FOwnerEx) != 0 {
            return Err(last_error("fcntl(F_SETOWN_EX)"));
        }
        if libc::ioctl(raw, PERF_EVENT_IOC_ENABLE as _, 0) != 0 {
            return Err(last_error("ioctl(PERF_EVENT_IOC_ENABLE)"));
        }
    }
    Ok(owned)
}

#[cfg(target_os = "linux")]
/// Stops a perf event from counting (and so from signalling) before it is closed.
pub fn perf_event_disable(fd: &OwnedFd) {
    use std::os::fd::AsRawFd;
    // SAFETY: `fd` is an open perf event descriptor we own; this ioctl takes no argument.
    unsafe { libc::ioctl(fd.as_raw_fd(), PERF_EVENT_IOC_DISABLE as _, 0) };
}

#[cfg(target_os = "linux")]
/// A POSIX timer created by [`timer_thread`]; delete it with [`timer_delete`].
#[derive(Debug)]
pub struct Timer(libc::timer_t);

// SAFETY: a timer_t is an opaque id valid process-wide; any thread may delete it.
#[cfg(target_os = "linux")]
unsafe impl Send for Timer {}

#[cfg(target_os = "linux")]
/// Creates a `CLOCK_MONOTONIC` timer sending SIGPROF to thread `tid` every `interval_ns`.
pub fn timer_thread(tid: u32, interval_ns: u64) -> crate::Result<Timer> {
    // SAFETY: an all-zero sigevent is a valid value of this plain C struct.
    let mut sev: libc::sigevent = unsafe { std::mem::zeroed() };
    sev.sigev_notify = libc::SIGEV_THREAD_ID;
    sev.sigev_signo = SIGNAL;
    sev.sigev_notify_thread_id = tid as libc::c_int;
    // The handler reads the target thread from the signal's value instead of asking the kernel.
    sev.sigev_value = libc::sigval {
        sival_ptr: tid as usize as *mut libc::c_void,
    };
    let mut timer: libc::timer_t = std::ptr::null_mut();
    // SAFETY: `sev` and `timer` are valid and owned by this frame; timer_create writes the id.
    if unsafe { libc::timer_create(libc::CLOCK_MONOTONIC, &mut sev, &mut timer) } != 0 {
        return Err(last_error("timer_create"));
    }
    let spec = libc::itimerspec {
        it_interval: timespec(interval_ns),
        it_value: timespec(interval_ns),
    };
    // SAFETY: `timer` was just created; `spec` is a valid itimerspec; a null old value is
    // allowed.
    if unsafe { libc::timer_settime(timer, 0, &spec, std::ptr::null_mut()) } != 0 {
        let err = last_error("timer_settime");
        // SAFETY: the timer exists and is deleted once.
        unsafe { libc::timer_delete(timer) };
        return Err(err);
    }
    Ok(Timer(timer))
}

#[cfg(target_os = "linux")]
/// Deletes a timer made by [`timer_thread`]; it sends nothing afterwards.
pub fn timer_delete(timer: Timer) {
    // SAFETY: `timer` came from timer_create and is consumed here, so it is deleted once.
    unsafe { libc::timer_delete(timer.0) };
}

#[cfg(target_os = "linux")]
fn timespec(ns: u64) -> libc::timespec {
    libc::timespec {
        tv_sec: (ns / 1_000_000_000) as _,
        tv_nsec: (ns % 1_000_000_000) as libc::c_long,
    }
}

/// Arms (or with 0, disarms) the process-wide `ITIMER_PROF` timer.
pub fn setitimer_prof(interval_ns: u64) -> crate::Result<()> {
    let tv = libc::timeval {
        tv_sec: (interval_ns / 1_000_000_000) as _,
        tv_usec: ((interval_ns % 1_000_000_000) / 1_000) as _,
    };
    let spec = libc::itimerval {
        it_interval: tv,
        it_value: tv,
    };
    // SAFETY: `spec` is a valid itimerval owned by this frame; a null old value is allowed.
    if unsafe { libc::setitimer(libc::ITIMER_PROF, &spec, std::ptr::null_mut()) } != 0 {
        return Err(last_error("setitimer"));
    }
    Ok(())
}

/// Reads the stack of the interrupted thread between `lo` and `hi`.
#[derive(Clone, Copy, Debug)]
pub struct StackReader {
    lo: u64,
    hi: u64,
}

impl StackReader {
    /// A reader for the calling thread's own stack, given the readable mapping `[lo, hi)` that
    /// holds the interrupted stack pointer `sp` (from a snapshot of `/proc/self/maps`).
    /// Returns `None` when `sp` is not inside it.
    pub fn for_current_thread(sp: u64, lo: u64, hi: u64) -> Option<StackReader> {
        (lo <= sp && sp < hi).then_some(StackReader { lo: sp, hi })
    }

    /// The word at `addr`, or `None` outside `[sp, hi)` or when misaligned.
    pub fn read(&self, addr: u64) -> Option<u64> {
        if addr < self.lo || addr.checked_add(8)? > self.hi || addr % 8 != 0 {
            return None;
        }
        // SAFETY: `[lo, hi)` lies in a readable mapping that contains the interrupted stack
        // pointer, i.e. the calling thread's own stack, which cannot be unmapped while this
        // thread runs on it; `addr` is 8-aligned and `addr + 8 <= hi`. A volatile read of
        // memory another frame may be writing is fine for a plain integer.
        Some(unsafe { std::ptr::read_volatile(addr as *const u64) })
    }
}

/// The loader's counters of objects added and removed so far: they change whenever something
/// is loaded or unloaded. Cheap (stops at the first object, allocates nothing), but takes the
/// loader lock: never call it from the handler.
#[cfg(target_os = "linux")]
pub fn loader_counters() -> (u64, u64) {
    extern "C" fn first(
        info: *mut libc::dl_phdr_info,
        size: libc::size_t,
        data: *mut libc::c_void,
    ) -> libc::c_int {
        // SAFETY: `data` is the `&mut (u64, u64)` passed below, alive across the call; the
        // loader passes a valid dl_phdr_info of `size` bytes (the counters exist when `size`
        // covers them).
        unsafe {
            if size >= std::mem::size_of::<libc::dl_phdr_info>() {
                *(data as *mut (u64, u64)) = ((*info).dlpi_adds, (*info).dlpi_subs);
            }
        }
        1
    }
    let mut counters = (0u64, 0u64);
    // SAFETY: `first` matches the callback signature and only writes the `(u64, u64)` that
    // `data` points to, which lives across the call.
    unsafe {
        libc::dl_iterate_phdr(
            Some(first),
            &mut counters as *mut (u64, u64) as *mut libc::c_void,
        )
    };
    counters
}

/// The loader's counters: nothing is tracked off Linux.
#[cfg(not(target_os = "linux"))]
pub fn loader_counters() -> (u64, u64) {
    (0, 0)
}

/// A loaded ELF object as the dynamic loader reports it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LoadedObject {
    /// Path as the loader knows it; empty for the main program.
    pub name: String,
    /// Load bias: add to an address in the file to get the address in memory.
    pub bias: u64,
    /// Executable segments, in memory addresses.
    pub exec: Vec<std::ops::Range<u64>>,
}

#[cfg(target_os = "linux")]
/// The objects currently loaded, and the loader's add/remove counters (which change whenever
/// something is loaded or unloaded). Takes the loader lock: never call it from the handler.
pub fn loaded_objects() -> (Vec<LoadedObject>, (u64, u64)) {
    struct Acc {
        objects: Vec<LoadedObject>,
        counters: (u64, u64),
    }
    extern "C" fn each(
        info: *mut libc::dl_phdr_info,
        size: libc::size_t,
        data: *mut libc::c_void,
    ) -> libc::c_int {
        // SAFETY: dl_iterate_phdr passes the `data` pointer we gave it, an `&mut Acc` that
        // outlives the call, and no one else touches it meanwhile.
        let acc = unsafe { &mut *(data as *mut Acc) };
        // SAFETY: the loader passes a valid dl_phdr_info of `size` bytes for this call.
        let info = unsafe { &*info };
        if size >= std::mem::size_of::<libc::dl_phdr_info>() {
            acc.counters = (info.dlpi_adds, info.dlpi_subs);
        }
        let name = if info.dlpi_name.is_null() {
            String::new()
        } else {
            // SAFETY: a non-null dlpi_name is a NUL-terminated string valid during the call.
            unsafe { std::ffi::CStr::from_ptr(info.dlpi_name) }
                .to_string_lossy()
                .into_owned()
        };
        let phdrs = if info.dlpi_phdr.is_null() {
            &[][..]
        } else {
            // SAFETY: dlpi_phdr points to dlpi_phnum program headers valid during the call.
            unsafe { std::slice::from_raw_parts(info.dlpi_phdr, info.dlpi_phnum as usize) }
        };
        let bias = info.dlpi_addr;
        let exec = phdrs
            .iter()
            .filter(|p| p.p_type == libc::PT_LOAD && p.p_flags & libc::PF_X != 0)
            .map(|p| bias + p.p_vaddr..bias + p.p_vaddr + p.p_memsz)
            .collect();
        acc.objects.push(LoadedObject { name, bias, exec });
        0
    }
    let mut acc = Acc {
        objects: Vec::new(),
        counters: (0, 0),
    };
    // SAFETY: `each` matches the callback signature and only uses `data` as the `&mut Acc`
    // passed here, which lives across the call.
    unsafe { libc::dl_iterate_phdr(Some(each), &mut acc as *mut Acc as *mut libc::c_void) };
    (acc.objects, acc.counters)
}

/// Blocks SIGPROF in the calling thread (the collector), so it is never sampled.
pub fn block_signal_in_this_thread() {
    // SAFETY: an all-zero sigset_t is valid storage; sigemptyset/sigaddset initialize it.
    let mut set: libc::sigset_t = unsafe { std::mem::zeroed() };
    // SAFETY: `set` is a valid sigset_t owned by this frame; a null old set is allowed.
    unsafe {
        libc::sigemptyset(&mut set);
        libc::sigaddset(&mut set, SIGNAL);
        libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut());
    }
}

/// Counts the handlers currently between [`read_begin`] and the guard's drop, process-wide.
static ACTIVE_READERS: AtomicUsize = AtomicUsize::new(0);

use std::cell::UnsafeCell;
use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicUsize, Ordering};
use std::sync::Mutex;

/// Marks a reader (a running handler) of [`Rcu`] cells; values it read stay alive until it is
/// dropped.
pub struct ReadGuard(());

/// Starts a read section. Async-signal-safe (one atomic add).
pub fn read_begin() -> ReadGuard {
    ACTIVE_READERS.fetch_add(1, Ordering::SeqCst);
    ReadGuard(())
}

impl Drop for ReadGuard {
    fn drop(&mut self) {
        ACTIVE_READERS.fetch_sub(1, Ordering::SeqCst);
    }
}

struct Retired<T>(Vec<*mut T>);
// SAFETY: the pointers are uniquely owned boxes waiting to be freed; sending them between
// threads is sending `Box<T>`, which is fine for `T: Send`.
unsafe impl<T: Send> Send for Retired<T> {}

/// A value the signal handler reads without locks while other threads replace it: a replaced
/// value is freed only once no handler is inside a read section.
pub struct Rcu<T> {
    ptr: AtomicPtr<T>,
    retired: Mutex<Retired<T>>,
}

impl<T: Send + Sync> Rcu<T> {
    /// An empty cell.
    pub const fn empty() -> Self {
        Rcu {
            ptr: AtomicPtr::new(std::ptr::null_mut()),
            retired: Mutex::new(Retired(Vec::new())),
        }
    }

    /// The current value, valid while `guard` lives.
    pub fn get<'a>(&'a self, _guard: &'a ReadGuard) -> Option<&'a T> {
        let ptr = self.ptr.load(Ordering::SeqCst);
        // SAFETY: a non-null pointer came from Box::into_raw in `replace`. It is freed only by
        // `reclaim` after it was swapped out *and* ACTIVE_READERS was seen at zero. Our guard
        // incremented ACTIVE_READERS (SeqCst) before this load (SeqCst), so either the swap came
        // after our increment and the reclaimer sees a non-zero count until the guard drops, or
        // the swap came before our load and we read the new pointer. The borrow is tied to the
        // guard, so it cannot outlive the read section.
        unsafe { ptr.as_ref() }
    }

    /// Puts in a new value (or none); the old one is freed once no reader can hold it.
    pub fn replace(&self, value: Option<Box<T>>) {
        let new = value.map_or(std::ptr::null_mut(), Box::into_raw);
        let old = self.ptr.swap(new, Ordering::SeqCst);
        let mut retired = self.retired.lock().unwrap_or_else(|e| e.into_inner());
        if !old.is_null() {
            retired.0.push(old);
        }
        drop(retired);
        self.reclaim();
    }

    /// Frees replaced values if no handler is running; returns true when none are left.
    pub fn reclaim(&self) -> bool {
        let mut retired = self.retired.lock().unwrap_or_else(|e| e.into_inner());
        if retired.0.is_empty() {
            return true;
        }
        if ACTIVE_READERS.load(Ordering::SeqCst) != 0 {
            return false;
        }
        for ptr in retired.0.drain(..) {
            // SAFETY: `ptr` came from Box::into_raw, was swapped out of `self.ptr` before
            // it was retired, and no reader is active now (see `get`), so nothing can still
            // borrow it; each retired pointer is freed once because it is drained.
            drop(unsafe { Box::from_raw(ptr) });
        }
        true
    }

    /// Replaces the value with none and waits until it is freed.
    pub fn clear_and_wait(&self) {
        self.replace(None);
        while !self.reclaim() {
            std::thread::yield_now();
        }
    }
}

impl<T> Drop for Rcu<T> {
    fn drop(&mut self) {
        let ptr = *self.ptr.get_mut();
        let retired =
            std::mem::take(&mut self.retired.get_mut().unwrap_or_else(|e| e.into_inner()).0);
        for p in retired.into_iter().chain((!ptr.is_null()).then_some(ptr)) {
            // SAFETY: dropping the cell means `&mut self`: no reader can borrow from it (a
            // borrow from `get` keeps `self` borrowed), and each pointer is a distinct box.
            drop(unsafe { Box::from_raw(p) });
        }
    }
}

/// A value that one handler at a time may use, taken without waiting: a try-lock that never
/// blocks, for per-handler scratch state such as an unwinder cache.
pub struct TryCell<T> {
    busy: AtomicBool,
    value: UnsafeCell<T>,
}

// SAFETY: access to `value` is exclusive (guarded by `busy`), so sharing the cell between
// threads is like sharing a Mutex<T>, which needs only `T: Send`.
unsafe impl<T: Send> Sync for TryCell<T> {}

impl<T> TryCell<T> {
    /// A free cell holding `value`.
    pub fn new(value: T) -> Self {
        TryCell {
            busy: AtomicBool::new(false),
            value: UnsafeCell::new(value),
        }
    }

    /// Runs `f` on the value if no one else is using it; `None` otherwise.
    pub fn try_with<R>(&self, f: impl FnOnce(&mut T) -> R) -> Option<R> {
        if self
            .busy
            .compare_exchange(false, true, Ordering::Acquire, Ordering::Relaxed)
            .is_err()
        {
            return None;
        }
        struct Release<'a>(&'a AtomicBool);
        impl Drop for Release<'_> {
            fn drop(&mut self) {
                self.0.store(false, Ordering::Release);
            }
        }
        let _release = Release(&self.busy);
        // SAFETY: we won the false→true exchange of `busy`, so no other caller holds a
        // reference to the value until `_release` stores false after `f` returns; `f` cannot
        // re-enter this cell on this thread because a nested call would see `busy` set.
        Some(f(unsafe { &mut *self.value.get() }))
    }
}
