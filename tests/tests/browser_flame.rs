//! The flame graph's navigation in a real headless Chromium: left-heavy order, wheel zoom and
//! drag pan, the zoomed frame's ancestors, keyboard shortcuts, and the page at 800x600.

use prof_e2e::page::{breadcrumbs, LOAD};
use prof_e2e::served::Served;
use prof_e2e::sessions;
use prof_e2e::webdriver::Browser;
use prof_e2e::TempDir;
use serde_json::{json, Value};

/// Serves the two-thread demo session and opens it in a browser of `width`x`height`.
fn open_demo(name: &str, width: u32, height: u32) -> (Served, Browser, TempDir) {
    let dir = TempDir::new(&format!("browser-flame-{name}"));
    let file = dir.join("demo.json");
    sessions::save(&sessions::two_threads(), &file);
    let served = Served::start(&[&file], &["--port", "0"]);
    let browser = Browser::start(name, width, height, 1.0);
    browser.goto(&served.url);
    browser.wait_for(
        "document.body.dataset.state === 'ready'",
        LOAD,
        "the page to load",
    );
    (served, browser, dir)
}

/// The drawn frames of function `name`: x, y, width, height in CSS pixels.
fn frames_of(browser: &Browser, name: &str) -> Vec<Value> {
    let v = browser.eval(
        "return window.profViewer.framesNamed(arguments[0]);",
        json!([name]),
    );
    v.as_array().cloned().unwrap_or_default()
}

fn hash(browser: &Browser) -> String {
    browser
        .eval("return decodeURIComponent(location.hash);", json!([]))
        .as_str()
        .unwrap()
        .to_owned()
}

#[test]
fn left_heavy_puts_the_heaviest_callee_first() {
    let (_served, browser, _dir) = open_demo("left-heavy", 1000, 600);
    // Under main;compute: cold_path (10 ms) sorts before hot_loop (50 ms) by name.
    let x = |b: &Browser, name: &str| frames_of(b, name)[0]["x"].as_f64().unwrap();
    assert!(x(&browser, "cold_path") < x(&browser, "hot_loop"));
    browser.click(&browser.find("#left-heavy"));
    browser.wait_for(
        "location.hash.includes('heavy=1')",
        LOAD,
        "left heavy in the URL",
    );
    browser.wait_for(
        "(() => { const f = n => window.profViewer.framesNamed(n)[0]?.x;
                  return f('hot_loop') < f('cold_path'); })()",
        LOAD,
        "hot_loop to move left of cold_path",
    );
    browser.screenshot("20-left-heavy");
}

#[test]
fn the_wheel_zooms_around_the_pointer_and_a_drag_pans() {
    let (_served, browser, _dir) = open_demo("wheel", 1000, 600);
    let canvas = browser.find("#flame-canvas");
    let hot = frames_of(&browser, "hot_loop")[0].clone();
    let before = hot["width"].as_f64().unwrap();
    let (hx, hy) = (
        hot["x"].as_f64().unwrap() + before / 2.0,
        hot["y"].as_f64().unwrap() + 5.0,
    );
    browser.wheel_at(&canvas, hx, hy, -400);
    browser.wait_for(
        "location.hash.includes('fwin=')",
        LOAD,
        "the wheel zoom in the URL",
    );
    browser.wait_for(
        &format!(
            "window.profViewer.framesNamed('hot_loop')[0]?.width > {}",
            before * 1.5
        ),
        LOAD,
        "hot_loop to grow",
    );
    let zoomed = frames_of(&browser, "hot_loop")[0].clone();
    let centre = zoomed["x"].as_f64().unwrap() + zoomed["width"].as_f64().unwrap() / 2.0;
    // The point under the pointer stays under it (within a few pixels of rounding).
    assert!((centre - hx).abs() < 0.2 * before, "{centre} vs {hx}");
    browser.screenshot("21-wheel-zoom");
    let window_before = hash(&browser);
    // Drag right by 200 pixels: the graph moves right, the window left.
    let x0 = zoomed["x"].as_f64().unwrap();
    browser.drag(&canvas, (hx, hy), (hx + 200.0, hy), 8);
    browser.wait_for(
        &format!(
            "window.profViewer.framesNamed('hot_loop')[0]?.x > {}",
            x0 + 100.0
        ),
        LOAD,
        "the pan",
    );
    assert_ne!(hash(&browser), window_before);
    // A drag is not a click: no zoom happened.
    assert_eq!(breadcrumbs(&browser), ["all"]);
    // Escape resets the window first.
    browser.press_key("\u{E00C}");
    browser.wait_for(
        "!location.hash.includes('fwin=')",
        LOAD,
        "Escape to reset the wheel zoom",
    );
}

#[test]
fn a_zoomed_frame_keeps_its_ancestors_in_view_and_they_zoom_out() {
    let (_served, browser, _dir) = open_demo("ancestors", 1000, 600);
    let canvas = browser.find("#flame-canvas");
    let hot = frames_of(&browser, "hot_loop")[0].clone();
    browser.pointer_at(
        &canvas,
        hot["x"].as_f64().unwrap() + 5.0,
        hot["y"].as_f64().unwrap() + 5.0,
        true,
    );
    browser.wait_for(
        "document.querySelectorAll('#breadcrumbs button').length === 4",
        LOAD,
        "the zoom into hot_loop",
    );
    assert_eq!(
        breadcrumbs(&browser),
        ["all", "main", "compute", "hot_loop"]
    );
    // The ancestors are drawn, full width, in the rows below the zoomed frame.
    let ancestors = browser.eval("return window.profViewer.flame.ancestors;", json!([]));
    assert_eq!(ancestors, json!(["all", "main", "compute"]));
    let zoomed = frames_of(&browser, "hot_loop")[0].clone();
    let (zx, zy) = (zoomed["x"].as_f64().unwrap(), zoomed["y"].as_f64().unwrap());
    let canvas_width = browser
        .eval(
            "return document.getElementById('flame-canvas').clientWidth;",
            json!([]),
        )
        .as_f64()
        .unwrap();
    assert!(zx < 1.0 && zoomed["width"].as_f64().unwrap() > canvas_width - 2.0);
    browser.screenshot("22-ancestors");
    // The row just below hot_loop is compute: clicking it zooms out to compute.
    browser.pointer_at(&canvas, 400.0, zy + 18.0 + 5.0, true);
    browser.wait_for(
        "[...document.querySelectorAll('#breadcrumbs button')].pop()?.textContent === 'compute'",
        LOAD,
        "the zoom out to compute",
    );
}

#[test]
fn keyboard_moves_between_frames_zooms_searches_and_lists_shortcuts() {
    let (_served, browser, _dir) = open_demo("keyboard", 1000, 600);
    // The first arrow focuses the root; up goes to the widest callee: main.
    browser.press_key("\u{E013}"); // up
    browser.press_key("\u{E013}");
    let focused = |b: &Browser| {
        b.eval(
            "const f = window.profViewer.flame; const l = window.profViewer.layout;
             return f.focused < 0 ? null : l.names[l.func[f.focused]];",
            json!([]),
        )
    };
    assert_eq!(focused(&browser), json!("main"));
    browser.press_key("\u{E013}"); // up: compute (65 ms) is wider than parse (28 ms)
    assert_eq!(focused(&browser), json!("compute"));
    browser.press_key("\u{E014}"); // right: the next frame in the row
    assert_eq!(focused(&browser), json!("parse"));
    browser.press_key("\u{E012}"); // left
    assert_eq!(focused(&browser), json!("compute"));
    browser.press_key("\u{E015}"); // down: the caller
    assert_eq!(focused(&browser), json!("main"));
    browser.press_key("\u{E007}"); // Enter zooms into it
    browser.wait_for(
        "[...document.querySelectorAll('#breadcrumbs button')].pop()?.textContent === 'main'",
        LOAD,
        "Enter to zoom",
    );
    browser.press_key("/");
    assert_eq!(
        browser.eval("return document.activeElement.id;", json!([])),
        json!("search")
    );
    browser.type_into(&browser.find("#search"), "?");
    assert_eq!(
        browser.eval(
            "return document.getElementById('shortcuts').open;",
            json!([])
        ),
        json!(false),
        "? typed into the search box is text"
    );
    browser.eval("document.activeElement.blur();", json!([]));
    browser.press_key("?");
    assert_eq!(
        browser.eval(
            "return document.getElementById('shortcuts').open;",
            json!([])
        ),
        json!(true)
    );
    browser.screenshot("23-shortcuts");
}

#[test]
fn every_control_fits_at_800_by_600() {
    let (_served, browser, _dir) = open_demo("small-window", 800, 600);
    let clipped = browser.eval(
        "const out = [];
         for (const el of document.querySelectorAll('header *, #toolbar *, #tabs *, .view-bar *')) {
           if (el.offsetParent === null || el.closest('[hidden]')) continue;
           const r = el.getBoundingClientRect();
           if (r.width === 0) continue;
           if (r.left < 0 || r.right > window.innerWidth + 0.5) out.push(el.tagName + '#' + el.id + ' ' + r.left + '-' + r.right);
         }
         return out;",
        json!([]),
    );
    assert_eq!(clipped, json!([]), "controls outside the window");
    let flame = browser.eval(
        "const r = document.getElementById('flame').getBoundingClientRect(); return [r.width, r.height];",
        json!([]),
    );
    assert!(flame[0].as_f64().unwrap() > 300.0, "{flame}");
    assert!(flame[1].as_f64().unwrap() > 200.0, "{flame}");
    browser.screenshot("24-800x600");
}
