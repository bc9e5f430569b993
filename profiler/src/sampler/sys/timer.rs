//! Timers: per-thread perf events (task clock), per-thread POSIX timers and `setitimer`.

use super::last_error;
#[cfg(target_os = "linux")]
use super::signal::{SIGNAL, TRAP_TAG};
#[cfg(not(target_os = "linux"))]
use super::unsupported;
#[cfg(target_os = "linux")]
use std::os::fd::FromRawFd;
use std::os::fd::OwnedFd;

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
    /// Bit field: disabled (bit 0), inherit (bit 1), exclude_kernel (bit 5), exclude_hv (bit 6),
    /// inherit_thread (bit 35), remove_on_exec (bit 36), sigtrap (bit 37).
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

/// How a perf event's overflow reaches its thread.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PerfDelivery {
    /// The kernel sends SIGTRAP itself on the thread's way back to user space (`attr.sigtrap`,
    /// Linux 5.13+). Cheaper: no self-interrupt to run the signal code later.
    Sigtrap,
    /// As [`PerfDelivery::Sigtrap`], and the event is copied into every thread the thread
    /// creates from then on (`attr.inherit` with `inherit_thread`: threads only, not forked
    /// processes), each copy counting and signalling its own thread. A copy carries the same
    /// `sig_data`, so the thread id in it is the original thread's, not the copy's.
    SigtrapInherit,
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
    if delivery != PerfDelivery::Sigio {
        // remove_on_exec (which the kernel requires with sigtrap) | sigtrap
        flags |= (1 << 36) | (1 << 37);
    }
    if delivery == PerfDelivery::SigtrapInherit {
        // inherit | inherit_thread
        flags |= (1 << 1) | (1 << 35);
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
        if delivery != PerfDelivery::Sigio {
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
