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
