//! Allocation mode's estimates against exact counts: two functions allocate known totals
//! (counted by the allocator under prof's wrapper), and their sampled estimates of allocated
//! and in-use bytes must be within 5% of the truth.

mod common;
#[path = "common/counting.rs"]
mod counting;

use common::serial;
use counting::{assert_within, counted, weight_as, Counting};
use prof::{Mode, Options};
use std::hint::black_box;

#[global_allocator]
static ALLOC: prof::alloc::Sampling<Counting> = prof::alloc::Sampling::new(Counting);

/// Mean bytes between samples in these tests: small enough for tens of thousands of samples,
/// so that 5% is many standard deviations of the estimate.
const INTERVAL: u64 = 4 * 1024;

/// Allocates about `total` bytes in strings of 32 to 400 bytes and keeps every other one;
/// returns them.
#[inline(never)]
fn keeps_strings(total: u64) -> Vec<String> {
    let mut kept = Vec::new();
    let mut done = 0u64;
    let mut i = 0usize;
    while done < total {
        let s = "x".repeat(32 + (i * 37) % 369);
        done += s.len() as u64;
        if i % 2 == 0 {
            kept.push(s);
        } else {
            black_box(s);
        }
        i += 1;
    }
    kept
}

/// Allocates about `total` bytes in vectors of 64 to 8,192 bytes (grown by pushing) and frees
/// them all.
#[inline(never)]
fn frees_vectors(total: u64) -> u64 {
    let mut done = 0u64;
    let mut i = 0u64;
    while done < total {
        let mut v: Vec<u64> = Vec::new();
        for k in 0..(8 + (i * 131) % 1016) {
            v.push(k);
        }
        done += v.capacity() as u64 * 8;
        i += 1;
        black_box(&v);
    }
    i
}

#[test]
fn two_functions_are_estimated_within_5_percent_and_only_live_blocks_are_in_use() {
    let _serial = serial();
    let options = Options::default()
        .mode(Mode::Alloc)
        .alloc_interval_bytes(INTERVAL);
    let profiler = prof::Profiler::start(options).unwrap();
    let (kept, strings) = counted(1, || keeps_strings(96 << 20));
    let (_, vectors) = counted(2, || frees_vectors(192 << 20));
    let report = profiler.stop().unwrap();
    // The truth in use: the kept strings and the vector holding them.
    let live: u64 = kept.iter().map(|s| s.capacity() as u64).sum::<u64>()
        + (kept.capacity() * std::mem::size_of::<String>()) as u64;
    let meta = &report.session().meta;
    eprintln!(
        "{} samples, {} dropped; strings {strings} B (live {live} B), vectors {vectors} B",
        report.total_samples(),
        meta.dropped_samples
    );
    assert_eq!(meta.dropped_samples, 0, "no sample may be lost here");
    assert_within(
        "keeps_strings alloc_bytes",
        weight_as(&report, "alloc_bytes", "keeps_strings"),
        strings,
        5.0,
    );
    assert_within(
        "frees_vectors alloc_bytes",
        weight_as(&report, "alloc_bytes", "frees_vectors"),
        vectors,
        5.0,
    );
    assert_within(
        "keeps_strings inuse_bytes",
        weight_as(&report, "inuse_bytes", "keeps_strings"),
        live,
        5.0,
    );
    assert_eq!(
        weight_as(&report, "inuse_bytes", "frees_vectors"),
        0,
        "every vector was freed before stop"
    );
    // Objects: one block per string. Small blocks weigh many objects each (1/p, about
    // INTERVAL/size), so this estimate varies more than the bytes' (its standard deviation is
    // about 1% here): checked within 10%.
    let kept_objects = kept.len() as u64 + 1;
    assert_within(
        "keeps_strings inuse_objects",
        weight_as(&report, "inuse_objects", "keeps_strings"),
        kept_objects,
        10.0,
    );
    drop(black_box(kept));
}

#[test]
fn samples_end_in_the_allocating_code_not_in_the_allocator() {
    let _serial = serial();
    let options = Options::default()
        .mode(Mode::Alloc)
        .alloc_interval_bytes(INTERVAL);
    let report = prof::profile(options, || black_box(keeps_strings(8 << 20))).unwrap();
    let s = report.session();
    assert!(s.samples.len() > 100, "{} samples", s.samples.len());
    for i in 0..s.samples.len() {
        let leaf = s.frame_name(s.stack(s.samples.stack[i]).frame);
        assert!(
            !leaf.contains("prof::")
                && !leaf.contains("prof_capture::")
                && !leaf.starts_with("__rust")
                && !leaf.starts_with("alloc::alloc"),
            "a sample ends in the allocator: {leaf}"
        );
    }
    assert!(
        (0..s.samples.len()).all(|i| s
            .stack_frames(s.samples.stack[i])
            .any(|f| s.frame_name(f).contains("keeps_strings"))),
        "every sample is of the profiled function"
    );
}
