//! Reusing the outer frames of a thread's previous stack changes no stack: with
//! `Settings::verify_reuse` (`prof::diagnostics`) every stack that reused frames is unwound again in full and compared.
//! The workload makes the outer frames change often and in many ways (recursion of varying
//! depth, callers that return and are called again from elsewhere at the same depth, two
//! threads, the vDSO), so a wrong reuse would show.

mod common;

use common::{serial, spin};
use prof::sampler::thread_cpu_time;
use std::time::{Duration, Instant};

#[inline(never)]
fn leaf(n: u64) -> u64 {
    let mut x = n;
    for i in 0..2_000 {
        x = std::hint::black_box(x.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(i));
    }
    x
}

#[inline(never)]
fn clocks(n: u64) -> u64 {
    (0..50).fold(n, |a, _| {
        a.wrapping_add(u64::from(Instant::now().elapsed().subsec_nanos()))
    })
}

#[inline(never)]
fn left(depth: u32, n: u64) -> u64 {
    if depth == 0 {
        leaf(n)
    } else {
        std::hint::black_box(right(depth - 1, n)).wrapping_add(1)
    }
}

#[inline(never)]
fn right(depth: u32, n: u64) -> u64 {
    if depth == 0 {
        clocks(n)
    } else {
        // A different frame size from `left`, so the same depth lands at other stack addresses.
        let pad = std::hint::black_box([n; 7]);
        std::hint::black_box(left(depth - 1, pad[3])).wrapping_add(2)
    }
}

/// Two callers with the same frame: the frames below them sit at the same addresses with the
/// same return addresses, and only the word holding *their* return address tells them apart.
#[inline(never)]
fn via_a(depth: u32, n: u64) -> u64 {
    std::hint::black_box(left(depth, n)).wrapping_add(3)
}

#[inline(never)]
fn via_b(depth: u32, n: u64) -> u64 {
    std::hint::black_box(left(depth, n)).wrapping_add(3)
}

/// Calls down to depths that change every round, through alternating callers.
#[inline(never)]
fn churn(rounds: u64) -> u64 {
    let mut acc = 0;
    for r in 0..rounds {
        let depth = (r * 7 % 23) as u32;
        acc ^= match r % 4 {
            0 => left(depth, r),
            1 => right(depth, r),
            2 => via_a(depth, r),
            _ => via_b(depth, r),
        };
    }
    acc
}

#[test]
fn reused_frames_are_exactly_what_a_full_unwind_gives() {
    let _serial = serial();
    let (reused_before, mismatches_before) = prof::diagnostics::reuse_stats();
    let options = prof::Options::default()
        .interval(Duration::from_micros(100))
        .diagnostics(prof::diagnostics::Settings::default().verify_reuse(true));
    let p = prof::Profiler::start(options).unwrap();
    // Each thread runs for 600 ms of its own CPU time, not of the wall clock: the CPU timer
    // samples CPU time, so on a loaded machine a wall-clock run got fewer samples (1,863 of
    // the 2,000 needed at load 7) while the same CPU time always gets about 12,000.
    let other = std::thread::spawn(|| {
        let end = thread_cpu_time() + Duration::from_millis(600);
        let mut acc = 0;
        while thread_cpu_time() < end {
            acc ^= churn(200) ^ spin(Duration::from_millis(1));
        }
        acc
    });
    let end = thread_cpu_time() + Duration::from_millis(600);
    let mut acc = 0;
    while thread_cpu_time() < end {
        acc ^= churn(300);
    }
    std::hint::black_box(acc ^ other.join().unwrap());
    let report = p.stop().unwrap();
    let (reused, mismatches) = prof::diagnostics::reuse_stats();
    let (reused, mismatches) = (reused - reused_before, mismatches - mismatches_before);
    let samples = report.total_samples();
    assert!(samples >= 2_000, "{samples} samples");
    assert_eq!(
        mismatches, 0,
        "{mismatches} of {reused} reused stacks differed"
    );
    assert!(
        reused * 4 >= samples,
        "only {reused} of {samples} samples reused frames"
    );
}
