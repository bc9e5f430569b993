//! The Diff view in a real headless Chromium, driven through chromedriver against `prof serve`:
//! `prof serve --diff BASE NEW`, the "compare with" choice, the URL state, the table against
//! `prof diff`, and the differential flame graph's colours against `prof convert --to svg
//! --diff`. Screenshots go to `tests/artifacts/diff-*`.
//!
//! A missing browser fails these tests: they never skip.

use prof::aggregate::format_percent;
use prof::session::{SampleType, Session, SessionBuilder};
use prof_e2e::page::keys::ESCAPE;
use prof_e2e::page::{console_problems, eventually, text, LOAD};
use prof_e2e::served::Served;
use prof_e2e::sessions::{self, MS};
use prof_e2e::webdriver::Browser;
use prof_e2e::{prof, TempDir};
use serde_json::{json, Value};
use std::path::{Path, PathBuf};

/// The new profile: [`sessions::two_threads`] (the base) where `hot_loop` under `main` grew
/// from 50 to 90 ms, `tokenize` shrank from 20 to 5 ms, and `fresh_fn` appeared (12 ms).
fn newer() -> Session {
    let mut b = SessionBuilder::default();
    b.meta_mut().program = "demo-app".into();
    let main = b.thread(100, "main");
    let worker = b.thread(101, "worker");
    let stacks: [(&[&str], u64, _); 8] = [
        (&["main", "compute", "hot_loop"], 90, main),
        (&["main", "compute", "cold_path"], 10, main),
        (&["main", "compute"], 5, main),
        (&["main", "parse", "tokenize"], 5, main),
        (&["main", "parse", "alloc::vec::Vec<T>::push"], 8, main),
        (&["main", "fresh_fn"], 12, main),
        (&["worker_main", "hash_block"], 30, worker),
        (&["worker_main", "compute", "hot_loop"], 7, worker),
    ];
    let mut time = 0;
    for (names, ms, thread) in stacks {
        for _ in 0..ms {
            b.push_named(names, thread, time, MS);
            time += MS;
        }
    }
    b.finish()
}

/// A profile whose weights are sample counts: not comparable with the others.
fn counts() -> Session {
    let mut b = SessionBuilder::default();
    let t = b.thread(1, "main");
    b.push_named(&["main", "work"], t, 0, 3);
    let mut session = b.finish();
    session.meta.sample_type = SampleType::samples();
    session
}

/// `base.json` (two_threads), `new.json` ([`newer`]) and `counts.json` ([`counts`]).
fn files(dir: &TempDir) -> [PathBuf; 3] {
    let paths = ["base.json", "new.json", "counts.json"].map(|n| dir.join(n));
    sessions::save(&sessions::two_threads(), &paths[0]);
    sessions::save(&newer(), &paths[1]);
    sessions::save(&counts(), &paths[2]);
    paths
}

fn hash(browser: &Browser) -> String {
    browser
        .eval("return decodeURIComponent(location.hash);", json!([]))
        .as_str()
        .unwrap()
        .to_owned()
}

/// Waits for the Diff view's table, and returns its rows: [base, new, delta, name].
fn table_rows(browser: &Browser) -> Vec<Vec<String>> {
    let mut rows = Vec::new();
    eventually("the diff table", || {
        let v = browser.eval(
            "const v = window.profViewer.views.get('diff');
             return v.element.querySelector('.diff-body').hidden ? [] : v.shownRows();",
            json!([]),
        );
        rows = serde_json::from_value(v).unwrap();
        !rows.is_empty()
    });
    rows
}

/// The frames of function `name` in the differential flame graph: index, node, rgb, x, y,
/// width, height.
fn frames_of(browser: &Browser, name: &str) -> Vec<Value> {
    let v = browser.eval(
        "return window.profViewer.views.get('diff').framesNamed(arguments[0]);",
        json!([name]),
    );
    v.as_array().cloned().unwrap_or_default()
}

fn rgb(frame: &Value) -> (u8, u8, u8) {
    let c: Vec<u8> = serde_json::from_value(frame["rgb"].clone()).unwrap();
    (c[0], c[1], c[2])
}

/// The colour drawn on the diff canvas at (`x`, `y`) CSS pixels (the browser runs at scale 1).
fn pixel(browser: &Browser, x: f64, y: f64) -> (u8, u8, u8) {
    let v = browser.eval(
        "const c = document.querySelector('.diff-flame canvas');
         const d = c.getContext('2d').getImageData(arguments[0], arguments[1], 1, 1).data;
         return [d[0], d[1], d[2]];",
        json!([x.round(), y.round()]),
    );
    let c: Vec<u8> = serde_json::from_value(v).unwrap();
    (c[0], c[1], c[2])
}

/// The fill of the frame titled `name (...` in an inferno SVG.
fn svg_fill(svg: &str, name: &str) -> (u8, u8, u8) {
    let at = svg.find(&format!("<title>{name} (")).expect(name);
    let rest = &svg[at..];
    let rgb = &rest[rest.find("fill=\"rgb(").expect("a fill") + 10..];
    let rgb = &rgb[..rgb.find(')').unwrap()];
    let v: Vec<u8> = rgb.split(',').map(|c| c.trim().parse().unwrap()).collect();
    (v[0], v[1], v[2])
}

/// `prof diff BASE NEW`'s first line and rows ([base, new, delta, name]).
fn cli_diff(base: &Path, new: &Path) -> (String, Vec<Vec<String>>) {
    let out = prof(&["diff", base.to_str().unwrap(), new.to_str().unwrap()]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    let start = lines.iter().position(|l| l.contains("FRAME")).unwrap() + 1;
    let rows = lines[start..]
        .iter()
        .map(|l| l.split_whitespace().map(str::to_owned).collect())
        .collect();
    (lines[0].to_owned(), rows)
}

#[test]
fn serve_diff_shows_prof_diffs_table_and_the_svg_colours() {
    let dir = TempDir::new("browser-diff-serve");
    let [base, new, _] = files(&dir);
    let served = Served::start(
        &[],
        &[
            "--port",
            "0",
            "--diff",
            base.to_str().unwrap(),
            new.to_str().unwrap(),
        ],
    );
    assert!(
        served.url.ends_with("#file=1&view=diff&base=0"),
        "{}",
        served.url
    );
    let browser = Browser::start("diff-serve", 1200, 700, 1.0);
    browser.goto(&served.url);
    let rows = table_rows(&browser);

    // The table is prof diff's, row for row and text for text.
    let (head, cli_rows) = cli_diff(&base, &new);
    assert_eq!(rows, cli_rows);
    assert_eq!(rows.len(), 7, "the functions with self weight: {rows:?}");
    let summary = text(&browser, ".diff-summary");
    assert_eq!(summary.lines().next(), Some(head.as_str()));
    assert!(summary.contains("new.json: 167 samples"), "{summary}");
    let grew = rows.iter().find(|r| r[3] == "hot_loop").unwrap();
    assert!(grew[2].starts_with('+'), "{grew:?}");

    // Each frame's fill is the SVG's, and drawn; its colour follows the sign of the change.
    let svg_path = dir.join("diff.svg");
    let out = prof(&[
        "convert",
        new.to_str().unwrap(),
        "--to",
        "svg",
        "--diff",
        base.to_str().unwrap(),
        "-o",
        svg_path.to_str().unwrap(),
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let svg = std::fs::read_to_string(&svg_path).unwrap();
    eventually("the differential flame graph", || {
        !frames_of(&browser, "fresh_fn").is_empty()
    });
    for name in [
        "main",
        "fresh_fn",
        "tokenize",
        "cold_path",
        "hash_block",
        "parse",
    ] {
        let frames = frames_of(&browser, name);
        assert_eq!(frames.len(), 1, "{name}: {frames:?}");
        let f = &frames[0];
        assert_eq!(rgb(f), svg_fill(&svg, name), "{name}");
        let (x, y) = (f["x"].as_f64().unwrap(), f["y"].as_f64().unwrap());
        assert_eq!(pixel(&browser, x + 1.0, y + 1.0), rgb(f), "{name} as drawn");
    }
    let is_red = |(r, g, b): (u8, u8, u8)| r == 255 && g < 250 && g == b;
    let is_blue = |(r, g, b): (u8, u8, u8)| b == 255 && r < 250 && r == g;
    assert!(is_red(rgb(&frames_of(&browser, "fresh_fn")[0])));
    assert!(is_blue(rgb(&frames_of(&browser, "tokenize")[0])));
    assert_eq!(
        rgb(&frames_of(&browser, "main")[0]),
        (250, 250, 250),
        "no self weight"
    );
    let hot = frames_of(&browser, "hot_loop");
    assert_eq!(hot.len(), 2);
    // Under main it grew from 50 of 130 ms to 90 of 167; under worker_main 7 ms is a smaller
    // share of a larger total.
    let widest = hot
        .iter()
        .max_by(|a, b| {
            a["width"]
                .as_f64()
                .partial_cmp(&b["width"].as_f64())
                .unwrap()
        })
        .unwrap();
    let other = hot.iter().find(|f| f["index"] != widest["index"]).unwrap();
    assert!(is_red(rgb(widest)), "{widest}");
    assert!(is_blue(rgb(other)), "{other}");

    // The tooltip: base, new and the change of the frame's total and self.
    let f = widest;
    let canvas = browser.find(".diff-flame canvas");
    browser.pointer_at(
        &canvas,
        f["x"].as_f64().unwrap() + f["width"].as_f64().unwrap() / 2.0,
        f["y"].as_f64().unwrap() + 5.0,
        false,
    );
    let mut tip = String::new();
    eventually("the tooltip", || {
        tip = text(&browser, "#tooltip");
        tip.contains("Change")
    });
    for expected in [
        "hot_loop".to_owned(),
        format!("Basetotal 50.0 ms{}", format_percent(50, 130)),
        format!("Newtotal 90.0 ms{}", format_percent(90, 167)),
        "Changetotal +40.0 ms+15.4%".to_owned(),
    ] {
        assert!(
            tip.replace('\n', "").contains(&expected),
            "{expected:?} in {tip:?}"
        );
    }
    browser.screenshot("diff-serve");

    // Total weights: the table of `prof diff --sort total`.
    browser.eval(
        "const s = document.querySelector('.diff-by');
         s.value = 'total';
         s.dispatchEvent(new Event('change'));",
        json!([]),
    );
    let out = prof(&[
        "diff",
        base.to_str().unwrap(),
        new.to_str().unwrap(),
        "--sort",
        "total",
    ]);
    let cli_total: Vec<Vec<String>> = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .skip_while(|l| !l.contains("FRAME"))
        .skip(1)
        .map(|l| l.split_whitespace().map(str::to_owned).collect())
        .collect();
    eventually("the table of total weights", || {
        table_rows(&browser) == cli_total
    });

    // The search highlights the matching frames (and only those) here too.
    browser.eval(
        "window.profViewer.state.update({search: 'fresh'});",
        json!([]),
    );
    eventually("fresh_fn highlighted", || {
        let v = browser.eval(
            "const l = window.profViewer.views.get('diff').layout;
             return [...l.highlight].map((h, i) => h ? l.names[l.func[i]] : null).filter(n => n);",
            json!([]),
        );
        v == json!(["fresh_fn"])
    });
    browser.screenshot("diff-search");
    browser.eval("window.profViewer.state.update({search: ''});", json!([]));

    // Sorting: by name, then the other way.
    browser.click(&browser.find(".diff-table button[data-sort=name]"));
    eventually("rows by name", || {
        let names: Vec<String> = table_rows(&browser)
            .into_iter()
            .map(|r| r[3].clone())
            .collect();
        let mut sorted = names.clone();
        sorted.sort();
        names == sorted
    });
    browser.click(&browser.find(".diff-table button[data-sort=name]"));
    eventually("rows by name, descending", || {
        let names: Vec<String> = table_rows(&browser)
            .into_iter()
            .map(|r| r[3].clone())
            .collect();
        let mut sorted = names.clone();
        sorted.sort();
        sorted.reverse();
        names == sorted
    });
    assert_eq!(console_problems(&browser), Vec::<String>::new());
}

#[test]
fn compare_with_is_kept_in_the_url_and_refuses_other_units() {
    let dir = TempDir::new("browser-diff-choose");
    let [base, new, counts] = files(&dir);
    let served = Served::start(&[&new, &base, &counts], &["--port", "0"]);
    let browser = Browser::start("diff-choose", 1200, 700, 1.0);
    browser.goto(&served.url);
    browser.wait_for(
        "document.body.dataset.state === 'ready'",
        LOAD,
        "the page to load",
    );
    browser.click(&browser.find("#tabs button[data-view=diff]"));
    eventually("the hint to choose", || {
        text(&browser, ".diff-message").starts_with("Choose a profile")
    });

    // Compare with base.json (file 1): the table is prof diff's.
    let choose = |index: &str| {
        browser.eval(
            "const s = document.querySelector('.diff-base');
             s.value = arguments[0];
             s.dispatchEvent(new Event('change'));",
            json!([index]),
        );
    };
    choose("1");
    let rows = table_rows(&browser);
    assert_eq!(rows, cli_diff(&base, &new).1);
    assert!(hash(&browser).contains("base=1"), "{}", hash(&browser));

    // Zoom into `compute` under main: the zoom is in the URL too.
    let compute = frames_of(&browser, "compute");
    let main_compute = compute
        .iter()
        .max_by(|a, b| {
            a["width"]
                .as_f64()
                .partial_cmp(&b["width"].as_f64())
                .unwrap()
        })
        .unwrap();
    let canvas = browser.find(".diff-flame canvas");
    browser.pointer_at(
        &canvas,
        main_compute["x"].as_f64().unwrap() + 4.0,
        main_compute["y"].as_f64().unwrap() + 5.0,
        true,
    );
    eventually("the zoom in the URL", || {
        hash(&browser).contains("dzoom=main\u{1f}compute")
    });
    eventually("the zoomed graph", || {
        frames_of(&browser, "fresh_fn").is_empty()
    });

    // A reload, and the same URL in a fresh page, restore the comparison and the zoom.
    let url = browser
        .eval("return location.href;", json!([]))
        .as_str()
        .unwrap()
        .to_owned();
    browser.eval("location.reload();", json!([]));
    browser.wait_for(
        "document.body.dataset.state === 'ready'",
        LOAD,
        "the reload",
    );
    assert_eq!(table_rows(&browser), rows);
    eventually("the zoom restored", || {
        !frames_of(&browser, "cold_path").is_empty() && frames_of(&browser, "fresh_fn").is_empty()
    });
    let other = Browser::start("diff-choose-copy", 1000, 600, 1.0);
    other.goto(&url);
    assert_eq!(table_rows(&other), rows);
    assert_eq!(
        other.eval(
            "return document.querySelector('.diff-base').value;",
            json!([])
        ),
        json!("1")
    );
    drop(other);

    // Back, to before the zoom and the choice; forward again.
    browser.eval("history.back();", json!([]));
    eventually("the zoom gone", || !hash(&browser).contains("dzoom"));
    eventually("the whole graph", || {
        !frames_of(&browser, "fresh_fn").is_empty()
    });
    browser.eval("history.back();", json!([]));
    eventually("the choice gone", || {
        !hash(&browser).contains("base=") && text(&browser, ".diff-message").starts_with("Choose")
    });
    browser.eval("history.forward();", json!([]));
    assert_eq!(table_rows(&browser), rows);
    browser.screenshot("diff-choose");

    // The state's keys format back to the same fragment; a malformed base is no comparison.
    for fragment in ["#view=diff&base=0&dzoom=main%1Fcompute", "#file=2&base=1"] {
        let round = browser.eval(
            "return import('./state.js').then(m => m.format(m.parse(arguments[0])));",
            json!([fragment]),
        );
        assert_eq!(round, json!(fragment));
    }
    let parsed = browser.eval(
        "return import('./state.js').then(m => m.parse('#base=x&dzoom=').base);",
        json!([]),
    );
    assert_eq!(parsed, Value::Null);

    // A profile in other units is refused in one line, and nothing is drawn.
    choose("2");
    let expected = "new.json measures cpu (nanoseconds) but counts.json measures samples \
                    (count): a diff needs both in one unit";
    eventually("the refusal", || {
        text(&browser, ".diff-message") == expected
    });
    assert_eq!(
        browser.eval(
            "return getComputedStyle(document.querySelector('.diff-body')).display;",
            json!([])
        ),
        json!("none"),
        "neither the flame graph nor the table of the comparison before is shown"
    );
    assert_eq!(
        text(&browser, "#progress"),
        "",
        "no progress line is left behind"
    );
    browser.screenshot("diff-refused");

    // The file compared with itself: nothing changed.
    choose("0");
    let rows = table_rows(&browser);
    assert!(rows.iter().all(|r| r[2] == "0.0%"), "{rows:?}");

    // Escape zooms the Diff view's graph out.
    eventually("the graph of the file itself", || {
        !frames_of(&browser, "fresh_fn").is_empty()
    });
    let parse = frames_of(&browser, "parse");
    browser.pointer_at(
        &browser.find(".diff-flame canvas"),
        parse[0]["x"].as_f64().unwrap() + 4.0,
        parse[0]["y"].as_f64().unwrap() + 5.0,
        true,
    );
    eventually("the zoom into parse", || {
        hash(&browser).contains("dzoom=main\u{1f}parse")
    });
    browser.press_key(ESCAPE);
    eventually("Escape to clear the zoom", || {
        !hash(&browser).contains("dzoom")
    });
    assert_eq!(console_problems(&browser), Vec::<String>::new());
}

/// A regression test: `prof serve --diff` with a file that does not exist says so in one line and
/// exits non-zero, before serving anything.
#[test]
fn serve_diff_with_a_missing_file_fails_in_one_line() {
    let dir = TempDir::new("browser-diff-missing");
    let [base, ..] = files(&dir);
    let missing = dir.join("missing.json");
    for args in [
        [base.to_str().unwrap(), missing.to_str().unwrap()],
        [missing.to_str().unwrap(), base.to_str().unwrap()],
    ] {
        let out = prof(&[
            "serve",
            "--no-open",
            "--port",
            "0",
            "--diff",
            args[0],
            args[1],
        ]);
        assert!(!out.status.success());
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(stderr.lines().count(), 1, "{stderr}");
        assert!(stderr.contains("missing.json"), "{stderr}");
        assert!(
            out.stdout.is_empty(),
            "{}",
            String::from_utf8_lossy(&out.stdout)
        );
    }
    // Only one file after --diff is a usage error, not a diff of one.
    let out = prof(&["serve", "--no-open", "--diff", base.to_str().unwrap()]);
    assert!(!out.status.success());
}

#[test]
fn the_diff_view_fits_at_800_by_600() {
    let dir = TempDir::new("browser-diff-small");
    let [base, new, _] = files(&dir);
    let (base, new) = (base.to_str().unwrap(), new.to_str().unwrap());
    let served = Served::start(&[], &["--port", "0", "--diff", base, new]);
    let browser = Browser::start("diff-small", 800, 600, 1.0);
    browser.goto(&served.url);
    table_rows(&browser);
    let clipped = browser.eval(
        "const out = [];
         for (const el of document.querySelectorAll('#tabs *, section[data-view=diff] .view-bar *')) {
           if (el.offsetParent === null) continue;
           const r = el.getBoundingClientRect();
           if (r.width === 0) continue;
           if (r.left < 0 || r.right > window.innerWidth + 0.5) out.push(el.tagName + ' ' + r.left + '-' + r.right);
         }
         return out;",
        json!([]),
    );
    assert_eq!(clipped, json!([]), "controls outside the window");
    let flame = browser.eval(
        "const r = document.querySelector('.diff-flame').getBoundingClientRect(); return [r.width, r.height];",
        json!([]),
    );
    assert!(flame[0].as_f64().unwrap() > 300.0, "{flame}");
    assert!(flame[1].as_f64().unwrap() > 150.0, "{flame}");
    browser.screenshot("diff-800x600");
}

#[test]
fn the_diff_flame_graph_zooms_with_the_wheel_pans_with_a_drag_and_orders_left_heavy() {
    let dir = TempDir::new("browser-diff-navigation");
    let [base, new, _] = files(&dir);
    let served = Served::start(
        &[],
        &[
            "--port",
            "0",
            "--diff",
            base.to_str().unwrap(),
            new.to_str().unwrap(),
        ],
    );
    let browser = Browser::start("diff-navigation", 1200, 700, 1.0);
    browser.goto(&served.url);
    table_rows(&browser);
    let first = |name: &str| -> Value {
        let mut frame = Value::Null;
        eventually(&format!("a frame of {name}"), || {
            frame = frames_of(&browser, name)
                .into_iter()
                .find(|f| f["y"].as_f64().is_some())
                .unwrap_or(Value::Null);
            !frame.is_null()
        });
        frame
    };
    let x = |f: &Value| f["x"].as_f64().unwrap();
    // Under main;compute, by name: cold_path (10 ms) before hot_loop (90 ms); left heavy turns
    // that around, and the order is the flame graph view's (`heavy=1`).
    assert!(x(&first("cold_path")) < x(&first("hot_loop")));
    browser.click(&browser.find(".diff-left-heavy"));
    eventually("left heavy in the URL", || {
        hash(&browser).contains("heavy=1")
    });
    eventually("hot_loop left of cold_path", || {
        x(&first("hot_loop")) < x(&first("cold_path"))
    });
    browser.screenshot("diff-left-heavy");

    // The wheel zooms around the pointer, kept in the URL as `dwin`.
    let canvas = browser.find(".diff-flame canvas");
    let hot = first("fresh_fn");
    let before = hot["width"].as_f64().unwrap();
    let (hx, hy) = (x(&hot) + before / 2.0, hot["y"].as_f64().unwrap() + 5.0);
    browser.wheel_at(&canvas, hx, hy, -400);
    eventually("the wheel zoom in the URL", || {
        hash(&browser).contains("dwin=")
    });
    eventually("fresh_fn to grow", || {
        first("fresh_fn")["width"].as_f64().unwrap() > before * 1.5
    });
    let zoomed = first("fresh_fn");
    let centre = x(&zoomed) + zoomed["width"].as_f64().unwrap() / 2.0;
    assert!((centre - hx).abs() < 0.2 * before, "{centre} vs {hx}");
    browser.screenshot("diff-wheel-zoom");

    // A drag right moves the graph right, and zooms nothing.
    let window_before = hash(&browser);
    let x0 = x(&zoomed);
    browser.drag(&canvas, (hx, hy), (hx + 150.0, hy), 8);
    eventually("the pan", || x(&first("fresh_fn")) > x0 + 75.0);
    assert_ne!(hash(&browser), window_before);
    assert!(!hash(&browser).contains("dzoom="), "{}", hash(&browser));

    // Escape resets the window first, then nothing else is left to clear here.
    browser.press_key(ESCAPE);
    eventually("Escape to reset the wheel zoom", || {
        !hash(&browser).contains("dwin=")
    });
    eventually("fresh_fn back to its width", || {
        (first("fresh_fn")["width"].as_f64().unwrap() - before).abs() < 1.0
    });
    assert_eq!(console_problems(&browser), Vec::<String>::new());
}

/// A profile of two functions whose names differ only at the end, as `prof`'s own
/// `collatz_len` and `collatz_for` do; `scale` multiplies the first one's weight.
fn collatz(scale: u64) -> Session {
    let mut b = SessionBuilder::default();
    let t = b.thread(1, "main");
    let long = "prof::cli::workload::deeply::nested::module::path::collatz";
    b.push_named(&["main", &format!("{long}_len")], t, 0, 10 * scale * MS);
    b.push_named(&["main", &format!("{long}_for")], t, 1, 10 * MS);
    b.finish()
}

#[test]
fn the_diff_table_cuts_long_names_in_the_middle_and_shows_them_whole_on_hover() {
    let dir = TempDir::new("browser-diff-names");
    let (base, new) = (dir.join("base.json"), dir.join("new.json"));
    sessions::save(&collatz(1), &base);
    sessions::save(&collatz(3), &new);
    let served = Served::start(&[&new, &base], &["--port", "0"]);
    for (width, height) in [(800, 600), (1280, 800)] {
        let browser = Browser::start(&format!("diff-names-{width}"), width, height, 1.0);
        browser.goto(&format!("{}#view=diff&base=1", served.url));
        table_rows(&browser);
        let cells = browser.eval(
            "return [...document.querySelectorAll('.diff-table td.name')].map(td =>
               ({ shown: td.textContent, title: td.title, fits: td.scrollWidth <= td.clientWidth }));",
            json!([]),
        );
        let cells = cells.as_array().unwrap();
        let find = |suffix: &str| {
            cells
                .iter()
                .find(|c| c["title"].as_str().unwrap().ends_with(suffix))
                .unwrap_or_else(|| panic!("no row for {suffix}: {cells:?}"))
                .clone()
        };
        let (len, r#for) = (find("collatz_len"), find("collatz_for"));
        for cell in [&len, &r#for] {
            let shown = cell["shown"].as_str().unwrap();
            let title = cell["title"].as_str().unwrap();
            assert!(title.starts_with("prof::cli::workload::"), "{cell}");
            assert_eq!(cell["fits"], json!(true), "{cell}");
            // Cut in the middle at this width: the start and the function both stay.
            assert!(
                shown.contains('…') && shown.starts_with("prof::"),
                "at {width}x{height}: {cell}"
            );
            assert!(shown.ends_with(&title[title.len() - 4..]), "{cell}");
        }
        assert_ne!(len["shown"], r#for["shown"], "the two names read the same");
        browser.screenshot(&format!("r20-diff-names-{width}x{height}"));
    }
}
