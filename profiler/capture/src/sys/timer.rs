//! Timers every Unix has: the process-wide `setitimer(ITIMER_PROF)`, and how a perf event (see
//! the OS module) delivers its signal.

use super::last_error;

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

/// The process's `ITIMER_PROF` as it was before [`setitimer_prof`] changed it: a program's own
/// profiling timer, put back by [`restore_itimer_prof`].
#[derive(Clone, Copy)]
pub struct ItimerProf(libc::itimerval);

impl ItimerProf {
    /// True when the timer was armed (a value left to run).
    pub fn is_armed(&self) -> bool {
        self.0.it_value.tv_sec != 0 || self.0.it_value.tv_usec != 0
    }
}

/// Arms (or with 0, disarms) the process-wide `ITIMER_PROF` timer; returns what it was.
pub fn setitimer_prof(interval_ns: u64) -> crate::Result<ItimerProf> {
    let tv = libc::timeval {
        tv_sec: (interval_ns / 1_000_000_000) as _,
        tv_usec: ((interval_ns % 1_000_000_000) / 1_000) as _,
    };
    let spec = libc::itimerval {
        it_interval: tv,
        it_value: tv,
    };
    set(&spec)
}

/// Puts back an `ITIMER_PROF` saved by [`setitimer_prof`]: its period, and what was left of
/// the current one when it was taken (the time between does not count).
pub fn restore_itimer_prof(saved: &ItimerProf) -> crate::Result<()> {
    set(&saved.0).map(|_| ())
}

/// A disarmed `itimerval`: storage for the kernel to fill.
fn disarmed() -> libc::itimerval {
    let zero = libc::timeval {
        tv_sec: 0,
        tv_usec: 0,
    };
    libc::itimerval {
        it_interval: zero,
        it_value: zero,
    }
}

fn set(spec: &libc::itimerval) -> crate::Result<ItimerProf> {
    let mut old = disarmed();
    // SAFETY: `spec` is a valid itimerval and `old` a valid, writable one, both outliving the
    // call.
    if unsafe { libc::setitimer(libc::ITIMER_PROF, spec, &mut old) } != 0 {
        return Err(last_error("setitimer"));
    }
    Ok(ItimerProf(old))
}

/// The period of the process's `ITIMER_PROF` now, in nanoseconds (0: not periodic or not
/// armed): whether a timer still runs at the period prof set, or the program armed its own.
pub fn itimer_prof_period_ns() -> u64 {
    let mut now = disarmed();
    // SAFETY: `now` is a valid, writable itimerval owned by this frame.
    if unsafe { libc::getitimer(libc::ITIMER_PROF, &mut now) } != 0 {
        return 0;
    }
    now.it_interval.tv_sec as u64 * 1_000_000_000 + now.it_interval.tv_usec as u64 * 1_000
}
