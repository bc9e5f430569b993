//! Allocation-mode benchmark: an allocation-heavy workload (JSON parsed into `serde_json` values,
//! then small `String`s and `Vec`s rebuilt from them, all dropped) in three configurations, each
//! run in its own child process: the system allocator as it is (`alloc-plain`), the same under
//! `prof::alloc::Sampling` with no session (`alloc-sampled`, idle), and with an allocation
//! session at the default 512 KiB interval. A session starts a collector thread, and glibc's
//! malloc takes its arena lock on every call once a process has a second thread (a
//! single-threaded process skips it), so both the plain and the idle-wrapper runs are also
//! measured with an idle thread beside the workload: the session compares with those. The
//! configurations run round-robin (seven rounds, or `--rounds N`). Wall time and the workload
//! thread's CPU time are each the median of the rounds, compared with the plain run's; the least
//! of the rounds swung by 7% between identical configurations here, the medians by about 2%.
//! Each round also gives a ratio of two runs made back to back (a configuration against its
//! plain run in the same round), which cancels the drift of the machine's load over the rounds:
//! the median of those ratios is printed as well, with the range of the middle half.
//!
//! Separate processes differ by 10 to 20% from run to run on these VMs, more than the 3% target, so
//! the bench then measures the session's cost inside one process as the sampler's cost bench
//! does (`alloc-sampled PASSES chunks ROUNDS`, [`prof_benches::alloc_workload::chunks`]): with an
//! idle thread beside, chunks of four passes alternate between no session and a session of their
//! own, and each round's session chunk is compared with its unprofiled neighbour (the wrapper
//! with no session, which costs nothing measurable against the system allocator: the second
//! row). Printed: the median of the rounds' ratios, the middle half, the ratio of the totals.
//!
//! Printed side by side: those, peak RSS (report building included), samples taken, the blocks
//! listed in the in-use table at stop, and the table's size.
//!
//! Run: `cargo bench -p prof-benches --bench alloc` (`-- --rounds 15` for a tighter figure).

use std::process::Command;

const ROUNDS: usize = 7;

/// The median of `values` (the mean of the middle two for an even count); 0 for none.
fn median(values: &[f64]) -> f64 {
    quantile(values, 0.5)
}

/// The `q` quantile of `values`, interpolating between neighbours; 0 for none.
fn quantile(values: &[f64], q: f64) -> f64 {
    let mut v = values.to_vec();
    v.sort_by(f64::total_cmp);
    if v.is_empty() {
        return 0.0;
    }
    let at = q * (v.len() - 1) as f64;
    let (low, high) = (at.floor() as usize, at.ceil() as usize);
    v[low] + (v[high] - v[low]) * (at - low as f64)
}
/// Passes over the 20,000-record document per run (about 2 s in release here).
const PASSES: &str = "40";

#[derive(Clone, Copy, Debug, Default)]
struct Run {
    wall_ns: u64,
    cpu_ns: u64,
    rss_kib: u64,
    samples: u64,
    in_use: u64,
}

fn run(config: &str) -> Run {
    let mut cmd = match config {
        "none" | "none+thread" => Command::new(env!("CARGO_BIN_EXE_alloc-plain")),
        _ => Command::new(env!("CARGO_BIN_EXE_alloc-sampled")),
    };
    cmd.arg(PASSES);
    match config {
        "session" => {
            cmd.arg("session");
        }
        "none+thread" | "idle+thread" => {
            cmd.arg("thread");
        }
        _ => {}
    }
    let out = cmd.output().expect("the child runs");
    assert!(out.status.success(), "{config}: {out:?}");
    let text = String::from_utf8_lossy(&out.stdout);
    let f: Vec<u64> = text
        .split_whitespace()
        .map(|w| w.parse().expect("numbers"))
        .collect();
    Run {
        wall_ns: f[0],
        cpu_ns: f[1],
        rss_kib: f[2],
        samples: f[3],
        in_use: f[4],
    }
}

fn main() {
    let mut rounds = ROUNDS;
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        if arg == "--rounds" {
            rounds = args
                .next()
                .and_then(|n| n.parse().ok())
                .filter(|&n| n > 0)
                .expect("--rounds takes a positive count");
        }
    }
    let configs = ["none", "idle", "none+thread", "idle+thread", "session"];
    let mut runs: [Vec<Run>; 5] = Default::default();
    for round in 0..rounds {
        for (i, config) in configs.iter().enumerate() {
            let r = run(config);
            eprintln!(
                "round {round} {config}: wall {:.3} s, cpu {:.3} s",
                r.wall_ns as f64 / 1e9,
                r.cpu_ns as f64 / 1e9
            );
            runs[i].push(r);
        }
    }
    let mid = |i: usize, f: fn(&Run) -> u64| {
        median(&runs[i].iter().map(|r| f(r) as f64).collect::<Vec<_>>())
    };
    let pct = |x: f64, b: f64| (x / b - 1.0) * 100.0;
    // Per round: this configuration's thread CPU against its plain run's in the same round.
    let paired = |i: usize, base: usize| -> Vec<f64> {
        runs[i]
            .iter()
            .zip(&runs[base])
            .map(|(r, b)| pct(r.cpu_ns as f64, b.cpu_ns as f64))
            .collect()
    };
    println!("{rounds} rounds, medians");
    println!(
        "| configuration | wall | wall +% | thread CPU | CPU +% | CPU +%, paired by round (middle half) | peak RSS | samples | blocks in use at stop |"
    );
    println!("|---|---|---|---|---|---|---|---|---|");
    let names = [
        "system allocator, no wrapper",
        "wrapper, no session",
        "no wrapper, an idle thread beside",
        "wrapper, no session, an idle thread beside",
        "wrapper, alloc session (512 KiB; its collector thread beside)",
    ];
    for (i, name) in names.iter().enumerate() {
        // Single-threaded runs against the plain one; runs with a second thread against the
        // plain run with an idle thread.
        let base = if i < 2 { 0 } else { 2 };
        let (base_wall, base_cpu) = (mid(base, |r| r.wall_ns), mid(base, |r| r.cpu_ns));
        let (wall, cpu) = (mid(i, |r| r.wall_ns), mid(i, |r| r.cpu_ns));
        let ratios = paired(i, base);
        let last = runs[i].last().copied().unwrap_or_default();
        println!(
            "| {name} | {:.3} s | {:+.2}% | {:.3} s | {:+.2}% | {:+.2}% ({:+.2} to {:+.2}) | {:.1} MiB | {} | {} |",
            wall / 1e9,
            pct(wall, base_wall),
            cpu / 1e9,
            pct(cpu, base_cpu),
            median(&ratios),
            quantile(&ratios, 0.25),
            quantile(&ratios, 0.75),
            mid(i, |r| r.rss_kib) / 1024.0,
            last.samples,
            last.in_use
        );
    }
    println!(
        "in-use table: {} KiB, allocated once per session whatever the workload",
        prof::alloc::in_use_table_bytes() / 1024
    );
    in_process(rounds * 4);
}

/// The session's cost in one process: `rounds` pairs of chunks, each session chunk against the
/// unprofiled chunk beside it.
fn in_process(rounds: usize) {
    let out = Command::new(env!("CARGO_BIN_EXE_alloc-sampled"))
        .args(["4", "chunks", &rounds.to_string()])
        .output()
        .expect("the child runs");
    assert!(out.status.success(), "chunks: {out:?}");
    let rows: Vec<[f64; 3]> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|line| {
            let f: Vec<f64> = line
                .split_whitespace()
                .map(|w| w.parse().expect("numbers"))
                .collect();
            [f[0], f[1], f[2]]
        })
        .collect();
    let ratios: Vec<f64> = rows.iter().map(|r| (r[1] / r[0] - 1.0) * 100.0).collect();
    let (plain, session): (f64, f64) = rows
        .iter()
        .map(|r| (r[0], r[1]))
        .fold((0.0, 0.0), |a, b| (a.0 + b.0, a.1 + b.1));
    println!(
        "in one process, {rounds} rounds of four passes a chunk, an idle thread beside: an alloc \
         session's chunk costs {:+.2}% thread CPU over its unprofiled neighbour's (median; middle \
         half {:+.2} to {:+.2}; totals {:+.2}%), {:.0} samples a chunk",
        median(&ratios),
        quantile(&ratios, 0.25),
        quantile(&ratios, 0.75),
        (session / plain - 1.0) * 100.0,
        median(&rows.iter().map(|r| r[2]).collect::<Vec<_>>()),
    );
}
