//! The Source view in a real headless Chromium, driven through chromedriver against `prof serve
//! --source-root` (a temp directory made here) and the single-file viewer: the selected
//! function's lines with the numbers `prof convert --to source` prints for them, the text from
//! the server, and one plain line where the text is not available. Screenshots go to
//! `tests/artifacts/source-*`.
//!
//! A missing browser fails these tests: they never skip.

use prof::session::{FrameSpec, Metadata, Mode, Session, SessionBuilder};
use prof_e2e::page::keys::{ARROW_DOWN, HOME};
use prof_e2e::page::{console_problems, eventually, open_ok, LOAD};
use prof_e2e::served::Served;
use prof_e2e::sessions::{self, MS};
use prof_e2e::webdriver::Browser;
use prof_e2e::TempDir;
use serde_json::{json, Value};
use std::collections::HashMap;

const WORK_RS: &str = "// work.rs\nfn work() {\n    let mut x = 0; // hot\n    x += 1;\n    hash(x);\n}\nfn hash(x: u64) -> u64 { x * 31 }\n";

/// `source-app`: `work` at `src/work.rs:3` (6 ms, its own time), at `src/work.rs:5` calling
/// `hash` (`src/work.rs:7`, 3 ms) and inlined from `gone/inl.rs:2`, a file that does not exist
/// (1 ms); every sample under `main` (`main.rs:1`). Samples of 1 ms, one thread.
fn session() -> Session {
    let mut b = SessionBuilder::new(Metadata {
        program: "source-app".into(),
        mode: Mode::Cpu,
        duration_ns: 10 * MS,
        requested_interval_ns: MS,
        achieved_interval_ns: MS,
        ..Metadata::default()
    });
    let at = |name, file, line| FrameSpec {
        name,
        file: Some(file),
        line: Some(line),
        ..FrameSpec::default()
    };
    let main = b.intern_frame(&at("main", "main.rs", 1));
    let work3 = b.intern_frame(&at("work", "src/work.rs", 3));
    let work5 = b.intern_frame(&at("work", "src/work.rs", 5));
    let hash = b.intern_frame(&at("hash", "src/work.rs", 7));
    let inlined = b.intern_frame(&at("work", "gone/inl.rs", 2));
    let thread = b.thread(1, "main");
    let mut time = 0;
    for (path, count) in [
        (vec![main, work3], 6),
        (vec![main, work5, hash], 3),
        (vec![main, inlined], 1),
    ] {
        let stack = b.intern_stack_path(&path).unwrap();
        for _ in 0..count {
            b.push_sample(stack, thread, time, MS);
            time += MS;
        }
    }
    b.finish()
}

/// The session saved in `dir`, and the source root beside it holding `src/work.rs` (not
/// `gone/inl.rs`).
fn files(dir: &TempDir) -> (std::path::PathBuf, std::path::PathBuf) {
    let file = dir.join("source.json");
    sessions::save(&session(), &file);
    let root = dir.join("root");
    std::fs::create_dir_all(root.join("src")).unwrap();
    std::fs::write(root.join("src/work.rs"), WORK_RS).unwrap();
    (file, root)
}

/// What `prof ARGS` prints as source annotation (`prof report --source NAME`, `prof convert
/// --to source`), by (file, line): (self, total), each as `text pct` the way the page shows it.
fn cli_source(args: &[&str]) -> HashMap<(String, u32), (String, String)> {
    let out = prof_e2e::prof(args);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let mut rows = HashMap::new();
    let mut current = String::new();
    for line in text.lines() {
        if let Some(head) = line.strip_prefix("== ") {
            current = head.rsplit_once(" (").unwrap().0.to_owned();
            continue;
        }
        let parts: Vec<&str> = line.splitn(3, '|').collect();
        let (Some(weights), Some(number)) = (parts.first(), parts.get(1)) else {
            continue;
        };
        let Ok(number) = number.trim().parse::<u32>() else {
            continue;
        };
        // `total (pct) self (pct)`
        let cells: Vec<String> = weights
            .split(')')
            .filter(|c| !c.trim().is_empty())
            .map(|c| {
                let (value, pct) = c.split_once('(').unwrap();
                format!("{} {}", value.trim(), pct.trim())
            })
            .collect();
        if let [total, own] = &cells[..] {
            rows.insert((current.clone(), number), (own.clone(), total.clone()));
        }
    }
    assert!(!rows.is_empty(), "no weighted lines in:\n{text}");
    rows
}

/// The Source view's weighted rows once drawn: (file, line, self, total, code).
fn shown_rows(browser: &Browser) -> Vec<(String, u32, String, String, String)> {
    let rows = browser.eval(
        "return window.profViewer.views.get('source').rows();",
        json!([]),
    );
    rows.as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["file"].as_str().unwrap().to_owned(),
                r["line"].as_u64().unwrap() as u32,
                r["self"].as_str().unwrap().to_owned(),
                r["total"].as_str().unwrap().to_owned(),
                r["code"].as_str().unwrap().to_owned(),
            )
        })
        .collect()
}

fn wait_rows(browser: &Browser, count: usize) -> Vec<(String, u32, String, String, String)> {
    let mut rows = Vec::new();
    eventually(&format!("{count} weighted source lines"), || {
        rows = shown_rows(browser);
        rows.len() == count
    });
    rows
}

/// Each file section's one-line status (empty when its text is shown), by file.
fn statuses(browser: &Browser) -> HashMap<String, String> {
    let v: Value = browser.eval(
        "return [...document.querySelectorAll('.source-file')].map(s => [s.dataset.file, s.querySelector('.source-status')?.textContent ?? '']);",
        json!([]),
    );
    serde_json::from_value::<Vec<(String, String)>>(v)
        .unwrap()
        .into_iter()
        .collect()
}

fn current_line(browser: &Browser) -> Value {
    browser.eval(
        "return document.querySelector('.source-listing tr.current')?.dataset.line ?? null;",
        json!([]),
    )
}

/// Every weighted line the page shows has the numbers the command line prints for it.
fn assert_same_as_cli(
    rows: &[(String, u32, String, String, String)],
    cli: &HashMap<(String, u32), (String, String)>,
) {
    for (file, line, own, total, _) in rows {
        let printed = cli
            .get(&(file.clone(), *line))
            .unwrap_or_else(|| panic!("{file}:{line} is not in prof's output: {cli:?}"));
        assert_eq!((own, total), (&printed.0, &printed.1), "{file}:{line}");
    }
}

#[test]
fn the_source_view_shows_the_served_text_with_the_clis_numbers_and_says_what_is_missing() {
    let dir = TempDir::new("browser-source");
    let (file, root) = files(&dir);
    let served = Served::start(
        &[&file],
        &["--port", "0", "--source-root", root.to_str().unwrap()],
    );
    let browser = Browser::start("source", 1000, 600, 1.0);
    open_ok(&browser, &served.url);
    // Select `work` in the top functions table, then open the Source tab: selected in any view.
    browser.eval(
        "window.profViewer.state.update({selected: 'work'});",
        json!([]),
    );
    browser.click(&browser.find("#tabs button[data-view=source]"));
    let rows = wait_rows(&browser, 3);
    let lines: Vec<(&str, u32)> = rows.iter().map(|r| (r.0.as_str(), r.1)).collect();
    assert_eq!(
        lines,
        [("src/work.rs", 3), ("src/work.rs", 5), ("gone/inl.rs", 2)]
    );
    assert_eq!(
        (rows[0].2.as_str(), rows[0].3.as_str()),
        ("6.00 ms 60.0%", "6.00 ms 60.0%")
    );
    assert_eq!(rows[1].3, "3.00 ms 30.0%");
    // The text of the served file, beside its lines.
    assert_eq!(rows[0].4, "    let mut x = 0; // hot");
    assert_eq!(rows[1].4, "    hash(x);");
    assert_eq!(rows[2].4, "", "no text for the missing file");
    let path = file.to_str().unwrap();
    let report = cli_source(&["report", "--source", "work", path]);
    assert_same_as_cli(&rows, &report);
    assert_eq!(report.len(), rows.len(), "the same lines: {report:?}");
    // Whole-session annotation agrees too, for lines only `work` has.
    assert_same_as_cli(
        &rows,
        &cli_source(&["convert", path, "--to", "source", "-o", "-"]),
    );
    let status = statuses(&browser);
    assert_eq!(status["src/work.rs"], "");
    assert_eq!(
        status["gone/inl.rs"].lines().count(),
        1,
        "{:?}",
        status["gone/inl.rs"]
    );
    assert!(
        status["gone/inl.rs"]
            .starts_with("source text not available: gone/inl.rs: not found under the source root"),
        "{:?}",
        status["gone/inl.rs"]
    );
    // Context lines of the served file are shown around the weighted ones.
    let context = browser.eval(
        "return document.querySelector('.source-file[data-file=\"src/work.rs\"] tr[data-line=\"7\"] .code')?.textContent;",
        json!([]),
    );
    assert_eq!(context, json!("fn hash(x: u64) -> u64 { x * 31 }"));
    // Scrolled to, and keyed at, the hottest line; Down and Home move between weighted lines.
    assert_eq!(current_line(&browser), json!("3"));
    browser.screenshot("source-served");
    browser.eval(
        "document.querySelector('.source-listing').focus();",
        json!([]),
    );
    browser.press_key(ARROW_DOWN);
    eventually("Down moves to line 5", || {
        current_line(&browser) == json!("5")
    });
    browser.press_key(HOME);
    eventually("Home returns to the hottest line", || {
        current_line(&browser) == json!("3")
    });
    // The current line's outline leaves its text clear: the glyphs (an underscore's too) lie
    // inside the row by at least the outline's width, above and below.
    let clear = browser.eval(
        "const row = document.querySelector('.source-listing tr.current');
         const range = document.createRange();
         range.selectNodeContents(row.querySelector('.code'));
         const text = range.getBoundingClientRect();
         const box = row.getBoundingClientRect();
         return [text.top - box.top, box.bottom - text.bottom, parseFloat(getComputedStyle(row).outlineWidth)];",
        json!([]),
    );
    let (above, below, outline) = (
        clear[0].as_f64().unwrap(),
        clear[1].as_f64().unwrap(),
        clear[2].as_f64().unwrap(),
    );
    assert!(
        outline > 0.0 && above >= outline - 0.01 && below >= outline - 0.01,
        "text {above} px below the row's top and {below} px above its bottom, outline {outline} px"
    );

    // The view follows the transforms: dropping the samples through `hash` leaves no line 5.
    browser.eval(
        "window.profViewer.state.update({transforms: [{kind: 'drop', function: 'hash'}]});",
        json!([]),
    );
    let rows = wait_rows(&browser, 2);
    assert_eq!((rows[0].1, rows[0].3.as_str()), (3, "6.00 ms 85.7%"));
    let dropped = cli_source(&["report", "--source", "work", "--drop", "hash", path]);
    assert_same_as_cli(&rows, &dropped);
    assert_eq!(dropped.len(), 2, "{dropped:?}");
    browser.screenshot("source-dropped");
    // A function without lines in what is shown says so.
    browser.eval(
        "window.profViewer.state.update({transforms: [], selected: 'nobody'});",
        json!([]),
    );
    browser.wait_for(
        "document.querySelector('.source-empty').textContent.includes('has no source lines')",
        LOAD,
        "the empty view",
    );
    // The one expected entry: Chromium logs the 404 that says the missing file is not there.
    let problems: Vec<String> = console_problems(&browser)
        .into_iter()
        .filter(|p| !(p.contains("source?file=gone%2Finl.rs") && p.contains("404")))
        .collect();
    assert!(problems.is_empty(), "{problems:?}");
}

#[test]
fn the_single_file_viewer_lists_the_weights_without_text() {
    let dir = TempDir::new("browser-source-standalone");
    let (file, _) = files(&dir);
    let html = dir.join("source.html");
    let out = prof_e2e::prof(&[
        "convert",
        file.to_str().unwrap(),
        "-o",
        html.to_str().unwrap(),
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let browser = Browser::start("source-standalone", 1000, 600, 1.0);
    browser.goto(&format!(
        "file://{}#view=source&selected=work",
        html.display()
    ));
    browser.wait_for(
        "document.body.dataset.state === 'ready'",
        LOAD,
        "the single-file page to load",
    );
    let rows = wait_rows(&browser, 3);
    assert_same_as_cli(
        &rows,
        &cli_source(&["report", "--source", "work", file.to_str().unwrap()]),
    );
    let status = statuses(&browser);
    for file in ["src/work.rs", "gone/inl.rs"] {
        assert_eq!(
            status[file], "source text not available in a single-file viewer",
            "{file}"
        );
    }
    browser.screenshot("source-standalone");
}

#[test]
fn report_source_refuses_an_unknown_function_in_one_line() {
    let dir = TempDir::new("report-source-unknown");
    let (file, _) = files(&dir);
    let out = prof_e2e::prof(&["report", "--source", "nobody", file.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(stderr.contains("no function named \"nobody\""), "{stderr}");
    assert!(out.stdout.is_empty());
}
