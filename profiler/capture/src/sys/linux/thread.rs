//! Threads as the kernel knows them: ids, CPU clocks, names and stack bounds.

use super::super::clock::clock_ns;

/// The kernel's id of the calling thread.
pub fn gettid() -> u32 {
    // SAFETY: gettid has no arguments and no preconditions; it is async-signal-safe (a plain
    // system call).
    unsafe { libc::syscall(libc::SYS_gettid) as u32 }
}

/// CPU time consumed by thread `tid` of this process, or `None` if it has exited.
pub fn thread_cpu_ns_of(tid: u32) -> Option<u64> {
    // The kernel's per-thread CPU clock id: MAKE_THREAD_CPUCLOCK(tid, CPUCLOCK_SCHED).
    let clock = ((!(tid as libc::clockid_t)) << 3) | 6;
    clock_ns(clock)
}

/// The calling thread's name (`comm`, up to 15 bytes, NUL-padded), from the kernel.
/// Async-signal-safe (a plain system call). All zeros on failure.
pub fn current_thread_name() -> [u8; 16] {
    let mut name = [0u8; 16];
    // SAFETY: PR_GET_NAME writes at most 16 bytes (NUL included) into the buffer, which is 16
    // bytes owned by this frame.
    unsafe {
        libc::prctl(
            libc::PR_GET_NAME,
            name.as_mut_ptr() as libc::c_ulong,
            0,
            0,
            0,
        )
    };
    name
}

/// The calling thread's stack `[lo, hi)`, from `pthread_getattr_np`. It may allocate (glibc
/// reads `/proc/self/maps` for the main thread and sizes a CPU set): the caller makes such
/// nested allocations bypass sampling. `None` when it fails.
pub fn current_thread_stack() -> Option<(u64, u64)> {
    // SAFETY: an all-zero pthread_attr_t is valid storage for pthread_getattr_np to fill.
    let mut attr: libc::pthread_attr_t = unsafe { std::mem::zeroed() };
    // SAFETY: `attr` is writable storage owned by this frame; pthread_self is always valid.
    if unsafe { libc::pthread_getattr_np(libc::pthread_self(), &mut attr) } != 0 {
        return None;
    }
    let mut addr: *mut libc::c_void = std::ptr::null_mut();
    let mut size: libc::size_t = 0;
    // SAFETY: `attr` was initialized by pthread_getattr_np; `addr` and `size` are writable.
    let rc = unsafe { libc::pthread_attr_getstack(&attr, &mut addr, &mut size) };
    // SAFETY: `attr` was initialized above and is destroyed once.
    unsafe { libc::pthread_attr_destroy(&mut attr) };
    let lo = addr as u64;
    (rc == 0 && size > 0).then(|| (lo, lo.saturating_add(size as u64)))
}
