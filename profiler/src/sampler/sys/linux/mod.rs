//! Linux: per-thread perf events and POSIX timers, thread ids, CPU clocks and names from the
//! kernel, the dynamic loader's objects, and the kernel's `siginfo` and `ucontext` layouts.

mod loader;
mod perf;
mod signal;
mod thread;
mod timer;

pub use loader::*;
pub use perf::*;
pub use signal::*;
pub use thread::*;
pub use timer::*;
