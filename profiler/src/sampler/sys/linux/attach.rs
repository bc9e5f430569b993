//! What `prof record --pid` needs beyond `perf_ring`: every thread's event on a CPU writing to
//! one ring (`PERF_EVENT_IOC_SET_OUTPUT`), and noticing Ctrl-C (prof handles SIGINT itself
//! there: the attached process is not its child and does not get the terminal's signal).

use std::sync::atomic::{AtomicBool, Ordering};

static INTERRUPTED: AtomicBool = AtomicBool::new(false);

extern "C" fn on_interrupt(_: libc::c_int) {
    // One atomic store: async-signal-safe, no allocation, no lock.
    INTERRUPTED.store(true, Ordering::Relaxed);
}

/// From now on SIGINT and SIGTERM only set a flag [`interrupted`] reads (the default action,
/// ending prof, would lose the recording).
pub fn catch_interrupts() {
    for signal in [libc::SIGINT, libc::SIGTERM] {
        // SAFETY: `on_interrupt` is an `extern "C" fn(c_int)`, what `signal` expects of a
        // handler, and it only stores to an atomic, which is async-signal-safe.
        unsafe { libc::signal(signal, on_interrupt as *const () as libc::sighandler_t) };
    }
}

/// True once SIGINT or SIGTERM arrived after [`catch_interrupts`].
pub fn interrupted() -> bool {
    INTERRUPTED.load(Ordering::Relaxed)
}

/// Gives SIGINT, SIGQUIT and SIGTERM their default action again (ending prof), after a
/// recording ignored or caught them.
pub fn default_interrupts() {
    for signal in [libc::SIGINT, libc::SIGQUIT, libc::SIGTERM] {
        // SAFETY: setting a standard signal's disposition to SIG_DFL installs no handler and
        // touches no memory of this process.
        unsafe { libc::signal(signal, libc::SIG_DFL) };
    }
}
