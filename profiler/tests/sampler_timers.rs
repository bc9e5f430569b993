//! The fallback mechanisms, forced with `PROF_TIMER`: perf events signalling SIGPROF through
//! their descriptor and per-thread monotonic timers keep the rate, `setitimer` is capped by the
//! kernel tick, and on all of them the weights are measured CPU time.

mod common;

use common::{samples_on, serial, spin};
use prof::sampler::{current_tid, thread_cpu_time};
use std::time::Duration;

fn run(timer: &str, interval: Duration, cpu: Duration) -> (prof::Report, Duration) {
    std::env::set_var("PROF_TIMER", timer);
    let p = prof::Profiler::start(prof::Options::default().interval(interval));
    std::env::remove_var("PROF_TIMER");
    let p = p.unwrap();
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
    let _serial = serial();
    std::env::set_var("PROF_TIMER", "sundial");
    let r = prof::Profiler::start(prof::Options::default());
    std::env::remove_var("PROF_TIMER");
    let err = r.err().expect("refused").to_string();
    assert!(err.contains("PROF_TIMER=sundial"), "{err}");
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
