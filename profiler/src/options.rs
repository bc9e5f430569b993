//! Options for a profiling session.

use prof_session::session::Mode;
use std::fmt;
use std::str::FromStr;
use std::time::Duration;

/// The default sampling interval: 1 ms (1 kHz).
pub const DEFAULT_INTERVAL: Duration = Duration::from_millis(1);
/// The default deepest stack recorded, in frames.
pub const DEFAULT_MAX_DEPTH: usize = 128;
/// The default largest number of samples kept; later samples are dropped and counted.
pub const DEFAULT_MAX_SAMPLES: usize = 1_000_000;

/// The shortest sampling interval: 10 µs (100 kHz).
pub const MIN_INTERVAL: Duration = Duration::from_micros(10);
/// The longest sampling interval: 1 s. A session shorter than one interval has no sample.
pub const MAX_INTERVAL: Duration = Duration::from_secs(1);

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
    /// What triggers samples in [`Mode::Cpu`] ([`Timer::Auto`]).
    pub timer: Timer,
    /// How stacks are walked ([`Unwind::Auto`]), in every mode.
    pub unwind: Unwind,
    /// Patterns of the functions whose calls to count exactly ([`Options::count_calls`]);
    /// empty: none.
    pub count_calls: Vec<String>,
    /// Switches for prof's own tests and benchmarks (see `prof::diagnostics`).
    pub(crate) diagnostics: Settings,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            interval: DEFAULT_INTERVAL,
            max_depth: DEFAULT_MAX_DEPTH,
            max_samples: DEFAULT_MAX_SAMPLES,
            mode: Mode::Cpu,
            alloc_interval_bytes: DEFAULT_ALLOC_INTERVAL_BYTES,
            timer: Timer::Auto,
            unwind: Unwind::Auto,
            count_calls: Vec::new(),
            diagnostics: Settings::default(),
        }
    }
}

impl Options {
    /// Checks each option on its own, as the session's start does: an error names the option
    /// that is wrong and what it takes. The interval is checked in CPU and wall mode, the
    /// allocation interval in alloc mode.
    ///
    /// ```
    /// use std::time::Duration;
    /// let wrong = prof::Options::default().max_depth(0).check().unwrap_err();
    /// assert_eq!(wrong.to_string(), "invalid option: max_depth: 0 records no frame (at least 1)");
    /// let wrong = prof::Options::default().interval(Duration::from_secs(3600)).check().unwrap_err();
    /// assert!(wrong.to_string().starts_with("invalid option: interval: 3600s is above the longest, 1s"));
    /// assert!(prof::Options::default().check().is_ok());
    /// ```
    pub fn check(&self) -> prof_session::Result<()> {
        let wrong = |message: String| Err(prof_session::Error::InvalidOption(message));
        if self.mode != Mode::Alloc && self.interval < MIN_INTERVAL {
            return wrong(format!(
                "interval: {:?} is below the shortest, {MIN_INTERVAL:?}",
                self.interval
            ));
        }
        if self.mode != Mode::Alloc && self.interval > MAX_INTERVAL {
            return wrong(format!(
                "interval: {:?} is above the longest, {MAX_INTERVAL:?} (a session shorter than \
                 one interval would have no sample)",
                self.interval
            ));
        }
        if self.max_depth == 0 {
            return wrong("max_depth: 0 records no frame (at least 1)".to_owned());
        }
        if self.max_samples == 0 {
            return wrong("max_samples: 0 keeps no sample (at least 1)".to_owned());
        }
        if self.mode == Mode::Alloc && !self.count_calls.is_empty() {
            return wrong("count_calls: counts calls in cpu and wall mode, not alloc".to_owned());
        }
        if self.mode == Mode::Alloc && self.alloc_interval_bytes == 0 {
            return wrong("alloc_interval_bytes: 0 (at least 1 byte between samples)".to_owned());
        }
        Ok(())
    }

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

    /// Sets what triggers samples in [`Mode::Cpu`]. Anything but [`Timer::Auto`] is refused at
    /// start in the other modes, which have their own trigger, but for [`Timer::PerfRing`] in
    /// [`Mode::Wall`].
    pub fn timer(mut self, timer: Timer) -> Self {
        self.timer = timer;
        self
    }

    /// Sets how stacks are walked.
    pub fn unwind(mut self, unwind: Unwind) -> Self {
        self.unwind = unwind;
        self
    }

    /// Counts every call of the functions of this program (and of the libraries it has
    /// loaded) whose demangled names `pattern`, a regular expression, matches anywhere
    /// (`"^my_crate::parse$"` for one), exactly, with no change to the code: the kernel counts
    /// each entry through a uprobe (Linux, as root; [`Mode::Cpu`] and [`Mode::Wall`]). Call it
    /// again for more patterns. The counts are the session's
    /// [`counted`](prof_session::session::Session::counted) functions, printed with time per
    /// call by [`TableOptions::calls`](prof_session::aggregate::TableOptions::calls) and `prof
    /// report --calls`. Start fails with [`Error::Calls`](prof_session::Error::Calls) when no
    /// function matches, more than 5,000 do, or the kernel refuses. Each counted call costs a
    /// trap into the kernel (about 9 µs on the VMs prof is tested on: see docs/record.md).
    pub fn count_calls(mut self, pattern: impl Into<String>) -> Self {
        self.count_calls.push(pattern.into());
        self
    }

    /// Sets the switches that only prof's own tests and benchmarks use (the `testing`
    /// feature).
    #[cfg(feature = "testing")]
    pub fn diagnostics(mut self, settings: Settings) -> Self {
        self.diagnostics = settings;
        self
    }
}

/// What triggers the samples of [`Mode::Cpu`]: every mechanism counts the thread's CPU time,
/// and every sample weighs the thread's CPU time since its previous one (read from the thread's
/// CPU clock), so totals are right whichever runs. The report's `timer` field says which ran.
///
/// A mechanism named explicitly is probed when a session starts (`Profiler::start`): if
/// this system cannot provide it, start fails with [`Error::InvalidOption`](crate::Error)
/// saying why, rather than falling back to another. A signal the program handles itself is
/// never taken over: a timer that needs it fails with
/// [`Error::SignalInUse`](crate::Error::SignalInUse), and [`Timer::Auto`] passes over it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Timer {
    /// The best mechanism that works here, in the order of the variants below:
    /// [`PerfEventSigtrap`](Timer::PerfEventSigtrap) when the kernel has it (Linux 5.13+),
    /// nothing in the process handles SIGTRAP and no debugger or tracer is attached (a debugger
    /// would stop at every sample); then [`PerfEvent`](Timer::PerfEvent),
    /// [`TimerCreate`](Timer::TimerCreate), and [`Setitimer`](Timer::Setitimer), which is
    /// the only one outside Linux. These three signal with SIGPROF: none is taken when the
    /// program handles SIGPROF itself; when it handles SIGTRAP too, `perf_ring`, which needs
    /// no signal, is taken (and nothing, with [`Error::SignalInUse`](crate::Error::SignalInUse),
    /// where it does not work).
    ///
    /// [`PerfRing`](Timer::PerfRing) is otherwise not in that order: measured side by side with the
    /// sampler bench (`benches/benches/sampler_cost.rs`, see `docs/benchmarks.md`), the
    /// sampled thread pays about what `perf_event_sigtrap` costs it (21.4 against 26.2 µs a
    /// sample at 1 kHz and 17.4 against 17.4 µs at 10 kHz in one run on a VM at load 11, 26.1
    /// against 23.3 and 16.1 against 15.8 in another), but the process pays more (51.3 against
    /// 38.9 µs and 26.3 against 18.9: its collector copies and unwinds every 32,000-byte stack
    /// copy), and a session starts in 3.8 ms instead of 1.1 (a 4 MiB ring per CPU). Name it where a program's own signal handling, or EINTR, matters more.
    #[default]
    Auto,
    /// `perf_event_sigtrap` (Linux 5.13+): a per-thread `perf_event_open` task clock that
    /// signals its own thread with SIGTRAP. The cheapest per sample, and threads created
    /// during the session inherit their event from the kernel, so short-lived threads are
    /// sampled from their first nanosecond. Refused when the program handles SIGTRAP itself.
    PerfEventSigtrap,
    /// `perf_event` (Linux): the same task clock, its SIGPROF routed to the thread through the
    /// descriptor; a few microseconds more per sample than SIGTRAP.
    PerfEvent,
    /// `timer_create` (Linux): per-thread `timer_create(CLOCK_MONOTONIC, SIGEV_THREAD_ID)`.
    /// Counts wall time, so it also wakes blocked threads; a thread idle for about 10 ms of
    /// signals is parked on a timer of its own CPU clock until it runs again.
    TimerCreate,
    /// `setitimer`: `setitimer(ITIMER_PROF)` for the whole process, capped by the kernel at its
    /// tick (often 250 Hz). A timer the program had armed is put back at stop.
    Setitimer,
    /// `perf_ring` (Linux on x86_64 and aarch64): no signal at all. Per-thread task-clock perf
    /// events (one per CPU, inherited by threads created during the session) have the kernel
    /// copy each sample's registers and the top of its stack (32,000 bytes) into mmap'd
    /// rings, which the collector thread drains and unwinds: the program never runs prof's
    /// code, its own SIGPROF and SIGTRAP handlers are untouched, and no system call of its ends
    /// with EINTR. Each sample weighs the CPU time its event counted since the thread's
    /// previous sample on that CPU. [`Mode::Wall`] uses it by default, charging a blocked
    /// thread's time to the stack it was switched out at (context-switch samples, which need
    /// `perf_event_paranoid` at 1 or below or `CAP_PERFMON`; wall mode takes its samples with
    /// signals where they are refused); naming it there makes that refusal an error.
    PerfRing,
}

impl Timer {
    /// Every value, [`Timer::Auto`] first.
    pub const ALL: [Timer; 6] = [
        Timer::Auto,
        Timer::PerfEventSigtrap,
        Timer::PerfEvent,
        Timer::TimerCreate,
        Timer::Setitimer,
        Timer::PerfRing,
    ];

    /// The name used in reports and on the command line: `auto`, `perf_event_sigtrap`,
    /// `perf_event`, `timer_create`, `setitimer` or `perf_ring`.
    pub fn name(self) -> &'static str {
        match self {
            Timer::Auto => "auto",
            Timer::PerfEventSigtrap => "perf_event_sigtrap",
            Timer::PerfEvent => "perf_event",
            Timer::TimerCreate => "timer_create",
            Timer::Setitimer => "setitimer",
            Timer::PerfRing => "perf_ring",
        }
    }
}

impl fmt::Display for Timer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Timer {
    type Err = prof_session::Error;

    /// Parses a [`Timer::name`].
    fn from_str(s: &str) -> prof_session::Result<Timer> {
        Timer::ALL
            .into_iter()
            .find(|t| t.name() == s)
            .ok_or_else(|| {
                prof_session::Error::InvalidOption(format!(
                    "unknown timer `{s}` (expected auto, perf_event_sigtrap, perf_event, \
                     timer_create, setitimer or perf_ring)"
                ))
            })
    }
}

/// How the sampler walks a stack, in every mode. Whatever the choice, a sample whose stack has
/// too little room left for DWARF unwinding (a small alternate signal stack) is walked with
/// frame pointers.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Unwind {
    /// [`Dwarf`](Unwind::Dwarf) on x86_64 and aarch64, [`FramePointers`](Unwind::FramePointers)
    /// on other processors.
    #[default]
    Auto,
    /// DWARF call frame information (`.eh_frame`, read before sampling and again when
    /// libraries are loaded), falling back to the frame-pointer chain where code has none.
    /// Finds the callers of code built without frame pointers (the default for Rust release
    /// builds). x86_64 and aarch64 only: refused at start elsewhere.
    Dwarf,
    /// Frame pointers only: cheaper per sample and needs no unwind tables, but stacks through
    /// code built without frame pointers stop early.
    FramePointers,
}

impl Unwind {
    /// Every value, [`Unwind::Auto`] first.
    pub const ALL: [Unwind; 3] = [Unwind::Auto, Unwind::Dwarf, Unwind::FramePointers];

    /// The name used on the command line: `auto`, `dwarf` or `fp`.
    pub fn name(self) -> &'static str {
        match self {
            Unwind::Auto => "auto",
            Unwind::Dwarf => "dwarf",
            Unwind::FramePointers => "fp",
        }
    }

    /// The unwinder a sampler uses for this choice: [`Unwind::Dwarf`] is refused where this
    /// build has no DWARF unwinder, which [`Unwind::Auto`] then replaces with frame pointers.
    #[cfg(feature = "sampler")]
    pub(crate) fn mode(self) -> prof_session::Result<prof_capture::unwind::UnwindMode> {
        use prof_capture::unwind::{UnwindMode, HAS_DWARF};
        match self {
            Unwind::Auto if HAS_DWARF => Ok(UnwindMode::Dwarf),
            Unwind::Auto | Unwind::FramePointers => Ok(UnwindMode::FramePointers),
            Unwind::Dwarf if HAS_DWARF => Ok(UnwindMode::Dwarf),
            Unwind::Dwarf => Err(prof_session::Error::InvalidOption(format!(
                "unwind dwarf is not available on {}: it needs x86_64 or aarch64",
                std::env::consts::ARCH
            ))),
        }
    }
}

impl fmt::Display for Unwind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Unwind {
    type Err = prof_session::Error;

    /// Parses an [`Unwind::name`].
    fn from_str(s: &str) -> prof_session::Result<Unwind> {
        Unwind::ALL
            .into_iter()
            .find(|u| u.name() == s)
            .ok_or_else(|| {
                prof_session::Error::InvalidOption(format!(
                    "unknown unwinder `{s}` (expected auto, dwarf or fp)"
                ))
            })
    }
}

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

// Only `Options::diagnostics` (the `testing` feature) takes other settings than the default.
#[cfg_attr(not(feature = "testing"), allow(dead_code))]
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
#[cfg_attr(not(feature = "testing"), allow(dead_code))]
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_refused_option_is_named_with_what_it_takes() {
        let message = |o: Options| o.check().unwrap_err().to_string();
        let cases = [
            (
                Options::default().interval(Duration::ZERO),
                "interval: 0ns is below the shortest, 10µs",
            ),
            (
                Options::default().interval(Duration::from_secs(3600)),
                "interval: 3600s is above the longest, 1s",
            ),
            (
                Options::default().max_depth(0),
                "max_depth: 0 records no frame",
            ),
            (
                Options::default().max_samples(0),
                "max_samples: 0 keeps no sample",
            ),
            (
                Options::default().mode(Mode::Alloc).alloc_interval_bytes(0),
                "alloc_interval_bytes: 0",
            ),
        ];
        for (options, want) in cases {
            let got = message(options);
            assert!(got.starts_with(&format!("invalid option: {want}")), "{got}");
        }
        // The bounds themselves are taken; alloc mode has no time interval.
        assert!(Options::default().interval(MIN_INTERVAL).check().is_ok());
        assert!(Options::default().interval(MAX_INTERVAL).check().is_ok());
        let alloc = Options::default()
            .mode(Mode::Alloc)
            .interval(Duration::ZERO);
        assert!(alloc.check().is_ok());
    }
}
