//! How much of a small working set this machine keeps in its caches while a thread spends a
//! while on other work: the evidence for why the signal handler takes longer per sample at
//! 1 kHz than at 10 kHz for the same work (docs/benchmarks.md, "Sampler: cost per sample above
//! the floor"). No profiler runs here.
//!
//! A thread spins on the clock for a gap (the time between two samples at some rate), then
//! times one walk over 64 cache lines linked in a random order (each load needs the one before,
//! as an unwinder's do). Two working sets: *packed*, the 64 lines in one 4 KiB page (caches
//! only), and *spread*, one line in each of 64 pages of a 4 MiB region (caches and TLB), which
//! is closer to a handler's data: its thread slot, unwind state, ring record, the unwind rules
//! and stack pages. Printed: the median walk per gap, and per line.
//!
//! Run: `cargo bench -p prof-benches --bench cache_decay`.

use std::hint::black_box;
use std::time::{Duration, Instant};

const LINES: usize = 64;
const LINE: usize = 64;
const PAGE: usize = 4096;

/// A buffer of `bytes` holding a cycle through `LINES` lines, `stride` bytes apart, in a
/// shuffled order; returns the buffer and the first line's word index.
fn cycle(bytes: usize, stride: usize, seed: u64) -> (Vec<usize>, usize) {
    let words = bytes / 8;
    let mut buffer = vec![0usize; words];
    let mut order: Vec<usize> = (0..LINES).collect();
    let mut x = seed;
    for i in (1..LINES).rev() {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        order.swap(i, (x % (i as u64 + 1)) as usize);
    }
    let word_of = |line: usize| line * stride / 8;
    for i in 0..LINES {
        buffer[word_of(order[i])] = word_of(order[(i + 1) % LINES]);
    }
    (buffer, word_of(order[0]))
}

/// One walk around the cycle.
#[inline(never)]
fn walk(buffer: &[usize], start: usize) -> usize {
    let mut at = start;
    for _ in 0..LINES {
        at = buffer[at];
    }
    at
}

/// Spins on the clock for `gap`.
fn spin(gap: Duration) {
    let start = Instant::now();
    while start.elapsed() < gap {
        std::hint::spin_loop();
    }
}

/// The median nanoseconds of `trials` timed walks, each after `gap` of spinning.
fn median_walk(buffer: &[usize], start: usize, gap: Duration, trials: usize) -> f64 {
    let mut times: Vec<f64> = (0..trials)
        .map(|_| {
            spin(gap);
            let t0 = Instant::now();
            black_box(walk(black_box(buffer), start));
            t0.elapsed().as_nanos() as f64
        })
        .collect();
    times.sort_by(f64::total_cmp);
    times[times.len() / 2]
}

fn main() {
    let (packed, packed_start) = cycle(PAGE, LINE, 0x9e37_79b9_7f4a_7c15);
    let (spread, spread_start) = cycle(LINES * PAGE, PAGE + LINE, 0x2545_f491_4f6c_dd1d);
    // The clock's own cost, from back-to-back reads.
    let mut clock: Vec<f64> = (0..10_000)
        .map(|_| {
            let t0 = Instant::now();
            t0.elapsed().as_nanos() as f64
        })
        .collect();
    clock.sort_by(f64::total_cmp);
    let clock = clock[clock.len() / 2];
    println!("{LINES} lines walked in a random order; medians, less the clock's {clock:.0} ns");
    println!("| gap (as a sampling rate) | packed: walk | per line | spread: walk | per line |");
    println!("|---|---:|---:|---:|---:|");
    for gap_us in [0u64, 20, 50, 100, 200, 500, 1000, 2000, 5000] {
        let gap = Duration::from_micros(gap_us);
        // About a second per gap, at least 200 walks.
        let trials = (1_000_000 / gap_us.max(2)).clamp(200, 20_000) as usize;
        let p = (median_walk(&packed, packed_start, gap, trials) - clock).max(0.0);
        let s = (median_walk(&spread, spread_start, gap, trials) - clock).max(0.0);
        let rate = match 1_000_000u64.checked_div(gap_us) {
            Some(hz) => format!("{gap_us} µs ({hz} Hz)"),
            None => "back to back".to_string(),
        };
        println!(
            "| {rate} | {p:.0} ns | {:.1} ns | {s:.0} ns | {:.1} ns |",
            p / LINES as f64,
            s / LINES as f64
        );
    }
}
