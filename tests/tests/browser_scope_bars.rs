//! Scope bars in a real headless Chromium against `prof serve`, on a session with
//! scopes, marks and tasks written by prof's own writer: the timeline draws each thread's spans
//! as nested bars under its track, its marks as ticks, and one lane per task name with its
//! polls; the stack chart draws the spans above each thread's stacks. Clicking a bar selects
//! its time, as the Scopes view's list of calls does. Screenshots go to
//! `tests/artifacts/scope-bars-*`.
//!
//! A missing browser fails these tests: they never skip.

use prof::aggregate::format_weight;
use prof::session::{SampleType, Session, Unit};
use prof_e2e::page::{console_problems, eventually, show, text, LOAD};
use prof_e2e::sessions::scoped_tasks;
use prof_e2e::webdriver::{Browser, Element};
use serde_json::{json, Value};

fn js(browser: &Browser, expr: &str) -> Value {
    browser.eval(&format!("return ({expr});"), json!([]))
}

/// A drawn bar as the page's test hooks (`barsNamed`) give it, in CSS pixels of its canvas.
#[derive(Debug, Clone)]
struct Rect {
    row: u64,
    depth: u64,
    x: f64,
    y: f64,
    width: f64,
    height: f64,
}

/// The bars named `name` that view `view` (a script expression for it) draws, in x order.
fn bars(browser: &Browser, view: &str, name: &str) -> Vec<Rect> {
    let v = browser.eval(
        &format!("return {view}.barsNamed(arguments[0]);"),
        json!([name]),
    );
    v.as_array()
        .unwrap()
        .iter()
        .map(|r| Rect {
            row: r["row"].as_u64().unwrap(),
            depth: r["depth"].as_u64().unwrap(),
            x: r["x"].as_f64().unwrap(),
            y: r["y"].as_f64().unwrap(),
            width: r["width"].as_f64().unwrap(),
            height: r["height"].as_f64().unwrap(),
        })
        .collect()
}

/// The colour of the pixel at (`x`, `y`) CSS pixels of canvas `id` (the windows have one
/// device pixel per CSS pixel).
fn pixel(browser: &Browser, id: &str, x: f64, y: f64) -> [u8; 3] {
    let v = browser.eval(
        "const c = document.getElementById(arguments[0]);
         const d = c.getContext('2d').getImageData(Math.floor(arguments[1]), Math.floor(arguments[2]), 1, 1).data;
         return [d[0], d[1], d[2]];",
        json!([id, x, y]),
    );
    serde_json::from_value(v).unwrap()
}

/// Moves the mouse to the middle of bar `r` of canvas `canvas`, and clicks there when `click`
/// is set.
fn point_at(browser: &Browser, canvas: &Element, r: &Rect, click: bool) {
    browser.pointer_at(canvas, r.x + r.width / 2.0, r.y + r.height / 2.0, click);
}

fn range(browser: &Browser) -> Value {
    js(browser, "window.profViewer.state.current.range")
}

/// The spans of scope `name` on thread `thread`, in time order: `(start, end)`.
fn spans(session: &Session, name: &str, thread: u32) -> Vec<(u64, u64)> {
    let mut out: Vec<(u64, u64)> = session
        .scopes
        .spans
        .iter()
        .filter(|s| session.str(session.scopes.site(s.site).name) == name && s.thread.0 == thread)
        .map(|s| (s.start_ns, s.end_ns))
        .collect();
    out.sort_unstable();
    out
}

fn time_text(ns: u64) -> String {
    format_weight(&SampleType::new("time", Unit::Nanoseconds), ns)
}

const WHITE: [u8; 3] = [255, 255, 255];
const TIMELINE: &str = "window.profViewer.timeline";
const STACK_CHART: &str = "window.profViewer.views.get('stack-chart')";
/// Where the graph of the timeline and of the stack chart starts, after the thread labels
/// (web/time-axis.js).
const GUTTER: f64 = 150.0;

/// Serves `session`, shows it at `fragment` in a window named `test` of `size`, and waits
/// until `view` (a script expression for it) has drawn scope bars.
fn show_bars(
    test: &str,
    session: &Session,
    size: (u32, u32),
    fragment: &str,
    view: &str,
) -> prof_e2e::page::Shown {
    let shown = show(test, session, "scoped.json.gz", size, fragment);
    shown.browser.wait_for(
        &format!("{view}.bars && {view}.bars.count > 0"),
        std::time::Duration::from_secs(60),
        "the scope bars",
    );
    shown
}

#[test]
fn the_timeline_draws_scope_bars_marks_and_task_lanes_and_a_click_selects_a_bars_time() {
    let session = scoped_tasks();
    let shown = show_bars("scope-bars-timeline", &session, (1300, 900), "", TIMELINE);
    let browser = &shown.browser;

    // Every span is wide enough at this width to be a bar of its own: one per span, at its
    // nesting depth (`request` outermost, `parse` inside it), on its thread's track.
    let extent = session.meta.duration_ns as f64;
    let graph = js(browser, &format!("{TIMELINE}.trackRect(0).width"))
        .as_f64()
        .unwrap();
    let tracks: Vec<u64> =
        serde_json::from_value(js(browser, &format!("[...{TIMELINE}.data.threads]"))).unwrap();
    for (name, depth) in [("request", 0), ("parse", 1)] {
        let drawn = bars(browser, TIMELINE, name);
        assert_eq!(drawn.len(), 30, "{name}: {drawn:?}");
        for (track, &thread) in tracks.iter().enumerate() {
            let expected = spans(&session, name, thread as u32);
            let on: Vec<&Rect> = drawn.iter().filter(|r| r.row == thread).collect();
            assert_eq!(on.len(), expected.len());
            let top = js(browser, &format!("{TIMELINE}.trackRect({track})"));
            for (r, &(start, end)) in on.iter().zip(&expected) {
                assert_eq!(r.depth, depth);
                assert!(r.y >= top["y"].as_f64().unwrap() + top["height"].as_f64().unwrap());
                assert!(
                    (r.x - (150.0 + start as f64 / extent * graph)).abs() < 1.0,
                    "{r:?}"
                );
                assert!((r.width - (end - start) as f64 / extent * graph).abs() < 1.5);
                // Painted: the bar's top left corner has the scope's colour, not the track's.
                let color = pixel(browser, "timeline-canvas", r.x + 1.0, r.y + 1.0);
                assert_ne!(color, WHITE, "{name} at {r:?}");
                assert_eq!(
                    color,
                    pixel(
                        browser,
                        "timeline-canvas",
                        drawn[0].x + 1.0,
                        drawn[0].y + 1.0
                    ),
                    "one colour per scope name"
                );
            }
        }
    }
    // Between two `parse` bars (the second half of each request has none), the lane is empty.
    let parse = bars(browser, TIMELINE, "parse");
    let gap = parse[0].x + parse[0].width + 2.0;
    assert_eq!(
        pixel(browser, "timeline-canvas", gap, parse[0].y + 3.0),
        WHITE
    );
    // Marks: a thin dark tick at each `gc` mark's time, across its thread's lanes.
    let gc: Vec<&prof::session::Mark> = session.scopes.marks.iter().collect();
    assert_eq!(gc.len(), 6);
    let request = bars(browser, TIMELINE, "request");
    for mark in &gc {
        let x = 150.0 + mark.time_ns as f64 / extent * graph;
        let lane = request
            .iter()
            .find(|r| r.row == u64::from(mark.thread.0))
            .unwrap();
        let dark = (-1..=1).any(|dx| {
            pixel(
                browser,
                "timeline-canvas",
                x + f64::from(dx),
                lane.y + lane.height + 4.0,
            ) == [0x37, 0x47, 0x4f]
        });
        assert!(dark, "no tick for the mark at {} ns", mark.time_ns);
    }

    // Hovering a `parse` bar tells its name, duration and time.
    let canvas = browser.find("#timeline-canvas");
    let first_parse = spans(&session, "parse", tracks[0] as u32)[0];
    let target = parse.iter().find(|r| r.row == tracks[0]).unwrap().clone();
    point_at(browser, &canvas, &target, false);
    eventually("the bar's tooltip", || {
        let tip = text(browser, "#tooltip");
        tip.starts_with("parse")
            && tip.contains(&time_text(first_parse.1 - first_parse.0))
            && tip.contains("Click to select its time")
    });
    browser.screenshot("scope-bars-timeline");

    // Clicking the longest `request` of the first track selects its time, one past its end.
    let thread = tracks[0] as u32;
    let requests = spans(&session, "request", thread);
    let k = (0..requests.len())
        .max_by_key(|&k| (requests[k].1 - requests[k].0, std::cmp::Reverse(k)))
        .unwrap();
    let r = request
        .iter()
        .filter(|r| r.row == tracks[0])
        .nth(k)
        .unwrap();
    point_at(browser, &canvas, r, true);
    eventually("the span's time selected", || {
        range(browser) == json!([requests[k].0, requests[k].1 + 1])
    });

    // A task lane per task name: clicking a poll of `store` selects the poll's time. Its
    // polls do not overlap (each on one thread at a time), so the bar under the pointer is
    // that poll's.
    let lanes = js(
        browser,
        &format!("{TIMELINE}.bars.scopes.tasks.map(t => t.name)"),
    );
    assert_eq!(lanes, json!(["fetch", "store"]), "the longest polled first");
    let store = bars(browser, TIMELINE, "store");
    let mut polls: Vec<(u64, u64)> = session
        .tasks
        .polls
        .iter()
        .filter(|p| session.str(session.tasks.task(p.task).name) == "store")
        .map(|p| (p.start_ns, p.end_ns))
        .collect();
    polls.sort_unstable();
    assert_eq!(store.len(), polls.len());
    assert!(store.iter().all(|r| r.row == 1));
    let (bar, poll) = (&store[2], polls[2]);
    assert!(bar.y > request.iter().map(|r| r.y).fold(0.0, f64::max));
    point_at(browser, &canvas, bar, true);
    eventually("the poll's time selected", || {
        range(browser) == json!([poll.0, poll.1 + 1])
    });
    point_at(browser, &canvas, bar, false);
    eventually("the poll's tooltip", || {
        let tip = text(browser, "#tooltip");
        tip.starts_with("store") && tip.contains(&time_text(poll.1 - poll.0))
    });
    browser.screenshot("scope-bars-tasks");

    // A drag across the lanes still selects a range, as anywhere on the timeline.
    browser.drag(&canvas, (200.0, r.y + 3.0), (400.0, r.y + 3.0), 5);
    eventually("the dragged range", || {
        range(browser)
            .as_array()
            .is_some_and(|a| a[1].as_u64().unwrap() - a[0].as_u64().unwrap() > 10_000_000)
    });
    assert_eq!(console_problems(browser), Vec::<String>::new());
}

#[test]
fn the_stack_chart_draws_scope_bars_above_the_stacks_and_a_click_selects_a_bars_time() {
    let session = scoped_tasks();
    let shown = show_bars(
        "scope-bars-stack-chart",
        &session,
        (1300, 800),
        "#view=stack-chart",
        STACK_CHART,
    );
    let browser = &shown.browser;
    let threads: Vec<u64> =
        serde_json::from_value(js(browser, &format!("[...{STACK_CHART}.layout.threads]"))).unwrap();
    let request = bars(browser, STACK_CHART, "request");
    let parse = bars(browser, STACK_CHART, "parse");
    assert_eq!((request.len(), parse.len()), (30, 30));
    // Above the stacks: each thread's lanes come before its outermost frame's boxes.
    let boxes = js(
        browser,
        &format!("{STACK_CHART}.boxesNamed('tokio::runtime::worker::run')"),
    );
    for (track, &thread) in threads.iter().enumerate() {
        let stacks_top = boxes
            .as_array()
            .unwrap()
            .iter()
            .filter(|b| b["track"] == json!(track))
            .map(|b| b["y"].as_f64().unwrap())
            .fold(f64::MAX, f64::min);
        let lanes: Vec<&Rect> = request
            .iter()
            .chain(&parse)
            .filter(|r| r.row == thread)
            .collect();
        assert!(!lanes.is_empty());
        assert!(
            lanes.iter().all(|r| r.y + r.height <= stacks_top),
            "{lanes:?}"
        );
        let outer = request.iter().find(|r| r.row == thread).unwrap().y;
        assert!(parse
            .iter()
            .filter(|r| r.row == thread)
            .all(|r| r.y > outer));
    }
    let r = &request[3];
    assert_ne!(
        pixel(browser, "stack-chart-canvas", r.x + 1.0, r.y + 1.0),
        WHITE
    );
    browser.screenshot("scope-bars-stack-chart");

    // Clicking a `request` bar selects its time; the chart then shows that time, where its
    // `parse` bar fills the first half of the width.
    let thread = r.row as u32;
    let requests = spans(&session, "request", thread);
    let k = request
        .iter()
        .filter(|b| b.row == r.row)
        .position(|b| b.x == r.x)
        .unwrap();
    let canvas = browser.find("#stack-chart-canvas");
    point_at(browser, &canvas, r, true);
    let expected = json!([requests[k].0, requests[k].1 + 1]);
    eventually("the span's time selected", || range(browser) == expected);
    eventually("the chart zoomed to the span", || {
        let parse = bars(browser, STACK_CHART, "parse");
        let width = js(browser, &format!("{STACK_CHART}.layoutWidth"))
            .as_f64()
            .unwrap();
        parse
            .iter()
            .any(|p| (p.x - GUTTER).abs() < 1.0 && (p.width - width / 2.0).abs() < width * 0.02)
    });
    browser.screenshot("scope-bars-stack-chart-span");
    assert_eq!(console_problems(browser), Vec::<String>::new());
}

const MS: u64 = 1_000_000;

/// A session builder for `program` sampled every millisecond, and its one thread, `main`.
fn sampled_every_ms(program: &str) -> (prof::session::SessionBuilder, prof::session::ThreadIdx) {
    let mut b = prof::session::SessionBuilder::new(prof::session::Metadata {
        program: program.into(),
        timer: "perf_event".into(),
        requested_interval_ns: MS,
        achieved_interval_ns: MS,
        ..prof::session::Metadata::default()
    });
    let main = b.thread(1, "main");
    (b, main)
}

/// `requests` spans of `request`, 5 ms long every 10 ms, each holding a 2 ms `parse`, on one
/// thread sampled every millisecond.
fn many_spans(requests: u64) -> Session {
    use prof::session::{FrameSpec, SiteKind, Span};
    let (mut b, main) = sampled_every_ms("busy-server");
    let request = b.intern_site("request", None, None, SiteKind::Scope);
    let parse = b.intern_site("parse", None, None, SiteKind::Scope);
    let f = b.intern_frame(&FrameSpec::named("serve"));
    let stack = b.intern_stack_path(&[f]).unwrap();
    for i in 0..requests {
        let start = i * 10 * MS;
        let outer = b.push_span(Span {
            site: request,
            thread: main,
            start_ns: start,
            end_ns: start + 5 * MS,
            parent: None,
            fields: Vec::new(),
        });
        b.push_span(Span {
            site: parse,
            thread: main,
            start_ns: start,
            end_ns: start + 2 * MS,
            parent: Some(outer),
            fields: Vec::new(),
        });
        for ms in 0..5 {
            b.push_sample(stack, main, start + ms * MS + MS / 2, MS);
        }
    }
    b.meta_mut().duration_ns = requests * 10 * MS;
    b.finish()
}

/// Performance, measured and printed (not a pass/fail bound: the machine is shared), and the
/// merging that keeps it: 200,000 spans over a window of 1,150 pixels make at most two bars
/// per pixel of each lane (merged bars about a pixel wide), and zoomed in, each span is a bar
/// of its own again.
#[test]
fn two_hundred_thousand_spans_make_at_most_two_bars_per_pixel_of_a_lane() {
    let requests = 100_000;
    let shown = show_bars(
        "scope-bars-many",
        &many_spans(requests),
        (1300, 800),
        "",
        TIMELINE,
    );
    let browser = &shown.browser;
    let graph = js(browser, &format!("{TIMELINE}.trackRect(0).width"))
        .as_f64()
        .unwrap();
    let whole = js(
        browser,
        &format!(
            "[{TIMELINE}.bars.count, {TIMELINE}.data.scopes.computeMs, {TIMELINE}.data.computeMs]"
        ),
    );
    let count = whole[0].as_f64().unwrap();
    // Two lanes, each busy over its whole width: merged bars stay about a pixel wide (one
    // bar across the whole lane would say nothing of where the spans are).
    assert!(
        count >= graph && count <= 2.0 * 2.0 * graph,
        "{count} bars for {graph} pixels"
    );
    let draw = browser
        .eval(
            &format!(
                "const v = {TIMELINE}; const times = [];
                 for (let i = 0; i < 5; i++) {{ const t = performance.now(); v.draw(); times.push(performance.now() - t); }}
                 return Math.min(...times);"
            ),
            json!([]),
        )
        .as_f64()
        .unwrap();
    // Zoomed to one second (a thousandth): 100 requests, each about 6 pixels wide.
    browser.eval(
        "window.profViewer.state.update({window: [400000000000, 401000000000]});",
        json!([]),
    );
    browser.wait_for(
        &format!("{TIMELINE}.data.from === 400000000000 && {TIMELINE}.bars"),
        LOAD,
        "the zoomed timeline",
    );
    let zoomed = js(browser, &format!("{TIMELINE}.data.scopes.computeMs"));
    assert_eq!(bars(browser, TIMELINE, "request").len(), 100);
    assert_eq!(bars(browser, TIMELINE, "parse").len(), 100);
    browser.screenshot("scope-bars-many-zoomed");
    println!(
        "{} spans: the timeline's scope bars in the worker {} ms ({count} bars; the whole \
         timeline answer {} ms), drawn in {draw:.1} ms; zoomed to 0.1%: {zoomed} ms",
        2 * requests,
        whole[1],
        whole[2]
    );
    assert_eq!(console_problems(browser), Vec::<String>::new());
}

/// Scopes nested `depth` deep on one thread, the outermost `0` and the innermost `depth - 1`,
/// each 1 ms shorter at both ends than the one around it.
fn nested_spans(depth: u32) -> Session {
    use prof::session::{FrameSpec, SiteKind, Span};
    let (mut b, main) = sampled_every_ms("deep");
    let f = b.intern_frame(&FrameSpec::named("work"));
    let stack = b.intern_stack_path(&[f]).unwrap();
    let mut parent = None;
    for d in 0..u64::from(depth) {
        let site = b.intern_site(&format!("level{d}"), None, None, SiteKind::Scope);
        parent = Some(b.push_span(Span {
            site,
            thread: main,
            start_ns: d * MS,
            end_ns: 40 * MS - d * MS,
            parent,
            fields: Vec::new(),
        }));
    }
    for ms in 0..40 {
        b.push_sample(stack, main, ms * MS + MS / 2, MS);
    }
    b.meta_mut().duration_ns = 40 * MS;
    b.finish()
}

#[test]
fn scopes_nested_deeper_than_the_lanes_are_said_not_shown() {
    // The timeline has four lanes a thread, the stack chart sixteen: six levels leave two
    // out of the timeline, which says so beside the thread's last lane, and none out of the
    // stack chart.
    let session = nested_spans(6);
    let shown = show_bars("scope-bars-deeper", &session, (1100, 500), "", TIMELINE);
    let browser = &shown.browser;
    assert_eq!(js(browser, &format!("{TIMELINE}.bars.lanes(0)")), json!(4));
    assert_eq!(
        js(browser, &format!("{TIMELINE}.bars.deeperText(0)")),
        json!("+2 levels not shown")
    );
    assert!(bars(browser, TIMELINE, "level3").len() == 1);
    assert!(bars(browser, TIMELINE, "level4").is_empty());
    // The text is drawn in the gutter beside the fourth lane: dark pixels where the gutter
    // is otherwise blank.
    let top = js(browser, &format!("{TIMELINE}.trackRect(0).y"))
        .as_f64()
        .unwrap();
    let lane = bars(browser, TIMELINE, "level3")[0].clone();
    let drawn = (12..120).any(|x| {
        let [r, g, b] = pixel(
            browser,
            "timeline-canvas",
            f64::from(x),
            lane.y + lane.height / 2.0,
        );
        r < 160 && g < 160 && b < 160
    });
    assert!(drawn, "no text beside the last lane (track top {top})");
    browser.screenshot("scope-bars-deeper-timeline");
    assert_eq!(console_problems(browser), Vec::<String>::new());
    drop(shown);
    let shown = show_bars(
        "scope-bars-deeper-stack-chart",
        &session,
        (1100, 500),
        "#view=stack-chart",
        STACK_CHART,
    );
    let browser = &shown.browser;
    assert_eq!(
        js(browser, &format!("{STACK_CHART}.bars.lanes(0)")),
        json!(6)
    );
    assert_eq!(
        js(browser, &format!("{STACK_CHART}.bars.deeperText(0)")),
        json!(null)
    );
    assert_eq!(bars(browser, STACK_CHART, "level5").len(), 1);
    assert_eq!(console_problems(browser), Vec::<String>::new());
}

/// The timeline's canvas rows `[top, top + 12)` (its axis's text and marks), as RGBA bytes.
fn axis_band(browser: &Browser, top: f64) -> Vec<u8> {
    let v = browser.eval(
        "const c = document.getElementById('timeline-canvas');
         return Array.from(c.getContext('2d').getImageData(0, arguments[0], c.width, 12).data);",
        json!([top]),
    );
    serde_json::from_value(v).unwrap()
}

#[test]
fn the_time_ruler_stays_in_view_when_the_timeline_scrolls_to_the_task_lanes() {
    let session = scoped_tasks();
    let shown = show_bars("scope-bars-scrolled", &session, (1300, 600), "", TIMELINE);
    let browser = &shown.browser;
    let ruler = axis_band(browser, 0.0);
    // Down to the task lanes, the last rows of the timeline.
    let scrolled = js(
        browser,
        "(() => { const s = document.querySelector('.timeline-tracks'); s.scrollTop = s.scrollHeight; return s.scrollTop; })()",
    )
    .as_f64()
    .unwrap();
    assert!(scrolled > 20.0, "the timeline does not scroll: {scrolled}");
    eventually("the ruler at the top of what is in view", || {
        axis_band(browser, scrolled) == ruler
    });
    browser.screenshot("scope-bars-scrolled-to-tasks");
    assert_eq!(console_problems(browser), Vec::<String>::new());
}

#[test]
fn a_marks_tick_passes_under_a_bars_name() {
    use prof::session::{FrameSpec, Mark, Metadata, Mode, SessionBuilder, SiteKind, Span};
    const MS: u64 = 1_000_000;
    // One `request` of 100 ms, with a `gc` mark 2 ms into it: where the bar's name is drawn.
    let mut b = SessionBuilder::new(Metadata {
        program: "marked".into(),
        duration_ns: 100 * MS,
        mode: Mode::Cpu,
        requested_interval_ns: MS,
        achieved_interval_ns: MS,
        ..Metadata::default()
    });
    let thread = b.thread(1, "main");
    let request = b.intern_site("request", None, None, SiteKind::Scope);
    let gc = b.intern_site("gc", None, None, SiteKind::Mark);
    b.push_span(Span {
        site: request,
        thread,
        start_ns: 0,
        end_ns: 100 * MS,
        parent: None,
        fields: Vec::new(),
    });
    b.push_mark(Mark {
        site: gc,
        thread,
        time_ns: 2 * MS,
        fields: Vec::new(),
    });
    let f = b.intern_frame(&FrameSpec::named("serve"));
    let s = b.intern_stack_path(&[f]).unwrap();
    for i in 0..100 {
        b.push_sample(s, thread, i * MS, MS);
    }
    let session = b.finish();
    let shown = show_bars(
        "scope-bars-mark-under-name",
        &session,
        (1300, 600),
        "",
        TIMELINE,
    );
    let browser = &shown.browser;
    browser.screenshot("scope-bars-mark-under-name");
    let graph = js(browser, &format!("{TIMELINE}.trackRect(0).width"))
        .as_f64()
        .unwrap();
    let bar = bars(browser, TIMELINE, "request")[0].clone();
    let color = pixel(
        browser,
        "timeline-canvas",
        bar.x + bar.width - 3.0,
        bar.y + 3.0,
    );
    let x = (GUTTER + 0.02 * graph).floor();
    assert!(
        x > bar.x + 3.0 + 5.0,
        "the mark is not under the name: {x}, {bar:?}"
    );
    // The mark is drawn (its head above the name)...
    let mark = [0x37, 0x47, 0x4f];
    assert_eq!(pixel(browser, "timeline-canvas", x, bar.y), mark);
    // ...and where the name is, the tick's column (within a pixel of where the time falls)
    // shows the bar's colour between the letters.
    for column in [x - 1.0, x, x + 1.0] {
        let pixels: Vec<[u8; 3]> = (3..bar.height as i64 - 1)
            .map(|dy| pixel(browser, "timeline-canvas", column, bar.y + dy as f64))
            .collect();
        assert!(
            pixels.contains(&color),
            "the tick cuts through the name at {column}: {pixels:?} (bar {color:?})"
        );
    }
    assert_eq!(console_problems(browser), Vec::<String>::new());
}
