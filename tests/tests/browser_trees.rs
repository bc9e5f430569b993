//! The call tree, sandwich and top functions views in a real headless Chromium, driven through
//! chromedriver against `prof serve`. The numbers shown are checked against the core and against
//! what `prof report` prints with the same thread. Screenshots go to `tests/artifacts/trees-*`.
//!
//! A missing browser fails these tests: they never skip.

use prof::aggregate::{format_percent, format_weight, CallTree, Filter};
use prof::session::{FrameSpec, Metadata, Mode, Session, SessionBuilder};
use prof_e2e::page::keys::{
    ARROW_DOWN, ARROW_LEFT, ARROW_RIGHT, ARROW_UP, END, ENTER, ESCAPE, HOME,
};
use prof_e2e::page::{console_problems, eventually, open_ok, report_rows, show, text, LOAD};
use prof_e2e::served::Served;
use prof_e2e::sessions::{self, MS};
use prof_e2e::webdriver::Browser;
use prof_e2e::TempDir;
use serde_json::{json, Value};
use std::collections::HashMap;
use std::time::Duration;

/// Gives the keyboard focus to the element `selector` names.
fn focus(browser: &Browser, selector: &str) {
    browser.eval(
        "document.querySelector(arguments[0]).focus();",
        json!([selector]),
    );
}

/// The call tree rows on screen: (level, name, [total, total %, self, self %], expanded).
fn tree_rows(browser: &Browser) -> Vec<(u64, String, Vec<String>, Value)> {
    let rows = browser.eval(
        "return window.profViewer.views.get('calltree').shownRows();",
        json!([]),
    );
    rows.as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["level"].as_u64().unwrap(),
                r["name"].as_str().unwrap().to_owned(),
                serde_json::from_value(r["cells"].clone()).unwrap(),
                r["expanded"].clone(),
            )
        })
        .collect()
}

/// Waits until the call tree shows `names` (in order) with all their texts.
fn wait_tree_names(browser: &Browser, names: &[&str]) -> Vec<(u64, String, Vec<String>, Value)> {
    let mut rows = Vec::new();
    eventually(&format!("the call tree rows {names:?}"), || {
        rows = tree_rows(browser);
        rows.iter().map(|r| r.1.as_str()).collect::<Vec<_>>() == names
            && rows.iter().all(|r| !r.2[0].is_empty())
    });
    rows
}

/// The top functions view's rows on screen: index, shown name, title, [self, self %, total,
/// total %].
fn table_view_rows(browser: &Browser) -> Vec<(u64, String, String, Vec<String>)> {
    let rows = browser.eval(
        "return window.profViewer.views.get('table').shownRows();",
        json!([]),
    );
    rows.as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["index"].as_u64().unwrap(),
                r["name"].as_str().unwrap().to_owned(),
                r["title"].as_str().unwrap().to_owned(),
                serde_json::from_value(r["cells"].clone()).unwrap(),
            )
        })
        .collect()
}

fn state(browser: &Browser, key: &str) -> Value {
    browser.eval(
        "return window.profViewer.state.current[arguments[0]];",
        json!([key]),
    )
}

/// What `prof report` prints for `file` with `args`, by function name: (total, total %, self,
/// self %).
fn report(file: &std::path::Path, args: &[&str]) -> HashMap<String, [String; 4]> {
    report_rows(file, &[&["--top", "100000"], args].concat())
        .into_iter()
        .map(|r| (r.name, [r.total, r.total_pct, r.self_weight, r.self_pct]))
        .collect()
}

/// The texts the core gives `node`: total, total %, self, self %.
fn core_texts(session: &Session, tree: &CallTree, node: prof::aggregate::NodeId) -> Vec<String> {
    let whole = tree.total_weight(tree.root());
    let t = &session.meta.sample_type;
    vec![
        format_weight(t, tree.total_weight(node)),
        format_percent(tree.total_weight(node), whole),
        format_weight(t, tree.self_weight(node)),
        format_percent(tree.self_weight(node), whole),
    ]
}

/// The call tree's rows equal the core's numbers and `prof report`'s for the same thread, and
/// the keyboard expands, collapses, moves and expands everything.
#[test]
fn the_call_tree_shows_the_cores_numbers_and_answers_the_keyboard() {
    let dir = TempDir::new("browser-calltree");
    let file = dir.join("demo.json");
    let session = sessions::two_threads();
    sessions::save(&session, &file);
    let served = Served::start(&[&file], &["--port", "0"]);
    let browser = Browser::start("trees-calltree", 1100, 700, 1.0);
    // Thread 0 is `main`.
    open_ok(&browser, &format!("{}#view=calltree&threads=0", served.url));
    // The tree opens along its heaviest path (main, compute, hot_loop).
    let rows = wait_tree_names(
        &browser,
        &["main", "compute", "hot_loop", "cold_path", "parse"],
    );
    let main_only = Filter::all().thread_named(&session, "main");
    let tree = CallTree::new(&session, &main_only);
    let main = tree.children(tree.root())[0];
    assert_eq!(rows[0].2, core_texts(&session, &tree, main));
    assert_eq!(rows[0].3, json!("true"));
    assert!(text(&browser, ".node-path").starts_with("Select a row"));

    // Down selects the first row; Left collapses a row (compute, then main), Right expands
    // main again; the children come heaviest first.
    focus(&browser, ".tree-rows");
    browser.press_key(ARROW_DOWN);
    eventually("main to be selected", || {
        state(&browser, "selected") == json!("main")
    });
    browser.press_key(ARROW_DOWN);
    eventually("compute to be selected", || {
        state(&browser, "selected") == json!("compute")
    });
    browser.press_key(ARROW_LEFT);
    wait_tree_names(&browser, &["main", "compute", "parse"]);
    browser.press_key(ARROW_UP);
    browser.press_key(ARROW_LEFT);
    wait_tree_names(&browser, &["main"]);
    browser.press_key(ARROW_RIGHT);
    let rows = wait_tree_names(&browser, &["main", "compute", "parse"]);
    let children = tree.children_by_weight(&session, main);
    for (row, &node) in rows[1..].iter().zip(&children) {
        assert_eq!(row.0, 2);
        assert_eq!(row.1, tree.name(&session, node));
        assert_eq!(row.2, core_texts(&session, &tree, node), "{}", row.1);
    }
    // Each function is called from one place on this thread, so its node's total is its total
    // in `prof report --thread main`, and its self is its self there.
    let printed = report(&file, &["--thread", "main"]);
    for row in &rows {
        assert_eq!(row.2, printed[&row.1], "{} against prof report", row.1);
    }
    // `*` expands everything below the selected row.
    browser.press_key("*");
    let expanded = [
        "main",
        "compute",
        "hot_loop",
        "cold_path",
        "parse",
        "tokenize",
        "alloc::vec::Vec<T>::push",
    ];
    let rows = wait_tree_names(&browser, &expanded);
    for row in &rows {
        assert_eq!(row.2, printed[&row.1], "{} against prof report", row.1);
    }
    browser.screenshot("trees-01-calltree-expanded");
    // Another tab and back: the rows stay expanded.
    browser.click(&browser.find("#tabs button[data-view=flame]"));
    eventually("the flame tab", || {
        state(&browser, "view") == json!("flame")
    });
    browser.click(&browser.find("#tabs button[data-view=calltree]"));
    eventually("the call tree tab", || {
        state(&browser, "view") == json!("calltree")
    });
    assert_eq!(wait_tree_names(&browser, &expanded).len(), expanded.len());
    focus(&browser, ".tree-rows");

    // Down twice: hot_loop; its path is in the state and shown; it is selected everywhere.
    browser.press_key(ARROW_DOWN);
    browser.press_key(ARROW_DOWN);
    eventually("hot_loop to be selected", || {
        state(&browser, "selected") == json!("hot_loop")
    });
    assert_eq!(
        state(&browser, "node"),
        json!(["main", "compute", "hot_loop"])
    );
    eventually("the path line", || {
        text(&browser, ".node-path") == "main → compute → hot_loop"
    });
    // Left steps out to compute; Enter collapses it.
    browser.press_key(ARROW_LEFT);
    eventually("compute to be selected", || {
        state(&browser, "selected") == json!("compute")
    });
    browser.press_key(ENTER);
    wait_tree_names(
        &browser,
        &[
            "main",
            "compute",
            "parse",
            "tokenize",
            "alloc::vec::Vec<T>::push",
        ],
    );
    // Up and Left on main collapses it.
    browser.press_key(ARROW_UP);
    eventually("main to be selected", || {
        state(&browser, "selected") == json!("main")
    });
    browser.press_key(ARROW_LEFT);
    wait_tree_names(&browser, &["main"]);

    // The selected node's path restores the expansion from the URL.
    open_ok(
        &browser,
        &format!(
            "{}#view=calltree&threads=0&node=main%1Fparse%1Ftokenize",
            served.url
        ),
    );
    wait_tree_names(
        &browser,
        &[
            "main",
            "compute",
            "parse",
            "tokenize",
            "alloc::vec::Vec<T>::push",
        ],
    );
    assert_eq!(
        text(&browser, ".tree-rows .row.cursor .label"),
        "tokenize",
        "the node from the URL is the selected row"
    );
    assert_eq!(text(&browser, ".node-path"), "main → parse → tokenize");
    browser.screenshot("trees-02-calltree-from-url");
    // Escape clears the selection: the node and its function.
    focus(&browser, ".tree-rows");
    browser.press_key("\u{E00C}");
    eventually("Escape to clear the node", || {
        text(&browser, ".node-path").starts_with("Select a row")
    });
    assert_eq!(state(&browser, "node"), json!([]));
    assert_eq!(state(&browser, "selected"), Value::Null);
    assert_eq!(console_problems(&browser), Vec::<String>::new());
}

/// The inverted tree's roots are the functions with self time, with the self column of the top
/// functions table (and of `prof report`) as their totals; below them, their callers.
#[test]
fn inverted_roots_equal_the_top_tables_self_column() {
    let session = sessions::two_threads();
    let shown = show(
        "trees-inverted",
        &session,
        "demo.json",
        (1100, 700),
        "#view=table",
    );
    let browser = &shown.browser;
    let file = &shown.file;
    let mut table = Vec::new();
    eventually("the top functions", || {
        table = table_view_rows(browser);
        table.len() == 9
    });
    let self_of: HashMap<String, Vec<String>> = table
        .iter()
        .map(|r| (r.2.clone(), r.3[..2].to_vec()))
        .collect();

    browser.click(&browser.find("#tabs button[data-view=calltree]"));
    browser.click(&browser.find(".tree-inverted"));
    eventually("the inverted tree", || {
        state(browser, "inverted") == json!(true)
    });
    // Roots: functions with self time, heaviest first.
    let expected_roots = [
        "hot_loop",
        "hash_block",
        "tokenize",
        "cold_path",
        "alloc::vec::Vec<T>::push",
        "compute",
    ];
    let rows = wait_tree_names(browser, &expected_roots);
    let printed = report(file, &[]);
    for row in &rows {
        // Total and self of a root are the function's self.
        assert_eq!(row.2[..2], self_of[&row.1][..], "{}", row.1);
        assert_eq!(row.2[2..], self_of[&row.1][..], "{}", row.1);
        assert_eq!(
            row.2[..2],
            printed[&row.1][2..],
            "{} against prof report",
            row.1
        );
    }
    // The roots add up to everything: 130 samples of 1 ms.
    let inverted = CallTree::new(&session, &Filter::all()).inverted(&session);
    let sum: u64 = inverted
        .children(inverted.root())
        .iter()
        .map(|&r| inverted.total_weight(r))
        .sum();
    assert_eq!(sum, 130 * MS);

    // Below hot_loop: its callers, compute (57 ms), then main (50) and worker_main (7).
    focus(browser, ".tree-rows");
    browser.press_key(ARROW_DOWN);
    browser.press_key("*");
    let rows = wait_tree_names(
        browser,
        &[
            "hot_loop",
            "compute",
            "main",
            "worker_main",
            "hash_block",
            "tokenize",
            "cold_path",
            "alloc::vec::Vec<T>::push",
            "compute",
        ],
    );
    assert_eq!(rows[1].2, ["57.0 ms", "43.8%", "0 ns", "0.0%"]);
    assert_eq!(rows[2].2[..2], ["50.0 ms", "38.5%"]);
    assert_eq!(rows[3].2[..2], ["7.00 ms", "5.4%"]);
    // One key at a time, each once the page has shown the last (a busy machine may be
    // slower to render than WebDriver is to type).
    browser.press_key(ARROW_DOWN);
    eventually("compute selected in the inverted tree", || {
        text(browser, ".node-path") == "hot_loop ← compute"
    });
    browser.press_key(ARROW_DOWN);
    eventually("the path in the inverted tree", || {
        text(browser, ".node-path") == "hot_loop ← compute ← main"
    });
    browser.screenshot("trees-03-inverted");

    // The inverted mode is in the URL: a reload shows it again, with the selected node.
    assert!(browser
        .eval("return location.hash;", json!([]))
        .as_str()
        .unwrap()
        .contains("inverted=1"));
    browser.eval("location.reload();", json!([]));
    std::thread::sleep(Duration::from_millis(200));
    browser.wait_for(
        "document.body.dataset.state === 'ready'",
        LOAD,
        "the reloaded page",
    );
    wait_tree_names(
        browser,
        &[
            "hot_loop",
            "compute",
            "main",
            "worker_main",
            "hash_block",
            "tokenize",
            "cold_path",
            "alloc::vec::Vec<T>::push",
            "compute",
        ],
    );
    assert_eq!(text(browser, ".tree-rows .row.cursor .label"), "main");
}

/// A profile whose call tree is `n` functions, each calling `n`, each calling `n`: one sample
/// under each of the n³ leaves, n + n² + n³ nodes in all.
fn wide_tree(n: u64) -> Session {
    let mut b = SessionBuilder::new(Metadata {
        program: "wide-app".into(),
        timer: "perf_event".into(),
        ..Metadata::default()
    });
    let t = b.thread(1, "main");
    let level = |b: &mut SessionBuilder, prefix: &str| -> Vec<_> {
        (0..n)
            .map(|i| b.intern_frame(&FrameSpec::named(&format!("{prefix}_{i:02}"))))
            .collect()
    };
    let (outer, middle, inner) = (
        level(&mut b, "outer"),
        level(&mut b, "middle"),
        level(&mut b, "inner"),
    );
    let mut time = 0;
    for (i, &o) in outer.iter().enumerate() {
        for &m in &middle {
            for (k, &f) in inner.iter().enumerate() {
                let stack = b.intern_stack_path(&[o, m, f]).expect("not empty");
                b.push_sample(stack, t, time, (1 + i as u64 + k as u64) * MS);
                time += MS;
            }
        }
    }
    b.finish()
}

/// A call tree of more than 100,000 nodes expands whole at once and scrolls without drawing
/// more than the rows on screen.
#[test]
fn a_call_tree_of_100k_nodes_expands_and_scrolls_fast() {
    let dir = TempDir::new("browser-calltree-large");
    let file = dir.join("large.json");
    let session = wide_tree(50);
    let nodes = CallTree::new(&session, &Filter::all()).len();
    assert!(nodes > 100_000, "{nodes} nodes");
    sessions::save(&session, &file);
    let served = Served::start(&[&file], &["--port", "0"]);
    let browser = Browser::start("trees-large", 1100, 700, 1.0);
    open_ok(&browser, &format!("{}#view=calltree", served.url));
    eventually("the call tree", || !tree_rows(&browser).is_empty());
    // `*` with nothing selected expands every row; the expansion and the redraw are
    // synchronous, so they are timed here in the page.
    let timing = browser.eval(
        "const body = document.querySelector('.tree-rows');
         const view = window.profViewer.views.get('calltree');
         let t = performance.now();
         body.dispatchEvent(new KeyboardEvent('keydown', { key: '*', bubbles: true }));
         const expand = performance.now() - t;
         body.scrollTop = body.scrollHeight / 2;
         t = performance.now();
         view.rows.refresh();
         const scroll = performance.now() - t;
         return [expand, scroll, view.visible.length, body.querySelectorAll('.row').length];",
        json!([]),
    );
    let (expand_ms, scroll_ms) = (timing[0].as_f64().unwrap(), timing[1].as_f64().unwrap());
    let shown = timing[2].as_u64().unwrap();
    let drawn = timing[3].as_u64().unwrap();
    eprintln!("{nodes} nodes: expand all {expand_ms:.1} ms, scroll redraw {scroll_ms:.1} ms, {drawn} rows drawn");
    assert_eq!(
        shown as usize,
        nodes - 1,
        "every node but the root is a row"
    );
    assert!(drawn < 100, "{drawn} rows drawn");
    // Generous bounds for a loaded machine; a non-virtualized table takes seconds here.
    assert!(expand_ms < 500.0, "expanding took {expand_ms} ms");
    assert!(scroll_ms < 100.0, "a scrolled redraw took {scroll_ms} ms");
    eventually("the texts of the rows in the middle", || {
        let rows = tree_rows(&browser);
        !rows.is_empty() && rows.iter().all(|r| !r.2[0].is_empty()) && rows[0].0 > 1
    });
    browser.screenshot("trees-12-large-expanded");
}

/// A function picked in the table shows in the sandwich with its callers and callees, and its
/// total is the one `prof report` prints; clicking a callee re-centres the sandwich on it.
#[test]
fn the_sandwich_shows_callers_and_callees_of_a_function_picked_in_the_table() {
    let shown = show(
        "trees-sandwich",
        &sessions::two_threads(),
        "demo.json",
        (1100, 700),
        "#view=sandwich",
    );
    let browser = &shown.browser;
    let file = &shown.file;
    assert!(
        text(browser, ".sandwich-empty").contains("No function is selected"),
        "{}",
        text(browser, ".sandwich-empty")
    );
    browser.screenshot("trees-04-sandwich-empty");

    // Pick compute in the table, by keyboard.
    browser.click(&browser.find("#tabs button[data-view=table]"));
    let mut rows = Vec::new();
    eventually("the top functions", || {
        rows = table_view_rows(browser);
        rows.len() == 9
    });
    let at = rows.iter().position(|r| r.2 == "compute").unwrap();
    focus(browser, ".table-rows");
    browser.press_key(HOME);
    for _ in 0..at {
        browser.press_key(ARROW_DOWN);
    }
    browser.press_key(ENTER);
    eventually("compute to be selected", || {
        state(browser, "selected") == json!("compute")
    });

    browser.click(&browser.find("#tabs button[data-view=sandwich]"));
    eventually("the sandwich of compute", || {
        text(browser, ".sandwich-function .name") == "compute"
    });
    let printed = report(file, &[]);
    let compute = &printed["compute"];
    assert_eq!(text(browser, ".sandwich-function .total-time"), compute[0]);
    assert_eq!(text(browser, ".sandwich-function .total-pct"), compute[1]);
    assert_eq!(text(browser, ".sandwich-function .self-time"), compute[2]);
    assert_eq!(text(browser, ".sandwich-function .self-pct"), compute[3]);
    let frames = |side: &str, name: &str| {
        browser.eval(
            "return window.profViewer.views.get('sandwich').framesNamed(arguments[0], arguments[1]);",
            json!([side, name]),
        )
    };
    let mut callers = Value::Null;
    eventually("the callers graph", || {
        callers = frames("callers", "main");
        callers.as_array().is_some_and(|a| !a.is_empty())
    });
    assert_eq!(
        frames("callers", "worker_main").as_array().unwrap().len(),
        1
    );
    assert_eq!(frames("callees", "hot_loop").as_array().unwrap().len(), 1);
    assert_eq!(frames("callees", "cold_path").as_array().unwrap().len(), 1);
    assert!(frames("callees", "main").as_array().unwrap().is_empty());
    // Both graphs meet at the function: the bottom row of the callers, the top of the callees.
    let base = frames("callers", "compute")[0].clone();
    let top = frames("callees", "compute")[0].clone();
    let callers_height = browser
        .eval(
            "return document.querySelector('.sandwich-callers canvas').clientHeight;",
            json!([]),
        )
        .as_f64()
        .unwrap();
    assert!(
        base["y"].as_f64().unwrap() > callers_height - 25.0,
        "{base}"
    );
    assert_eq!(top["y"].as_f64().unwrap(), 0.0, "{top}");
    // main calls compute for 65 of its 72 ms: its frame is 65/72 of the width.
    let ratio = callers[0]["width"].as_f64().unwrap() / base["width"].as_f64().unwrap();
    assert!((ratio - 65.0 / 72.0).abs() < 0.01, "{ratio}");
    browser.screenshot("trees-05-sandwich-compute");

    // Clicking hot_loop below re-centres the sandwich on it.
    let hot = frames("callees", "hot_loop")[0].clone();
    browser.pointer_at(
        &browser.find(".sandwich-callees canvas"),
        hot["x"].as_f64().unwrap() + 5.0,
        hot["y"].as_f64().unwrap() + 5.0,
        true,
    );
    eventually("the sandwich of hot_loop", || {
        text(browser, ".sandwich-function .name") == "hot_loop"
    });
    assert_eq!(state(browser, "selected"), json!("hot_loop"));
    assert_eq!(
        text(browser, ".sandwich-function .total-time"),
        printed["hot_loop"][0]
    );
    eventually("hot_loop's callers", || {
        frames("callers", "compute")
            .as_array()
            .is_some_and(|a| a.len() == 1)
    });
    assert!(frames("callees", "compute").as_array().unwrap().is_empty());
    browser.screenshot("trees-06-sandwich-hot-loop");
    assert_eq!(console_problems(browser), Vec::<String>::new());
}

/// The failures a page can show: the page's own (`#error`) and each view's (`.view-error`).
fn failures(browser: &Browser) -> Value {
    browser.eval(
        "return [document.body.dataset.state === 'error' ? document.querySelector('#error').textContent : '',
                 ...[...document.querySelectorAll('.view-error')].filter(e => !e.hidden).map(e => e.textContent)]
                .filter(t => t);",
        json!([]),
    )
}

/// Either graph of the sandwich zooms around the pointer with the wheel and pans with a drag, as
/// the flame graph does, with the part shown kept in the URL; Escape shows them whole again,
/// and choosing another function starts it whole.
#[test]
fn the_sandwich_graphs_zoom_with_the_wheel_and_pan_with_a_drag() {
    let shown = show(
        "trees-sandwich-zoom",
        &sessions::two_threads(),
        "demo.json",
        (1100, 700),
        "#view=sandwich&selected=compute",
    );
    let browser = &shown.browser;
    let frames = |side: &str, name: &str| {
        browser.eval(
            "return window.profViewer.views.get('sandwich').framesNamed(arguments[0], arguments[1]);",
            json!([side, name]),
        )[0]
            .clone()
    };
    eventually("the callees graph", || {
        frames("callees", "hot_loop").is_object()
    });
    let hot = frames("callees", "hot_loop");
    let before = hot["width"].as_f64().unwrap();
    let (hx, hy) = (
        hot["x"].as_f64().unwrap() + before / 2.0,
        hot["y"].as_f64().unwrap() + 5.0,
    );
    let callees = browser.find(".sandwich-callees canvas");
    browser.wheel_at(&callees, hx, hy, -400);
    browser.wait_for(
        "location.hash.includes('ewin=') || document.body.dataset.state === 'error'",
        LOAD,
        "the wheel zoom in the URL",
    );
    assert_eq!(failures(browser), json!([]));
    eventually("hot_loop to grow", || {
        frames("callees", "hot_loop")["width"]
            .as_f64()
            .is_some_and(|w| w > before * 1.5)
    });
    let zoomed = frames("callees", "hot_loop");
    let centre = zoomed["x"].as_f64().unwrap() + zoomed["width"].as_f64().unwrap() / 2.0;
    // The point under the pointer stays under it.
    assert!((centre - hx).abs() < 0.2 * before, "{centre} vs {hx}");
    browser.screenshot("trees-07-sandwich-wheel-zoom");

    // A drag to the right moves the graph right; it is not a click (compute stays selected).
    let x0 = zoomed["x"].as_f64().unwrap();
    browser.drag(&callees, (hx, hy), (hx + 200.0, hy), 8);
    eventually("the pan", || {
        frames("callees", "hot_loop")["x"]
            .as_f64()
            .is_some_and(|x| x > x0 + 100.0)
    });
    assert_eq!(failures(browser), json!([]));
    assert_eq!(state(browser, "selected"), json!("compute"));

    // The callers graph zooms on its own.
    let main = frames("callers", "main");
    let main_width = main["width"].as_f64().unwrap();
    browser.wheel_at(
        &browser.find(".sandwich-callers canvas"),
        main["x"].as_f64().unwrap() + 5.0,
        main["y"].as_f64().unwrap() + 5.0,
        -400,
    );
    eventually("main to grow in the callers graph", || {
        frames("callers", "main")["width"]
            .as_f64()
            .is_some_and(|w| w > main_width * 1.2)
    });
    let hash = browser.eval("return location.hash;", json!([]));
    assert!(hash.as_str().unwrap().contains("cwin="), "{hash}");

    // Escape shows both whole again, before it clears the selection.
    browser.press_key(ESCAPE);
    browser.wait_for(
        "!location.hash.includes('cwin=') && !location.hash.includes('ewin=')",
        LOAD,
        "Escape to show the graphs whole",
    );
    assert_eq!(state(browser, "selected"), json!("compute"));
    eventually("hot_loop at its width again", || {
        frames("callees", "hot_loop")["width"]
            .as_f64()
            .is_some_and(|w| (w - before).abs() < 1.0)
    });
    // Another function's sandwich starts whole.
    browser.wheel_at(&callees, hx, hy, -400);
    browser.wait_for("location.hash.includes('ewin=')", LOAD, "the zoom again");
    browser.eval(
        "window.profViewer.state.update({ selected: 'main' });",
        json!([]),
    );
    browser.wait_for(
        "location.hash.includes('selected=main') && !location.hash.includes('ewin=')",
        LOAD,
        "main's sandwich, whole",
    );
    assert_eq!(failures(browser), json!([]));
    assert_eq!(console_problems(browser), Vec::<String>::new());
}

/// The names of the rows `selector` finds that are marked as a search's matches, and whether
/// the mark is drawn (the row or its name cell has a box shadow). A call tree row's name is its
/// label's `data-name` (its title, the hover, adds the frame's place and module).
fn marked(browser: &Browser, selector: &str) -> Vec<(String, bool)> {
    let v = browser.eval(
        "return [...document.querySelectorAll(arguments[0])].filter(r => r.classList.contains('match'))
           .map(r => { const name = r.querySelector('.label') ?? r.querySelector('.name');
                       return [name.dataset.name ?? name.title, [r, name].some(e => getComputedStyle(e).boxShadow !== 'none')]; });",
        json!([selector]),
    );
    serde_json::from_value(v).unwrap()
}

/// A search marks the functions it matches in every view: the call tree's rows, the Top
/// functions' and the flame graph's side table, and the sandwich's graphs, not only the flame
/// graph and the timeline.
#[test]
fn a_search_marks_its_matches_in_the_trees_the_tables_and_the_sandwich() {
    let shown = show(
        "trees-search-marks",
        &sessions::two_threads(),
        "demo.json",
        (1100, 700),
        "#search=%5Ehot_",
    );
    let browser = &shown.browser;
    let hot = vec![("hot_loop".to_owned(), true)];
    eventually("the side table's mark", || {
        marked(browser, "#top-table tbody tr") == hot
    });
    browser.click(&browser.find("#tabs button[data-view=table]"));
    eventually("the Top functions' mark", || {
        marked(browser, "section[data-view=table] .row") == hot
    });
    browser.click(&browser.find("#tabs button[data-view=calltree]"));
    // The tree opens along its heaviest path, main > compute > hot_loop.
    eventually("the call tree's mark", || {
        marked(browser, "section[data-view=calltree] .row") == hot
    });
    browser.screenshot("trees-13-search-marks");
    // Another search moves the marks; none, none at all.
    browser.eval(
        "window.profViewer.state.update({ search: '^compute$' });",
        json!([]),
    );
    eventually("the call tree's new mark", || {
        marked(browser, "section[data-view=calltree] .row") == [("compute".to_owned(), true)]
    });
    browser.eval("window.profViewer.state.update({ search: '' });", json!([]));
    eventually("no marks", || {
        marked(browser, "section[data-view=calltree] .row").is_empty()
    });
    browser.click(&browser.find("#tabs button[data-view=flame]"));
    eventually("no side table marks", || {
        marked(browser, "#top-table tbody tr").is_empty()
    });
    // The sandwich of compute marks hot_loop among its callees, and only it.
    browser.eval(
        "window.profViewer.state.update({ search: '^hot_', selected: 'compute', view: 'sandwich' });",
        json!([]),
    );
    let sandwich_marks = |side: &str| {
        browser.eval(
            "const v = window.profViewer.views.get('sandwich');
             const l = v.layouts[arguments[0]], g = arguments[0] === 'callers' ? v.callers : v.callees;
             if (!l || !g.highlighting) return [];
             return Array.from(l.highlight, (h, i) => h ? l.names[l.func[i]] : null).filter(n => n);",
            json!([side]),
        )
    };
    eventually("the sandwich's mark", || {
        sandwich_marks("callees") == json!(["hot_loop"])
    });
    assert_eq!(sandwich_marks("callers"), json!([]));
    browser.screenshot("trees-14-sandwich-search");
    assert_eq!(console_problems(browser), Vec::<String>::new());
}

/// A profile of `many-app` whose `main` calls 500 functions, `app::module_NNN::function_NNN`
/// weighing NNN+1 ms each, and one with a 300-character name weighing 1 s.
fn many_functions(long_name: &str) -> Session {
    let mut b = SessionBuilder::new(Metadata {
        program: "many-app".into(),
        mode: Mode::Cpu,
        timer: "perf_event".into(),
        ..Metadata::default()
    });
    let t = b.thread(1, "main");
    let main = b.intern_frame(&FrameSpec::named("main"));
    let mut time = 0;
    for i in 0..500u64 {
        let f = b.intern_frame(&FrameSpec::named(&format!(
            "app::module_{i:03}::function_{i:03}"
        )));
        let stack = b.intern_stack_path(&[main, f]).expect("not empty");
        b.push_sample(stack, t, time, (i + 1) * MS);
        time += MS;
    }
    let long = b.intern_frame(&FrameSpec::named(long_name));
    let stack = b.intern_stack_path(&[main, long]).expect("not empty");
    b.push_sample(stack, t, time, 1000 * MS);
    b.finish()
}

/// The top functions view lists every function (virtualized past 50 rows), sorts each column
/// both ways, filters by substring and regex, and cuts a long name in the middle, whole on
/// hover; the flame view's side table cuts it the same way.
#[test]
fn the_table_view_sorts_both_ways_filters_scrolls_and_elides_long_names() {
    let dir = TempDir::new("browser-table-view");
    let file = dir.join("many.json");
    let mut long_name = String::from("very_long_crate::");
    while long_name.len() < 280 {
        long_name.push_str("deeply_nested_module::");
    }
    long_name.push_str("Type<T>::the_function_end");
    long_name.truncate(300 - "::tail_end".len());
    long_name.push_str("::tail_end");
    assert_eq!(long_name.len(), 300);
    sessions::save(&many_functions(&long_name), &file);
    let served = Served::start(&[&file], &["--port", "0"]);
    let browser = Browser::start("trees-table", 1200, 700, 1.0);
    open_ok(&browser, &format!("{}#view=table", served.url));
    eventually("the summary", || {
        text(&browser, ".table-summary") == "502 functions"
    });
    let rows = table_view_rows(&browser);
    // Heaviest self first: the long one (1 s), then function_499 (500 ms)...
    assert_eq!(rows[0].2, long_name);
    assert_eq!(rows[1].2, "app::module_499::function_499");
    assert_eq!(rows[1].3[0], "500 ms");
    assert!(
        rows.len() < 60,
        "only the rows on screen are drawn: {}",
        rows.len()
    );

    // The long name is cut in the middle, keeping both ends, and is whole in its title.
    let shown = &rows[0].1;
    assert!(shown.contains('…'), "{shown}");
    assert!(shown.chars().count() < 300);
    let (head, tail) = shown.split_once('…').unwrap();
    assert!(long_name.starts_with(head) && head.len() > 10, "{shown}");
    assert!(
        long_name.ends_with(tail) && tail.ends_with("::tail_end"),
        "{shown}"
    );
    let fits = browser.eval(
        "const c = document.querySelector('.table-rows .row .name'); return c.scrollWidth <= c.clientWidth;",
        json!([]),
    );
    assert_eq!(fits, json!(true), "the cut name fits its cell on one line");
    // Hover shows it whole.
    let cell = browser.find(".table-rows .row .name");
    browser.pointer_at(&cell, 20.0, 8.0, false);
    let hovered = browser.eval(
        "return document.querySelector('.table-rows .row .name:hover')?.title;",
        json!([]),
    );
    assert_eq!(hovered, json!(long_name));
    // The copy button copies it whole (or says the browser refused).
    browser.click(&browser.find(".table-rows .row .copy"));
    eventually("the copy to be reported", || {
        !text(&browser, ".table-status").is_empty()
    });
    assert_eq!(text(&browser, ".table-status"), "Copied the name.");
    browser.screenshot("trees-07-table");

    // End reaches the last of the 502 rows: past the first 50, drawn on demand.
    focus(&browser, ".table-rows");
    browser.press_key(END);
    eventually("the last row", || {
        table_view_rows(&browser).iter().any(|r| r.0 == 501)
    });
    let rows = table_view_rows(&browser);
    let last = rows.iter().find(|r| r.0 == 501).unwrap();
    assert_eq!(last.1, "main", "main has no self time: last by self");
    assert!(
        rows.iter().all(|r| r.0 > 400),
        "rows near the top are not drawn"
    );
    browser.press_key(ENTER);
    eventually("main to be selected", || {
        state(&browser, "selected") == json!("main")
    });
    browser.screenshot("trees-08-table-end");

    let sort = |column: &str| {
        browser.click(&browser.find(&format!(".table-cols button[data-sort={column}]")));
    };
    let first_names = |n: usize| -> Vec<String> {
        table_view_rows(&browser)
            .into_iter()
            .filter(|r| (r.0 as usize) < n)
            .map(|r| r.2)
            .collect()
    };
    let wait_first = |expected: &[&str]| {
        eventually(&format!("the first rows {expected:?}"), || {
            first_names(expected.len()) == expected
        });
    };
    browser.eval(
        "document.querySelector('.table-rows').scrollTop = 0;",
        json!([]),
    );
    // Self, the other way: lightest first.
    sort("self");
    wait_first(&["main", "app::module_000::function_000"]);
    assert_eq!(
        browser.eval(
            "return document.querySelector('.table-cols [data-sort=self]').parentElement.getAttribute('aria-sort');",
            json!([])
        ),
        json!("ascending")
    );
    // Name: A to Z, then Z to A.
    sort("name");
    wait_first(&[
        "app::module_000::function_000",
        "app::module_001::function_001",
    ]);
    sort("name");
    wait_first(&[long_name.as_str(), "main"]);
    // Total: heaviest first (main holds everything), then lightest first.
    sort("total");
    wait_first(&["main", long_name.as_str()]);
    sort("total");
    wait_first(&[
        "app::module_000::function_000",
        "app::module_001::function_001",
    ]);
    browser.screenshot("trees-09-table-sorted");

    // Filter: a substring (its letters in either case), then a regex, then a broken regex.
    browser.type_into(&browser.find(".table-filter"), "Function_04");
    eventually("the filter", || {
        text(&browser, ".table-summary") == "10 of 502 functions"
    });
    wait_first(&["app::module_040::function_040"]);
    browser.eval("const f = document.querySelector('.table-filter'); f.value = ''; f.dispatchEvent(new Event('input'));", json!([]));
    browser.click(&browser.find(".table-regex"));
    browser.type_into(&browser.find(".table-filter"), "^app::module_1.9::");
    eventually("the regex filter", || {
        text(&browser, ".table-summary") == "10 of 502 functions"
    });
    let names: Vec<String> = table_view_rows(&browser).into_iter().map(|r| r.2).collect();
    assert_eq!(names.len(), 10);
    assert!(
        names
            .iter()
            .all(|n| n.starts_with("app::module_1") && n.ends_with("9")),
        "{names:?}"
    );
    browser.screenshot("trees-10-table-filtered");
    // The order and the filter are in the URL: the same URL opened again shows the same rows.
    let url = browser.eval("return location.href;", json!([]));
    let url = url.as_str().unwrap().to_owned();
    assert!(
        url.contains("tsort=total-asc") && url.contains("tregex=1") && url.contains("tfilter="),
        "{url}"
    );
    browser.goto("about:blank");
    open_ok(&browser, &url);
    eventually("the filtered rows again", || {
        text(&browser, ".table-summary") == "10 of 502 functions"
    });
    assert_eq!(
        browser.eval(
            "return [document.querySelector('.table-filter').value, document.querySelector('.table-regex').checked];",
            json!([])
        ),
        json!(["^app::module_1.9::", true])
    );
    eventually("the same order", || {
        table_view_rows(&browser)
            .into_iter()
            .map(|r| r.2)
            .collect::<Vec<_>>()
            == names
    });
    browser.type_into(&browser.find(".table-filter"), "(");
    eventually("the invalid regex", || {
        text(&browser, ".table-status").starts_with("invalid regex")
    });

    // The flame view's side table cuts the long name in the middle too.
    browser.click(&browser.find("#tabs button[data-view=flame]"));
    eventually("the side table", || {
        browser.eval(
            "return document.querySelector('#top-table tbody td.name')?.title;",
            json!([]),
        ) == json!(long_name)
    });
    let side = text(&browser, "#top-table tbody td.name");
    assert!(
        side.contains('…') && long_name.ends_with(side.split_once('…').unwrap().1),
        "{side}"
    );
    let height = browser.eval(
        "const c = document.querySelector('#top-table tbody td.name'); return [c.scrollWidth <= c.clientWidth, c.getBoundingClientRect().height];",
        json!([]),
    );
    assert_eq!(height[0], json!(true), "{height}");
    assert!(height[1].as_f64().unwrap() < 30.0, "one line: {height}");
    browser.screenshot("trees-11-flame-side-table");
    assert_eq!(console_problems(&browser), Vec::<String>::new());
}

#[test]
fn the_call_tree_opens_along_its_heaviest_path() {
    let shown = show(
        "trees-heaviest",
        &sessions::two_threads(),
        "demo.json",
        (1100, 700),
        "#view=calltree",
    );
    let browser = &shown.browser;
    // main (93 ms) > worker_main (37 ms); under main, compute (65 ms) > parse (28 ms); under
    // compute, hot_loop (50 ms) > cold_path (10 ms). Only that path is open.
    let rows = wait_tree_names(
        browser,
        &[
            "main",
            "compute",
            "hot_loop",
            "cold_path",
            "parse",
            "worker_main",
        ],
    );
    let expanded: Vec<Value> = rows.iter().map(|r| r.3.clone()).collect();
    assert_eq!(
        expanded,
        [
            json!("true"),
            json!("true"),
            Value::Null,
            Value::Null,
            json!("false"),
            json!("false")
        ]
    );
    // Nothing is selected by it.
    assert_eq!(state(browser, "selected"), Value::Null);
    // Another thread set is a new tree, opened along its own heaviest path: the worker's.
    browser.eval("window.profViewer.state.update({threads: [1]});", json!([]));
    wait_tree_names(browser, &["worker_main", "hash_block", "compute"]);
    browser.screenshot("r20-calltree-heaviest");
}

/// Showing the call tree's tab again adopts the path in the state with a round trip to the
/// worker, and the table's reloads its rows; rows picked by keys during that trip stay picked.
/// On a busy machine the trip took long enough that the old row won and the keys were lost
/// (seen in CI).
#[test]
fn keys_pressed_while_the_tab_shows_again_are_kept() {
    let shown = show(
        "trees-keys-during-redraw",
        &sessions::two_threads(),
        "demo.json",
        (1100, 700),
        "#view=calltree&threads=0",
    );
    let browser = &shown.browser;
    wait_tree_names(
        browser,
        &["main", "compute", "hot_loop", "cold_path", "parse"],
    );
    focus(browser, ".tree-rows");
    browser.press_key(ARROW_DOWN);
    eventually("main to be selected", || {
        state(browser, "selected") == json!("main")
    });
    browser.click(&browser.find("#tabs button[data-view=flame]"));
    eventually("the flame tab", || state(browser, "view") == json!("flame"));
    // Every answer of the worker now comes 400 ms late, in the order asked: a busy machine.
    browser.eval(
        "const ctx = window.profViewer.views.get('calltree').ctx;
         const ask = ctx.ask;
         ctx.ask = (method, args) =>
           new Promise((r) => setTimeout(r, 400)).then(() => ask(method, args));",
        json!([]),
    );
    browser.click(&browser.find("#tabs button[data-view=calltree]"));
    focus(browser, ".tree-rows");
    browser.press_key(ARROW_DOWN);
    browser.press_key(ARROW_DOWN);
    eventually("hot_loop to be selected", || {
        state(browser, "selected") == json!("hot_loop")
    });
    assert_eq!(
        state(browser, "node"),
        json!(["main", "compute", "hot_loop"])
    );
    // It stays selected once every answer is in.
    std::thread::sleep(Duration::from_millis(1500));
    assert_eq!(state(browser, "selected"), json!("hot_loop"));
    eventually("the path line", || {
        text(browser, ".node-path") == "main → compute → hot_loop"
    });

    // The top functions table reloads its rows when shown again: its cursor stays where the
    // keys moved it during the round trip (the answer arrives with the same rows).
    browser.click(&browser.find("#tabs button[data-view=table]"));
    eventually("the table's rows", || table_view_rows(browser).len() > 3);
    let rows = table_view_rows(browser);
    focus(browser, ".table-rows");
    browser.press_key(ARROW_DOWN);
    browser.click(&browser.find("#tabs button[data-view=flame]"));
    eventually("the flame tab", || state(browser, "view") == json!("flame"));
    browser.click(&browser.find("#tabs button[data-view=table]"));
    focus(browser, ".table-rows");
    browser.press_key(ARROW_DOWN);
    browser.press_key(ARROW_DOWN);
    std::thread::sleep(Duration::from_millis(1500));
    browser.press_key(ENTER);
    eventually("the third row's function to be selected", || {
        state(browser, "selected") == json!(rows[2].2)
    });
    assert_eq!(console_problems(browser), Vec::<String>::new());
}
