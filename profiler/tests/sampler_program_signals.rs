//! A program that handles SIGPROF (or SIGTRAP) itself keeps its handler and its `ITIMER_PROF`
//! timer: prof never takes over a signal the program handles (with the SIGPROF timers
//! and wall mode, the session started and the program's handler got 0 calls; a `setitimer`
//! session left the program's timer disarmed). Its own test binary: signal dispositions and
//! `ITIMER_PROF` are process-wide.

mod common;

use common::{serial, spin};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// Signals of the program's 1 ms `ITIMER_PROF` its handler must get in 300 ms of CPU time to
/// show that its timer still runs and its handler still gets them (a taken-over handler or a
/// blocked signal gets 0). Some 75 on a quiet machine (the 250 Hz tick); 16 were seen at load 12
/// on two cores, where the tick often finds another process on the CPU.
const STILL_TICKING: u64 = 5;

/// Calls of the program's own SIGPROF handler so far.
static PROGRAM_SIGPROFS: AtomicU64 = AtomicU64::new(0);

extern "C" fn program_on_sigprof(_: libc::c_int) {
    PROGRAM_SIGPROFS.fetch_add(1, Ordering::Relaxed);
}

/// Calls of the program's own SIGTRAP handler so far.
static PROGRAM_SIGTRAPS: AtomicU64 = AtomicU64::new(0);

extern "C" fn program_on_sigtrap(_: libc::c_int) {
    PROGRAM_SIGTRAPS.fetch_add(1, Ordering::Relaxed);
}

/// Sets the disposition of `signal` to `handler` (an address, `SIG_DFL` or `SIG_IGN`).
fn set_disposition(signal: libc::c_int, handler: usize) {
    // SAFETY: an all-zero sigaction is valid; the handlers used here only touch an atomic.
    unsafe {
        let mut action: libc::sigaction = std::mem::zeroed();
        action.sa_sigaction = handler;
        action.sa_flags = libc::SA_RESTART;
        libc::sigemptyset(&mut action.sa_mask);
        assert_eq!(libc::sigaction(signal, &action, std::ptr::null_mut()), 0);
    }
}

fn disposition(signal: libc::c_int) -> usize {
    // SAFETY: an all-zero sigaction is valid storage; a null new action only queries.
    unsafe {
        let mut now: libc::sigaction = std::mem::zeroed();
        assert_eq!(libc::sigaction(signal, std::ptr::null(), &mut now), 0);
        now.sa_sigaction
    }
}

/// Arms the process's `ITIMER_PROF` with period and first expiry `period` (zero disarms).
fn arm_itimer_prof(period: Duration) {
    let tv = libc::timeval {
        tv_sec: period.as_secs() as _,
        tv_usec: period.subsec_micros() as _,
    };
    let spec = libc::itimerval {
        it_interval: tv,
        it_value: tv,
    };
    // SAFETY: `spec` is a valid itimerval; a null old value is allowed.
    let rc = unsafe { libc::setitimer(libc::ITIMER_PROF, &spec, std::ptr::null_mut()) };
    assert_eq!(rc, 0);
}

/// The process's `ITIMER_PROF`: its period and what is left of the current one.
fn itimer_prof() -> (Duration, Duration) {
    let zero = libc::timeval {
        tv_sec: 0,
        tv_usec: 0,
    };
    let mut now = libc::itimerval {
        it_interval: zero,
        it_value: zero,
    };
    // SAFETY: `now` is a valid, writable itimerval.
    assert_eq!(unsafe { libc::getitimer(libc::ITIMER_PROF, &mut now) }, 0);
    let d = |t: libc::timeval| Duration::new(t.tv_sec as u64, t.tv_usec as u32 * 1000);
    (d(now.it_interval), d(now.it_value))
}

/// The program's state for one test, undone when dropped: its SIGPROF handler (and SIGTRAP's,
/// with `trap`), and its `ITIMER_PROF` at `period`.
struct Program {
    _serial: std::sync::MutexGuard<'static, ()>,
}

impl Program {
    fn new(sigprof: usize, trap: bool, period: Duration) -> Program {
        let serial = serial();
        set_disposition(libc::SIGPROF, sigprof);
        if trap {
            set_disposition(
                libc::SIGTRAP,
                program_on_sigtrap as extern "C" fn(_) as usize,
            );
        }
        arm_itimer_prof(period);
        Program { _serial: serial }
    }
}

impl Drop for Program {
    fn drop(&mut self) {
        arm_itimer_prof(Duration::ZERO);
        set_disposition(libc::SIGPROF, libc::SIG_DFL);
        set_disposition(libc::SIGTRAP, libc::SIG_DFL);
    }
}

fn handler() -> usize {
    program_on_sigprof as extern "C" fn(_) as usize
}

fn sigtrap_handler() -> usize {
    program_on_sigtrap as extern "C" fn(_) as usize
}

#[test]
fn auto_leaves_the_programs_sigprof_handler_and_timer_alone() {
    let _program = Program::new(handler(), false, Duration::from_millis(1));
    let profiler = prof::Profiler::start(prof::Options::default()).unwrap();
    let before = PROGRAM_SIGPROFS.load(Ordering::Relaxed);
    spin(Duration::from_millis(300));
    let during = PROGRAM_SIGPROFS.load(Ordering::Relaxed) - before;
    let report = profiler.stop().unwrap();
    assert_eq!(report.session().meta.timer, "perf_event_sigtrap");
    assert!(report.total_samples() > 0);
    // 300 ms of CPU time at 1 ms, the kernel's tick (4 ms at 250 Hz) at worst: 75 signals on
    // an idle machine, but CI beside two busy processes saw 4. What matters is that they still
    // come: taken over, the program's handler gets none.
    assert!(during > 0, "the program's handler got no signal");
    assert_eq!(disposition(libc::SIGPROF), handler());
    assert_eq!(itimer_prof().0, Duration::from_millis(1));
}

#[test]
fn a_timer_or_wall_mode_that_needs_the_programs_sigprof_is_refused() {
    let _program = Program::new(handler(), false, Duration::from_millis(1));
    let timers = [
        prof::Timer::PerfEvent,
        prof::Timer::TimerCreate,
        prof::Timer::Setitimer,
    ];
    let mut options: Vec<(String, prof::Options)> = timers
        .iter()
        .map(|&t| (format!("timer {t}"), prof::Options::default().timer(t)))
        .collect();
    // Wall mode on signals (where the kernel refuses `perf_ring`'s context-switch samples).
    options.push((
        "wall mode".into(),
        prof::Options::default()
            .mode(prof::Mode::Wall)
            .diagnostics(prof::diagnostics::Settings::default().wall_signals(true)),
    ));
    for (what, options) in options {
        let before = PROGRAM_SIGPROFS.load(Ordering::Relaxed);
        match prof::Profiler::start(options) {
            Err(e @ prof::Error::SignalInUse { signal, .. }) => {
                assert_eq!(signal, "SIGPROF");
                let message = e.to_string();
                eprintln!("{message}");
                assert!(message.starts_with(&what), "{message}");
                assert!(message.contains("perf_event_sigtrap"), "{message}");
            }
            Err(e) => panic!("{what}: {e}"),
            Ok(p) => {
                drop(p);
                panic!("{what} started, taking over the program's SIGPROF")
            }
        }
        assert_eq!(disposition(libc::SIGPROF), handler(), "{what}");
        assert_eq!(itimer_prof().0, Duration::from_millis(1), "{what}");
        // The program's timer still reaches its handler: a signal within a second of CPU time
        // (one comes every tick or two of it; a busy machine only makes that take longer).
        let mut spun = Duration::ZERO;
        while PROGRAM_SIGPROFS.load(Ordering::Relaxed) == before && spun < Duration::from_secs(1) {
            spin(Duration::from_millis(10));
            spun += Duration::from_millis(10);
        }
        assert!(
            PROGRAM_SIGPROFS.load(Ordering::Relaxed) > before,
            "{what}: no SIGPROF reached the program's handler in {spun:?} of CPU time"
        );
    }
}

#[test]
fn auto_takes_the_signal_free_ring_when_the_program_handles_sigprof_and_sigtrap() {
    let _program = Program::new(handler(), true, Duration::from_millis(1));
    let profiler = prof::Profiler::start(prof::Options::default()).unwrap();
    assert_eq!(disposition(libc::SIGPROF), handler());
    assert_eq!(disposition(libc::SIGTRAP), sigtrap_handler());
    spin(Duration::from_millis(200));
    let report = profiler.stop().unwrap();
    assert_eq!(report.session().meta.timer, "perf_ring");
    assert!(report.total_samples() >= 50, "{}", report.total_samples());
    assert_eq!(disposition(libc::SIGPROF), handler());
    assert_eq!(disposition(libc::SIGTRAP), sigtrap_handler());
    // Named, the signal timers are refused, each saying what to use instead.
    let sigprof = prof::Options::default().timer(prof::Timer::PerfEvent);
    match prof::Profiler::start(sigprof) {
        Err(
            e @ prof::Error::SignalInUse {
                signal: "SIGPROF", ..
            },
        ) => assert!(e.to_string().contains("perf_ring"), "{e}"),
        Err(e) => panic!("{e}"),
        Ok(_) => panic!("perf_event took the program's SIGPROF"),
    }
    let sigtrap = prof::Options::default().timer(prof::Timer::PerfEventSigtrap);
    match prof::Profiler::start(sigtrap) {
        Err(
            e @ prof::Error::SignalInUse {
                signal: "SIGTRAP", ..
            },
        ) => eprintln!("{e}"),
        Err(e) => panic!("{e}"),
        Ok(_) => panic!("perf_event_sigtrap took the program's SIGTRAP"),
    }
    assert_eq!(disposition(libc::SIGPROF), handler());
}

#[test]
fn wall_mode_on_perf_ring_leaves_the_programs_sigprof_handler_and_timer_alone() {
    let _program = Program::new(handler(), false, Duration::from_millis(1));
    let wall = prof::Options::default().mode(prof::Mode::Wall);
    let profiler = prof::Profiler::start(wall).unwrap();
    assert_eq!(disposition(libc::SIGPROF), handler());
    let before = PROGRAM_SIGPROFS.load(Ordering::Relaxed);
    spin(Duration::from_millis(300));
    let during = PROGRAM_SIGPROFS.load(Ordering::Relaxed) - before;
    let report = profiler.stop().unwrap();
    assert_eq!(report.session().meta.timer, "perf_ring");
    assert!(report.total_samples() > 0);
    assert!(
        during >= STILL_TICKING,
        "the program's handler got {during} signals"
    );
    assert_eq!(disposition(libc::SIGPROF), handler());
    assert_eq!(itimer_prof().0, Duration::from_millis(1));
}

#[test]
fn perf_ring_samples_a_program_that_handles_sigprof_and_sigtrap_without_touching_them() {
    let _program = Program::new(handler(), true, Duration::from_millis(1));
    let options = prof::Options::default().timer(prof::Timer::PerfRing);
    let profiler = prof::Profiler::start(options).unwrap();
    assert_eq!(disposition(libc::SIGPROF), handler());
    assert_eq!(disposition(libc::SIGTRAP), sigtrap_handler());
    let before = PROGRAM_SIGPROFS.load(Ordering::Relaxed);
    spin(Duration::from_millis(300));
    let during = PROGRAM_SIGPROFS.load(Ordering::Relaxed) - before;
    let report = profiler.stop().unwrap();
    assert_eq!(report.session().meta.timer, "perf_ring");
    // 300 ms of CPU time at 1 ms: about 300 samples (a busy machine changes none of that).
    assert!(report.total_samples() >= 100, "{}", report.total_samples());
    assert!(
        during >= STILL_TICKING,
        "the program's handler got {during} signals"
    );
    assert_eq!(disposition(libc::SIGPROF), handler());
    assert_eq!(disposition(libc::SIGTRAP), sigtrap_handler());
    assert_eq!(itimer_prof().0, Duration::from_millis(1));
}

#[test]
fn setitimer_puts_the_programs_itimer_prof_back_at_stop() {
    // The program's timer, with SIGPROF ignored (a disposition prof may take for the session):
    // an hour, so it never fires here.
    let hour = Duration::from_secs(3600);
    let _program = Program::new(libc::SIG_IGN, false, hour);
    let options = prof::Options::default()
        .timer(prof::Timer::Setitimer)
        .interval(Duration::from_millis(4));
    let profiler = prof::Profiler::start(options).unwrap();
    spin(Duration::from_millis(100));
    let report = profiler.stop().unwrap();
    assert_eq!(report.session().meta.timer, "setitimer");
    // That setitimer samples is `sampler_timers`' to check (1 s of CPU there): on a machine
    // loaded past two hogs, these 100 ms got 0 to 17 samples (0 in 3 of 15 runs with four hogs
    // beside), as ITIMER_PROF's process-wide signal lands while this thread runs less often
    // than the tick. What this test is for is the program's timer, put back.
    let (period, left) = itimer_prof();
    assert_eq!(period, hour);
    // The kernel adds a tick (4 ms at 250 Hz) to the value each time the timer is set: when
    // the program armed it, and when prof put it back.
    let ticks = Duration::from_millis(50);
    assert!(
        left > Duration::ZERO && left <= hour + ticks,
        "{left:?} left"
    );
    assert_eq!(disposition(libc::SIGPROF), libc::SIG_IGN);
}

/// A program that installs its own handler of the signal prof samples with, during a session
/// (with every signal timer): sampling ends there, so the program's handler is not sent a
/// timer it never asked for; the session says when and why, counts an estimate of the samples
/// lost after it in its dropped samples, and the program's handler is still installed after
/// stop (putting back the disposition from before the session would undo the program's).
#[test]
fn a_handler_the_program_installs_mid_session_ends_sampling_and_is_counted_and_kept() {
    let timers = [
        (prof::Timer::Auto, Duration::from_millis(1)),
        (prof::Timer::PerfEvent, Duration::from_millis(1)),
        (prof::Timer::TimerCreate, Duration::from_millis(1)),
        (prof::Timer::Setitimer, Duration::from_millis(4)),
    ];
    for (timer, interval) in timers {
        let _program = Program::new(libc::SIG_DFL, false, Duration::ZERO);
        let options = prof::Options::default().timer(timer).interval(interval);
        let started = std::time::Instant::now();
        let profiler = prof::Profiler::start(options).unwrap();
        spin(Duration::from_millis(200));
        let trap = profiler_signal_is_sigtrap(timer);
        let (signal, name, program_handler, calls) = if trap {
            (
                libc::SIGTRAP,
                "SIGTRAP",
                sigtrap_handler(),
                &PROGRAM_SIGTRAPS,
            )
        } else {
            (libc::SIGPROF, "SIGPROF", handler(), &PROGRAM_SIGPROFS)
        };
        set_disposition(signal, program_handler);
        let replaced_at = std::time::Instant::now();
        // At least as late into the session as the replacement was (the session's clock starts
        // after `started`).
        let replaced_ns = (replaced_at - started).as_nanos() as u64;
        let before = calls.load(Ordering::Relaxed);
        spin(Duration::from_millis(2000));
        let received = calls.load(Ordering::Relaxed) - before;
        let after_replacement = replaced_at.elapsed();
        let report = profiler.stop().unwrap();
        let meta = &report.session().meta;
        let what = format!("{timer} ({})", meta.timer);
        assert_eq!(disposition(signal), program_handler, "{what}");
        let ended = meta
            .sampling_ended
            .as_ref()
            .unwrap_or_else(|| panic!("{what}: no end of sampling said"));
        assert_eq!(
            ended.reason,
            format!("the program replaced prof's {name} handler"),
            "{what}"
        );
        // Sampling ended at the replacement: no sample after it (but for signals already in
        // flight, 50 ms), and the end it states is not later either.
        let last = report.session().samples.time_ns.iter().max().copied();
        let slack = 50_000_000;
        assert!(
            last.is_some_and(|t| t <= replaced_ns + slack),
            "{what}: a sample at {last:?} ns, the handler replaced at {replaced_ns} ns"
        );
        assert!(
            ended.at_ns <= replaced_ns + slack && ended.at_ns >= last.unwrap_or(0),
            "{what}: sampling said to end at {} ns, the handler replaced at {replaced_ns} ns, \
             the last sample at {last:?} ns",
            ended.at_ns
        );
        // 2 s of this thread's CPU time after the replacement: about 2 s / interval samples
        // lost (the program's CPU time no sample accounts for), the first 200 ms sampled.
        let expected = 2000 / interval.as_millis() as u64;
        let dropped = meta.dropped_samples;
        assert!(
            dropped >= expected / 2 && dropped <= expected * 2,
            "{what}: {dropped} dropped, about {expected} expected"
        );
        assert!(report.total_samples() > 0, "{what}");
        // prof's signals stopped: those the program's handler got came before the collector
        // saw the replacement, within a second (at once with the timers it sweeps for), far
        // fewer than the 2 s would have sent.
        eprintln!(
            "{what}: {received} of prof's signals reached the program's handler in \
             {after_replacement:?}; {dropped} dropped\n{report}",
        );
        assert!(
            received < expected * 3 / 4,
            "{what}: the program's handler got {received} signals"
        );
    }
}

/// True when `timer`, started on a process that handles neither signal, samples with SIGTRAP.
fn profiler_signal_is_sigtrap(timer: prof::Timer) -> bool {
    matches!(timer, prof::Timer::Auto | prof::Timer::PerfEventSigtrap)
}
