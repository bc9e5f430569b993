//! Stacks reach `main`: on the real main thread (no test harness), in code built without frame
//! pointers (the standard library never has them; this binary is built without forcing them),
//! at least 99% of the samples unwind through `main`. The same run with frame pointers only is
//! checked to fall short, which shows the DWARF unwinder did the work.

mod common;

use common::{names, samples_on, spin};
use prof::sampler::current_tid;
use std::time::Duration;

#[inline(never)]
fn leaf_work() -> u64 {
    let mut x = 0;
    for _ in 0..40 {
        x ^= std::hint::black_box(spin(Duration::from_millis(10)));
    }
    x
}

/// Reads the monotonic clock in a loop: many samples (about 40% here) land in the vDSO, which
/// has no file on disk and so no unwind tables loaded; those stacks must still reach `main`.
#[inline(never)]
fn clock_work() -> u64 {
    let start = prof::sampler::thread_cpu_time();
    let mut n = 0u64;
    while prof::sampler::thread_cpu_time() - start < Duration::from_millis(400) {
        for _ in 0..1000 {
            n = n.wrapping_add(std::time::Instant::now().elapsed().subsec_nanos() as u64);
        }
    }
    n
}

#[inline(never)]
fn middle(depth: u32) -> u64 {
    if depth == 0 {
        leaf_work() ^ clock_work()
    } else {
        std::hint::black_box(middle(depth - 1)) + 1
    }
}

fn share_reaching_main(unwind: &str) -> (f64, usize) {
    let options = prof::Options::default().unwind(unwind.parse().unwrap());
    let report = prof::profile(options, || middle(20)).unwrap();
    let on = samples_on(&report, current_tid());
    let reaching = on
        .iter()
        .filter(|&&i| names(&report, i).iter().any(|n| n == "sampler_main::main"))
        .count();
    (reaching as f64 / on.len().max(1) as f64, on.len())
}

fn main() {
    let (dwarf, n) = share_reaching_main("dwarf");
    assert!(n >= 300, "{n} samples");
    assert!(
        dwarf >= 0.99,
        "DWARF: {:.1}% of {n} samples reach main",
        dwarf * 100.0
    );
    let (fp, n) = share_reaching_main("fp");
    println!(
        "stacks reaching main: DWARF {:.1}%, frame pointers only {:.1}% ({n} samples)",
        dwarf * 100.0,
        fp * 100.0
    );
    println!("1 passed, 0 failed");
}
