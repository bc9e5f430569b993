//! The `prof` command as a user runs it.

use prof_e2e::prof;

#[test]
fn help_lists_the_commands() {
    let out = prof(&["--help"]);
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("Usage: prof"), "{text}");
}

#[test]
fn an_unknown_command_fails_with_usage_exit_code() {
    let out = prof(&["no-such-command"]);
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn the_binary_embeds_the_viewer() {
    let out = prof(&["assets"]);
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.lines().any(|l| l == "index.html"), "{text}");
    assert!(
        text.lines().any(|l| l == "pkg/prof_viewer_bg.wasm"),
        "{text}"
    );
}

/// Runs `prof demo --no-serve` for 0.6 s with `extra` options, saving to a temporary file;
/// returns the output (checked to be a success) and the saved report.
fn run_demo(name: &str, extra: &[&str]) -> (std::process::Output, prof::Report) {
    let dir = prof_e2e::TempDir::new(name);
    let out_path = dir.join("demo.json");
    let mut args = vec!["demo", "--no-serve"];
    args.extend_from_slice(extra);
    if !extra.contains(&"--seconds") {
        args.extend_from_slice(&["--seconds", "0.6"]);
    }
    args.extend_from_slice(&["-o", out_path.to_str().unwrap()]);
    let out = prof(&args);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report = prof::Report::load(&out_path).expect("the demo session loads");
    (out, report)
}

#[test]
fn demo_profiles_its_workload_and_saves_a_session_that_loads() {
    let (out, report) = run_demo("demo", &[]);
    // The workload runs for wall time and the machine may be busy, so check the rate per CPU
    // time (1 ms by default), not a sample count.
    let samples = report.total_samples() as f64;
    let cpu_ms = report.session().total_weight() as f64 / 1e6;
    assert!(samples >= 50.0, "{samples} samples");
    assert!(
        (samples - cpu_ms).abs() <= 0.1 * cpu_ms,
        "{samples} samples for {cpu_ms:.1} ms of CPU at 1 ms"
    );
    let top: Vec<String> = report.top(5).iter().map(|r| r.name.clone()).collect();
    assert!(
        top.iter().any(|n| n.contains("is_prime")),
        "the hottest function of the demo is in the top 5: {top:?}"
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("is_prime"), "{stdout}");

    // Its batches are scopes, recorded while sampling: exact calls, and the main thread's
    // samples of `is_prime` taken inside `primes batch`.
    let session = report.session();
    let all = prof::aggregate::Filter::all();
    let rows = prof::aggregate::scope_table(session, &all);
    for name in ["primes batch", "collatz batch"] {
        let row = rows.iter().find(|r| r.name == name);
        assert!(row.is_some_and(|r| r.calls > 0), "{name} in {rows:?}");
    }
    let is_prime = |filter: &prof::aggregate::Filter| {
        let tree = prof::aggregate::CallTree::new(session, filter);
        let top = tree.top(session, 100, prof::aggregate::SortBy::SelfWeight);
        top.iter()
            .filter(|r| r.name.contains("is_prime"))
            .map(|r| r.self_weight)
            .sum::<u64>()
    };
    let inside = is_prime(&all.clone().scope("primes batch"));
    assert!(
        inside as f64 >= 0.95 * is_prime(&all) as f64,
        "is_prime's samples inside `primes batch`: {inside} of {}",
        is_prime(&all)
    );
}

#[test]
fn demo_in_wall_mode_shows_the_waiting_thread_for_its_whole_life() {
    let (_, report) = run_demo("demo-wall", &["--mode", "wall"]);
    let s = report.session();
    assert_eq!(s.meta.mode, prof::Mode::Wall);
    assert_eq!(s.meta.sample_type.name, "wall");
    let waiter = s
        .threads
        .iter()
        .position(|t| s.str(t.name) == "waiter")
        .expect("the waiting thread is in the session");
    let (mut total, mut waiting) = (0u64, 0u64);
    for i in 0..s.samples.len() {
        if s.samples.thread[i].index() != waiter {
            continue;
        }
        total += s.samples.weight[i];
        if s.stack_frames(s.samples.stack[i])
            .any(|f| s.frame_name(f).contains("wait_for_reports"))
        {
            waiting += s.samples.weight[i];
        }
    }
    // The waiter lives for the 0.6 s the workload runs; wall mode gives it that whole time,
    // nearly all in `wait_for_reports`, although it uses almost no CPU.
    let summary = format!("waiter: {total} ns sampled, {waiting} ns in wait_for_reports");
    assert!(total >= 500_000_000, "{summary}");
    assert!(waiting * 10 >= total * 9, "{summary}");
}

#[test]
fn demo_rejects_an_unknown_mode() {
    let out = prof(&["demo", "--mode", "sideways"]);
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn demo_in_alloc_mode_profiles_the_allocating_thread() {
    // Samples come per byte allocated, and a busy machine gives the demo less CPU per second:
    // 2 s leaves room for the 20 samples asked below (81 measured at load 11).
    let (out, report) = run_demo("demo-alloc", &["--mode", "alloc", "--seconds", "2"]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("alloc mode") && stdout.contains("alloc_bytes"),
        "{stdout}"
    );
    assert_eq!(
        report.sample_types(),
        [
            "alloc_bytes",
            "alloc_objects",
            "inuse_bytes",
            "inuse_objects"
        ]
    );
    assert!(report.total_samples() >= 20, "{stdout}");
    // The records thread keeps its last 20,000 records: some sampled blocks are still in use.
    let mut session = report.into_session();
    let through = |s: &prof::session::Session, name: &str| -> u64 {
        (0..s.samples.len())
            .filter(|&i| {
                s.stack_frames(s.samples.stack[i])
                    .any(|f| s.frame_name(f).contains(name))
            })
            .map(|i| s.samples.weight[i])
            .sum()
    };
    assert!(through(&session, "parse_record") > 0, "{stdout}");
    session.select_sample_type("inuse_bytes").unwrap();
    assert!(through(&session, "records_for") > 0, "{stdout}");
}

#[test]
fn demo_rejects_a_nonsense_duration() {
    let out = prof(&["demo", "--seconds", "-1"]);
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn demo_runs_on_the_timer_and_unwinder_named_by_its_flags() {
    let (_, report) = run_demo("demo-timer", &["--timer", "setitimer", "--unwind", "fp"]);
    assert_eq!(report.session().meta.timer, "setitimer");
    assert!(report.total_samples() > 0);
}

#[test]
fn demo_rejects_an_unknown_timer_or_unwinder_in_one_line() {
    for args in [["--timer", "sundial"], ["--unwind", "guesswork"]] {
        let out = prof(&["demo", "--no-serve", args[0], args[1]]);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains(args[1]), "{stderr}");
    }
}

#[test]
fn demo_refuses_a_timer_in_wall_mode_with_usage_exit_code() {
    let dir = prof_e2e::TempDir::new("demo-wall-timer");
    let out_path = dir.join("demo.json");
    let out = prof(&[
        "demo",
        "--no-serve",
        "--mode",
        "wall",
        "--timer",
        "perf_event",
        "--seconds",
        "0.2",
        "-o",
        out_path.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    let last = stderr.lines().last().unwrap_or("");
    assert!(
        last.starts_with("prof: ") && last.contains("timer perf_event is for cpu mode"),
        "{stderr}"
    );
    assert!(!out_path.exists(), "nothing was saved");
}
