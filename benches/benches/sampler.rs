//! Sampler benchmark: the same CPU-bound workload (a loop at stack depth 40) unprofiled, with
//! `prof` at 100 Hz / 1 kHz / 10 kHz and with pprof-rs at the same rates, each run in a fresh
//! child process so peak RSS is its own. Prints, side by side: wall-time and CPU-time overhead,
//! samples per CPU-second achieved (and as % of requested), extra CPU per sample (signal delivery
//! included), for `prof` the CPU inside its handler per sample, peak RSS, and for `prof` the share
//! of stacks that reach `main`. Each figure is from the least disturbed of three runs.
//!
//! Run: `cargo bench -p prof-benches --bench sampler` (release, no forced frame pointers).

use std::process::Command;
use std::time::{Duration, Instant};

const REPEATS: usize = 3;
const RATES: [i32; 3] = [100, 1_000, 10_000];

#[inline(never)]
fn descend(depth: u32, rounds: u64) -> u64 {
    if depth == 0 {
        let mut x = 1u64;
        for i in 0..rounds {
            x = std::hint::black_box(x.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(i));
        }
        x
    } else {
        std::hint::black_box(descend(depth - 1, rounds)).wrapping_add(1)
    }
}

/// About 1.5 s of CPU on this machine, in 2,000 calls at depth 40.
fn workload() -> u64 {
    (0..2_000).fold(0, |acc, _| acc ^ descend(40, 1_000_000))
}

fn peak_rss_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            let line = s.lines().find(|l| l.starts_with("VmHWM:"))?;
            line.split_whitespace().nth(1)?.parse().ok()
        })
        .unwrap_or(0)
}

/// One run in this (child) process: prints `wall_ns cpu_ns samples rss_kib reach_main`.
fn child(tool: &str, rate: i32) {
    let cpu0 = prof::sampler::thread_cpu_time();
    let t0 = Instant::now();
    let (samples, reach) = match tool {
        "none" => {
            std::hint::black_box(workload());
            (0, 0.0)
        }
        "prof" => {
            let interval = Duration::from_nanos(1_000_000_000 / rate as u64);
            let p = prof::Profiler::start(prof::Options::default().interval(interval)).unwrap();
            std::hint::black_box(workload());
            let cpu = prof::sampler::thread_cpu_time() - cpu0;
            let wall = t0.elapsed();
            let report = p.stop().unwrap();
            let s = report.session();
            let reach = (0..s.sample_count())
                .filter(|&i| {
                    s.stack_frames(s.samples.stack[i])
                        .any(|f| matches!(s.frame_name(f), "main" | "sampler::main"))
                })
                .count();
            let n = s.sample_count();
            let (handled, handler) = prof::sampler::handler_stats();
            println!(
                "{} {} {} {} {} {}",
                wall.as_nanos(),
                cpu.as_nanos(),
                n,
                peak_rss_kib(),
                reach as f64 / n.max(1) as f64,
                handler.as_nanos() as f64 / handled.max(1) as f64
            );
            return;
        }
        _ => {
            let guard = pprof::ProfilerGuardBuilder::default()
                .frequency(rate)
                .build()
                .unwrap();
            std::hint::black_box(workload());
            let cpu = prof::sampler::thread_cpu_time() - cpu0;
            let wall = t0.elapsed();
            let n: isize = guard.report().build().unwrap().data.values().sum();
            println!(
                "{} {} {} {} 0 0",
                wall.as_nanos(),
                cpu.as_nanos(),
                n,
                peak_rss_kib()
            );
            return;
        }
    };
    let cpu = prof::sampler::thread_cpu_time() - cpu0;
    println!(
        "{} {} {} {} {} 0",
        t0.elapsed().as_nanos(),
        cpu.as_nanos(),
        samples,
        peak_rss_kib(),
        reach
    );
}

#[derive(Clone, Copy, Default)]
struct Run {
    wall: f64,
    cpu: f64,
    samples: f64,
    rss: f64,
    reach: f64,
    handler_ns: f64,
}

fn spawn(tool: &str, rate: i32) -> Run {
    let exe = std::env::current_exe().unwrap();
    let out = Command::new(exe)
        .env("PROF_MEASURE_HANDLER", "1")
        .args(["--child", tool, &rate.to_string()])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    let v: Vec<f64> = text
        .lines()
        .last()
        .unwrap_or("")
        .split_whitespace()
        .filter_map(|w| w.parse().ok())
        .collect();
    assert_eq!(v.len(), 6, "child {tool} {rate} printed {text:?}");
    Run {
        wall: v[0] / 1e9,
        cpu: v[1] / 1e9,
        samples: v[2],
        rss: v[3],
        reach: v[4],
        handler_ns: v[5],
    }
}

/// The run with the least CPU time of several (the least disturbed by other load).
fn best(tool: &str, rate: i32) -> Run {
    (0..REPEATS)
        .map(|_| spawn(tool, rate))
        .min_by(|a, b| a.cpu.total_cmp(&b.cpu))
        .unwrap()
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if let Some(i) = args.iter().position(|a| a == "--child") {
        child(&args[i + 1], args[i + 2].parse().unwrap());
        return;
    }
    if args.iter().any(|a| a == "--list") {
        return;
    }
    let base = best("none", 0);
    println!(
        "unprofiled: wall {:.3} s, cpu {:.3} s, peak RSS {:.1} MiB",
        base.wall,
        base.cpu,
        base.rss / 1024.0
    );
    println!(
        "{:<8} {:>7} {:>9} {:>9} {:>11} {:>9} {:>14} {:>14} {:>11} {:>10}",
        "tool",
        "rate",
        "wall +%",
        "CPU +%",
        "samples/s",
        "of asked",
        "cost/sample",
        "in handler",
        "peak RSS",
        "reach main"
    );
    for rate in RATES {
        for tool in ["prof", "pprof-rs"] {
            let r = best(tool, rate);
            let per_s = r.samples / r.cpu;
            let cost_ns = ((r.cpu - base.cpu) * 1e9 / r.samples.max(1.0)).max(0.0);
            let in_handler = if tool == "prof" {
                format!("{:.2} µs", r.handler_ns / 1e3)
            } else {
                "-".into()
            };
            let reach = if tool == "prof" {
                format!("{:.1}%", r.reach * 100.0)
            } else {
                "-".into()
            };
            println!(
                "{:<8} {:>5}Hz {:>8.1}% {:>8.1}% {:>11.0} {:>8.1}% {:>11.2} µs {:>14} {:>7.1} MiB {:>10}",
                tool,
                rate,
                (r.wall / base.wall - 1.0) * 100.0,
                (r.cpu / base.cpu - 1.0) * 100.0,
                per_s,
                per_s / rate as f64 * 100.0,
                cost_ns / 1e3,
                in_handler,
                r.rss / 1024.0,
                reach
            );
        }
    }
}
