//! Per-thread POSIX timers on the monotonic clock (`timer_create` with `SIGEV_THREAD_ID`).

use super::super::last_error;
use super::super::signal::SIGNAL;

/// A POSIX timer created by [`timer_thread`]; delete it with [`timer_delete`].
#[derive(Debug)]
pub struct Timer(libc::timer_t);

// SAFETY: a timer_t is an opaque id valid process-wide; any thread may delete it.
unsafe impl Send for Timer {}

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

/// Deletes a timer made by [`timer_thread`]; it sends nothing afterwards.
pub fn timer_delete(timer: Timer) {
    // SAFETY: `timer` came from timer_create and is consumed here, so it is deleted once.
    unsafe { libc::timer_delete(timer.0) };
}

fn timespec(ns: u64) -> libc::timespec {
    libc::timespec {
        tv_sec: (ns / 1_000_000_000) as _,
        tv_nsec: (ns % 1_000_000_000) as libc::c_long,
    }
}
