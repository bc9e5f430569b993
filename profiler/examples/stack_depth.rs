//! Checks that unwinding works on this machine: profiles a recursive workload (40 frames deep,
//! some of it in the vDSO's clock code) on the main thread and prints how many of its samples
//! have stacks that reach `main`. Build it like your program (`cargo run --release --example
//! stack_depth`): a release build has no frame pointers, so this shows the DWARF unwinder at
//! work.
//!
//! Prints `reached main: N of M samples (P%) on <timer>`, then, for the stacks that fell short,
//! the most common innermost and outermost frames (where unwinding stopped).

use std::time::{Duration, Instant};

#[inline(never)]
fn spin(cpu: Duration) -> u64 {
    let start = prof::sampler::thread_cpu_time();
    let mut x = 1u64;
    while prof::sampler::thread_cpu_time() - start < cpu {
        for i in 0..10_000u64 {
            x = std::hint::black_box(x.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(i));
        }
    }
    x
}

#[inline(never)]
fn read_clocks(cpu: Duration) -> u64 {
    let start = prof::sampler::thread_cpu_time();
    let mut n = 0u64;
    while prof::sampler::thread_cpu_time() - start < cpu {
        for _ in 0..1000 {
            n = n.wrapping_add(u64::from(Instant::now().elapsed().subsec_nanos()));
        }
    }
    n
}

#[inline(never)]
fn descend(depth: u32) -> u64 {
    if depth == 0 {
        spin(Duration::from_millis(600)) ^ read_clocks(Duration::from_millis(300))
    } else {
        std::hint::black_box(descend(depth - 1)).wrapping_add(1)
    }
}

fn main() {
    let report = match prof::profile(prof::Options::default(), || descend(40)) {
        Ok(report) => report,
        Err(e) => {
            eprintln!("stack_depth: {e}");
            std::process::exit(1);
        }
    };
    let s = report.session();
    let me = prof::sampler::current_tid();
    let mine: Vec<usize> = (0..s.samples.len())
        .filter(|&i| s.threads[s.samples.thread[i].index()].tid == me)
        .collect();
    let reached = mine
        .iter()
        .filter(|&&i| {
            s.stack_frames(s.samples.stack[i])
                .any(|f| s.frame_name(f) == "stack_depth::main")
        })
        .count();
    println!(
        "reached main: {reached} of {} samples ({:.1}%) on {}",
        mine.len(),
        reached as f64 * 100.0 / mine.len().max(1) as f64,
        s.meta.timer
    );
    let mut short = std::collections::HashMap::<(String, String), usize>::new();
    for &i in &mine {
        let frames: Vec<&str> = s
            .stack_frames(s.samples.stack[i])
            .map(|f| s.frame_name(f))
            .collect();
        if !frames.contains(&"stack_depth::main") {
            let leaf = frames.first().copied().unwrap_or("?").to_owned();
            let last = frames.last().copied().unwrap_or("?").to_owned();
            *short.entry((leaf, last)).or_default() += 1;
        }
    }
    let mut short: Vec<_> = short.into_iter().collect();
    short.sort_by_key(|entry| std::cmp::Reverse(entry.1));
    for ((leaf, last), n) in short.iter().take(5) {
        println!("fell short {n} times: from {leaf} to {last}");
    }
}
