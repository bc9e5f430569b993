//! The fallback mechanisms, forced with `Options::timer`: perf events signalling SIGPROF through
//! their descriptor and per-thread monotonic timers keep the rate, `setitimer` is capped by the
//! kernel tick, and on all of them the weights are measured CPU time.

mod common;

use common::{samples_on, serial, spin};
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
    let (report, used) = run(timer, Duration::from_millis(1), Duration::from_secs(1));
    assert_eq!(report.session().meta.timer, timer);
    let n = samples_on(&report, current_tid()).len() as f64;
    let expected = used.as_nanos() as f64 / 1e6;
    assert!(
        n >= 0.9 * expected,
        "{timer}: {n} samples for {expected:.0} expected"
    );
    let w = weight_on_this_thread(&report) as f64;
    let off = (w - used.as_nanos() as f64).abs() / used.as_nanos() as f64;
    assert!(off <= 0.03, "{timer}: weight {w} vs {used:?}");
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
    let n = samples_on(&report, current_tid()).len();
    assert!(n >= 50, "{n} samples");
    let w = weight_on_this_thread(&report) as f64;
    let off = (w - used.as_nanos() as f64).abs() / used.as_nanos() as f64;
    assert!(off <= 0.03, "weight {w} vs {used:?}");
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
fn r9_timer_create_drops_nothing_for_blocked_threads_at_10_khz() {
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
    let (report, used) = run(
        "timer_create",
        Duration::from_micros(100),
        Duration::from_millis(1500),
    );
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    for t in blocked {
        t.join().unwrap();
    }
    let meta = &report.session().meta;
    let total = report.total_samples() as f64 + meta.dropped_samples as f64;
    // Before the fix 38% were dropped. The wake-ups themselves cost the blocked threads CPU
    // time, and on a VM whose kernel takes about 30 us of a thread's CPU per delivered signal
    // (twice the usual here) two wake-ups pass the half-interval bar: the blocked threads are
    // then really sampled (442,476 samples in 1.5 s) and the collector, sharing two cores with
    // 31 woken threads, fell behind by 1.1% and 3.9% in two runs on 2026-11-23. So the bound is
    // 10%, well below the bug's 38%.
    assert!(
        (meta.dropped_samples as f64) < 0.10 * total,
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

extern "C" fn foreign_trap_handler(_: libc::c_int) {}

#[test]
fn r13_a_named_timer_that_cannot_run_here_is_an_error_not_a_fallback() {
    let _serial = serial();
    // Another handler owns SIGTRAP: `perf_event_sigtrap` would take it over, so naming it is
    // refused (Auto would pick `perf_event` instead, see sampler_lifecycle.rs).
    let custom = foreign_trap_handler as extern "C" fn(libc::c_int) as libc::sighandler_t;
    // SAFETY: installs a handler that does nothing, which is async-signal-safe.
    let before = unsafe { libc::signal(libc::SIGTRAP, custom) };
    let r = prof::Profiler::start(prof::Options::default().timer(prof::Timer::PerfEventSigtrap));
    // SAFETY: puts back what was there; no handler code is involved.
    unsafe { libc::signal(libc::SIGTRAP, before) };
    let err = r.err().expect("refused");
    assert!(matches!(err, prof::Error::InvalidOption(_)), "{err:?}");
    let err = err.to_string();
    assert!(
        err.contains("timer perf_event_sigtrap is not available") && err.contains("SIGTRAP"),
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
fn r13_the_library_reads_no_prof_variables_from_the_environment() {
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
