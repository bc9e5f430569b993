//! A small session built in code for the exporters' and importers' unit tests: two threads,
//! modules, addresses, source lines and one inlined frame.

use crate::session::{FrameSpec, Metadata, Mode, Session, SessionBuilder};

/// Thread "main" (tid 1): `main → work → hash` (hash inlined into work) three times, weight 300 in
/// all, with `main → idle` (weight 50) between. Thread "worker" (tid 2): the same hot stack
/// (weight 120), then `main → work` at another line and address (weight 80).
pub(crate) fn session() -> Session {
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
