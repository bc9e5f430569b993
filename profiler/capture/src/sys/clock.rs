//! Clocks and ids: thread and process CPU time, the monotonic clock, the calling thread's id
//! cached for the handler (the id itself, and other threads' clocks, come from the OS module).

use super::os::gettid;

/// The time of `clock` in nanoseconds, `None` when it cannot be read (a thread that exited).
pub(super) fn clock_ns(clock: libc::clockid_t) -> Option<u64> {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec owned by this frame; clock_gettime writes only
    // into it and is async-signal-safe (POSIX lists it).
    let rc = unsafe { libc::clock_gettime(clock, &mut ts) };
    (rc == 0).then(|| ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64)
}

/// CPU time consumed by the calling thread, in nanoseconds.
pub fn thread_cpu_ns() -> u64 {
    clock_ns(libc::CLOCK_THREAD_CPUTIME_ID).unwrap_or(0)
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

std::thread_local! {
    /// The calling thread's id once asked for ([`cached_tid`]), 0 before. A `const`-initialized
    /// thread local of a type without destructor is a plain `#[thread_local]` static: no lazy
    /// initialization, no destructor registration, so reading it allocates nothing. In the main
    /// program (the only place [`cached_tid`] is used from the handler, see
    /// `handler_in_main_program`) its storage is static TLS, which no access allocates either.
    static TID: std::cell::Cell<u32> = const { std::cell::Cell::new(0) };
}

/// The calling thread's id, from a thread-local cache after the first call (which asks the
/// kernel). Async-signal-safe in the main program. A forked child's thread gets a fresh id: the
/// cache is cleared in the child (see [`no_session_in_forked_children`](super::no_session_in_forked_children)).
pub fn cached_tid() -> u32 {
    TID.with(|t| match t.get() {
        0 => {
            let tid = gettid();
            t.set(tid);
            tid
        }
        tid => tid,
    })
}

/// Clears the calling thread's cached id.
pub(super) fn clear_cached_tid() {
    TID.with(|t| t.set(0));
}
