//! The viewer's views over time in a real headless Chromium, driven through chromedriver
//! against `prof serve`: the timeline above every view (one track per thread, drag to select a
//! range, the range chip, zoom to the selection) and the stack chart tab (boxes in time order,
//! wheel zoom, drag pan, hover and click). Each state is saved as a screenshot under
//! `tests/artifacts/`. A missing browser fails these tests: they never skip.

use prof::aggregate::{format_time_at, format_weight, CallTree, Filter};
use prof::session::{SampleType, Unit};
use prof_e2e::page::{console_problems, eventually, report_rows, show, text, top_table_rows, LOAD};
use prof_e2e::sessions::{self, MS};
use prof_e2e::webdriver::Browser;
use serde_json::{json, Value};
use std::time::Duration;

/// The timeline's layout (web/views/timeline.js): the label gutter (web/time-axis.js, the
/// stack chart's too) and the rows.
const GUTTER: f64 = 150.0;
const AXIS: f64 = 16.0;
const TRACK: f64 = 24.0;

fn js(browser: &Browser, expr: &str) -> Value {
    browser.eval(&format!("return ({expr});"), json!([]))
}

/// Nanoseconds as the exact decimal seconds `prof report --from/--to` take.
fn seconds(ns: u64) -> String {
    format!("{}.{:09}", ns / 1_000_000_000, ns % 1_000_000_000)
}

/// A time range as the chip says it, formatted here with the core's formatters: the ends to a
/// hundredth of the length, and the length.
fn range_text(from: u64, to: u64) -> String {
    let time = SampleType::new("time", Unit::Nanoseconds);
    let resolution = ((to - from) / 100).max(1);
    format!(
        "{} – {} ({})",
        format_time_at(from, resolution),
        format_time_at(to, resolution),
        format_weight(&time, to - from)
    )
}

/// Presses the mouse at (`x0`, `y`) of canvas `id`, moves to (`x1`, `y`) in steps and releases:
/// a real drag through WebDriver's pointer actions.
fn drag(browser: &Browser, id: &str, x0: f64, x1: f64, y: f64) {
    browser.drag(&browser.find(&format!("#{id}")), (x0, y), (x1, y), 5);
}

/// Turns the mouse wheel by `delta_y` over (`x`, `y`) of canvas `id`.
fn wheel(browser: &Browser, id: &str, x: f64, y: f64, delta_y: i64) {
    browser.wheel_at(&browser.find(&format!("#{id}")), x, y, delta_y);
}

/// Moves the mouse to (`x`, `y`) of canvas `id`, and clicks there when `click` is set.
fn point(browser: &Browser, id: &str, x: f64, y: f64, click: bool) {
    browser.pointer_at(&browser.find(&format!("#{id}")), x, y, click);
}

/// Per timeline track, the first and last graph column (CSS pixels from the gutter) holding a
/// painted bar, and how many pixels have colour `rgb` (if given).
fn painted_columns(browser: &Browser, rgb: Option<[u8; 3]>) -> Vec<(i64, i64, u64)> {
    let v = browser.eval(
        "const c = document.getElementById('timeline-canvas');
         const [gutter, axis, track, rgb] = arguments;
         const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
         const tl = window.profViewer.timeline;
         const out = [];
         for (let t = 0; t < tl.data.threads.length; t++) {
           let first = -1, last = -1, n = 0;
           for (let x = gutter; x < c.width; x++) {
             for (let y = axis + t * track + 3; y < axis + (t + 1) * track - 2; y++) {
               const i = (y * c.width + x) * 4;
               const r = d[i], g = d[i + 1], b = d[i + 2];
               if (rgb && r === rgb[0] && g === rgb[1] && b === rgb[2]) n++;
               const plain = (r === 255 && g === 255 && b === 255) || (r === 241 && g === 241 && b === 241);
               if (!plain) { if (first < 0) first = x - gutter; last = x - gutter; }
             }
           }
           out.push([first, last, n]);
         }
         return out;",
        json!([GUTTER, AXIS, TRACK, rgb]),
    );
    v.as_array()
        .unwrap()
        .iter()
        .map(|t| {
            (
                t[0].as_i64().unwrap(),
                t[1].as_i64().unwrap(),
                t[2].as_u64().unwrap(),
            )
        })
        .collect()
}

fn state_range(browser: &Browser) -> Option<(u64, u64)> {
    let v = js(browser, "window.profViewer.state.current.range");
    v.as_array()
        .map(|a| (a[0].as_u64().unwrap(), a[1].as_u64().unwrap()))
}

#[test]
fn the_timeline_shows_each_thread_and_a_dragged_range_drives_every_view() {
    let session = sessions::two_threads();
    let shown = show("time-range", &session, "demo.json", (1280, 800), "");
    let browser = &shown.browser;
    let file = &shown.file;
    browser.wait_for(
        "window.profViewer.timeline.data && window.profViewer.timeline.data.threads.length",
        LOAD,
        "the timeline",
    );
    browser.screenshot("time-01-timeline");
    assert_eq!(console_problems(browser), Vec::<String>::new());

    // One track per thread, labelled, each painted where its thread ran: `main` from 0 to
    // 93 ms, `worker` from 93 to 130 ms (one sample per millisecond).
    let data = js(browser, "window.profViewer.timeline.data");
    assert_eq!(data["labels"], json!(["main [100]", "worker [101]"]));
    assert_eq!(
        data["buckets"],
        json!(130),
        "one bucket per sampling interval"
    );
    let graph = js(browser, "window.profViewer.timeline.trackRect(0).width")
        .as_f64()
        .unwrap();
    let col = |ms: f64| ms / 130.0 * graph;
    let tracks = painted_columns(browser, None);
    assert_eq!(tracks.len(), 2);
    let (main, worker) = (tracks[0], tracks[1]);
    assert!(main.0 >= 0 && (main.0 as f64) < col(1.0), "{main:?}");
    assert!((main.1 as f64 - col(93.0)).abs() <= 2.0, "{main:?}");
    assert!((worker.0 as f64 - col(93.0)).abs() <= 2.0, "{worker:?}");
    assert!((worker.1 as f64 - graph).abs() <= 2.0, "{worker:?}");

    // A search highlights its share of each bucket: hash_block runs on the worker only.
    browser.type_into(&browser.find("#search"), "hash_block");
    eventually("the highlighted timeline", || {
        painted_columns(browser, Some([0xd6, 0x33, 0xff]))[1].2 > 0
    });
    let matched = painted_columns(browser, Some([0xd6, 0x33, 0xff]));
    assert_eq!(matched[0].2, 0, "nothing matches on main");
    browser.screenshot("time-02-search-highlight");
    browser.eval(
        "const s = document.getElementById('search'); s.value = '';
         s.dispatchEvent(new Event('input'));",
        json!([]),
    );

    // Dragging across the main track from 10 to 60 ms selects a range.
    let y = AXIS + TRACK / 2.0;
    drag(
        browser,
        "timeline-canvas",
        GUTTER + col(10.0),
        GUTTER + col(60.0),
        y,
    );
    eventually("the range from the drag", || state_range(browser).is_some());
    let (from, to) = state_range(browser).unwrap();
    let near = |t: u64, ms: u64| {
        (t as i64 - (ms * MS) as i64).unsigned_abs() < 2 * 130 * MS / graph as u64
    };
    assert!(near(from, 10) && near(to, 60), "{from}..{to}");
    eventually("the chip", || {
        js(browser, "!document.getElementById('range-chip').hidden") == json!(true)
    });
    assert_eq!(text(browser, "#range-chip .text"), range_text(from, to));
    let hash = js(browser, "location.hash");
    assert!(
        hash.as_str()
            .unwrap()
            .contains(&format!("range={from}-{to}")),
        "{hash}"
    );

    // The table shows what `prof report --from --to` prints for that range, and the flame graph
    // weighs what the core counts in it.
    let expected = report_rows(
        file,
        &[
            "--top",
            "10",
            "--from",
            &seconds(from),
            "--to",
            &seconds(to),
        ],
    );
    eventually("the table of the range", || {
        top_table_rows(browser, expected.len()) == expected
    });
    assert_eq!(expected[0].name, "hot_loop", "{expected:?}");
    let tree = CallTree::new(&session, &Filter::all().time_range(from, to));
    eventually("the flame graph of the range", || {
        js(
            browser,
            "window.profViewer.layout && window.profViewer.layout.weight[0]",
        )
        .as_f64()
            == Some(tree.total_weight(tree.root()) as f64)
    });
    assert_eq!(
        js(browser, "window.profViewer.framesNamed('tokenize').length"),
        json!(0),
        "tokenize ran after 60 ms"
    );
    browser.screenshot("time-03-range-selected");

    // Zoom to the selection: the timeline shows only the range, and the URL says so.
    browser.click(&browser.find("#zoom-range"));
    eventually("the zoomed timeline", || {
        let d = js(browser, "window.profViewer.timeline.data");
        d["from"].as_u64() == Some(from) && d["to"].as_u64() == Some(to)
    });
    assert!(js(browser, "location.hash")
        .as_str()
        .unwrap()
        .contains(&format!("window={from}-{to}")));
    assert_eq!(text(browser, "#window-text"), range_text(from, to));
    browser.screenshot("time-04-zoomed-to-range");

    // A reload restores range and window from the URL.
    browser.eval("window.beforeReload = true; location.reload();", json!([]));
    browser.wait_for(
        "!window.beforeReload && document.body.dataset.state === 'ready' && window.profViewer.timeline.data",
        LOAD,
        "the reloaded page",
    );
    eventually("the chip after the reload", || {
        text(browser, "#range-chip .text") == range_text(from, to)
    });
    assert_eq!(state_range(browser), Some((from, to)));
    assert_eq!(
        js(browser, "window.profViewer.timeline.data.from").as_u64(),
        Some(from)
    );

    // The chip's × clears the range: every view shows everything again, as `prof report` does.
    browser.click(&browser.find("#range-chip button"));
    eventually("the cleared range", || state_range(browser).is_none());
    eventually("the chip to go", || {
        js(browser, "document.getElementById('range-chip').hidden") == json!(true)
    });
    let all = report_rows(file, &["--top", "10"]);
    eventually("the whole table", || {
        top_table_rows(browser, all.len()) == all
    });
    assert!(!js(browser, "location.hash")
        .as_str()
        .unwrap()
        .contains("range="));
    // With no range left, Escape undoes the timeline's zoom.
    browser.press_key("\u{E00C}");
    eventually("the whole timeline", || {
        js(browser, "window.profViewer.timeline.data.to").as_u64() == Some(130 * MS)
    });

    // Clicking a thread's label hides it: its track is greyed, the views leave it out.
    point(browser, "timeline-canvas", 20.0, AXIS + TRACK * 1.5, true);
    eventually("the worker hidden", || {
        js(browser, "window.profViewer.state.current.threads") == json!([0])
    });
    eventually("the greyed track", || {
        painted_columns(browser, Some([0xc4, 0xc4, 0xc4]))[1].2 > 0
    });
    assert_eq!(painted_columns(browser, Some([0xc4, 0xc4, 0xc4]))[0].2, 0);
    browser.screenshot("time-05-worker-hidden");
    assert_eq!(console_problems(browser), Vec::<String>::new());
}

/// The stack chart's boxes named `name`, in time order: track, x, y, width, height.
fn boxes(browser: &Browser, name: &str) -> Vec<Value> {
    let v = browser.eval(
        "return window.profViewer.views.get('stack-chart').boxesNamed(arguments[0]);",
        json!([name]),
    );
    v.as_array().unwrap().clone()
}

fn f(v: &Value, key: &str) -> f64 {
    v[key].as_f64().unwrap()
}

fn state_window(browser: &Browser) -> Option<(f64, f64)> {
    let v = js(browser, "window.profViewer.state.current.window");
    v.as_array()
        .map(|a| (a[0].as_f64().unwrap(), a[1].as_f64().unwrap()))
}

#[test]
fn the_stack_chart_draws_stacks_in_time_order_zooms_pans_and_hovers() {
    let shown = show(
        "stack-chart",
        &sessions::two_threads(),
        "demo.json",
        (1280, 800),
        "#view=stack-chart",
    );
    let browser = &shown.browser;
    browser.wait_for(
        "window.profViewer.views.get('stack-chart').layout",
        LOAD,
        "the stack chart",
    );
    browser.screenshot("time-06-stack-chart");
    let width = js(
        browser,
        "window.profViewer.views.get('stack-chart').layoutWidth",
    )
    .as_f64()
    .unwrap();
    // The graph starts after the thread labels' column, as the timeline's does.
    let px = |ms: f64| GUTTER + ms / 130.0 * width;
    let len = |ms: f64| ms / 130.0 * width;

    // Boxes in time order: on main, compute (0-65 ms) then parse (65-93 ms); on the worker,
    // hash_block (93-123 ms) then compute (123-130 ms).
    let compute = boxes(browser, "compute");
    assert_eq!(compute.len(), 2, "{compute:?}");
    let parse = boxes(browser, "parse");
    assert_eq!(parse.len(), 1);
    let close = |a: f64, b: f64| (a - b).abs() <= 1.5;
    assert!(close(f(&compute[0], "x"), px(0.0)) && close(f(&compute[0], "width"), len(65.0)));
    assert!(close(f(&parse[0], "x"), px(65.0)) && close(f(&parse[0], "width"), len(28.0)));
    assert_eq!(compute[0]["track"], json!(0));
    assert_eq!(compute[1]["track"], json!(1));
    assert!(close(f(&compute[1], "x"), px(123.0)));
    let hash = boxes(browser, "hash_block");
    assert!(close(f(&hash[0], "x"), px(93.0)) && f(&hash[0], "x") < f(&compute[1], "x"));
    // Callees sit below their callers.
    let tokenize = boxes(browser, "tokenize")[0].clone();
    assert!(f(&tokenize, "y") > f(&parse[0], "y"));

    // Hover shows the frame: its name, place and time span, as the core formats them.
    let (tx, ty) = (
        f(&tokenize, "x") + f(&tokenize, "width") / 2.0,
        f(&tokenize, "y") + 5.0,
    );
    point(browser, "stack-chart-canvas", tx, ty, false);
    eventually("the tooltip", || {
        js(browser, "!document.getElementById('tooltip').hidden") == json!(true)
            && text(browser, "#tooltip").contains("tokenize")
    });
    let tip = text(browser, "#tooltip");
    assert!(tip.contains("src/main.rs:7"), "{tip}");
    assert!(tip.contains("65.0 ms – 85.0 ms (20.0 ms)"), "{tip}");
    browser.screenshot("time-07-stack-chart-hover");

    // Clicking selects the function, which is highlighted.
    point(browser, "stack-chart-canvas", tx, ty, true);
    eventually("the selection", || {
        js(browser, "window.profViewer.state.current.selected") == json!("tokenize")
    });
    eventually("the highlight", || {
        js(
            browser,
            "(() => { const v = window.profViewer.views.get('stack-chart'); const b = v.boxesNamed('tokenize')[0];
               return b && v.layout.highlight[b.index] === 1 && v.layout.highlight[v.boxesNamed('hot_loop')[0].index] === 0; })()",
        ) == json!(true)
    });
    browser.screenshot("time-08-stack-chart-selected");
    browser.eval(
        "window.profViewer.state.update({selected: null});",
        json!([]),
    );

    // The wheel zooms the time axis around the pointer.
    let y = f(&compute[0], "y") + 5.0;
    wheel(browser, "stack-chart-canvas", px(30.0), y, -600);
    eventually("the zoomed window", || state_window(browser).is_some());
    let (from, to) = state_window(browser).unwrap();
    assert!(to - from < 0.6 * 130.0 * MS as f64, "{from}..{to}");
    assert!(
        from < 30.0 * MS as f64 && to > 30.0 * MS as f64,
        "{from}..{to}"
    );
    eventually("the zoomed layout", || {
        js(
            browser,
            "window.profViewer.views.get('stack-chart').layout.from",
        )
        .as_f64()
            == Some(from)
    });
    let hot = boxes(browser, "hot_loop");
    assert!(
        f(&hot[0], "width") > len(50.0) * 1.5,
        "hot_loop is drawn wider: {hot:?}"
    );
    // The timeline follows the window.
    eventually("the timeline's window", || {
        js(browser, "window.profViewer.timeline.data.from").as_f64() == Some(from)
    });
    browser.screenshot("time-09-stack-chart-zoomed");

    // Dragging pans: dragging left shows later times.
    drag(browser, "stack-chart-canvas", 600.0, 400.0, y);
    eventually("the panned window", || {
        state_window(browser).is_some_and(|(f, _)| f > from)
    });
    let (from2, to2) = state_window(browser).unwrap();
    assert!(
        ((to2 - from2) - (to - from)).abs() < 2.0,
        "panning keeps the span"
    );
    let shift = (from2 - from) / (to - from) * width;
    assert!((shift - 200.0).abs() < 4.0, "shifted by {shift} px");
    browser.screenshot("time-10-stack-chart-panned");

    // "Whole profile" undoes the zoom.
    browser.click(&browser.find("#zoom-reset"));
    eventually("the whole window", || state_window(browser).is_none());
    eventually("the whole stack chart", || {
        js(
            browser,
            "window.profViewer.views.get('stack-chart').layout.to",
        )
        .as_u64()
            == Some(130 * MS)
    });
    // A selected range is the stack chart's window while it has none of its own; hidden threads
    // are left out.
    browser.eval(
        "window.profViewer.state.update({range: [arguments[0], arguments[1]], threads: [0]});",
        json!([65 * MS, 93 * MS]),
    );
    eventually("the stack chart of the range", || {
        let l = js(
            browser,
            "(l => [l.from, l.to, Array.from(l.threads)])(window.profViewer.views.get('stack-chart').layout)",
        );
        l == json!([65 * MS, 93 * MS, [0]])
    });
    assert!(boxes(browser, "hot_loop").is_empty());
    let parse = boxes(browser, "parse");
    assert!(close(f(&parse[0], "x"), GUTTER) && close(f(&parse[0], "width"), width));
    browser.screenshot("time-11-stack-chart-range");
    // The stack chart follows the transforms, as every view does: dropping the samples through
    // `parse` leaves the range's 28 ms empty; merging `parse` into its caller gives them to
    // `main`, whose box then spans the whole range.
    browser.eval(
        "window.profViewer.state.update({transforms: [{kind: 'drop', function: 'parse'}]});",
        json!([]),
    );
    eventually("the stack chart without parse", || {
        boxes(browser, "parse").is_empty()
    });
    assert!(
        boxes(browser, "main").is_empty(),
        "nothing left in the range"
    );
    browser.eval(
        "window.profViewer.state.update({transforms: [{kind: 'merge', function: 'parse'}]});",
        json!([]),
    );
    eventually("parse merged into main", || {
        boxes(browser, "parse").is_empty() && !boxes(browser, "main").is_empty()
    });
    let main = boxes(browser, "main");
    assert!(
        main.len() == 1 && close(f(&main[0], "x"), GUTTER) && close(f(&main[0], "width"), width),
        "{main:?}"
    );
    browser.screenshot("time-12-stack-chart-transformed");
    browser.eval(
        "window.profViewer.state.update({transforms: []});",
        json!([]),
    );
    assert_eq!(console_problems(browser), Vec::<String>::new());
}

/// Performance, measured and printed (not a pass/fail bound: the machine is shared): the
/// worker's bucket and box passes and the canvases' redraws on one million samples.
#[test]
fn timeline_and_stack_chart_on_a_million_samples() {
    let shown = show(
        "time-1m",
        &sessions::large(1_000_000),
        "big.json.gz",
        (1280, 800),
        "",
    );
    let browser = &shown.browser;
    browser.wait_for(
        "window.profViewer.timeline.data",
        Duration::from_secs(60),
        "the timeline",
    );
    let timeline_ms = js(browser, "window.profViewer.timeline.data.computeMs");
    let draws = |expr: &str| {
        browser
            .eval(
                &format!(
                    "const v = {expr}; const times = [];
                     for (let i = 0; i < 5; i++) {{ const t = performance.now(); v.draw(); times.push(performance.now() - t); }}
                     return Math.min(...times);"
                ),
                json!([]),
            )
            .as_f64()
            .unwrap()
    };
    let timeline_draw = draws("window.profViewer.timeline");
    browser.eval(
        "window.profViewer.state.update({view: 'stack-chart'});",
        json!([]),
    );
    browser.wait_for(
        "window.profViewer.views.get('stack-chart').layout",
        Duration::from_secs(60),
        "the stack chart",
    );
    let chart = js(
        browser,
        "(() => { const l = window.profViewer.views.get('stack-chart').layout; return [l.computeMs, l.count]; })()",
    );
    let chart_draw = draws("window.profViewer.views.get('stack-chart')");
    // Zoomed to 0.1% of the session, each sample is wider than a pixel: every frame is a box.
    browser.eval(
        "window.profViewer.state.update({window: [400000000000, 401000000000]});",
        json!([]),
    );
    browser.wait_for(
        "window.profViewer.views.get('stack-chart').layout.from === 400000000000",
        Duration::from_secs(60),
        "the zoomed stack chart",
    );
    let zoomed = js(
        browser,
        "(() => { const l = window.profViewer.views.get('stack-chart').layout; return [l.computeMs, l.count]; })()",
    );
    let zoomed_draw = draws("window.profViewer.views.get('stack-chart')");
    browser.screenshot("time-13-million-samples");
    println!(
        "1M samples: timeline buckets in the worker {timeline_ms} ms, drawn in {timeline_draw:.1} ms; \
         stack chart boxes in the worker {} ms ({} boxes), drawn in {chart_draw:.1} ms; \
         zoomed to 0.1%: {} ms ({} boxes), drawn in {zoomed_draw:.1} ms",
        chart[0], chart[1], zoomed[0], zoomed[1]
    );
    assert!(chart[1].as_u64().unwrap() > 0 && zoomed[1].as_u64().unwrap() > 0);
}

#[test]
fn the_thread_summary_counts_the_samples_in_the_range() {
    let shown = show(
        "time-summary",
        &sessions::two_threads(),
        "demo.json",
        (1100, 700),
        "",
    );
    let browser = &shown.browser;
    let summary = |b: &Browser| text(b, "#threads summary");
    assert_eq!(summary(browser), "All threads (2): 130 samples");
    // 65..93 ms: 28 samples of main, none of the worker.
    browser.eval(
        "window.profViewer.state.update({range: [arguments[0], arguments[1]]});",
        json!([65 * MS, 93 * MS]),
    );
    eventually("the summary of the range", || {
        summary(browser) == "All threads (2): 28 of 130 samples"
    });
    browser.eval("window.profViewer.state.update({threads: [1]});", json!([]));
    eventually("the summary of the worker in the range", || {
        summary(browser) == "1 of 2 threads: 0 of 37 samples"
    });
    browser.eval("window.profViewer.state.update({range: null});", json!([]));
    eventually("the summary without the range", || {
        summary(browser) == "1 of 2 threads: 37 samples"
    });
    browser.screenshot("r20-time-summary");
}

/// Each timeline track's label and the weight its tooltip says it shows.
fn track_totals(browser: &Browser) -> Vec<(String, String)> {
    let v = js(
        browser,
        "window.profViewer.timeline.data
           ? Array.from(window.profViewer.timeline.data.labels, (l, t) => [l, window.profViewer.timeline.data.totals[t]])
           : []",
    );
    serde_json::from_value(v).unwrap()
}

/// What the timeline's tooltip says over track `t`'s label.
fn label_tooltip(browser: &Browser, t: usize) -> String {
    point(
        browser,
        "timeline-canvas",
        20.0,
        AXIS + t as f64 * TRACK + TRACK / 2.0,
        false,
    );
    let mut tip = String::new();
    eventually("the label's tooltip", || {
        tip = text(browser, "#tooltip");
        !tip.is_empty()
    });
    tip
}

/// Shows fragment `fragment` of the page `shown` serves and waits until each track (named by
/// its thread's name) shows what `prof report` totals for that thread with `options`, and the
/// first track's tooltip says so.
fn timeline_matches_report(shown: &prof_e2e::page::Shown, fragment: &str, options: &[&str]) {
    let browser = &shown.browser;
    let base = shown.served.url.split('#').next().unwrap();
    browser.goto(&format!("{base}{fragment}"));
    let mut tracks = Vec::new();
    let mut expected = Vec::new();
    eventually(&format!("the timeline of {fragment}"), || {
        tracks = track_totals(browser);
        expected = tracks
            .iter()
            .map(|(label, _)| {
                let thread = label.split(" [").next().unwrap();
                let mut args = options.to_vec();
                args.extend(["--thread", thread]);
                prof_e2e::page::report_total(&shown.file, &args)
            })
            .collect();
        !tracks.is_empty() && tracks.iter().map(|t| &t.1).eq(expected.iter())
    });
    let tip = label_tooltip(browser, 0);
    assert!(tip.contains(&format!("Shown{}", expected[0])), "{tip}");
}

/// The timeline keeps what every view keeps: with the Time filter (running or waiting), a
/// scope or a task chosen, each track shows and its tooltip says what `prof report` totals for
/// that thread with the same options.
#[test]
fn the_timeline_keeps_only_what_the_time_scope_and_task_filters_keep() {
    let wall = show(
        "time-timeline-state",
        &sessions::wall_blocked(),
        "wall.json",
        (1100, 700),
        "",
    );
    timeline_matches_report(&wall, "#state=waiting", &["--state", "waiting"]);
    wall.browser.screenshot("r21-timeline-waiting");
    timeline_matches_report(&wall, "#state=running", &["--state", "running"]);
    // Without a filter, the whole thread again.
    timeline_matches_report(&wall, "#", &[]);
    drop(wall);

    let scoped = show(
        "time-timeline-scope",
        &sessions::scoped_tasks(),
        "scoped.json",
        (1100, 700),
        "",
    );
    timeline_matches_report(&scoped, "#scope=parse", &["--scope", "parse"]);
    timeline_matches_report(&scoped, "#task=store", &["--task", "store"]);
    scoped.browser.screenshot("r22-timeline-task");
    assert_eq!(console_problems(&scoped.browser), Vec::<String>::new());
}

/// 18 threads as a perf profile of a thread pool has them: 15 idle ones (one sample each) listed
/// before the 3 that did the work.
fn mostly_idle_threads() -> prof::session::Session {
    use prof::session::{FrameSpec, Metadata, Mode, SessionBuilder};
    let mut b = SessionBuilder::new(Metadata {
        program: "pool-app".into(),
        duration_ns: 100 * MS,
        mode: Mode::Cpu,
        requested_interval_ns: MS,
        achieved_interval_ns: MS,
        ..Metadata::default()
    });
    let park = b.intern_frame(&FrameSpec::named("park"));
    let work = b.intern_frame(&FrameSpec::named("work"));
    let parked = b.intern_stack_path(&[park]).unwrap();
    let working = b.intern_stack_path(&[work]).unwrap();
    for k in 0..15 {
        let t = b.thread(200 + k, &format!("idle-{k}"));
        b.push_sample(parked, t, k * MS, MS);
    }
    for (k, samples) in [(0u64, 60u64), (1, 90), (2, 30)] {
        let t = b.thread(300 + k, &format!("busy-{k}"));
        for i in 0..samples {
            b.push_sample(working, t, i * MS, MS);
        }
    }
    b.finish()
}

#[test]
fn the_timeline_shows_busy_threads_before_idle_ones() {
    let shown = show(
        "time-busy-first",
        &mostly_idle_threads(),
        "pool.json",
        (1280, 800),
        "",
    );
    let browser = &shown.browser;
    eventually("the timeline", || {
        !js(browser, "window.profViewer.timeline.data").is_null()
    });
    let labels: Vec<String> =
        serde_json::from_value(js(browser, "[...window.profViewer.timeline.data.labels]")).unwrap();
    assert_eq!(labels.len(), 18);
    assert_eq!(
        labels[..3],
        ["busy-1 [301]", "busy-0 [300]", "busy-2 [302]"],
        "{labels:?}"
    );
    assert_eq!(labels[3], "idle-0 [200]");
    // The busy tracks are the ones in view, and clicking the first track's label hides busy-1.
    let visible = js(
        browser,
        "document.querySelector('.timeline-tracks').clientHeight",
    )
    .as_f64()
    .unwrap();
    assert!(AXIS + 3.0 * TRACK <= visible, "{visible}");
    // The canvas is taller than its scrolling box: aim from the box's corner.
    browser.pointer_at(
        &browser.find(".timeline-tracks"),
        20.0,
        AXIS + TRACK / 2.0,
        true,
    );
    eventually("busy-1 hidden", || {
        js(browser, "window.profViewer.state.current.threads")
            .as_array()
            .is_some_and(|t| t.len() == 17 && !t.contains(&json!(16)))
    });
    browser.screenshot("r20-time-busy-first");
}

/// `session` served as `file` and shown on the Stack chart tab at 1280x800, once the stack chart
/// and the timeline are drawn.
fn show_stack_chart(
    test: &str,
    session: &prof::session::Session,
    file: &str,
) -> prof_e2e::page::Shown {
    let shown = show(test, session, file, (1280, 800), "#view=stack-chart");
    shown.browser.wait_for(
        "window.profViewer.views.get('stack-chart').layout && window.profViewer.timeline.data",
        LOAD,
        "the stack chart and the timeline",
    );
    shown
}

/// A wall-mode session of 10 s whose threads' order in the file is not their order by weight:
/// `light` (tid 10, 100 ms of `tick`), `sleeper` (tid 11: 1 ms of `work`, then 9 s off CPU in
/// `wait`, one sample as `prof record --mode wall` takes it, then 500 ms of `work`) and `heavy`
/// (tid 12, 5 s of `crunch`).
fn wall_wait_session() -> prof::session::Session {
    use prof::session::{FrameSpec, Metadata, Mode, SampleState, SessionBuilder};
    let mut b = SessionBuilder::new(Metadata {
        program: "waiter".into(),
        duration_ns: 10_000 * MS,
        mode: Mode::Wall,
        sample_type: Mode::Wall.sample_type(),
        extra_sample_types: Mode::Wall.extra_sample_types(),
        requested_interval_ns: MS,
        achieved_interval_ns: MS,
        ..Metadata::default()
    });
    let main = b.intern_frame(&FrameSpec::named("main"));
    let path = |b: &mut SessionBuilder, leaf: &str| {
        let leaf = b.intern_frame(&FrameSpec::named(leaf));
        b.intern_stack_path(&[main, leaf]).unwrap()
    };
    let (tick, work, wait, crunch) = (
        path(&mut b, "tick"),
        path(&mut b, "work"),
        path(&mut b, "wait"),
        path(&mut b, "crunch"),
    );
    let light = b.thread(10, "light");
    let sleeper = b.thread(11, "sleeper");
    let heavy = b.thread(12, "heavy");
    let running = Some(SampleState::Running);
    for i in 0..100 {
        b.push_sample_full(tick, light, i * MS, &[MS], 1, running);
    }
    b.push_sample_full(work, sleeper, 0, &[MS], 1, running);
    let waiting = Some(SampleState::Waiting);
    b.push_sample_full(wait, sleeper, MS, &[9_000 * MS], 1, waiting);
    for i in 0..500 {
        b.push_sample_full(work, sleeper, (9_001 + i) * MS, &[MS], 1, running);
    }
    for i in 0..5_000 {
        b.push_sample_full(crunch, heavy, i * MS, &[MS], 1, running);
    }
    b.finish()
}

#[test]
fn the_stack_chart_lines_up_with_the_timeline_and_draws_a_long_wait_as_one_box() {
    let shown = show_stack_chart("time-aligned", &wall_wait_session(), "waiter.json");
    let browser = &shown.browser;
    browser.screenshot("time-13-stack-chart-aligned");
    // The same threads in the same order: the timeline's, busiest first.
    let order = js(
        browser,
        "[Array.from(window.profViewer.timeline.data.threads), Array.from(window.profViewer.views.get('stack-chart').layout.threads)]",
    );
    assert_eq!(order[0], json!([1, 2, 0]), "{order}");
    assert_eq!(order[1], order[0], "{order}");
    let labels = js(
        browser,
        "[window.profViewer.timeline.data.labels, window.profViewer.views.get('stack-chart').layout.labels]",
    );
    assert_eq!(labels[0], labels[1], "{labels}");

    // A moment is at the same x on the page in both: the wait's start and end, and where
    // `crunch` stops.
    let page_x = |expr: &str| -> (f64, f64) {
        let v = browser.eval(
            &format!(
                "const chart = window.profViewer.views.get('stack-chart');
                 const tl = window.profViewer.timeline;
                 const [boxLeft, boxRight, time] = (() => {{ {expr} }})();
                 const c = document.getElementById('stack-chart-canvas').getBoundingClientRect().left;
                 const t = document.getElementById('timeline-canvas').getBoundingClientRect().left;
                 return [[c + boxLeft, t + tl.xOfTime(time[0])], [c + boxRight, t + tl.xOfTime(time[1])]];"
            ),
            json!([]),
        );
        let pair = |k: usize| (v[k][0].as_f64().unwrap(), v[k][1].as_f64().unwrap());
        let (left, right) = (pair(0), pair(1));
        assert!(
            (left.0 - left.1).abs() <= 1.0,
            "{expr}: {left:?} (chart, timeline)"
        );
        assert!(
            (right.0 - right.1).abs() <= 1.0,
            "{expr}: {right:?} (chart, timeline)"
        );
        (left.0, right.0)
    };
    let (wait_left, wait_right) = page_x(
        "const b = chart.boxesNamed('wait'); if (b.length !== 1) throw new Error(`wait: ${JSON.stringify(b)}`);
         return [b[0].x, b[0].x + b[0].width, [1e6, 9001e6]];",
    );
    page_x(
        "const b = chart.boxesNamed('crunch'); return [b[0].x, b[b.length - 1].x + b[b.length - 1].width, [0, 5000e6]];",
    );
    // The 9 s wait is one box of 9 s: nine tenths of the graph.
    let width = js(
        browser,
        "window.profViewer.views.get('stack-chart').layoutWidth",
    )
    .as_f64()
    .unwrap();
    assert!(
        (wait_right - wait_left - 0.9 * width).abs() <= 2.0,
        "{wait_left}..{wait_right} of {width}"
    );
    assert_eq!(console_problems(browser), Vec::<String>::new());
}

/// The rightmost column of canvas `id` (CSS pixels, device pixel ratio 1) holding a painted
/// pixel in its axis's text band (rows 0 to `band`), and the canvas's width.
fn axis_text_extent(browser: &Browser, id: &str, band: f64) -> (f64, f64) {
    let v = browser.eval(
        "const c = document.getElementById(arguments[0]);
         const d = c.getContext('2d').getImageData(0, 0, c.width, arguments[1]).data;
         let right = -1;
         for (let y = 0; y < arguments[1]; y++)
           for (let x = 0; x < c.width; x++) {
             const i = (y * c.width + x) * 4;
             if (d[i + 3] > 0 && (d[i] < 200 || d[i + 1] < 200 || d[i + 2] < 200)) right = Math.max(right, x);
           }
         return [right, c.width];",
        json!([id, band]),
    );
    (v[0].as_f64().unwrap(), v[1].as_f64().unwrap())
}

#[test]
fn the_last_tick_label_is_drawn_whole() {
    use prof::session::{FrameSpec, Metadata, Mode, SessionBuilder};
    // 4.03 s: the last tick, 4.0 s, falls a few pixels before the right edge.
    let mut b = SessionBuilder::new(Metadata {
        program: "ticks".into(),
        duration_ns: 4_030 * MS,
        mode: Mode::Cpu,
        requested_interval_ns: MS,
        achieved_interval_ns: MS,
        ..Metadata::default()
    });
    let t = b.thread(1, "main");
    let f = b.intern_frame(&FrameSpec::named("run"));
    let s = b.intern_stack_path(&[f]).unwrap();
    for i in 0..4_000 {
        b.push_sample(s, t, i * MS, MS);
    }
    let shown = show_stack_chart("time-last-tick", &b.finish(), "ticks.json");
    let browser = &shown.browser;
    browser.screenshot("time-14-last-tick");
    let last = js(browser, "window.profViewer.timeline.data.ticks.at(-1)");
    assert_eq!(last["text"], json!("4.0 s"), "{last}");
    assert!(last["x"].as_f64().unwrap() > 0.99, "{last}");
    // The text stays inside the canvas, a few pixels clear of its edge, in both views.
    for (id, band) in [
        ("timeline-canvas", AXIS - 4.0),
        ("stack-chart-canvas", 13.0),
    ] {
        let (right, width) = axis_text_extent(browser, id, band);
        assert!(
            right > 0.0 && right <= width - 3.0,
            "{id}: text up to {right} of {width}"
        );
    }
    assert_eq!(console_problems(browser), Vec::<String>::new());
}
