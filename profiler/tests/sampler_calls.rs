//! `Options::count_calls`: a program counts its own functions' calls exactly, on every thread
//! (one that ran before the session and one started during it), in CPU and wall mode, with the
//! uprobes it defined gone after stop; a pattern that matches nothing is refused at start.

mod common;

use common::serial;
use std::hint::black_box;
use std::sync::mpsc::channel;

#[inline(never)]
fn counted_target(x: u64) -> u64 {
    black_box(x.wrapping_mul(3))
}

/// The uprobes this process has defined in tracefs.
fn uprobes_of_this_process() -> usize {
    let group = format!("prof_{}/", std::process::id());
    std::fs::read_to_string("/sys/kernel/tracing/uprobe_events")
        .unwrap_or_default()
        .lines()
        .filter(|l| l.contains(&group))
        .count()
}

#[test]
fn a_program_counts_its_own_calls_exactly_on_every_thread_in_cpu_and_wall_mode() {
    let _serial = serial();
    for mode in [prof::Mode::Cpu, prof::Mode::Wall] {
        // A thread that runs from before the session and calls during it.
        let (go, wait) = channel::<()>();
        let (done, finished) = channel::<()>();
        let early = std::thread::spawn(move || {
            wait.recv().unwrap();
            let sum = (0..3_000).map(counted_target).sum::<u64>();
            done.send(()).unwrap();
            sum
        });
        let options = prof::Options::default()
            .mode(mode)
            .count_calls("sampler_calls::counted_target$");
        let profiler = prof::Profiler::start(options).unwrap();
        assert!(uprobes_of_this_process() > 0);
        go.send(()).unwrap();
        let mut sum = (0..10_000).map(counted_target).sum::<u64>();
        // A thread started during the session inherits the counting.
        sum += std::thread::spawn(|| (0..5_000).map(counted_target).sum::<u64>())
            .join()
            .unwrap();
        finished.recv().unwrap();
        let report = profiler.stop().unwrap();
        sum += early.join().unwrap();
        black_box(sum);
        let counted: Vec<(String, u64)> = report
            .session()
            .counted
            .iter()
            .map(|c| (c.name.clone(), c.calls))
            .collect();
        assert_eq!(
            counted,
            [("sampler_calls::counted_target".to_owned(), 18_000)],
            "{mode:?}"
        );
        assert_eq!(uprobes_of_this_process(), 0, "{mode:?}: removed at stop");
    }
}

#[test]
fn a_pattern_that_matches_nothing_is_refused_at_start() {
    let _serial = serial();
    let options = prof::Options::default().count_calls("^no_such_function_here$");
    let error = prof::Profiler::start(options).map(|_| ()).unwrap_err();
    assert!(
        matches!(&error, prof::Error::Calls(m) if m.contains("matches no function")),
        "{error}"
    );
    // Refused before anything started: a session can start now.
    prof::Profiler::start(prof::Options::default())
        .unwrap()
        .stop()
        .unwrap();
}
