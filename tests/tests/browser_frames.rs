//! What the Firefox Profiler's users reach for on every frame (issue 39), in a real headless
//! Chromium against `prof serve`: the call tree's and Top functions' module column (frames
//! without a symbol included) and sample counts beside the weights, equal to what
//! `prof report --type samples` prints; and the frame menu of the flame graph, call tree,
//! Sandwich and stack chart (right-click, or Shift+F10 on the keyboard's frame or the selected
//! row), whose items copy
//! the frame's name, its stack (outermost first, one per line) and a link that opens the view
//! with that frame selected. A missing browser fails these tests: they never skip.

use prof::session::{FrameSpec, Metadata, Mode, SessionBuilder};
use prof_e2e::page::keys::{ARROW_DOWN, ARROW_UP, ENTER, F10, SHIFT};
use prof_e2e::page::{console_problems, eventually, open_ok, report_rows, LOAD};
use prof_e2e::served::Served;
use prof_e2e::sessions::{self, MS};
use prof_e2e::webdriver::Browser;
use prof_e2e::TempDir;
use serde_json::{json, Value};
use std::collections::HashMap;

/// The name prof gives a frame no symbol names: its module's file name and file address.
const BARE: &str = "liblzma.so.5+0x4290";

fn js(browser: &Browser, expr: &str) -> Value {
    browser.eval(&format!("return ({expr});"), json!([]))
}

/// `xz` compressing, with times that are not a multiple of the sample count: `main` (no module
/// known) ×10 at 1 ms, `main;lzma_code` ×30 at 2 ms, and below it a frame of liblzma no symbol
/// names ×1,200 at 0.5 ms; CPU time and the `samples` count, as `prof record` writes them.
fn xz() -> prof::session::Session {
    let mut b = SessionBuilder::new(Metadata {
        program: "xz".into(),
        duration_ns: 670 * MS,
        mode: Mode::Cpu,
        extra_sample_types: Mode::Cpu.extra_sample_types(),
        requested_interval_ns: MS,
        achieved_interval_ns: MS,
        ..Metadata::default()
    });
    let liblzma = "/usr/lib/x86_64-linux-gnu/liblzma.so.5";
    let main = b.intern_frame(&FrameSpec {
        file: Some("src/xz/main.c"),
        line: Some(12),
        ..FrameSpec::named("main")
    });
    let lzma = b.intern_frame(&FrameSpec {
        module: Some(liblzma),
        ..FrameSpec::named("lzma_code")
    });
    let bare = b.intern_frame(&FrameSpec {
        module: Some(liblzma),
        address: Some(0x4290),
        ..FrameSpec::named(BARE)
    });
    let t = b.thread(7, "xz");
    let mut time = 0;
    for (path, count, weight) in [
        (vec![main], 10, MS),
        (vec![main, lzma], 30, 2 * MS),
        (vec![main, lzma, bare], 1200, MS / 2),
    ] {
        let stack = b.intern_stack_path(&path).unwrap();
        for _ in 0..count {
            b.push_sample(stack, t, time, weight);
            time += weight;
        }
    }
    b.finish()
}

fn serve_xz(dir: &TempDir) -> (std::path::PathBuf, Served) {
    let file = dir.join("xz.json");
    sessions::save(&xz(), &file);
    let served = Served::start(&[&file], &["--port", "0"]);
    (file, served)
}

/// What `prof report --type samples` prints, by function: (total, self) samples.
fn report_samples(file: &std::path::Path) -> HashMap<String, (String, String)> {
    report_rows(file, &["--type", "samples", "--top", "100"])
        .into_iter()
        .map(|r| (r.name, (r.total, r.self_weight)))
        .collect()
}

/// The rows view `id` shows, once every row on screen has its texts: (name, counts, module).
fn shown(browser: &Browser, id: &str, rows: usize) -> Vec<(String, Vec<String>, String)> {
    let mut out = Vec::new();
    eventually(&format!("{rows} rows of {id} with their texts"), || {
        let v = browser.eval(
            "return window.profViewer.views.get(arguments[0]).shownRows();",
            json!([id]),
        );
        out = v
            .as_array()
            .unwrap()
            .iter()
            .map(|r| {
                (
                    r["name"].as_str().unwrap_or_default().to_owned(),
                    serde_json::from_value(r["counts"].clone()).unwrap_or_default(),
                    r["module"].as_str().unwrap_or_default().to_owned(),
                )
            })
            .collect();
        out.len() == rows
            && out
                .iter()
                .all(|(_, c, _): &(_, Vec<String>, _)| c.len() == 2 && !c[0].is_empty())
    });
    out
}

#[test]
fn tables_show_each_frames_module_and_samples_as_prof_report_counts_them() {
    let dir = TempDir::new("browser-frames-columns");
    let (file, served) = serve_xz(&dir);
    let report = report_samples(&file);
    assert_eq!(report[BARE], ("1,200".to_owned(), "1,200".to_owned()));
    let browser = Browser::start("frames-columns", 1280, 800, 1.0);
    open_ok(&browser, &served.url);

    // The call tree, opened along its heaviest path: Total, Samples, Self, Samples, Function,
    // Module.
    browser.eval(
        "window.profViewer.state.update({ view: 'calltree' });",
        json!([]),
    );
    let rows = shown(&browser, "calltree", 3);
    let module = |name: &str| if name == "main" { "" } else { "liblzma.so.5" };
    for (name, counts, shown_module) in &rows {
        let (total, own) = &report[name];
        assert_eq!(counts, &[total.clone(), own.clone()], "{name}");
        assert_eq!(shown_module, module(name), "{name}");
    }
    assert_eq!(
        rows.iter().map(|r| r.0.as_str()).collect::<Vec<_>>(),
        ["main", "lzma_code", BARE]
    );
    browser.screenshot("frames-01-call-tree-columns");

    // Inverted: the roots are who spends the samples, each its own self.
    browser.eval(
        "window.profViewer.state.update({ inverted: true });",
        json!([]),
    );
    let rows = shown(&browser, "calltree", 3);
    for (name, counts, _) in &rows {
        let (_, own) = &report[name];
        assert_eq!(counts, &[own.clone(), own.clone()], "{name}");
    }

    // Top functions: Function, Self, Samples, Total, Samples, Module.
    browser.eval(
        "window.profViewer.state.update({ view: 'table', inverted: false });",
        json!([]),
    );
    let rows = shown(&browser, "table", 3);
    for (name, counts, shown_module) in &rows {
        let (total, own) = &report[name];
        assert_eq!(counts, &[own.clone(), total.clone()], "{name}");
        assert_eq!(shown_module, module(name), "{name}");
    }
    browser.screenshot("frames-02-table-columns");
    assert_eq!(console_problems(&browser), Vec::<String>::new());
}

/// Makes the page's clipboard refuse (as it does on an insecure origin or without
/// permission), so that copies take the page's fallback (a selected text area), whose text
/// each copy event records in `window.copied`.
fn record_copies(browser: &Browser) {
    browser.eval(
        "window.copied = [];
         navigator.clipboard.writeText = () => Promise.reject(new Error('refused'));
         document.addEventListener('copy', (e) => {
           const area = e.target instanceof HTMLTextAreaElement ? e.target : document.activeElement;
           window.copied.push(area.value.slice(area.selectionStart, area.selectionEnd));
         });",
        json!([]),
    );
}

/// Clicks the open frame menu's item `label` and returns the text it copied.
fn copy_item(browser: &Browser, label: &str) -> String {
    browser.wait_for(
        "!document.querySelector('.transform-menu').hidden",
        LOAD,
        "the frame menu",
    );
    let before = js(browser, "window.copied.length").as_u64().unwrap();
    browser.eval(
        "const item = [...document.querySelectorAll('.transform-menu button')]
           .find((b) => b.textContent === arguments[0]);
         item.id = 'menu-item';",
        json!([label]),
    );
    browser.click(&browser.find("#menu-item"));
    browser.wait_for(
        &format!("window.copied.length > {before}"),
        LOAD,
        &format!("the copy of {label}"),
    );
    js(browser, &format!("window.copied[{before}]"))
        .as_str()
        .unwrap()
        .to_owned()
}

/// The middle of a box (`{x, y, width, height}` in CSS pixels).
fn middle(rect: &Value) -> (f64, f64) {
    let f = |k: &str| rect[k].as_f64().unwrap();
    (f("x") + f("width") / 2.0, f("y") + f("height") / 2.0)
}

/// Right-clicks the middle of `rect` on canvas `selector`.
fn right_click(browser: &Browser, selector: &str, rect: &Value) {
    let (x, y) = middle(rect);
    browser.right_click_at(&browser.find(selector), x, y);
}

#[test]
fn every_frames_menu_copies_its_name_stack_and_a_link() {
    let dir = TempDir::new("browser-frames-menu");
    let (_, served) = serve_xz(&dir);
    let browser = Browser::start("frames-menu", 1280, 800, 1.0);
    open_ok(&browser, &served.url);
    browser.wait_for("window.profViewer.layout", LOAD, "the flame graph");
    record_copies(&browser);
    let stack = format!("main\nlzma_code\n{BARE}");

    // The flame graph's keyboard: the first arrow focuses the root, each next one the widest
    // callee, up to the bare frame; Shift+F10 opens its menu, Down and Enter copy its stack.
    for _ in 0..4 {
        browser.press_key(ARROW_UP);
    }
    assert_eq!(
        js(
            &browser,
            "window.profViewer.layout.names[window.profViewer.layout.func[window.profViewer.flame.focused]]"
        ),
        json!(BARE)
    );
    let before = js(&browser, "window.copied.length").as_u64().unwrap();
    browser.press_chord(&[SHIFT, F10]);
    browser.wait_for(
        "document.activeElement?.textContent === 'Copy name'",
        LOAD,
        "the focused frame's menu",
    );
    browser.press_key(ARROW_DOWN);
    browser.press_key(ENTER);
    browser.wait_for(
        &format!("window.copied.length > {before}"),
        LOAD,
        "the keyboard's copy of the stack",
    );
    assert_eq!(
        js(&browser, &format!("window.copied[{before}]")),
        json!(stack)
    );

    // The flame graph: right-click the bare frame.
    let frame = js(
        &browser,
        &format!("window.profViewer.framesNamed('{BARE}')[0]"),
    );
    right_click(&browser, "#flame-canvas", &frame);
    browser.screenshot("frames-03-flame-menu");
    assert_eq!(copy_item(&browser, "Copy name"), BARE);
    right_click(&browser, "#flame-canvas", &frame);
    assert_eq!(copy_item(&browser, "Copy stack"), stack);
    right_click(&browser, "#flame-canvas", &frame);
    let link = copy_item(&browser, "Copy link to this view");
    assert!(
        link.starts_with(&served.url.replace("#", "")) && link.contains("selected="),
        "{link}"
    );

    // The call tree: Shift+F10 on the selected row, then Enter on the first item.
    browser.eval(
        &format!("window.profViewer.state.update({{ view: 'calltree', node: ['main', 'lzma_code', '{BARE}'] }});"),
        json!([]),
    );
    shown(&browser, "calltree", 3);
    browser.eval("document.querySelector('.tree-rows').focus();", json!([]));
    let before = js(&browser, "window.copied.length").as_u64().unwrap();
    browser.press_chord(&[SHIFT, F10]);
    browser.wait_for(
        "document.activeElement?.textContent === 'Copy name'",
        LOAD,
        "the row's menu, its first item focused",
    );
    browser.press_key(ENTER);
    browser.wait_for(
        &format!("window.copied.length > {before}"),
        LOAD,
        "the keyboard's copy",
    );
    assert_eq!(
        js(&browser, &format!("window.copied[{before}]")),
        json!(BARE)
    );
    // Right-click another row.
    browser.eval(
        "[...document.querySelectorAll('.tree-rows .row')].find((r) => r.querySelector('.label').dataset.name === 'lzma_code').id = 'lzma-row';",
        json!([]),
    );
    browser.right_click_at(&browser.find("#lzma-row"), 200.0, 10.0);
    assert_eq!(copy_item(&browser, "Copy stack"), "main\nlzma_code");

    // The Sandwich of lzma_code: its callee's stack runs from it, its caller's to it.
    browser.eval(
        "window.profViewer.state.update({ view: 'sandwich', selected: 'lzma_code' });",
        json!([]),
    );
    browser.wait_for(
        &format!("window.profViewer.views.get('sandwich').framesNamed('callees', '{BARE}').length"),
        LOAD,
        "the Sandwich",
    );
    for (side, name, expected) in [
        ("callees", BARE, format!("lzma_code\n{BARE}")),
        ("callers", "main", "main\nlzma_code".to_owned()),
    ] {
        browser.eval(
            &format!(
                "document.querySelector('.sandwich-{side} canvas').id = 'sandwich-{side}-canvas';"
            ),
            json!([]),
        );
        let frame = js(
            &browser,
            &format!("window.profViewer.views.get('sandwich').framesNamed('{side}', '{name}')[0]"),
        );
        right_click(&browser, &format!("#sandwich-{side}-canvas"), &frame);
        assert_eq!(copy_item(&browser, "Copy stack"), expected, "{side}");
    }

    // The stack chart.
    browser.eval(
        "window.profViewer.state.update({ view: 'stack-chart', selected: null });",
        json!([]),
    );
    browser.wait_for(
        &format!("window.profViewer.views.get('stack-chart').boxesNamed('{BARE}').length"),
        LOAD,
        "the stack chart",
    );
    let frame = js(
        &browser,
        &format!("window.profViewer.views.get('stack-chart').boxesNamed('{BARE}')[0]"),
    );
    right_click(&browser, "#stack-chart-canvas", &frame);
    browser.screenshot("frames-04-stack-chart-menu");
    assert_eq!(copy_item(&browser, "Copy stack"), stack);
    right_click(&browser, "#stack-chart-canvas", &frame);
    let chart_link = copy_item(&browser, "Copy link to this view");
    assert_eq!(console_problems(&browser), Vec::<String>::new());

    // The links open their views with the frame selected: the flame graph's with its node.
    browser.goto("about:blank");
    open_ok(&browser, &link);
    browser.wait_for("window.profViewer.layout", LOAD, "the flame graph");
    assert_eq!(
        js(&browser, "window.profViewer.state.current.selected"),
        json!(BARE)
    );
    assert_eq!(
        js(&browser, "window.profViewer.state.current.view"),
        json!("flame")
    );
    assert_eq!(
        js(&browser, "window.profViewer.state.current.node"),
        json!(["main", "lzma_code", BARE])
    );
    browser.goto("about:blank");
    open_ok(&browser, &chart_link);
    assert_eq!(
        js(&browser, "window.profViewer.state.current.selected"),
        json!(BARE)
    );
    assert_eq!(
        js(&browser, "window.profViewer.state.current.view"),
        json!("stack-chart")
    );
}

/// `prof record --calls` counted `lzma_code` (and a function never sampled): Top functions has a
/// Calls column with its exact calls, empty for the functions not counted, as `prof report`'s
/// CALLS column prints them; a session that counted nothing has no such column.
#[test]
fn top_functions_shows_the_counted_calls_as_prof_report_does() {
    let dir = TempDir::new("browser-frames-calls");
    let file = dir.join("counted.json");
    let mut session = xz();
    session.counted = vec![
        prof::session::CountedFunction {
            name: "lzma_code".into(),
            module: "/usr/lib/liblzma.so.5".into(),
            offset: 0x1230,
            calls: 12_345,
            inlined: None,
            timed: None,
        },
        prof::session::CountedFunction {
            name: "never_sampled".into(),
            module: "/usr/lib/liblzma.so.5".into(),
            offset: 0x4560,
            calls: 7,
            inlined: None,
            timed: None,
        },
    ];
    sessions::save(&session, &file);
    // prof report's CALLS column (before FRAME): lzma_code's count, nothing for the others.
    let out = prof_e2e::prof(&["report", file.to_str().unwrap()]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.lines().nth(1).unwrap().contains("CALLS"), "{text}");
    let line = text.lines().find(|l| l.ends_with("  lzma_code")).unwrap();
    assert!(line.contains(" 12,345  lzma_code"), "{line}");
    let served = Served::start(&[&file], &["--port", "0"]);
    let browser = Browser::start("frames-calls", 1280, 800, 1.0);
    open_ok(&browser, &format!("{}#view=table", served.url));
    let mut calls = json!(null);
    eventually("the Calls column", || {
        calls = browser.eval(
            "const rows = window.profViewer.views.get('table').shownRows();
             return rows.length === 3 && rows.every((r) => r.counts[0]) ?
               Object.fromEntries(rows.map((r) => [r.name, r.calls])) : null;",
            json!([]),
        );
        calls.is_object()
    });
    assert_eq!(calls, json!({"main": "", "lzma_code": "12,345", BARE: ""}));
    let head = js(
        &browser,
        "!document.querySelector('[data-view=table] .grid-head .calls').hidden",
    );
    assert_eq!(head, json!(true));
    browser.screenshot("frames-05-table-calls");
    // A session without counts: no column.
    let plain = dir.join("plain.json");
    sessions::save(&xz(), &plain);
    let served = Served::start(&[&plain], &["--port", "0"]);
    open_ok(&browser, &format!("{}#view=table", served.url));
    eventually("rows without calls", || {
        js(
            &browser,
            "window.profViewer.views.get('table').shownRows().length === 3 && \
             window.profViewer.views.get('table').shownRows().every((r) => r.calls === null) && \
             document.querySelector('[data-view=table] .grid-head .calls').hidden",
        ) == json!(true)
    });
    assert_eq!(console_problems(&browser), Vec::<String>::new());
}
