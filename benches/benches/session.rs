//! Session files and aggregation at scale: 1M samples over 50k distinct stacks, 8 threads.
//!
//! `cargo bench -p prof-benches --bench session` prints the size per sample (packed, gzipped, and
//! the same columns as plain JSON number arrays for comparison) and the time to write, read,
//! aggregate, rank and lay out. Times are the best of a few runs.

use flate2::write::GzEncoder;
use flate2::Compression;
use prof::aggregate::{CallTree, Filter, SortBy, StackWeights};
use prof::session::{self, FrameSpec, Session, SessionBuilder, StackId};
use std::hint::black_box;
use std::io::Write as _;
use std::time::{Duration, Instant};

const SAMPLES: usize = 1_000_000;
const STACKS: usize = 50_000;
const FUNCTIONS: u64 = 5_000;
const THREADS: u64 = 8;
const INTERVAL_NS: u64 = 1_000_000;

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
enum Stacks {
    /// Uniformly at random: the worst case for the stack column.
    Uniform,
    /// Skewed like real profiles (a few hot stacks, a long tail), and a thread often still in the
    /// stack of its previous sample.
    Skewed,
}

/// A profile shaped like a real one: a stack tree grown by extending existing stacks, frames with
/// files and lines, samples on stacks picked by `pick`, per-thread times one interval apart with
/// jitter, and jittered measured weights.
fn synthetic(pick: Stacks) -> Session {
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
fn time<T>(runs: usize, mut f: impl FnMut() -> T) -> (Duration, T) {
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

/// The sample columns as plain JSON arrays of per-thread deltas: the encoding not chosen.
fn plain_json_size(s: &Session) -> usize {
    let mut prev = vec![(0i64, 0i64, 0i64); s.threads.len()];
    let (mut stack, mut time, mut weight) = (Vec::new(), Vec::new(), Vec::new());
    for i in 0..s.samples.len() {
        let p = &mut prev[s.samples.thread[i].index()];
        let now = (
            i64::from(s.samples.stack[i].0),
            s.samples.time_ns[i] as i64,
            s.samples.weight[i] as i64,
        );
        stack.push(now.0 - p.0);
        time.push(now.1 - p.1);
        weight.push(now.2 - p.2);
        *p = now;
    }
    let thread: Vec<u32> = s.samples.thread.iter().map(|t| t.0).collect();
    serde_json::to_vec(&(stack, thread, time, weight))
        .expect("serializes")
        .len()
}

fn ms(d: Duration) -> String {
    format!("{:.1} ms", d.as_secs_f64() * 1e3)
}

fn main() {
    let skewed = synthetic(Stacks::Skewed);
    let mut skewed_json = Vec::new();
    session::write(&skewed, &mut skewed_json).expect("writes");
    let session = synthetic(Stacks::Uniform);
    let n = session.sample_count() as f64;
    println!(
        "session: {} samples, {} stacks, {} frames, {} threads",
        session.sample_count(),
        session.stacks.len(),
        session.frames.len(),
        session.threads.len()
    );

    let (write_time, json) = time(3, || {
        let mut out = Vec::with_capacity(16 << 20);
        session::write(&session, &mut out).expect("writes");
        out
    });
    let gzip = |level| {
        let mut gz = GzEncoder::new(Vec::new(), level);
        gz.write_all(&json).expect("compresses");
        gz.finish().expect("compresses")
    };
    let (gz_time, gz) = time(1, || gzip(Compression::default()));
    let (gz_fast_time, gz_fast) = time(1, || gzip(Compression::fast()));
    let plain = plain_json_size(&session);
    let (read_time, back) = time(3, || session::read(&json[..]).expect("reads"));
    assert!(back == session, "the session round-trips");
    let (read_gz_time, _) = time(3, || session::read(&gz[..]).expect("reads"));

    let (weights_time, weights) = time(5, || StackWeights::compute(&session, &Filter::all()));
    let (tree_time, tree) = time(5, || CallTree::build(&session, &weights, &[]));
    let (top_time, top) = time(5, || tree.top(&session, 10, SortBy::SelfWeight));
    let total = tree.total_weight(tree.root());
    let (flame_time, rects) = time(5, || tree.flame(tree.root(), total / 2000));
    let (flame_all_time, all_rects) = time(5, || tree.flame(tree.root(), 0));
    assert_eq!(top.len(), 10);

    println!(
        "file size (uncompressed): {} bytes, {:.2} bytes/sample",
        json.len(),
        json.len() as f64 / n
    );
    println!(
        "file size (gzip level 6): {} bytes, {:.2} bytes/sample",
        gz.len(),
        gz.len() as f64 / n
    );
    println!(
        "file size (gzip level 1): {} bytes, {:.2} bytes/sample",
        gz_fast.len(),
        gz_fast.len() as f64 / n
    );
    println!(
        "file size with skewed stacks (uncompressed): {} bytes, {:.2} bytes/sample",
        skewed_json.len(),
        skewed_json.len() as f64 / n
    );
    println!(
        "sample columns as plain JSON arrays instead: {} bytes, {:.2} bytes/sample",
        plain,
        plain as f64 / n
    );
    println!("write (to memory): {}", ms(write_time));
    println!("gzip the written file, level 6: {}", ms(gz_time));
    println!("gzip the written file, level 1: {}", ms(gz_fast_time));
    println!("read + check (.json): {}", ms(read_time));
    println!("read + check (.json.gz): {}", ms(read_gz_time));
    println!("sum samples per stack (1M samples): {}", ms(weights_time));
    println!("build call tree ({} nodes): {}", tree.len(), ms(tree_time));
    println!("top-10 by self: {}", ms(top_time));
    println!(
        "flame layout, min width 1/2000: {} ({} rects)",
        ms(flame_time),
        rects.len()
    );
    println!(
        "flame layout, everything: {} ({} rects)",
        ms(flame_all_time),
        all_rects.len()
    );
}
