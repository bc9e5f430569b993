//! Sampling the call stacks of the running process (Linux first; other Unix via `setitimer`).
//!
//! [`Profiler::start`](crate::Profiler::start) picks the timer mechanism
//! ([`Options::timer`](crate::Options::timer): the best one that works here unless one is named,
//! see [`crate::Timer`]), installs a handler for the signal it delivers (SIGTRAP for
//! `perf_event_sigtrap`, SIGPROF otherwise; none for `perf_ring`, whose stacks the kernel copies
//! into rings the collector unwinds, see `own_ring.rs`), starts a collector thread and arms every
//! thread (on `perf_event_sigtrap` and `perf_ring` with events that threads created later inherit);
//! the handler walks each stack as [`Options::unwind`](crate::Options::unwind) says
//! ([`crate::Unwind`]). Wall mode runs on `perf_ring` where the kernel allows it, else on signals
//! (`wall.rs`). [`Profiler::stop`](crate::Profiler::stop) disarms, restores the previous
//! disposition and symbolizes each distinct address once: the sampler's [`Session`] is what
//! [`crate::Profiler`], the public face of this module, wraps in a [`crate::Report`]. The
//! library reads no environment variable: every choice is an [`Options`] value.
//!
//! Besides the session, this module has the clocks a sample's weight and thread come from
//! ([`thread_cpu_time`], [`process_cpu_time`], [`current_tid`]).

pub(crate) mod alloc;
mod collector;
pub(crate) mod counters;
pub(crate) mod finish;
mod handler;
mod mechanism;
#[cfg(all(
    target_os = "linux",
    any(target_arch = "x86_64", target_arch = "aarch64")
))]
mod own_ring;
mod ring;
mod samples;
mod stackmap;
mod threads;
mod wall;

use crate::options::Options;
use handler::{Shared, SHARED};
use prof_capture::assemble::at_start;
use prof_capture::sys;
use prof_capture::unwind;
#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
use prof_capture::unwind::frame_reuse;
use prof_session::session::Session;
use prof_session::{Error, Result};
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

/// Deepest stack the handler records. Records take their actual depth in the ring (sized for the
/// rate by `ring::words_for_rate`: 1 MiB for 2 CPUs at 10 kHz, 128 KiB at 1 kHz), which has room
/// for at least 16 of the deepest.
const MAX_RING_DEPTH: usize = 1020;
/// `timer_create` only: how long a thread must have been idle (every signal in that time found
/// less than half an interval of CPU time) before its monotonic timer stops waking it (see
/// `handler::Shared::park_after`). Long enough that a thread alternating short waits and work
/// keeps being sampled on the wall clock, short enough that a blocked thread costs a few
/// hundred wake-ups at most.
const PARK_IDLE_NS: u64 = 10_000_000;

/// Shortest interval accepted: a shorter one would spend all the CPU in signal delivery.
/// Threads alive at once that one session can track.
const THREAD_SLOTS: usize = 16_384;
/// Perf event descriptors whose thread the handler can look up (higher ones ask the kernel).
const FD_SLOTS: usize = 16_384;
/// Readable mappings remembered for stack bounds.
const MAP_SLOTS: usize = 8192;
/// Unwinding states (rule cache and last stack, about 40 KiB each): threads share them by
/// slot, and handlers that find them all busy use frame pointers.
#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
const UNWIND_STATES: usize = 16;

static RUNNING: AtomicBool = AtomicBool::new(false);

/// A running sampling session. Stop it with [`Profiler::stop`](crate::Profiler::stop); dropping it stops it too and
/// discards the samples. [`crate::Profiler`] is its public face.
#[must_use = "a sampler samples until stopped; call stop() to get the session"]
pub(crate) struct Sampler {
    inner: Option<Running>,
    /// The allocation session, in [`crate::Mode::Alloc`].
    alloc: Option<alloc::Running>,
}

struct Running {
    options: Options,
    meta: prof_session::session::Metadata,
    /// The signal's previous disposition (`None`: `perf_ring`, which installs no handler).
    saved: Option<sys::SavedAction>,
    stop: Arc<AtomicBool>,
    collector: JoinHandle<collector::RawProfile>,
    shared: Arc<Shared>,
    start_ns: u64,
    /// [`handler::SHORT_STACK_SKIPPED`] at start: those since are this session's.
    skipped_at_start: u64,
    /// `setitimer`: the program's own `ITIMER_PROF` before start, put back at stop.
    itimer: Option<sys::ItimerProf>,
    /// The counters of [`Options::count_calls`], when it named any function.
    #[cfg(target_os = "linux")]
    counters: Option<prof_capture::calls::CallCounters>,
}

impl Sampler {
    /// Starts sampling every thread of the process. Fails with [`Error::AlreadyRunning`] when a
    /// session is already running, [`Error::InvalidOption`] when an option cannot be used (a
    /// [`Timer`](crate::Timer) or [`Unwind`](crate::Unwind) this system lacks, a timer named
    /// outside cpu mode), [`Error::SignalInUse`] when the timer (or wall mode) needs a signal
    /// the program handles itself, or [`Error::Os`] when the handler or timers cannot be set
    /// up. Handlers of the program's that run on an alternate stack (`SA_ONSTACK`) get the
    /// session's signal in their mask until stop: see docs/sampler.md (Stack room).
    pub fn start(options: Options) -> Result<Sampler> {
        let ring_wall = options.mode == prof_session::Mode::Wall
            && options.timer == crate::options::Timer::PerfRing;
        if options.mode != prof_session::Mode::Cpu
            && options.timer != crate::options::Timer::Auto
            && !ring_wall
        {
            return Err(Error::InvalidOption(format!(
                "timer {} is for cpu mode; {} mode has its own trigger",
                options.timer,
                options.mode.name()
            )));
        }
        options.check()?;
        if options.mode == prof_session::Mode::Alloc {
            return Self::start_alloc(options);
        }
        if RUNNING
            .compare_exchange(false, true, Ordering::AcqRel, Ordering::Acquire)
            .is_err()
        {
            return Err(Error::AlreadyRunning);
        }
        match Self::start_inner(options) {
            Ok(running) => {
                crate::scope::start(
                    running.start_ns,
                    running.options.mode == prof_session::Mode::Wall,
                );
                Ok(Sampler {
                    inner: Some(running),
                    alloc: None,
                })
            }
            Err(e) => {
                RUNNING.store(false, Ordering::Release);
                Err(e)
            }
        }
    }

    /// Starts an allocation session: no timers or signals, the global allocator samples.
    fn start_alloc(options: Options) -> Result<Sampler> {
        alloc::check(&options)?;
        if RUNNING
            .compare_exchange(false, true, Ordering::AcqRel, Ordering::Acquire)
            .is_err()
        {
            return Err(Error::AlreadyRunning);
        }
        match alloc::start(options) {
            Ok(running) => {
                crate::scope::start(running.start_ns(), false);
                Ok(Sampler {
                    inner: None,
                    alloc: Some(running),
                })
            }
            Err(e) => {
                RUNNING.store(false, Ordering::Release);
                Err(e)
            }
        }
    }

    fn start_inner(options: Options) -> Result<Running> {
        let interval_ns = u64::try_from(options.interval.as_nanos()).unwrap_or(u64::MAX);
        let wall_mode = options.mode == prof_session::Mode::Wall;
        let mechanism = if wall_mode {
            if !cfg!(target_os = "linux") {
                return Err(Error::InvalidOption(
                    "wall mode needs Linux (/proc/self/task/TID/syscall)".into(),
                ));
            }
            if options.timer == crate::options::Timer::PerfRing {
                mechanism::Mechanism::ring_wall()?
            } else if let Some(ring) = (!options.diagnostics.wall_signals)
                .then(mechanism::Mechanism::ring_wall_by_default)
                .flatten()
            {
                // No signal, so no EINTR and no signal frame: the ring is wall mode's first
                // choice where the kernel allows its context-switch samples.
                ring
            } else {
                // Wall mode's collector signals the running threads with SIGPROF.
                if sys::program_handles(sys::SIGNAL) {
                    return Err(mechanism::signal_in_use(sys::SIGNAL, "wall mode".into()));
                }
                mechanism::Mechanism::WallTicker
            }
        } else {
            mechanism::Mechanism::choose(options.timer, interval_ns)?
        };
        let unwind = options.unwind.mode()?;
        let settings = options.diagnostics;
        let inherit = mechanism::inherit_threads(mechanism, settings.inherit);
        let start_ns = sys::monotonic_ns();
        // Its monotonic timers wake idle threads: their samples need a minimum weight and the
        // threads are parked (see `handler::Shared::park_after`).
        let timer_create = mechanism == mechanism::Mechanism::TimerCreate;
        let shared = Arc::new(Shared {
            ring: {
                let depth = options.max_depth.min(MAX_RING_DEPTH);
                let cpus = std::thread::available_parallelism().map_or(1, usize::from);
                ring::Ring::new(ring::words_for_rate(interval_ns, depth, cpus), depth)
            },
            threads: if timer_create {
                threads::ThreadTable::with_timer_parking(THREAD_SLOTS)
            } else {
                threads::ThreadTable::new(THREAD_SLOTS)
            },
            maps: stackmap::StackMap::new(MAP_SLOTS),
            #[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
            dwarf: sys::Rcu::empty(),
            #[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
            unwind_states: frame_reuse::states(UNWIND_STATES),
            verify_reuse: settings.verify_reuse,
            reuse: if settings.reuse {
                unwind::Reuse::Join
            } else {
                unwind::Reuse::Off
            },
            fd_tids: (0..FD_SLOTS).map(|_| AtomicU32::new(0)).collect(),
            dropped: AtomicU64::new(0),
            stack_misses: AtomicU64::new(0),
            wakeup: sys::Wakeup::new()?,
            // The collector's first sleeps have a timeout.
            wake_pending: AtomicBool::new(true),
            miss_pending: AtomicBool::new(false),
            start_ns,
            stop_ns: AtomicU64::new(0),
            register_unknown: !mechanism.per_thread() || inherit,
            inherit,
            unwind,
            periodic: matches!(
                mechanism,
                mechanism::Mechanism::PerfEventSigtrap | mechanism::Mechanism::PerfEvent
            ) && interval_ns >= handler::PERIOD_WEIGHT_MIN_NS,
            min_weight_ns: if timer_create { interval_ns / 2 } else { 0 },
            park_after: if timer_create {
                u32::try_from(PARK_IDLE_NS / interval_ns.max(1))
                    .unwrap_or(u32::MAX)
                    .max(1)
            } else {
                0
            },
            interval_ns,
            measure: settings.measure,
            wall: wall_mode,
        });
        let meta = at_start(options.mode, interval_ns, mechanism.name());
        let mut collector = collector::Collector::new(
            Arc::clone(&shared),
            mechanism,
            interval_ns,
            options.max_samples,
        );
        if wall_mode {
            collector.set_wall(wall::Wall::new()?, options.max_depth.min(MAX_RING_DEPTH));
        }
        #[cfg(all(
            target_os = "linux",
            any(target_arch = "x86_64", target_arch = "aarch64")
        ))]
        collector.set_ring_depth(options.max_depth.min(MAX_RING_DEPTH), wall_mode);
        collector.refresh_modules();
        collector.refresh_maps();
        let skipped_at_start = handler::SHORT_STACK_SKIPPED.load(Ordering::Relaxed);
        let saved = if mechanism.signals() {
            Some(sys::install_handler(mechanism.signal(), &handler::SINK)?)
        } else {
            None
        };
        SHARED.replace(Some(Box::new(Arc::clone(&shared))));
        sys::no_session_in_forked_children(crate::sampler::forked_child);
        // The collector thread starts before any thread is armed, so that it inherits no perf
        // event from the thread that creates it; it waits for the collector state, which this
        // thread hands over once every thread is armed.
        let stop = Arc::new(AtomicBool::new(false));
        let (tid_tx, tid_rx) = std::sync::mpsc::sync_channel::<u32>(1);
        let (state_tx, state_rx) = std::sync::mpsc::sync_channel::<collector::Collector>(1);
        let spawned = {
            let stop = Arc::clone(&stop);
            std::thread::Builder::new()
                .name("prof-collector".into())
                .spawn(move || {
                    sys::block_signal_in_this_thread();
                    let _ = tid_tx.send(sys::gettid());
                    match state_rx.recv() {
                        Ok(collector) => collector.run(stop),
                        Err(_) => collector::RawProfile::default(),
                    }
                })
                .map_err(|source| Error::Os {
                    call: "spawn collector thread",
                    source,
                })
        };
        // The program's own ITIMER_PROF, which setitimer replaces until stop.
        let mut itimer = None;
        #[cfg(target_os = "linux")]
        let mut counters = None;
        let armed = spawned.and_then(|handle| {
            let collector_tid = tid_rx.recv().unwrap_or(0);
            collector.set_own_tid(collector_tid);
            // The calls counted on every thread but the collector, which inherits nothing.
            #[cfg(target_os = "linux")]
            let counted = count_calls(&options.count_calls, collector_tid).map(|c| counters = c);
            #[cfg(not(target_os = "linux"))]
            let counted = if options.count_calls.is_empty() {
                Ok(())
            } else {
                Err(Error::Calls("counting calls needs Linux (uprobes)".into()))
            };
            let armed = counted.and_then(|()| {
                if mechanism.per_thread() {
                    collector.arm_at_start();
                    Ok(())
                } else {
                    collector.register_existing();
                    collector.sweep(true);
                    sys::setitimer_prof(interval_ns).map(|old| itimer = Some(old))
                }
            });
            match armed {
                Ok(()) => {
                    let _ = state_tx.send(collector);
                    Ok(handle)
                }
                Err(e) => {
                    // Hands the collector over anyway so that it disarms what was armed.
                    stop.store(true, Ordering::Release);
                    let _ = state_tx.send(collector);
                    let _ = handle.join();
                    Err(e)
                }
            }
        });
        match armed {
            Ok(handle) => Ok(Running {
                skipped_at_start,
                options,
                meta,
                saved,
                stop,
                collector: handle,
                shared,
                start_ns,
                itimer,
                #[cfg(target_os = "linux")]
                counters,
            }),
            Err(e) => {
                if mechanism == mechanism::Mechanism::Setitimer {
                    let _ = sys::setitimer_prof(0);
                }
                SHARED.clear_and_wait();
                if let Some(saved) = &saved {
                    let _ = sys::restore_handler(saved);
                }
                if let Some(old) = &itimer {
                    let _ = sys::restore_itimer_prof(old);
                }
                Err(e)
            }
        }
    }

    /// Stops sampling and builds the session: disarms every timer, restores the previous
    /// disposition of the signal used (for a default one, prof's handler stays: it swallows
    /// prof's signals still in flight and gives any other the default action) and the
    /// program's own `ITIMER_PROF` (`setitimer`), then symbolizes. In a child forked while
    /// profiling (whose timers and collector stayed in the parent, and where the session was
    /// turned off at fork) it only restores the disposition and returns [`Error::ForkedChild`].
    pub fn stop(self) -> Result<Session> {
        self.stop_deferred().and_then(|build| build())
    }

    /// Stops sampling as [`Profiler::stop`](crate::Profiler::stop) does, but leaves building the session (symbolizing)
    /// to the closure returned, so that another session can start first: the push agent's
    /// windows follow each other with only the stop and the start between them.
    pub(crate) fn stop_deferred(mut self) -> Result<Box<dyn FnOnce() -> Result<Session>>> {
        if let Some(alloc) = self.alloc.take() {
            let finished = alloc.finish();
            RUNNING.store(false, Ordering::Release);
            let build = finished?;
            return Ok(Box::new(move || Ok(build())));
        }
        let running = self.inner.take().expect("a sampler is stopped once");
        let f = running.finish()?;
        Ok(Box::new(move || {
            let mut session =
                finish::build(f.raw, f.meta, f.dropped_in_handler, f.options, f.scopes);
            session.counted = f.counted;
            Ok(session)
        }))
    }
}

/// The counters of [`Options::count_calls`]'s functions, opened on every thread of this
/// process but the collector (and inherited by the threads they start); `None` when no pattern
/// was given.
#[cfg(target_os = "linux")]
fn count_calls(
    patterns: &[String],
    collector: u32,
) -> Result<Option<prof_capture::calls::CallCounters>> {
    use prof_capture::calls::{process_files, CallProbes, DEFAULT_CALLS_MAX};
    if patterns.is_empty() {
        return Ok(None);
    }
    let files = process_files(std::process::id());
    let mut counters = CallProbes::find(&files, patterns, DEFAULT_CALLS_MAX)?.counters(false)?;
    let mut opened = std::collections::HashSet::from([collector]);
    prof_capture::tasks::open_on_every_task(std::process::id(), &mut opened, |tid| {
        counters.open_on(tid, true)
    })?;
    Ok(Some(counters))
}

/// What a child forked during a session turns off besides the signal handler's recording
/// (registered with [`sys::no_session_in_forked_children`]): allocation sampling and scope
/// recording. Atomic stores only: async-signal-safe.
fn forked_child() {
    alloc::forked_child();
    crate::scope::forked_child();
}

/// What a stopped session leaves for the report.
struct Finished {
    raw: collector::RawProfile,
    meta: prof_session::session::Metadata,
    dropped_in_handler: u64,
    options: Options,
    /// The scopes, marks and task polls recorded (see [`crate::scope`]).
    scopes: Option<crate::scope::recording::Recording>,
    /// The functions whose calls were counted ([`Options::count_calls`]).
    counted: Vec<prof_session::session::CountedFunction>,
}

impl Running {
    /// Stops everything and returns what the report needs.
    fn finish(self) -> Result<Finished> {
        // The session lasts until stop is asked for: the collector's wind-down (disarming, the
        // wait for signals in flight, thread names) is not time the program was profiled, and
        // counting it made a wall-mode thread's whole-session weight look short.
        let end_ns = sys::monotonic_ns();
        // The calls until now; the counters close (and their uprobes go) here.
        #[cfg(target_os = "linux")]
        let counted = self.counters.map(|c| c.counts()).unwrap_or_default();
        #[cfg(not(target_os = "linux"))]
        let counted = Vec::new();
        crate::scope::disable();
        self.shared.stop_ns.store(end_ns, Ordering::Release);
        self.stop.store(true, Ordering::Release);
        let in_forked_child = std::process::id() != self.meta.pid;
        let raw = if in_forked_child {
            // The collector thread exists only in the parent: nothing to join (or detach) here,
            // and a handler that was running in another parent thread at fork time never
            // finishes in the child, so the shared state is dropped without waiting.
            std::mem::forget(self.collector);
            SHARED.replace(None);
            Err(Error::ForkedChild)
        } else {
            // The collector may sleep until woken: wake it.
            sys::wake(self.shared.wakeup.waker());
            let raw = self.collector.join().map_err(|_| Error::Os {
                call: "collector thread",
                source: std::io::Error::other("the collector thread panicked"),
            });
            // The collector took it away before its last drain; not if it panicked.
            SHARED.clear_and_wait();
            raw
        };
        let restored = match &self.saved {
            Some(saved) => sys::restore_handler(saved),
            None => Ok(()),
        };
        // The program's timer goes back once its signals reach its own disposition again;
        // not when the program replaced prof's handler during the session (whatever timer it
        // set since is its own).
        let replaced = matches!(&raw, Ok(raw) if raw.sampling_ended.is_some());
        let restored = match (&self.itimer, in_forked_child) {
            (Some(old), false) if old.is_armed() && !replaced => {
                restored.and(sys::restore_itimer_prof(old))
            }
            _ => restored,
        };
        // The collector's last drain is done: what the threads wrote since is not kept.
        // Not in a forked child: a lock the parent's collector held at fork is never released.
        let mut scopes = (!in_forked_child).then(crate::scope::stop).flatten();
        if let Some(scopes) = &mut scopes {
            scopes.finish(end_ns.saturating_sub(self.start_ns));
        }
        RUNNING.store(false, Ordering::Release);
        let (raw, ()) = (raw?, restored?);
        if let Some(stats) = raw.wall {
            *counters::LAST_WALL_STATS
                .lock()
                .unwrap_or_else(|e| e.into_inner()) = stats;
        }
        let mut meta = self.meta;
        meta.duration_ns = end_ns.saturating_sub(self.start_ns);
        Ok(Finished {
            raw,
            meta,
            dropped_in_handler: self.shared.dropped.load(Ordering::Relaxed)
                + handler::SHORT_STACK_SKIPPED
                    .load(Ordering::Relaxed)
                    .saturating_sub(self.skipped_at_start),
            options: self.options,
            scopes,
            counted,
        })
    }
}

impl Drop for Sampler {
    fn drop(&mut self) {
        if let Some(running) = self.inner.take() {
            let _ = running.finish();
        }
        if let Some(alloc) = self.alloc.take() {
            let _ = alloc.stop();
            RUNNING.store(false, Ordering::Release);
        }
    }
}

/// CPU time consumed by the calling thread so far: the clock a CPU-mode sample's weight is read
/// from.
pub fn thread_cpu_time() -> Duration {
    Duration::from_nanos(sys::thread_cpu_ns())
}

/// User plus system CPU time consumed by the whole process so far (`getrusage`).
pub fn process_cpu_time() -> Duration {
    Duration::from_nanos(sys::process_cpu_ns())
}

/// The kernel's id of the calling thread, as recorded in [`crate::session::Thread::tid`]: finds
/// the calling thread's samples in a report.
pub fn current_tid() -> u64 {
    u64::from(sys::gettid())
}
