//! Sample types and thread states in a real headless Chromium against `prof serve`: the type
//! selector switches every number to another sample type, the state selector shows only the
//! time threads ran or waited, both live in the URL, and the numbers equal what `prof report`
//! prints with `--type` and `--state`. Screenshots go to `tests/artifacts/types-*`.
//!
//! A missing browser fails these tests: they never skip.

use prof::session::{FrameSpec, Metadata, Mode, SampleState, SampleType, Session, SessionBuilder};
use prof_e2e::page::{console_problems, eventually, open_ok, report_rows, show, text};
use prof_e2e::sessions::{self, MS};
use prof_e2e::webdriver::Browser;
use serde_json::json;
use std::collections::HashMap;

/// A wall-time session: `compute` runs, `wait_for_io` waits; each sample also carries the
/// sample count and a stored count (`syscalls`) that orders the functions differently.
fn wall_session() -> Session {
    wall_builder().finish()
}

/// [`wall_session`]'s builder, before it is finished.
fn wall_builder() -> SessionBuilder {
    let mut b = SessionBuilder::new(Metadata {
        program: "waiter".into(),
        mode: Mode::Wall,
        ..Metadata::default()
    });
    b.set_sample_types(
        Mode::Wall.sample_type(),
        vec![
            SampleType::samples(),
            SampleType::new("syscalls", prof::session::Unit::Count),
        ],
    );
    let main = b.intern_frame(&FrameSpec::named("main"));
    let compute = b.intern_frame(&FrameSpec::named("compute"));
    let wait = b.intern_frame(&FrameSpec::named("wait_for_io"));
    let s_compute = b.intern_stack_path(&[main, compute]).unwrap();
    let s_wait = b.intern_stack_path(&[main, wait]).unwrap();
    let t = b.thread(1, "main");
    let mut time = 0;
    // 3 samples of 10 ms computing, 1 sample of 50 ms waiting with 40 system calls.
    for _ in 0..3 {
        b.push_sample_full(
            s_compute,
            t,
            time,
            &[10 * MS, 0],
            1,
            Some(SampleState::Running),
        );
        time += 10 * MS;
    }
    b.push_sample_full(
        s_wait,
        t,
        time,
        &[50 * MS, 40],
        1,
        Some(SampleState::Waiting),
    );
    b
}

/// The top functions view's rows: name → [self, self %, total, total %].
fn table(browser: &Browser) -> HashMap<String, Vec<String>> {
    let rows = browser.eval(
        "return window.profViewer.views.get('table').shownRows();",
        json!([]),
    );
    rows.as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["title"].as_str().unwrap().to_owned(),
                serde_json::from_value(r["cells"].clone()).unwrap(),
            )
        })
        .collect()
}

/// What `prof report` prints for `file` with `args`: function → [self, self %, total, total %].
fn report(file: &std::path::Path, args: &[&str]) -> HashMap<String, Vec<String>> {
    report_rows(file, &[&["--top", "100"], args].concat())
        .into_iter()
        .map(|r| (r.name.clone(), r.table_view_cells()))
        .collect()
}

/// Waits until the table equals `expected` (every function's four cells).
fn wait_table(browser: &Browser, expected: &HashMap<String, Vec<String>>, what: &str) {
    let mut seen = HashMap::new();
    let found = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        eventually(what, || {
            seen = table(browser);
            &seen == expected
        })
    }));
    assert!(
        found.is_ok(),
        "{what}: page {seen:?}, expected {expected:?}"
    );
}

#[test]
fn the_sample_type_and_thread_state_selectors_change_every_number_as_prof_report_does() {
    let shown = show(
        "types",
        &wall_session(),
        "wall.json",
        (1100, 700),
        "#view=table",
    );
    let browser = &shown.browser;
    let served = &shown.served;
    let file = &shown.file;

    // The default type: wall time, as `prof report` prints it.
    wait_table(browser, &report(file, &[]), "wall time rows");
    assert!(text(browser, "#meta").contains("wall (nanoseconds)"));
    let options = browser.eval(
        "return [...document.querySelectorAll('#sample-type option')].map(o => o.textContent);",
        json!([]),
    );
    assert_eq!(
        options,
        json!(["wall (nanoseconds)", "samples (count)", "syscalls (count)"])
    );
    // The timeline marks the waiting part of each bar: 50 of the 80 ms were spent waiting.
    let mut parts = json!(null);
    eventually("the timeline's waiting part", || {
        parts = browser.eval(
            "const d = window.profViewer.timeline.data; if (!d) return null; \
             const sum = (a) => Array.from(a).reduce((x, y) => x + y, 0); \
             return [sum(d.height), sum(d.waiting)];",
            json!([]),
        );
        parts.is_array()
    });
    let (all, waiting) = (parts[0].as_f64().unwrap(), parts[1].as_f64().unwrap());
    assert!(
        (waiting / all - 50.0 / 80.0).abs() < 0.02,
        "waiting share of the timeline: {parts}"
    );
    browser.screenshot("types-01-wall");

    // Another type: every number follows, the header says it, the URL holds it.
    let choose = |selector: &str, value: &str| {
        browser.eval(
            "const s = document.querySelector(arguments[0]); s.value = arguments[1]; \
             s.dispatchEvent(new Event('change'));",
            json!([selector, value]),
        );
    };
    choose("#sample-type", "syscalls");
    wait_table(
        browser,
        &report(file, &["--type", "syscalls"]),
        "syscall rows",
    );
    assert!(text(browser, "#meta").contains("syscalls (count)"));
    let url = browser.eval("return location.hash;", json!([]));
    assert!(url.as_str().unwrap().contains("type=syscalls"), "{url}");
    browser.screenshot("types-02-syscalls");

    // Back to wall time, waiting only.
    choose("#sample-type", "wall");
    choose("#thread-state", "waiting");
    wait_table(
        browser,
        &report(file, &["--state", "waiting"]),
        "waiting rows",
    );
    let hash = browser.eval("return location.hash;", json!([])).to_string();
    assert!(
        hash.contains("state=waiting") && !hash.contains("type="),
        "{hash}"
    );
    browser.screenshot("types-03-waiting");

    // A copied URL restores both choices.
    open_ok(
        browser,
        &format!("{}#view=table&type=samples&state=running", served.url),
    );
    wait_table(
        browser,
        &report(file, &["--type", "samples", "--state", "running"]),
        "running sample counts",
    );
    assert_eq!(
        browser.eval(
            "return [document.querySelector('#sample-type').value, \
             document.querySelector('#thread-state').value];",
            json!([])
        ),
        json!(["samples", "running"])
    );
    assert_eq!(console_problems(browser), Vec::<String>::new());
}

/// A regression test: the type `task_wait` (offered when polls say where their tasks waited) shows the
/// waits between the tasks' polls in place of the samples, each on its `.await`'s stack, as
/// `prof report --waits` does; grouped by task as `--waits --group-by task` is.
#[test]
fn the_task_wait_type_shows_where_tasks_waited_as_prof_report_waits_does() {
    use prof::session::Poll;
    let mut b = wall_builder();
    let f = |b: &mut SessionBuilder, n: &str| b.intern_frame(&FrameSpec::named(n));
    let (serve, nap, sleep, recv) = (
        f(&mut b, "serve"),
        f(&mut b, "nap"),
        f(&mut b, "sleep"),
        f(&mut b, "recv"),
    );
    let at_sleep = b.intern_stack_path(&[serve, nap, sleep]).unwrap();
    let at_recv = b.intern_stack_path(&[serve, recv]).unwrap();
    let t = b.thread(1, "main");
    let (fetch, listen) = (b.intern_task(1, "fetch"), b.intern_task(2, "listen"));
    // fetch waits 20 ms in sleep twice; listen 78 ms in recv, until the end.
    for (task, start, end, at) in [
        (fetch, 0, MS, Some(at_sleep)),
        (listen, MS, 2 * MS, Some(at_recv)),
        (fetch, 21 * MS, 22 * MS, Some(at_sleep)),
        (fetch, 42 * MS, 43 * MS, None),
    ] {
        b.push_poll(Poll {
            task,
            thread: t,
            start_ns: start,
            end_ns: end,
            waited_at: at,
        });
    }
    b.meta_mut().duration_ns = 80 * MS;
    let shown = show(
        "types-waits",
        &b.finish(),
        "waits.json",
        (1100, 700),
        "#view=table",
    );
    let browser = &shown.browser;
    let file = &shown.file;
    wait_table(browser, &report(file, &[]), "wall time rows");
    browser.eval(
        "const s = document.querySelector('#sample-type'); s.value = 'task_wait'; \
         s.dispatchEvent(new Event('change'));",
        json!([]),
    );
    let expected = report(file, &["--waits"]);
    assert_eq!(expected["sleep"][2], "40.0 ms", "{expected:?}");
    wait_table(browser, &expected, "wait rows");
    assert!(text(browser, "#meta").contains("task_wait (nanoseconds)"));
    browser.screenshot("types-04-task-waits");
    assert_eq!(console_problems(browser), Vec::<String>::new());
}

/// A transform added or removed while the top functions or sandwich tab is shown changes its
/// numbers at once (they redrew only on another tab's visit before).
#[test]
fn the_table_and_sandwich_follow_a_transform_changed_while_they_are_shown() {
    let shown = show(
        "types-transforms",
        &sessions::transforms(),
        "transforms.json",
        (1100, 700),
        "#view=table",
    );
    let browser = &shown.browser;
    let file = &shown.file;
    wait_table(browser, &report(file, &[]), "all rows");
    browser.eval(
        "window.profViewer.state.update({transforms: [{kind: 'drop', function: 'eval'}]});",
        json!([]),
    );
    wait_table(
        browser,
        &report(file, &["--drop", "eval"]),
        "rows without eval",
    );

    browser.eval(
        "window.profViewer.state.update({view: 'sandwich', selected: 'lex', transforms: []});",
        json!([]),
    );
    let summary =
        |browser: &Browser| text(browser, "section[data-view=sandwich] .sandwich-function");
    let mut before = String::new();
    eventually("the sandwich of lex", || {
        before = summary(browser);
        !before.is_empty()
    });
    browser.eval(
        "window.profViewer.state.update({transforms: [{kind: 'drop', function: 'eval'}]});",
        json!([]),
    );
    eventually("the sandwich to follow the transform", || {
        let now = summary(browser);
        !now.is_empty() && now != before
    });
    assert_eq!(console_problems(browser), Vec::<String>::new());
}

/// The flame graph's frames of function `name`: x, y, width, height in CSS pixels.
fn flame_frame(browser: &Browser, name: &str) -> serde_json::Value {
    browser.eval(
        "return window.profViewer.framesNamed(arguments[0])[0] ?? null;",
        json!([name]),
    )
}

/// The tooltip's text, empty while it is hidden.
fn tooltip(browser: &Browser) -> String {
    browser
        .eval(
            "const t = document.getElementById('tooltip'); return t.hidden ? '' : t.textContent;",
            json!([]),
        )
        .as_str()
        .unwrap()
        .to_owned()
}

#[test]
fn the_tooltip_follows_a_type_or_time_change_made_under_a_still_pointer() {
    let shown = show(
        "types-tooltip",
        &wall_session(),
        "wall.json",
        (1100, 700),
        "",
    );
    let browser = &shown.browser;
    let main = flame_frame(browser, "main");
    browser.pointer_at(
        &browser.find("#flame-canvas"),
        main["x"].as_f64().unwrap() + 5.0,
        main["y"].as_f64().unwrap() + 5.0,
        false,
    );
    eventually("the tooltip of main", || {
        tooltip(browser).contains("80.0 ms")
    });
    // Another type, the pointer still: main's figures are now sample counts (4 samples).
    browser.eval(
        "window.profViewer.state.update({sampleType: 'samples'});",
        json!([]),
    );
    eventually("the tooltip to show the samples", || {
        let t = tooltip(browser);
        t.contains("main") && !t.contains("ms") && t.contains('4')
    });
    // Back to wall time, running only: main ran 30 of the 80 ms.
    browser.eval(
        "window.profViewer.state.update({sampleType: null, threadState: 'running'});",
        json!([]),
    );
    eventually("the tooltip to show the running time", || {
        tooltip(browser).contains("30.0 ms")
    });
    // The thread summary counts the samples the state keeps: 3 of the 4.
    eventually("the thread summary of the running samples", || {
        text(browser, "#threads summary") == "All threads (1): 3 of 4 samples"
    });
    browser.screenshot("r20-types-tooltip");
}
