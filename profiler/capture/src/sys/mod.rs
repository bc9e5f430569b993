//! Every system call and raw memory access of `prof`, each `unsafe` block argued in a
//! `// SAFETY:` comment: the OS module of the capture core, the only module of prof's crates that
//! allows `unsafe` (every other crate and module denies it; the allocation interposer in
//! `preload/` is a C library of its own). The samplers, the recorder and the scope recorder
//! above are safe Rust over the wrappers here.
//!
//! What every Unix has lives in this folder's files; what differs is chosen once, on the `mod`
//! lines below: `linux/` (perf events, per-thread timers, the kernel's `siginfo` and `ucontext`
//! layouts, the dynamic loader, stack reads that report a fault instead of taking one) or
//! `macos.rs`. Both offer the same items: the loader's objects
//! and counters, thread ids, clocks and names, the signal's sender and registers, wall mode's
//! tagged signal, perf events and per-thread timers (unsupported on macOS), and reading the
//! interrupted stack (not done on macOS, which has no `/proc/self/maps` for its bounds).

mod clock;
mod global_alloc;
mod rcu;
mod signal;
mod timer;
mod wake;
mod waker;

#[cfg(target_os = "linux")]
mod linux;
#[cfg(target_os = "linux")]
use linux as os;
#[cfg(target_os = "macos")]
mod macos;
#[cfg(target_os = "macos")]
use macos as os;

pub use clock::*;
pub use global_alloc::*;
pub use os::*;
pub use rcu::*;
pub use signal::*;
pub use timer::*;
pub use wake::*;
pub use waker::*;

use std::io;

fn last_error(call: &'static str) -> crate::Error {
    crate::Error::Os {
        call,
        source: io::Error::last_os_error(),
    }
}
