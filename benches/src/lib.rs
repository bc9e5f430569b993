//! Shared pieces of the benchmarks in `benches/`: the synthetic profile they all measure and a
//! timing helper.

pub mod alloc_workload;

use prof::session::{FrameSpec, Session, SessionBuilder, StackId};
use std::hint::black_box;
use std::time::{Duration, Instant};

/// Samples in the synthetic profile.
pub const SAMPLES: usize = 1_000_000;
/// Distinct stacks in the synthetic profile.
pub const STACKS: usize = 50_000;
/// Distinct functions in the synthetic profile.
pub const FUNCTIONS: u64 = 5_000;
/// Threads in the synthetic profile.
pub const THREADS: u64 = 8;
/// The sampling interval of the synthetic profile.
pub const INTERVAL_NS: u64 = 1_000_000;

/// The sampler benches' workload: `depth` nested calls (never inlined, so each is a frame to
/// unwind), then `rounds` of multiply-add at the bottom.
#[inline(never)]
pub fn descend(depth: u32, rounds: u64) -> u64 {
    if depth == 0 {
        let mut x = 1u64;
        for i in 0..rounds {
            x = black_box(x.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(i));
        }
        x
    } else {
        black_box(descend(depth - 1, rounds)).wrapping_add(1)
    }
}

/// Measures and prints what one read of the thread CPU clock costs: the one system call every
/// CPU sample makes (its weight is read from that clock), the scale for the per-sample costs.
pub fn print_clock_read_cost() {
    let reads = 200_000u32;
    let t = prof::sampler::thread_cpu_time();
    for _ in 0..reads {
        black_box(prof::sampler::thread_cpu_time());
    }
    let per_read = (prof::sampler::thread_cpu_time() - t) / reads;
    println!("thread CPU clock read: {per_read:?} of CPU per call");
}

/// Runs this bench binary as a child with `args` and returns the numbers of the last line it
/// printed, which must be `count` of them (every child mode prints its figures that way).
pub fn child_numbers(args: &[&str], count: usize) -> Vec<f64> {
    let exe = std::env::current_exe().unwrap();
    let out = std::process::Command::new(exe).args(args).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    let v: Vec<f64> = text
        .lines()
        .last()
        .unwrap_or("")
        .split_whitespace()
        .filter_map(|w| w.parse().ok())
        .collect();
    assert_eq!(
        v.len(),
        count,
        "child {args:?} printed {text:?}; stderr {:?}",
        String::from_utf8_lossy(&out.stderr)
    );
    v
}

/// xorshift64*: deterministic and dependency-free.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// How samples pick their stacks.
#[derive(Clone, Copy, PartialEq)]
pub enum Stacks {
    /// Uniformly at random: the worst case for the stack column.
    Uniform,
    /// Skewed like real profiles (a few hot stacks, a long tail), and a thread often still in the
    /// stack of its previous sample.
    Skewed,
}

/// A profile shaped like a real one: a stack tree grown by extending existing stacks, frames with
/// files and lines, samples on stacks picked by `pick`, per-thread times one interval apart with
/// jitter, and jittered measured weights.
pub fn synthetic(pick: Stacks) -> Session {
    let mut rng = Rng(0x5eed_1234_abcd_ef01);
    let mut b = SessionBuilder::default();
    b.meta_mut().program = "synthetic".into();
    let frames: Vec<_> = (0..FUNCTIONS)
        .map(|f| {
            b.intern_frame(&FrameSpec {
                file: Some(&format!("src/module_{}.rs", f % 200)),
                line: Some((f * 7 % 900) as u32 + 1),
                module: Some("/usr/bin/synthetic"),
                address: Some(0x5555_0000_0000 + f * 64),
                ..FrameSpec::named(&format!("synthetic::module_{}::function_{f}", f % 200))
            })
        })
        .collect();
    let mut stacks: Vec<StackId> = vec![b.intern_stack(None, frames[0])];
    while stacks.len() < STACKS {
        let mut at = stacks[rng.below(stacks.len() as u64) as usize];
        for _ in 0..=rng.below(4) {
            let frame = frames[rng.below(FUNCTIONS) as usize];
            let next = b.intern_stack(Some(at), frame);
            if next.index() == stacks.len() {
                stacks.push(next);
                if stacks.len() == STACKS {
                    break;
                }
            }
            at = next;
        }
    }
    let threads: Vec<_> = (0..THREADS)
        .map(|t| b.thread(1000 + t, &format!("worker-{t}")))
        .collect();
    let mut clock = vec![0u64; THREADS as usize];
    let mut last = vec![stacks[0]; THREADS as usize];
    for _ in 0..SAMPLES {
        let t = rng.below(THREADS) as usize;
        clock[t] += INTERVAL_NS - 50_000 + rng.below(100_000);
        let weight = INTERVAL_NS - 100_000 + rng.below(150_000);
        let stack = match pick {
            Stacks::Uniform => stacks[rng.below(STACKS as u64) as usize],
            Stacks::Skewed if rng.below(10) < 3 => last[t],
            Stacks::Skewed => {
                // u^4 for u uniform in [0, 1): half the samples fall on the first 6% of stacks.
                let u = rng.below(1 << 20) as f64 / f64::from(1 << 20);
                stacks[(u.powi(4) * STACKS as f64) as usize]
            }
        };
        last[t] = stack;
        b.push_sample(stack, threads[t], clock[t], weight);
    }
    b.finish()
}

/// The best of `runs` timings of `f`, and its last result.
pub fn time<T>(runs: usize, mut f: impl FnMut() -> T) -> (Duration, T) {
    let mut best = Duration::MAX;
    let mut out = None;
    for _ in 0..runs {
        let start = Instant::now();
        let result = black_box(f());
        best = best.min(start.elapsed());
        out = Some(result);
    }
    (best, out.expect("at least one run"))
}

/// A duration as milliseconds with one decimal, e.g. `12.3 ms`.
pub fn ms(d: Duration) -> String {
    format!("{:.1} ms", d.as_secs_f64() * 1e3)
}

/// Prints the size of `session`'s tables, the first line of every benchmark's output.
pub fn print_shape(session: &Session) {
    println!(
        "session: {} samples, {} stacks, {} frames, {} threads",
        session.sample_count(),
        session.stacks.len(),
        session.frames.len(),
        session.threads.len()
    );
}
