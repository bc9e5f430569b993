//! The viewer in a real headless Chromium, driven through chromedriver against `prof serve`.
//! Each state is saved as a screenshot under `tests/artifacts/`.
//!
//! A missing browser fails these tests: they never skip.

use prof::aggregate::{CallTree, Filter, SortBy};
use prof_e2e::page::keys::ESCAPE;
use prof_e2e::page::{
    breadcrumbs, choose_file, console_problems, eventually, open, open_ok, report_rows, show, text,
    top_table_rows, LOAD,
};
use prof_e2e::served::Served;
use prof_e2e::sessions::{self, MS};
use prof_e2e::webdriver::Browser;
use prof_e2e::TempDir;
use serde_json::{json, Value};
use std::time::Duration;

/// Pixels of the flame canvas that are painted, and how many distinct colours they have.
fn painted(browser: &Browser) -> (u64, u64) {
    let v = browser.eval(
        "const c = document.getElementById('flame-canvas');
         const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
         let n = 0; const colours = new Set();
         for (let i = 0; i < d.length; i += 4) {
           if (d[i + 3] > 0) { n++; if (colours.size < 1000) colours.add((d[i] << 16) | (d[i+1] << 8) | d[i+2]); }
         }
         return [n, colours.size];",
        json!([]),
    );
    (v[0].as_u64().unwrap(), v[1].as_u64().unwrap())
}

/// Canvas pixels in the search highlight colour (#d633ff).
fn highlighted(browser: &Browser) -> u64 {
    browser
        .eval(
            "const c = document.getElementById('flame-canvas');
             const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
             let n = 0;
             for (let i = 0; i < d.length; i += 4) {
               if (d[i] === 0xd6 && d[i+1] === 0x33 && d[i+2] === 0xff) n++;
             }
             return n;",
            json!([]),
        )
        .as_u64()
        .unwrap()
}

/// The first frame of function `name` as drawn: x, y, width, height in CSS pixels.
fn frame_of(browser: &Browser, name: &str) -> Value {
    let frames = browser.eval(
        "return window.profViewer.framesNamed(arguments[0]);",
        json!([name]),
    );
    frames[0].clone()
}

/// The thread selector's entries: its summary ("-1") and each thread's checkbox value and label.
fn thread_options(browser: &Browser) -> Vec<(String, String)> {
    let v = browser.eval(
        "const d = document.getElementById('threads');
         return [['-1', d.querySelector('summary').textContent]].concat(
           [...d.querySelectorAll('label')].map(l => [l.querySelector('input').value, l.textContent.trim()]));",
        json!([]),
    );
    serde_json::from_value(v).unwrap()
}

/// Shows only thread `index` by clicking the checkboxes of every other thread off.
fn show_only_thread(browser: &Browser, index: usize) {
    browser.eval(
        "const d = document.getElementById('threads'); d.open = true;
         for (const box of d.querySelectorAll('input[type=checkbox]')) {
           if ((box.value === String(arguments[0])) !== box.checked) box.click();
         }",
        json!([index]),
    );
}

/// What the thread selector should offer for `session`: all threads with the sample total, then
/// each thread with its samples and their share with one decimal, as `prof report` rounds.
fn expected_thread_options(session: &prof::session::Session) -> Vec<(String, String)> {
    let mut counts = vec![0u64; session.threads.len()];
    for thread in &session.samples.thread {
        counts[thread.index()] += 1;
    }
    let all: u64 = counts.iter().sum();
    assert_eq!(all, session.samples.len() as u64);
    let samples = |n: u64| format!("{n} sample{}", if n == 1 { "" } else { "s" });
    let mut options = vec![(
        "-1".to_owned(),
        format!("All threads ({}): {}", counts.len(), samples(all)),
    )];
    for (i, (thread, &n)) in session.threads.iter().zip(&counts).enumerate() {
        options.push((
            i.to_string(),
            format!(
                "{} [{}]: {} ({:.1}%)",
                session.str(thread.name),
                thread.tid,
                samples(n),
                n as f64 * 100.0 / all as f64
            ),
        ));
    }
    options
}

#[test]
fn the_viewer_shows_the_profile_and_responds_to_input() {
    let dir = TempDir::new("browser-main");
    let file = dir.join("demo.json");
    let session = sessions::two_threads();
    sessions::save(&session, &file);
    let mut other = session.clone();
    other.meta.program = "second-app".into();
    let second = dir.join("second.json");
    sessions::save(&other, &second);
    let served = Served::start(&[&file, &second], &["--port", "0"]);
    let browser = Browser::start("main", 1280, 800, 1.0);

    open(&browser, &served.url);
    assert_eq!(text(&browser, "body #error"), "");
    let state = browser.eval("return document.body.dataset.state;", json!([]));
    assert_eq!(state, json!("ready"));
    browser.screenshot("01-loaded");
    assert_eq!(console_problems(&browser), Vec::<String>::new());

    // The header.
    let header = text(&browser, "#meta");
    for fact in [
        "demo-app",
        "2026-11-22 10:00:00",
        "130",
        "perf_event",
        "1,000 Hz",
        "cpu (nanoseconds)",
    ] {
        assert!(
            header.contains(fact),
            "{fact} is not in the header: {header}"
        );
    }
    assert!(text(&browser, "#meta [data-key=samples] dd") == "130");
    // 3 dropped beside 130 kept: 3 of 133 taken.
    assert_eq!(
        text(&browser, "#meta [data-key=dropped] dd"),
        "3 (2.3% of those taken)"
    );

    // The thread selector: every thread with its sample count and share, counted here
    // straight from the session's sample columns.
    assert_eq!(thread_options(&browser), expected_thread_options(&session));

    // The flame graph is painted, in several colours, and root is at the bottom.
    let (pixels, colours) = painted(&browser);
    assert!(pixels > 20_000, "only {pixels} pixels painted");
    assert!(colours > 5, "only {colours} colours");
    let main = frame_of(&browser, "main");
    let hot = frame_of(&browser, "hot_loop");
    assert!(
        hot["y"].as_f64() < main["y"].as_f64(),
        "callees are drawn above callers"
    );

    // The table shows what `prof report --top 10` prints.
    let expected = report_rows(&file, &["--top", "10"]);
    assert_eq!(top_table_rows(&browser, expected.len()), expected);

    // Hover: a tooltip with the name, place, and self and total as time and percentage.
    let canvas = browser.find("#flame-canvas");
    let (hx, hy) = (
        hot["x"].as_f64().unwrap() + 5.0,
        hot["y"].as_f64().unwrap() + 5.0,
    );
    browser.pointer_at(&canvas, hx, hy, false);
    browser.wait_for(
        "!document.getElementById('tooltip').hidden",
        LOAD,
        "the tooltip",
    );
    let tip = text(&browser, "#tooltip");
    // hot_loop under main: 50 of the 130 samples, 1 ms each.
    // Percentages have the digits `prof report` prints.
    for fact in ["hot_loop", "src/hot.rs:42", "50.0 ms", "38.5%"] {
        assert!(tip.contains(fact), "{fact} is not in the tooltip: {tip}");
    }
    browser.screenshot("02-tooltip");

    // Click zooms into a frame: it spans the width, and the breadcrumbs lead back.
    let compute = frame_of(&browser, "compute");
    browser.pointer_at(
        &canvas,
        compute["x"].as_f64().unwrap() + 5.0,
        compute["y"].as_f64().unwrap() + 5.0,
        true,
    );
    browser.wait_for(
        "[...document.querySelectorAll('#breadcrumbs button')].pop()?.textContent === 'compute'",
        LOAD,
        "the zoom",
    );
    assert_eq!(breadcrumbs(&browser), ["all", "main", "compute"]);
    let zoomed = frame_of(&browser, "compute");
    let canvas_width = browser
        .eval(
            "return document.getElementById('flame-canvas').clientWidth;",
            json!([]),
        )
        .as_f64()
        .unwrap();
    assert!(
        zoomed["width"].as_f64().unwrap() > canvas_width - 2.0,
        "{zoomed}"
    );
    assert_eq!(
        browser.eval(
            "return window.profViewer.framesNamed('tokenize').length;",
            json!([])
        ),
        json!(0),
        "frames outside the zoomed one are not drawn"
    );
    browser.screenshot("03-zoomed");
    browser.press_key(ESCAPE);
    browser.wait_for(
        "document.querySelectorAll('#breadcrumbs button').length === 1",
        LOAD,
        "Escape to reset the zoom",
    );

    // Search: matching frames are highlighted and the matched share is reported.
    let tree = CallTree::new(&session, &Filter::all());
    let total = tree.total_weight(tree.root()) as f64;
    // hot_loop (57) and tokenize (20) samples, none of them nested in each other.
    let expected_pct = format!("{:.1}%", 77.0 * MS as f64 / total * 100.0);
    assert_eq!(highlighted(&browser), 0);
    browser.type_into(&browser.find("#search"), "hot_|^token");
    browser.wait_for(
        "document.getElementById('search-result').textContent.startsWith('matched')",
        LOAD,
        "the search result",
    );
    let result = text(&browser, "#search-result");
    assert!(
        result.contains(&expected_pct),
        "{result} lacks {expected_pct}"
    );
    eventually("matches to be highlighted", || highlighted(&browser) > 1000);
    browser.screenshot("04-search");

    // An invalid regex is reported, not thrown.
    browser.type_into(&browser.find("#search"), "(");
    browser.wait_for(
        "document.getElementById('search').classList.contains('invalid')",
        LOAD,
        "the regex error",
    );
    assert!(text(&browser, "#search-result").contains("regex"));
    browser.eval(
        "const s = document.getElementById('search'); s.value = ''; s.dispatchEvent(new Event('input'));",
        json!([]),
    );

    // Clicking a table row highlights that function in the flame graph.
    browser.click(&browser.find("#top-table tbody tr[data-func]"));
    eventually("the selected function to be highlighted", || {
        highlighted(&browser) > 500
    });
    browser.screenshot("05-row-selected");
    browser.press_key(ESCAPE);

    // Sorting by total puts the root-most function first.
    browser.click(&browser.find("#top-table th[data-sort=total]"));
    let by_total = tree.top(&session, 1, SortBy::Total);
    eventually("the table sorted by total", || {
        top_table_rows(&browser, 1)[0].name == by_total[0].name
    });

    // One thread: the worker's functions only.
    show_only_thread(&browser, 1);
    browser.wait_for(
        "document.querySelector('#threads summary').textContent.startsWith('1 of 2 threads')",
        LOAD,
        "the thread choice",
    );
    browser.wait_for(
        "!document.querySelector('#top-table tbody').textContent.includes('tokenize')",
        LOAD,
        "the worker's table",
    );
    let names: Vec<String> = top_table_rows(&browser, 20)
        .into_iter()
        .map(|r| r.name)
        .collect();
    assert!(names.contains(&"hash_block".to_owned()), "{names:?}");
    assert!(!names.contains(&"tokenize".to_owned()), "{names:?}");
    browser.screenshot("06-worker-thread");

    // Icicle: the root moves to the top.
    browser.click(&browser.find("#icicle"));
    let main = frame_of(&browser, "worker_main");
    assert!(
        main["y"].as_f64().unwrap() < 40.0,
        "second row from the top: {main}"
    );
    browser.screenshot("07-icicle");

    // The second file.
    browser.eval(
        "const s = document.getElementById('file'); s.value = '1'; s.dispatchEvent(new Event('change'));",
        json!([]),
    );
    browser.wait_for(
        "document.getElementById('meta').textContent.includes('second-app')",
        LOAD,
        "the second file",
    );
    browser.screenshot("08-second-file");
    assert_eq!(console_problems(&browser), Vec::<String>::new());
}

#[test]
fn a_broken_file_shows_a_readable_error() {
    let dir = TempDir::new("browser-broken");
    let file = dir.join("broken.json");
    std::fs::write(
        &file,
        br#"{"format": "prof-session", "version": 1, "samples": [1, 2"#,
    )
    .unwrap();
    let served = Served::start(&[&file], &["--port", "0"]);
    let browser = Browser::start("broken", 1000, 600, 1.0);
    open(&browser, &served.url);
    let state = browser.eval("return document.body.dataset.state;", json!([]));
    assert_eq!(state, json!("error"));
    let error = text(&browser, "#error");
    assert!(error.contains("broken.json"), "{error}");
    // The same line `prof report` prints, with the file's name for its path.
    let report = prof_e2e::prof(&["report", file.to_str().unwrap()]);
    let printed = String::from_utf8_lossy(&report.stderr);
    let (_, problem) = printed.trim().rsplit_once("broken.json: ").unwrap();
    assert!(
        error.contains(&format!("broken.json: {problem}")),
        "{error}"
    );
    browser.screenshot("09-broken-file");
    let uncaught: Vec<String> = console_problems(&browser)
        .into_iter()
        .filter(|l| l.contains("Uncaught"))
        .collect();
    assert_eq!(uncaught, Vec::<String>::new());
}

#[test]
fn the_canvas_is_sharp_on_high_dpi_screens() {
    let dir = TempDir::new("browser-hidpi");
    let file = dir.join("demo.json");
    sessions::save(&sessions::two_threads(), &file);
    let served = Served::start(&[&file], &["--port", "0"]);
    let browser = Browser::start("hidpi", 900, 600, 2.0);
    open(&browser, &served.url);
    browser.screenshot("10-high-dpi");
    let sizes = browser.eval(
        "const c = document.getElementById('flame-canvas'); return [c.width, c.clientWidth, window.devicePixelRatio];",
        json!([]),
    );
    assert_eq!(sizes[2].as_f64(), Some(2.0));
    assert_eq!(sizes[0].as_f64().unwrap(), 2.0 * sizes[1].as_f64().unwrap());
}

/// A regression test: a broken file chosen after a good one showed its error under the
/// good file's header and tab title.
#[test]
fn switching_to_a_broken_file_clears_the_previous_header_and_title() {
    let dir = TempDir::new("browser-switch-broken");
    let good = dir.join("good.json");
    sessions::save(&sessions::two_threads(), &good);
    let broken = dir.join("broken.json");
    std::fs::write(&broken, br#"{"format": "prof-session", "version": 2, "#).unwrap();
    let served = Served::start(&[&good, &broken], &["--port", "0"]);
    let browser = Browser::start("switch-broken", 1000, 600, 1.0);
    open(&browser, &served.url);
    assert!(text(&browser, "#meta").contains("demo-app"));
    browser.eval(
        "const s = document.getElementById('file'); s.value = '1'; s.dispatchEvent(new Event('change'));",
        json!([]),
    );
    browser.wait_for(
        "document.body.dataset.state === 'error'",
        LOAD,
        "the broken file's error",
    );
    assert_eq!(
        text(&browser, "#meta"),
        "",
        "no header of the previous file"
    );
    let title = browser.eval("return document.title;", json!([]));
    assert_eq!(title, json!("prof: broken.json (error)"));
    assert_eq!(
        browser.eval(
            "return document.querySelectorAll('#top-table tbody tr').length;",
            json!([])
        ),
        json!(0)
    );
    browser.screenshot("11-switched-to-broken");
}

/// A regression test: choosing a small file while a large one was still loading ended
/// with the selector naming the small file and the page showing the large one.
#[test]
fn switching_files_mid_load_shows_the_file_chosen_last() {
    let dir = TempDir::new("browser-switch-race");
    let first = dir.join("first.json");
    sessions::save(&sessions::two_threads(), &first);
    let big = dir.join("big.json");
    sessions::save(&sessions::large(400_000), &big);
    let mut small = sessions::two_threads();
    small.meta.program = "small-app".into();
    let last = dir.join("small.json");
    sessions::save(&small, &last);
    let served = Served::start(&[&first, &big, &last], &["--port", "0"]);
    let browser = Browser::start("switch-race", 1000, 600, 1.0);
    open(&browser, &served.url);
    // Choose the large file, then the small one before the large one has loaded.
    browser.eval(
        "const s = document.getElementById('file');
         s.value = '1'; s.dispatchEvent(new Event('change'));
         s.value = '2'; s.dispatchEvent(new Event('change'));",
        json!([]),
    );
    browser.wait_for(
        "document.body.dataset.state === 'ready'",
        LOAD,
        "the small file",
    );
    // Give the large file time to arrive, had its load not been cancelled.
    std::thread::sleep(Duration::from_secs(4));
    let meta = text(&browser, "#meta");
    assert!(meta.contains("small-app"), "{meta}");
    assert!(!meta.contains("big-app"), "{meta}");
    assert_eq!(
        browser.eval("return document.getElementById('file').value;", json!([])),
        json!("2")
    );
    assert_eq!(
        browser.eval("return document.title;", json!([])),
        json!("prof: small.json")
    );
    browser.screenshot("12-switched-mid-load");
}

/// A regression test: a search whose only match lay inside a merged sub-pixel block
/// reported a share and highlighted nothing, and clicking the block did nothing.
#[test]
fn a_match_inside_merged_slivers_is_highlighted_and_a_click_zooms_in() {
    let shown = show(
        "slivers",
        &sessions::needle_in_slivers(),
        "slivers.json",
        (1000, 600),
        "",
    );
    let browser = &shown.browser;
    assert_eq!(
        browser.eval(
            "return window.profViewer.framesNamed('needle').length;",
            json!([])
        ),
        json!(0),
        "needle is inside a merged block"
    );
    browser.type_into(&browser.find("#search"), "needle");
    browser.wait_for(
        "document.getElementById('search-result').textContent.startsWith('matched')",
        LOAD,
        "the search result",
    );
    eventually("the merged block holding needle to be highlighted", || {
        highlighted(browser) > 0
    });
    browser.screenshot("13-match-in-slivers");
    // Click the merged block: it zooms into the heaviest frame it stands for.
    let merged = browser.eval(
        "const l = window.profViewer.layout;
         for (let i = 0; i < l.count; i++) {
           if (l.func[i] === l.merged) return window.profViewer.flame.frameRect(i);
         }
         return null;",
        json!([]),
    );
    assert!(merged.is_object(), "a merged block is drawn");
    let canvas = browser.find("#flame-canvas");
    browser.pointer_at(
        &canvas,
        merged["x"].as_f64().unwrap() + merged["width"].as_f64().unwrap() / 2.0,
        merged["y"].as_f64().unwrap() + 5.0,
        true,
    );
    browser.wait_for(
        "document.querySelectorAll('#breadcrumbs button').length === 3",
        LOAD,
        "the zoom into the merged block",
    );
    let crumbs = breadcrumbs(browser);
    assert!(crumbs[2].starts_with("tiny_"), "{crumbs:?}");
}

/// A regression test: Escape in the search box also reset the zoom.
#[test]
fn escape_in_the_search_box_clears_only_the_search() {
    let shown = show(
        "escape",
        &sessions::two_threads(),
        "demo.json",
        (1000, 600),
        "",
    );
    let browser = &shown.browser;
    let compute = frame_of(browser, "compute");
    browser.pointer_at(
        &browser.find("#flame-canvas"),
        compute["x"].as_f64().unwrap() + 5.0,
        compute["y"].as_f64().unwrap() + 5.0,
        true,
    );
    browser.wait_for(
        "[...document.querySelectorAll('#breadcrumbs button')].pop()?.textContent === 'compute'",
        LOAD,
        "the zoom",
    );
    let search = browser.find("#search");
    browser.click(&search);
    browser.type_into(&search, "hot");
    browser.wait_for(
        "document.getElementById('search-result').textContent.startsWith('matched')",
        LOAD,
        "the search result",
    );
    browser.press_key(ESCAPE);
    browser.wait_for(
        "document.getElementById('search').value === ''",
        LOAD,
        "the search to clear",
    );
    assert_eq!(text(browser, "#search-result"), "");
    assert_eq!(
        breadcrumbs(browser),
        ["all", "main", "compute"],
        "the zoom stays"
    );
}

/// The URL fragment holds the view: a copied URL opens the same threads, zoom and search, and
/// back and forward step through the changes.
#[test]
fn the_url_fragment_holds_the_view_state() {
    let dir = TempDir::new("browser-url-state");
    let file = dir.join("demo.json");
    sessions::save(&sessions::two_threads(), &file);
    let served = Served::start(&[&file], &["--port", "0"]);
    let browser = Browser::start("url-state", 1000, 600, 1.0);
    browser.goto(&format!(
        "{}#threads=0&zoom=main%1Fcompute&search=hot_",
        served.url
    ));
    browser.wait_for(
        "document.body.dataset.state === 'ready'",
        LOAD,
        "the page to load",
    );
    browser.wait_for(
        "document.getElementById('search-result').textContent.startsWith('matched')",
        LOAD,
        "the search from the URL",
    );
    assert_eq!(breadcrumbs(&browser), ["all", "main", "compute"]);
    assert_eq!(
        browser.eval("return document.getElementById('search').value;", json!([])),
        json!("hot_")
    );
    assert!(thread_options(&browser)[0]
        .1
        .starts_with("1 of 2 threads: 93 samples"));
    browser.screenshot("14-from-url");

    // A change is a new history entry; back restores the view before it.
    browser.press_key(ESCAPE); // the zoom (nothing is selected)
    browser.wait_for(
        "document.querySelectorAll('#breadcrumbs button').length === 1",
        LOAD,
        "Escape to reset the zoom",
    );
    assert!(!browser
        .eval("return location.hash;", json!([]))
        .as_str()
        .unwrap()
        .contains("zoom="));
    browser.eval("history.back();", json!([]));
    browser.wait_for(
        "document.querySelectorAll('#breadcrumbs button').length === 3",
        LOAD,
        "back to restore the zoom",
    );
    // A reload shows the same view.
    browser.eval("window.beforeReload = true; location.reload();", json!([]));
    browser.wait_for(
        "!window.beforeReload && document.body.dataset.state === 'ready' && document.querySelectorAll('#breadcrumbs button').length === 3",
        LOAD,
        "the reloaded view",
    );
    assert_eq!(breadcrumbs(&browser), ["all", "main", "compute"]);
}

/// An exception while a view handles input, or while it draws, shows in that view and never
/// instead of the page: the tabs and the other views keep working.
#[test]
fn an_exception_in_a_view_shows_in_that_view_and_the_page_keeps_working() {
    let shown = show(
        "view-failure",
        &sessions::two_threads(),
        "demo.json",
        (1000, 700),
        "",
    );
    let browser = &shown.browser;
    // The flame graph's wheel handler broken as the Sandwich's once was: flame.js's own call of
    // it throws "... is not a function".
    browser.eval("window.profViewer.flame.handlers.onWheel = 1;", json!([]));
    browser.wheel_at(&browser.find("#flame-canvas"), 100.0, 100.0, -100);
    let failure = failure_shown_in(browser, "flame");
    assert!(failure.contains("onWheel is not a function"), "{failure}");
    browser.screenshot("view-failure-flame");

    // A view whose drawing fails: its tab shows the failure, the others still draw.
    browser.eval(
        "window.profViewer.views.get('calltree').render = async () => { throw new Error('drawing failed'); };",
        json!([]),
    );
    browser.click(&browser.find("#tabs button[data-view=calltree]"));
    let failure = failure_shown_in(browser, "calltree");
    assert!(failure.contains("drawing failed"), "{failure}");
    browser.click(&browser.find("#tabs button[data-view=table]"));
    browser.wait_for(
        "document.querySelectorAll('section[data-view=table] .table-rows .row').length > 0",
        LOAD,
        "the Top functions to draw",
    );
    assert_eq!(
        text(
            browser,
            "section[data-view=table] > .view-error:not([hidden])"
        ),
        ""
    );
    assert_eq!(
        browser.eval("return document.body.dataset.state;", json!([])),
        json!("ready")
    );
}

/// Waits until view `view` shows a failure, or the page does; the page must not. Returns the
/// view's failure.
fn failure_shown_in(browser: &Browser, view: &str) -> String {
    let shown = format!("section[data-view={view}] > .view-error:not([hidden])");
    browser.wait_for(
        &format!(
            "document.body.dataset.state === 'error' || document.querySelector({})",
            json!(shown)
        ),
        LOAD,
        "a failure to show",
    );
    assert_eq!(text(browser, "#error"), "", "the page failed");
    text(browser, &shown)
}

/// The view the page shows: the tab selected and the one view section not hidden.
fn shown_view(browser: &Browser) -> Value {
    browser.eval(
        "return [document.querySelector('#tabs [aria-selected=true]')?.dataset.view,
                 ...[...document.querySelectorAll('section.view')].filter(v => !v.hidden).map(v => v.dataset.view)];",
        json!([]),
    )
}

/// Sets the URL fragment to `hash` and waits until file `name` is shown.
fn go_to_fragment(browser: &Browser, hash: &str, name: &str) {
    browser.eval("location.hash = arguments[0];", json!([hash]));
    browser.wait_for(
        &format!(
            "document.title === {} && document.body.dataset.state === 'ready' && location.hash === {}",
            json!(format!("prof: {name}")),
            json!(hash)
        ),
        LOAD,
        "the file the fragment names",
    );
}

/// A fragment that names another file (a pasted link, an edited hash, back and forward) shows
/// that file with the whole view the fragment names, not only the file.
#[test]
fn a_fragment_naming_another_file_shows_its_whole_view() {
    let dir = TempDir::new("browser-fragment-file");
    let demo = dir.join("demo.json");
    sessions::save(&sessions::two_threads(), &demo);
    let other = dir.join("other.json");
    sessions::save(&sessions::transforms(), &other);
    let served = Served::start(&[&demo, &other], &["--port", "0"]);
    let browser = Browser::start("fragment-file", 1000, 700, 1.0);
    open_ok(&browser, &format!("{}#file=1&view=stack-chart", served.url));
    assert_eq!(shown_view(&browser), json!(["stack-chart", "stack-chart"]));

    // Another file and no view named: the flame graph, the first view.
    go_to_fragment(&browser, "#file=0", "demo.json");
    assert_eq!(shown_view(&browser), json!(["flame", "flame"]));

    go_to_fragment(&browser, "#file=1&view=stack-chart", "other.json");
    assert_eq!(shown_view(&browser), json!(["stack-chart", "stack-chart"]));
    // Another file, another view, and that view's own state: the inverted call tree, whose
    // roots are the functions with self time, heaviest first.
    go_to_fragment(&browser, "#view=calltree&inverted=1", "demo.json");
    assert_eq!(shown_view(&browser), json!(["calltree", "calltree"]));
    assert_eq!(
        browser.eval(
            "return document.querySelector('section[data-view=calltree] .tree-inverted').checked;",
            json!([])
        ),
        json!(true)
    );
    browser.wait_for(
        "window.profViewer.views.get('calltree').shownRows()[0]?.name === 'hot_loop'",
        LOAD,
        "the inverted call tree",
    );
    browser.screenshot("fragment-file-calltree");

    // Back: the other file's stack chart again.
    browser.eval("history.back();", json!([]));
    browser.wait_for(
        "document.title === 'prof: other.json' && document.body.dataset.state === 'ready'",
        LOAD,
        "back to the other file",
    );
    assert_eq!(shown_view(&browser), json!(["stack-chart", "stack-chart"]));
    assert_eq!(text(&browser, "#error"), "");
}

/// A time range in the URL selects the samples every view shows.
#[test]
fn a_range_in_the_url_selects_the_samples() {
    let dir = TempDir::new("browser-range");
    let file = dir.join("demo.json");
    sessions::save(&sessions::two_threads(), &file);
    let served = Served::start(&[&file], &["--port", "0"]);
    let browser = Browser::start("range", 1000, 600, 1.0);
    // The first 50 samples (one per millisecond from 0) are all main;compute;hot_loop.
    browser.goto(&format!("{}#range=0-{}", served.url, 50 * MS));
    browser.wait_for(
        "document.body.dataset.state === 'ready'",
        LOAD,
        "the page to load",
    );
    let rows = top_table_rows(&browser, 10);
    assert_eq!(rows[0].name, "hot_loop");
    assert_eq!(rows[0].total_pct, "100.0%", "{rows:?}");
    assert!(rows.iter().all(|r| r.name != "tokenize"), "{rows:?}");
}

/// The header's value for `key` (`program`, `date`, `duration`, ...).
fn meta_item(browser: &Browser, key: &str) -> String {
    text(browser, &format!("#meta [data-key={key}] dd"))
}

/// Whether the timeline's tracks and its "no timeline" line are shown, and the line's text.
fn timeline_shown(browser: &Browser) -> (bool, bool, String) {
    let v = browser.eval(
        "const t = document.querySelector('.timeline-tracks'), n = document.querySelector('.timeline-none');
         return [t.offsetHeight > 0, !!n && n.offsetHeight > 0, n ? n.textContent : ''];",
        json!([]),
    );
    (
        v[0].as_bool().unwrap(),
        v[1].as_bool().unwrap(),
        v[2].as_str().unwrap().to_owned(),
    )
}

/// The views offered as tabs (their ids), in order.
fn tabs_offered(browser: &Browser) -> Vec<String> {
    let v = browser.eval(
        "return [...document.querySelectorAll('#tabs button[data-view]')].filter(t => !t.hidden).map(t => t.dataset.view);",
        json!([]),
    );
    serde_json::from_value(v).unwrap()
}

/// A regression test: a Go CPU profile (no per-sample times) was drawn as one spike at 0 ms on a 3.1 s
/// axis, a Go heap profile said `Duration 0 ns`, and both said "unknown" for Program and Date,
/// which the files hold (`go tool pprof` shows them).
#[test]
fn go_profiles_show_their_program_and_date_and_no_timeline() {
    let dir = TempDir::new("browser-go-pprof");
    let data = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("data/import");
    let timed = dir.join("timed.json");
    sessions::save(&sessions::two_threads(), &timed);
    let files = [
        data.join("go-cpu-burn.pprof"),
        data.join("go-heap.pb.gz"),
        timed,
    ];
    let refs: Vec<&std::path::Path> = files.iter().map(|f| f.as_path()).collect();
    let served = Served::start(&refs, &["--port", "0"]);
    let browser = Browser::start("go-pprof", 1280, 800, 1.0);
    open(&browser, &served.url);
    assert_eq!(text(&browser, "#error"), "");
    assert_eq!(
        meta_item(&browser, "program"),
        "/tmp/ceo/conformance/t2/burn/burn"
    );
    assert_eq!(meta_item(&browser, "date"), "2026-11-23 07:04:18");
    let duration = meta_item(&browser, "duration");
    assert!(
        duration.starts_with("3.1") && duration.ends_with(" s"),
        "{duration}"
    );
    let (tracks, none, line) = timeline_shown(&browser);
    assert!(!tracks, "a timeline is drawn for samples without times");
    assert!(none, "no line says why there is no timeline");
    assert!(line.contains("No timeline"), "{line}");
    browser.screenshot("20-go-cpu-no-timeline");
    // Nor a stack chart, which is not offered: the samples have no order in time. A URL that
    // names it shows the first view, and the page says once why there is no timeline. Nor
    // Scopes: the file has none.
    assert_eq!(
        tabs_offered(&browser),
        ["flame", "calltree", "sandwich", "table", "source", "diff"]
    );
    browser.eval("location.hash = '#view=stack-chart';", json!([]));
    eventually("the flame graph in place of the stack chart", || {
        browser
            .eval(
                "return !document.querySelector('section.view[data-view=flame]').hidden;",
                json!([]),
            )
            .as_bool()
            .unwrap()
    });
    let lines = browser.eval(
        "return [...document.querySelectorAll('.timeline-none')].filter(n => n.offsetHeight > 0).length;",
        json!([]),
    );
    assert_eq!(lines, json!(1), "the line saying there are no times, once");
    browser.eval("location.hash = '';", json!([]));

    choose_file(&browser, 1, "go-heap.pb.gz");
    assert_eq!(text(&browser, "#error"), "");
    assert_eq!(
        meta_item(&browser, "program"),
        "/tmp/go-build169460002/b001/exe/heapdemo"
    );
    assert_eq!(meta_item(&browser, "date"), "2026-11-23 10:22:13");
    assert_eq!(meta_item(&browser, "duration"), "unknown");
    assert!(!timeline_shown(&browser).0);

    // A profile with times gets its timeline and stack chart back.
    choose_file(&browser, 2, "timed.json");
    eventually("the timeline of a timed profile", || {
        let (tracks, none, _) = timeline_shown(&browser);
        tracks && !none
    });
    assert!(tabs_offered(&browser).contains(&"stack-chart".to_owned()));
    browser.eval("location.hash = '#file=2&view=stack-chart';", json!([]));
    browser.wait_for(
        "window.profViewer.views.get('stack-chart').layout",
        LOAD,
        "the stack chart of a timed profile",
    );
    let threads = browser.eval(
        "return window.profViewer.timeline.data?.threads.length ?? 0;",
        json!([]),
    );
    assert_eq!(threads, json!(2));
}

/// A regression test: a directory among the files stopped `prof serve` ("Is a directory"), while
/// corrupt and oversized files were listed with their one-line error.
#[test]
fn a_directory_among_the_files_is_listed_with_its_error() {
    let dir = TempDir::new("browser-directory");
    let good = dir.join("good.json");
    sessions::save(&sessions::two_threads(), &good);
    let folder = dir.join("profiles.d");
    std::fs::create_dir_all(&folder).unwrap();
    let served = Served::start(&[&good, &folder], &["--port", "0"]);
    assert!(
        served.stderr_contains("profiles.d: a directory, not a profile file"),
        "{}",
        served.stderr()
    );
    let browser = Browser::start("directory", 1000, 600, 1.0);
    open(&browser, &served.url);
    assert!(text(&browser, "#meta").contains("demo-app"));
    choose_file(&browser, 1, "profiles.d");
    assert_eq!(
        browser.eval("return document.body.dataset.state;", json!([])),
        json!("error")
    );
    let error = text(&browser, "#error");
    assert!(
        error.contains("profiles.d: a directory, not a profile file"),
        "{error}"
    );
    browser.screenshot("20-directory-listed");
}

/// Drops a file named `name` on the page, its content the JavaScript expression `content` (a
/// string or a typed array), as a user's drag from the desktop does.
fn drop_file(browser: &Browser, content: &str, name: &str) {
    browser.eval(
        &format!(
            "const dt = new DataTransfer(); dt.items.add(new File([{content}], '{name}'));
             document.body.dispatchEvent(new DragEvent('drop', {{ dataTransfer: dt, bubbles: true, cancelable: true }}));"
        ),
        json!([]),
    );
}

/// A session opened from this computer, with the picker or by a drop on the page, is read in the
/// page's worker and added to the file list; nothing is sent. A file the page does not read says
/// why and what to do instead.
#[test]
fn a_file_opened_in_the_page_is_read_there_by_picker_or_drop() {
    let dir = TempDir::new("browser-open-file");
    let file = dir.join("demo.json");
    sessions::save(&sessions::two_threads(), &file);
    let local = dir.join("local.json.gz");
    sessions::save(&sessions::transforms(), &local);
    let served = Served::start(&[&file], &["--port", "0"]);
    let browser = Browser::start("open-file", 1100, 700, 1.0);
    open_ok(&browser, &served.url);
    browser.type_into(&browser.find("#open-input"), local.to_str().unwrap());
    browser.wait_for(
        "document.body.dataset.state === 'ready' && window.profViewer.framesNamed('_int_malloc').length === 1",
        LOAD,
        "the opened file",
    );
    assert_eq!(
        browser.eval(
            "return [...document.querySelectorAll('#file option')].map(o => o.textContent);",
            json!([])
        ),
        json!(["demo.json", "local.json.gz"])
    );
    assert_eq!(text(&browser, "#error"), "");
    assert!(text(&browser, "#meta").contains("transform-app"));
    browser.screenshot("r20-open-file");
    // The server's own file is one choice away.
    browser.eval("window.profViewer.state.update({file: 0});", json!([]));
    browser.wait_for(
        "document.body.dataset.state === 'ready' && window.profViewer.framesNamed('hot_loop').length === 2",
        LOAD,
        "the served file again",
    );
    // A drop on the page opens a file too: one the page does not read says what to do.
    drop_file(&browser, "'main;dropped_fn 3\\n'", "dropped.folded");
    browser.wait_for(
        "document.body.dataset.state === 'error'",
        LOAD,
        "the dropped file's error",
    );
    let error = text(&browser, "#error");
    assert!(
        error.starts_with("Cannot show dropped.folded")
            && error.contains("not a readable prof session")
            && error.contains("prof convert"),
        "{error}"
    );
    assert!(text(&browser, "#file").contains("dropped.folded"));
    // The error page keeps Open… (another file is one step away) and drops the Transforms
    // bar, which has no profile to transform.
    let displayed = browser.eval(
        "return ['#open-file', '#transforms'].map(s => document.querySelector(s).getClientRects().length > 0);",
        json!([]),
    );
    assert_eq!(displayed, json!([true, false]), "Open…, Transforms");
    browser.screenshot("r20-open-file-error");
    // The page decompresses a gzip file with the browser's own DecompressionStream (the wasm
    // module holds no inflater): one that is not gzip inside says so, by name.
    drop_file(
        &browser,
        "new Uint8Array([0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 3, 0xff, 0xff, 0xff])",
        "bad.json.gz",
    );
    browser.wait_for(
        "document.body.dataset.state === 'error' && document.querySelector('#error').textContent.includes('bad.json.gz')",
        LOAD,
        "the corrupt gzip file's error",
    );
    let error = text(&browser, "#error");
    assert!(
        error.contains(
            "bad.json.gz: not a readable prof session: gzip data the browser could not decompress"
        ) && !error.contains(".."),
        "{error}"
    );
    // The progress line no longer says the file is being fetched and decoded.
    assert_eq!(text(&browser, "#progress"), "");
    // Nothing went to the server but the page, its module and the served profile.
    let sent = browser.eval(
        "return performance.getEntriesByType('resource').map(e => e.name)
           .filter(n => n.includes('local') || n.includes('dropped') || n.includes('bad.json'));",
        json!([]),
    );
    assert_eq!(sent, json!([]));
    browser.screenshot("r20-open-file-error");
}
