//! Start/stop lifecycle: one session at a time, the previous SIGPROF disposition back after
//! stop, late signals harmless, threads started later sampled, fork safe.

mod common;

use common::{names, samples_on, serial, spin};
use prof::diagnostics::{
    current_sigprof_handler, current_sigtrap_handler, our_handler_address, our_handler_installed,
};
use prof::sampler::current_tid;
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
    let report = prof::Profiler::start(prof::Options::default())
        .unwrap()
        .stop()
        .unwrap();
    // The session's process table holds this process, as the only entry.
    let processes = &report.session().processes;
    assert_eq!(processes.len(), 1, "{processes:?}");
    assert_eq!(processes[0].pid, std::process::id());
    assert_eq!(
        processes[0].parent_pid,
        Some(std::os::unix::process::parent_id())
    );
    let args: Vec<String> = std::env::args().collect();
    assert_eq!(processes[0].command_line, args);
}

extern "C" fn custom_handler(_: libc::c_int) {}

/// Starts a session on `timer` (the best one when `None`).
fn start_on(timer: Option<&str>) -> prof::Profiler {
    let timer = timer.map_or(prof::Timer::Auto, |t| t.parse().unwrap());
    prof::Profiler::start(prof::Options::default().timer(timer)).unwrap()
}

#[test]
fn stop_restores_the_previous_handler_and_late_signals_do_no_harm() {
    let _serial = serial();
    // A handler of the program's own is never taken over (see `sampler_program_signals.rs`).
    let custom = custom_handler as extern "C" fn(libc::c_int) as libc::sighandler_t;
    // SAFETY: installs a handler that does nothing, which is async-signal-safe.
    unsafe { libc::signal(libc::SIGPROF, custom) };
    let refused = prof::Profiler::start(prof::Options::default().timer(prof::Timer::PerfEvent));
    assert!(matches!(refused, Err(prof::Error::SignalInUse { .. })));
    assert_eq!(current_sigprof_handler(), custom);
    // "Ignore" is taken for the session and put back.
    // SAFETY: ignoring a signal involves no handler code.
    unsafe { libc::signal(libc::SIGPROF, libc::SIG_IGN) };
    let p = start_on(Some("perf_event"));
    assert!(our_handler_installed());
    p.stop().unwrap();
    assert_eq!(current_sigprof_handler(), libc::SIG_IGN);

    for (timer, signal) in [
        ("perf_event", libc::SIGPROF),
        ("perf_event_sigtrap", libc::SIGTRAP),
    ] {
        // SAFETY: restores the default disposition; no handler code is involved.
        unsafe { libc::signal(signal, libc::SIG_DFL) };
        let p = start_on(Some(timer));
        assert!(our_handler_installed(), "{timer}");
        spin(Duration::from_millis(20));
        p.stop().unwrap();
        // The default action would kill the process; a signal in flight after stop must not.
        let now = if signal == libc::SIGTRAP {
            current_sigtrap_handler()
        } else {
            current_sigprof_handler()
        };
        // prof's handler stays, doing nothing with its own signals; see the r9 tests below.
        assert_eq!(now, our_handler_address(), "{timer}");
    }
}

/// Starts and stops a session on `timer` with `signal` at its default disposition.
fn session_over_default(timer: &str, signal: libc::c_int) {
    // SAFETY: restores the default disposition; no handler code is involved.
    unsafe { libc::signal(signal, libc::SIG_DFL) };
    let p = start_on(Some(timer));
    spin(Duration::from_millis(20));
    p.stop().unwrap();
}

/// How `sh -c 'kill -NAME $$'` ends: the signal's default action unless it was ignored.
fn child_kills_itself_with(name: &str) -> std::process::ExitStatus {
    std::process::Command::new("sh")
        .args(["-c", &format!("kill -{name} $$; exit 7")])
        .status()
        .unwrap()
}

#[test]
fn a_program_started_after_a_session_gets_the_default_disposition() {
    use std::os::unix::process::ExitStatusExt;
    let _serial = serial();
    for (timer, signal, name) in [
        ("perf_event_sigtrap", libc::SIGTRAP, "TRAP"),
        ("perf_event", libc::SIGPROF, "PROF"),
        ("timer_create", libc::SIGPROF, "PROF"),
    ] {
        session_over_default(timer, signal);
        let status = child_kills_itself_with(name);
        assert_eq!(status.signal(), Some(signal), "{timer}: {status:?}");
    }
}

/// Run in a child process by the test below: after a session over default dispositions, a
/// SIGPROF of our own kind still in flight is swallowed, and one sent by a process (`raise`)
/// ends the process as it would have without prof.
#[test]
fn signal_after_stop_child() {
    let Some(signal) = std::env::var("PROF_SIGNAL_AFTER_STOP_CHILD").ok() else {
        return;
    };
    let (timer, signal) = match signal.as_str() {
        "TRAP" => ("perf_event_sigtrap", libc::SIGTRAP),
        _ => ("perf_event", libc::SIGPROF),
    };
    session_over_default(timer, signal);
    if signal == libc::SIGPROF {
        late_sigprof();
    }
    println!("survived a late signal");
    // SAFETY: sends the signal to this thread; prof's handler passes it on to the default action.
    unsafe { libc::raise(signal) };
    println!("still alive");
}

/// A late SIGPROF as a process-wide timer sends it (si_code SI_KERNEL, like setitimer's).
fn late_sigprof() {
    let tv = libc::timeval {
        tv_sec: 0,
        tv_usec: 1000,
    };
    let once = libc::itimerval {
        it_interval: libc::timeval {
            tv_sec: 0,
            tv_usec: 0,
        },
        it_value: tv,
    };
    // SAFETY: arms a one-shot ITIMER_PROF; `once` is a valid itimerval.
    let rc = unsafe { libc::setitimer(libc::ITIMER_PROF, &once, std::ptr::null_mut()) };
    assert_eq!(rc, 0);
    spin(Duration::from_millis(20));
}

#[test]
fn a_signal_sent_after_a_session_gets_the_default_action() {
    use std::os::unix::process::ExitStatusExt;
    for (name, signal) in [("TRAP", libc::SIGTRAP), ("PROF", libc::SIGPROF)] {
        let out = std::process::Command::new(std::env::current_exe().unwrap())
            .args(["--exact", "signal_after_stop_child", "--nocapture"])
            .env("PROF_SIGNAL_AFTER_STOP_CHILD", name)
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert_eq!(out.status.signal(), Some(signal), "{name}: {out:?}");
        assert!(
            stdout.contains("survived a late signal"),
            "{name}: {stdout}"
        );
        assert!(!stdout.contains("still alive"), "{name}: {stdout}");
    }
}

#[test]
fn a_sigtrap_handler_of_the_program_is_left_alone() {
    let _serial = serial();
    let custom = custom_handler as extern "C" fn(libc::c_int) as libc::sighandler_t;
    // SAFETY: installs a handler that does nothing, which is async-signal-safe.
    let before = unsafe { libc::signal(libc::SIGTRAP, custom) };
    let p = start_on(None);
    spin(Duration::from_millis(20));
    let report = p.stop().unwrap();
    assert_eq!(report.session().meta.timer, "perf_event");
    assert_eq!(current_sigtrap_handler(), custom);
    // SAFETY: puts back what was there; no handler code is involved.
    unsafe { libc::signal(libc::SIGTRAP, before) };
}

/// Run in a child process by the test below: a SIGTRAP that is not a sample, under a session
/// that took SIGTRAP over from the default disposition, must still end the process.
#[test]
fn foreign_sigtrap_child() {
    if std::env::var_os("PROF_FOREIGN_SIGTRAP_CHILD").is_none() {
        return;
    }
    // SAFETY: sets the default disposition; no handler code is involved.
    unsafe { libc::signal(libc::SIGTRAP, libc::SIG_DFL) };
    let p = start_on(None);
    assert_eq!(current_sigtrap_handler(), our_handler_address());
    spin(Duration::from_millis(20));
    // SAFETY: sends SIGTRAP to this thread; prof's handler passes it on to the default action.
    unsafe { libc::raise(libc::SIGTRAP) };
    drop(p);
    println!("still alive");
}

#[test]
fn a_foreign_sigtrap_still_ends_the_process_as_it_would_have() {
    use std::os::unix::process::ExitStatusExt;
    let out = std::process::Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "foreign_sigtrap_child", "--nocapture"])
        .env("PROF_FOREIGN_SIGTRAP_CHILD", "1")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        out.status.signal(),
        Some(libc::SIGTRAP),
        "{:?}: {stdout}",
        out.status
    );
    assert!(!stdout.contains("still alive"), "{stdout}");
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
    // SAFETY: the child burns CPU, stops its copy of the profiler (which must not wait for the
    // parent's collector thread) and leaves with _exit.
    let pid = unsafe { libc::fork() };
    if pid == 0 {
        let mut x = 0u64;
        for i in 0..50_000_000u64 {
            x = std::hint::black_box(x ^ i);
        }
        let code = match p.stop() {
            Err(prof::Error::ForkedChild) if x != 1 => 0,
            _ => 3,
        };
        // SAFETY: _exit ends the child without running the parent's atexit handlers.
        unsafe { libc::_exit(code) };
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

#[test]
fn a_child_forked_during_a_cpu_session_runs_as_without_prof() {
    let _serial = serial();
    // perf_event delivers SIGPROF, whose disposition was the default: prof's handler.
    let options = prof::Options::default().timer(prof::Timer::PerfEvent);
    let p = prof::Profiler::start(options).unwrap();
    spin(Duration::from_millis(20));
    // SAFETY: the child computes, then raises SIGPROF with its copy of the session still
    // running, which must end it as the default action would without prof; it leaves with
    // _exit otherwise.
    let pid = unsafe { libc::fork() };
    if pid == 0 {
        let mut x = 0u64;
        for i in 0..10_000_000u64 {
            x = std::hint::black_box(x ^ i);
        }
        // SAFETY: raise and _exit are async-signal-safe and need nothing of the parent.
        unsafe {
            libc::raise(libc::SIGPROF);
            libc::_exit(if x == 1 { 3 } else { 0 });
        }
    }
    assert!(pid > 0, "fork failed");
    spin(Duration::from_millis(50));
    let mut status = 0;
    // SAFETY: waits for our own child; `status` is a valid int.
    assert_eq!(unsafe { libc::waitpid(pid, &mut status, 0) }, pid);
    assert!(
        libc::WIFSIGNALED(status) && libc::WTERMSIG(status) == libc::SIGPROF,
        "the child's SIGPROF was swallowed: status {status}"
    );
    assert!(p.stop().unwrap().total_samples() > 0);
}

#[test]
fn a_profiler_can_be_stopped_from_another_thread() {
    let _serial = serial();
    let p = prof::Profiler::start(prof::Options::default()).unwrap();
    spin(Duration::from_millis(50));
    let report = std::thread::spawn(move || p.stop())
        .join()
        .unwrap()
        .unwrap();
    assert!(report.total_samples() > 0);
}

/// A session read every loaded object's unwind tables from its file at start (11 ms
/// the first time, 2-3 ms each later start); the sessions of a process now share them as they
/// share the symbol cache, so a later session reads none for objects still loaded.
#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
#[test]
fn a_later_session_reads_no_unwind_tables_again() {
    use prof::diagnostics::unwind_modules_read;
    let _serial = serial();
    let before = unwind_modules_read();
    prof::Profiler::start(prof::Options::default())
        .unwrap()
        .stop()
        .unwrap();
    let after_first = unwind_modules_read();
    for _ in 0..3 {
        let p = prof::Profiler::start(prof::Options::default()).unwrap();
        spin(Duration::from_millis(20));
        p.stop().unwrap();
    }
    assert_eq!(
        unwind_modules_read(),
        after_first,
        "later sessions read unwind tables again (the first read {})",
        after_first - before
    );
}

/// Runs `work` in a session sampling every `interval` (perf_event_sigtrap) and counts the
/// collector's wake-ups while it ran (not the first ones after start: its first drain and
/// sweep). Returns the wake-ups, how long `work` took, and the session.
fn collector_wakeups_while(
    interval: Duration,
    work: impl FnOnce(),
) -> (u64, Duration, prof::Report) {
    use prof::diagnostics::collector_wakeups;
    let options = prof::Options::default()
        .timer(prof::Timer::PerfEventSigtrap)
        .interval(interval);
    let p = prof::Profiler::start(options).unwrap();
    std::thread::sleep(Duration::from_millis(100));
    let before = collector_wakeups();
    let t = std::time::Instant::now();
    work();
    let woke = collector_wakeups() - before;
    let elapsed = t.elapsed();
    (woke, elapsed, p.stop().unwrap())
}

/// The collector woke every 20 ms (50 times a second) whatever the ring held, also
/// while no thread ran, then every 50 ms (as long as the ring allowed). With inherited perf
/// events (new threads need no sweep to be armed) a collector that found nothing sleeps until
/// the handler wakes it (the ring a quarter full, a stack in no known mapping), a scope buffer,
/// stop, or the once-a-second look at whether the program replaced prof's signal handler: one
/// wake-up in a second of a session in which no thread runs.
#[test]
fn an_idle_session_wakes_its_collector_only_as_the_ring_needs() {
    let _serial = serial();
    let idle = std::cell::Cell::new(0);
    let (woke, elapsed, _) = collector_wakeups_while(Duration::from_millis(1), || {
        // The session's start is drained by then, also on a busy machine: the collector
        // sleeps without a timeout from its first wake-up that finds nothing.
        std::thread::sleep(Duration::from_millis(400));
        let before = prof::diagnostics::collector_wakeups();
        std::thread::sleep(Duration::from_secs(1));
        idle.set(prof::diagnostics::collector_wakeups() - before);
    });
    let idle = idle.get();
    // The look at the handler, and one more should a sample of this process's other test
    // threads fill the ring a quarter.
    assert!(
        idle <= 2,
        "the collector woke {idle} times in the last second of an idle session \
         ({woke} in {elapsed:?} with the start's drains)"
    );
}

/// The other side of [`an_idle_session_wakes_its_collector_only_as_the_ring_needs`]: a
/// thread that starts after the collector went to sleep without a timeout (its stack in no
/// mapping the collector knew) is sampled whole, its samples drained before stop.
#[test]
fn a_thread_started_while_the_collector_sleeps_is_sampled_whole() {
    let _serial = serial();
    use prof::diagnostics::collector_wakeups;
    let options = prof::Options::default()
        .timer(prof::Timer::PerfEventSigtrap)
        .interval(Duration::from_millis(1));
    let p = prof::Profiler::start(options).unwrap();
    std::thread::sleep(Duration::from_millis(300));
    let before = collector_wakeups();
    std::thread::Builder::new()
        .name("late-spinner".into())
        .spawn(|| spin(Duration::from_millis(400)))
        .unwrap()
        .join()
        .unwrap();
    let woke = collector_wakeups() - before;
    let report = p.stop().unwrap();
    assert!(woke >= 1, "the handler woke the collector");
    let session = report.session();
    let late = session
        .threads
        .iter()
        .position(|t| session.str(t.name) == "late-spinner")
        .expect("the late thread is named");
    let of_late: Vec<usize> = (0..session.samples.len())
        .filter(|&i| session.samples.thread[i].index() == late)
        .collect();
    let all = of_late.len();
    let whole = of_late
        .iter()
        .filter(|&&i| names(&report, i).iter().any(|n| n.contains("spin")))
        .count();
    // 400 ms of CPU at 1 kHz; a busy machine gives the thread less CPU in that time.
    assert!(all >= 40, "{all} samples of the late thread");
    assert!(
        whole * 100 >= all * 95,
        "{whole} of {all} samples reach spin"
    );
}

#[test]
fn a_session_at_100_hz_wakes_its_collector_about_four_times_a_second() {
    // The fleet agents' rate: the ring holds 0.64 s of every CPU's samples, so the collector
    // sleeps 250 ms (it woke 20 times a second, the most of the push agent's cost).
    let _serial = serial();
    // Busy, so samples arrive and are drained.
    let (woke, elapsed, report) = collector_wakeups_while(Duration::from_millis(10), || {
        spin(Duration::from_secs(1));
    });
    assert!(report.total_samples() > 0);
    // Four a second for as long as the spin took (longer on a busy machine), and a few more
    // that a late wake-up can add; at 1 kHz's 50 ms it would be 20 a second.
    let bound = (4.0 * elapsed.as_secs_f64()) as u64 + 4;
    assert!(
        woke <= bound,
        "the collector woke {woke} times in {elapsed:?} at 100 Hz"
    );
}
