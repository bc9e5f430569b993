//! Hooks for prof's own tests and benchmarks: not part of the supported API, hidden from the
//! documentation, and free to change in any release. Programs that profile themselves need
//! only [`Options`](crate::Options), `Profiler` and [`Report`](crate::Report).
//!
//! [`Settings`] (passed with the hidden `Options::diagnostics`) turns on measurements of the
//! signal handler itself and turns off optimisations so that benchmarks can compare; the
//! functions report counters kept since the process started and which signal handlers are
//! installed.
//!
//! Frame reuse (copying the outer frames of a thread's previous stack when they provably did
//! not change) is a switch here rather than an [`Options`](crate::Options) choice: it never
//! changes a sample's stack (`profiler/tests/sampler_reuse.rs` checks every reused stack
//! against a full unwind), only what a sample costs, so a user has no reason to turn it off;
//! the sampler benchmark does, to measure what it saves.

#[cfg(feature = "sampler")]
pub use crate::sampler::diagnostics::*;

/// Switches that only prof's tests and benchmarks use. The default is what users get.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Settings {
    /// What the signal handler measures (CPU and wall modes).
    pub measure: Measure,
    /// Whether to reuse the outer frames of a thread's previous stack (true).
    pub reuse: bool,
    /// Unwind every stack that reused frames a second time without reuse and count the
    /// differences in `reuse_stats` (false).
    pub verify_reuse: bool,
    /// Whether `perf_event_sigtrap` events are inherited by threads created during the session
    /// (true where the kernel allows it); false finds new threads by sweeping
    /// `/proc/self/task` only, to compare.
    pub inherit: bool,
    /// Wall mode on signals (the collector's ticks, see `sampler/wall.rs`) even where
    /// `perf_ring`, its default, works: to compare, and to test the signal path (false).
    pub wall_signals: bool,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            measure: Measure::Off,
            reuse: true,
            verify_reuse: false,
            inherit: true,
            wall_signals: false,
        }
    }
}

impl Settings {
    /// Sets what the handler measures.
    pub fn measure(mut self, measure: Measure) -> Self {
        self.measure = measure;
        self
    }

    /// Turns frame reuse on or off.
    pub fn reuse(mut self, reuse: bool) -> Self {
        self.reuse = reuse;
        self
    }

    /// Turns the verification of reused stacks on or off.
    pub fn verify_reuse(mut self, verify: bool) -> Self {
        self.verify_reuse = verify;
        self
    }

    /// Turns inherited perf events on or off.
    pub fn inherit(mut self, inherit: bool) -> Self {
        self.inherit = inherit;
        self
    }

    /// Makes wall mode take its samples with signals rather than `perf_ring`.
    pub fn wall_signals(mut self, signals: bool) -> Self {
        self.wall_signals = signals;
        self
    }
}

/// What the signal handler measures, for benchmarks.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum Measure {
    /// Sample, measure nothing.
    #[default]
    Off,
    /// Time each handler run, entry to exit, with the monotonic clock (see `handler_stats`).
    Time,
    /// Return at once without sampling, only counting the signals in `handler_stats`, so that
    /// what a session then costs is the kernel's timer and signal delivery alone (the floor
    /// under any handler).
    Empty,
}

/// Moves every thread's scope events into the running session now, as the collector does
/// between its sleeps: for benchmarks that write more events than a thread's buffer holds
/// between two of those drains on a busy machine.
#[cfg(feature = "sampler")]
pub fn drain_scopes() {
    crate::scope::drain();
}
