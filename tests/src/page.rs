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
