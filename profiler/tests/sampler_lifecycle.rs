//! Start/stop lifecycle: one session at a time, the previous SIGPROF disposition back after
//! stop, late signals harmless, threads started later sampled, fork safe.

mod common;

use common::{names, samples_on, serial, spin};
use prof::sampler::{current_sigprof_handler, current_tid, our_handler_installed};
use std::time::Duration;

#[test]
fn a_second_start_is_already_running() {
    let _serial = serial();
    let first = prof::Profiler::start(prof::Options::default()).unwrap();
    assert!(matches!(
        prof::Profiler::start(prof::Options::default()),
        Err(prof::Error::AlreadyRunning)
    ));
    first.stop().unwrap();
    prof::Profiler::start(prof::Options::default())
        .unwrap()
        .stop()
        .unwrap();
}

extern "C" fn custom_handler(_: libc::c_int) {}

#[test]
fn stop_restores_the_previous_handler_and_late_signals_do_no_harm() {
    let _serial = serial();
    let custom = custom_handler as extern "C" fn(libc::c_int) as libc::sighandler_t;
    // SAFETY: installs a handler that does nothing, which is async-signal-safe.
    unsafe { libc::signal(libc::SIGPROF, custom) };
    let p = prof::Profiler::start(prof::Options::default()).unwrap();
    assert!(our_handler_installed());
    p.stop().unwrap();
    assert_eq!(current_sigprof_handler(), custom);

    // SAFETY: restores the default disposition; no handler code is involved.
    unsafe { libc::signal(libc::SIGPROF, libc::SIG_DFL) };
    let p = prof::Profiler::start(prof::Options::default()).unwrap();
    spin(Duration::from_millis(20));
    p.stop().unwrap();
    // The default action would kill the process; a signal in flight after stop must not.
    assert_eq!(current_sigprof_handler(), libc::SIG_IGN);
    // SAFETY: raise only sends a signal to this thread; SIGPROF is ignored now.
    assert_eq!(unsafe { libc::raise(libc::SIGPROF) }, 0);
}

#[inline(never)]
fn late_thread_work() -> u64 {
    spin(Duration::from_millis(300));
    current_tid()
}

#[test]
fn threads_started_after_start_are_sampled_with_their_names() {
    let _serial = serial();
    let p = prof::Profiler::start(prof::Options::default()).unwrap();
    let tid = std::thread::Builder::new()
        .name("late-worker".into())
        .spawn(late_thread_work)
        .unwrap()
        .join()
        .unwrap();
    let report = p.stop().unwrap();
    let on = samples_on(&report, tid);
    assert!(on.len() >= 200, "{} samples on the late thread", on.len());
    assert!(names(&report, on[0])
        .iter()
        .any(|n| n.contains("late_thread_work")));
    let s = report.session();
    let thread = s.threads.iter().find(|t| t.tid == tid).unwrap();
    assert_eq!(s.str(thread.name), "late-worker");
}

#[test]
fn fork_while_profiling_breaks_neither_process() {
    let _serial = serial();
    let tid = current_tid();
    let p = prof::Profiler::start(prof::Options::default()).unwrap();
    spin(Duration::from_millis(50));
    // SAFETY: the child only burns CPU (no allocation, no locks) and leaves with _exit.
    let pid = unsafe { libc::fork() };
    if pid == 0 {
        let mut x = 0u64;
        for i in 0..50_000_000u64 {
            x = std::hint::black_box(x ^ i);
        }
        // SAFETY: _exit ends the child without running the parent's atexit handlers.
        unsafe { libc::_exit(if x == 1 { 3 } else { 0 }) };
    }
    assert!(pid > 0, "fork failed");
    spin(Duration::from_millis(100));
    let mut status = 0;
    // SAFETY: waits for our own child; `status` is a valid int.
    assert_eq!(unsafe { libc::waitpid(pid, &mut status, 0) }, pid);
    assert!(
        libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0,
        "status {status}"
    );
    let report = p.stop().unwrap();
    assert!(samples_on(&report, tid).len() >= 100);
}
