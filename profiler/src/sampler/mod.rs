//! Sampling the call stacks of the running process (Linux first; other Unix via `setitimer`).
//!
//! [`Profiler::start`] installs a SIGPROF handler, picks the best timer mechanism
//! ([`timer`]), arms every thread and starts a collector thread; [`Profiler::stop`] disarms,
//! restores the previous SIGPROF disposition, symbolizes each distinct address once and returns a
//! [`Report`]. Set `PROF_TIMER=perf_event|timer_create|setitimer` to force a mechanism and
//! `PROF_UNWIND=fp|dwarf` to force an unwinder.

mod collector;
#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
mod dwarf;
mod handler;
mod meta;
mod report;
mod ring;
mod stackmap;
#[allow(unsafe_code)]
mod sys;
mod threads;
mod timer;
mod unwind;

pub use meta::rfc3339;
pub use sys::LoadedObject;

use crate::{Error, Options, Report, Result};
use handler::{Shared, SHARED};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

/// Ring capacity in records: 8 threads at 10 kHz fill it in 12 ms; it is drained every 2 ms.
const RING_RECORDS: usize = 1024;
/// Threads one session can track (exited threads' slots are not reused).
const THREAD_SLOTS: usize = 16_384;
/// Readable mappings remembered for stack bounds.
const MAP_SLOTS: usize = 8192;
/// Handlers that can use the DWARF unwinder at the same time (others use frame pointers).
#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
const UNWIND_CACHES: usize = 8;

static RUNNING: AtomicBool = AtomicBool::new(false);

/// A running profiling session. Stop it with [`Profiler::stop`]; dropping it stops it too and
/// discards the samples.
#[must_use = "a profiler samples until stopped; call stop() to get the report"]
pub struct Profiler {
    inner: Option<Running>,
}

struct Running {
    options: Options,
    meta: crate::session::Metadata,
    saved: sys::SavedAction,
    stop: Arc<AtomicBool>,
    collector: JoinHandle<collector::RawProfile>,
    shared: Arc<Shared>,
    start_ns: u64,
}

/// Profiles `work` and returns the report. The value `work` returns is dropped.
pub fn profile<R>(options: Options, work: impl FnOnce() -> R) -> Result<Report> {
    let profiler = Profiler::start(options)?;
    drop(std::hint::black_box(work()));
    profiler.stop()
}

impl Profiler {
    /// Starts sampling every thread of the process. Fails with [`Error::AlreadyRunning`] when a
    /// session is already running, or [`Error::Os`] when the handler or timers cannot be set up.
    pub fn start(options: Options) -> Result<Profiler> {
        if options.mode != crate::Mode::Cpu {
            return Err(Error::InvalidOption(format!(
                "mode {} is not implemented yet; use cpu",
                options.mode.name()
            )));
        }
        if options.interval.is_zero() || options.max_depth == 0 {
            return Err(Error::InvalidOption(
                "interval and max_depth must be positive".into(),
            ));
        }
        if RUNNING
            .compare_exchange(false, true, Ordering::AcqRel, Ordering::Acquire)
            .is_err()
        {
            return Err(Error::AlreadyRunning);
        }
        match Self::start_inner(options) {
            Ok(running) => Ok(Profiler {
                inner: Some(running),
            }),
            Err(e) => {
                RUNNING.store(false, Ordering::Release);
                Err(e)
            }
        }
    }

    fn start_inner(options: Options) -> Result<Running> {
        let interval_ns = u64::try_from(options.interval.as_nanos()).unwrap_or(u64::MAX);
        let mechanism = timer::Mechanism::choose(interval_ns)?;
        let start_ns = sys::monotonic_ns();
        let shared = Arc::new(Shared {
            ring: ring::Ring::new(RING_RECORDS, options.max_depth),
            threads: threads::ThreadTable::new(THREAD_SLOTS),
            maps: stackmap::StackMap::new(MAP_SLOTS),
            #[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
            dwarf: sys::Rcu::empty(),
            #[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
            caches: (0..UNWIND_CACHES)
                .map(|_| sys::TryCell::new(dwarf::Cache::default()))
                .collect(),
            dropped: AtomicU64::new(0),
            start_ns,
            register_unknown: !mechanism.per_thread(),
            unwind: unwind::UnwindMode::from_env(),
            measure: std::env::var_os("PROF_MEASURE_HANDLER").is_some(),
        });
        let meta = meta::at_start(options.mode, interval_ns, mechanism.name());
        let mut collector = collector::Collector::new(
            Arc::clone(&shared),
            mechanism,
            interval_ns,
            options.max_samples,
        );
        collector.refresh_modules();
        collector.refresh_maps();
        let saved = sys::install_handler()?;
        SHARED.replace(Some(Box::new(Arc::clone(&shared))));
        let armed = if mechanism.per_thread() {
            collector.sweep(true);
            Ok(())
        } else {
            collector.register_existing();
            collector.sweep(true);
            sys::setitimer_prof(interval_ns)
        };
        let stop = Arc::new(AtomicBool::new(false));
        let spawned = armed.and_then(|()| {
            let stop = Arc::clone(&stop);
            std::thread::Builder::new()
                .name("prof-collector".into())
                .spawn(move || collector.run(stop))
                .map_err(|source| Error::Os {
                    call: "spawn collector thread",
                    source,
                })
        });
        match spawned {
            Ok(handle) => Ok(Running {
                options,
                meta,
                saved,
                stop,
                collector: handle,
                shared,
                start_ns,
            }),
            Err(e) => {
                let _ = sys::setitimer_prof(0);
                SHARED.clear_and_wait();
                let _ = sys::restore_handler(&saved);
                Err(e)
            }
        }
    }

    /// Stops sampling and builds the report: disarms every timer, restores the previous SIGPROF
    /// disposition (a default one becomes "ignore", so a signal still in flight is harmless),
    /// then symbolizes.
    pub fn stop(mut self) -> Result<Report> {
        let running = self.inner.take().expect("a profiler is stopped once");
        let (raw, result) = running.finish();
        let (raw, running) = (raw?, result?);
        Ok(report::build(raw, running.0, running.1, running.2))
    }
}

impl Running {
    /// Stops everything; returns the raw profile and what the report needs.
    #[allow(clippy::type_complexity)]
    fn finish(
        self,
    ) -> (
        Result<collector::RawProfile>,
        Result<(crate::session::Metadata, u64, Options)>,
    ) {
        self.stop.store(true, Ordering::Release);
        let raw = self.collector.join().map_err(|_| Error::Os {
            call: "collector thread",
            source: std::io::Error::other("the collector thread panicked"),
        });
        let end_ns = sys::monotonic_ns();
        SHARED.clear_and_wait();
        let restored = sys::restore_handler(&self.saved);
        RUNNING.store(false, Ordering::Release);
        let mut meta = self.meta;
        meta.duration_ns = end_ns.saturating_sub(self.start_ns);
        meta.dropped_samples = self.shared.dropped.load(Ordering::Relaxed);
        (
            raw,
            restored.map(|()| {
                (
                    meta,
                    self.shared.dropped.load(Ordering::Relaxed),
                    self.options,
                )
            }),
        )
    }
}

impl Drop for Profiler {
    fn drop(&mut self) {
        if let Some(running) = self.inner.take() {
            let _ = running.finish();
        }
    }
}

/// The SIGPROF handler currently installed, as an address (or `SIG_DFL` = 0 / `SIG_IGN` = 1);
/// lets tests check that the previous disposition is back after stop.
pub fn current_sigprof_handler() -> usize {
    sys::current_handler()
}

/// True while `prof`'s own handler is the installed SIGPROF handler.
pub fn our_handler_installed() -> bool {
    sys::current_handler() == sys::our_handler()
}

/// CPU time consumed by the calling thread so far.
pub fn thread_cpu_time() -> Duration {
    Duration::from_nanos(sys::thread_cpu_ns())
}

/// User plus system CPU time consumed by the whole process so far (`getrusage`).
pub fn process_cpu_time() -> Duration {
    Duration::from_nanos(sys::process_cpu_ns())
}

/// The kernel's id of the calling thread, as recorded in [`crate::session::Thread::tid`].
pub fn current_tid() -> u64 {
    u64::from(sys::gettid())
}

/// With `PROF_MEASURE_HANDLER` set at start: signals handled in sessions so far in this
/// process, and the nanoseconds spent inside the handler for them (measured with the thread CPU clock around each sample): the handler's own
/// cost, without the kernel's signal delivery.
pub fn handler_stats() -> (u64, Duration) {
    (
        handler::HANDLED.load(Ordering::Relaxed),
        Duration::from_nanos(handler::HANDLER_NS.load(Ordering::Relaxed)),
    )
}

/// CPU time consumed so far by thread `tid` of this process (Linux), `None` if it has exited.
pub fn thread_cpu_time_of(tid: u64) -> Option<Duration> {
    sys::thread_cpu_ns_of(u32::try_from(tid).ok()?).map(Duration::from_nanos)
}
