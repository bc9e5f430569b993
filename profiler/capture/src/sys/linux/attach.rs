//! The signals of a recording. `prof record --pid` notices Ctrl-C (prof handles SIGINT itself
//! there: the attached process is not its child and does not get the terminal's signal), and
//! SIGTERM or SIGHUP, and saves. `prof record -- CMD` leaves Ctrl-C to the command, noting only
//! that it came, and passes on the SIGTERM or SIGHUP sent to it alone (by `timeout`, systemd,
//! `docker stop`, a closed terminal) to the command; it saves when the command ends (with
//! `--follow-descendants`, a signal noted ends the recording then, whatever still runs); a
//! second SIGTERM or SIGHUP ends prof at once.

use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};

static INTERRUPTED: AtomicBool = AtomicBool::new(false);

extern "C" fn on_interrupt(_: libc::c_int) {
    // One atomic store: async-signal-safe, no allocation, no lock.
    INTERRUPTED.store(true, Ordering::Relaxed);
}

/// From now on SIGINT, SIGTERM and SIGHUP only set a flag [`interrupted`] reads (the default
/// action, ending prof, would lose the recording).
pub fn catch_interrupts() {
    for signal in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
        // SAFETY: `on_interrupt` is an `extern "C" fn(c_int)`, what `signal` expects of a
        // handler, and it only stores to an atomic, which is async-signal-safe.
        unsafe { libc::signal(signal, on_interrupt as *const () as libc::sighandler_t) };
    }
}

/// True once SIGINT, SIGTERM or SIGHUP arrived after [`catch_interrupts`], or SIGINT or
/// SIGQUIT after [`note_terminal_interrupts`].
pub fn interrupted() -> bool {
    INTERRUPTED.load(Ordering::Relaxed)
}

/// From now on the terminal's interrupt and quit keys (SIGINT, SIGQUIT), which reach the
/// recorded command too, only set the flag [`interrupted`] reads: the command decides whether
/// to end, and prof knows the user asked for the end. A signal this process was started
/// ignoring (a background job's SIGINT) stays ignored. Call after the command has started, so
/// that it starts with the dispositions prof was given.
pub fn note_terminal_interrupts() {
    for signal in [libc::SIGINT, libc::SIGQUIT] {
        // SAFETY: an all-zero `sigaction` is a valid value of the C struct for the kernel to
        // write the current action into.
        let mut old: libc::sigaction = unsafe { std::mem::zeroed() };
        // SAFETY: asks for the current action only (no new one): `old` is live and writable.
        let read = unsafe { libc::sigaction(signal, std::ptr::null(), &mut old) };
        if read == 0 && old.sa_sigaction == libc::SIG_IGN {
            continue;
        }
        // SAFETY: `on_interrupt` is an `extern "C" fn(c_int)`, what `signal` expects of a
        // handler, and it only stores to an atomic, which is async-signal-safe.
        unsafe { libc::signal(signal, on_interrupt as *const () as libc::sighandler_t) };
    }
}

/// Gives SIGINT, SIGQUIT, SIGTERM and SIGHUP their default action again (ending prof), after a
/// recording ignored or caught them.
pub fn default_interrupts() {
    for signal in [libc::SIGINT, libc::SIGQUIT, libc::SIGTERM, libc::SIGHUP] {
        // SAFETY: setting a standard signal's disposition to SIG_DFL installs no handler and
        // touches no memory of this process.
        unsafe { libc::signal(signal, libc::SIG_DFL) };
    }
}

/// The signals [`catch_ending_signals`] passes on.
const ENDING: [libc::c_int; 2] = [libc::SIGTERM, libc::SIGHUP];

/// One bit per signal number: those of [`ENDING`] arrived and not yet passed on.
static ARRIVED: AtomicU32 = AtomicU32::new(0);
/// One bit per signal number: those of [`ENDING`] passed on once already.
static PASSED_ON: AtomicU32 = AtomicU32::new(0);

extern "C" fn on_ending(signal: libc::c_int) {
    let bit = 1u32 << signal;
    if PASSED_ON.load(Ordering::Relaxed) & bit != 0 {
        // SAFETY: `signal` and `raise` are async-signal-safe; with the default action back,
        // the signal raised again ends prof as it would have without the handler. The second
        // signal of a kind is the user's way to end prof at once.
        unsafe {
            libc::signal(signal, libc::SIG_DFL);
            libc::raise(signal);
        }
        return;
    }
    // One atomic or: async-signal-safe, no allocation, no lock.
    ARRIVED.fetch_or(bit, Ordering::Relaxed);
}

/// From now on SIGTERM and SIGHUP only note their arrival, for [`forward_ending_signals`] to
/// pass on to the recorded command (their default action would end prof and lose the
/// recording, the command running on). Without `SA_RESTART`, so a blocking read returns.
/// Call after the command has started: a handler does not survive its `exec` anyway, but the
/// command must not start with the signal held.
pub fn catch_ending_signals() {
    for signal in ENDING {
        // SAFETY: an all-zero `sigaction` is a valid value of the C struct (no flags, an empty
        // mask) before the handler is set in it.
        let mut action: libc::sigaction = unsafe { std::mem::zeroed() };
        action.sa_sigaction = on_ending as *const () as libc::sighandler_t;
        // SAFETY: `action` is a live, initialised `sigaction` whose handler is an
        // `extern "C" fn(c_int)` that only touches atomics and async-signal-safe calls; the
        // previous action is not asked for.
        unsafe { libc::sigaction(signal, &action, std::ptr::null_mut()) };
    }
}

/// True once SIGTERM or SIGHUP arrived after [`catch_ending_signals`] (passed on or not).
pub fn ending_signal_arrived() -> bool {
    ARRIVED.load(Ordering::Relaxed) | PASSED_ON.load(Ordering::Relaxed) != 0
}

/// Sends process `pid` each of SIGTERM and SIGHUP that reached prof since the last call (after
/// [`catch_ending_signals`]); the next of the same kind then ends prof itself. True when one
/// was sent.
pub fn forward_ending_signals(pid: u32) -> bool {
    let arrived = ARRIVED.swap(0, Ordering::Relaxed);
    let mut sent = false;
    for signal in ENDING {
        let bit = 1u32 << signal;
        if arrived & bit != 0 {
            // SAFETY: `kill` sends a signal to the recorded command's pid, which prof started
            // and has not reaped (the pid cannot be another process's yet); it touches no memory.
            unsafe { libc::kill(pid as libc::pid_t, signal) };
            PASSED_ON.fetch_or(bit, Ordering::Relaxed);
            sent = true;
        }
    }
    sent
}
