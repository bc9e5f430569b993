//! The timer mechanisms, best first: a per-thread perf_event task clock (delivering SIGTRAP
//! itself where the kernel can, SIGPROF through the descriptor otherwise), per-thread monotonic
//! POSIX timers, and the process-wide `setitimer(ITIMER_PROF)`.

use crate::options::Timer;
use prof_capture::sys::{self, PerfDelivery};
use std::os::fd::OwnedFd;

/// How samples are triggered.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mechanism {
    /// `perf_event_open` task-clock per thread, the kernel sending SIGTRAP to the thread
    /// (`attr.sigtrap`): the cheapest per sample. Not used when the process is being traced
    /// (a debugger would stop at every sample) or handles SIGTRAP itself.
    PerfEventSigtrap,
    /// `perf_event_open` task-clock per thread, SIGPROF routed to the thread by the descriptor.
    PerfEvent,
    /// `timer_create(CLOCK_MONOTONIC, SIGEV_THREAD_ID)` per thread.
    TimerCreate,
    /// `setitimer(ITIMER_PROF)` for the whole process (capped at the kernel tick).
    Setitimer,
    /// Wall mode: no timer; the collector wakes every interval and signals the running threads
    /// itself (see `wall.rs`).
    WallTicker,
    /// Per-thread, per-CPU task-clock perf events writing samples with stack copies into
    /// mmap'd rings, unwound by the collector: no signal (see `own_ring.rs`).
    PerfRing,
}

impl Mechanism {
    /// The name recorded in the session metadata.
    pub fn name(self) -> &'static str {
        match self {
            Mechanism::PerfEventSigtrap => "perf_event_sigtrap",
            Mechanism::PerfEvent => "perf_event",
            Mechanism::TimerCreate => "timer_create",
            Mechanism::Setitimer => "setitimer",
            Mechanism::WallTicker => "wall_ticker",
            Mechanism::PerfRing => "perf_ring",
        }
    }

    /// Whether it delivers a signal at all.
    pub fn signals(self) -> bool {
        self != Mechanism::PerfRing
    }

    /// The signal the mechanism delivers (see [`Mechanism::signals`]).
    pub fn signal(self) -> libc::c_int {
        match self {
            Mechanism::PerfEventSigtrap => sys::TRAP,
            _ => sys::SIGNAL,
        }
    }

    /// True when the collector arms each thread itself.
    pub fn per_thread(self) -> bool {
        self != Mechanism::Setitimer
    }

    /// The mechanism for `timer`: the one it names, when it works here (probed on this
    /// thread), or for [`Timer::Auto`] the best one that does. A mechanism whose signal the
    /// program handles itself is never taken: named, it is an
    /// [`Error::SignalInUse`](crate::Error::SignalInUse); [`Timer::Auto`] passes over it.
    pub fn choose(timer: Timer, interval_ns: u64) -> prof_session::Result<Mechanism> {
        let _ = interval_ns;
        match timer {
            Timer::Auto => Self::best(),
            Timer::PerfEventSigtrap if sys::program_handles(sys::TRAP) => {
                Err(signal_in_use(sys::TRAP, format!("timer {timer}")))
            }
            Timer::PerfEventSigtrap | Timer::PerfRing => Self::probe_named(timer),
            _ if sys::program_handles(sys::SIGNAL) => {
                Err(signal_in_use(sys::SIGNAL, format!("timer {timer}")))
            }
            Timer::Setitimer => Ok(Mechanism::Setitimer),
            forced => Self::probe_named(forced),
        }
    }

    /// `perf_ring` for wall mode, when this system allows its context-switch samples.
    pub fn ring_wall() -> prof_session::Result<Mechanism> {
        if !cfg!(target_os = "linux") {
            return Err(prof_session::Error::InvalidOption(
                "timer perf_ring is not available: it needs Linux".into(),
            ));
        }
        #[cfg(all(
            target_os = "linux",
            any(target_arch = "x86_64", target_arch = "aarch64")
        ))]
        super::own_ring::OwnRings::probe(true).map_err(|why| {
            prof_session::Error::InvalidOption(format!("timer perf_ring is not available: {why}"))
        })?;
        Ok(Mechanism::PerfRing)
    }

    /// `perf_ring` for wall mode when it is not named: when it works here and its events (two
    /// per CPU for each thread there is now; threads created later inherit them without a
    /// descriptor) would take at most a quarter of the descriptors the process may open.
    pub fn ring_wall_by_default() -> Option<Mechanism> {
        #[cfg(target_os = "linux")]
        {
            let threads = super::threads::list_tids().len() as u64;
            let cpus = sys::online_cpus().len() as u64;
            (threads * cpus * 2 <= sys::open_files_limit() / 4)
                .then(Self::ring_wall)
                .and_then(Result::ok)
        }
        #[cfg(not(target_os = "linux"))]
        None
    }

    fn probe_named(timer: Timer) -> prof_session::Result<Mechanism> {
        Self::probe(timer).map_err(|why| {
            prof_session::Error::InvalidOption(format!("timer {timer} is not available: {why}"))
        })
    }

    /// Checks that the Linux mechanism `timer` names works here, and says why not otherwise.
    fn probe(timer: Timer) -> Result<Mechanism, String> {
        if !cfg!(target_os = "linux") {
            return Err("it needs Linux".into());
        }
        // Probe with an hour-long period so the probe itself never fires.
        let tid = sys::gettid();
        let os = |e: prof_session::Error| match e {
            prof_session::Error::Os { call, source } => format!("{call}: {source}"),
            other => other.to_string(),
        };
        match timer {
            Timer::PerfEventSigtrap => {
                if !sys::trap_is_unclaimed() {
                    return Err("the program handles SIGTRAP itself".into());
                }
                let fd = sys::perf_event_thread(tid, 3_600_000_000_000, PerfDelivery::Sigtrap)
                    .map_err(os)?;
                sys::perf_event_disable(&fd);
                Ok(Mechanism::PerfEventSigtrap)
            }
            Timer::PerfEvent => {
                let fd = sys::perf_event_thread(tid, 3_600_000_000_000, PerfDelivery::Sigio)
                    .map_err(os)?;
                sys::perf_event_disable(&fd);
                Ok(Mechanism::PerfEvent)
            }
            Timer::TimerCreate => {
                sys::timer_delete(sys::timer_thread(tid, 3_600_000_000_000).map_err(os)?);
                Ok(Mechanism::TimerCreate)
            }
            #[cfg(all(
                target_os = "linux",
                any(target_arch = "x86_64", target_arch = "aarch64")
            ))]
            Timer::PerfRing => {
                super::own_ring::OwnRings::probe(false)?;
                Ok(Mechanism::PerfRing)
            }
            #[cfg(not(all(
                target_os = "linux",
                any(target_arch = "x86_64", target_arch = "aarch64")
            )))]
            Timer::PerfRing => Err("it needs Linux on x86_64 or aarch64".into()),
            Timer::Auto | Timer::Setitimer => Self::best().map_err(|e| e.to_string()),
        }
    }

    /// The best mechanism that works here, probed on this thread (see [`Timer::Auto`]); none
    /// that signals with SIGPROF when the program handles SIGPROF itself.
    fn best() -> prof_session::Result<Mechanism> {
        if !traced() {
            if let Ok(m) = Self::probe(Timer::PerfEventSigtrap) {
                return Ok(m);
            }
        }
        if sys::program_handles(sys::SIGNAL) {
            // Both signals are the program's: the kernel-copied stacks of `perf_ring` need
            // neither.
            #[cfg(all(
                target_os = "linux",
                any(target_arch = "x86_64", target_arch = "aarch64")
            ))]
            if let Ok(m) = Self::probe(Timer::PerfRing) {
                return Ok(m);
            }
            return Err(signal_in_use(
                sys::SIGNAL,
                "timer auto (every timer that works here)".into(),
            ));
        }
        if !cfg!(target_os = "linux") {
            return Ok(Mechanism::Setitimer);
        }
        Ok([Timer::PerfEvent, Timer::TimerCreate]
            .into_iter()
            .find_map(|t| Self::probe(t).ok())
            .unwrap_or(Mechanism::Setitimer))
    }
}

/// The error for a session that would need `signal` (SIGPROF or SIGTRAP), which the program
/// handles itself, for `user` (`timer NAME`, `wall mode`): says what to use instead.
pub fn signal_in_use(signal: libc::c_int, user: String) -> prof_session::Error {
    let instead = if signal == sys::TRAP {
        if sys::program_handles(sys::SIGNAL) {
            "the program handles SIGPROF too, which the other timers use; alloc mode uses no signal"
                .to_string()
        } else {
            "use timer auto or perf_event, which signal with SIGPROF".to_string()
        }
    } else {
        let sigtrap = if sys::program_handles(sys::TRAP) {
            Err("the program handles SIGTRAP too".to_string())
        } else if traced() {
            Err("a debugger or tracer is attached".to_string())
        } else {
            Mechanism::probe(Timer::PerfEventSigtrap).map(|_| ())
        };
        match (sigtrap, user.starts_with("wall")) {
            (Ok(()), false) => {
                "use timer perf_event_sigtrap (or auto), which signals with SIGTRAP".into()
            }
            (Ok(()), true) => {
                "cpu mode with timer perf_event_sigtrap (or auto) signals with SIGTRAP".into()
            }
            (Err(why), _) => format!(
                "perf_event_sigtrap, the one timer that signals with SIGTRAP instead, is not \
                 available: {why}; timer perf_ring (cpu and wall mode) and alloc mode use no \
                 signal"
            ),
        }
    };
    prof_session::Error::SignalInUse {
        signal: if signal == sys::TRAP {
            "SIGTRAP"
        } else {
            "SIGPROF"
        },
        user,
        instead,
    }
}

/// Whether the session's perf events should follow the threads created after they are opened
/// (`PerfDelivery::SigtrapInherit`), so that a thread that lives a few milliseconds, between two
/// sweeps of `/proc/self/task`, is sampled too. Only for `perf_event_sigtrap`: the SIGPROF of
/// an inherited `perf_event` would go to the descriptor's owner, the original thread, and POSIX
/// timers are not inherited. Only when prof's handler is part of the main program, where its
/// thread-local id cache is static TLS (in a library opened with `dlopen`, the first access in
/// a thread may allocate), and when the kernel accepts it (probed here). `allowed` false (the
/// diagnostics' `Settings::inherit`) turns it off, to compare.
pub fn inherit_threads(mechanism: Mechanism, allowed: bool) -> bool {
    if mechanism == Mechanism::PerfRing {
        // No handler runs in the threads: the kernel's inherited copies need nothing of it, and
        // its events are always opened inheritable (see `sys::perf_event_own_ring`).
        return true;
    }
    mechanism == Mechanism::PerfEventSigtrap
        && allowed
        && handler_in_main_program()
        && sys::perf_event_thread(
            sys::gettid(),
            3_600_000_000_000,
            PerfDelivery::SigtrapInherit,
        )
        .map(|fd| sys::perf_event_disable(&fd))
        .is_ok()
}

/// True when prof's signal handler is code of the main program, not of a shared library.
fn handler_in_main_program() -> bool {
    let handler = sys::our_handler() as u64;
    sys::loaded_objects()
        .0
        .iter()
        .any(|o| o.name.is_empty() && o.exec.iter().any(|r| r.contains(&handler)))
}

/// True when a debugger or tracer is attached (`TracerPid` in `/proc/self/status`).
fn traced() -> bool {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|status| {
            let line = status.lines().find(|l| l.starts_with("TracerPid:"))?;
            line.split_whitespace().nth(1).map(|pid| pid != "0")
        })
        .unwrap_or(false)
}

/// A thread's armed timer.
#[derive(Debug)]
pub enum Armed {
    /// A perf event descriptor.
    Perf(OwnedFd),
    /// Its ring events, one per CPU (two in wall mode), see `own_ring.rs`.
    #[cfg_attr(not(target_os = "linux"), allow(dead_code))]
    Ring(Vec<OwnedFd>),
    /// POSIX timers: one on the monotonic clock, armed, and one on the thread's CPU clock,
    /// disarmed, that the handler swaps in while the thread is idle (`None` when the kernel
    /// refused it: the monotonic timer then stays armed throughout).
    Timer {
        /// Fires every interval of wall time.
        monotonic: sys::PosixTimer,
        /// Fires every interval of the thread's CPU time, while armed.
        cpu: Option<sys::PosixTimer>,
    },
}

/// Arms thread `tid` with a per-thread mechanism; with `inherit`, threads it creates later are
/// armed by the kernel too (see [`inherit_threads`]).
pub fn arm(
    mechanism: Mechanism,
    tid: u32,
    interval_ns: u64,
    inherit: bool,
) -> prof_session::Result<Option<Armed>> {
    Ok(match mechanism {
        Mechanism::PerfEventSigtrap => Some(Armed::Perf(sys::perf_event_thread(
            tid,
            interval_ns,
            if inherit {
                PerfDelivery::SigtrapInherit
            } else {
                PerfDelivery::Sigtrap
            },
        )?)),
        Mechanism::PerfEvent => Some(Armed::Perf(sys::perf_event_thread(
            tid,
            interval_ns,
            PerfDelivery::Sigio,
        )?)),
        Mechanism::TimerCreate => {
            let cpu = sys::timer_thread_cpu(tid).ok();
            Some(Armed::Timer {
                monotonic: sys::timer_thread(tid, interval_ns)?,
                cpu,
            })
        }
        // The collector arms these itself (`own_ring::OwnRings::arm`).
        Mechanism::Setitimer | Mechanism::WallTicker | Mechanism::PerfRing => None,
    })
}

/// The ids of a `timer_create` thread's two timers, for the handler (see
/// `ThreadTable::set_timers`).
pub fn timer_ids(armed: &Armed) -> Option<(u64, u64)> {
    match armed {
        Armed::Timer {
            monotonic,
            cpu: Some(cpu),
        } => Some((sys::timer_id(monotonic), sys::timer_id(cpu))),
        _ => None,
    }
}

/// Stops a thread's timer. For an inherited perf event this stops the copies in the threads
/// created since as well: disabling and closing the original ends them all.
pub fn disarm(armed: Armed) {
    match armed {
        Armed::Perf(fd) => {
            sys::perf_event_disable(&fd);
            drop(fd);
        }
        Armed::Ring(fds) => {
            for fd in &fds {
                sys::perf_event_disable(fd);
            }
        }
        Armed::Timer { monotonic, cpu } => {
            sys::timer_delete(monotonic);
            if let Some(cpu) = cpu {
                sys::timer_delete(cpu);
            }
        }
    }
}
