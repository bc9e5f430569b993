//! The cost of an instrumented scope (begin and end), side by side in one run: `prof::scope!`
//! with no session (one relaxed load) and during a session, `puffin::profile_scope!` with
//! `puffin::set_scopes_on(true)`, and `tracing::info_span!(..).entered()` under a
//! `tracing_subscriber::registry()` (which records every span), plus an empty loop.
//!
//! Each configuration runs in chunks of [`CHUNK`] scopes (fewer than prof's per-thread buffer
//! holds, so no event is dropped: the bench checks the session's `dropped_events`), between
//! which the recorders drain (prof's buffers, puffin's frame), in rotating order, round after
//! round; a session runs (at 20 Hz, so that its samples barely touch the loop) around each
//! round's chunks of the enabled prof configuration. Printed: the median over rounds of each
//! round's median chunk, in nanoseconds per scope (a begin and an end).
//!
//! Then the cost of a task's poll that returns `Pending` (await stacks), the same
//! way in chunks of [`POLL_CHUNK`] polls: a future that clones its waker [`NEST`] calls below its
//! `poll` (as a leaf future does at its `.await`), polled bare, wrapped by
//! `prof::task::instrument` with no session, during a CPU session (a poll's begin and end
//! recorded) and during a wall session (the waker's clone also walks the stack up to the poll,
//! and the stack is recorded), alone and while a second thread polls the same way.
//!
//! Run: `cargo bench -p prof-benches --bench scopes -- [--rounds N]` (default 30).

use std::future::Future;
use std::hint::black_box;
use std::pin::{pin, Pin};
use std::task::{Context, Poll, Waker};
use std::time::{Duration, Instant};

/// Scopes per chunk: 4,000 begins and ends are 28,000 words of prof's 32,768-word buffer.
const CHUNK: u64 = 4_000;

fn empty(n: u64) {
    for i in 0..n {
        black_box(i);
    }
}

fn prof_scope(n: u64) {
    for i in 0..n {
        let _g = prof::scope!("bench");
        black_box(i);
    }
}

fn puffin_scope(n: u64) {
    for i in 0..n {
        puffin::profile_scope!("bench");
        black_box(i);
    }
}

fn tracing_span(n: u64) {
    for i in 0..n {
        let _g = tracing::info_span!("bench").entered();
        black_box(i);
    }
}

/// A configuration's name and loop.
type Config = (&'static str, fn(u64));

/// Nanoseconds per scope of one chunk of `f`.
fn chunk(f: fn(u64)) -> f64 {
    let t = Instant::now();
    f(CHUNK);
    t.elapsed().as_nanos() as f64 / CHUNK as f64
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() {
    let mut rounds = 30;
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        if a == "--rounds" {
            rounds = args.next().and_then(|n| n.parse().ok()).unwrap_or(rounds);
        }
    }
    puffin::set_scopes_on(true);
    let subscriber = tracing_subscriber::registry();
    let _default = tracing::subscriber::set_default(subscriber);
    let configs: [Config; 5] = [
        ("empty loop", empty),
        ("prof::scope! (no session)", prof_scope),
        ("prof::scope! (session)", prof_scope),
        ("puffin::profile_scope!", puffin_scope),
        ("tracing span (registry)", tracing_span),
    ];
    let mut times: Vec<Vec<f64>> = vec![Vec::new(); configs.len()];
    // A session at a long interval: its samples barely touch the loop.
    let options = prof::Options::default().interval(Duration::from_millis(50));
    let mut dropped = 0;
    let mut recorded = 0;
    for round in 0..rounds + 1 {
        for k in 0..configs.len() {
            let k = (k + round) % configs.len();
            let (name, f) = configs[k];
            let session = (k == 2).then(|| prof::Profiler::start(options.clone()).unwrap());
            let mut best = Vec::new();
            for _ in 0..5 {
                best.push(chunk(f));
                // The recorders drain between chunks (prof's collector does every 20 ms at most;
                // on a busy machine it can be late, so the bench drains itself).
                if k == 3 {
                    puffin::GlobalProfiler::lock().new_frame();
                }
                if session.is_some() {
                    prof::diagnostics::drain_scopes();
                }
            }
            if let Some(session) = session {
                let report = session.stop().unwrap();
                let scopes = &report.session().scopes;
                dropped += scopes.dropped_events;
                recorded += scopes.spans.len();
            }
            // Round 0 warms up.
            if round > 0 {
                times[k].push(median(&mut best));
            }
            let _ = name;
        }
    }
    println!("| scope | ns per scope (median of {rounds} rounds) |");
    println!("|---|---:|");
    for (k, (name, _)) in configs.iter().enumerate() {
        println!("| {name} | {:.2} |", median(&mut times[k]));
    }
    println!("prof: {recorded} scopes recorded, {dropped} events dropped");
    assert_eq!(dropped, 0, "the chunks must fit prof's buffer");
    polls(rounds);
}

/// Polls per chunk: a wall session's poll writes a begin and an end (3 words each) and an
/// await stack (2 words and an address per frame, about 20 here): 1,000 of them fit a thread's
/// 32,768-word buffer.
const POLL_CHUNK: u64 = 1_000;

/// How many calls below its `poll` the bench's future clones its waker.
const NEST: u32 = 8;

/// A future that is never ready: each poll clones its waker [`NEST`] calls down.
struct Parks;

impl Future for Parks {
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        register(cx, NEST);
        Poll::Pending
    }
}

/// Clones the waker `depth` calls down, as a leaf future hands it to what will wake it.
#[inline(never)]
fn register(cx: &mut Context<'_>, depth: u32) {
    if depth == 0 {
        drop(black_box(cx.waker().clone()));
    } else {
        register(cx, depth - 1);
        black_box(depth);
    }
}

/// Polls `future` `n` times with a waker that does nothing: nanoseconds per poll.
fn poll_n(future: Pin<&mut impl Future>, n: u64) -> f64 {
    let mut future = future;
    let mut cx = Context::from_waker(Waker::noop());
    let t = Instant::now();
    for _ in 0..n {
        black_box(future.as_mut().poll(&mut cx).is_pending());
    }
    t.elapsed().as_nanos() as f64 / n as f64
}

fn bare(n: u64) -> f64 {
    poll_n(pin!(Parks), n)
}

fn instrumented(n: u64) -> f64 {
    poll_n(pin!(prof::task::instrument("bench", Parks)), n)
}

/// [`instrumented`] on two threads at once (the second's start not timed): their mean.
fn instrumented_beside_another(n: u64) -> f64 {
    let start = std::sync::Barrier::new(2);
    std::thread::scope(|scope| {
        let other = scope.spawn(|| {
            start.wait();
            instrumented(n)
        });
        start.wait();
        let mine = instrumented(n);
        (mine + other.join().unwrap()) / 2.0
    })
}

/// A configuration's name, its timed loop, and the session around its chunks.
type PollConfig<'a> = (&'static str, fn(u64) -> f64, Option<&'a prof::Options>);

/// The polls' table: each configuration's median over `rounds` rounds of its median chunk.
fn polls(rounds: usize) {
    let cpu = prof::Options::default().interval(Duration::from_millis(50));
    let wall = cpu.clone().mode(prof::Mode::Wall);
    let configs: [PollConfig; 6] = [
        ("bare future", bare, None),
        ("instrument, no session", instrumented, None),
        ("instrument, cpu session", instrumented, Some(&cpu)),
        ("instrument, wall session", instrumented, Some(&wall)),
        (
            "instrument, no session, 2 threads",
            instrumented_beside_another,
            None,
        ),
        (
            "instrument, wall session, 2 threads",
            instrumented_beside_another,
            Some(&wall),
        ),
    ];
    let mut times: Vec<Vec<f64>> = vec![Vec::new(); configs.len()];
    let (mut dropped, mut polls, mut waits) = (0, 0, 0);
    for round in 0..rounds + 1 {
        for k in 0..configs.len() {
            let k = (k + round) % configs.len();
            let (_, f, options) = configs[k];
            let session = options.map(|o| prof::Profiler::start(o.clone()).unwrap());
            let mut best = Vec::new();
            for _ in 0..5 {
                best.push(f(POLL_CHUNK));
                if session.is_some() {
                    prof::diagnostics::drain_scopes();
                }
            }
            if let Some(session) = session {
                let report = session.stop().unwrap();
                let s = report.session();
                dropped += s.scopes.dropped_events;
                polls += s.tasks.polls.len();
                waits += s
                    .tasks
                    .polls
                    .iter()
                    .filter(|p| p.waited_at.is_some())
                    .count();
            }
            if round > 0 {
                times[k].push(median(&mut best));
            }
        }
    }
    println!();
    println!("| Pending poll, clone {NEST} calls down | ns per poll (median of {rounds} rounds) |");
    println!("|---|---:|");
    for (k, (name, _, _)) in configs.iter().enumerate() {
        println!("| {name} | {:.1} |", median(&mut times[k]));
    }
    println!("prof: {polls} polls recorded ({waits} with their await), {dropped} events dropped");
    assert_eq!(dropped, 0, "the chunks must fit prof's buffer");
}
