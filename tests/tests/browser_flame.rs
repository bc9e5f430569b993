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
    browser.screenshot("24-800x600");
    assert_eq!(clipped, json!([]), "controls outside the window");
    let flame = browser.eval(
        "const r = document.getElementById('flame').getBoundingClientRect(); return [r.width, r.height];",
        json!([]),
    );
    assert!(flame[0].as_f64().unwrap() > 300.0, "{flame}");
    assert!(flame[1].as_f64().unwrap() > 200.0, "{flame}");
    browser.screenshot("24-800x600");
}

/// Serves `session` and opens it in a browser of `width`x`height`, waiting until it is ready.
fn open_session(
    name: &str,
    session: &prof::session::Session,
    width: u32,
    height: u32,
) -> (Served, Browser, TempDir) {
    let dir = TempDir::new(&format!("browser-flame-{name}"));
    let file = dir.join("profile.json");
    sessions::save(session, &file);
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

/// Where the root frame is drawn in the flame pane's visible part: `[top, bottom, pane
/// height]` in CSS pixels from the pane's top, read once `settled` holds for it or, failing
/// that, after [`LOAD`] (the timeline and the table fill in after the first paint, later on a
/// busy machine, and the panes around the graph change size then).
fn root_in_pane(browser: &Browser, settled: impl Fn(f64, f64, f64) -> bool) -> Vec<f64> {
    let start = std::time::Instant::now();
    loop {
        std::thread::sleep(std::time::Duration::from_millis(200));
        let v = browser.eval(
            "const pane = document.getElementById('flame');
             const root = window.profViewer.flame.frameRect(0);
             return [root.y - pane.scrollTop, root.y + root.height - pane.scrollTop, pane.clientHeight];",
            json!([]),
        );
        let v: Vec<f64> = serde_json::from_value(v).unwrap();
        if v.len() == 3 && settled(v[0], v[1], v[2]) || start.elapsed() > LOAD {
            return v;
        }
    }
}

/// The root is drawn inside the pane.
fn in_view(top: f64, bottom: f64, pane: f64) -> bool {
    top >= 0.0 && bottom <= pane + 0.5
}

#[test]
fn a_flame_graph_taller_than_its_pane_opens_showing_its_root() {
    for (width, height) in [(800, 600), (1280, 800)] {
        let name = format!("deep-{width}x{height}");
        let (_served, browser, _dir) = open_session(&name, &sessions::deep(120), width, height);
        // Taller than the pane: 120 levels of 18 pixels.
        let canvas = browser
            .eval(
                "return document.getElementById('flame-canvas').clientHeight;",
                json!([]),
            )
            .as_f64()
            .unwrap();
        let [top, bottom, pane] = root_in_pane(&browser, in_view)[..] else {
            panic!("no root")
        };
        assert!(
            canvas > pane,
            "the graph ({canvas} px) fits its pane ({pane} px)"
        );
        assert!(
            in_view(top, bottom, pane),
            "at {width}x{height} the root is drawn at {top}..{bottom}, outside the pane's 0..{pane}"
        );
        browser.screenshot(&format!("r20-deep-root-{width}x{height}"));
        // Icicle puts the root at the top, in view; back to a flame graph, at the bottom again.
        browser.click(&browser.find("#icicle"));
        browser.wait_for(
            "location.hash.includes('icicle')",
            LOAD,
            "icicle in the URL",
        );
        let [top, _, _] = root_in_pane(&browser, |top, _, _| top.abs() < 0.5)[..] else {
            panic!("no root")
        };
        assert!(top.abs() < 0.5, "the icicle's root is at {top}");
        browser.click(&browser.find("#icicle"));
        browser.wait_for("!location.hash.includes('icicle')", LOAD, "icicle off");
        let [top, bottom, pane] = root_in_pane(&browser, in_view)[..] else {
            panic!("no root")
        };
        assert!(in_view(top, bottom, pane), "{top}..{bottom} of {pane}");
    }
}

/// An allocation profile whose weights are bytes (`3.00 MiB`, `1023 KiB`) and whose second
/// type is a large count (`1,234,567`): the widest texts the side table shows. `alloc_site`
/// lives in a file whose path is longer than any tooltip is wide.
fn bytes_session() -> prof::session::Session {
    use prof::session::{FrameSpec, Metadata, Mode, SampleType, SessionBuilder, Unit};
    let mut b = SessionBuilder::new(Metadata {
        program: "bytes-app".into(),
        mode: Mode::Alloc,
        ..Metadata::default()
    });
    b.set_sample_types(
        SampleType::new("alloc_space", Unit::Bytes),
        vec![SampleType::new("alloc_objects", Unit::Count)],
    );
    let t = b.thread(1, "main");
    let main = b.intern_frame(&FrameSpec::named("main"));
    let mut spec = FrameSpec::named("alloc_site");
    let long_dir = "very_long_directory_name_of_a_vendored_crate_".repeat(6);
    let file = format!("/home/user/.cargo/registry/src/{long_dir}/src/allocation_heavy_module.rs");
    spec.file = Some(&file);
    spec.line = Some(1234);
    let site = b.intern_frame(&spec);
    let small = b.intern_frame(&FrameSpec::named("small_site"));
    let s_site = b.intern_stack_path(&[main, site]).unwrap();
    let s_small = b.intern_stack_path(&[main, small]).unwrap();
    let s_main = b.intern_stack_path(&[main]).unwrap();
    b.push_sample_full(s_site, t, 0, &[3 << 20, 1_234_567], 1, None);
    b.push_sample_full(s_small, t, 1, &[1023 << 10, 99_999], 1, None);
    b.push_sample_full(s_main, t, 2, &[3 << 20, 7], 1, None);
    let worker = b.thread(2, "worker");
    b.push_sample_full(s_small, worker, 3, &[1 << 10, 1], 1, None);
    b.finish()
}

/// For each row of the side table, the gaps in CSS pixels between neighbouring texts (a
/// weight's end and its share's start, a share's end and the next weight's start), and
/// whether each text fits its cell.
fn side_table_gaps(browser: &Browser) -> Value {
    browser.eval(
        "const box = (td) => { const r = document.createRange(); r.selectNodeContents(td);
                              return r.getBoundingClientRect(); };
         return [...document.querySelectorAll('#top-table tbody tr')].map(tr => {
           const cells = [...tr.querySelectorAll('td.num')];
           const gaps = [];
           for (let i = 1; i < cells.length; i++) gaps.push(box(cells[i]).left - box(cells[i - 1]).right);
           const fits = cells.every(td => td.scrollWidth <= td.clientWidth);
           return { texts: cells.map(td => td.textContent), gaps, fits };
         });",
        json!([]),
    )
}

#[test]
fn the_side_table_keeps_its_weights_and_shares_apart() {
    let dir = TempDir::new("browser-flame-side-table");
    let file = dir.join("bytes.json");
    sessions::save(&bytes_session(), &file);
    let served = Served::start(&[&file], &["--port", "0"]);
    for (width, height) in [(1280, 800), (800, 600)] {
        let browser = Browser::start(&format!("side-table-{width}"), width, height, 1.0);
        for ty in ["", "&type=alloc_objects"] {
            browser.goto(&format!("{}#view=flame{ty}", served.url));
            browser.wait_for(
                "document.body.dataset.state === 'ready' && document.querySelector('#top-table tbody tr')",
                LOAD,
                "the side table",
            );
            let rows = side_table_gaps(&browser);
            let texts = rows.to_string();
            assert!(
                texts.contains("3.00 MiB") || texts.contains("1,234,567"),
                "{texts}"
            );
            for row in rows.as_array().unwrap() {
                assert_eq!(row["fits"], json!(true), "a text overflows its cell: {row}");
                for gap in row["gaps"].as_array().unwrap() {
                    assert!(
                        gap.as_f64().unwrap() >= 4.0,
                        "at {width}x{height} texts run together: {row}"
                    );
                }
            }
        }
        browser.screenshot(&format!("r20-side-table-{width}x{height}"));
    }
}

#[test]
fn a_long_source_path_wraps_inside_the_tooltip() {
    let dir = TempDir::new("browser-flame-tooltip-path");
    let file = dir.join("bytes.json");
    sessions::save(&bytes_session(), &file);
    let served = Served::start(&[&file], &["--port", "0"]);
    for (width, height) in [(1280, 800), (800, 600)] {
        let browser = Browser::start(&format!("tooltip-path-{width}"), width, height, 1.0);
        browser.goto(&served.url);
        browser.wait_for(
            "document.body.dataset.state === 'ready'",
            LOAD,
            "the page to load",
        );
        let site = frames_of(&browser, "alloc_site")[0].clone();
        browser.pointer_at(
            &browser.find("#flame-canvas"),
            site["x"].as_f64().unwrap() + 5.0,
            site["y"].as_f64().unwrap() + 5.0,
            false,
        );
        let overflow = browser.wait_for(
            "(() => { const tip = document.getElementById('tooltip');
                      const loc = tip.querySelector('.loc');
                      if (tip.hidden || !loc) return null;
                      const t = tip.getBoundingClientRect();
                      const r = document.createRange(); r.selectNodeContents(loc);
                      const l = r.getBoundingClientRect();
                      return { text: loc.textContent, past: l.right - t.right, scroll: tip.scrollWidth - tip.clientWidth,
                               right: t.right, window: window.innerWidth }; })()",
            LOAD,
            "the tooltip with the source path",
        );
        assert!(
            overflow["text"]
                .as_str()
                .unwrap()
                .contains("allocation_heavy_module.rs"),
            "{overflow}"
        );
        assert!(
            overflow["past"].as_f64().unwrap() <= 0.5
                && overflow["scroll"].as_f64().unwrap() <= 0.0,
            "the path runs past the tooltip: {overflow}"
        );
        assert!(
            overflow["right"].as_f64().unwrap() <= overflow["window"].as_f64().unwrap(),
            "the tooltip runs past the window: {overflow}"
        );
        browser.screenshot(&format!("r20-tooltip-path-{width}x{height}"));
    }
}

#[test]
fn shortcuts_work_after_clicking_a_checkbox_or_choosing_from_a_list() {
    let dir = TempDir::new("browser-flame-focus");
    let file = dir.join("bytes.json");
    sessions::save(&bytes_session(), &file);
    let served = Served::start(&[&file], &["--port", "0"]);
    let browser = Browser::start("focus", 1100, 700, 1.0);
    browser.goto(&served.url);
    browser.wait_for(
        "document.body.dataset.state === 'ready'",
        LOAD,
        "the page to load",
    );
    let focused = |b: &Browser| {
        b.eval(
            "const f = window.profViewer.flame; const l = window.profViewer.layout;
             return f.focused < 0 ? null : (l.names[l.func[f.focused]] || 'all');",
            json!([]),
        )
    };
    // Left heavy and Icicle: clicked, they keep the focus; the arrows still move in the graph.
    for checkbox in ["#left-heavy", "#icicle"] {
        browser.eval("window.profViewer.flame.focused = -1;", json!([]));
        browser.click(&browser.find(checkbox));
        assert_eq!(
            browser.eval("return document.activeElement.type;", json!([])),
            json!("checkbox")
        );
        browser.press_key("\u{E013}"); // up
        assert!(
            !focused(&browser).is_null(),
            "an arrow after clicking {checkbox} did not reach the flame graph"
        );
        browser.press_key("?");
        assert_eq!(
            browser.eval(
                "const d = document.getElementById('shortcuts'); const open = d.open; d.close(); return open;",
                json!([])
            ),
            json!(true),
            "? after clicking {checkbox}"
        );
    }
    // A thread's box.
    browser.click(&browser.find("#threads summary"));
    browser.click(&browser.find("#threads input[type=checkbox]"));
    browser.wait_for(
        "location.hash.includes('threads=')",
        LOAD,
        "the thread choice",
    );
    browser.press_key("/");
    assert_eq!(
        browser.eval("return document.activeElement.id;", json!([])),
        json!("search"),
        "/ after clicking a thread's box"
    );
    // The Type list, chosen from with the keyboard: its own keys pick, `/` and `?` are the
    // page's.
    browser.eval("document.getElementById('sample-type').focus();", json!([]));
    browser.press_key("\u{E015}"); // down: the next type
    browser.wait_for(
        "location.hash.includes('type=alloc_objects')",
        LOAD,
        "the type picked with the arrow",
    );
    browser.press_key("?");
    assert_eq!(
        browser.eval(
            "return document.getElementById('shortcuts').open;",
            json!([])
        ),
        json!(true),
        "? in the Type list"
    );
}

#[test]
fn the_shortcut_list_names_the_call_tree_and_table_keys() {
    let (_served, browser, _dir) = open_demo("shortcut-list", 1000, 700);
    browser.eval(
        "document.getElementById('shortcuts').showModal();",
        json!([]),
    );
    let text = |selector: &str| {
        browser
            .eval(
                "return document.querySelector(arguments[0])?.textContent ?? '';",
                json!([selector]),
            )
            .as_str()
            .unwrap()
            .to_owned()
    };
    let tree = text("#shortcuts [data-keys=calltree]");
    for key in [
        "*", "Enter", "Home", "End", "PgUp", "PgDn", "expand", "collapse",
    ] {
        assert!(
            tree.contains(key),
            "the call tree's keys lack {key}: {tree}"
        );
    }
    let table = text("#shortcuts [data-keys=table]");
    for key in ["Ctrl", "C", "Enter", "Home", "PgDn", "copy"] {
        assert!(table.contains(key), "the table's keys lack {key}: {table}");
    }
    // Every key the dialog lists fits in a 700 pixel high window (it scrolls if not).
    let fits = browser.eval(
        "const d = document.getElementById('shortcuts'); return d.getBoundingClientRect().bottom <= window.innerHeight;",
        json!([]),
    );
    assert_eq!(fits, json!(true));
    browser.screenshot("r20-shortcuts");
}

/// The viewport marker: `[shown, left, width]` of its marked part as fractions of the flame
/// pane's width.
fn viewport_marker(browser: &Browser) -> Value {
    browser.eval(
        "const marker = document.querySelector('#flame .flame-viewport');
         if (!marker || marker.hidden) return [false, 0, 0];
         const pane = document.getElementById('flame').getBoundingClientRect();
         const part = marker.querySelector('.flame-viewport-part').getBoundingClientRect();
         return [part.height > 0 && part.top >= pane.top && part.bottom <= pane.bottom,
                 (part.left - pane.left) / pane.width, part.width / pane.width];",
        json!([]),
    )
}

#[test]
fn a_wheel_zoomed_flame_graph_marks_the_part_it_shows() {
    let (_served, browser, _dir) = open_demo("viewport-marker", 1000, 600);
    assert_eq!(
        viewport_marker(&browser)[0],
        json!(false),
        "no marker at full width"
    );
    let canvas = browser.find("#flame-canvas");
    let hot = frames_of(&browser, "hot_loop")[0].clone();
    let (hx, hy) = (
        hot["x"].as_f64().unwrap() + hot["width"].as_f64().unwrap() / 2.0,
        hot["y"].as_f64().unwrap() + 5.0,
    );
    browser.wheel_at(&canvas, hx, hy, -600);
    browser.wait_for(
        "location.hash.includes('fwin=')",
        LOAD,
        "the wheel zoom in the URL",
    );
    let mut marker = json!(null);
    prof_e2e::page::eventually("the marker of the window", || {
        marker = viewport_marker(&browser);
        let window = browser.eval(
            "return window.profViewer.state.current.flameWindow;",
            json!([]),
        );
        let (Some(from), Some(to)) = (window[0].as_f64(), window[1].as_f64()) else {
            return false;
        };
        marker[0] == json!(true)
            && (marker[1].as_f64().unwrap() - from).abs() < 0.01
            && (marker[2].as_f64().unwrap() - (to - from)).abs() < 0.01
    });
    assert!(marker[2].as_f64().unwrap() < 0.8, "{marker}");
    browser.screenshot("r20-viewport-marker");
    browser.press_key("\u{E00C}");
    prof_e2e::page::eventually("the marker to go with the zoom", || {
        viewport_marker(&browser)[0] == json!(false)
    });
}

/// The tops of the page's rows below the toolbar, and the toolbar's height, in CSS pixels.
fn rows_placed(browser: &Browser) -> Value {
    browser.eval(
        "return ['#toolbar', '#transforms', '#timeline-canvas', '#tabs', '#app']
           .map(s => document.querySelector(s).getBoundingClientRect())
           .map(r => [Math.round(r.top), Math.round(r.height)]);",
        json!([]),
    )
}

/// Nothing moves when a search says what it matched or a first range is selected: the space
/// their texts take is there from the start (the range's bar lies over the tracks), at 1000x700
/// where the search's text used to wrap the toolbar; and a session with scopes and tasks (which
/// adds Group by) keeps the toolbar to one row at 1280x800, as one without.
#[test]
fn a_search_or_a_range_moves_nothing_and_the_toolbar_keeps_one_row() {
    let toolbar_height = |b: &Browser| rows_placed(b)[0][1].clone();
    let (_served, demo, _dir) = open_demo("no-shift", 1280, 800);
    let one_row = toolbar_height(&demo);
    drop(demo);
    let (_served, wide, _dir) =
        open_session("no-shift-scopes-wide", &sessions::scoped_tasks(), 1280, 800);
    assert!(
        wide.eval(
            "return !document.getElementById('group-by').parentElement.hidden;",
            json!([])
        )
        .as_bool()
        .unwrap(),
        "Group by is offered"
    );
    assert_eq!(toolbar_height(&wide), one_row, "the toolbar with scopes");
    drop(wide);

    let (_served, browser, _dir) =
        open_session("no-shift-scopes", &sessions::scoped_tasks(), 1000, 700);
    let before = rows_placed(&browser);
    browser.eval(
        "window.profViewer.state.update({ search: '^(parse|server)::' });",
        json!([]),
    );
    browser.wait_for(
        "document.getElementById('search-result').textContent.startsWith('matched')",
        LOAD,
        "the search's result",
    );
    assert_eq!(rows_placed(&browser), before, "the search moved the page");
    browser.eval(
        "window.profViewer.state.update({ range: [10000000, 60000000] });",
        json!([]),
    );
    browser.wait_for(
        "!document.getElementById('range-chip').hidden",
        LOAD,
        "the range chip",
    );
    assert_eq!(rows_placed(&browser), before, "the range moved the page");
    browser.screenshot("25-no-shift");
}

/// The shortcut list opens at its top (its title in view) at 1280x800; the Threads popover
/// closes on a click elsewhere and on Escape, which then clears nothing else, and a drag over
/// it selects no text.
#[test]
fn the_shortcuts_open_at_their_top_and_the_threads_popover_closes_like_a_menu() {
    let (_served, browser, _dir) = open_demo("popovers", 1280, 800);
    browser.press_key("?");
    browser.wait_for(
        "document.getElementById('shortcuts').open",
        LOAD,
        "the shortcut list",
    );
    let placed = browser.eval(
        "const d = document.getElementById('shortcuts');
         const title = d.querySelector('h2').getBoundingClientRect(), box = d.getBoundingClientRect();
         return [d.scrollTop, title.top >= box.top, d.scrollHeight > d.clientHeight];",
        json!([]),
    );
    assert_eq!(
        placed,
        json!([0, true, true]),
        "scrollTop, title in view, taller than the window"
    );
    browser.screenshot("26-shortcuts-top");
    browser.press_key("\u{E00C}");
    browser.wait_for(
        "!document.getElementById('shortcuts').open",
        LOAD,
        "the list to close",
    );

    let open = |b: &Browser| {
        b.eval("return document.getElementById('threads').open;", json!([]))
            .as_bool()
            .unwrap()
    };
    browser.eval(
        "window.profViewer.state.update({ range: [10000000, 60000000] });",
        json!([]),
    );
    browser.click(&browser.find("#threads summary"));
    assert!(open(&browser));
    // A click on the flame graph closes it.
    browser.pointer_at(&browser.find("#flame-canvas"), 50.0, 20.0, true);
    browser.wait_for(
        "!document.getElementById('threads').open",
        LOAD,
        "a click elsewhere to close the popover",
    );
    browser.click(&browser.find("#threads summary"));
    assert!(open(&browser));
    // A drag across the list, where it covers the timeline, selects no text.
    let list = browser.find("#threads .thread-list");
    browser.drag(&list, (5.0, 5.0), (200.0, 40.0), 5);
    assert_eq!(
        browser.eval("return String(window.getSelection());", json!([])),
        json!(""),
        "a drag over the thread list selected text"
    );
    assert!(open(&browser));
    browser.press_key("\u{E00C}");
    browser.wait_for(
        "!document.getElementById('threads').open",
        LOAD,
        "Escape to close the popover",
    );
    assert_eq!(
        browser.eval("return window.profViewer.state.current.range;", json!([])),
        json!([10000000, 60000000]),
        "Escape closed the popover and cleared nothing"
    );
}
