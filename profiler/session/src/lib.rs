//! The ground floor of `prof`: what a profile is, and everything that only reads or writes one.
//!
//! - [`session`]: the session model (samples, stacks, frames, threads, processes, scopes and
//!   tasks), its builder, and its versioned JSON file format.
//! - [`aggregate`]: pure functions over a session (call tree, top-N, flame graph layout,
//!   filters, transforms, diff, timelines, scopes, tasks and waits).
//! - [`export`] and [`import`]: the formats other tools read and write (folded stacks, SVG,
//!   speedscope, pprof, dot, source annotation; folded, `perf script` and pprof in).
//! - [`json`] and [`order`]: what the session reader and the core share with the browser viewer
//!   (a JSON reader without serde, one stable sort), kept small for wasm32. Not part of `prof`'s
//!   API.
//!
//! Nothing here samples, reads another process or opens a socket: this crate knows nothing of
//! how a session was recorded, and builds for `wasm32-unknown-unknown` (the browser viewer is
//! built on it alone). The `fs` feature adds opening files by name, `svg` the flame graph SVG
//! writer. Programs use it through `prof`, which re-exports what users name
//! (`prof::session`, `prof::aggregate`, `prof::export`, `prof::import`, `prof::Error`).
#![deny(unsafe_code)]
// The docs link to items of the `fs` and `svg` features; built without them those links have
// nothing to point at (they render as plain names).
#![cfg_attr(
    not(all(feature = "fs", feature = "svg")),
    allow(rustdoc::broken_intra_doc_links)
)]
// Output belongs to the caller: only the command line prints.
#![warn(clippy::print_stdout, clippy::print_stderr)]

pub mod aggregate;
mod error;
pub mod export;
pub mod import;
pub mod json;
pub mod order;
pub mod session;

pub use error::{Error, Result};
pub use session::Mode;

/// The version of `prof` writing sessions and serving the viewer.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");
