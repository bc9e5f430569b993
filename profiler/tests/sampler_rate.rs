//! The requested rate is delivered on a CPU-bound thread, on the default (best) mechanism.

mod common;

use common::{samples_on, serial, spin};
use prof::sampler::current_tid;
use std::time::Duration;

#[test]
fn one_millisecond_on_two_cpu_seconds_gives_at_least_1900_samples() {
    let _serial = serial();
    let tid = current_tid();
    let report = prof::profile(
        prof::Options::default().interval(Duration::from_millis(1)),
        || spin(Duration::from_secs(2)),
    )
    .unwrap();
    let n = samples_on(&report, tid).len();
    assert!(n >= 1900, "{n} samples");
    let meta = &report.session().meta;
    assert_eq!(
        meta.timer, "perf_event_sigtrap",
        "perf_event_paranoid 2 and Linux 5.13+ allow it"
    );
    assert_eq!(meta.requested_interval_ns, 1_000_000);
    let achieved = meta.achieved_interval_ns;
    assert!(
        (900_000..=1_100_000).contains(&achieved),
        "achieved {achieved} ns"
    );
}

/// `perf_ring`'s task clock, no signal: the same rate (the kernel's timer is the same).
#[test]
fn one_millisecond_on_two_cpu_seconds_gives_at_least_1900_samples_on_perf_ring() {
    let _serial = serial();
    let tid = current_tid();
    let options = prof::Options::default()
        .timer(prof::Timer::PerfRing)
        .interval(Duration::from_millis(1));
    let report = prof::profile(options, || spin(Duration::from_secs(2))).unwrap();
    let n = samples_on(&report, tid).len();
    assert!(n >= 1900, "{n} samples");
    let meta = &report.session().meta;
    assert_eq!(meta.timer, "perf_ring");
    assert_eq!(meta.dropped_samples, 0);
}

#[test]
fn two_hundred_microseconds_gives_at_least_ninety_percent() {
    let _serial = serial();
    let tid = current_tid();
    let report = prof::profile(
        prof::Options::default().interval(Duration::from_micros(200)),
        || spin(Duration::from_secs(1)),
    )
    .unwrap();
    let n = samples_on(&report, tid).len();
    assert!(n >= 4500, "{n} samples of 5000 requested");
}

/// Recurses `depth` frames, then burns `cpu` of CPU time there.
#[inline(never)]
fn deep(depth: u32, cpu: Duration) -> u64 {
    if depth == 0 {
        spin(cpu)
    } else {
        std::hint::black_box(deep(depth - 1, cpu)).wrapping_add(1)
    }
}

/// The longest a thread that sleeps 2 ms at a time overslept while `work` ran: how late this
/// machine schedules a thread that wakes, as the collector does (every 1 to 20 ms).
fn longest_wake_delay<T>(work: impl FnOnce() -> T) -> (T, Duration) {
    let done = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let probe = {
        let done = done.clone();
        std::thread::spawn(move || {
            let mut longest = Duration::ZERO;
            while !done.load(std::sync::atomic::Ordering::Relaxed) {
                let asked = Duration::from_millis(2);
                let start = std::time::Instant::now();
                std::thread::sleep(asked);
                longest = longest.max(start.elapsed().saturating_sub(asked));
            }
            longest
        })
    };
    let out = work();
    done.store(true, std::sync::atomic::Ordering::Relaxed);
    (out, probe.join().unwrap())
}

/// The ring is sized for the rate and records take their own depth: 8 threads at 10 kHz with
/// stacks at the default depth limit (128 frames, the largest records) lose no sample to a full
/// ring, with the collector draining it as it does (every 1 to 20 ms). At 10 kHz on two CPUs the
/// ring holds about 50 ms of records this deep: a collector that is not scheduled for longer
/// loses samples whatever the ring's sizing, and under a load average of 7 to 30 on two cores
/// (other builds beside the tests' two CPU hogs) it was, dropping from 0.2% (89 of 39,219) to
/// 12% (4,304 of 34,456) of the samples; on a quiet machine none are dropped. The collector
/// sleeps at most 20 ms, so with wake-ups at most 25 ms late it drains within 45 ms, inside what
/// the ring holds: a run in which a thread waking as the collector does was scheduled more than
/// 25 ms late does not judge the ring and is run again, up to three times; a run without such a
/// delay must drop under 1%.
#[test]
fn eight_threads_at_ten_kilohertz_with_deep_stacks_drop_almost_nothing() {
    let _serial = serial();
    let cpu = Duration::from_millis(500);
    let mut runs = Vec::new();
    for _ in 0..3 {
        let (report, delay) = longest_wake_delay(|| {
            prof::profile(
                prof::Options::default().interval(Duration::from_micros(100)),
                || {
                    let threads: Vec<_> = (0..8)
                        .map(|_| std::thread::spawn(move || deep(150, cpu)))
                        .collect();
                    for t in threads {
                        t.join().unwrap();
                    }
                },
            )
            .unwrap()
        });
        let s = report.session();
        let deepest = (0..s.samples.len())
            .map(|i| s.stack_frames(s.samples.stack[i]).count())
            .max()
            .unwrap_or(0);
        assert!(deepest >= 128, "stacks as deep as the limit: {deepest}");
        // 40,000 requested; a loaded machine delays signals, it does not lose CPU time.
        assert!(s.samples.len() > 30_000, "{} samples", s.samples.len());
        let dropped = s.meta.dropped_samples;
        runs.push(format!(
            "{dropped} dropped of {} samples, a waking thread up to {delay:?} late",
            s.samples.len()
        ));
        eprintln!("run {}: {}", runs.len(), runs[runs.len() - 1]);
        if (dropped as f64) < 0.01 * s.samples.len() as f64 {
            return;
        }
        assert!(
            delay > Duration::from_millis(25),
            "the ring overflowed with the collector scheduled in time: {runs:?}"
        );
    }
    panic!("every run was starved of the CPU and dropped samples: {runs:?}");
}
