//! Clocks and ids: the calling thread's id, thread and process CPU time, the monotonic clock.

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
