//! The transform stack in a real headless Chromium: transforms applied through the page (the
//! flame graph's context menu, the regex form) give the top table `prof report` prints with the
//! same options; chips remove them; the URL round-trips them. Screenshots under
//! `tests/artifacts/`.

use prof_e2e::page::{
    choose_file, console_problems, eventually, open, report_rows, report_total, show,
    top_table_rows, LOAD,
};
use prof_e2e::served::Served;
use prof_e2e::sessions;
use prof_e2e::webdriver::Browser;
use prof_e2e::TempDir;
use serde_json::{json, Value};
use std::path::Path;
use std::time::{Duration, Instant};

/// Waits until the page's table equals what `prof report ARGS` prints.
fn table_matches_report(browser: &Browser, file: &Path, args: &[&str]) {
    let expected = report_rows(file, &[&["--top", "50"], args].concat());
    assert!(!expected.is_empty(), "{args:?}");
    let start = Instant::now();
    loop {
        let shown = top_table_rows(browser, 50);
        if shown == expected {
            return;
        }
        assert!(
            start.elapsed() < LOAD,
            "the table never matched `prof report {args:?}`:\n shown {shown:?}\n report {expected:?}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// The chips' texts, and whether each is marked as not applied.
fn chips(browser: &Browser) -> Vec<(String, bool)> {
    let v = browser.eval(
        "return [...document.querySelectorAll('#transforms ol[aria-label=Transforms] .chip')].map(c =>
           [c.querySelector('.text').textContent, c.classList.contains('invalid')]);",
        json!([]),
    );
    serde_json::from_value(v).unwrap()
}

fn transforms_state(browser: &Browser) -> Value {
    browser.eval(
        "return window.profViewer.state.current.transforms;",
        json!([]),
    )
}

/// Right-clicks the first drawn frame of `name` and picks the menu item starting with `item`.
fn menu_on(browser: &Browser, name: &str, item: &str) {
    let mut frame = Value::Null;
    eventually(&format!("a frame of {name}"), || {
        frame = browser.eval(
            "return window.profViewer.framesNamed(arguments[0])[0] ?? null;",
            json!([name]),
        );
        !frame.is_null()
    });
    let canvas = browser.find("#flame-canvas");
    let x = frame["x"].as_f64().unwrap() + frame["width"].as_f64().unwrap() / 2.0;
    let y = frame["y"].as_f64().unwrap() + frame["height"].as_f64().unwrap() / 2.0;
    browser.right_click_at(&canvas, x, y);
    browser.wait_for(
        "!document.querySelector('.transform-menu').hidden",
        LOAD,
        "the transform menu",
    );
    browser.screenshot(&format!("transforms-menu-{name}"));
    let title = browser.eval(
        "return document.querySelector('.transform-menu .title').textContent;",
        json!([]),
    );
    assert_eq!(title, json!(name));
    let clicked = browser.eval(
        "const b = [...document.querySelectorAll('.transform-menu button')]
           .find(b => b.textContent.startsWith(arguments[0]));
         if (!b) return [...document.querySelectorAll('.transform-menu button')].map(b => b.textContent);
         b.click(); return true;",
        json!([item]),
    );
    assert_eq!(clicked, json!(true), "no menu item {item:?}");
}

/// Adds a regex transform through the bar's form; returns the form's error text.
fn add_regex(browser: &Browser, kind: &str, pattern: &str) -> String {
    browser.eval(
        "const f = document.querySelector('#transforms form');
         f.querySelector('select').value = arguments[0];",
        json!([kind]),
    );
    let input = browser.find("#transforms form input");
    browser.eval(
        "document.querySelector('#transforms form input').value = '';",
        json!([]),
    );
    browser.type_into(&input, pattern);
    browser.click(&browser.find("#transforms form button"));
    std::thread::sleep(Duration::from_millis(100));
    browser
        .eval(
            "return document.querySelector('#transforms .transform-error').textContent;",
            json!([]),
        )
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

/// Clicks the × of chip `index`.
fn remove_chip(browser: &Browser, index: usize) {
    let button = browser.find(&format!(
        "#transforms ol[aria-label=Transforms] .chip:nth-child({}) button",
        index + 1
    ));
    browser.click(&button);
}

fn clear_transforms(browser: &Browser) {
    browser.eval(
        "window.profViewer.state.update({ transforms: [] });",
        json!([]),
    );
    eventually("no chips", || chips(browser).is_empty());
}

#[test]
fn transforms_from_the_page_give_the_numbers_prof_report_prints() {
    let shown = show(
        "transforms",
        &sessions::transforms(),
        "t.json",
        (1280, 800),
        "",
    );
    let browser = &shown.browser;
    let file = &shown.file;
    table_matches_report(browser, file, &[]);
    assert!(chips(browser).is_empty());

    // Drop, from the flame graph's context menu.
    menu_on(browser, "eval", "Drop samples");
    table_matches_report(browser, file, &["--drop", "eval"]);
    assert_eq!(chips(browser), [("Drop: eval".to_owned(), false)]);
    browser.screenshot("transforms-01-drop");

    // Hide, from the regex form: the stack applies in order, like the command line's options.
    assert_eq!(add_regex(browser, "hide", "^parse$"), "");
    table_matches_report(browser, file, &["--drop", "eval", "--hide", "^parse$"]);
    assert_eq!(
        chips(browser),
        [
            ("Drop: eval".to_owned(), false),
            ("Hide /^parse$/".to_owned(), false)
        ]
    );

    // A bad regex is refused with the core's message; the stack is unchanged.
    let error = add_regex(browser, "focus", "(");
    assert!(error.contains("invalid regex"), "{error}");
    assert_eq!(chips(browser).len(), 2);
    browser.screenshot("transforms-02-bad-regex");

    // The URL holds the stack: a fresh load of it shows the same chips and numbers.
    let url: String =
        serde_json::from_value(browser.eval("return location.href;", json!([]))).unwrap();
    assert!(url.contains("transforms="), "{url}");
    let before = transforms_state(browser);
    browser.goto("about:blank");
    open(browser, &url);
    assert_eq!(transforms_state(browser), before);
    table_matches_report(browser, file, &["--drop", "eval", "--hide", "^parse$"]);
    eventually("the chips after reload", || chips(browser).len() == 2);

    // The × removes just its chip.
    remove_chip(browser, 0);
    table_matches_report(browser, file, &["--hide", "^parse$"]);
    assert_eq!(chips(browser), [("Hide /^parse$/".to_owned(), false)]);

    // Collapse a library into one frame, from the menu of one of its frames.
    menu_on(browser, "malloc", "Collapse module");
    table_matches_report(
        browser,
        file,
        &["--hide", "^parse$", "--collapse-module", "/lib/libc.so.6"],
    );
    browser.screenshot("transforms-03-collapse-module");

    // Collapse recursion, then focus on a function.
    clear_transforms(browser);
    menu_on(browser, "eval", "Collapse recursion");
    table_matches_report(browser, file, &["--collapse-recursion"]);
    menu_on(browser, "eval", "Focus on function");
    table_matches_report(
        browser,
        file,
        &["--collapse-recursion", "--focus-function", "eval"],
    );

    // Merge, and pprof's regex focus and ignore.
    clear_transforms(browser);
    menu_on(browser, "parse", "Merge");
    table_matches_report(browser, file, &["--merge", "parse"]);
    clear_transforms(browser);
    assert_eq!(add_regex(browser, "focus", "^lex$"), "");
    table_matches_report(browser, file, &["--focus", "^lex$"]);
    assert_eq!(add_regex(browser, "ignore", "^malloc$"), "");
    table_matches_report(browser, file, &["--focus", "^lex$", "--ignore", "^malloc$"]);
    browser.screenshot("transforms-04-focus-ignore");

    // Focus on a subtree: only that call path's samples, rooted at its last function. This
    // time through the flame bar's button, for the zoomed frame (no pointer needed).
    clear_transforms(browser);
    let button = "document.getElementById('transform-frame')";
    assert_eq!(
        browser.eval(&format!("return {button}.disabled;"), json!([])),
        json!(true)
    );
    browser.eval("window.profViewer.zoomTo(['main', 'parse']);", json!([]));
    browser.wait_for(&format!("!{button}.disabled"), LOAD, "the Transform button");
    // The zoomed frame's dimmed ancestors have the menu too: `main` is drawn just below
    // `parse`.
    let mut parse = Value::Null;
    eventually("the zoomed frame", || {
        parse = browser.eval(
            "return window.profViewer.framesNamed('parse')[0] ?? null;",
            json!([]),
        );
        !parse.is_null()
    });
    let (x, y, h) = ["x", "y", "height"]
        .map(|k| parse[k].as_f64().unwrap())
        .into();
    browser.right_click_at(&browser.find("#flame-canvas"), x + 5.0, y + h * 1.5);
    browser.wait_for(
        "!document.querySelector('.transform-menu').hidden",
        LOAD,
        "the transform menu",
    );
    let title = browser.eval(
        "return document.querySelector('.transform-menu .title').textContent;",
        json!([]),
    );
    assert_eq!(title, json!("main"));
    // The menu has the keyboard's focus; Escape closes it and leaves the zoom alone.
    browser.press_key("\u{E00C}");
    browser.wait_for(
        "document.querySelector('.transform-menu').hidden",
        LOAD,
        "the menu to close",
    );
    assert_eq!(
        browser.eval("return window.profViewer.state.current.zoom;", json!([])),
        json!(["main", "parse"])
    );
    browser.click(&browser.find("#transform-frame"));
    // The keyboard picks "Focus on subtree", the fifth item (after the three copies and
    // "Focus on function"): down four times, then Enter.
    browser.wait_for(
        "document.activeElement?.closest('.transform-menu')",
        LOAD,
        "the menu to take the focus",
    );
    for _ in 0..4 {
        browser.press_key("\u{E015}");
    }
    let focused = browser.eval("return document.activeElement.textContent;", json!([]));
    assert_eq!(focused, json!("Focus on subtree"));
    browser.press_key("\u{E007}");
    eventually("the subtree's rows", || {
        let names: Vec<String> = top_table_rows(browser, 50)
            .into_iter()
            .map(|r| r.name)
            .collect();
        names == ["lex", "parse"]
    });
    assert_eq!(
        transforms_state(browser),
        json!([{"kind": "focus-subtree", "path": ["main", "parse"]}])
    );
}

#[test]
fn a_url_with_threads_range_and_transforms_matches_prof_report() {
    let dir = TempDir::new("browser-transforms-url");
    let file = dir.join("t.json");
    sessions::save(&sessions::transforms(), &file);
    let served = Served::start(&[&file], &["--port", "0"]);
    let browser = Browser::start("transforms-url", 1280, 800, 1.0);
    let base = served.url.split('#').next().unwrap().to_owned();
    // Threads 0 and 1, 100 ms to 350 ms, collapse recursion and hide ^add$; a function this
    // profile lacks is shown as a chip that is not applied, not as a failure.
    let hash = "#threads=0%2C1&range=100000000-350000000\
                &transforms=collapse-recursion%1Ehide%1F%5Eadd%24%1Emerge%1Fnope";
    open(&browser, &format!("{base}{hash}"));
    table_matches_report(
        &browser,
        &file,
        &[
            "--thread",
            "main",
            "--thread",
            "worker",
            "--from",
            "0.1",
            "--to",
            "0.35",
            "--collapse-recursion",
            "--hide",
            "^add$",
        ],
    );
    eventually("three chips", || chips(&browser).len() == 3);
    assert_eq!(
        chips(&browser),
        [
            ("Collapse recursion".to_owned(), false),
            ("Hide /^add$/".to_owned(), false),
            ("Merge: nope".to_owned(), true),
        ]
    );
    let title = browser.eval(
        "return document.querySelector('#transforms .chip.invalid').title;",
        json!([]),
    );
    assert_eq!(
        title,
        json!("not applied: no function named \"nope\" in the profile")
    );
    // The state formats back to the same fragment.
    let round = browser.eval(
        "return import('./state.js').then(m => m.format(m.parse(arguments[0])));",
        json!([hash]),
    );
    assert_eq!(round, json!(hash));
    browser.screenshot("transforms-05-url");
}

/// The timeline's tracks: each thread's label, the weight it shows (the label's tooltip) and
/// the summed bar heights of its buckets over `[from_ms, to_ms)`.
fn timeline_tracks(browser: &Browser, from_ms: u64, to_ms: u64) -> Vec<(String, String, f64)> {
    let v = browser.eval(
        "const d = window.profViewer.timeline.data;
         if (!d) return [];
         const [from, to] = [arguments[0] * 1e6, arguments[1] * 1e6];
         return Array.from(d.threads, (_, t) => {
           let sum = 0;
           for (let b = 0; b < d.buckets; b++) {
             const start = d.from + (b * (d.to - d.from)) / d.buckets;
             if (start >= from && start < to) sum += d.height[t * d.buckets + b];
           }
           return [d.labels[t], d.totals[t], sum];
         });",
        json!([from_ms, to_ms]),
    );
    serde_json::from_value(v).unwrap()
}

#[test]
fn the_timeline_follows_the_transforms_and_says_what_prof_report_totals() {
    let dir = TempDir::new("browser-transforms-timeline");
    let file = dir.join("t.json");
    sessions::save(&sessions::transforms(), &file);
    let served = Served::start(&[&file], &["--port", "0"]);
    let browser = Browser::start("transforms-timeline", 1280, 800, 1.0);
    let base = served.url.split('#').next().unwrap().to_owned();
    // Untransformed: each track's weight is `prof report --thread`'s total, and main's eval
    // samples (200 ms to 204 ms) are drawn.
    open(&browser, &base);
    let main = report_total(&file, &["--thread", "main"]);
    let worker = report_total(&file, &["--thread", "worker"]);
    let untransformed = |browser: &Browser| {
        let tracks = timeline_tracks(browser, 200, 204);
        tracks.len() == 2 && tracks[0].1 == main && tracks[1].1 == worker && tracks[0].2 > 0.0
    };
    eventually("the untransformed timeline", || untransformed(&browser));
    // Dropping eval (from the URL) leaves its samples out of the timeline and out of main's
    // total, as `prof report --drop eval` does.
    browser.goto(&format!("{base}#transforms=drop%1Feval"));
    let dropped = report_total(&file, &["--thread", "main", "--drop", "eval"]);
    let worker_dropped = report_total(&file, &["--thread", "worker", "--drop", "eval"]);
    assert_ne!(dropped, main);
    eventually("the timeline without eval", || {
        let tracks = timeline_tracks(&browser, 200, 204);
        tracks.len() == 2
            && tracks[0].1 == dropped
            && tracks[1].1 == worker_dropped
            && tracks[0].2 == 0.0
    });
    // The label's tooltip says it.
    let tooltip = browser.eval(
        "const c = window.profViewer.timeline.canvas, r = c.getBoundingClientRect();
         c.dispatchEvent(new PointerEvent('pointermove', { clientX: r.left + 20, clientY: r.top + 16 + 12, bubbles: true }));
         return document.querySelector('#tooltip').textContent;",
        json!([]),
    );
    assert!(
        tooltip.as_str().unwrap_or_default().contains(&dropped),
        "{tooltip}"
    );
    browser.screenshot("transforms-timeline-drop-eval");
    // Removing the transform brings the samples back.
    browser.eval(
        "window.profViewer.state.update({ transforms: [] });",
        json!([]),
    );
    eventually("the timeline with eval again", || untransformed(&browser));
}

#[test]
fn a_wall_session_starts_with_the_scheduler_folded_as_prof_report_prints_it() {
    let shown = show(
        "transforms-wall",
        &sessions::wall_blocked(),
        "wall.json",
        (1280, 800),
        "",
    );
    let browser = &shown.browser;
    let file = &shown.file;
    // The page starts with the core's default transform, and its table is `prof report`'s
    // default: the blocking calls, not the kernel's `schedule`.
    let folded = "Scheduler folded into the blocking call".to_owned();
    eventually("the default chip", || {
        chips(browser) == [(folded.clone(), false)]
    });
    table_matches_report(browser, file, &[]);
    let top = top_table_rows(browser, 1);
    assert_eq!(top[0].name, "read", "{top:?}");
    assert_eq!(
        transforms_state(browser),
        json!([{ "kind": "fold-scheduler" }])
    );
    browser.screenshot("transforms-wall-01-folded");
    // Removed, the table is the one `--scheduler-frames` prints, and stays so on reload.
    remove_chip(browser, 0);
    table_matches_report(browser, file, &["--scheduler-frames"]);
    assert_eq!(top_table_rows(browser, 1)[0].name, "schedule");
    let url: String =
        serde_json::from_value(browser.eval("return location.href;", json!([]))).unwrap();
    assert!(url.contains("defaults=0"), "{url}");
    browser.goto("about:blank");
    open(browser, &url);
    table_matches_report(browser, file, &["--scheduler-frames"]);
    assert!(chips(browser).is_empty());
    // A URL that names its transforms gets those alone.
    let named = url.replace("defaults=0", "transforms=hide%1F%5Eserve%24");
    browser.goto("about:blank");
    open(browser, &named);
    table_matches_report(browser, file, &["--scheduler-frames", "--hide", "^serve$"]);
}

/// The filter chips' texts, as the bar under the toolbar shows them.
fn filter_chips(browser: &Browser) -> Vec<String> {
    let v = browser.eval(
        "return [...document.querySelectorAll('#transforms .filter-chips .chip')]
           .filter(c => c.offsetParent !== null).map(c => c.querySelector('.text').textContent);",
        json!([]),
    );
    serde_json::from_value(v).unwrap()
}

/// The Threads summary.
fn threads_summary(browser: &Browser) -> String {
    prof_e2e::page::text(browser, "#threads summary")
}

/// The Threads list's entries, one per thread.
fn thread_entries(browser: &Browser) -> Vec<String> {
    let v = browser.eval(
        "return [...document.querySelectorAll('#threads .thread-list label')].map(l => l.textContent.trim());",
        json!([]),
    );
    serde_json::from_value(v).unwrap()
}

/// Every filter in force shows as a removable chip on every tab (a scope and a task chosen on
/// the Scopes tab narrow the flame graph too), and the Threads summary and each thread's entry
/// count the samples left after all filters and transforms, as every view shows them.
#[test]
fn every_filter_shows_as_a_chip_on_every_tab_and_the_summary_counts_after_all() {
    let scoped = show(
        "transforms-filter-chips",
        &sessions::scoped_tasks(),
        "scoped.json",
        (1280, 800),
        "#scope=parse&task=store",
    );
    let browser = &scoped.browser;
    let both = ["Only inside scope parse", "Only task store"];
    for tab in [
        "flame",
        "calltree",
        "sandwich",
        "table",
        "scopes",
        "stack-chart",
        "source",
    ] {
        browser.click(&browser.find(&format!("#tabs button[data-view={tab}]")));
        eventually(&format!("the chips on the {tab} tab"), || {
            filter_chips(browser) == both
        });
    }
    browser.click(&browser.find("#tabs button[data-view=flame]"));
    browser.screenshot("transforms-filter-chips");
    browser.click(&browser.find("#transforms .filter-chips [data-filter=scope] button"));
    eventually("the scope filter removed", || {
        filter_chips(browser) == ["Only task store"]
    });
    assert_eq!(
        browser.eval("return window.profViewer.state.current.scope;", json!([])),
        Value::Null
    );
    drop(scoped);

    // 130 samples, 28 of them under parse; main has 93, 20 + 8 under parse.
    let demo = show(
        "transforms-summary",
        &sessions::two_threads(),
        "demo.json",
        (1280, 800),
        "#transforms=drop%1Fparse",
    );
    let browser = &demo.browser;
    eventually("the summary after the drop", || {
        threads_summary(browser) == "All threads (2): 102 of 130 samples"
    });
    // Each thread's entry: what `prof report --drop parse --thread NAME` totals, and its share
    // of the 102 samples shown.
    assert_eq!(
        report_total(&demo.file, &["--drop", "parse", "--thread", "main"]),
        "65.0 ms"
    );
    assert_eq!(
        thread_entries(browser),
        [
            "main [100]: 65 samples (63.7%)",
            "worker [101]: 37 samples (36.3%)"
        ]
    );
    assert!(filter_chips(browser).is_empty());
    browser.eval(
        "window.profViewer.state.update({ threads: [0] });",
        json!([]),
    );
    eventually("the summary of main after the drop", || {
        threads_summary(browser) == "1 of 2 threads: 65 of 93 samples"
    });
    assert_eq!(filter_chips(browser), ["1 of 2 threads"]);
    browser.click(&browser.find("#transforms .filter-chips [data-filter=threads] button"));
    eventually("every thread again", || {
        threads_summary(browser) == "All threads (2): 102 of 130 samples"
    });
}

/// Each file keeps its own transforms: switching files neither carries one file's transforms
/// to the next (where they would not apply) nor loses them, and a file shown again has them
/// back, a removed default included.
#[test]
fn each_file_keeps_its_own_transforms() {
    let dir = TempDir::new("browser-transforms-per-file");
    let wall = dir.join("wall.json");
    sessions::save(&sessions::wall_blocked(), &wall);
    let demo = dir.join("demo.json");
    sessions::save(&sessions::two_threads(), &demo);
    let served = Served::start(&[&wall, &demo], &["--port", "0"]);
    let browser = Browser::start("transforms-per-file", 1280, 800, 1.0);
    open(
        &browser,
        &format!("{}#file=1&transforms=drop%1Fparse", served.url),
    );
    let mut dropped = Vec::new();
    eventually("demo's transform", || {
        dropped = chips(&browser);
        dropped.len() == 1 && !dropped[0].1
    });
    let folded = vec![("Scheduler folded into the blocking call".to_owned(), false)];

    // The wall file shows its own default, not demo's drop.
    choose_file(&browser, 0, "wall.json");
    eventually("wall's default", || chips(&browser) == folded);
    table_matches_report(&browser, &wall, &[]);
    // Back to demo: its drop again.
    choose_file(&browser, 1, "demo.json");
    eventually("demo's transform again", || chips(&browser) == dropped);
    table_matches_report(&browser, &demo, &["--drop", "parse"]);
    // The wall file's default removed stays removed when it is shown again.
    choose_file(&browser, 0, "wall.json");
    eventually("wall's default again", || chips(&browser) == folded);
    remove_chip(&browser, 0);
    eventually("no chips on wall", || chips(&browser).is_empty());
    choose_file(&browser, 1, "demo.json");
    eventually("demo's transform once more", || chips(&browser) == dropped);
    choose_file(&browser, 0, "wall.json");
    table_matches_report(&browser, &wall, &["--scheduler-frames"]);
    assert!(chips(&browser).is_empty());
}

/// Each timeline track's total (what its label's tooltip says) for the thread `tid` of
/// `session`, as `prof report --tid TID ARGS` totals it, for every track shown.
fn tracks_match_report(
    browser: &Browser,
    file: &std::path::Path,
    session: &prof::session::Session,
    args: &[&str],
    what: &str,
) {
    // Per thread of the session (by index), what prof report totals.
    let totals: Vec<String> = session
        .threads
        .iter()
        .map(|t| report_total(file, &[args, &["--tid", &t.tid.to_string()]].concat()))
        .collect();
    let mut seen = json!(null);
    let mut expected: Vec<String> = Vec::new();
    let found = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        eventually(what, || {
            seen = browser.eval(
                "const d = window.profViewer.timeline.data;
                 if (!d) return null;
                 return Array.from(d.threads, (t, i) => [t, d.totals[i]]);",
                json!([]),
            );
            let Some(tracks) = seen.as_array() else {
                return false;
            };
            expected = tracks
                .iter()
                .map(|t| totals[t[0].as_u64().unwrap() as usize].clone())
                .collect();
            let shown: Vec<&str> = tracks.iter().map(|t| t[1].as_str().unwrap_or("")).collect();
            !tracks.is_empty() && shown == expected
        })
    }));
    assert!(
        found.is_ok(),
        "{what}: tracks {seen}, prof report {expected:?}"
    );
}

/// The agreement suite's timeline part: under each filter the page offers (thread state, scope
/// and task "Only", transforms; threads and range, which the timeline is where one chooses
/// them, leave its tracks whole), every track's total is what `prof report` totals for that
/// thread with the same options.
#[test]
fn every_timeline_tracks_total_equals_prof_report_under_every_filter() {
    let dir = TempDir::new("browser-timeline-filters");
    let scoped = dir.join("scoped.json");
    let wall = dir.join("wall.json");
    let scoped_session = sessions::scoped_tasks();
    let wall_session = sessions::wall_blocked();
    sessions::save(&scoped_session, &scoped);
    sessions::save(&wall_session, &wall);
    let served = Served::start(&[&scoped, &wall], &["--port", "0"]);
    let browser = Browser::start("timeline-filters", 1280, 800, 1.0);
    let base = served.url.split('#').next().unwrap().to_owned();
    let cases: [(&str, &std::path::Path, &prof::session::Session, &[&str]); 9] = [
        ("#file=0", &scoped, &scoped_session, &[]),
        (
            "#file=0&scope=request",
            &scoped,
            &scoped_session,
            &["--scope", "request"],
        ),
        (
            "#file=0&scope=parse",
            &scoped,
            &scoped_session,
            &["--scope", "parse"],
        ),
        (
            "#file=0&task=fetch",
            &scoped,
            &scoped_session,
            &["--task", "fetch"],
        ),
        // The timeline is the overview the threads and the range are chosen on: its tracks
        // keep every thread over the whole window, as `prof report --tid` without them totals.
        (
            "#file=0&threads=1&range=20000000-90000000",
            &scoped,
            &scoped_session,
            &[],
        ),
        (
            "#file=0&transforms=drop%1Fparse%3A%3Ajson",
            &scoped,
            &scoped_session,
            &["--drop", "parse::json"],
        ),
        ("#file=1", &wall, &wall_session, &[]),
        (
            "#file=1&state=waiting",
            &wall,
            &wall_session,
            &["--state", "waiting"],
        ),
        (
            "#file=1&state=running&transforms=merge%1Fhandle",
            &wall,
            &wall_session,
            &["--state", "running", "--merge", "handle"],
        ),
    ];
    for (hash, file, session, args) in cases {
        browser.goto(&format!("{base}{hash}"));
        tracks_match_report(&browser, file, session, args, hash);
    }
    assert_eq!(console_problems(&browser), Vec::<String>::new());
}
