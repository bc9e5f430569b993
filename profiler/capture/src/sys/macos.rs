//! macOS, the other system the sampler builds for: the process-wide `setitimer` timer only (no
//! perf events or per-thread timers), thread ids from `pthread_threadid_np`, registers from its
//! `ucontext`. What it cannot do is reported as unsupported, or as nothing found.

use super::signal::{Regs, Source, TRAP};
use super::timer::PerfDelivery;
use crate::symbolize::LoadedObject;
use std::os::fd::OwnedFd;

fn unsupported(call: &'static str) -> crate::Error {
    crate::Error::Os {
        call,
        source: std::io::Error::new(std::io::ErrorKind::Unsupported, "not available on this OS"),
    }
}

/// The objects loaded: not listed here (unwinding uses frame pointers, symbolization reads
/// the process's memory).
pub fn loaded_objects() -> (Vec<LoadedObject>, (u64, u64)) {
    (Vec::new(), (0, 0))
}

/// The loader's counters: nothing is tracked here.
pub fn loader_counters() -> (u64, u64) {
    (0, 0)
}

/// The system's id of the calling thread (truncated to 32 bits).
pub fn gettid() -> u32 {
    let mut id = 0u64;
    // SAFETY: a null thread means the calling thread; `id` is a valid, writable u64.
    unsafe { libc::pthread_threadid_np(0 as libc::pthread_t, &mut id) };
    id as u32
}

/// Another thread's CPU time cannot be read here.
pub fn thread_cpu_ns_of(_tid: u32) -> Option<u64> {
    None
}

/// The calling thread's name: not read here (all zeros).
pub fn current_thread_name() -> [u8; 16] {
    [0; 16]
}

/// The calling thread's stack: not read here.
pub fn current_thread_stack() -> Option<(u64, u64)> {
    None
}

/// Who sent a signal: only SIGTRAPs are told apart (none is ours here).
pub(super) fn source(sig: libc::c_int, _info: *const libc::siginfo_t) -> Source {
    if sig == TRAP {
        Source::Foreign
    } else {
        Source::Other
    }
}

/// The calling thread's errno slot.
pub(super) use libc::__error as errno_location;

/// The interrupted registers from the `ucontext` the kernel passed.
pub(super) fn registers(ctx: *mut libc::c_void) -> Regs {
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

#[cfg(target_arch = "x86_64")]
fn registers_of(s: &libc::__darwin_x86_thread_state64) -> Regs {
    Regs {
        pc: s.__rip,
        sp: s.__rsp,
        fp: s.__rbp,
        lr: 0,
    }
}

#[cfg(target_arch = "aarch64")]
fn registers_of(s: &libc::__darwin_arm_thread_state64) -> Regs {
    Regs {
        pc: s.__pc,
        sp: s.__sp,
        fp: s.__fp,
        lr: s.__lr,
    }
}

/// Wall mode needs `/proc/self/task/TID/syscall`: Linux only.
pub fn send_wall_sample(_tid: u32) -> bool {
    false
}

/// Opens a task-clock perf event: Linux only.
pub fn perf_event_thread(
    _tid: u32,
    _period_ns: u64,
    _delivery: PerfDelivery,
) -> crate::Result<OwnedFd> {
    Err(unsupported("perf_event_open"))
}

/// Stops a perf event from counting before it is closed.
pub fn perf_event_disable(_fd: &OwnedFd) {}

/// A per-thread POSIX timer: none exist here.
#[derive(Debug)]
pub enum PosixTimer {}

/// Creates a per-thread timer: Linux only.
pub fn timer_thread(_tid: u32, _interval_ns: u64) -> crate::Result<PosixTimer> {
    Err(unsupported("timer_create(SIGEV_THREAD_ID)"))
}

/// Creates a per-thread CPU-clock timer: Linux only.
pub fn timer_thread_cpu(_tid: u32) -> crate::Result<PosixTimer> {
    Err(unsupported("timer_create(SIGEV_THREAD_ID)"))
}

/// A timer's id: none exist here.
pub fn timer_id(timer: &PosixTimer) -> u64 {
    match *timer {}
}

/// Arms a timer: none exist here.
pub fn timer_set(_id: u64, _interval_ns: u64) -> bool {
    false
}

/// Deletes a per-thread timer.
pub fn timer_delete(timer: PosixTimer) {
    match timer {}
}

/// Installing a fault handler for stack reads: none is needed, no stack is read here.
pub fn catch_read_faults() -> crate::Result<()> {
    Ok(())
}

/// Leave to read the stack: never given here (there are no stack bounds without
/// `/proc/self/maps`; samples hold the interrupted instruction only).
#[derive(Clone, Copy, Debug)]
pub enum StackAccess {}

impl StackAccess {
    /// Stack a caught fault needs (never asked: no value exists).
    pub fn fault_room(self) -> u64 {
        match self {}
    }
}

/// Leave to read the stack in the signal handler: never given here.
pub(super) fn stack_access(_ctx: *mut libc::c_void) -> Option<StackAccess> {
    None
}

/// Leave to read the stack outside a handler: never given here.
pub fn stack_access_here() -> Option<StackAccess> {
    None
}

/// Reads the calling thread's stack: none exists here, as no [`StackAccess`] does.
#[derive(Clone, Copy, Debug)]
pub enum StackReader {}

impl StackReader {
    /// A reader for the calling thread's stack: needs a [`StackAccess`], which no one has.
    pub fn for_current_thread(
        access: StackAccess,
        _sp: u64,
        _lo: u64,
        _hi: u64,
    ) -> Option<StackReader> {
        match access {}
    }

    /// A word of the stack.
    pub fn read(&self, _addr: u64) -> Option<u64> {
        match *self {}
    }

    /// Never called: there is no reader.
    pub fn same_words(&self, _kept: &[[u64; 2]]) -> Option<bool> {
        match *self {}
    }
}
