//! A small session built in code for the exporters' and importers' tests (and, with the `fixture`
//! feature, the tests of the crates above): two threads, modules, addresses, source lines and one
//! inlined frame; and the golden-file comparison those tests share.

use crate::session::{
    FrameSpec, Mark, Metadata, Mode, Poll, Session, SessionBuilder, SiteKind, Span,
};

/// Thread "main" (tid 1): `main → work → hash` (hash inlined into work) three times, weight 300 in
/// all, with `main → idle` (weight 50) between. Thread "worker" (tid 2): the same hot stack
/// (weight 120), then `main → work` at another line and address (weight 80).
pub fn session() -> Session {
    let mut b = SessionBuilder::new(Metadata {
        program: "/usr/bin/demo".into(),
        args: vec!["--fast".into()],
        mode: Mode::Cpu,
        requested_interval_ns: 1_000_000,
        achieved_interval_ns: 1_000_000,
        duration_ns: 1_000_000_000,
        timer: "test".into(),
        ..Metadata::default()
    });
    let frame = |name, line, address, inlined| FrameSpec {
        name,
        file: Some("src/main.rs"),
        line: Some(line),
        module: Some("/usr/bin/demo"),
        address: Some(address),
        inlined,
    };
    let main = b.intern_frame(&frame("main", 3, 0x1000, false));
    let hash = b.intern_frame(&frame("hash", 20, 0x2010, true));
    let work = b.intern_frame(&frame("work", 12, 0x2010, false));
    let work_other_line = b.intern_frame(&frame("work", 13, 0x2020, false));
    let idle = b.intern_frame(&FrameSpec {
        module: Some("/lib/libc.so.6"),
        address: Some(0x7000),
        ..FrameSpec::named("idle")
    });
    let hot = b.intern_stack_path(&[main, work, hash]).unwrap();
    let idle = b.intern_stack_path(&[main, idle]).unwrap();
    let other = b.intern_stack_path(&[main, work_other_line]).unwrap();
    let t_main = b.thread(1, "main");
    let t_worker = b.thread(2, "worker");
    b.push_sample(hot, t_main, 0, 100);
    b.push_sample(hot, t_worker, 0, 120);
    b.push_sample(hot, t_main, 1_000_000, 100);
    b.push_sample(idle, t_main, 2_000_000, 50);
    b.push_sample(hot, t_main, 3_000_000, 100);
    b.push_sample(other, t_worker, 1_000_000, 80);
    b.finish()
}

/// Compares `got` with the golden file at `path`, or rewrites the file when the `PROF_BLESS`
/// environment variable is set. A mismatch panics naming the file, the first differing line of
/// both (or byte offset, for binary files) and `bless`, the command that rewrites it.
pub fn check_golden(path: &std::path::Path, got: &[u8], bless: &str) {
    if std::env::var_os("PROF_BLESS").is_some() {
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).unwrap();
        }
        std::fs::write(path, got).unwrap();
        return;
    }
    let bless = format!("{bless} rewrites it (review with git diff)");
    let want = match std::fs::read(path) {
        Ok(want) => want,
        Err(e) => panic!("{}: {e}; {bless}", path.display()),
    };
    if want == got {
        return;
    }
    match (std::str::from_utf8(&want), std::str::from_utf8(got)) {
        (Ok(want), Ok(got)) => {
            let line = want
                .lines()
                .zip(got.lines())
                .position(|(w, g)| w != g)
                .unwrap_or_else(|| want.lines().count().min(got.lines().count()));
            panic!(
                "{} differs from the export at line {}:\n- {}\n+ {}\n({} lines committed, {} written); {bless}",
                path.display(),
                line + 1,
                want.lines().nth(line).unwrap_or("(end of file)"),
                got.lines().nth(line).unwrap_or("(end of output)"),
                want.lines().count(),
                got.lines().count(),
            )
        }
        _ => {
            let at = want.iter().zip(got).take_while(|(w, g)| w == g).count();
            panic!(
                "{} differs from the export at byte {at} ({} bytes committed, {} written); {bless}",
                path.display(),
                want.len(),
                got.len()
            )
        }
    }
}

/// Two threads: `main` with `request` (0..100) holding `parse` (10..40) holding `lex`
/// (12..13), then `request` (200..300), and a mark at 50; `idle` with a mark only; tasks
/// `fetch` (two tasks) and `store`, `fetch` polled longer.
pub fn scopes_session() -> Session {
    let mut b = SessionBuilder::default();
    let main = b.thread(1, "main");
    let idle = b.thread(2, "idle");
    let quiet = b.thread(3, "quiet");
    let request = b.intern_site("request", None, None, SiteKind::Scope);
    let parse = b.intern_site("parse", None, None, SiteKind::Scope);
    let lex = b.intern_site("lex", None, None, SiteKind::Scope);
    let gc = b.intern_site("gc", None, None, SiteKind::Mark);
    let span = |b: &mut SessionBuilder, site, start, end, parent| {
        let id = b.field("id", "7");
        b.push_span(Span {
            site,
            thread: main,
            start_ns: start,
            end_ns: end,
            parent,
            fields: vec![id],
        })
    };
    let outer = span(&mut b, request, 0, 100, None);
    let inner = span(&mut b, parse, 10, 40, Some(outer));
    span(&mut b, lex, 12, 13, Some(inner));
    span(&mut b, request, 200, 300, None);
    for (thread, time_ns) in [(main, 50), (idle, 60)] {
        b.push_mark(Mark {
            site: gc,
            thread,
            time_ns,
            fields: Vec::new(),
        });
    }
    let tasks = [
        b.intern_task(1, "store"),
        b.intern_task(2, "fetch"),
        b.intern_task(3, "fetch"),
    ];
    for (task, thread, start_ns, end_ns) in [
        (tasks[0], idle, 0, 10),
        (tasks[1], main, 0, 30),
        (tasks[2], idle, 20, 60),
    ] {
        b.push_poll(Poll {
            task,
            thread,
            start_ns,
            end_ns,
            waited_at: None,
        });
    }
    let f = b.intern_frame(&FrameSpec::named("f"));
    let stack = b.intern_stack_path(&[f]).unwrap();
    b.push_sample(stack, quiet, 400, 1);
    b.finish()
}
