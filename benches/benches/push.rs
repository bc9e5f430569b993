//! Push agent benchmark: the sampler bench's workload (a loop at stack depth 40) with no
//! profiler, under `prof::push::Pyroscope` and under pyroscope-rs 2.x (its built-in pprof-rs
//! backend), both at 100 Hz pushing to a stand-in Pyroscope on loopback that this process runs
//! (it reads each request and answers 200; no real Pyroscope). Each run is a fresh child process;
//! the three alternate, round after round, and each figure is from the round with the least
//! process CPU (the least disturbed by other load).
//!
//! Printed side by side: the workload thread's CPU and wall time over the unprofiled run's, the
//! whole process's CPU over it from before the agent starts (the agents' threads included:
//! sampling, symbolizing, encoding, sending; and the start itself, which is where pyroscope-rs
//! reads the binary's debug info: pprof-rs resolves a backtrace on the starting thread to warm
//! its symbolizer, about 0.1 s that a count from after the start would miss), the start's CPU
//! alone, the windows pushed and the request body bytes pushed per minute of run.
//!
//! Run: `cargo bench -p prof-benches --bench push` (10 s windows, about 40 s of CPU a run);
//! `-- --window-ms 2000 --seconds 10 --rounds 3` for a shorter run with shorter windows (more
//! windows a minute, so more bytes a minute: say so when quoting it).

use prof_benches::descend;
use std::io::{Read, Write};
use std::net::TcpListener;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

const KINDS: [&str; 3] = ["none", "prof", "pyroscope-rs"];

/// Calls of the depth-40 loop per second of CPU (about 1.25 ms each here).
const CALLS_PER_SECOND: f64 = 800.0;

/// The child: runs `calls` of the workload under agent `kind` pushing to `url` with `window`,
/// and prints `thread_cpu_s wall_s process_cpu_s gap_ms start_cpu_s` (measured before the agent
/// stops; the workload thread's CPU and wall time from after the agent started, the process's
/// CPU from before it started; `gap_ms`: prof's unsampled time between two windows, on average,
/// 0 for the others; `start_cpu_s`: the starting thread's CPU in the agent's start).
fn child(kind: &str, window: Duration, calls: u64, url: &str) {
    enum Running {
        None,
        Prof(prof::push::Agent),
        Pyroscope(Box<pyroscope::PyroscopeAgent<pyroscope::pyroscope::PyroscopeAgentRunning>>),
    }
    let (start_cpu0, proc0) = (
        prof::sampler::thread_cpu_time(),
        prof::sampler::process_cpu_time(),
    );
    let running = match kind {
        "none" => Running::None,
        "prof" => Running::Prof(
            prof::push::Pyroscope::new(url)
                .service("bench")
                .frequency(100)
                .window(window)
                .start()
                .unwrap(),
        ),
        "pyroscope-rs" => {
            use pyroscope::backend::{pprof_backend, BackendConfig, PprofConfig};
            let backend = pprof_backend(PprofConfig { sample_rate: 100 }, BackendConfig::default());
            let agent = pyroscope::pyroscope::PyroscopeAgentBuilder::new(
                url,
                "bench",
                100,
                "pyroscope-rs",
                "2",
                backend,
            )
            .upload_interval(window)
            .build()
            .unwrap();
            Running::Pyroscope(Box::new(agent.start().unwrap()))
        }
        other => panic!("unknown kind {other}"),
    };
    let (cpu0, wall0) = (prof::sampler::thread_cpu_time(), Instant::now());
    let start_cpu = cpu0 - start_cpu0;
    let mut x = 0;
    for _ in 0..calls {
        x ^= descend(40, 1_000_000);
    }
    std::hint::black_box(x);
    let (cpu, proc, wall) = (
        prof::sampler::thread_cpu_time() - cpu0,
        prof::sampler::process_cpu_time() - proc0,
        wall0.elapsed(),
    );
    let gap_ms = match running {
        Running::None => 0.0,
        Running::Prof(agent) => {
            let stats = agent.stop();
            assert_eq!(stats.failed + stats.dropped, 0, "{stats:?}");
            stats.unsampled.as_secs_f64() * 1e3 / (stats.windows.max(2) - 1) as f64
        }
        Running::Pyroscope(agent) => {
            agent.stop().unwrap().shutdown();
            0.0
        }
    };
    println!(
        "{} {} {} {gap_ms} {}",
        cpu.as_secs_f64(),
        wall.as_secs_f64(),
        proc.as_secs_f64(),
        start_cpu.as_secs_f64()
    );
}

/// The stand-in: answers every request 200 and counts requests and body bytes.
fn stand_in() -> (String, Arc<AtomicU64>, Arc<AtomicU64>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let (requests, bytes) = (Arc::new(AtomicU64::new(0)), Arc::new(AtomicU64::new(0)));
    let (r, b) = (Arc::clone(&requests), Arc::clone(&bytes));
    std::thread::spawn(move || {
        for conn in listener.incoming() {
            let Ok(mut conn) = conn else { continue };
            let mut data = Vec::new();
            let mut buf = [0u8; 65536];
            let mut need = None;
            while let Ok(n) = conn.read(&mut buf) {
                if n == 0 {
                    break;
                }
                data.extend_from_slice(&buf[..n]);
                if need.is_none() {
                    if let Some(end) = data.windows(4).position(|w| w == b"\r\n\r\n") {
                        let head = String::from_utf8_lossy(&data[..end]).to_ascii_lowercase();
                        let len: usize = head
                            .lines()
                            .find_map(|l| l.strip_prefix("content-length:"))
                            .and_then(|v| v.trim().parse().ok())
                            .unwrap_or(0);
                        need = Some(end + 4 + len);
                    }
                }
                if need.is_some_and(|n| data.len() >= n) {
                    let body =
                        need.unwrap() - data.windows(4).position(|w| w == b"\r\n\r\n").unwrap() - 4;
                    r.fetch_add(1, Ordering::Relaxed);
                    b.fetch_add(body as u64, Ordering::Relaxed);
                    let _ = conn.write_all(
                        b"HTTP/1.1 200 OK\r\ncontent-length: 0\r\nconnection: close\r\n\r\n",
                    );
                    break;
                }
            }
        }
    });
    (url, requests, bytes)
}

#[derive(Clone, Copy)]
struct Run {
    cpu: f64,
    wall: f64,
    process: f64,
    requests: u64,
    bytes_per_minute: f64,
    gap_ms: f64,
    /// The agent's start, on the starting thread (CPU seconds).
    start: f64,
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if let Some(i) = args.iter().position(|a| a == "--child") {
        let window = Duration::from_millis(args[i + 2].parse().unwrap());
        child(
            &args[i + 1],
            window,
            args[i + 3].parse().unwrap(),
            &args[i + 4],
        );
        return;
    }
    if args.iter().any(|a| a == "--list") {
        return;
    }
    let arg = |name: &str, default: f64| {
        args.iter()
            .position(|a| a == name)
            .map_or(default, |i| args[i + 1].parse().unwrap())
    };
    let rounds = arg("--rounds", 3.0) as usize;
    let window_ms = arg("--window-ms", 10_000.0) as u64;
    let calls = (arg("--seconds", 40.0) * CALLS_PER_SECOND) as u64;
    let (url, requests, bytes) = stand_in();
    println!(
        "workload: {calls} calls of the depth-40 loop; agents at 100 Hz, {window_ms} ms windows, pushing to a stand-in at {url}; {rounds} rounds"
    );
    let mut best: Vec<Option<Run>> = vec![None; KINDS.len()];
    for round in 0..rounds {
        for (k, kind) in KINDS.iter().enumerate() {
            let (r0, b0) = (
                requests.load(Ordering::SeqCst),
                bytes.load(Ordering::SeqCst),
            );
            let started = Instant::now();
            let v = prof_benches::child_numbers(
                &[
                    "--child",
                    kind,
                    &window_ms.to_string(),
                    &calls.to_string(),
                    &url,
                ],
                5,
            );
            let elapsed = started.elapsed().as_secs_f64();
            let run = Run {
                cpu: v[0],
                wall: v[1],
                process: v[2],
                requests: requests.load(Ordering::SeqCst) - r0,
                bytes_per_minute: (bytes.load(Ordering::SeqCst) - b0) as f64 * 60.0 / elapsed,
                gap_ms: v[3],
                start: v[4],
            };
            println!(
                "round {round} {kind:>12}: thread CPU {:.3} s, wall {:.3} s, process CPU {:.3} s, start {:.1} ms, {} requests, {:.0} bytes/min, {:.1} ms unsampled between windows",
                run.cpu, run.wall, run.process, run.start * 1e3, run.requests, run.bytes_per_minute, run.gap_ms
            );
            if best[k].is_none_or(|b| run.process < b.process) {
                best[k] = Some(run);
            }
        }
    }
    let base = best[0].unwrap();
    println!();
    println!(
        "| agent | workload thread CPU | wall | process CPU, start included | start | requests | bytes pushed / min | unsampled between windows |"
    );
    println!("|---|---|---|---|---|---|---|---|");
    for (kind, run) in KINDS.iter().zip(&best) {
        let run = run.unwrap();
        let pct = |v: f64, b: f64| format!("{:+.2}%", (v / b - 1.0) * 100.0);
        println!(
            "| {kind} | {:.3} s ({}) | {:.3} s ({}) | {:.3} s ({}) | {:.1} ms | {} | {:.0} | {} |",
            run.cpu,
            pct(run.cpu, base.cpu),
            run.wall,
            pct(run.wall, base.wall),
            run.process,
            pct(run.process, base.process),
            run.start * 1e3,
            run.requests,
            run.bytes_per_minute,
            if *kind == "prof" {
                format!("{:.1} ms", run.gap_ms)
            } else {
                "-".into()
            }
        );
    }
}
