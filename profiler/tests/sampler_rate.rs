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
