//! The kernel's side of a signal on Linux: who sent it (the `siginfo` layout), the interrupted
//! registers (the `ucontext` layout), the thread's errno, and queueing a tagged SIGPROF to one
//! thread for wall mode.

use super::super::signal::{Regs, Source, SIGNAL, TRAP};

/// `si_code` of a SIGTRAP sent by a perf event (`TRAP_PERF`).
const TRAP_PERF: i32 = 6;
/// The high half of the data our perf events attach to their SIGTRAP ("prof"); the low half is
/// the thread id. Tells our SIGTRAPs from a debugger's or another tool's.
pub(in crate::sys) const TRAP_TAG: u64 = 0x7072_6f66;
/// `si_code` of a signal queued by `sigqueue` / `rt_tgsigqueueinfo`.
const SI_QUEUE: i32 = -1;

/// Reads the sender from the siginfo (Linux layout, same on x86_64 and aarch64: `si_code` at
/// byte 8, the union at 16; `si_fd` of a SIGPOLL-style signal, the `sigval` of a timer signal
/// and the 64-bit `si_perf_data` of a perf SIGTRAP all at 24).
pub(in crate::sys) fn source(sig: libc::c_int, info: *const libc::siginfo_t) -> Source {
    const SI_TIMER: i32 = -2;
    if info.is_null() {
        return if sig == TRAP {
            Source::Foreign
        } else {
            Source::Other
        };
    }
    let base = info as *const u8;
    // SAFETY: the kernel passes a valid 128-byte siginfo_t (8-aligned) for the handler's
    // duration; offsets 8 and 24 are aligned i32 fields inside it, and 24 an aligned u64.
    let (code, word, data) = unsafe {
        (
            (base.add(8) as *const i32).read(),
            (base.add(24) as *const i32).read(),
            (base.add(24) as *const u64).read(),
        )
    };
    if sig == TRAP {
        return if code == TRAP_PERF && data >> 32 == TRAP_TAG {
            Source::Perf(data as u32)
        } else {
            Source::Foreign
        };
    }
    match code {
        SI_TIMER if data & super::timer::CPU_TIMER_TAG != 0 => Source::CpuTimer(data as u32),
        SI_TIMER => Source::Timer(word as u32),
        SI_QUEUE if data >> 32 == TRAP_TAG => Source::Wall(data as u32),
        // SI_USER (kill), SI_QUEUE (sigqueue), SI_TKILL (tgkill, raise).
        0 | -1 | -6 => Source::Sent,
        // POLL_IN ..= POLL_HUP: the band of an F_SETSIG signal; si_fd is set.
        1..=6 => Source::Fd(word),
        _ => Source::Other,
    }
}

/// The calling thread's errno slot.
pub(in crate::sys) use libc::__errno_location as errno_location;

/// The interrupted registers from the `ucontext` the kernel passed (x86_64).
#[cfg(target_arch = "x86_64")]
pub(in crate::sys) fn registers(ctx: *mut libc::c_void) -> Regs {
    if ctx.is_null() {
        return Regs::default();
    }
    // SAFETY: for an SA_SIGINFO handler the kernel passes a pointer to the ucontext_t it saved
    // on the signal stack; it is valid for reads for the duration of the handler.
    let uc = unsafe { &*(ctx as *const libc::ucontext_t) };
    let g = &uc.uc_mcontext.gregs;
    Regs {
        pc: g[libc::REG_RIP as usize] as u64,
        sp: g[libc::REG_RSP as usize] as u64,
        fp: g[libc::REG_RBP as usize] as u64,
        lr: 0,
    }
}

/// The interrupted registers from the `ucontext` the kernel passed (aarch64).
#[cfg(target_arch = "aarch64")]
pub(in crate::sys) fn registers(ctx: *mut libc::c_void) -> Regs {
    if ctx.is_null() {
        return Regs::default();
    }
    // SAFETY: for an SA_SIGINFO handler the kernel passes a pointer to the ucontext_t it saved
    // on the signal stack; it is valid for reads for the duration of the handler.
    let uc = unsafe { &*(ctx as *const libc::ucontext_t) };
    let m = &uc.uc_mcontext;
    Regs {
        pc: m.pc,
        sp: m.sp,
        fp: m.regs[29],
        lr: m.regs[30],
    }
}

/// The interrupted registers: not read on other architectures (no stack is walked there).
#[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
pub(in crate::sys) fn registers(_ctx: *mut libc::c_void) -> Regs {
    Regs::default()
}

/// Queues SIGPROF to thread `tid` of this process for a wall-mode sample, tagged (code
/// `SI_QUEUE`, value `TRAP_TAG << 32 | tid`) so that the handler knows the thread without a
/// system call and a signal still in flight after the session is swallowed rather than given
/// the default action. Returns false when the thread has exited (or the kernel refused).
pub fn send_wall_sample(tid: u32) -> bool {
    // SAFETY: an all-zero siginfo_t is a valid value of this plain C struct; the fields the
    // kernel reads for SI_QUEUE are written below.
    let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
    info.si_signo = SIGNAL;
    info.si_code = SI_QUEUE;
    let base = &mut info as *mut libc::siginfo_t as *mut u8;
    // SAFETY: siginfo_t is 128 bytes and 8-aligned; on Linux (x86_64 and aarch64) the
    // SI_QUEUE layout puts si_pid (i32) at 16, si_uid (u32) at 20 and si_value (8 bytes) at
    // 24, all aligned and inside `info`, which this frame owns; getpid/getuid cannot fail.
    unsafe {
        (base.add(16) as *mut i32).write(libc::getpid());
        (base.add(20) as *mut u32).write(libc::getuid());
        (base.add(24) as *mut u64).write(TRAP_TAG << 32 | u64::from(tid));
    }
    // SAFETY: rt_tgsigqueueinfo reads the siginfo we pass (valid, owned by this frame) and
    // signals only thread `tid` of our own process (pid checked by the kernel), for which it
    // allows any si_code; SIGPROF has our handler installed for the session.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_rt_tgsigqueueinfo,
            libc::getpid(),
            tid as libc::c_int,
            SIGNAL,
            &info as *const libc::siginfo_t,
        )
    };
    rc == 0
}
