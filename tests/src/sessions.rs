//! Sessions made in code for the end-to-end tests, with known shapes and weights.

use prof::session::{
    FrameSpec, Metadata, Mode, Poll, Session, SessionBuilder, SiteKind, Span, TaskIdx,
};
use std::path::Path;

/// One millisecond in nanoseconds: the weight of each sample in [`two_threads`].
pub const MS: u64 = 1_000_000;

/// A small CPU profile of a program `demo-app` with two threads:
///
/// - `main`: `main;compute;hot_loop` ×50, `main;compute;cold_path` ×10, `main;compute` ×5,
///   `main;parse;tokenize` ×20, `main;parse;alloc::vec::Vec<T>::push` ×8
/// - `worker`: `worker_main;hash_block` ×30, `worker_main;compute;hot_loop` ×7
///
/// Every sample weighs [`MS`]. `hot_loop` lives at `src/hot.rs:42`.
pub fn two_threads() -> Session {
    let mut b = SessionBuilder::new(Metadata {
        program: "demo-app".into(),
        start_time_ns: Some(1_795_341_600_000_000_000), // 2026-11-22T10:00:00Z
        duration_ns: 130 * MS,
        mode: Mode::Cpu,
        requested_interval_ns: MS,
        achieved_interval_ns: MS,
        timer: "perf_event".into(),
        dropped_samples: 3,
        os: "linux".into(),
        arch: "x86_64".into(),
        ..Metadata::default()
    });
    let main_thread = b.thread(100, "main");
    let worker = b.thread(101, "worker");
    let stacks: [(&[&str], u32, _); 7] = [
        (&["main", "compute", "hot_loop"], 50, main_thread),
        (&["main", "compute", "cold_path"], 10, main_thread),
        (&["main", "compute"], 5, main_thread),
        (&["main", "parse", "tokenize"], 20, main_thread),
        (
            &["main", "parse", "alloc::vec::Vec<T>::push"],
            8,
            main_thread,
        ),
        (&["worker_main", "hash_block"], 30, worker),
        (&["worker_main", "compute", "hot_loop"], 7, worker),
    ];
    let mut time = 0;
    for (names, count, thread) in stacks {
        let frames: Vec<_> = names
            .iter()
            .map(|&name| {
                let mut spec = FrameSpec::named(name);
                spec.file = Some(if name == "hot_loop" {
                    "src/hot.rs"
                } else {
                    "src/main.rs"
                });
                spec.line = Some(if name == "hot_loop" { 42 } else { 7 });
                b.intern_frame(&spec)
            })
            .collect();
        let stack = b.intern_stack_path(&frames).expect("stacks are not empty");
        for _ in 0..count {
            b.push_sample(stack, thread, time, MS);
            time += MS;
        }
    }
    b.finish()
}

/// Saves `session` to `path` with `prof`'s session writer.
pub fn save(session: &Session, path: &Path) {
    prof::session::save(session, path).expect("the session can be saved");
}

/// A profile of `sliver-app` whose only `needle` sits under one of 2,000 tiny callees of `main`
/// (1 ms each) beside one huge one (`big`, 100 s): at any screen width the tiny ones are merged
/// into one sub-pixel block, so `needle` is never drawn on its own.
pub fn needle_in_slivers() -> Session {
    let mut b = SessionBuilder::new(Metadata {
        program: "sliver-app".into(),
        timer: "perf_event".into(),
        ..Metadata::default()
    });
    let t = b.thread(1, "main");
    let main = b.intern_frame(&FrameSpec::named("main"));
    let big = b.intern_frame(&FrameSpec::named("big"));
    let needle = b.intern_frame(&FrameSpec::named("needle"));
    let stack = b.intern_stack_path(&[main, big]).expect("not empty");
    b.push_sample(stack, t, 0, 100_000 * MS);
    for i in 0..2_000 {
        let tiny = b.intern_frame(&FrameSpec::named(&format!("tiny_{i:04}")));
        let path = if i == 1_234 {
            vec![main, tiny, needle]
        } else {
            vec![main, tiny]
        };
        let stack = b.intern_stack_path(&path).expect("not empty");
        b.push_sample(stack, t, i, MS);
    }
    b.finish()
}

/// A profile of `big-app` with `samples` samples over 50,000 distinct stacks: large enough
/// that fetching and reading it in the page takes a while.
pub fn large(samples: usize) -> Session {
    let mut b = SessionBuilder::new(Metadata {
        program: "big-app".into(),
        timer: "perf_event".into(),
        ..Metadata::default()
    });
    let t = b.thread(1, "main");
    let frames: Vec<_> = (0..500)
        .map(|i| b.intern_frame(&FrameSpec::named(&format!("big_app::f{i}"))))
        .collect();
    let stacks: Vec<_> = (0..50_000usize)
        .map(|s| {
            let path: Vec<_> = (0..8)
                .map(|d| frames[(s * 7 + d * 131 + s / 97) % 500])
                .collect();
            b.intern_stack_path(&path).expect("not empty")
        })
        .collect();
    for i in 0..samples {
        b.push_sample(stacks[(i * 7919) % stacks.len()], t, i as u64 * MS, MS);
    }
    b.finish()
}

/// A profile of `noisy-app` with `samples` samples of pseudo-random stacks, times and weights,
/// which compresses poorly: its file, and its single-file viewer, are about as large as the
/// number of samples times 8 bytes.
pub fn noisy(samples: usize) -> Session {
    let mut b = SessionBuilder::new(Metadata {
        program: "noisy-app".into(),
        timer: "perf_event".into(),
        ..Metadata::default()
    });
    let t = b.thread(1, "main");
    let mut state = 0x9e37_79b9_7f4a_7c15_u64;
    let mut next = move || {
        // xorshift64
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    let frames: Vec<_> = (0..2_000)
        .map(|i| b.intern_frame(&FrameSpec::named(&format!("noisy::f{i}_{:x}", next()))))
        .collect();
    let stacks: Vec<_> = (0..20_000)
        .map(|_| {
            let path: Vec<_> = (0..6)
                .map(|_| frames[(next() % frames.len() as u64) as usize])
                .collect();
            b.intern_stack_path(&path).expect("not empty")
        })
        .collect();
    let mut time = 0;
    for _ in 0..samples {
        time += next() % (2 * MS);
        let stack = stacks[(next() % stacks.len() as u64) as usize];
        b.push_sample(stack, t, time, 1 + next() % (4 * MS));
    }
    b.finish()
}

/// A profile of `transform-app` for the transform tests, every sample 10 ms, 120 ms in all:
///
/// - `main` (at 0, 100, 200, 300, 400 ms): `main;parse;lex` 30 ms, `main;parse` 10 ms,
///   `main;eval;eval;eval;add` 40 ms, `main;eval;lex` 5 ms (one 5 ms sample),
///   `main;lex;malloc;_int_malloc` 15 ms (one 15 ms sample)
/// - `worker` (at 500 ms): `work` 20 ms
///
/// `add` lives in `/lib/libm.so.6`, `malloc` and `_int_malloc` in `/lib/libc.so.6`, the rest in
/// `/bin/transform-app`.
pub fn transforms() -> Session {
    let mut b = SessionBuilder::new(Metadata {
        program: "transform-app".into(),
        duration_ns: 600 * MS,
        mode: Mode::Cpu,
        ..Metadata::default()
    });
    let main_thread = b.thread(1, "main");
    let worker = b.thread(2, "worker");
    let lines: [(&[&str], u64, _); 6] = [
        (&["main", "parse", "lex"], 30, main_thread),
        (&["main", "parse"], 10, main_thread),
        (&["main", "eval", "eval", "eval", "add"], 40, main_thread),
        (&["main", "eval", "lex"], 5, main_thread),
        (&["main", "lex", "malloc", "_int_malloc"], 15, main_thread),
        (&["work"], 20, worker),
    ];
    for (i, (names, ms, thread)) in lines.into_iter().enumerate() {
        let frames: Vec<_> = names
            .iter()
            .map(|&name| {
                let mut spec = FrameSpec::named(name);
                spec.module = Some(match name {
                    "add" => "/lib/libm.so.6",
                    "malloc" | "_int_malloc" => "/lib/libc.so.6",
                    _ => "/bin/transform-app",
                });
                b.intern_frame(&spec)
            })
            .collect();
        let stack = b.intern_stack_path(&frames).expect("stacks are not empty");
        // Whole samples of 10 ms where they fit, else one sample of the whole weight.
        let (count, weight) = if ms % 10 == 0 { (ms / 10, 10) } else { (1, ms) };
        for k in 0..count {
            b.push_sample(stack, thread, i as u64 * 100 * MS + k * MS, weight * MS);
        }
    }
    b.finish()
}

/// A CPU profile of `deep-app` whose main thread recurses `depth` frames deep
/// (`main;descend_1;...;descend_N`, 40 ms), beside a shallow `main;shallow` (10 ms), and whose
/// 17 other threads each sampled `idle` once (a perf profile's many threads): its flame graph
/// is taller than the page's flame pane at any common window size, and its timeline fills the
/// most it may of the window.
pub fn deep(depth: usize) -> Session {
    let mut b = SessionBuilder::new(Metadata {
        program: "deep-app".into(),
        duration_ns: 50 * MS,
        mode: Mode::Cpu,
        timer: "perf_event".into(),
        ..Metadata::default()
    });
    let t = b.thread(1, "main");
    let main = b.intern_frame(&FrameSpec::named("main"));
    let mut path = vec![main];
    for i in 1..=depth {
        path.push(b.intern_frame(&FrameSpec::named(&format!("descend_{i}"))));
    }
    let deep = b.intern_stack_path(&path).expect("not empty");
    let shallow_frame = b.intern_frame(&FrameSpec::named("shallow"));
    let shallow = b
        .intern_stack_path(&[main, shallow_frame])
        .expect("not empty");
    for i in 0..50 {
        let stack = if i % 5 == 4 { shallow } else { deep };
        b.push_sample(stack, t, i * MS, MS);
    }
    let idle_frame = b.intern_frame(&FrameSpec::named("idle"));
    let idle = b.intern_stack_path(&[idle_frame]).expect("not empty");
    for k in 0..17 {
        let thread = b.thread(100 + k, &format!("pool-{k}"));
        b.push_sample(idle, thread, k * MS, MS);
    }
    b.finish()
}

/// A CPU profile of an async server `scoped-app` with instrumented scopes and tasks, as the
/// runtime records them: on two worker threads, 30 polls of five tasks (three named `fetch`, two
/// `store`), each poll inside a `request` scope holding a `parse` scope, with a sample every
/// millisecond (weight [`MS`]) inside the polls and some outside every task. Poll lengths vary
/// (2 to 9 ms) so durations have a spread; a `gc` mark lies in every fifth poll.
pub fn scoped_tasks() -> Session {
    let mut b = SessionBuilder::new(Metadata {
        program: "scoped-app".into(),
        start_time_ns: Some(1_795_341_600_000_000_000), // 2026-11-22T10:00:00Z
        mode: Mode::Cpu,
        requested_interval_ns: MS,
        achieved_interval_ns: MS,
        timer: "perf_event".into(),
        os: "linux".into(),
        arch: "x86_64".into(),
        ..Metadata::default()
    });
    let threads = [
        b.thread(200, "tokio-worker-0"),
        b.thread(201, "tokio-worker-1"),
    ];
    let request = b.intern_site("request", Some("src/server.rs"), Some(30), SiteKind::Scope);
    let parse = b.intern_site("parse", Some("src/parse.rs"), Some(12), SiteKind::Scope);
    let gc = b.intern_site("gc", Some("src/gc.rs"), Some(5), SiteKind::Mark);
    let tasks: Vec<TaskIdx> = [
        (1, "fetch"),
        (2, "store"),
        (3, "fetch"),
        (4, "store"),
        (5, "fetch"),
    ]
    .into_iter()
    .map(|(id, name)| b.intern_task(id, name))
    .collect();
    let stack = |b: &mut SessionBuilder, names: &[&str]| {
        let frames: Vec<_> = names
            .iter()
            .map(|n| b.intern_frame(&FrameSpec::named(n)))
            .collect();
        b.intern_stack_path(&frames).expect("stacks are not empty")
    };
    let parsing = stack(
        &mut b,
        &[
            "tokio::runtime::worker::run",
            "server::handle",
            "parse::json",
        ],
    );
    let handling = stack(&mut b, &["tokio::runtime::worker::run", "server::handle"]);
    let idle = stack(&mut b, &["tokio::runtime::worker::run", "tokio::park"]);
    let mut clock = [0u64; 2];
    for i in 0..30u64 {
        let t = (i % 2) as usize;
        let thread = threads[t];
        let task = tasks[(i % 5) as usize];
        // An idle millisecond outside every task, then the poll.
        b.push_sample(idle, thread, clock[t] + MS / 2, MS);
        let start = clock[t] + MS;
        let len = (2 + (i * 7) % 8) * MS;
        let parse_len = len / 2;
        b.push_poll(Poll {
            task,
            thread,
            start_ns: start,
            end_ns: start + len,
            waited_at: None,
        });
        let id = b.field("id", &i.to_string());
        let outer = b.push_span(Span {
            site: request,
            thread,
            start_ns: start,
            end_ns: start + len,
            parent: None,
            fields: vec![id],
        });
        let inner = b.push_span(Span {
            site: parse,
            thread,
            start_ns: start,
            end_ns: start + parse_len,
            parent: Some(outer),
            fields: Vec::new(),
        });
        if i % 5 == 0 {
            b.push_mark(prof::session::Mark {
                site: gc,
                thread,
                time_ns: start + 1,
                fields: Vec::new(),
            });
        }
        let mut at = start + MS / 2;
        while at < start + len {
            let in_parse = at < start + parse_len;
            b.push_sample(if in_parse { parsing } else { handling }, thread, at, MS);
            b.set_last_sample_context(Some(if in_parse { inner } else { outer }), Some(task));
            at += MS;
        }
        clock[t] = start + len;
    }
    b.meta_mut().duration_ns = clock[0].max(clock[1]);
    b.finish()
}

/// A wall session of `wall-app` as `prof record --mode wall` records one, with the kernel's
/// frames (module `[kernel]`), on one thread:
///
/// - blocked: `main;serve;read` entering the kernel (`entry_SYSCALL_64;pipe_read;schedule`),
///   six samples of 100 ms, waiting; and `main;serve;epoll_wait` (`entry_SYSCALL_64;
///   do_epoll_wait;schedule_hrtimeout_range;schedule`), two of 100 ms, waiting
/// - preempted in `main;handle` (`asm_sysvec_apic_timer_interrupt;irqentry_exit;schedule`),
///   one of 50 ms, running
/// - on CPU: `main;handle` ten of 10 ms, `main;serve;read` in the kernel's `pipe_read`, two of
///   10 ms
pub fn wall_blocked() -> Session {
    use prof::session::SampleState;
    let mut b = SessionBuilder::new(Metadata {
        program: "wall-app".into(),
        duration_ns: 1_000 * MS,
        mode: Mode::Wall,
        ..Metadata::default()
    });
    let thread = b.thread(1, "main");
    const USER: [&str; 5] = ["main", "serve", "read", "epoll_wait", "handle"];
    let stack = |b: &mut SessionBuilder, path: &[&str]| {
        let frames: Vec<_> = path
            .iter()
            .map(|&name| {
                let mut spec = FrameSpec::named(name);
                let kernel = !USER.contains(&name);
                spec.module = Some(if kernel { "[kernel]" } else { "/bin/wall-app" });
                b.intern_frame(&spec)
            })
            .collect();
        b.intern_stack_path(&frames).expect("stacks are not empty")
    };
    let syscall = ["main", "serve", "read", "entry_SYSCALL_64", "pipe_read"];
    let read = stack(&mut b, &[&syscall[..], &["schedule"]].concat());
    let epoll = stack(
        &mut b,
        &[
            "main",
            "serve",
            "epoll_wait",
            "entry_SYSCALL_64",
            "do_epoll_wait",
            "schedule_hrtimeout_range",
            "schedule",
        ],
    );
    let preempted = stack(
        &mut b,
        &[
            "main",
            "handle",
            "asm_sysvec_apic_timer_interrupt",
            "irqentry_exit",
            "schedule",
        ],
    );
    let handle = stack(&mut b, &["main", "handle"]);
    let in_kernel = stack(&mut b, &syscall);
    let mut at = 0;
    let mut push = |b: &mut SessionBuilder, stack, n: u64, ms: u64, state| {
        for _ in 0..n {
            b.push_sample_full(stack, thread, at, &[ms * MS], 1, Some(state));
            at += ms * MS;
        }
    };
    push(&mut b, read, 6, 100, SampleState::Waiting);
    push(&mut b, epoll, 2, 100, SampleState::Waiting);
    push(&mut b, preempted, 1, 50, SampleState::Running);
    push(&mut b, handle, 10, 10, SampleState::Running);
    push(&mut b, in_kernel, 2, 10, SampleState::Running);
    b.finish()
}
