//! Signals: installing and restoring the sampling handler, the raw handler itself (registers
//! and sender read from what the kernel passes), passing on SIGTRAPs that are not ours, and
//! blocking the signal in the collector.

use super::last_error;
use super::os::{catch_read_faults, errno_location, registers, source, stack_access, StackAccess};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::OnceLock;

/// A sample's taker: the interrupted registers, the alternate stack the handler runs on (if
/// any), the address of the handler's frame, who sent the signal, and access to the
/// interrupted stack.
pub type OnSample = fn(Regs, Option<(u64, u64)>, u64, Source, Option<StackAccess>);

/// Where the raw handler hands each signal: the sampler's handler, given to [`install_handler`].
/// `sys` calls down into nothing: whoever installs the handler says what it calls, so this
/// module does not know the sampler above it.
pub struct Sink {
    /// Below this many bytes of stack room on an alternate stack, the signal is not sampled:
    /// [`Sink::skip_for_room`] is called instead, before anything else takes stack.
    pub fp_room: u64,
    /// Counts a sample skipped for lack of room.
    pub skip_for_room: fn(),
    /// Takes a sample.
    pub on_sample: OnSample,
}

/// The sink of the first [`install_handler`]; the process has one sampler, so it never changes.
static SINK: OnceLock<&'static Sink> = OnceLock::new();

/// The signal every timer mechanism delivers, except perf events with [`PerfDelivery::Sigtrap`](super::PerfDelivery::Sigtrap).
pub const SIGNAL: libc::c_int = libc::SIGPROF;
/// The signal a perf event with [`PerfDelivery::Sigtrap`](super::PerfDelivery::Sigtrap) delivers.
pub const TRAP: libc::c_int = libc::SIGTRAP;

/// A signal's disposition that was in place before ours, to put back at stop, and the
/// program's handlers on an alternate stack whose mask got our signal (see
/// `mask_in_onstack_handlers`).
pub struct SavedAction {
    signal: libc::c_int,
    action: libc::sigaction,
    /// Bit `n` set: we added `signal` to the mask of signal `n`'s handler.
    masked: u128,
}

/// The highest signal number looked at for handlers on an alternate stack.
const LAST_SIGNAL: libc::c_int = if cfg!(target_os = "linux") { 64 } else { 31 };

/// Adds `signal` to the mask of every handler installed with `SA_ONSTACK` (other than for
/// `signal` itself), re-installing each with the same handler and flags, so that `signal` is
/// never delivered while a thread runs such a handler: the kernel keeps it pending until the
/// handler returns. Without this, prof's signal landing in a program's handler on a small
/// alternate stack needs the kernel to fit a second signal frame (`AT_MINSIGSTKSZ`, 3.5 KiB with
/// AVX-512) below that handler on the same stack, and when it cannot the process dies of
/// SIGSEGV (`tests/sampler_altstack.rs`). Handlers installed after this runs are not covered.
/// Returns the signals changed, as bits.
fn mask_in_onstack_handlers(signal: libc::c_int) -> u128 {
    let mut masked = 0u128;
    for n in 1..=LAST_SIGNAL {
        if n == signal || n == libc::SIGKILL || n == libc::SIGSTOP {
            continue;
        }
        // SAFETY: an all-zero sigaction is a valid value of this plain C struct.
        let mut now: libc::sigaction = unsafe { std::mem::zeroed() };
        // SAFETY: a null new action only queries; `now` is a valid, writable sigaction. A
        // signal number the system does not have fails with EINVAL and is skipped.
        if unsafe { libc::sigaction(n, std::ptr::null(), &mut now) } != 0 {
            continue;
        }
        let handled = !matches!(now.sa_sigaction, libc::SIG_DFL | libc::SIG_IGN);
        // SAFETY: `now.sa_mask` is a valid sigset_t filled in by the kernel.
        let has = unsafe { libc::sigismember(&now.sa_mask, signal) } == 1;
        if !handled || now.sa_flags & libc::SA_ONSTACK == 0 || has {
            continue;
        }
        // SAFETY: as above; sigaddset only writes the set it is given.
        unsafe { libc::sigaddset(&mut now.sa_mask, signal) };
        // SAFETY: `now` is the disposition the kernel just gave us, with one more signal in its
        // mask: the same handler with the same flags (a handler of another program's code keeps
        // the signature it was installed with); a null old-action pointer is allowed.
        if unsafe { libc::sigaction(n, &now, std::ptr::null_mut()) } == 0 {
            masked |= 1 << n;
        }
    }
    masked
}

/// Takes `signal` out of the masks `mask_in_onstack_handlers` added it to (`masked`), for the
/// handlers still installed with `SA_ONSTACK` and `signal` in their mask (one the program
/// replaced since is left as it is).
fn unmask_onstack_handlers(signal: libc::c_int, masked: u128) {
    for n in 1..=LAST_SIGNAL {
        if masked & (1 << n) == 0 {
            continue;
        }
        // SAFETY: an all-zero sigaction is a valid value of this plain C struct.
        let mut now: libc::sigaction = unsafe { std::mem::zeroed() };
        // SAFETY: a null new action only queries; `now` is a valid, writable sigaction.
        if unsafe { libc::sigaction(n, std::ptr::null(), &mut now) } != 0 {
            continue;
        }
        // SAFETY: `now.sa_mask` is a valid sigset_t filled in by the kernel.
        let has = unsafe { libc::sigismember(&now.sa_mask, signal) } == 1;
        if now.sa_flags & libc::SA_ONSTACK == 0 || !has {
            continue;
        }
        // SAFETY: as above; sigdelset only writes the set it is given.
        unsafe { libc::sigdelset(&mut now.sa_mask, signal) };
        // SAFETY: the disposition the kernel just gave us, less one signal in its mask; a null
        // old-action pointer is allowed.
        unsafe { libc::sigaction(n, &now, std::ptr::null_mut()) };
    }
}

impl SavedAction {
    /// True when the saved disposition was the default one (for SIGPROF and SIGTRAP: terminate
    /// the process).
    pub fn is_default(&self) -> bool {
        self.action.sa_sigaction == libc::SIG_DFL
    }
}

/// The raw handler: reads the registers and errno, then hands over to safe code.
extern "C" fn on_signal(sig: libc::c_int, info: *mut libc::siginfo_t, ctx: *mut libc::c_void) {
    // Where this handler's frame is, to know how much room is left below it. On an alternate
    // stack (a small one, typically), check that first, before anything else takes stack.
    let marker = 0u8;
    let here = std::hint::black_box(&marker) as *const u8 as u64;
    let alt = alt_stack(ctx, here);
    // Set before the handler was first installed, so always there (an atomic load).
    let Some(sink) = SINK.get() else { return };
    if let Some((lo, _)) = alt {
        if here.saturating_sub(lo) < sink.fp_room && !is_foreign(sig, info) {
            (sink.skip_for_room)();
            return;
        }
    }
    // SAFETY: errno_location returns the calling thread's errno slot, valid for the thread's
    // life; saving it here and restoring it below keeps the interrupted code's errno intact.
    let errno = unsafe { *errno_location() };
    let session = SESSION.load(Ordering::Relaxed);
    match source(sig, info) {
        Source::Foreign => foreign_trap(),
        Source::Sent if !session => pass_on_default(sig),
        // After a session (a straggler), or in a child forked during one: nothing to record.
        _ if !session => {}
        source => (sink.on_sample)(registers(ctx), alt, here, source, stack_access(ctx)),
    }
    // SAFETY: as above; the slot is still the calling thread's.
    unsafe { *errno_location() = errno };
}

/// True for a signal that is not one of ours and gets what it would have without us, whatever
/// the room: a SIGTRAP that is not a sample, a SIGPROF sent by a process after a session.
fn is_foreign(sig: libc::c_int, info: *mut libc::siginfo_t) -> bool {
    match source(sig, info) {
        Source::Foreign => true,
        Source::Sent => !SESSION.load(Ordering::Relaxed),
        _ => false,
    }
}

/// A SIGTRAP that is not from our perf events (a breakpoint, `kill -TRAP`). We only take over
/// SIGTRAP when its disposition was the default or "ignore" (see [`trap_is_unclaimed`]), so
/// do what that would have done: nothing for "ignore" (the state we leave after a session),
/// and for the default put it back and raise the signal again, so the process ends the way it
/// would have without us (SIGTRAP is blocked in this handler, so it is delivered on return).
fn foreign_trap() {
    if TRAP_IGNORED_BEFORE.load(Ordering::Relaxed) {
        return;
    }
    pass_on_default(TRAP);
}

/// Puts back the default disposition of `sig` and raises it again, so the process ends the way
/// it would have without us (`sig` is blocked in this handler, so it is delivered on return).
fn pass_on_default(sig: libc::c_int) {
    // SAFETY: an all-zero sigaction with SIG_DFL as handler is the default disposition.
    let mut default: libc::sigaction = unsafe { std::mem::zeroed() };
    default.sa_sigaction = libc::SIG_DFL;
    // SAFETY: `default` is a valid sigaction owned by this frame; sigaction and raise are
    // async-signal-safe.
    unsafe {
        libc::sigaction(sig, &default, std::ptr::null_mut());
        libc::raise(sig);
    }
}

/// True from [`install_handler`] to [`restore_handler`]: a session's timers may be armed. False
/// in a child forked during a session (see [`no_session_in_forked_children`]).
static SESSION: AtomicBool = AtomicBool::new(false);

/// Makes a child `fork`ed during a session run as without prof (registered once per process,
/// with `pthread_atfork`; a session calls it at start). Timers and perf events are not
/// inherited by `fork` (perf events follow new threads only, `inherit_thread`), so no sample
/// reaches the child, but the child has a copy of the session's state: in alloc mode its
/// sampled allocations filled a ring that no collector drains, and once it was full each one
/// waited 50 ms (the collector lives in the parent). In the child: the allocation wrapper
/// samples nothing and frees look up nothing; the signal handler records nothing and a SIGPROF
/// sent by a process gets the default action; the thread id cache is cleared (the child's one
/// thread has a new id). Stopping the parent's session in the child returns
/// [`Error::ForkedChild`](crate::Error::ForkedChild); a new session cannot start there while
/// the parent's copy is not stopped. `also` is what the layers above turn off in the child
/// (the allocation wrapper, the scope buffers): it must be async-signal-safe; the first call's
/// is the one kept.
pub fn no_session_in_forked_children(also: fn()) {
    /// The `also` of the first call.
    static ALSO: std::sync::OnceLock<fn()> = std::sync::OnceLock::new();
    extern "C" fn in_child() {
        super::clock::clear_cached_tid();
        SESSION.store(false, Ordering::Relaxed);
        // Set before the handler is registered; reading it is an atomic load.
        if let Some(also) = ALSO.get() {
            also();
        }
    }
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let _ = ALSO.set(also);
        // SAFETY: `in_child` is an `extern "C" fn()` that only writes a thread local of the
        // calling thread and atomics (no allocation, no lock, async-signal-safe), which is
        // allowed in an atfork child handler; null prepare and parent handlers are allowed.
        unsafe { libc::pthread_atfork(None, None, Some(in_child)) };
    });
}

/// Whether SIGTRAP was ignored before we took it over (otherwise it was the default).
static TRAP_IGNORED_BEFORE: AtomicBool = AtomicBool::new(false);

/// Who sent a signal, as far as the sampler cares.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(not(target_os = "linux"), allow(dead_code))]
pub enum Source {
    /// A per-thread POSIX timer on the monotonic clock whose value carries the target thread's
    /// id.
    Timer(u32),
    /// A per-thread POSIX timer on the thread's own CPU clock (the thread was idle, see
    /// `Shared::park_after`), whose value carries the target thread's id.
    CpuTimer(u32),
    /// A file descriptor's owner signal (a perf event routed with `F_SETSIG`).
    Fd(i32),
    /// A perf event's own SIGTRAP, whose data carries the target thread's id.
    Perf(u32),
    /// A SIGTRAP that is not ours: passed on, never sampled.
    Foreign,
    /// A SIGPROF sent by a process (`kill`, `raise`, `sigqueue`): sampled during a session,
    /// given the default action after one.
    Sent,
    /// A SIGPROF queued by wall mode's collector to one running thread (see
    /// `send_wall_sample`), whose value carries the target thread's id. Always ours: after a
    /// session it is swallowed, never given the default action.
    Wall(u32),
    /// Any other SIGPROF (`setitimer`).
    Other,
}

/// The interrupted registers needed to unwind: instruction, stack and frame pointers.
#[derive(Clone, Copy, Debug, Default)]
pub struct Regs {
    /// Instruction pointer.
    pub pc: u64,
    /// Stack pointer.
    pub sp: u64,
    /// Frame pointer (rbp / x29).
    pub fp: u64,
    /// Link register (x30) on aarch64; 0 elsewhere.
    #[cfg_attr(not(target_arch = "aarch64"), allow(dead_code))]
    pub lr: u64,
}

/// The alternate signal stack `[lo, hi)` when the interrupted code was running on it, which
/// `here` (an address in this handler's frame) also tells: our handler is installed without
/// `SA_ONSTACK`, so it runs on the interrupted stack. The kernel saves the thread's `sigaltstack`
/// state in the `ucontext` of every signal it delivers, so this costs no system call. It sets
/// `SS_ONSTACK` when the interrupted stack pointer was on it, but not always: on Linux 6.18 a
/// SIGTRAP that interrupted a program's handler 4 KiB into its 7.6 KiB alternate stack came with
/// `ss_flags` 0 (`tests/sampler_altstack.rs`, about one run in two under load), and the room
/// check then passed and the handler overflowed that stack. So a frame inside the saved range
/// counts too.
fn alt_stack(ctx: *mut libc::c_void, here: u64) -> Option<(u64, u64)> {
    if ctx.is_null() {
        return None;
    }
    // SAFETY: for an SA_SIGINFO handler the kernel passes a pointer to the ucontext_t it saved
    // on the signal stack; it is valid for reads for the duration of the handler.
    let ss = unsafe { (*(ctx as *const libc::ucontext_t)).uc_stack };
    let lo = ss.ss_sp as u64;
    let hi = lo.saturating_add(ss.ss_size as u64);
    let on_it = ss.ss_flags & libc::SS_ONSTACK != 0
        || (ss.ss_flags & libc::SS_DISABLE == 0 && lo <= here && here < hi);
    on_it.then_some((lo, hi))
}

/// Installs the sampling handler for `signal`, and the handler that catches faulting stack reads
/// (see `catch_read_faults`), (SIGPROF, or SIGTRAP for perf events with
/// [`PerfDelivery::Sigtrap`](super::PerfDelivery::Sigtrap)) with `SA_RESTART`, returning the old disposition;
/// adds `signal` to the mask of every handler installed with `SA_ONSTACK` (see
/// `mask_in_onstack_handlers`).
/// Our own handler, left in place by an earlier session, stands for the default disposition it
/// replaced (see [`restore_handler`]).
/// Signals go to `sink` (the first sink given stays: a process has one sampler).
pub fn install_handler(signal: libc::c_int, sink: &'static Sink) -> crate::Result<SavedAction> {
    SINK.get_or_init(|| sink);
    // Stack reads that fault are caught before any sample reads a stack.
    catch_read_faults()?;
    // SAFETY: an all-zero sigaction is a valid value of this plain C struct (empty mask, no
    // flags); every field we rely on is set below.
    let mut action: libc::sigaction = unsafe { std::mem::zeroed() };
    action.sa_sigaction = on_signal as *const () as usize;
    action.sa_flags = libc::SA_SIGINFO | libc::SA_RESTART;
    // SAFETY: `action.sa_mask` is a valid sigset_t owned by this frame.
    unsafe { libc::sigemptyset(&mut action.sa_mask) };
    // SAFETY: as for `action`.
    let mut old: libc::sigaction = unsafe { std::mem::zeroed() };
    SESSION.store(true, Ordering::Relaxed);
    // SAFETY: both pointers are to valid sigaction structs owned by this frame; `on_signal` has
    // the three-argument signature SA_SIGINFO requires and only calls async-signal-safe code.
    let rc = unsafe { libc::sigaction(signal, &action, &mut old) };
    if rc != 0 {
        SESSION.store(false, Ordering::Relaxed);
        return Err(last_error("sigaction"));
    }
    if old.sa_sigaction == our_handler() {
        // SAFETY: an all-zero sigaction with SIG_DFL as handler is the default disposition.
        old = unsafe { std::mem::zeroed() };
        old.sa_sigaction = libc::SIG_DFL;
    }
    if signal == TRAP {
        TRAP_IGNORED_BEFORE.store(old.sa_sigaction == libc::SIG_IGN, Ordering::Relaxed);
    }
    Ok(SavedAction {
        signal,
        action: old,
        masked: mask_in_onstack_handlers(signal),
    })
}

/// Puts back a disposition saved by [`install_handler`] (and the masks of the handlers on an
/// alternate stack), unless the program replaced our handler during the session (its own
/// handler stays: putting back the one from before the session would undo what it did), and
/// except a default disposition: then our handler
/// stays, and as no session runs any more it swallows our own signals still in flight (which the
/// default action would kill the process for) and gives any other one the default action (a
/// SIGTRAP that is not a sample, a SIGPROF sent by a process). Leaving "ignore" instead would
/// change the program: an ignored disposition is inherited across `exec` by every child started
/// later, where a handler is reset to the default.
pub fn restore_handler(saved: &SavedAction) -> crate::Result<()> {
    SESSION.store(false, Ordering::Relaxed);
    unmask_onstack_handlers(saved.signal, saved.masked);
    if saved.is_default() || current_handler(saved.signal) != our_handler() {
        return Ok(());
    }
    // SAFETY: `saved.action` is a valid sigaction copied from what the kernel gave us earlier;
    // passing a null old-action pointer is allowed.
    let rc = unsafe { libc::sigaction(saved.signal, &saved.action, std::ptr::null_mut()) };
    if rc != 0 {
        return Err(last_error("sigaction"));
    }
    Ok(())
}

/// The current handler address of `signal` (or `SIG_DFL` / `SIG_IGN`), for tests and checks.
pub fn current_handler(signal: libc::c_int) -> usize {
    // SAFETY: an all-zero sigaction is a valid value of this plain C struct.
    let mut old: libc::sigaction = unsafe { std::mem::zeroed() };
    // SAFETY: a null new action only queries; `old` is a valid, writable sigaction.
    unsafe { libc::sigaction(signal, std::ptr::null(), &mut old) };
    old.sa_sigaction
}

/// True when SIGTRAP has its default disposition, is ignored, or has our handler left by an
/// earlier session in place of the default: nobody in the process handles it, so perf events
/// may deliver through it and our handler can pass other traps on.
pub fn trap_is_unclaimed() -> bool {
    !program_handles(TRAP)
}

/// True when the program has its own handler for `signal` (neither the default disposition, nor
/// "ignore", nor prof's handler left by an earlier session): a session must not take it over.
pub fn program_handles(signal: libc::c_int) -> bool {
    let now = current_handler(signal);
    !matches!(now, libc::SIG_DFL | libc::SIG_IGN) && now != our_handler()
}

/// The address of our own handler, to compare with [`current_handler`].
pub fn our_handler() -> usize {
    on_signal as *const () as usize
}

/// Blocks SIGPROF in the calling thread (the collector), so it is never sampled.
pub fn block_signal_in_this_thread() {
    // SAFETY: an all-zero sigset_t is valid storage; sigemptyset/sigaddset initialize it.
    let mut set: libc::sigset_t = unsafe { std::mem::zeroed() };
    // SAFETY: `set` is a valid sigset_t owned by this frame; a null old set is allowed.
    unsafe {
        libc::sigemptyset(&mut set);
        libc::sigaddset(&mut set, SIGNAL);
        libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut());
    }
}
