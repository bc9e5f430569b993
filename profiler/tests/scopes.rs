//! Scopes, marks and async tasks in real sessions: exact call counts, each sample's
//! innermost scope, and a tokio program whose tasks' CPU the session splits as the tasks
//! measured it themselves.

mod common;

use common::{names, serial, spin};
use prof::sampler::{current_tid, thread_cpu_time};
use prof::session::Session;
use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

#[inline(never)]
fn in_hot_scope(cpu: Duration) -> u64 {
    spin(cpu)
}

#[inline(never)]
fn in_parse_scope(cpu: Duration) -> u64 {
    spin(cpu)
}

#[inline(never)]
fn outside_scopes(cpu: Duration) -> u64 {
    spin(cpu)
}

/// One `parse` call: a `hot` scope inside, some work in `parse` only, a mark every tenth.
fn parse(item: u64) -> u64 {
    let _parse = prof::scope!("parse", item = item);
    let x = {
        let _hot = prof::scope!("hot");
        in_hot_scope(Duration::from_micros(300))
    };
    if item % 10 == 0 {
        prof::mark!("tick", item = item);
    }
    x.wrapping_add(in_parse_scope(Duration::from_micros(150)))
}

/// The name of span `i`'s site.
fn site_name(s: &Session, span: prof::session::SpanIdx) -> &str {
    s.str(s.scopes.site(s.scopes.span(span).site).name)
}

#[test]
fn scopes_count_every_call_and_samples_get_their_innermost_scope() {
    let _serial = serial();
    // Calls before and after the session are not recorded.
    parse(1);
    const THREADS: u64 = 3;
    const CALLS: u64 = 400;
    let options = prof::Options::default().interval(Duration::from_millis(1));
    let profiler = prof::Profiler::start(options).unwrap();
    let workers: Vec<_> = (0..THREADS)
        .map(|t| {
            std::thread::spawn(move || {
                for i in 0..CALLS {
                    parse(t * CALLS + i);
                    outside_scopes(Duration::from_micros(100));
                }
            })
        })
        .collect();
    for w in workers {
        w.join().unwrap();
    }
    let report = profiler.stop().unwrap();
    parse(2);
    let s = report.session();
    let scopes = &s.scopes;
    assert_eq!(scopes.dropped_events, 0);
    let mut calls: HashMap<&str, u64> = HashMap::new();
    for span in &scopes.spans {
        *calls.entry(s.str(scopes.site(span.site).name)).or_default() += 1;
    }
    assert_eq!(calls["parse"], THREADS * CALLS, "{calls:?}");
    assert_eq!(calls["hot"], THREADS * CALLS, "{calls:?}");
    let ticks = scopes
        .marks
        .iter()
        .filter(|m| s.str(scopes.site(m.site).name) == "tick")
        .count() as u64;
    assert_eq!(ticks, THREADS * CALLS / 10);
    // Each `hot` span sits in a `parse` span of its thread, lasts at least its CPU time, and
    // each `parse` span carries its item.
    let mut items = Vec::new();
    for span in &scopes.spans {
        match s.str(scopes.site(span.site).name) {
            "hot" => {
                let parent = scopes.span(span.parent.expect("hot has a parent"));
                assert_eq!(s.str(scopes.site(parent.site).name), "parse");
                assert_eq!(parent.thread, span.thread);
                assert!(parent.start_ns <= span.start_ns && span.end_ns <= parent.end_ns);
                assert!(span.duration_ns() >= 300_000, "{}", span.duration_ns());
            }
            "parse" => {
                assert!(span.parent.is_none());
                assert_eq!(span.fields.len(), 1);
                assert_eq!(s.str(span.fields[0].key), "item");
                items.push(s.str(span.fields[0].value).parse::<u64>().unwrap());
            }
            other => panic!("unexpected scope {other}"),
        }
    }
    items.sort_unstable();
    assert_eq!(items, (0..THREADS * CALLS).collect::<Vec<_>>());
    // Every sample in a function that runs inside a scope has that scope as its innermost one,
    // and none outside has any.
    let mut checked = [0u64; 3];
    for i in 0..s.samples.len() {
        let frames = names(&report, i);
        let has = |f: &str| frames.iter().any(|n| n.ends_with(f));
        let scope = s.samples.scope(i).map(|span| site_name(s, span));
        if has("in_hot_scope") {
            assert_eq!(scope, Some("hot"), "{frames:?}");
            checked[0] += 1;
        } else if has("in_parse_scope") {
            assert_eq!(scope, Some("parse"), "{frames:?}");
            checked[1] += 1;
        } else if has("outside_scopes") {
            assert_eq!(scope, None, "{frames:?}");
            checked[2] += 1;
        }
    }
    assert!(checked.iter().all(|&n| n >= 20), "{checked:?}");
}

/// One poll of a task as the task measured it: its thread, its start and end (nanoseconds
/// since the test's origin) and the thread CPU time it took.
#[derive(Clone, Copy, Debug)]
struct Measured {
    tid: u64,
    start_ns: u64,
    end_ns: u64,
    cpu_ns: u64,
}

/// Each finished task's id and measured polls.
type Finished = Arc<Mutex<Vec<(u64, Vec<Measured>)>>>;

/// A future that measures each of its polls (inside `prof::task::instrument`'s poll).
struct Measure<F: ?Sized> {
    inner: Pin<Box<F>>,
    origin: Instant,
    polls: Vec<Measured>,
    out: Finished,
    task: u64,
}

impl<F: Future<Output = ()> + ?Sized> Future for Measure<F> {
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let this = self.get_mut();
        let start_ns = this.origin.elapsed().as_nanos() as u64;
        let cpu = thread_cpu_time();
        let r = this.inner.as_mut().poll(cx);
        let cpu_ns = (thread_cpu_time() - cpu).as_nanos() as u64;
        let end_ns = this.origin.elapsed().as_nanos() as u64;
        this.polls.push(Measured {
            tid: current_tid(),
            start_ns,
            end_ns,
            cpu_ns,
        });
        if r.is_ready() {
            let polls = std::mem::take(&mut this.polls);
            this.out.lock().unwrap().push((this.task, polls));
        }
        r
    }
}

/// The tokio runtime the task tests run their tasks on: two worker threads (tasks move between
/// them), with the timer.
fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

#[test]
fn tokio_tasks_get_their_cpu_and_every_sample_of_a_poll_its_task() {
    let _serial = serial();
    let rt = runtime();
    let out = Arc::new(Mutex::new(Vec::new()));
    let options = prof::Options::default().interval(Duration::from_millis(1));
    let profiler = prof::Profiler::start(options).unwrap();
    // The test's clock against the session's: a mark between two readings, retried until
    // the two are close (the last mark is the one).
    let (origin, uncertainty) = loop {
        let before = Instant::now();
        prof::mark!("origin");
        let after = Instant::now();
        if after - before < Duration::from_micros(50) {
            break (before, (after - before).as_nanos() as u64);
        }
    };
    // By task (the id `instrument` gave it): its kind.
    let kinds: HashMap<u64, &'static str> = rt.block_on(async {
        let mut kinds = HashMap::new();
        let mut handles = Vec::new();
        let mut senders = Vec::new();
        for i in 0..300u64 {
            let kind = ["cpu", "sleep", "channel"][i as usize % 3];
            let work: Pin<Box<dyn Future<Output = ()> + Send>> = match kind {
                "cpu" => Box::pin(async move {
                    for _ in 0..6 {
                        spin(Duration::from_micros(1500 + 100 * (i % 7)));
                        tokio::task::yield_now().await;
                    }
                }),
                "sleep" => Box::pin(async move {
                    for _ in 0..4 {
                        tokio::time::sleep(Duration::from_millis(1 + i % 3)).await;
                        spin(Duration::from_micros(50));
                    }
                }),
                _ => {
                    let (tx, mut rx) = tokio::sync::mpsc::channel::<u64>(4);
                    senders.push(tx);
                    Box::pin(async move {
                        while let Some(n) = rx.recv().await {
                            spin(Duration::from_micros(20 + n % 50));
                        }
                    })
                }
            };
            let out = Arc::clone(&out);
            // The measuring future is made inside the instrumented one, so it learns its id.
            let id = Arc::new(std::sync::atomic::AtomicU64::new(0));
            let fut = prof::task::instrument(format!("{kind}-{i}"), {
                let id = Arc::clone(&id);
                async move {
                    let task = id.load(std::sync::atomic::Ordering::Relaxed);
                    Measure {
                        inner: work,
                        origin,
                        polls: Vec::new(),
                        out,
                        task,
                    }
                    .await
                }
            });
            id.store(fut.id(), std::sync::atomic::Ordering::Relaxed);
            kinds.insert(fut.id(), kind);
            handles.push(tokio::spawn(fut));
        }
        let producer = tokio::spawn(async move {
            for round in 0..10u64 {
                for tx in &senders {
                    let _ = tx.send(round).await;
                }
                tokio::time::sleep(Duration::from_millis(2)).await;
            }
        });
        for h in handles {
            h.await.unwrap();
        }
        producer.await.unwrap();
        kinds
    });
    let report = profiler.stop().unwrap();
    drop(rt);
    let s = report.session();
    let origin_ns = s
        .scopes
        .marks
        .iter()
        .rfind(|m| s.str(s.scopes.site(m.site).name) == "origin")
        .unwrap()
        .time_ns;
    let measured = out.lock().unwrap().clone();
    assert_eq!(measured.len(), 300);
    assert_eq!(s.tasks.tasks.len(), 300);
    let task_of = |i: usize| s.samples.task(i).map(|t| s.tasks.task(t).id);

    // Every sample taken inside a measured poll (the mark's uncertainty and 2 µs on each side
    // left out) on the poll's thread is attributed to the poll's task.
    let margin = uncertainty + 2_000;
    let mut polls: Vec<(u64, u64, u64, u64)> = Vec::new();
    for (task, ps) in &measured {
        for p in ps {
            let start = origin_ns + p.start_ns + margin;
            let end = (origin_ns + p.end_ns).saturating_sub(margin);
            if start < end {
                polls.push((p.tid, start, end, *task));
            }
        }
    }
    polls.sort_unstable();
    let mut inside = 0;
    for i in 0..s.samples.len() {
        let tid = s.threads[s.samples.thread[i].index()].tid;
        let t = s.samples.time_ns[i];
        let k = polls.partition_point(|&(ptid, start, _, _)| (ptid, start) <= (tid, t));
        if let Some(&(ptid, _, end, task)) = k.checked_sub(1).map(|k| &polls[k]) {
            if ptid == tid && t < end {
                if task_of(i) != Some(task) {
                    let near: Vec<_> = s
                        .tasks
                        .polls
                        .iter()
                        .filter(|p| s.threads[p.thread.index()].tid == tid)
                        .filter(|p| p.start_ns <= t + 3_000_000 && t <= p.end_ns + 3_000_000)
                        .map(|p| (s.tasks.task(p.task).id, p.start_ns, p.end_ns))
                        .collect();
                    let mine: Vec<_> = polls
                        .iter()
                        .filter(|p| p.0 == tid && p.1 <= t + 3_000_000 && t <= p.2 + 3_000_000)
                        .collect();
                    panic!("sample {i} at {t} on {tid}: {:?} for {task}; session {near:?}; measured {mine:?}; origin {origin_ns}", task_of(i));
                }
                inside += 1;
            }
        }
    }
    assert!(inside >= 300, "{inside} samples inside polls");

    // Each task's share of the tasks' CPU, sampled against measured, within 1 point; and the
    // same for each kind of task.
    let mut sampled: HashMap<u64, u64> = HashMap::new();
    for i in 0..s.samples.len() {
        if let Some(task) = task_of(i) {
            *sampled.entry(task).or_default() += s.samples.weight[i];
        }
    }
    let sampled_total: u64 = sampled.values().sum();
    let cpu: HashMap<u64, u64> = measured
        .iter()
        .map(|(task, ps)| (*task, ps.iter().map(|p| p.cpu_ns).sum()))
        .collect();
    let measured_total: u64 = cpu.values().sum();
    let share = |part: u64, whole: u64| 100.0 * part as f64 / whole.max(1) as f64;
    let mut by_kind: HashMap<&str, (u64, u64)> = HashMap::new();
    for (task, &c) in &cpu {
        let got = sampled.get(task).copied().unwrap_or(0);
        let (want, have) = (share(c, measured_total), share(got, sampled_total));
        assert!(
            (want - have).abs() <= 1.0,
            "task {task} ({}): measured {want:.2}%, sampled {have:.2}%",
            kinds[task]
        );
        let k = by_kind.entry(kinds[task]).or_default();
        k.0 += c;
        k.1 += got;
    }
    for (kind, (c, got)) in &by_kind {
        let (want, have) = (share(*c, measured_total), share(*got, sampled_total));
        assert!(
            (want - have).abs() <= 1.0,
            "{kind} tasks: measured {want:.2}%, sampled {have:.2}%"
        );
    }
    // The polls recorded by the session: every task polled at least as often as it measured.
    let mut recorded: HashMap<u64, usize> = HashMap::new();
    for p in &s.tasks.polls {
        *recorded.entry(s.tasks.task(p.task).id).or_default() += 1;
    }
    for (task, ps) in &measured {
        assert!(recorded.get(task).copied().unwrap_or(0) >= ps.len());
    }
    println!("tasks: {inside} samples inside polls; kinds (measured, sampled ns): {by_kind:?}");
}

#[inline(never)]
async fn nap_in_sleep(ms: u64) {
    tokio::time::sleep(Duration::from_millis(ms)).await
}

#[inline(never)]
async fn wait_on_channel(rx: &mut tokio::sync::mpsc::Receiver<u64>) -> Option<u64> {
    rx.recv().await
}

/// In wall mode each poll that leaves its task waiting says where: the stack at the
/// `.await`, from the leaf future (tokio's `Sleep`, the channel's `recv`) up through the task's
/// own async functions.
#[test]
fn wall_mode_polls_say_at_which_await_their_task_waited() {
    let _serial = serial();
    let rt = runtime();
    let options = prof::Options::default()
        .mode(prof::Mode::Wall)
        .interval(Duration::from_millis(1));
    let profiler = prof::Profiler::start(options).unwrap();
    rt.block_on(async {
        let mut handles = Vec::new();
        let mut senders = Vec::new();
        for i in 0..40u64 {
            if i % 2 == 0 {
                handles.push(tokio::spawn(prof::task::instrument(
                    "sleeper",
                    async move {
                        for _ in 0..5 {
                            nap_in_sleep(1 + i % 3).await;
                        }
                    },
                )));
            } else {
                let (tx, mut rx) = tokio::sync::mpsc::channel::<u64>(1);
                senders.push(tx);
                handles.push(tokio::spawn(prof::task::instrument(
                    "listener",
                    async move {
                        while let Some(n) = wait_on_channel(&mut rx).await {
                            std::hint::black_box(n);
                        }
                    },
                )));
            }
        }
        for round in 0..5u64 {
            for tx in &senders {
                tx.send(round).await.unwrap();
            }
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
        drop(senders);
        for h in handles {
            h.await.unwrap();
        }
    });
    let report = profiler.stop().unwrap();
    drop(rt);
    let s = report.session();
    // Each task's polls in time order; all but its last returned `Pending`.
    let mut by_task: HashMap<u32, Vec<&prof::session::Poll>> = HashMap::new();
    for p in &s.tasks.polls {
        by_task.entry(p.task.0).or_default().push(p);
    }
    assert_eq!(by_task.len(), 40);
    let (mut pending, mut known) = (HashMap::new(), HashMap::new());
    for (task, polls) in &mut by_task {
        polls.sort_by_key(|p| p.start_ns);
        let name = s.str(s.tasks.tasks[*task as usize].name).to_owned();
        let (leaf, mine) = match name.as_str() {
            "sleeper" => ("Sleep", "nap_in_sleep"),
            _ => ("recv", "wait_on_channel"),
        };
        for p in &polls[..polls.len() - 1] {
            *pending.entry(name.clone()).or_insert(0) += 1;
            let Some(stack) = p.waited_at else { continue };
            *known.entry(name.clone()).or_insert(0) += 1;
            let frames: Vec<&str> = s.stack_frames(stack).map(|f| s.frame_name(f)).collect();
            let at = |needle: &str| frames.iter().position(|f| f.contains(needle));
            // Leaf first: the leaf future, then the task's own function above it, and the
            // task's own future at the root: no frame of prof's wrapper or the executor.
            assert!(
                matches!((at(mine), at(leaf)), (Some(m), Some(l)) if l < m),
                "{name}: {frames:#?}"
            );
            assert!(
                frames.last().unwrap().starts_with("scopes::wall_mode")
                    && !frames
                        .iter()
                        .any(|f| f.contains("prof::") || f.contains("prof_capture::")),
                "{name}: {frames:#?}"
            );
            assert!(
                !frames.iter().any(|f| f.contains("backtrace")),
                "{frames:#?}"
            );
        }
        // The last poll finished the task: it waited nowhere.
        assert_eq!(polls.last().unwrap().waited_at, None, "{name}");
    }
    // tokio's budget may end a poll without a clone (a wake by reference): rare.
    for (name, n) in &pending {
        let k = known.get(name).copied().unwrap_or(0);
        assert!(
            k * 100 >= n * 95,
            "{name}: {k} of {n} pending polls say where"
        );
    }
    println!("pending polls with their await: {known:?} of {pending:?}");
}

#[test]
fn scopes_in_a_tight_loop_drop_no_events() {
    let _serial = serial();
    // 200k scopes at about 100k a second or more (3 µs of work each in a debug build; a busy
    // machine only makes it slower): the thread's buffer holds about 4,700, less than the
    // collector's 50 ms quiet-time sleep sees at that rate, so the collector must drain it more
    // often (before that fix, four events in ten were dropped).
    const SCOPES: u64 = 200_000;
    let profiler = prof::Profiler::start(prof::Options::default()).unwrap();
    let mut sum = 0u64;
    for i in 0..SCOPES {
        let _tight = prof::scope!("tight");
        let until = Instant::now() + Duration::from_micros(3);
        while Instant::now() < until {
            sum = sum.wrapping_add(std::hint::black_box(i));
        }
    }
    std::hint::black_box(sum);
    let report = profiler.stop().unwrap();
    let s = report.session();
    assert_eq!(s.scopes.dropped_events, 0);
    let tight = s
        .scopes
        .spans
        .iter()
        .filter(|span| s.str(s.scopes.site(span.site).name) == "tight")
        .count() as u64;
    assert_eq!(tight, SCOPES);
}
