//! Scopes and tasks end to end: `prof report --scopes`, `--group-by task`,
//! `--group-by scope` with its call counts, `--task`, `--scope`, and the exports (`go tool pprof -tags` and `-tagfocus` on the pprof labels, folded
//! stacks grouped by task), on a session written by prof's own writer. Expected numbers are
//! computed here from the session's spans and samples, not by prof's aggregation.

use prof::aggregate::{format_ms, format_percent, format_weight};
use prof::session::Session;
use prof_e2e::sessions::{save, scoped_tasks};
use prof_e2e::{prof, prof_stdout, TempDir};
use std::path::PathBuf;
use std::process::Command;

fn saved(test: &str) -> (TempDir, Session, PathBuf) {
    let dir = TempDir::new(test);
    let session = scoped_tasks();
    let path = dir.join("scoped.json.gz");
    save(&session, &path);
    (dir, session, path)
}

/// The durations of the spans of the scope `name`, shortest first.
fn durations(session: &Session, name: &str) -> Vec<u64> {
    let scopes = &session.scopes;
    let mut d: Vec<u64> = scopes
        .spans
        .iter()
        .filter(|s| session.str(scopes.site(s.site).name) == name)
        .map(|s| s.end_ns - s.start_ns)
        .collect();
    d.sort_unstable();
    d
}

/// The weight of the samples taken in a task named `name`.
fn task_weight(session: &Session, name: &str) -> u64 {
    let samples = &session.samples;
    (0..samples.len())
        .filter(|&i| {
            samples.task[i].is_some_and(|t| session.str(session.tasks.task(t).name) == name)
        })
        .map(|i| samples.weight[i])
        .sum()
}

/// The columns of the report line ending in `name`.
fn row<'a>(text: &'a str, name: &str) -> Vec<&'a str> {
    let line = text
        .lines()
        .find(|l| l.split_whitespace().last() == Some(name))
        .unwrap_or_else(|| panic!("no row {name} in\n{text}"));
    line.split_whitespace().collect()
}

#[test]
fn report_scopes_prints_exact_calls_and_durations_per_call() {
    let (_dir, session, path) = saved("scopes-report");
    let text = prof_stdout(&["report", path.to_str().unwrap(), "--scopes"]);
    let request = durations(&session, "request");
    let parse = durations(&session, "parse");
    let total: u64 = request.iter().sum();
    let parse_total: u64 = parse.iter().sum();
    // Nearest rank: the smallest duration with at least p% of the calls at or below it.
    let rank = |d: &[u64], p: usize| d[(d.len() * p).div_ceil(100) - 1];
    let calls = request.len() as u64;
    assert_eq!(calls, 30);
    let expected = [
        calls.to_string(),
        format_ms(total),
        format_ms(total - parse_total),
        format_ms((total - parse_total) / calls),
        format_ms(total / calls),
        format_ms(request[0]),
        format_ms(request[request.len() - 1]),
        format_ms(rank(&request, 50)),
        format_ms(rank(&request, 99)),
        "request".to_owned(),
    ];
    assert_eq!(row(&text, "request"), expected, "{text}");
    let parse_row = row(&text, "parse");
    assert_eq!(
        parse_row[..3],
        ["30", &format_ms(parse_total), &format_ms(parse_total)]
    );
    // The most total time first.
    assert!(text.find("request").unwrap() < text.find("parse").unwrap());
}

#[test]
fn report_group_by_task_shows_each_task_names_share_as_its_total() {
    let (_dir, session, path) = saved("scopes-group");
    let text = prof_stdout(&[
        "report",
        path.to_str().unwrap(),
        "--group-by",
        "task",
        "--sort",
        "total",
    ]);
    let all = session.total_weight();
    let unit = &session.meta.sample_type;
    for name in ["fetch", "store"] {
        let weight = task_weight(&session, name);
        assert!(weight > 0);
        let columns = row(&text, &format!("task:{name}"));
        assert_eq!(
            columns[..3],
            [
                format_weight(unit, weight).split(' ').collect::<Vec<_>>(),
                vec![format_percent(weight, all).as_str()]
            ]
            .concat()[..],
            "{text}"
        );
    }
    let none = all - task_weight(&session, "fetch") - task_weight(&session, "store");
    assert_eq!(
        row(&text, "task:(none)")[2],
        format_percent(none, all),
        "{text}"
    );
}

/// The weight of the samples whose innermost open scope is named one of `names`, and how many
/// spans of the scope `name` start on a thread kept by `keep`.
fn scope_weight(session: &Session, names: &[&str]) -> u64 {
    let samples = &session.samples;
    let scopes = &session.scopes;
    (0..samples.len())
        .filter(|&i| {
            samples.scope[i].is_some_and(|s| {
                names.contains(&session.str(scopes.site(scopes.span(s).site).name))
            })
        })
        .map(|i| samples.weight[i])
        .sum()
}

fn calls(session: &Session, name: &str, keep: impl Fn(&str) -> bool) -> usize {
    let scopes = &session.scopes;
    scopes
        .spans
        .iter()
        .filter(|s| session.str(scopes.site(s.site).name) == name)
        .filter(|s| keep(session.str(session.threads[s.thread.index()].name)))
        .count()
}

#[test]
fn report_group_by_scope_shows_each_scopes_share_and_exact_calls() {
    let (dir, session, path) = saved("scopes-group-scope");
    let file = path.to_str().unwrap();
    let text = prof_stdout(&["report", file, "--group-by", "scope", "--sort", "total"]);
    let all = session.total_weight();
    let unit = &session.meta.sample_type;
    // TOTAL (2 words), (pct), SELF (2 words), (pct), CALLS, FRAME.
    let header: Vec<&str> = text.lines().nth(1).unwrap().split_whitespace().collect();
    assert_eq!(
        header,
        ["TOTAL", "(pct)", "SELF", "(pct)", "CALLS", "FRAME"]
    );
    for (name, inside) in [
        ("request", &["request", "parse"][..]),
        ("parse", &["parse"]),
    ] {
        let weight = scope_weight(&session, inside);
        assert!(weight > 0);
        let columns = row(&text, &format!("scope:{name}"));
        assert_eq!(
            columns[..2],
            *format_weight(unit, weight).split(' ').collect::<Vec<_>>()
        );
        assert_eq!(columns[2], format_percent(weight, all), "{text}");
        assert_eq!(
            columns[6],
            calls(&session, name, |_| true).to_string(),
            "{text}"
        );
    }
    // Rows that are not scopes have an empty CALLS cell: one column fewer.
    let none = row(&text, "scope:(none)");
    assert_eq!(none.len(), 7, "{text}");
    assert_eq!(
        none[2],
        format_percent(all - scope_weight(&session, &["request", "parse"]), all)
    );
    assert_eq!(row(&text, "server::handle").len(), 7, "{text}");
    // The calls honour the thread filter.
    let worker = "tokio-worker-0";
    let one = prof_stdout(&["report", file, "--group-by", "scope", "--thread", worker]);
    let expected = calls(&session, "request", |t| t == worker);
    assert!(expected > 0 && expected < calls(&session, "request", |_| true));
    assert_eq!(row(&one, "scope:request")[6], expected.to_string(), "{one}");
    // Without grouping by scope the table is as it was: no CALLS column.
    for args in [&[][..], &["--group-by", "task"]] {
        let plain = prof_stdout(&[&["report", file][..], args].concat());
        assert!(!plain.contains("CALLS"), "{plain}");
    }
    // Nor for a profile without scopes, which grouping by scope leaves as it is.
    let folded = dir.join("plain.folded");
    std::fs::write(&folded, "main;work 3\nmain;rest 1\n").unwrap();
    let plain = prof_stdout(&["report", folded.to_str().unwrap(), "--group-by", "scope"]);
    assert!(!plain.contains("CALLS"), "{plain}");
    assert!(plain.contains("work"), "{plain}");
}

#[test]
fn folded_export_groups_by_scope_outermost_first() {
    let (_dir, session, path) = saved("scopes-folded-scope");
    let text = prof_stdout(&[
        "convert",
        path.to_str().unwrap(),
        "--to",
        "folded",
        "--group-by",
        "scope",
        "-o",
        "-",
    ]);
    let sum = |prefix: &str| -> u64 {
        text.lines()
            .filter(|l| l.starts_with(prefix))
            .map(|l| l.rsplit(' ').next().unwrap().parse::<u64>().unwrap())
            .sum()
    };
    assert_eq!(
        sum("scope:request;scope:parse;tokio"),
        scope_weight(&session, &["parse"])
    );
    assert_eq!(
        sum("scope:request;tokio"),
        scope_weight(&session, &["request"])
    );
    assert!(sum("scope:(none);tokio") > 0);
    assert!(text.lines().all(|l| l.starts_with("scope:")), "{text}");
}

#[test]
fn report_task_and_scope_filters_keep_their_samples() {
    let (_dir, session, path) = saved("scopes-filter");
    let unit = &session.meta.sample_type;
    let header = |args: &[&str]| {
        let text = prof_stdout(&[&["report", path.to_str().unwrap()], args].concat());
        text.lines().next().unwrap().to_owned()
    };
    let store = task_weight(&session, "store");
    let line = header(&["--task", "store"]);
    assert!(
        line.contains(&format!("{} total", format_weight(unit, store))),
        "{line}"
    );
    // Inside `parse`: the samples whose scope is a parse span.
    let samples = &session.samples;
    let parse: u64 = (0..samples.len())
        .filter(|&i| {
            samples.scope[i].is_some_and(|s| {
                let site = session.scopes.span(s).site;
                session.str(session.scopes.site(site).name) == "parse"
            })
        })
        .map(|i| samples.weight[i])
        .sum();
    let line = header(&["--scope", "parse"]);
    assert!(
        line.contains(&format!("{} total", format_weight(unit, parse))),
        "{line}"
    );
    let out = prof(&["report", path.to_str().unwrap(), "--scope", "nope"]);
    assert!(!out.status.success());
    let err = String::from_utf8(out.stderr).unwrap();
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains("no scope named \"nope\"") && err.contains("parse, request"),
        "{err}"
    );
}

fn go_pprof(args: &[&str]) -> String {
    let out = Command::new("go")
        .args(["tool", "pprof"])
        .args(args)
        .output()
        .expect("go tool pprof runs (installed by .ci/run)");
    assert!(
        out.status.success(),
        "go tool pprof {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn pprof_export_labels_samples_with_task_and_scope_for_go_tool_pprof() {
    let (dir, session, path) = saved("scopes-pprof");
    let ours = dir.join("scoped.pb.gz");
    prof_stdout(&[
        "convert",
        path.to_str().unwrap(),
        "-o",
        ours.to_str().unwrap(),
    ]);
    let tags = go_pprof(&["-tags", ours.to_str().unwrap()]);
    for needle in ["task:", "fetch", "store", "scope:", "request", "parse"] {
        assert!(tags.contains(needle), "{needle} not in\n{tags}");
    }
    // -tagfocus keeps the samples of one task: imported back, the same total as --task.
    let focused = dir.join("store.pb.gz");
    go_pprof(&[
        "-proto",
        "-tagfocus=task=store",
        "-output",
        focused.to_str().unwrap(),
        ours.to_str().unwrap(),
    ]);
    let unit = &session.meta.sample_type;
    let text = prof_stdout(&["report", focused.to_str().unwrap()]);
    let store = format_weight(unit, task_weight(&session, "store"));
    assert!(
        text.lines()
            .next()
            .unwrap()
            .contains(&format!("{store} total")),
        "{text}"
    );
}

#[test]
fn folded_export_groups_by_task() {
    let (_dir, session, path) = saved("scopes-folded");
    let text = prof_stdout(&[
        "convert",
        path.to_str().unwrap(),
        "--to",
        "folded",
        "--group-by",
        "task",
        "-o",
        "-",
    ]);
    let sum = |root: &str| -> u64 {
        text.lines()
            .filter(|l| l.starts_with(&format!("{root};")))
            .map(|l| l.rsplit(' ').next().unwrap().parse::<u64>().unwrap())
            .sum()
    };
    assert_eq!(sum("task:fetch"), task_weight(&session, "fetch"));
    assert_eq!(sum("task:store"), task_weight(&session, "store"));
    assert!(sum("task:(none)") > 0);
    assert!(text.lines().all(|l| l.starts_with("task:")), "{text}");
}

#[test]
fn report_tasks_with_a_task_filter_shares_of_every_sample() {
    // `prof report --tasks --task fetch` showed fetch at 100%: its total kept the task filter
    // the rows had dropped.
    let (_dir, session, path) = saved("scopes-tasks-task");
    let text = prof_stdout(&[
        "report",
        path.to_str().unwrap(),
        "--tasks",
        "--task",
        "fetch",
    ]);
    let fetch = task_weight(&session, "fetch");
    let share = format_percent(fetch, session.total_weight());
    assert_ne!(share, format_percent(1, 1));
    assert!(row(&text, "fetch").contains(&share.as_str()), "{text}");
}

#[test]
fn report_scope_refuses_a_mark_name_and_tables_refuse_stack_options() {
    let (_dir, _session, path) = saved("scopes-refusals");
    let path = path.to_str().unwrap();
    // `gc` is a mark: never open, so no sample is inside it.
    let out = prof(&["report", path, "--scope", "gc"]);
    assert!(!out.status.success());
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(err.contains("no scope named \"gc\""), "{err}");
    for (table, option) in [
        ("--scopes", &["--group-by", "task"][..]),
        ("--tasks", &["--hide", "poll"][..]),
        ("--scopes", &["--collapse-recursion"][..]),
        ("--tasks", &["--top", "3"][..]),
    ] {
        let out = prof(&[&["report", path, table][..], option].concat());
        assert!(!out.status.success(), "{table} {option:?}");
        let err = String::from_utf8(out.stderr).unwrap();
        assert!(err.contains("cannot be used with"), "{err}");
    }
}

#[test]
fn convert_refuses_group_by_for_a_session_before_reading_the_input() {
    // The refusal came after loading the whole file: here, no file at all.
    let dir = TempDir::new("scopes-convert-refusal");
    let missing = dir.join("missing.json.gz");
    let out = prof(&[
        "convert",
        missing.to_str().unwrap(),
        "--to",
        "session",
        "--group-by",
        "task",
        "-o",
        dir.join("out.json").to_str().unwrap(),
    ]);
    assert!(!out.status.success());
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(err.contains("--group-by"), "{err}");
}

#[test]
fn report_marks_lists_every_mark_in_time_order_with_its_thread_and_fields() {
    let (_dir, session, path) = saved("scopes-marks");
    let path = path.to_str().unwrap();
    let scopes = &session.scopes;
    let mut marks: Vec<_> = scopes.marks.iter().collect();
    assert!(marks.len() >= 2, "the fixture has marks");
    marks.sort_by_key(|m| m.time_ns);
    let line_of = |m: &prof::session::Mark| {
        let thread = &session.threads[m.thread.index()];
        let fields: Vec<String> = m
            .fields
            .iter()
            .map(|f| format!("{}={}", session.str(f.key), session.str(f.value)))
            .collect();
        let mut words = vec![
            format!("{:.6}", m.time_ns as f64 / 1e9),
            session.str(thread.name).to_owned(),
            format!("({})", thread.tid),
            session.str(scopes.site(m.site).name).to_owned(),
        ];
        words.extend(fields);
        words
    };
    let text = prof_stdout(&["report", path, "--marks"]);
    let lines: Vec<Vec<String>> = text
        .lines()
        .skip(2)
        .map(|l| l.split_whitespace().map(str::to_owned).collect())
        .collect();
    assert!(
        text.starts_with(&format!("{} marks\n", marks.len())),
        "{text}"
    );
    let want: Vec<Vec<String>> = marks.iter().map(|m| line_of(m)).collect();
    assert_eq!(lines, want, "{text}");
    // The thread filter keeps that thread's marks only.
    let thread = &session.threads[marks[0].thread.index()];
    let tid = thread.tid.to_string();
    let text = prof_stdout(&["report", path, "--marks", "--tid", &tid]);
    let kept = marks.iter().filter(|m| m.thread == marks[0].thread).count();
    assert!(text.starts_with(&format!("{kept} marks\n")), "{text}");
    // As the library gives them.
    let report = prof::Report::new(session.clone());
    let list = report
        .marks(&prof::aggregate::TableOptions::default())
        .unwrap();
    assert_eq!(list.to_string(), prof_stdout(&["report", path, "--marks"]));
}
