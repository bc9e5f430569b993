//! The criterion example of docs/criterion.md, two benchmarks with prof as criterion's profiler hook.
//!
//! `cargo bench -p prof-benches --bench criterion_profiled` measures them as any criterion bench;
//! with `-- --profile-time 5` each is profiled for 5 s instead, its session saved as
//! `target/criterion/<benchmark>/profile/prof.json.gz` and its top functions printed.

use criterion::{criterion_group, criterion_main, Criterion};
use std::hint::black_box;

#[inline(never)]
fn fib(n: u64) -> u64 {
    if n < 2 {
        n
    } else {
        fib(n - 1) + fib(n - 2)
    }
}

#[inline(never)]
fn sort(n: u64) -> Vec<u64> {
    let mut v: Vec<u64> = (0..n)
        .map(|i| i.wrapping_mul(0x9e37_79b9_7f4a_7c15))
        .collect();
    v.sort_unstable();
    v
}

fn benchmarks(c: &mut Criterion) {
    c.bench_function("fib", |b| b.iter(|| fib(black_box(20))));
    c.bench_function("sort", |b| b.iter(|| sort(black_box(10_000))));
}

fn profiled() -> Criterion {
    let profiler = prof::criterion::Profiler::new(prof::Options::default(), std::io::stdout());
    Criterion::default().with_profiler(profiler)
}

criterion_group!(name = benches; config = profiled(); targets = benchmarks);
criterion_main!(benches);
