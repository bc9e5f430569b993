//! The sampler's cost per sample on the sampled thread, measured inside one process so that the
//! machine's other load cancels out as far as it can: the same stretch of work (the sampler
//! bench's loop at depth 40) runs in short chunks, unprofiled, under prof with its handler
//! emptied (the floor: the kernel's timer and signal delivery, and prof's collector) and under
//! prof proper, one after the other in rotating order, round after round. Each profiled chunk
//! is a session of its own, started and stopped around the chunk; the chunk's figures (its
//! thread's CPU time, page faults and context switches, from `getrusage(RUSAGE_THREAD)`)
//! exclude start and stop, which are measured apart (start on the calling thread's CPU clock,
//! as a program that profiles itself pays it). The sampler bench's separate child processes,
//! best of five each, differ by more than 1% of their CPU from run to run on this VM, which is
//! 10 µs a sample at 1 kHz: too coarse for a target of the floor + 1 µs.
//!
//! Printed: per configuration, the thread CPU of its chunks over the unprofiled chunks', per
//! sample (from the totals; and the median over rounds of each round's difference, with the
//! standard error of their mean), the time inside the handler (`--timed`), faults and
//! involuntary context switches per chunk, the CPU time and page faults of `Profiler::start`
//! on the calling thread, the share of samples whose weight read the thread CPU clock, the
//! share that copied outer frames from the thread's previous stack, and how many frames those
//! unwound before they could.
//!
//! `--gaps` runs, instead of the loop, one that only reads the monotonic clock for the same
//! CPU time, at depth 40, and counts the interruptions it sees (gaps of 1 to 200 µs, longer
//! ones being preemption): the median gap is the time a sample takes the thread away from its
//! work, kernel and handler together, robust against other load.
//!
//! Run: `cargo bench -p prof-benches --bench sampler_cost -- [--rate HZ] [--rounds N]
//! [--chunk-ms MS] [--timed] [--gaps] [--no-warm-up] [CONFIG...]`, CONFIG among `floor`,
//! `prof`, `prof-fp` (frame pointers only), `prof-noreuse` (no frame reuse), `prof-timed` (the
//! handler timed), `ring` (`Timer::PerfRing`: no signal, stacks copied by the kernel and unwound
//! by the collector); default `floor prof`, 1 kHz, 10 rounds of 200 ms. `process/sample` is
//! the whole process's CPU per sample over the unprofiled chunks' (the collector's included,
//! which is where `ring` unwinds; its drain at stop, at most 5 ms of samples, is not in it).

use prof::diagnostics::{Measure, Settings};
use prof_benches::{descend, print_clock_read_cost};
use std::time::Duration;

/// The calling thread's resource use: CPU nanoseconds, minor and major faults, voluntary and
/// involuntary context switches.
#[derive(Clone, Copy, Default, Debug)]
struct Usage {
    cpu_ns: f64,
    /// The whole process's CPU (the collector's included).
    process_ns: f64,
    minor: f64,
    major: f64,
    voluntary: f64,
    involuntary: f64,
}

impl Usage {
    fn now() -> Usage {
        // SAFETY: an all-zero rusage is valid storage for getrusage to fill.
        let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
        // SAFETY: RUSAGE_THREAD fills `ru`, which this frame owns.
        let rc = unsafe { libc::getrusage(libc::RUSAGE_THREAD, &mut ru) };
        assert_eq!(rc, 0, "getrusage(RUSAGE_THREAD)");
        Usage {
            cpu_ns: prof::sampler::thread_cpu_time().as_nanos() as f64,
            process_ns: prof::sampler::process_cpu_time().as_nanos() as f64,
            minor: ru.ru_minflt as f64,
            major: ru.ru_majflt as f64,
            voluntary: ru.ru_nvcsw as f64,
            involuntary: ru.ru_nivcsw as f64,
        }
    }

    fn since(self, before: Usage) -> Usage {
        Usage {
            cpu_ns: self.cpu_ns - before.cpu_ns,
            process_ns: self.process_ns - before.process_ns,
            minor: self.minor - before.minor,
            major: self.major - before.major,
            voluntary: self.voluntary - before.voluntary,
            involuntary: self.involuntary - before.involuntary,
        }
    }

    fn add(&mut self, other: Usage) {
        self.cpu_ns += other.cpu_ns;
        self.process_ns += other.process_ns;
        self.minor += other.minor;
        self.major += other.major;
        self.voluntary += other.voluntary;
        self.involuntary += other.involuntary;
    }
}

/// One configuration's options, `None` for the unprofiled chunks.
fn options(config: &str, interval: Duration, timed: bool) -> Option<prof::Options> {
    let settings = Settings::default().measure(if timed { Measure::Time } else { Measure::Off });
    let options = prof::Options::default().interval(interval);
    let (settings, options) = match config {
        "none" => return None,
        "floor" => (
            settings.measure(Measure::Empty),
            options.timer(prof::Timer::PerfEventSigtrap),
        ),
        "prof" => (settings, options),
        "prof-timed" => (settings.measure(Measure::Time), options),
        "prof-fp" => (settings, options.unwind(prof::Unwind::FramePointers)),
        "prof-noreuse" => (settings.reuse(false), options),
        "ring" => (settings, options.timer(prof::Timer::PerfRing)),
        other => panic!("unknown configuration {other}"),
    };
    Some(options.diagnostics(settings))
}

/// Gaps longer than this in a loop that only reads the clock are interruptions (a loop turn
/// takes tens of nanoseconds).
const GAP_NS: u64 = 1_000;
/// Gaps longer than this are the thread being preempted, not a sample: left out.
const GAP_MAX_NS: u64 = 200_000;

/// The interruptions of a loop that reads the monotonic clock for `cpu` of CPU time: how many
/// gaps between [`GAP_NS`] and [`GAP_MAX_NS`], their total and their median (nanoseconds).
fn gaps(cpu: Duration, out: &mut Vec<u64>) -> (f64, f64, f64) {
    out.clear();
    let start = prof::sampler::thread_cpu_time();
    let origin = std::time::Instant::now();
    let mut last = 0u64;
    let mut turns = 0u32;
    loop {
        let now = origin.elapsed().as_nanos() as u64;
        let gap = now - last;
        if (GAP_NS..GAP_MAX_NS).contains(&gap) && out.len() < out.capacity() {
            out.push(gap);
        }
        last = now;
        turns += 1;
        if turns.is_multiple_of(4096) {
            if prof::sampler::thread_cpu_time() - start >= cpu {
                break;
            }
            // The CPU clock read is a system call: do not count its own time as a gap.
            last = origin.elapsed().as_nanos() as u64;
        }
    }
    let total: u64 = out.iter().sum();
    let mut sorted = out.clone();
    sorted.sort_unstable();
    let median = sorted.get(sorted.len() / 2).copied().unwrap_or(0);
    (out.len() as f64, total as f64, median as f64)
}

/// Calls `f` at stack depth `depth` (plus this function's callers), as the workload runs.
#[inline(never)]
fn at_depth(depth: u32, f: &mut dyn FnMut()) -> u64 {
    if depth == 0 {
        f();
        0
    } else {
        std::hint::black_box(at_depth(depth - 1, f)).wrapping_add(1)
    }
}

/// What a chunk runs: calls of the depth-40 loop, or the gap-finding loop at depth 40 for a
/// CPU time.
#[derive(Clone, Copy)]
enum Work {
    Calls(u64),
    Gaps(Duration),
}

/// What one chunk measured.
#[derive(Clone, Copy, Default)]
struct Chunk {
    usage: Usage,
    /// With [`Work::Gaps`]: gaps found, their total and median (ns).
    gaps: (f64, f64, f64),
    /// The calling thread's page faults in `Profiler::start`.
    start_faults: f64,
    samples: f64,
    /// Samples whose weight was read from the CPU clock (a system call in the handler).
    clock_reads: f64,
    start_ns: f64,
    handler_ns: f64,
    /// Samples that copied their outer frames from the thread's previous stack, and the
    /// frames they unwound before they could.
    reused: f64,
    fresh_frames: f64,
}

/// Runs one chunk of `work` under `config`.
fn chunk(
    config: &str,
    interval: Duration,
    timed: bool,
    work: Work,
    buffer: &mut Vec<u64>,
) -> Chunk {
    let mut found = (0.0, 0.0, 0.0);
    let mut work = || match work {
        Work::Calls(calls) => {
            std::hint::black_box((0..calls).fold(0, |acc, _| acc ^ descend(40, 1_000_000)));
        }
        Work::Gaps(cpu) => {
            at_depth(40, &mut || found = gaps(cpu, buffer));
        }
    };
    let Some(options) = options(config, interval, timed) else {
        let before = Usage::now();
        work();
        return Chunk {
            usage: Usage::now().since(before),
            gaps: found,
            ..Chunk::default()
        };
    };
    let (handled0, in_handler0) = prof::diagnostics::handler_stats();
    let reads0 = prof::diagnostics::clock_reads();
    let (reused0, _) = prof::diagnostics::reuse_stats();
    let fresh0 = prof::diagnostics::frames_before_reuse();
    let started = Usage::now();
    let p = prof::Profiler::start(options).unwrap();
    let before = Usage::now();
    let start = before.since(started);
    work();
    let usage = Usage::now().since(before);
    let report = p.stop().unwrap();
    let (handled, in_handler) = prof::diagnostics::handler_stats();
    let samples = if config == "floor" {
        (handled - handled0) as f64
    } else {
        let s = report.session();
        let me = prof::sampler::current_tid();
        (0..s.samples.len())
            .filter(|&i| s.threads[s.samples.thread[i].index()].tid == me)
            .count() as f64
    };
    Chunk {
        usage,
        gaps: found,
        start_faults: start.minor,
        clock_reads: (prof::diagnostics::clock_reads() - reads0) as f64,
        samples,
        start_ns: start.cpu_ns,
        handler_ns: (in_handler - in_handler0).as_nanos() as f64,
        reused: (prof::diagnostics::reuse_stats().0 - reused0) as f64,
        fresh_frames: (prof::diagnostics::frames_before_reuse() - fresh0) as f64,
    }
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n == 0 {
        return f64::NAN;
    }
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

/// The standard error of the mean of `v`.
fn standard_error(v: &[f64]) -> f64 {
    let n = v.len() as f64;
    if n < 2.0 {
        return f64::NAN;
    }
    let mean = v.iter().sum::<f64>() / n;
    let var = v.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1.0);
    (var / n).sqrt()
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mut rate = 1_000u64;
    let mut rounds = 10usize;
    let mut chunk_ms = 200u64;
    let mut warm_up = true;
    let mut gap_mode = false;
    let mut timed = false;
    let mut configs = vec!["none".to_string()];
    let mut it = args.iter();
    while let Some(arg) = it.next() {
        match arg.as_str() {
            "--rate" => rate = it.next().unwrap().parse().unwrap(),
            "--rounds" => rounds = it.next().unwrap().parse().unwrap(),
            "--chunk-ms" => chunk_ms = it.next().unwrap().parse().unwrap(),
            "--bench" => {}
            "--no-warm-up" => warm_up = false,
            "--gaps" => gap_mode = true,
            "--timed" => timed = true,
            other => configs.push(other.to_string()),
        }
    }
    if configs.len() == 1 {
        configs.extend(["floor".to_string(), "prof".to_string()]);
    }
    let interval = Duration::from_nanos(1_000_000_000 / rate);
    print_clock_read_cost();
    // Calls per chunk: about `chunk_ms` of CPU, from a timed first call.
    let t = prof::sampler::thread_cpu_time();
    std::hint::black_box(descend(40, 1_000_000));
    let per_call = (prof::sampler::thread_cpu_time() - t)
        .as_secs_f64()
        .max(1e-6);
    let calls = ((chunk_ms as f64 / 1e3) / per_call).round().max(1.0) as u64;
    let work = if gap_mode {
        Work::Gaps(Duration::from_millis(chunk_ms))
    } else {
        Work::Calls(calls)
    };
    // Room for every gap of a chunk: a few per sample and per kernel tick.
    let mut buffer = Vec::with_capacity((chunk_ms * (rate + 1_000) * 8 / 1_000) as usize);
    // A first session of each configuration, unmeasured: loads what a process loads once
    // (debug info parsed at the first stop, the fault handler).
    if warm_up {
        for c in &configs {
            chunk(c, interval, timed, Work::Calls(1), &mut buffer);
        }
    }
    let n = configs.len();
    let mut all: Vec<Vec<Chunk>> = vec![Vec::new(); n];
    for round in 0..rounds {
        for k in 0..n {
            let i = (round + k) % n;
            all[i].push(chunk(&configs[i], interval, timed, work, &mut buffer));
        }
    }
    let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    println!(
        "{rounds} rounds of {calls} calls (~{chunk_ms} ms of CPU) per configuration at {rate} Hz, \
         rotating order; load average after: {}",
        load.trim()
    );
    println!(
        "{:<13} {:>9} {:>9} {:>13} {:>13} {:>15} {:>11} {:>10} {:>10} {:>11} {:>13} {:>12} {:>8} {:>13}",
        "config",
        "samples",
        "CPU +%",
        "cost/sample",
        "(median ± se)",
        "process/sample",
        "in handler",
        "faults",
        "inv. csw",
        "start CPU",
        "start faults",
        "clock reads",
        "reused",
        "fresh/reused"
    );
    let base = &all[0];
    if gap_mode {
        println!(
            "{:<13} {:>9} {:>12} {:>14} {:>14} {:>18}",
            "config", "samples", "gaps/sample", "median gap", "gap time", "gap time/sample"
        );
        let base_gap: f64 = base.iter().map(|x| x.gaps.1).sum();
        for (c, chunks) in configs.iter().zip(&all) {
            let samples: f64 = chunks.iter().map(|x| x.samples).sum();
            let count: f64 = chunks.iter().map(|x| x.gaps.0).sum();
            let total: f64 = chunks.iter().map(|x| x.gaps.1).sum();
            println!(
                "{:<13} {:>9.0} {:>12.2} {:>11.2} µs {:>11.2} ms {:>15.2} µs",
                c,
                samples,
                count / samples.max(1.0),
                median(chunks.iter().map(|x| x.gaps.2).collect()) / 1e3,
                total / 1e6,
                (total - base_gap) / samples.max(1.0) / 1e3,
            );
        }
    }
    for (c, chunks) in configs.iter().zip(&all) {
        let mut total = Usage::default();
        let mut base_total = Usage::default();
        let mut samples = 0.0;
        let mut per_round = Vec::new();
        for (x, b) in chunks.iter().zip(base) {
            total.add(x.usage);
            base_total.add(b.usage);
            samples += x.samples;
            if x.samples > 0.0 {
                per_round.push((x.usage.cpu_ns - b.usage.cpu_ns) / x.samples);
            }
        }
        let handler: f64 = chunks.iter().map(|x| x.handler_ns).sum();
        let reused: f64 = chunks.iter().map(|x| x.reused).sum();
        let start = median(chunks.iter().map(|x| x.start_ns).collect());
        let k = chunks.len() as f64;
        println!(
            "{:<13} {:>9.0} {:>8.2}% {:>10.2} µs {:>7.2} ± {:<5.2} {:>12.2} µs {:>8.2} µs {:>10.1} {:>10.1} {:>8.2} ms {:>13.0} {:>11.1}% {:>7.1}% {:>13.2}",
            c,
            samples / k,
            (total.cpu_ns / base_total.cpu_ns - 1.0) * 100.0,
            (total.cpu_ns - base_total.cpu_ns) / samples.max(1.0) / 1e3,
            median(per_round.clone()) / 1e3,
            standard_error(&per_round) / 1e3,
            (total.process_ns - base_total.process_ns) / samples.max(1.0) / 1e3,
            handler / samples.max(1.0) / 1e3,
            total.minor / k,
            total.involuntary / k,
            start / 1e6,
            median(chunks.iter().map(|x| x.start_faults).collect()),
            chunks.iter().map(|x| x.clock_reads).sum::<f64>() / samples.max(1.0) * 100.0,
            reused / samples.max(1.0) * 100.0,
            chunks.iter().map(|x| x.fresh_frames).sum::<f64>() / reused.max(1.0),
        );
    }
}
