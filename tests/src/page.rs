//! What the browser tests ask of the viewer page, shared by every `tests/browser*.rs`: opening
//! it, waiting for what it reaches asynchronously (its views ask a worker), and reading it.

use crate::webdriver::Browser;
use serde_json::json;
use std::time::{Duration, Instant};

/// How long the page may take to load, or to reach a state after an input.
pub const LOAD: Duration = Duration::from_secs(30);

/// WebDriver key codes.
pub mod keys {
    /// Escape.
    pub const ESCAPE: &str = "\u{E00C}";
    /// Enter.
    pub const ENTER: &str = "\u{E007}";
    /// End.
    pub const END: &str = "\u{E010}";
    /// Home.
    pub const HOME: &str = "\u{E011}";
    /// Left arrow.
    pub const ARROW_LEFT: &str = "\u{E012}";
    /// Up arrow.
    pub const ARROW_UP: &str = "\u{E013}";
    /// Right arrow.
    pub const ARROW_RIGHT: &str = "\u{E014}";
    /// Down arrow.
    pub const ARROW_DOWN: &str = "\u{E015}";
    /// Shift.
    pub const SHIFT: &str = "\u{E008}";
    /// F10.
    pub const F10: &str = "\u{E03A}";
}

/// Opens `url` and waits until the page has loaded its profile or shows an error.
pub fn open(browser: &Browser, url: &str) {
    browser.goto(url);
    browser.wait_for(
        "document.body.dataset.state !== 'loading' && document.body.dataset.state",
        LOAD,
        "the page to load",
    );
}

/// [`open`], and the page must show its profile, not an error.
pub fn open_ok(browser: &Browser, url: &str) {
    open(browser, url);
    assert_eq!(text(browser, "#error"), "", "the page shows an error");
}

/// Selects file `index` in the page's file selector and waits until the page has shown it
/// (or its error); `name` is the file's name, as the page's title says it.
pub fn choose_file(browser: &Browser, index: usize, name: &str) {
    browser.eval(
        "const s = document.getElementById('file'); s.value = String(arguments[0]); s.dispatchEvent(new Event('change'));",
        json!([index]),
    );
    browser.wait_for(
        &format!(
            "document.title.startsWith({}) && ['ready', 'error'].includes(document.body.dataset.state)",
            json!(format!("prof: {name}"))
        ),
        LOAD,
        "the chosen file",
    );
}

/// Waits up to [`LOAD`] for `condition`.
pub fn eventually(what: &str, mut condition: impl FnMut() -> bool) {
    let start = Instant::now();
    while !condition() {
        assert!(start.elapsed() < LOAD, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// The text of the first element `selector` finds, empty when there is none.
pub fn text(browser: &Browser, selector: &str) -> String {
    browser
        .eval(
            "return document.querySelector(arguments[0])?.textContent ?? '';",
            json!([selector]),
        )
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

/// Console entries at warning level or above, but Chromium's hint about canvas reads, which
/// the tests' own pixel reads cause.
pub fn console_problems(browser: &Browser) -> Vec<String> {
    browser
        .console_log()
        .into_iter()
        .filter(|l| l.starts_with("SEVERE") || l.starts_with("WARNING"))
        .filter(|l| !l.contains("willReadFrequently"))
        .collect()
}

/// The flame graph's zoom path, root first.
pub fn breadcrumbs(browser: &Browser) -> Vec<String> {
    let v = browser.eval(
        "return [...document.querySelectorAll('#breadcrumbs button')].map(b => b.textContent);",
        json!([]),
    );
    serde_json::from_value(v).unwrap()
}

/// One row of a top-N table, as `prof report` prints it and the page's top table shows it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TopRow {
    /// The function's name.
    pub name: String,
    /// Its total weight (`12.0 ms`, or a count).
    pub total: String,
    /// Its total as a share (`10.0%`).
    pub total_pct: String,
    /// Its self weight.
    pub self_weight: String,
    /// Its self weight as a share.
    pub self_pct: String,
}

impl TopRow {
    /// The cells in the table view's order: self, self %, total, total %.
    pub fn table_view_cells(&self) -> Vec<String> {
        vec![
            self.self_weight.clone(),
            self.self_pct.clone(),
            self.total.clone(),
            self.total_pct.clone(),
        ]
    }
}

/// Splits the table `prof report` prints into rows. A weight is a number and, for times and
/// bytes, a unit (`12.0 ms`), or a bare count (`1,234`); each share ends with `%`; the name is
/// the rest of the line, spaces included.
pub fn parse_report(text: &str) -> Vec<TopRow> {
    text.lines()
        .skip_while(|l| !l.trim_start().starts_with("TOTAL"))
        .skip(1)
        .filter(|l| !l.trim().is_empty())
        .map(|line| {
            // "     12.0 ms    10.0%       3.0 ms     2.5%  name with spaces"
            let mut parts = line.split_whitespace();
            let mut weight_and_share = || {
                let mut weight = Vec::new();
                for part in parts.by_ref() {
                    if part.ends_with('%') {
                        return (weight.join(" "), part.to_owned());
                    }
                    weight.push(part);
                }
                panic!("no share in the row {line:?}")
            };
            let (total, total_pct) = weight_and_share();
            let (self_weight, self_pct) = weight_and_share();
            TopRow {
                name: parts.collect::<Vec<_>>().join(" "),
                total,
                total_pct,
                self_weight,
                self_pct,
            }
        })
        .collect()
}

/// The rows `prof report FILE ARGS` prints (`ARGS` as on the command line: `--top 10`,
/// `--thread main`, ...); the command must succeed and print at least one row.
pub fn report_rows(file: &std::path::Path, args: &[&str]) -> Vec<TopRow> {
    let mut all = vec!["report", file.to_str().unwrap()];
    all.extend_from_slice(args);
    let out = crate::prof(&all);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "prof {all:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let rows = parse_report(&stdout);
    assert!(!rows.is_empty(), "no rows in:\n{stdout}");
    rows
}

/// The flame graph view's top table, its first `n` rows (each name whole, as its title has it:
/// the cell may show it cut in the middle).
pub fn top_table_rows(browser: &Browser, n: usize) -> Vec<TopRow> {
    let v = browser.eval(
        "return [...document.querySelectorAll('#top-table tbody tr')].slice(0, arguments[0]).map(tr =>
           ['.name', '.total-time', '.total-pct', '.self-time', '.self-pct']
             .map(s => tr.querySelector(s)).map((td, i) => (i === 0 ? td.title : td.textContent).trim()));",
        json!([n]),
    );
    let rows: Vec<[String; 5]> = serde_json::from_value(v).unwrap();
    rows.into_iter()
        .map(|[name, total, total_pct, self_weight, self_pct]| TopRow {
            name,
            total,
            total_pct,
            self_weight,
            self_pct,
        })
        .collect()
}

/// The total weight `prof report FILE ARGS` states in its header (`685 ms` of `..., 685 ms
/// total, sorted by self`).
pub fn report_total(file: &std::path::Path, args: &[&str]) -> String {
    let mut all = vec!["report", file.to_str().unwrap(), "--top", "1"];
    all.extend_from_slice(args);
    let out = crate::prof(&all);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "prof {all:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let header = stdout.lines().next().unwrap_or_default();
    header
        .split(", ")
        .find_map(|part| part.strip_suffix(" total"))
        .unwrap_or_else(|| panic!("no total in {header:?}"))
        .to_owned()
}

/// One session served by `prof serve` and shown in a browser window: where most browser tests
/// start. Dropping it closes the browser, stops the server and removes the directory, in that
/// order.
pub struct Shown {
    /// The browser showing the page.
    pub browser: Browser,
    /// The server.
    pub served: crate::served::Served,
    /// The session's file.
    pub file: std::path::PathBuf,
    /// The directory that holds the file.
    pub dir: crate::TempDir,
}

/// Saves `session` as `file_name` in a directory of test `test`'s own, serves it with `prof
/// serve --port 0`, and opens the page at `fragment` (say `#view=calltree`, or empty) in a
/// browser window of `width` x `height` named `test`; the page has loaded its profile when this
/// returns.
pub fn show(
    test: &str,
    session: &prof::session::Session,
    file_name: &str,
    (width, height): (u32, u32),
    fragment: &str,
) -> Shown {
    let dir = crate::TempDir::new(&format!("shown-{test}"));
    let file = dir.join(file_name);
    crate::sessions::save(session, &file);
    let served = crate::served::Served::start(&[&file], &["--port", "0"]);
    let browser = Browser::start(test, width, height, 1.0);
    open_ok(&browser, &format!("{}{fragment}", served.url));
    Shown {
        browser,
        served,
        file,
        dir,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_report_parses_into_weights_shares_and_names_with_spaces() {
        let text =
            "prof: cpu mode, 3 samples, showing cpu (nanoseconds), 3.00 ms total, sorted by self
       TOTAL    (pct)         SELF    (pct)  FRAME
     2.00 ms    66.7%      1.00 ms    33.3%  <a as b>::c
       1,234    40.0%          617    20.0%  plain
";
        let rows = parse_report(text);
        assert_eq!(rows.len(), 2);
        assert_eq!(rows[0].name, "<a as b>::c");
        assert_eq!(rows[0].total, "2.00 ms");
        assert_eq!(rows[0].self_pct, "33.3%");
        assert_eq!(rows[1].total, "1,234");
        assert_eq!(rows[1].self_weight, "617");
        assert_eq!(
            rows[1].table_view_cells(),
            ["617", "20.0%", "1,234", "40.0%"]
        );
    }
}
