//! The one error type of the `prof` library.

use std::path::PathBuf;

/// Everything that can go wrong in `prof`. Messages are one line a user can act on.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A profiling session is already running in this process.
    #[error("a profiling session is already running in this process")]
    AlreadyRunning,
    /// A profiler started before `fork()` was stopped in the child, which has no samples.
    #[error("this profiler was started before fork(); only the parent process has its samples")]
    ForkedChild,
    /// A system call failed.
    #[error("{call} failed: {source}")]
    Os {
        /// The call that failed.
        call: &'static str,
        /// The operating system's error.
        #[source]
        source: std::io::Error,
    },
    /// Reading or writing a file failed.
    #[error("{}: {source}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// What went wrong.
        #[source]
        source: std::io::Error,
    },
    /// A file's content is not what it should be.
    #[error("{}: {message}", path.display())]
    BadInput {
        /// The file.
        path: PathBuf,
        /// What is wrong, with a position where there is one.
        message: String,
    },
    /// A sample type was asked for that the profile does not carry.
    #[error("no sample type `{name}` (available: {known})")]
    UnknownSampleType {
        /// The name asked for.
        name: String,
        /// The names the profile has, comma-separated, primary first.
        known: String,
    },
    /// An option has a value that cannot be used.
    #[error("invalid option: {0}")]
    InvalidOption(String),
    /// Two profiles cannot be compared: their weights are in different units.
    #[error("{0}")]
    Incomparable(#[from] crate::aggregate::DiffError),
    /// Writing to a caller-supplied writer failed.
    #[error("write failed: {0}")]
    Write(#[from] std::io::Error),
}

/// `Result` with [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;
