//! Options for a profiling session.

use crate::session::Mode;
use std::time::Duration;

/// The default sampling interval: 1 ms (1 kHz).
pub const DEFAULT_INTERVAL: Duration = Duration::from_millis(1);
/// The default deepest stack recorded, in frames.
pub const DEFAULT_MAX_DEPTH: usize = 128;
/// The default largest number of samples kept; later samples are dropped and counted.
pub const DEFAULT_MAX_SAMPLES: usize = 1_000_000;

/// The default mean distance between sampled allocations in alloc mode: 512 KiB, as Go's and
/// tcmalloc's heap profilers sample.
pub const DEFAULT_ALLOC_INTERVAL_BYTES: u64 = 512 * 1024;

/// How to profile. Built with [`Options::default`] and the chained setters.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Options {
    /// Time between samples of one thread, in the mode's clock ([`DEFAULT_INTERVAL`]).
    pub interval: Duration,
    /// Deepest stack recorded; deeper stacks are cut at the root end ([`DEFAULT_MAX_DEPTH`]).
    pub max_depth: usize,
    /// Most samples kept ([`DEFAULT_MAX_SAMPLES`]).
    pub max_samples: usize,
    /// What to measure.
    pub mode: Mode,
    /// In [`Mode::Alloc`]: the mean number of bytes allocated between two samples
    /// ([`DEFAULT_ALLOC_INTERVAL_BYTES`]); each thread's distances are drawn at random.
    pub alloc_interval_bytes: u64,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            interval: DEFAULT_INTERVAL,
            max_depth: DEFAULT_MAX_DEPTH,
            max_samples: DEFAULT_MAX_SAMPLES,
            mode: Mode::Cpu,
            alloc_interval_bytes: DEFAULT_ALLOC_INTERVAL_BYTES,
        }
    }
}

impl Options {
    /// Sets the sampling interval.
    pub fn interval(mut self, interval: Duration) -> Self {
        self.interval = interval;
        self
    }

    /// Sets the deepest stack recorded.
    pub fn max_depth(mut self, max_depth: usize) -> Self {
        self.max_depth = max_depth;
        self
    }

    /// Sets the most samples kept.
    pub fn max_samples(mut self, max_samples: usize) -> Self {
        self.max_samples = max_samples;
        self
    }

    /// Sets what to measure.
    pub fn mode(mut self, mode: Mode) -> Self {
        self.mode = mode;
        self
    }

    /// Sets the mean number of bytes between sampled allocations in [`Mode::Alloc`].
    pub fn alloc_interval_bytes(mut self, bytes: u64) -> Self {
        self.alloc_interval_bytes = bytes;
        self
    }
}
