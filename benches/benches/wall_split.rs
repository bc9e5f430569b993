//! Wall mode's accuracy on a sleep/compute split (target: within 2 points on an idle
//! machine, which a test on a busy machine cannot hold). One thread loops sleeping 14 ms
//! (`nanosleep`) and computing 6 ms (a loop on the monotonic clock), timing each part with
//! `Instant`; wall mode samples the process at 1 kHz meanwhile. The sampled split is the weight
//! of the samples whose stack holds `sleep_part` over those holding either part. Each
//! mechanism (the signal wall mode, and `perf_ring`: context switches, no signal) runs
//! `--runs` times (5), alternating; printed per run and as the mean and worst difference in
//! points, with the load average before and after (the target is for an idle machine: look at
//! the load before reading the figures).
//!
//! Run: `cargo bench -p prof-benches --bench wall_split -- [--runs N] [--rounds N]`.

use std::time::{Duration, Instant};

/// Not a tail call (`black_box` after it), so that its frame is on the stack while it sleeps.
#[inline(never)]
fn sleep_part(d: Duration) {
    std::thread::sleep(d);
    std::hint::black_box(&d);
}

#[inline(never)]
fn compute_part(d: Duration) -> u64 {
    let start = Instant::now();
    let mut x = 1u64;
    while start.elapsed() < d {
        for _ in 0..100 {
            x = std::hint::black_box(x.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1));
        }
    }
    x
}

/// One run: (measured % asleep, sampled % asleep).
fn run(timer: prof::Timer, rounds: u32) -> (f64, f64) {
    let options = prof::Options::default()
        .mode(prof::Mode::Wall)
        .timer(timer)
        .interval(Duration::from_millis(1));
    let profiler = prof::Profiler::start(options).unwrap();
    let (mut asleep, mut computing) = (Duration::ZERO, Duration::ZERO);
    let worker = std::thread::spawn(move || {
        for _ in 0..rounds {
            let t = Instant::now();
            sleep_part(Duration::from_millis(14));
            asleep += t.elapsed();
            let t = Instant::now();
            compute_part(Duration::from_millis(6));
            computing += t.elapsed();
        }
        (prof::sampler::current_tid(), asleep, computing)
    });
    let (tid, asleep, computing) = worker.join().unwrap();
    let report = profiler.stop().unwrap();
    let s = report.session();
    let (mut in_sleep, mut in_compute) = (0u64, 0u64);
    for i in 0..s.samples.len() {
        if s.threads[s.samples.thread[i].index()].tid != tid {
            continue;
        }
        let names: Vec<&str> = s
            .stack_frames(s.samples.stack[i])
            .map(|f| s.frame_name(f))
            .collect();
        if names.iter().any(|n| n.contains("sleep_part")) {
            in_sleep += s.samples.weight[i];
        } else if names.iter().any(|n| n.contains("compute_part")) {
            in_compute += s.samples.weight[i];
        }
    }
    let measured = 100.0 * asleep.as_secs_f64() / (asleep + computing).as_secs_f64();
    let sampled = 100.0 * in_sleep as f64 / (in_sleep + in_compute).max(1) as f64;
    (measured, sampled)
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.iter().any(|a| a == "--list") {
        return;
    }
    let arg = |name: &str, default: u32| {
        args.iter()
            .position(|a| a == name)
            .and_then(|i| args.get(i + 1)?.parse().ok())
            .unwrap_or(default)
    };
    let (runs, rounds) = (arg("--runs", 5), arg("--rounds", 100));
    let load = || {
        std::fs::read_to_string("/proc/loadavg")
            .unwrap_or_default()
            .trim()
            .to_owned()
    };
    println!(
        "{runs} runs of {rounds} rounds (sleep 14 ms, compute 6 ms) at 1 kHz; load before: {}",
        load()
    );
    let timers = [prof::Timer::Auto, prof::Timer::PerfRing];
    let mut diffs: Vec<Vec<f64>> = vec![Vec::new(); timers.len()];
    let mut names = vec![String::new(); timers.len()];
    for r in 0..runs {
        for (i, &timer) in timers.iter().enumerate() {
            let (measured, sampled) = run(timer, rounds);
            names[i] = if timer == prof::Timer::Auto {
                "signals (wall_ticker)".into()
            } else {
                "perf_ring".into()
            };
            println!(
                "run {r}: {:<22} measured {measured:.2}% asleep, sampled {sampled:.2}%: {:+.2} points",
                names[i],
                sampled - measured
            );
            diffs[i].push(sampled - measured);
        }
    }
    println!("load after: {}", load());
    println!(
        "{:<22} {:>12} {:>12}",
        "mechanism", "mean diff", "worst |diff|"
    );
    for (name, d) in names.iter().zip(&diffs) {
        let mean = d.iter().sum::<f64>() / d.len().max(1) as f64;
        let worst = d.iter().fold(0.0f64, |m, x| m.max(x.abs()));
        println!("{name:<22} {mean:>+9.2} pt {worst:>9.2} pt");
    }
}
