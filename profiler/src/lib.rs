//! `prof`: a sampling CPU profiler for Rust and other native programs, with a local web viewer.
//!
//! Samples flow one way: the [`sampler`] (native only) records raw stacks, they are
//! symbolized into a [`Session`](session::Session), and everything else reads that session: the
//! [aggregation core](aggregate), the [exporters](export), the session file and the browser viewer.
//!
//! Features: `sampler` (the default) is the sampler, symbolization, session files and every
//! export; `serve` adds the local server with the embedded browser viewer and
//! [`Report::open_in_browser`] (its build compiles the viewer to wasm32); `cli` is what the `prof`
//! command needs; `criterion` adds `prof::criterion::Profiler`, criterion's `--profile-time`
//! hook; `debug-http` adds `prof::debug::serve`, Go's `/debug/pprof` endpoint for profilers and
//! continuous-profiling backends to scrape, and `push` adds `prof::push::Pyroscope`, an agent that
//! pushes windows of profile to Grafana Pyroscope (neither needs the viewer's wasm build).
//! Without default features this crate is only the session model and the
//! aggregation core: pure Rust that builds for `wasm32-unknown-unknown`. The library prints
//! nothing: results and errors go to the caller. Nor does it read environment variables: every
//! choice is an [`Options`] value (the sampling [`Timer`] and the [`Unwind`] method among them),
//! and only the `prof` command maps its flags to them.
//!
//! ```no_run
//! # fn work() {}
//! # fn main() -> prof::Result<()> {
//! use std::time::Duration;
//!
//! let options = prof::Options::default().interval(Duration::from_millis(1));
//! let report = prof::profile(options, || work())?;
//! println!("{report}"); // top-10 table: TOTAL (pct) SELF (pct) FRAME
//! report.save("profile.json")?; // or .json.gz; open it anywhere with `prof serve`
//! // With the `serve` feature: serve the viewer until Ctrl-C (dropping it stops serving).
//! # #[cfg(feature = "serve")]
//! report.open_in_browser()?.wait()?;
//!
//! // Or by hand, around any stretch of code:
//! let profiler = prof::Profiler::start(prof::Options::default())?;
//! work();
//! let report = profiler.stop()?;
//! # Ok(())
//! # }
//! ```
#![deny(unsafe_code)]
// The crate docs link to items of the `sampler` and `serve` features; built without them those
// links have nothing to point at (they render as plain names).
#![cfg_attr(
    not(all(feature = "sampler", feature = "serve")),
    allow(rustdoc::broken_intra_doc_links)
)]
// Output belongs to the caller: only the command line (src/main.rs, src/cli/) prints.
#![warn(clippy::print_stdout, clippy::print_stderr)]

#[cfg(feature = "sampler")]
pub mod alloc;
#[cfg(feature = "criterion")]
pub mod criterion;
#[cfg(all(feature = "testing", feature = "sampler"))]
pub mod diagnostics;
mod options;
#[cfg(feature = "sampler")]
mod profiler;
mod report;
#[cfg(feature = "sampler")]
pub mod scope;
#[cfg(feature = "sampler")]
pub mod task;

#[cfg(feature = "debug-http")]
pub mod debug;
#[cfg(feature = "push")]
pub mod push;
#[cfg(all(feature = "sampler", target_os = "linux"))]
pub mod record;
#[cfg(feature = "sampler")]
pub mod sampler;
/// The local HTTP server behind `prof serve` and [`Report::open_in_browser`], with the embedded
/// browser viewer (the `prof-serve` crate): it binds loopback by default, puts a random secret
/// segment in every URL, and serves only the embedded viewer, the sessions it was given and,
/// for the Source view, the source files their frames name under a source root.
#[cfg(feature = "serve")]
pub mod serve {
    #[doc(inline)]
    pub use prof_serve::{
        exposure_warning, load_for_serving, load_for_serving_with, open_browser,
        write_standalone_html, Opened, Port, ServeOptions, ServedViewer, Server, SessionFile,
        DEFAULT_PORT, PORT_ATTEMPTS,
    };
}
/// Turning addresses into functions, files, lines and inlined frames, as the samplers do after
/// stop (the capture core's symbolizer), and the cache of parsed debug info the sessions of a
/// process share.
#[cfg(feature = "sampler")]
pub mod symbolize {
    #[doc(inline)]
    pub use prof_capture::symbolize::{
        cache_stats, clear_cache, resolve, CacheStats, Symbol, MAX_CACHED_OBJECTS,
    };
}

// The session model, the aggregation core and the formats: the `prof-session` crate, which
// the browser viewer is built on too.
pub use options::{
    Options, Timer, Unwind, DEFAULT_ALLOC_INTERVAL_BYTES, DEFAULT_INTERVAL, DEFAULT_MAX_DEPTH,
    DEFAULT_MAX_SAMPLES, MAX_INTERVAL, MIN_INTERVAL,
};
#[doc(inline)]
pub use prof_session::{aggregate, export, import, session};
pub use prof_session::{Error, Result};
pub use report::{write_as, Report, DEFAULT_TOP};
pub use session::Mode;

#[cfg(feature = "sampler")]
pub use profiler::{clear_caches, profile, Profiled, Profiler};

/// The version of `prof` writing sessions and serving the viewer.
pub const VERSION: &str = prof_session::VERSION;

#[cfg(all(test, feature = "sampler"))]
mod layers_tests;

/// The README's Rust example, compiled and run as a doc test (`cargo test --doc`) so that the
/// front door's code stays true.
#[cfg(all(doctest, feature = "sampler"))]
#[doc = include_str!("../../README.md")]
pub struct ReadmeExample;

/// docs/library.md's examples, compiled and run as doc tests, so that the guide's path from
/// `profile` to every table and export stays true.
#[cfg(all(doctest, feature = "serve"))]
#[doc = include_str!("../../docs/library.md")]
pub struct LibraryGuide;
