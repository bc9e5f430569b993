//! The library's front: [`Profiler`] and [`profile`] start the [sampler](crate::sampler), and
//! wrap the [`Session`](crate::session::Session) it returns in a [`Report`]. The sampler below
//! knows nothing of reports.

use crate::options::Options;
use crate::report::Report;
use crate::sampler::Sampler;
use prof_session::Result;

/// A running profiling session. Stop it with [`Profiler::stop`]; dropping it stops it too and
/// discards the samples.
#[must_use = "a profiler samples until stopped; call stop() to get the report"]
pub struct Profiler(Sampler);

/// Profiles `work` and returns its report with what `work` returned: the result reads as a
/// [`Report`] (it dereferences to one, and prints its table), and its
/// [`value`](Profiled::value) is `work`'s.
///
/// ```
/// # fn main() -> prof::Result<()> {
/// let run = prof::profile(prof::Options::default(), || {
///     (0..3_000_000u64).fold(0, |a, i| a ^ i.rotate_left(7))
/// })?;
/// println!("{run}"); // the top-10 table, as a report prints it
/// assert!(run.total_samples() > 0); // every method of Report
/// let checksum: u64 = run.value; // what the closure returned
/// # let _ = checksum;
/// let report: prof::Report = run.report;
/// # let _ = report;
/// # Ok(())
/// # }
/// ```
pub fn profile<R>(options: Options, work: impl FnOnce() -> R) -> Result<Profiled<R>> {
    let profiler = Profiler::start(options)?;
    // Opaque to the optimizer: work whose value the caller drops is still done.
    let value = std::hint::black_box(work());
    Ok(Profiled {
        report: profiler.stop()?,
        value,
    })
}

/// What [`profile`] returns: the report of the work, and the value the work returned. It
/// dereferences to the [`Report`] and prints as one.
#[derive(Clone, Debug, PartialEq)]
pub struct Profiled<R> {
    /// The report of the profiled work.
    pub report: Report,
    /// What the profiled closure returned.
    pub value: R,
}

impl<R> Profiled<R> {
    /// The report and the value apart.
    pub fn into_parts(self) -> (Report, R) {
        (self.report, self.value)
    }
}

impl<R> std::ops::Deref for Profiled<R> {
    type Target = Report;

    fn deref(&self) -> &Report {
        &self.report
    }
}

/// The report's top-10 table.
impl<R> std::fmt::Display for Profiled<R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.report.fmt(f)
    }
}

impl<R> From<Profiled<R>> for Report {
    fn from(profiled: Profiled<R>) -> Report {
        profiled.report
    }
}

/// Drops what the process keeps from one session for the next: the parsed debug info of the
/// symbol cache ([`prof_capture::symbolize::clear_cache`]) and the sampler's unwind tables. The next
/// session's start and stop read them again. A session running now keeps what it holds.
pub fn clear_caches() {
    prof_capture::symbolize::clear_cache();
    #[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
    prof_capture::unwind::dwarf::clear_kept();
}

impl Profiler {
    /// Starts sampling every thread of the process. Fails with
    /// [`Error::AlreadyRunning`](crate::Error::AlreadyRunning) when a session is already
    /// running, [`Error::InvalidOption`](crate::Error::InvalidOption) when an option cannot be
    /// used (a [`Timer`](crate::Timer) or [`Unwind`](crate::Unwind) this system lacks, a timer
    /// named outside cpu mode), [`Error::SignalInUse`](crate::Error::SignalInUse) when the
    /// timer (or wall mode) needs a signal the program handles itself, or
    /// [`Error::Os`](crate::Error::Os) when the handler or timers cannot be set up. Handlers of
    /// the program's that run on an alternate stack (`SA_ONSTACK`) get the session's signal in
    /// their mask until stop: see docs/sampler.md (Stack room).
    pub fn start(options: Options) -> Result<Profiler> {
        Sampler::start(options).map(Profiler)
    }

    /// Stops sampling and builds the report: disarms every timer, restores the previous
    /// disposition of the signal used (for a default one, prof's handler stays: it swallows
    /// prof's signals still in flight and gives any other the default action) and the
    /// program's own `ITIMER_PROF` (`setitimer`), then symbolizes. In a child forked while
    /// profiling (whose timers and collector stayed in the parent, and where the session was
    /// turned off at fork) it only restores the disposition and returns
    /// [`Error::ForkedChild`](crate::Error::ForkedChild).
    pub fn stop(self) -> Result<Report> {
        self.0.stop().map(Report::new)
    }

    /// Stops sampling as [`Profiler::stop`] does, leaving the symbolizing to the closure
    /// returned, so another session can start while it runs.
    #[cfg(feature = "debug-http")]
    pub(crate) fn stop_deferred(self) -> Result<Box<dyn FnOnce() -> Result<Report>>> {
        let build = self.0.stop_deferred()?;
        Ok(Box::new(move || build().map(Report::new)))
    }
}
