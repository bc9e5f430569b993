//! Allocation-mode benchmark: an allocation-heavy workload (JSON parsed into `serde_json` values,
//! then small `String`s and `Vec`s rebuilt from them, all dropped) in three configurations, each
//! run in its own child process: the system allocator as it is (`alloc-plain`), the same under
//! `prof::alloc::Sampling` with no session (`alloc-sampled`, idle), and with an allocation
//! session at the default 512 KiB interval. A session starts a collector thread, and glibc's
//! malloc takes its arena lock on every call once a process has a second thread (a
//! single-threaded process skips it), so both the plain and the idle-wrapper runs are also
//! measured with an idle thread beside the workload: the session compares with those. The configurations run round-robin, seven rounds;
//! wall time and the workload thread's CPU time are each the least of the rounds (the run least
//! disturbed by other load), compared with the plain run's.
//!
//! Printed side by side: those, peak RSS (report building included), samples taken, the blocks
//! listed in the in-use table at stop, and the table's size.
//!
//! Run: `cargo bench -p prof-benches --bench alloc`.

use std::process::Command;

const ROUNDS: usize = 7;
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
    let configs = ["none", "idle", "none+thread", "idle+thread", "session"];
    let mut runs: [Vec<Run>; 5] = Default::default();
    for round in 0..ROUNDS {
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
    let least = |i: usize, f: fn(&Run) -> u64| runs[i].iter().map(f).min().unwrap_or(0);
    let pct = |x: u64, b: u64| (x as f64 / b as f64 - 1.0) * 100.0;
    println!(
        "| configuration | wall (least) | wall +% | thread CPU (least) | CPU +% | peak RSS | samples | blocks in use at stop |"
    );
    println!("|---|---|---|---|---|---|---|---|");
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
        let (base_wall, base_cpu) = (least(base, |r| r.wall_ns), least(base, |r| r.cpu_ns));
        let (wall, cpu) = (least(i, |r| r.wall_ns), least(i, |r| r.cpu_ns));
        let last = runs[i].last().copied().unwrap_or_default();
        println!(
            "| {name} | {:.3} s | {:+.2}% | {:.3} s | {:+.2}% | {:.1} MiB | {} | {} |",
            wall as f64 / 1e9,
            pct(wall, base_wall),
            cpu as f64 / 1e9,
            pct(cpu, base_cpu),
            least(i, |r| r.rss_kib) as f64 / 1024.0,
            last.samples,
            last.in_use
        );
    }
    println!(
        "in-use table: {} KiB, allocated once per session whatever the workload",
        prof::alloc::in_use_table_bytes() / 1024
    );
}
