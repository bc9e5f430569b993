//! The viewer groups a multi-process session's threads under their process, in a
//! real headless Chromium against `prof serve`: the thread selector lists each process with
//! its threads and a checkbox for all of them, and the timeline's tracks come process by
//! process. A missing browser fails this test: it never skips.

use prof::session::{FrameSpec, Metadata, Mode, Process, SessionBuilder};
use prof_e2e::page::{
    console_problems, eventually, open_ok, report_rows, report_total, top_table_rows, LOAD,
};
use prof_e2e::served::Served;
use prof_e2e::sessions::{self, MS};
use prof_e2e::webdriver::Browser;
use prof_e2e::TempDir;
use serde_json::{json, Value};

fn js(browser: &Browser, expr: &str) -> Value {
    browser.eval(&format!("return ({expr});"), json!([]))
}

/// A shell (pid 10) that started two runs of `spin` (11 and 12, the first with a helper
/// thread); the busiest process is 12.
fn shell_and_two_spins() -> prof::session::Session {
    let mut b = SessionBuilder::new(Metadata {
        program: "sh".into(),
        mode: Mode::Cpu,
        requested_interval_ns: MS,
        achieved_interval_ns: MS,
        ..Metadata::default()
    });
    let process = |pid, name: &str| Process {
        pid,
        parent_pid: (pid != 10).then_some(10),
        name: name.into(),
        command_line: vec![name.into()],
        executable: None,
    };
    let sh = b.push_process(process(10, "sh"));
    let first = b.push_process(process(11, "spin"));
    let second = b.push_process(process(12, "spin"));
    let f = b.intern_frame(&FrameSpec::named("work"));
    let stack = b.intern_stack_path(&[f]).unwrap();
    let mut time = 0;
    for (process, tid, name, count) in [
        (sh, 10, "sh", 5),
        (first, 11, "spin", 20),
        (first, 13, "helper", 10),
        (second, 12, "spin", 40),
    ] {
        let t = b.thread_in(process, tid, name);
        for _ in 0..count {
            b.push_sample(stack, t, time, MS);
            time += MS;
        }
    }
    b.finish()
}

#[test]
fn the_thread_selector_and_the_timeline_group_threads_under_their_process() {
    let dir = TempDir::new("browser-processes");
    let file = dir.join("processes.json");
    sessions::save(&shell_and_two_spins(), &file);
    let served = Served::start(&[&file], &["--port", "0"]);
    let browser = Browser::start("processes", 1280, 800, 1.0);
    open_ok(&browser, &served.url);
    browser.wait_for(
        "window.profViewer.timeline.data && window.profViewer.timeline.data.threads.length",
        LOAD,
        "the timeline",
    );
    assert_eq!(console_problems(&browser), Vec::<String>::new());

    // The timeline: the busiest process's tracks first, each process's together.
    let data = js(&browser, "window.profViewer.timeline.data");
    assert_eq!(
        data["labels"],
        json!(["spin [12]", "spin [11]", "helper [13]", "sh [10]"])
    );
    assert_eq!(
        data["groups"],
        json!([
            {"track": 0, "label": "spin [12]"},
            {"track": 1, "label": "spin [11]"},
            {"track": 3, "label": "sh [10]"}
        ])
    );

    // The selector: each process, then its threads.
    browser.click(&browser.find("#threads summary"));
    let listed = js(
        &browser,
        "[...document.querySelectorAll('#threads .process-group')].map((g) =>
           [...g.querySelectorAll('label')].map((l) => l.textContent.trim().split(':')[0]))",
    );
    assert_eq!(
        listed,
        json!([
            ["sh [10]", "sh [10]"],
            ["spin [11]", "spin [11]", "helper [13]"],
            ["spin [12]", "spin [12]"]
        ])
    );
    browser.screenshot("processes-01-selector");

    // Unchecking a process hides all its threads: every view shows what `prof report --pid`
    // leaves out.
    browser.click(&browser.find("#threads .process-group:nth-of-type(2) label.process input"));
    eventually("the threads of process 11 hidden", || {
        js(&browser, "window.profViewer.state.current.threads") == json!([0, 3])
    });
    let expected = report_rows(&file, &["--top", "5", "--pid", "10", "--pid", "12"]);
    assert_eq!(
        report_total(&file, &["--pid", "10", "--pid", "12"]),
        "45.0 ms"
    );
    eventually("the table of processes 10 and 12", || {
        top_table_rows(&browser, expected.len()) == expected
    });
    // The selector's tooltip says which `prof report` options show the same samples.
    let command = || js(&browser, "document.querySelector('#threads summary').title");
    eventually("the command of processes 10 and 12", || {
        command() == json!("prof report FILE --tid 10,12")
    });
    browser.screenshot("processes-02-one-hidden");

    // One thread of a process: `--tid` names it, and the report of that command is the page's.
    browser.eval(
        "window.profViewer.state.update({ threads: [2] });",
        json!([]),
    );
    eventually("the command of the helper thread", || {
        command() == json!("prof report FILE --tid 13")
    });
    let expected = report_rows(&file, &["--top", "5", "--tid", "13"]);
    assert_eq!(report_total(&file, &["--tid", "13"]), "10.0 ms");
    eventually("the table of the helper thread", || {
        top_table_rows(&browser, expected.len()) == expected
    });
    // Every thread: no option narrows the samples.
    browser.eval(
        "window.profViewer.state.update({ threads: null });",
        json!([]),
    );
    eventually("no command for every thread", || command() == json!(""));
}
