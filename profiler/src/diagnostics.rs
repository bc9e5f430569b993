//! Hooks for prof's own tests and benchmarks (the `testing` feature): not part of the supported
//! API, and free to change in any release. Programs that profile themselves need only
//! [`Options`](crate::Options), `Profiler` and [`Report`](crate::Report).
//!
//! [`Settings`] (passed with `Options::diagnostics`) turns on measurements of the
//! signal handler itself and turns off optimisations so that benchmarks can compare; the
//! functions report counters kept since the process started and which signal handlers are
//! installed.
//!
//! Frame reuse (copying the outer frames of a thread's previous stack when they provably did
//! not change) is a switch here rather than an [`Options`](crate::Options) choice: it never
//! changes a sample's stack (`profiler/tests/sampler_reuse.rs` checks every reused stack
//! against a full unwind), only what a sample costs, so a user has no reason to turn it off;
//! the sampler benchmark does, to measure what it saves.

pub use crate::options::{Measure, Settings};
pub use crate::sampler::counters::*;

/// Moves every thread's scope events into the running session now, as the collector does
/// between its sleeps: for benchmarks that write more events than a thread's buffer holds
/// between two of those drains on a busy machine.
pub fn drain_scopes() {
    crate::scope::drain();
}
