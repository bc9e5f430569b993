//! The sampler's side of `prof::diagnostics` (see there): which handlers are installed, and
//! counters the handler keeps since the process started. The counters are kept in every build;
//! only the `testing` feature reads them.
#![cfg_attr(not(feature = "testing"), allow(dead_code, unused_imports))]

use super::{handler, sys};
use std::sync::atomic::Ordering;
use std::time::Duration;

pub use super::handler::{DWARF_ROOM, FP_ROOM};
pub use super::wall::WallStats;

/// The SIGPROF handler currently installed, as an address (or `SIG_DFL` = 0 / `SIG_IGN` = 1);
/// lets tests check that the previous disposition is back after stop.
pub fn current_sigprof_handler() -> usize {
    sys::current_handler(sys::SIGNAL)
}

/// The SIGTRAP handler currently installed, as for [`current_sigprof_handler`]: the
/// `perf_event_sigtrap` timer delivers SIGTRAP.
pub fn current_sigtrap_handler() -> usize {
    sys::current_handler(sys::TRAP)
}

/// The address of `prof`'s signal handler, to compare with [`current_sigprof_handler`] and
/// [`current_sigtrap_handler`].
pub fn our_handler_address() -> usize {
    sys::our_handler()
}

/// True while `prof`'s own handler is installed for SIGPROF or SIGTRAP (whichever the session's
/// timer delivers): during a session, and after one for a signal whose disposition was the
/// default before (see [`Profiler::stop`](crate::Profiler::stop)).
pub fn our_handler_installed() -> bool {
    [sys::SIGNAL, sys::TRAP]
        .into_iter()
        .any(|signal| sys::current_handler(signal) == sys::our_handler())
}

/// With [`Measure::Time`](crate::diagnostics::Measure::Time) at start: signals handled in
/// sessions so far in this process, and the nanoseconds spent inside the handler for them (the monotonic clock from
/// entry to exit, the weight's own thread-CPU-clock read included; a run preempted past 50 µs
/// counts 50 µs): the handler's own cost, without the kernel's signal delivery.
/// With [`Measure::Empty`](crate::diagnostics::Measure::Empty) the handler returns at once, records nothing and only
/// counts the signals here, so a benchmark can measure what the timer and signal delivery
/// alone cost.
pub fn handler_stats() -> (u64, Duration) {
    (
        handler::HANDLED.load(Ordering::Relaxed),
        Duration::from_nanos(handler::HANDLER_NS.load(Ordering::Relaxed)),
    )
}

/// Samples so far in this process whose weight was read from their thread's CPU clock (a
/// system call in the handler). With the perf-event timers at intervals of 100 µs or more, a
/// sample that comes one period after its thread's last weighs that period without the read;
/// the others (a thread's first sample, one after the thread was descheduled, blocked or in
/// the kernel, every sample of the other timers and of wall mode) read it.
pub fn clock_reads() -> u64 {
    handler::CLOCK_READS.load(Ordering::Relaxed)
}

/// Objects whose unwind sections were read from their files so far in this process (the
/// sessions of a process share what they read: a later one reads only objects loaded since).
/// (Always 0 where this build has no DWARF unwinder.)
pub fn unwind_modules_read() -> u64 {
    #[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
    return prof_capture::unwind::dwarf::modules_read();
    #[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
    0
}

/// Times the collector threads of this process woke (went round their loop) so far.
pub fn collector_wakeups() -> u64 {
    COLLECTOR_WAKEUPS.load(Ordering::Relaxed)
}

/// Counts what [`collector_wakeups`] returns.
pub(super) static COLLECTOR_WAKEUPS: std::sync::atomic::AtomicU64 =
    std::sync::atomic::AtomicU64::new(0);

/// Samples so far in this process whose outer frames were copied from their thread's previous
/// stack, and (with `Settings::verify_reuse` at start, which unwinds those stacks again in
/// full) how many of them differed from the full unwind.
pub fn reuse_stats() -> (u64, u64) {
    (
        handler::REUSED.load(Ordering::Relaxed),
        handler::REUSE_MISMATCHES.load(Ordering::Relaxed),
    )
}

/// Frames unwound so far in this process by samples that then copied their outer frames from
/// their thread's previous stack, the leaf and the frame where they joined it included: over
/// the first figure of [`reuse_stats`], how deep a sample unwinds on average before it can
/// copy the rest.
pub fn frames_before_reuse() -> u64 {
    handler::FRAMES_BEFORE_REUSE.load(Ordering::Relaxed)
}

/// `timer_create` threads parked (their monotonic timer swapped for a CPU-clock one after
/// 10 ms idle) and unparked so far in this process.
pub fn timer_parking_stats() -> (u64, u64) {
    (
        handler::PARKED.load(Ordering::Relaxed),
        handler::UNPARKED.load(Ordering::Relaxed),
    )
}

/// Samples so far in this process that the stack the handler ran on (a small alternate signal
/// stack, or a thread stack nearly used up) had too little room for: how many were unwound
/// with frame pointers instead of DWARF, and how many were skipped because even that did not
/// fit (those are also counted in the session's `dropped_samples`).
pub fn stack_room_stats() -> (u64, u64) {
    (
        handler::SHORT_STACK_FP.load(Ordering::Relaxed),
        handler::SHORT_STACK_SKIPPED.load(Ordering::Relaxed),
    )
}

/// CPU time consumed so far by thread `tid` of this process (Linux), `None` if it has exited.
pub fn thread_cpu_time_of(tid: u64) -> Option<Duration> {
    sys::thread_cpu_ns_of(u32::try_from(tid).ok()?).map(Duration::from_nanos)
}

/// What the last wall-mode session's collector did (see [`last_wall_stats`]).
pub(super) static LAST_WALL_STATS: std::sync::Mutex<WallStats> = std::sync::Mutex::new(WallStats {
    ticks: 0,
    signals: 0,
    unwound: 0,
    unchanged: 0,
    woke: 0,
    fp_found: 0,
});

/// What the collector of the last wall-mode session stopped in this process did (all zero
/// before one): ticks, signals sent to running threads, blocked threads unwound without a
/// signal, samples of threads that had not run since their last capture. See [`WallStats`].
pub fn last_wall_stats() -> WallStats {
    *LAST_WALL_STATS.lock().unwrap_or_else(|e| e.into_inner())
}
