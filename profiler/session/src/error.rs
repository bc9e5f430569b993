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
    /// A command to profile could not be started.
    #[error("cannot run {program}: {source}")]
    Spawn {
        /// The command's program.
        program: String,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// The kernel refused the perf events `prof record` samples with.
    #[error("perf_event_open refused ({source}): /proc/sys/kernel/perf_event_paranoid is {paranoid}; {what} needs {needed} or lower (sudo sysctl kernel.perf_event_paranoid={needed})")]
    PerfRefused {
        /// The value of `/proc/sys/kernel/perf_event_paranoid` (or `unknown`).
        paranoid: String,
        /// What was asked that needs it, e.g. `recording one's own programs`.
        what: &'static str,
        /// The highest value that allows it.
        needed: u8,
        /// The kernel's error.
        #[source]
        source: std::io::Error,
    },
    /// The kernel refused to let `prof record --pid` sample a process because of whose it is
    /// (another user's) or what it made of itself (non-dumpable), not because of the
    /// `perf_event_paranoid` sysctl.
    #[error("cannot sample process {pid} ({name}): {why}")]
    AttachRefused {
        /// The process.
        pid: u32,
        /// Its name.
        name: String,
        /// Why, and what would allow it.
        why: String,
    },
    /// A sample type was asked for that the profile does not carry.
    #[error(transparent)]
    UnknownSampleType(#[from] crate::session::UnknownSampleType),
    /// The program handles a signal that the session would need (it installed its own handler
    /// before start): prof does not take it over. Says which signal, what needs it and what to
    /// use instead.
    #[error("{user} needs {signal}, which the program handles itself; {instead}")]
    SignalInUse {
        /// The signal: `SIGPROF` or `SIGTRAP`.
        signal: &'static str,
        /// What needs it: `timer NAME`, `wall mode`, or every timer that works here.
        user: String,
        /// What to use instead, or why nothing can.
        instead: String,
    },
    /// An option has a value that cannot be used.
    #[error("invalid option: {0}")]
    InvalidOption(String),
    /// Counting calls (`prof record --calls`) cannot be done as asked: the message says why
    /// (no function matched, too many did, the kernel has no uprobes or refused them).
    #[error("--calls: {0}")]
    Calls(String),
    /// Two profiles cannot be compared: their weights are in different units. The message
    /// names both (it is an `aggregate::DiffError`'s, which converts into this).
    #[error("{0}")]
    Incomparable(String),
    /// Writing to a caller-supplied writer (an export's output, a report's text) failed.
    #[error("write failed: {0}")]
    Write(#[source] std::io::Error),
    /// The profile has no samples, so there is nothing to draw or compare.
    #[error("{profile} has no samples")]
    NoSamples {
        /// The profile, as the caller named it (a file name, or "the session").
        profile: String,
    },
    /// The address to serve on, or every port tried, is taken by another program.
    #[error("{}", ports_in_use(.host, *.first, *.last))]
    PortsInUse {
        /// The address the server was to listen on.
        host: std::net::IpAddr,
        /// The first port tried.
        first: u16,
        /// The last port tried (`first` when one exact port was asked for).
        last: u16,
    },
}

fn ports_in_use(host: &std::net::IpAddr, first: u16, last: u16) -> String {
    let addr = std::net::SocketAddr::new(*host, first);
    match first == last {
        true => format!("{addr} is already in use"),
        false => format!("ports {first} to {last} on {host} are all in use"),
    }
}

/// `Result` with [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;
