//! `prof`: a sampling CPU profiler for Rust and other native programs, with a local web viewer.
//!
//! Samples flow one way: the [sampler] (native only) records raw stacks, they are
//! symbolized into a [`Session`](session::Session), and everything else reads that session: the
//! [aggregation core](aggregate), the [exporters](export), the session file and the browser viewer.
//!
//! Without the default `native` feature this crate is only the session model and the aggregation
//! core: pure Rust that builds for `wasm32-unknown-unknown`.
#![deny(unsafe_code)]

pub mod aggregate;
mod error;
pub mod export;
pub mod import;
mod options;
mod report;
pub mod session;

#[cfg(feature = "native")]
pub mod sampler;
#[cfg(feature = "native")]
pub mod serve;
#[cfg(feature = "native")]
pub mod symbolize;

pub use error::{Error, Result};
pub use options::{Options, DEFAULT_INTERVAL, DEFAULT_MAX_DEPTH, DEFAULT_MAX_SAMPLES};
pub use report::{Report, DEFAULT_TOP};
pub use session::Mode;

#[cfg(feature = "native")]
pub use sampler::{profile, Profiler};

/// The version of `prof` writing sessions and serving the viewer.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");
