//! The fallback mechanisms, forced with `Options::timer`: perf events signalling SIGPROF through
//! their descriptor and per-thread monotonic timers keep the rate, `setitimer` is capped by the
//! kernel tick, and on all of them the weights are measured CPU time.

mod common;

use common::{context_switches, samples_on, serial, spin};
use prof::sampler::{current_tid, thread_cpu_time};
use std::time::Duration;

fn run(timer: &str, interval: Duration, cpu: Duration) -> (prof::Report, Duration) {
    let options = prof::Options::default()
        .timer(timer.parse().unwrap())
        .interval(interval);
    let p = prof::Profiler::start(options).unwrap();
    let t = thread_cpu_time();
    spin(cpu);
    let used = thread_cpu_time() - t;
    (p.stop().unwrap(), used)
}

fn weight_on_this_thread(report: &prof::Report) -> u64 {
    samples_on(report, current_tid())
        .into_iter()
        .map(|i| report.session().samples.weight[i])
        .sum()
}

fn keeps_the_rate_and_measures_weights(timer: &str) {
    let _serial = serial();
    let interval = Duration::from_millis(1);
    let (report, used) = run(timer, interval, Duration::from_secs(1));
    assert_eq!(report.session().meta.timer, timer);
    this_thread_has_its_rate_and_cpu_time(&report, used, interval, timer);
}

/// The calling thread got at least 90% of the samples `used` CPU time makes at `interval`, and
/// its weights add up to `used` within 3%.
fn this_thread_has_its_rate_and_cpu_time(
    report: &prof::Report,
    used: Duration,
    interval: Duration,
    what: &str,
) {
    let n = samples_on(report, current_tid()).len() as f64;
    let expected = used.as_nanos() as f64 / interval.as_nanos() as f64;
    assert!(
        n >= 0.9 * expected,
        "{what}: {n} samples for {expected:.0} expected"
    );
    let w = weight_on_this_thread(report) as f64;
    let off = (w - used.as_nanos() as f64).abs() / used.as_nanos() as f64;
    assert!(off <= 0.03, "{what}: weight {w} vs {used:?}");
}

#[test]
fn perf_event_through_sigprof_keeps_the_rate_and_measures_weights() {
    keeps_the_rate_and_measures_weights("perf_event");
}

#[test]
fn timer_create_keeps_the_rate_and_measures_weights() {
    keeps_the_rate_and_measures_weights("timer_create");
}

#[test]
fn setitimer_is_capped_but_its_weights_still_add_up() {
    let _serial = serial();
    let (report, used) = run(
        "setitimer",
        Duration::from_micros(500),
        Duration::from_secs(1),
    );
    let meta = &report.session().meta;
    assert_eq!(meta.timer, "setitimer");
    assert_eq!(meta.requested_interval_ns, 500_000);
    // A sample needs a kernel tick (250 Hz here) to land while this thread runs: on a busy
    // machine it gets its CPU time in slices that often hold none (CI once saw 48 for 1 s of
    // CPU, with more than two hogs' load beside it; 30 to 58 with four hogs). A tenth of the
    // tick rate shows it samples; the weights below are what must hold.
    let n = samples_on(&report, current_tid()).len();
    assert!(n >= 25, "{n} samples");
    let w = weight_on_this_thread(&report) as f64;
    let off = (w - used.as_nanos() as f64).abs() / used.as_nanos() as f64;
    // ITIMER_PROF's signal is the process's: it lands in whichever thread runs at the tick, so
    // the spinning thread's CPU time since its own last sample is not in any of its weights.
    // That tail is a tick or two on an idle machine and more on a busy one (3.4% measured with
    // two CPU hogs beside the tests, 6.3% and 16.4% in CI runs on a fresh machine); weights of
    // the interval asked for would be some 20 times short (40 samples of 0.5 ms for 1 s).
    assert!(off <= 0.25, "weight {w} vs {used:?}");
    assert!(meta.achieved_interval_ns > meta.requested_interval_ns);
}

#[test]
fn an_unknown_timer_name_is_a_clear_error() {
    let err = "sundial".parse::<prof::Timer>().unwrap_err().to_string();
    assert!(err.contains("unknown timer `sundial`"), "{err}");
    assert!(err.contains("perf_event_sigtrap"), "{err}");
    for timer in prof::Timer::ALL {
        assert_eq!(timer.name().parse::<prof::Timer>().unwrap(), timer);
    }
}

#[test]
fn an_interval_too_short_to_deliver_is_refused() {
    let _serial = serial();
    let r = prof::Profiler::start(prof::Options::default().interval(Duration::from_nanos(100)));
    assert!(matches!(r, Err(prof::Error::InvalidOption(_))));
    // The refusal left nothing running.
    prof::Profiler::start(prof::Options::default())
        .unwrap()
        .stop()
        .unwrap();
}

#[test]
fn timer_create_drops_nothing_for_blocked_threads_at_10_khz() {
    // Its wall-clock timers wake blocked threads too: each wake-up used to be a sample of a
    // few microseconds, 10,000 a second per blocked thread, more than the ring could take.
    let _serial = serial();
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let blocked: Vec<_> = (0..30)
        .map(|_| {
            let stop = stop.clone();
            std::thread::spawn(move || {
                while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                    std::thread::park_timeout(Duration::from_millis(20));
                }
            })
        })
        .collect();
    let interval = Duration::from_micros(100);
    let (report, used) = run("timer_create", interval, Duration::from_millis(1500));
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    for t in blocked {
        t.join().unwrap();
    }
    let meta = &report.session().meta;
    let total = report.total_samples() as f64 + meta.dropped_samples as f64;
    // Before the fix 38% were dropped. Later, with blocked threads still woken every interval
    // (each wake-up costing them CPU time, so that every second one became a sample), the
    // collector fell behind by 1.1% and 3.9% in two runs; idle threads are now parked (see
    // `timer_create_stops_waking_a_thread_blocked_for_the_whole_session`).
    assert!(
        (meta.dropped_samples as f64) < 0.01 * total,
        "{} of {total} samples dropped",
        meta.dropped_samples
    );
    let w = weight_on_this_thread(&report) as f64;
    let off = (w - used.as_nanos() as f64).abs() / used.as_nanos() as f64;
    assert!(off <= 0.03, "weight {w} vs {used:?}");
    let n = samples_on(&report, current_tid()).len() as f64;
    let expected = used.as_nanos() as f64 / 100e3;
    assert!(
        n >= 0.9 * expected,
        "{n} samples for {expected:.0} expected"
    );
}

#[test]
fn timer_create_stops_waking_a_thread_blocked_for_the_whole_session() {
    // Its timers are on the monotonic clock, so they used to wake a blocked thread at every
    // interval: 15,000 wake-ups in 1.5 s at 10 kHz, each costing the thread CPU time. After
    // 10 ms of signals that found it idle the thread now waits on a timer of its own CPU clock.
    let _serial = serial();
    let (tid_tx, tid_rx) = std::sync::mpsc::channel();
    let mut releases = Vec::new();
    let mut blocked = Vec::new();
    for _ in 0..8 {
        let (release, wait) = std::sync::mpsc::channel::<()>();
        let tid_tx = tid_tx.clone();
        releases.push(release);
        blocked.push(std::thread::spawn(move || {
            tid_tx.send(current_tid()).unwrap();
            let _ = wait.recv();
        }));
    }
    let tids: Vec<u64> = (0..8).map(|_| tid_rx.recv().unwrap()).collect();
    std::thread::sleep(Duration::from_millis(50));
    let before: Vec<u64> = tids.iter().map(|&t| context_switches(t)).collect();
    let parking = prof::diagnostics::timer_parking_stats();
    let interval = Duration::from_micros(100);
    let (report, used) = run("timer_create", interval, Duration::from_millis(1500));
    let woken: Vec<u64> = tids
        .iter()
        .zip(&before)
        .map(|(&t, b)| context_switches(t) - b)
        .collect();
    let parking = {
        let (parked, unparked) = prof::diagnostics::timer_parking_stats();
        (parked - parking.0, unparked - parking.1)
    };
    drop(releases);
    for t in blocked {
        t.join().unwrap();
    }
    // About 100 signals before parking (10 ms at 10 kHz); the session lasts at least 15,000
    // intervals.
    for (tid, n) in tids.iter().zip(&woken) {
        assert!(
            *n < 1_000,
            "thread {tid} was woken {n} times: {woken:?}; (parked, unparked) {parking:?}"
        );
    }
    // The thread that ran is still sampled at the full rate, its weights its CPU time.
    this_thread_has_its_rate_and_cpu_time(&report, used, interval, "timer_create");
}

#[test]
fn timer_create_samples_a_thread_again_when_it_runs_after_waiting() {
    // A parked thread is unparked by its CPU-clock timer: its work after a long wait is
    // sampled at the full rate again and all its CPU time is counted.
    let _serial = serial();
    let (go_tx, go_rx) = std::sync::mpsc::channel::<()>();
    let worker = std::thread::spawn(move || {
        go_rx.recv().unwrap();
        let t = thread_cpu_time();
        spin(Duration::from_millis(400));
        (current_tid(), thread_cpu_time() - t)
    });
    let options = prof::Options::default()
        .timer(prof::Timer::TimerCreate)
        .interval(Duration::from_micros(500));
    let p = prof::Profiler::start(options).unwrap();
    // Idle for 300 ms: far longer than it takes to park.
    std::thread::sleep(Duration::from_millis(300));
    go_tx.send(()).unwrap();
    let (tid, used) = worker.join().unwrap();
    let report = p.stop().unwrap();
    let samples = samples_on(&report, tid);
    let weight: u64 = samples
        .iter()
        .map(|&i| report.session().samples.weight[i])
        .sum();
    let off = (weight as f64 - used.as_nanos() as f64).abs() / used.as_nanos() as f64;
    assert!(off <= 0.03, "weight {weight} vs {used:?}");
    // At most a scheduler tick (4 ms at 250 Hz) and an interval pass before it is unparked; a
    // thread left parked would be sampled once a tick at best (4 ms: an eighth of the rate).
    // Under load, expirations that fall while the thread waits for a CPU come as one signal
    // (its weight carries their time, checked above): CI runs with two CPU hogs and its other
    // tests beside it have seen 673 and 355 of 800, so the bound is a quarter of the rate, still
    // twice what a thread left parked could get.
    let expected = used.as_nanos() as f64 / 500e3;
    assert!(
        samples.len() as f64 >= 0.25 * expected,
        "{} samples for {expected:.0} expected",
        samples.len()
    );
}

extern "C" fn foreign_trap_handler(_: libc::c_int) {}

#[test]
fn a_named_timer_that_cannot_run_here_is_an_error_not_a_fallback() {
    let _serial = serial();
    // The program handles SIGTRAP: `perf_event_sigtrap` would take it over, so naming it is
    // refused (Auto would pick `perf_event` instead, see sampler_lifecycle.rs).
    let custom = foreign_trap_handler as extern "C" fn(libc::c_int) as libc::sighandler_t;
    // SAFETY: installs a handler that does nothing, which is async-signal-safe.
    let before = unsafe { libc::signal(libc::SIGTRAP, custom) };
    let r = prof::Profiler::start(prof::Options::default().timer(prof::Timer::PerfEventSigtrap));
    // SAFETY: puts back what was there; no handler code is involved.
    unsafe { libc::signal(libc::SIGTRAP, before) };
    let err = r.err().expect("refused");
    assert!(
        matches!(
            err,
            prof::Error::SignalInUse {
                signal: "SIGTRAP",
                ..
            }
        ),
        "{err:?}"
    );
    let err = err.to_string();
    assert!(
        err.starts_with("timer perf_event_sigtrap needs SIGTRAP") && err.contains("perf_event"),
        "{err}"
    );
    // The refusal left nothing running.
    prof::Profiler::start(prof::Options::default())
        .unwrap()
        .stop()
        .unwrap();
}

#[test]
fn a_timer_named_outside_cpu_mode_is_refused() {
    let _serial = serial();
    for mode in [prof::Mode::Wall, prof::Mode::Alloc] {
        let options = prof::Options::default()
            .mode(mode)
            .timer(prof::Timer::PerfEvent);
        let err = prof::Profiler::start(options).err().expect("refused");
        assert!(matches!(err, prof::Error::InvalidOption(_)), "{err:?}");
        assert!(err.to_string().contains("cpu mode"), "{err}");
    }
}

/// Run in a child process by the test below, with `PROF_*` variables set that the library
/// once read: it prints the timer of a default session and its sample count.
#[test]
fn environment_child() {
    if std::env::var_os("PROF_TIMERS_ENV_CHILD").is_none() {
        return;
    }
    let report = prof::profile(
        prof::Options::default().interval(Duration::from_micros(200)),
        || spin(Duration::from_millis(200)),
    )
    .unwrap();
    println!(
        "timer {} samples {}",
        report.session().meta.timer,
        samples_on(&report, current_tid()).len()
    );
}

#[test]
fn the_library_reads_no_prof_variables_from_the_environment() {
    let out = std::process::Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "environment_child", "--nocapture"])
        .env("PROF_TIMERS_ENV_CHILD", "1")
        // Each would have changed the session when the library read them at start.
        .env("PROF_TIMER", "setitimer")
        .env("PROF_MEASURE_HANDLER", "empty")
        .env("PROF_UNWIND", "fp")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}");
    let line = stdout
        .lines()
        .find(|l| l.starts_with("timer "))
        .unwrap_or_else(|| panic!("no report line in {stdout}"));
    let words: Vec<&str> = line.split_whitespace().collect();
    let (timer, samples): (&str, usize) = (words[1], words[3].parse().unwrap());
    let _serial = serial();
    let best = prof::Profiler::start(prof::Options::default()).unwrap();
    let best = best.stop().unwrap().session().meta.timer.clone();
    assert_eq!(timer, best, "{line}");
    // An empty handler records nothing.
    assert!(samples > 100, "{line}");
}

#[test]
fn perf_ring_keeps_the_rate_and_measures_weights_without_a_signal() {
    keeps_the_rate_and_measures_weights("perf_ring");
}

/// `perf_ring`'s events are inherited: threads started during the session, even ones that live
/// a few milliseconds (between two sweeps of `/proc/self/task`), are sampled from their start.
#[test]
fn perf_ring_samples_threads_started_during_the_session() {
    let _serial = serial();
    let options = prof::Options::default()
        .timer(prof::Timer::PerfRing)
        .interval(Duration::from_micros(500));
    let p = prof::Profiler::start(options).unwrap();
    let threads: Vec<(u64, Duration)> = (0..10)
        .map(|_| {
            std::thread::spawn(|| {
                let t = thread_cpu_time();
                spin(Duration::from_millis(10));
                (current_tid(), thread_cpu_time() - t)
            })
            .join()
            .unwrap()
        })
        .collect();
    let report = p.stop().unwrap();
    for (tid, used) in threads {
        let w: u64 = samples_on(&report, tid)
            .into_iter()
            .map(|i| report.session().samples.weight[i])
            .sum();
        // 10 ms at 0.5 ms: about 20 samples; the tail after a thread's last one is not counted.
        assert!(
            w as f64 >= 0.8 * used.as_nanos() as f64,
            "thread {tid}: weight {w} of {used:?}"
        );
    }
}
