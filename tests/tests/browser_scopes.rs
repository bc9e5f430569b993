//! The Scopes view in a real headless Chromium against `prof serve`, on a session with
//! scopes and tasks written by prof's own writer: the scope table and the task table show what
//! `prof report --scopes` and `--tasks` print, a scope's duration bars count its calls, and the
//! "Only" buttons keep that task's (or scope's) samples in every view, as `--task` (`--scope`)
//! does; grouped by scope, the call tree's scope rows show the calls `prof report --group-by
//! scope` prints. Screenshots go to `tests/artifacts/scopes-*`.
//!
//! A missing browser fails these tests: they never skip.

use prof_e2e::page::{console_problems, eventually, report_rows, show, top_table_rows};
use prof_e2e::sessions::scoped_tasks;
use prof_e2e::webdriver::Browser;
use serde_json::json;

/// The text cells of the rows of table body `selector` in the Scopes view.
fn cells(browser: &Browser, selector: &str) -> Vec<Vec<String>> {
    let v = browser.eval(
        "return [...document.querySelectorAll(arguments[0] + ' tr')].map(tr =>
           [...tr.querySelectorAll('td')].map(td => td.textContent.trim()).filter(t => t !== 'Only'));",
        json!([format!("section[data-view=scopes] {selector}")]),
    );
    serde_json::from_value(v).unwrap()
}

/// The lines of `prof report FILE ARGS` after its column header, split at white space.
fn report_table(file: &std::path::Path, args: &[&str]) -> Vec<Vec<String>> {
    let out = prof_e2e::prof(&[&["report", file.to_str().unwrap()], args].concat());
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .skip_while(|l| !l.contains("CALLS") && !l.contains("TASKS"))
        .skip(1)
        .map(|l| l.split_whitespace().map(str::to_owned).collect())
        .collect()
}

#[test]
fn the_scopes_view_shows_the_numbers_prof_report_prints() {
    let shown = show(
        "scopes-view",
        &scoped_tasks(),
        "scoped.json",
        (1300, 800),
        "#view=scopes",
    );
    let browser = &shown.browser;
    let file = &shown.file;
    // Report: calls, total, self, self/call, total/call, min, max, p50, p99, name. Page: name
    // first, then the same.
    let expected: Vec<Vec<String>> = report_table(file, &["--scopes"])
        .into_iter()
        .map(|mut r| {
            let name = r.pop().unwrap();
            std::iter::once(name).chain(r).collect()
        })
        .collect();
    assert_eq!(expected.len(), 2);
    let mut shown_rows = Vec::new();
    eventually("the scope rows", || {
        shown_rows = cells(browser, ".scopes-rows");
        shown_rows.len() == 2
    });
    assert_eq!(shown_rows, expected);
    // Tasks: report weight (number and unit), share, tasks, polls, poll ms, name.
    let tasks: Vec<Vec<String>> = report_table(file, &["--tasks"])
        .into_iter()
        .map(|r| {
            let name = r[6].clone();
            vec![
                name,
                format!("{} {}", r[0], r[1]),
                r[2].clone(),
                r[3].clone(),
                r[4].clone(),
                r[5].clone(),
            ]
        })
        .collect();
    assert_eq!(cells(browser, ".tasks-rows"), tasks);

    // The first row (most total time) is chosen: its bars count every one of its calls.
    let calls: u64 = expected[0][1].replace(',', "").parse().unwrap();
    let bars = browser.eval(
        "return [...document.querySelectorAll('section[data-view=scopes] .scopes-bars .bar')].map(b => b.title);",
        json!([]),
    );
    let bars: Vec<String> = serde_json::from_value(bars).unwrap();
    let counted: u64 = bars
        .iter()
        .map(|t| {
            t.split(' ')
                .next()
                .unwrap()
                .replace(',', "")
                .parse::<u64>()
                .unwrap()
        })
        .sum();
    assert_eq!(counted, calls, "{bars:#?}");
    browser.screenshot("scopes-view");

    // The longest call of `request` selects its time: [start, end + 1), as the session has it.
    let session = scoped_tasks();
    let longest = session
        .scopes
        .spans
        .iter()
        .filter(|s| session.str(session.scopes.site(s.site).name) == "request")
        .min_by_key(|s| (std::cmp::Reverse(s.end_ns - s.start_ns), s.start_ns))
        .unwrap();
    // It names its thread as the timeline does, with the thread's id: a pool's threads share
    // their name.
    let thread = &session.threads[longest.thread.index()];
    let on = format!(" on {} [{}]", session.str(thread.name), thread.tid);
    let first = browser.eval(
        "return document.querySelector('section[data-view=scopes] .scopes-calls button').textContent;",
        json!([]),
    );
    assert!(
        first.as_str().unwrap().contains(&on),
        "{first} lacks {on:?}"
    );
    browser.eval(
        "document.querySelector('section[data-view=scopes] .scopes-calls button').click();",
        json!([]),
    );
    let range = json!([longest.start_ns, longest.end_ns + 1]);
    eventually("the call's time selected", || {
        browser.eval("return window.profViewer.state.current.range;", json!([])) == range
    });
    browser.eval("window.profViewer.state.update({range: null});", json!([]));

    // Sorting by calls ascending, then by name: parse and request both have 30 calls.
    browser.eval(
        "document.querySelector('section[data-view=scopes] [data-sort=name]').click();",
        json!([]),
    );
    eventually("the rows sorted by name", || {
        cells(browser, ".scopes-rows")
            .first()
            .map(|r| r[0].as_str())
            == Some("parse")
    });

    // "Only" on the store task: every view keeps its samples, as --task store does.
    browser.eval(
        "[...document.querySelectorAll('section[data-view=scopes] .tasks-rows tr')]
           .find(tr => tr.dataset.name === 'store').querySelector('.only').click();",
        json!([]),
    );
    eventually("the task in the URL", || {
        browser
            .eval("return location.hash;", json!([]))
            .as_str()
            .unwrap_or_default()
            .contains("task=store")
    });
    browser.eval(
        "window.profViewer.state.update({view: 'flame'});",
        json!([]),
    );
    let expected = report_rows(file, &["--task", "store", "--top", "5"]);
    eventually("the flame view's table of the store task", || {
        let rows = top_table_rows(browser, 5);
        rows.len() == expected.len()
            && rows.iter().zip(&expected).all(|(a, b)| {
                a.name == b.name && a.self_weight == b.self_weight && a.self_pct == b.self_pct
            })
    });

    // Group by task: each task's name is a root frame whose total is the task's share, as
    // `prof report --group-by task` prints it.
    browser.eval(
        "window.profViewer.state.update({task: null, groupBy: 'task', view: 'table',
           tableSort: {column: 'total', descending: true}});",
        json!([]),
    );
    let report = report_rows(
        file,
        &["--group-by", "task", "--sort", "total", "--top", "100"],
    );
    let roots: Vec<_> = report
        .iter()
        .filter(|r| r.name.starts_with("task:"))
        .collect();
    assert_eq!(roots.len(), 3, "{report:#?}");
    eventually("the task roots in the Top functions table", || {
        let rows = browser.eval(
            "return window.profViewer.views.get('table').shownRows();",
            json!([]),
        );
        let rows: Vec<serde_json::Value> = serde_json::from_value(rows).unwrap_or_default();
        roots.iter().all(|root| {
            rows.iter().any(|r| {
                r["title"] == root.name.as_str()
                    && r["cells"] == serde_json::to_value(root.table_view_cells()).unwrap()
            })
        })
    });
    assert_eq!(
        browser.eval(
            "return document.getElementById('group-by').value;",
            json!([])
        ),
        json!("task")
    );
    browser.screenshot("scopes-grouped");
    assert_eq!(console_problems(browser), Vec::<String>::new());
}

/// The call tree's rows on screen: (name, cells).
fn tree_rows(browser: &Browser) -> Vec<(String, Vec<String>)> {
    let rows = browser.eval(
        "return window.profViewer.views.get('calltree').shownRows();",
        json!([]),
    );
    let rows: Vec<serde_json::Value> = serde_json::from_value(rows).unwrap_or_default();
    rows.iter()
        .map(|r| {
            let cells = serde_json::from_value(r["cells"].clone()).unwrap_or_default();
            (r["name"].as_str().unwrap_or_default().to_owned(), cells)
        })
        .collect()
}

#[test]
fn grouped_by_scope_the_call_tree_shows_each_scope_frames_calls() {
    let shown = show(
        "scopes-tree-calls",
        &scoped_tasks(),
        "scoped.json",
        (1300, 800),
        "#view=calltree&group=scope",
    );
    let browser = &shown.browser;
    // `prof report --group-by scope`: TOTAL (2 words), (pct), SELF (2 words), (pct), CALLS, FRAME.
    let out = prof_e2e::prof(&[
        "report",
        shown.file.to_str().unwrap(),
        "--group-by",
        "scope",
        "--sort",
        "total",
    ]);
    let report = String::from_utf8(out.stdout).unwrap();
    let calls = |name: &str| -> String {
        let line = report
            .lines()
            .find(|l| l.ends_with(&format!("  {name}")))
            .unwrap_or_else(|| panic!("no {name} in {report}"));
        line.split_whitespace().nth(6).unwrap().to_owned()
    };
    assert_eq!(calls("scope:request"), "30", "{report}");
    // The tree opens along its heaviest path: scope:request, then its children. Cells: total,
    // its share, self, its share, calls.
    let mut rows = Vec::new();
    eventually("the scope rows with their calls", || {
        rows = tree_rows(browser);
        ["scope:request", "scope:parse"].iter().all(|name| {
            rows.iter()
                .any(|(n, cells)| n == name && cells.len() == 5 && cells[4] == calls(name))
        })
    });
    // Functions and the samples outside scopes have an empty Calls cell.
    let empty: Vec<&String> = rows
        .iter()
        .filter(|(n, _)| !n.starts_with("scope:") || n == "scope:(none)")
        .map(|(n, cells)| {
            assert_eq!(cells.get(4).map(String::as_str), Some(""), "{n}: {cells:?}");
            n
        })
        .collect();
    assert!(!empty.is_empty(), "{rows:?}");
    assert!(browser
        .eval(
            "return !document.querySelector('section[data-view=calltree] .grid-head .calls').hidden;",
            json!([])
        )
        .as_bool()
        .unwrap());
    assert_eq!(
        browser.eval(
            "return document.getElementById('group-by').value;",
            json!([])
        ),
        json!("scope")
    );
    browser.screenshot("scopes-tree-calls");

    // The control: none ungroups, and the Calls column goes.
    browser.eval(
        "const s = document.getElementById('group-by'); s.value = '';
         s.dispatchEvent(new Event('change'));",
        json!([]),
    );
    eventually("the stacks as recorded, without calls", || {
        let rows = tree_rows(browser);
        !rows.is_empty()
            && rows
                .iter()
                .all(|(n, cells)| !n.starts_with("scope:") && cells.len() == 4)
    });
    assert!(browser
        .eval(
            "return document.querySelector('section[data-view=calltree] .grid-head .calls').hidden;",
            json!([])
        )
        .as_bool()
        .unwrap());
    assert!(!browser
        .eval("return location.hash;", json!([]))
        .as_str()
        .unwrap_or_default()
        .contains("group="));
    assert_eq!(console_problems(browser), Vec::<String>::new());
}

#[test]
fn calls_timed_by_prof_record_are_scopes_in_the_view_and_nested_bars_on_the_timeline() {
    // `outer` (40 calls) calls `work` twice each (80 calls), timed by `prof record
    // --calls-timed` on the real program (tests/data/record/timed.c).
    let dir = prof_e2e::TempDir::new("browser-calls-timed");
    let exe = prof_e2e::recorded::build_c(dir.path(), "timed");
    let (output, session) = prof_e2e::recorded::record(
        &dir,
        &[
            "--calls",
            "^(outer|work)$",
            "--calls-timed",
            "--",
            exe.to_str().unwrap(),
        ],
    );
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let shown = show(
        "scopes-calls-timed",
        &session,
        "timed.json.gz",
        (1300, 800),
        "#view=scopes",
    );
    let browser = &shown.browser;
    // The Scopes view: a row per timed function, as `prof report --scopes` prints it.
    let expected: Vec<Vec<String>> = report_table(&shown.file, &["--scopes"])
        .into_iter()
        .map(|mut r| {
            let name = r.pop().unwrap();
            std::iter::once(name).chain(r).collect()
        })
        .collect();
    let mut rows = Vec::new();
    eventually("the timed functions' rows", || {
        rows = cells(browser, ".scopes-rows");
        rows.len() == 2
    });
    assert_eq!(rows, expected);
    assert_eq!(
        (rows.iter().find(|r| r[0] == "outer").map(|r| r[1].as_str())),
        Some("40")
    );
    // The timeline: each call a bar under the thread's track, work's inside outer's.
    browser.wait_for(
        "window.profViewer.timeline.bars && window.profViewer.timeline.bars.count > 0",
        std::time::Duration::from_secs(60),
        "the call bars",
    );
    let depths = |name: &str| -> Vec<u64> {
        let v = browser.eval(
            "return window.profViewer.timeline.barsNamed(arguments[0]).map(b => b.depth);",
            json!([name]),
        );
        serde_json::from_value(v).unwrap()
    };
    let (outer, work) = (depths("outer"), depths("work"));
    assert_eq!(outer.len(), 40, "{outer:?}");
    assert_eq!(work.len(), 80, "{work:?}");
    assert!(outer.iter().all(|&d| d == 0), "{outer:?}");
    assert!(work.iter().all(|&d| d == 1), "{work:?}");
    browser.screenshot("scopes-calls-timed");
    // The stack chart: the same calls as bars above the thread's stacks.
    browser.click(&browser.find("#tabs button[data-view=stack-chart]"));
    let chart = "window.profViewer.views.get('stack-chart')";
    browser.wait_for(
        &format!("{chart} && {chart}.bars && {chart}.bars.count > 0"),
        std::time::Duration::from_secs(60),
        "the stack chart's call bars",
    );
    let in_chart = |name: &str| -> usize {
        let v = browser.eval(
            &format!("return {chart}.barsNamed(arguments[0]).length;"),
            json!([name]),
        );
        serde_json::from_value(v).unwrap()
    };
    assert_eq!((in_chart("outer"), in_chart("work")), (40, 80));
    browser.screenshot("scopes-calls-timed-stack-chart");
    assert_eq!(console_problems(browser), Vec::<String>::new());
}
