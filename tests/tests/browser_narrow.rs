//! Narrow and short windows (issue 39: at 900 px the table kept 400 px and the flame graph 495;
//! at 800x600 the flame graph was about 200 px tall), in a real headless Chromium against
//! `prof serve`: the table beside the flame graph hides and shows again (its button, or Enter
//! on its splitter), its splitter sizes it by a drag and by keys, the timeline's splitter
//! gives its height to the views, and the page remembers both on reload. A missing browser
//! fails these tests: they never skip.

use prof::session::{FrameSpec, Metadata, Mode, Session, SessionBuilder};
use prof_e2e::page::keys::{ARROW_LEFT, ENTER, HOME};
use prof_e2e::page::{console_problems, open_ok, LOAD};
use prof_e2e::served::Served;
use prof_e2e::sessions::{self, MS};
use prof_e2e::webdriver::Browser;
use prof_e2e::TempDir;
use serde_json::json;

/// `server` with 12 worker threads, each running `handle;parse` and `handle;write`: a
/// timeline of more tracks than a short window has room for.
fn server() -> Session {
    let mut b = SessionBuilder::new(Metadata {
        program: "server".into(),
        duration_ns: 100 * MS,
        mode: Mode::Cpu,
        requested_interval_ns: MS,
        achieved_interval_ns: MS,
        ..Metadata::default()
    });
    let frames = ["handle", "parse", "write"].map(|n| b.intern_frame(&FrameSpec::named(n)));
    let parse = b.intern_stack_path(&[frames[0], frames[1]]).unwrap();
    let write = b.intern_stack_path(&[frames[0], frames[2]]).unwrap();
    for k in 0..12u64 {
        let t = b.thread(100 + k, &format!("worker-{k}"));
        for i in 0..100 {
            b.push_sample(if i % 3 == 0 { write } else { parse }, t, i * MS, MS);
        }
    }
    b.finish()
}

/// The width and height of the element `selector` names, in CSS pixels.
fn size(browser: &Browser, selector: &str) -> (f64, f64) {
    let v = browser.eval(
        "const r = document.querySelector(arguments[0]).getBoundingClientRect();
         return [r.width, r.height];",
        json!([selector]),
    );
    (v[0].as_f64().unwrap(), v[1].as_f64().unwrap())
}

/// Waits until the flame graph's canvas is drawn as wide as its pane (it draws again when the
/// pane changes size), and returns that width.
fn flame_drawn_full_width(browser: &Browser) -> f64 {
    browser
        .wait_for(
            "(() => { const f = document.getElementById('flame'); const c = document.getElementById('flame-canvas');
               return Math.abs(c.getBoundingClientRect().width - f.clientWidth) < 1 && f.clientWidth; })()",
            LOAD,
            "the flame graph drawn across its pane",
        )
        .as_f64()
        .unwrap()
}

/// The middle of the element `selector` names, in the page's CSS pixels.
fn middle_of(browser: &Browser, selector: &str) -> (f64, f64) {
    let v = browser.eval(
        "const r = document.querySelector(arguments[0]).getBoundingClientRect();
         return [r.x + r.width / 2, r.y + r.height / 2];",
        json!([selector]),
    );
    (v[0].as_f64().unwrap(), v[1].as_f64().unwrap())
}

/// Drags the mouse from `from` to `to` (the page's CSS pixels), measured from the page's body:
/// a splitter moves under the pointer, so positions taken from it would move with it.
fn drag_in_page(browser: &Browser, from: (f64, f64), to: (f64, f64)) {
    browser.drag(&browser.find("body"), from, to, 6);
}

fn serve(dir: &TempDir) -> Served {
    let file = dir.join("server.json");
    sessions::save(&server(), &file);
    Served::start(&[&file], &["--port", "0"])
}

#[test]
fn at_900_px_the_table_hides_and_its_splitter_sizes_it_by_drag_and_keys_kept_on_reload() {
    let dir = TempDir::new("browser-narrow-900");
    let served = serve(&dir);
    let browser = Browser::start("narrow-900", 900, 700, 1.0);
    open_ok(&browser, &served.url);
    browser.wait_for("window.profViewer.layout", LOAD, "the flame graph");
    let (table, _) = size(&browser, "#top");
    let (flame, _) = size(&browser, "#flame");
    assert!(flame + table < 900.0, "{flame} + {table}");

    // Hidden: the flame graph takes the width, drawn across it.
    browser.click(&browser.find("#top-toggle"));
    let wide = flame_drawn_full_width(&browser);
    assert!(wide >= 880.0, "the flame graph is {wide} px wide");
    assert_eq!(
        browser.eval("return document.getElementById('top').hidden;", json!([])),
        json!(true)
    );
    browser.screenshot("narrow-01-900-table-hidden");
    browser.click(&browser.find("#top-toggle"));
    browser.wait_for(
        "!document.getElementById('top').hidden",
        LOAD,
        "the table shown again",
    );

    // Dragging the splitter 150 px right narrows the table by as much.
    let (x, y) = middle_of(&browser, "#top-splitter");
    drag_in_page(&browser, (x, y), (x + 150.0, y));
    let (dragged, _) = size(&browser, "#top");
    assert!(
        (dragged - (table - 150.0)).abs() <= 2.0,
        "{table} → {dragged}"
    );
    let flame = flame_drawn_full_width(&browser);
    assert!(flame >= 900.0 - dragged - 10.0, "{flame} beside {dragged}");

    // Its keys: Left widens the table by 20 px, Home makes it its narrowest, Enter hides it.
    browser.eval(
        "document.getElementById('top-splitter').focus();",
        json!([]),
    );
    browser.press_key(ARROW_LEFT);
    let (wider, _) = size(&browser, "#top");
    assert!((wider - dragged - 20.0).abs() <= 1.0, "{dragged} → {wider}");
    browser.press_key(HOME);
    let (narrowest, _) = size(&browser, "#top");
    assert!((narrowest - 160.0).abs() <= 1.0, "{narrowest}");
    assert_eq!(
        browser.eval(
            "return document.getElementById('top-splitter').getAttribute('aria-valuenow');",
            json!([])
        ),
        json!("160")
    );
    browser.screenshot("narrow-02-900-table-narrowest");

    // A reload keeps the width; then Enter hides the table, and a reload keeps it hidden.
    open_ok(&browser, &served.url);
    browser.wait_for("window.profViewer.layout", LOAD, "the flame graph again");
    let (kept, _) = size(&browser, "#top");
    assert!((kept - 160.0).abs() <= 1.0, "{kept}");
    browser.eval(
        "document.getElementById('top-splitter').focus();",
        json!([]),
    );
    browser.press_key(ENTER);
    browser.wait_for(
        "document.getElementById('top').hidden",
        LOAD,
        "Enter to hide the table",
    );
    open_ok(&browser, &served.url);
    browser.wait_for("window.profViewer.layout", LOAD, "the flame graph again");
    assert_eq!(
        browser.eval("return document.getElementById('top').hidden;", json!([])),
        json!(true)
    );
    assert_eq!(text_of(&browser, "#top-toggle"), "Show table");
    assert_eq!(console_problems(&browser), Vec::<String>::new());
}

fn text_of(browser: &Browser, selector: &str) -> String {
    prof_e2e::page::text(browser, selector)
}

#[test]
fn at_800x600_the_timeline_splitter_gives_the_flame_graph_its_height() {
    let dir = TempDir::new("browser-narrow-800");
    let served = serve(&dir);
    let browser = Browser::start("narrow-800", 800, 600, 1.0);
    open_ok(&browser, &served.url);
    browser.wait_for("window.profViewer.layout", LOAD, "the flame graph");
    let (_, flame) = size(&browser, "#flame");
    let (_, tracks) = size(&browser, ".timeline-tracks");
    browser.screenshot("narrow-03-800x600");

    // Home on the timeline's splitter: a track's height, the rest to the flame graph.
    browser.eval(
        "document.getElementById('timeline-splitter').focus();",
        json!([]),
    );
    browser.press_key(HOME);
    let (_, short) = size(&browser, ".timeline-tracks");
    assert!((short - 24.0).abs() <= 1.0, "{tracks} → {short}");
    let (_, taller) = size(&browser, "#flame");
    assert!(
        taller >= flame + (tracks - short) - 2.0 && taller >= 1.5 * flame,
        "the flame graph is {flame} → {taller} px tall"
    );
    browser.screenshot("narrow-04-800x600-timeline-short");

    // A drag down gives the timeline 100 px back; a reload keeps its height.
    let (x, y) = middle_of(&browser, "#timeline-splitter");
    drag_in_page(&browser, (x, y), (x, y + 100.0));
    let (_, dragged) = size(&browser, ".timeline-tracks");
    assert!((dragged - 124.0).abs() <= 2.0, "{dragged}");
    open_ok(&browser, &served.url);
    browser.wait_for("window.profViewer.layout", LOAD, "the flame graph again");
    let (_, kept) = size(&browser, ".timeline-tracks");
    assert!((kept - dragged).abs() <= 1.0, "{dragged} → {kept}");
    assert_eq!(console_problems(&browser), Vec::<String>::new());
}
