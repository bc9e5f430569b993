//! Every system call and raw memory access of the sampler, each `unsafe` block argued in a
//! `// SAFETY:` comment. The rest of the sampler is safe Rust over the wrappers here.

mod alloc;
mod clock;
mod loader;
mod rcu;
mod signal;
mod stack;
mod timer;

pub use alloc::*;
pub use clock::*;
pub use loader::*;
pub use rcu::*;
pub use signal::*;
pub use stack::*;
pub use timer::*;

use std::io;

fn last_error(call: &'static str) -> crate::Error {
    crate::Error::Os {
        call,
        source: io::Error::last_os_error(),
    }
}

#[cfg(not(target_os = "linux"))]
fn unsupported(call: &'static str) -> crate::Error {
    crate::Error::Os {
        call,
        source: io::Error::new(io::ErrorKind::Unsupported, "not available on this OS"),
    }
}
