//! `prof record --calls REGEX -- CMD` against the real binary: a C program built as users build
//! it (`cc -O2 -fomit-frame-pointer`) whose functions are called a known number of times, from
//! two threads, by recursion and in a forked child, counted exactly in CPU and wall mode with the
//! program's behaviour unchanged (its thread and child start, its output and status are its
//! own); `prof report --calls` prints the counts with time per call; patterns that match
//! nothing, too much or are not patterns are refused before the command runs; the uprobes prof
//! defined are gone after it.

use prof::session::Session;
use prof_e2e::recorded::{build_c, record};
use prof_e2e::{prof, TempDir};

/// What `tests/data/record/calls.c` calls, and how often.
const EXPECTED: [(&str, u64); 4] = [
    ("leaf", 1_000_000),
    ("parse", 12_345),
    ("depth", 100),
    ("in_child", 7),
];

/// The counts the session holds, by name.
fn counts(session: &Session) -> Vec<(String, u64)> {
    let mut counts: Vec<(String, u64)> = session
        .counted
        .iter()
        .map(|c| (c.name.clone(), c.calls))
        .collect();
    counts.sort();
    counts
}

fn expected() -> Vec<(String, u64)> {
    let mut expected: Vec<(String, u64)> =
        EXPECTED.iter().map(|&(n, c)| (n.to_owned(), c)).collect();
    expected.sort();
    expected
}

/// The uprobe definitions in tracefs that name `file`.
fn uprobes_on(file: &std::path::Path) -> Vec<String> {
    std::fs::read_to_string("/sys/kernel/tracing/uprobe_events")
        .unwrap_or_default()
        .lines()
        .filter(|l| l.contains(file.to_str().unwrap()))
        .map(str::to_owned)
        .collect()
}

#[test]
fn calls_are_counted_exactly_on_every_thread_and_child_in_cpu_and_wall_mode() {
    let dir = TempDir::new("calls_exact");
    let exe = build_c(dir.path(), "calls");
    let exe_arg = exe.to_str().unwrap();
    for mode in ["cpu", "wall"] {
        let (output, session) = record(
            &dir,
            &[
                "--mode",
                mode,
                "--calls",
                "^(leaf|parse)$",
                "--calls",
                "^depth$|in_child",
                "--",
                exe_arg,
            ],
        );
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(output.status.success(), "{mode}: {stderr}");
        // The program started its thread and its child and said so itself.
        assert_eq!(
            String::from_utf8_lossy(&output.stdout),
            "done 1\n",
            "{mode}: {stderr}"
        );
        assert_eq!(counts(&session), expected(), "{mode}");
        let module = &session.counted[0].module;
        assert!(module.ends_with("/calls"), "{module}");
        // The summary after the recording has the table.
        assert!(
            stderr.contains("4 functions counted, 1,012,452 calls (exact)"),
            "{mode}: {stderr}"
        );
        assert!(uprobes_on(&exe).is_empty(), "{:?}", uprobes_on(&exe));
    }
}

#[test]
fn prof_report_calls_prints_counts_beside_sampled_time_per_call() {
    let dir = TempDir::new("calls_report");
    let exe = build_c(dir.path(), "calls");
    let (output, session) = record(
        &dir,
        &["--calls", "^(leaf|parse)$", "--", exe.to_str().unwrap()],
    );
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let file = dir.join("out.json.gz");
    let report = prof(&[
        "report",
        file.to_str().unwrap(),
        "--calls",
        "--sort",
        "total",
    ]);
    assert!(
        report.status.success(),
        "{}",
        String::from_utf8_lossy(&report.stderr)
    );
    let text = String::from_utf8(report.stdout).unwrap();
    assert!(
        text.starts_with("2 functions counted, 1,012,345 calls (exact)"),
        "{text}"
    );
    // Each row: %SELF SELF TOTAL CALLS self/call total/call FUNCTION (MODULE); the per-call
    // columns are the weights over the exact count, from the same aggregation as the library's.
    let table = prof::aggregate::TableOptions::default()
        .sort(prof::aggregate::SortBy::Total)
        .calls(&session)
        .unwrap();
    for row in table.rows() {
        let line = text
            .lines()
            .find(|l| l.ends_with(&format!("  {} (calls)", row.name)))
            .unwrap_or_else(|| panic!("{} in {text}", row.name));
        assert!(
            line.contains(&prof::aggregate::thousands(row.calls)),
            "{line}"
        );
        assert_eq!(row.total_per_call(), row.total_weight / row.calls);
        assert!(row.total_weight >= row.self_weight, "{row:?}");
    }
    // parse calls leaf: its total holds leaf's samples, and both had samples.
    let parse = table.rows().iter().find(|r| r.name == "parse").unwrap();
    let leaf = table.rows().iter().find(|r| r.name == "leaf").unwrap();
    assert_eq!((parse.calls, leaf.calls), (12_345, 1_000_000));
    assert!(
        parse.total_weight > 0 && leaf.total_weight > 0,
        "{parse:?} {leaf:?}"
    );
    // Built without debug info, prof cannot see inlined copies and says so; with it, it sees
    // that these functions (noinline) have none.
    assert!(text.contains("no debug info in calls:"), "{text}");
    assert!(session.counted.iter().all(|c| c.inlined.is_none()));
    let with_debug = prof_e2e::recorded::compile(
        "cc",
        &["-O2", "-g", "-fomit-frame-pointer"],
        &prof_e2e::recorded::source("calls.c"),
        &dir.join("calls_g"),
    );
    let (output, debug) = record(
        &dir,
        &["--calls", "^depth$", "--", with_debug.to_str().unwrap()],
    );
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert_eq!(debug.counted.len(), 1);
    assert_eq!(
        (debug.counted[0].calls, debug.counted[0].inlined),
        (100, Some(false))
    );
    // A session without counts says so in one line.
    let plain = dir.join("plain.json.gz");
    let (output, _) = record(&dir, &["--", exe.to_str().unwrap()]);
    assert!(output.status.success());
    std::fs::rename(dir.join("out.json.gz"), &plain).unwrap();
    let refused = prof(&["report", plain.to_str().unwrap(), "--calls"]);
    assert_eq!(refused.status.code(), Some(2));
    let message = String::from_utf8_lossy(&refused.stderr);
    assert_eq!(message.lines().count(), 1, "{message}");
    assert!(
        message.contains("no function's calls were counted"),
        "{message}"
    );
}

#[test]
fn patterns_that_match_nothing_too_much_or_are_not_patterns_are_refused_before_the_run() {
    let dir = TempDir::new("calls_refused");
    let exe = build_c(dir.path(), "calls");
    let out = dir.join("never.json.gz");
    let cases: [(&[&str], &str); 3] = [
        (
            &["--calls", "no_such_function_anywhere"],
            "matches no function with a symbol in calls, libc.so.6",
        ),
        (
            &["--calls", "^(leaf|parse)$", "--calls-max", "1"],
            "matches 2 functions, more than 1",
        ),
        (&["--calls", "(parse"], "is not a regular expression"),
    ];
    for (args, says) in cases {
        let mut all = vec!["record", "-o", out.to_str().unwrap()];
        all.extend_from_slice(args);
        all.extend_from_slice(&["--", exe.to_str().unwrap()]);
        let output = prof(&all);
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "{args:?}: {stderr}");
        assert_eq!(stderr.lines().count(), 1, "{args:?}: {stderr}");
        assert!(stderr.contains(says), "{args:?}: {stderr}");
        // Refused before the command ran: it printed nothing, and nothing was saved.
        assert!(output.stdout.is_empty(), "{args:?}");
        assert!(!out.exists(), "{args:?}");
    }
}

#[test]
fn the_uprobes_of_a_killed_prof_are_removed_by_the_next_one() {
    let dir = TempDir::new("calls_killed");
    let exe = build_c(dir.path(), "calls");
    let out = dir.join("killed.json.gz");
    // A million counted calls take seconds (a trap each): prof is killed meanwhile.
    let mut killed = std::process::Command::new(prof_e2e::prof_bin())
        .args([
            "record",
            "-o",
            out.to_str().unwrap(),
            "--calls",
            "^leaf$",
            "--",
        ])
        .arg(&exe)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let group = format!("prof_{}/", killed.id());
    let defined = |group: &str| {
        std::fs::read_to_string("/sys/kernel/tracing/uprobe_events")
            .unwrap_or_default()
            .lines()
            .filter(|l| l.contains(group))
            .count()
    };
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while defined(&group) == 0 && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    killed.kill().unwrap();
    killed.wait().unwrap();
    // The program, no longer prof's, runs on: end it (its path is this test's own).
    let _ = std::process::Command::new("pkill")
        .arg("-f")
        .arg(exe.to_str().unwrap())
        .status();
    assert_eq!(
        defined(&group),
        1,
        "a killed prof leaves its uprobe defined"
    );
    let (output, _) = record(&dir, &["--calls", "^depth$", "--", exe.to_str().unwrap()]);
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert_eq!(
        defined(&group),
        0,
        "the next prof removed the killed one's uprobes"
    );
}

/// What `tests/data/record/timed.c` measured of one function: its calls, and their time around
/// each call (in the caller) and inside (from the function's first statement to its last), in
/// nanoseconds.
#[derive(Clone, Copy, Debug)]
struct OwnClock {
    calls: u64,
    around: f64,
    inside: f64,
}

/// The program's own figures from its line: `outer CALLS AROUND INSIDE work CALLS AROUND INSIDE
/// nest N`.
fn own_clock(stdout: &str) -> (OwnClock, OwnClock) {
    let words: Vec<&str> = stdout.split_whitespace().collect();
    let number = |i: usize| -> f64 {
        words
            .get(i)
            .and_then(|w| w.parse().ok())
            .unwrap_or_else(|| panic!("{stdout}"))
    };
    let clock = |at: usize| OwnClock {
        calls: number(at) as u64,
        around: number(at + 1),
        inside: number(at + 2),
    };
    (clock(1), clock(5))
}

#[test]
fn timed_calls_give_each_calls_time_as_the_program_measures_it_and_spans_on_the_timeline() {
    let dir = TempDir::new("calls_timed");
    let exe = build_c(dir.path(), "timed");
    let (output, session) = record(
        &dir,
        &[
            "--calls",
            "^(outer|work|nest)$",
            "--calls-timed",
            "--",
            exe.to_str().unwrap(),
        ],
    );
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let (own_outer, own_work) = own_clock(&stdout);
    assert_eq!((own_outer.calls, own_work.calls), (40, 80), "{stdout}");
    let counted = |name: &str| {
        session
            .counted
            .iter()
            .find(|c| c.name == name)
            .unwrap_or_else(|| panic!("{name} not counted: {:?}", session.counted))
    };
    let (outer, work, nest) = (counted("outer"), counted("work"), counted("nest"));
    assert_eq!((outer.calls, work.calls, nest.calls), (40, 80, 80));
    let outer_timed = outer.timed.expect("outer timed");
    let work_timed = work.timed.expect("work timed");
    // Every call of outer and work returned while prof recorded: all of them timed.
    assert_eq!((outer_timed.calls, work_timed.calls), (40, 80));
    // prof's records of a call's entry and return come after the caller's clock read before
    // the call and before the function's first statement, and after its last statement and
    // before the caller's read after it: its time of the calls lies between the program's
    // inside and around figures (2% either side for the clock reads themselves). On an idle
    // machine the two are within 1% of each other; on a busy one the thread is often
    // switched out as it leaves a probe's trap, and the gap grows.
    let between = |prof_ns: u64, low: f64, high: f64, what: &str| {
        let t = prof_ns as f64;
        assert!(
            t >= 0.98 * low && t <= 1.02 * high,
            "{what}: prof {prof_ns} ns, the program {low:.0} ns inside, {high:.0} ns around\n{stdout}\n{stderr}"
        );
    };
    between(
        work_timed.total_ns,
        own_work.inside,
        own_work.around,
        "work's total",
    );
    between(
        work_timed.self_ns,
        own_work.inside,
        own_work.around,
        "work's self",
    );
    between(
        outer_timed.total_ns,
        own_outer.inside,
        own_outer.around,
        "outer's total",
    );
    between(
        outer_timed.self_ns,
        own_outer.inside - own_work.around,
        own_outer.around - own_work.inside,
        "outer's self",
    );
    // The recursion: its timed calls are the returns the kernel probed (it hijacks at most 64
    // nested ones on a thread), never more than were made, and its total is the outermost's.
    let nest_timed = nest.timed.expect("nest timed");
    assert!(
        (64..=80).contains(&nest_timed.calls),
        "{nest_timed:?}\n{stderr}"
    );
    // Each timed call is a span of the scopes model, work's inside outer's.
    let scopes = &session.scopes;
    let site_name = |span: &prof::session::Span| session.str(scopes.site(span.site).name);
    let work_spans: Vec<_> = scopes
        .spans
        .iter()
        .filter(|s| site_name(s) == "work")
        .collect();
    assert_eq!(work_spans.len(), 80);
    assert!(work_spans
        .iter()
        .all(|s| s.parent.map(|p| site_name(scopes.span(p))) == Some("outer")));
    // Samples in work are in a work span, and unwind past the return addresses the kernel
    // replaced while the calls ran, to main.
    let mut in_work = 0;
    let mut reach_main = 0;
    let mut in_span = 0;
    for (i, &stack) in session.samples.stack.iter().enumerate() {
        let names: Vec<&str> = session
            .stack_frames(stack)
            .map(|f| session.frame_name(f))
            .collect();
        if !names.contains(&"work") {
            continue;
        }
        in_work += 1;
        reach_main += u64::from(names.contains(&"main"));
        let scope = session.samples.scope.get(i).copied().flatten();
        in_span += u64::from(scope.is_some_and(|s| site_name(scopes.span(s)) == "work"));
    }
    assert!(in_work >= 20, "{in_work} samples in work\n{stderr}");
    assert!(
        reach_main * 100 >= in_work * 95,
        "{reach_main} of {in_work} samples in work reach main"
    );
    assert!(
        in_span * 100 >= in_work * 95,
        "{in_span} of {in_work} samples in work are in its span"
    );
    // `prof report --calls` prints the timed columns.
    let file = dir.join("out.json.gz");
    let report = prof(&["report", file.to_str().unwrap(), "--calls"]);
    let text = String::from_utf8_lossy(&report.stdout);
    assert!(report.status.success(), "{text}");
    assert!(text.contains("t.self/call t.total/call"), "{text}");
    // And the uprobes are gone.
    assert!(uprobes_on(&exe).is_empty(), "{:?}", uprobes_on(&exe));
}
