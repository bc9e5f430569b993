//! Per-thread POSIX timers on the monotonic clock (`timer_create` with `SIGEV_THREAD_ID`).

use super::super::last_error;
use super::super::signal::SIGNAL;

/// A POSIX timer created by [`timer_thread`]; delete it with [`timer_delete`].
#[derive(Debug)]
pub struct PosixTimer(libc::timer_t);

// SAFETY: a timer_t is an opaque id valid process-wide; any thread may delete it.
unsafe impl Send for PosixTimer {}

/// Set in the value of a signal from a thread's CPU-clock timer (see [`timer_thread_cpu`]):
/// bit 32 and up, above the thread id.
pub(in crate::sys) const CPU_TIMER_TAG: u64 = 1 << 32;

/// Creates a `CLOCK_MONOTONIC` timer sending SIGPROF to thread `tid` every `interval_ns`.
pub fn timer_thread(tid: u32, interval_ns: u64) -> crate::Result<PosixTimer> {
    let timer = create(libc::CLOCK_MONOTONIC, tid, u64::from(tid))?;
    if !timer_set(timer_id(&timer), interval_ns) {
        let err = last_error("timer_settime");
        timer_delete(timer);
        return Err(err);
    }
    Ok(timer)
}

/// Creates a disarmed timer on thread `tid`'s own CPU clock, sending SIGPROF to that thread
/// once armed (with [`timer_set`]) and the thread has run that long. The kernel checks such
/// timers only at its scheduler tick, so one fires up to a tick late; a thread that does not
/// run is never woken by it.
pub fn timer_thread_cpu(tid: u32) -> crate::Result<PosixTimer> {
    // The kernel's id of a thread's CPU clock (MAKE_THREAD_CPUCLOCK(tid, CPUCLOCK_SCHED) in
    // the kernel's posix-timers.h): the complement of the id shifted left by 3, the
    // per-thread bit (4) and the scheduler clock (2). What `pthread_getcpuclockid` returns.
    let clock = (!(tid as libc::clockid_t) << 3) | 6;
    create(clock, tid, u64::from(tid) | CPU_TIMER_TAG)
}

fn create(clock: libc::clockid_t, tid: u32, value: u64) -> crate::Result<PosixTimer> {
    // SAFETY: an all-zero sigevent is a valid value of this plain C struct.
    let mut sev: libc::sigevent = unsafe { std::mem::zeroed() };
    sev.sigev_notify = libc::SIGEV_THREAD_ID;
    sev.sigev_signo = SIGNAL;
    sev.sigev_notify_thread_id = tid as libc::c_int;
    // The handler reads the target thread (and which timer) from the signal's value instead
    // of asking the kernel.
    sev.sigev_value = libc::sigval {
        sival_ptr: value as usize as *mut libc::c_void,
    };
    let mut timer: libc::timer_t = std::ptr::null_mut();
    // SAFETY: `sev` and `timer` are valid and owned by this frame; timer_create writes the id.
    if unsafe { libc::timer_create(clock, &mut sev, &mut timer) } != 0 {
        return Err(last_error("timer_create"));
    }
    Ok(PosixTimer(timer))
}

/// A timer's id as a plain word, for [`timer_set`] from a signal handler (never 0).
pub fn timer_id(timer: &PosixTimer) -> u64 {
    // glibc's timer ids for SIGEV_THREAD_ID timers are the kernel's (from 0), kept in a
    // pointer-sized `timer_t`: add 1 so that 0 can mean "no timer".
    timer.0 as usize as u64 + 1
}

/// Arms the timer with id `id` (from [`timer_id`]) to fire every `interval_ns`, or disarms it
/// with 0; false when it could not (errno says why). Async-signal-safe (`timer_settime` is on
/// POSIX's list): the handler calls it. An id whose timer was deleted meanwhile (a session
/// stopping) fails and changes nothing: the kernel hands out timer ids in increasing order and
/// does not reuse one before it wraps around 2^31.
pub fn timer_set(id: u64, interval_ns: u64) -> bool {
    let spec = libc::itimerspec {
        it_interval: timespec(interval_ns),
        it_value: timespec(interval_ns),
    };
    let timer = (id.wrapping_sub(1)) as usize as libc::timer_t;
    // SAFETY: timer_settime only reads `spec`, a valid itimerspec owned by this frame, and
    // accepts any id (an unknown one is EINVAL); a null old value is allowed.
    unsafe { libc::timer_settime(timer, 0, &spec, std::ptr::null_mut()) == 0 }
}

/// Deletes a timer made by [`timer_thread`]; it sends nothing afterwards.
pub fn timer_delete(timer: PosixTimer) {
    // SAFETY: `timer` came from timer_create and is consumed here, so it is deleted once.
    unsafe { libc::timer_delete(timer.0) };
}

fn timespec(ns: u64) -> libc::timespec {
    libc::timespec {
        tv_sec: (ns / 1_000_000_000) as _,
        tv_nsec: (ns % 1_000_000_000) as libc::c_long,
    }
}
