//! The module of every frame in the hovers (issue 39, as the Firefox Profiler shows the
//! library), in a real headless Chromium against `prof serve`: the flame graph's, the stack
//! chart's and the Sandwich's tooltips and the call tree's name hover name the file of the
//! binary or library a frame's code is in, as the wasm module gives it, and a frame whose
//! module the session does not know shows none. A missing browser fails this test: it never
//! skips.

use prof::session::{FrameSpec, Metadata, Mode, SessionBuilder};
use prof_e2e::page::{console_problems, eventually, open_ok, text, LOAD};
use prof_e2e::served::Served;
use prof_e2e::sessions::{self, MS};
use prof_e2e::webdriver::Browser;
use prof_e2e::TempDir;
use serde_json::{json, Value};

fn js(browser: &Browser, expr: &str) -> Value {
    browser.eval(&format!("return ({expr});"), json!([]))
}

/// `xz` compressing: `main` (no module known) calls `lzma_code` in liblzma ×30 and runs on
/// its own ×10, a sample a millisecond.
fn xz() -> prof::session::Session {
    let mut b = SessionBuilder::new(Metadata {
        program: "xz".into(),
        duration_ns: 40 * MS,
        mode: Mode::Cpu,
        requested_interval_ns: MS,
        achieved_interval_ns: MS,
        ..Metadata::default()
    });
    let main = b.intern_frame(&FrameSpec {
        file: Some("src/xz/main.c"),
        line: Some(12),
        ..FrameSpec::named("main")
    });
    let lzma = b.intern_frame(&FrameSpec {
        module: Some("/usr/lib/x86_64-linux-gnu/liblzma.so.5"),
        ..FrameSpec::named("lzma_code")
    });
    let deep = b.intern_stack_path(&[main, lzma]).unwrap();
    let shallow = b.intern_stack_path(&[main]).unwrap();
    let t = b.thread(7, "xz");
    let mut time = 0;
    for (stack, count) in [(deep, 30), (shallow, 10)] {
        for _ in 0..count {
            b.push_sample(stack, t, time, MS);
            time += MS;
        }
    }
    b.finish()
}

/// Moves the pointer to (`x`, `y`) of canvas `id` and returns the tooltip's text once it
/// names `name`.
fn hover(browser: &Browser, id: &str, (x, y): (f64, f64), name: &str) -> String {
    browser.pointer_at(&browser.find(&format!("#{id}")), x, y, false);
    let mut shown = String::new();
    eventually(&format!("the tooltip of {name}"), || {
        shown = text(browser, "#tooltip");
        js(browser, "!document.getElementById('tooltip').hidden") == json!(true)
            && shown.contains(name)
    });
    shown
}

/// The middle of a frame's box (`{x, y, width, height}` in CSS pixels).
fn middle(rect: &Value) -> (f64, f64) {
    let f = |k: &str| rect[k].as_f64().unwrap();
    (f("x") + f("width") / 2.0, f("y") + f("height") / 2.0)
}

#[test]
fn every_frame_hover_names_its_module() {
    let dir = TempDir::new("browser-modules");
    let file = dir.join("xz.json");
    sessions::save(&xz(), &file);
    let served = Served::start(&[&file], &["--port", "0"]);
    let browser = Browser::start("modules", 1280, 800, 1.0);
    open_ok(&browser, &served.url);
    browser.wait_for("window.profViewer.layout", LOAD, "the flame graph");

    // The flame graph: liblzma's frame names its library, main (no module known) none.
    let lzma = js(&browser, "window.profViewer.framesNamed('lzma_code')[0]");
    let tip = hover(&browser, "flame-canvas", middle(&lzma), "lzma_code");
    assert!(tip.contains("Module liblzma.so.5"), "{tip}");
    assert!(
        !tip.contains("/usr/lib"),
        "the file name, not the path: {tip}"
    );
    let main = js(&browser, "window.profViewer.framesNamed('main')[0]");
    let tip = hover(&browser, "flame-canvas", middle(&main), "main");
    assert!(tip.contains("src/xz/main.c:12"), "{tip}");
    assert!(!tip.contains("Module"), "{tip}");
    browser.screenshot("modules-01-flame-hover");

    // The stack chart.
    browser.eval(
        "window.profViewer.state.update({ view: 'stack-chart' });",
        json!([]),
    );
    browser.wait_for(
        "window.profViewer.views.get('stack-chart').boxesNamed('lzma_code').length",
        LOAD,
        "the stack chart",
    );
    let lzma = js(
        &browser,
        "window.profViewer.views.get('stack-chart').boxesNamed('lzma_code')[0]",
    );
    let tip = hover(&browser, "stack-chart-canvas", middle(&lzma), "lzma_code");
    assert!(tip.contains("Module liblzma.so.5"), "{tip}");
    browser.screenshot("modules-02-stack-chart-hover");

    // The Sandwich of main: its callee lzma_code.
    browser.eval(
        "window.profViewer.state.update({ view: 'sandwich', selected: 'main' });",
        json!([]),
    );
    browser.wait_for(
        "(() => { const v = window.profViewer.views.get('sandwich'); const l = v.layouts.callees;
           return l && [...Array(l.count).keys()].some((i) => l.names[l.func[i]] === 'lzma_code'); })()",
        LOAD,
        "the Sandwich's callees",
    );
    let lzma = js(
        &browser,
        "(() => { const v = window.profViewer.views.get('sandwich'); const l = v.layouts.callees;
           const i = [...Array(l.count).keys()].find((i) => l.names[l.func[i]] === 'lzma_code');
           return v.callees.frameRect(i); })()",
    );
    let canvas = "document.querySelector('.sandwich-callees canvas')";
    browser.eval(
        &format!("{canvas}.id = 'sandwich-callees-canvas';"),
        json!([]),
    );
    let tip = hover(
        &browser,
        "sandwich-callees-canvas",
        middle(&lzma),
        "lzma_code",
    );
    assert!(tip.contains("Module liblzma.so.5"), "{tip}");

    // The call tree: the name's hover.
    browser.eval(
        "window.profViewer.state.update({ view: 'calltree', node: ['main', 'lzma_code'] });",
        json!([]),
    );
    let title = browser.wait_for(
        "[...document.querySelectorAll('.tree-rows .row .label')].find((l) => l.dataset.name === 'lzma_code')?.title",
        LOAD,
        "the call tree's lzma_code row",
    );
    assert_eq!(title, "lzma_code\nModule liblzma.so.5");
    let title = js(
        &browser,
        "[...document.querySelectorAll('.tree-rows .row .label')].find((l) => l.dataset.name === 'main').title",
    );
    assert_eq!(title, "main\nsrc/xz/main.c:12");
    assert_eq!(console_problems(&browser), Vec::<String>::new());
}
