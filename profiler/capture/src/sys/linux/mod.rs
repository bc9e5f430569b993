//! Linux: per-thread perf events and POSIX timers, thread ids, CPU clocks and names from the
//! kernel, the dynamic loader's objects, the kernel's `siginfo` and `ucontext` layouts, and
//! stack reads that survive an unmapped page.

mod attach;
mod loader;
mod perf;
mod perf_ring;
mod preload;
mod signal;
mod stack;
#[cfg(any(test, feature = "testing"))]
pub mod testing;
mod thread;
mod timer;
mod uprobe;

pub use attach::*;
pub use loader::*;
pub use perf::*;
pub use perf_ring::*;
pub use preload::*;
pub use signal::*;
pub use stack::*;
pub use thread::*;
pub use timer::*;
pub use uprobe::*;
