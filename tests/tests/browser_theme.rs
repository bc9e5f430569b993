//! The viewer's dark theme (issue 39), in a real headless Chromium against `prof serve`: the
//! page follows `prefers-color-scheme` (emulated through the DevTools protocol), the toolbar's
//! theme button pins light or dark over it, the choice outlives a reload, and the page's
//! background, its text and the canvases' backgrounds change with the theme shown. Screenshots
//! of both themes at 1280x800 and 1920x1080 go to `tests/artifacts/theme-*`. A missing browser
//! fails this test: it never skips.

use prof_e2e::page::{console_problems, open_ok, LOAD};
use prof_e2e::served::Served;
use prof_e2e::sessions;
use prof_e2e::webdriver::Browser;
use prof_e2e::TempDir;
use serde_json::{json, Value};

fn js(browser: &Browser, expr: &str) -> Value {
    browser.eval(&format!("return ({expr});"), json!([]))
}

/// The colours the page shows, as `[r, g, b]`: the body's background and text, a Top
/// functions cell's text and the background it sits on (the first opaque one of it and its
/// ancestors), the tooltip's, and a pixel of the timeline canvas's first track where no bar is
/// drawn (its top row, right of the thread labels).
fn colours(browser: &Browser) -> Value {
    browser.eval(
        "const rgb = (text) => text.match(/[\\d.]+/g).slice(0, 3).map(Number);
         const opaque = (text) => !/rgba\\(.*, 0\\)$/.test(text) && text !== 'transparent';
         const ground = (el) => {
           for (; el; el = el.parentElement) {
             const bg = getComputedStyle(el).backgroundColor;
             if (opaque(bg)) return rgb(bg);
           }
           return [255, 255, 255];
         };
         const cell = document.querySelector('#top-table tbody td.name');
         const tip = document.getElementById('tooltip');
         const c = document.getElementById('timeline-canvas');
         const top = window.profViewer.timeline.rows.tops[0];
         const d = c.getContext('2d').getImageData(200, top + 1, 1, 1).data;
         return {
           body: ground(document.body),
           text: rgb(getComputedStyle(document.body).color),
           cell: rgb(getComputedStyle(cell).color),
           cellGround: ground(cell),
           tip: rgb(getComputedStyle(tip).color),
           tipGround: ground(tip),
           canvas: [d[0], d[1], d[2]],
         };",
        json!([]),
    )
}

/// The relative luminance of an sRGB colour (WCAG 2).
fn luminance(c: &Value) -> f64 {
    let channel = |k: usize| {
        let v = c[k].as_f64().unwrap() / 255.0;
        if v <= 0.04045 {
            v / 12.92
        } else {
            ((v + 0.055) / 1.055).powf(2.4)
        }
    };
    0.2126 * channel(0) + 0.7152 * channel(1) + 0.0722 * channel(2)
}

/// The WCAG contrast ratio of two colours.
fn contrast(a: &Value, b: &Value) -> f64 {
    let (a, b) = (luminance(a), luminance(b));
    (a.max(b) + 0.05) / (a.min(b) + 0.05)
}

/// Checks that the page shows the `dark` theme or the light one: grounds dark and text light,
/// or the other way round, every text at a contrast of at least 7 (WCAG AAA) on its ground.
fn assert_theme(browser: &Browser, dark: bool) {
    let c = colours(browser);
    let what = if dark { "dark" } else { "light" };
    for ground in ["body", "cellGround", "tipGround", "canvas"] {
        let l = luminance(&c[ground]);
        assert!(
            if dark { l < 0.05 } else { l > 0.8 },
            "{what} theme: {ground} {} has luminance {l:.3}; {c}",
            c[ground]
        );
    }
    for (text, ground) in [
        ("text", "body"),
        ("cell", "cellGround"),
        ("tip", "tipGround"),
    ] {
        let ratio = contrast(&c[text], &c[ground]);
        assert!(
            ratio >= 7.0,
            "{what} theme: {text} on {ground} has contrast {ratio:.1}; {c}"
        );
    }
}

/// The theme chosen with the toolbar's button: "system", "light" or "dark".
fn choice(browser: &Browser) -> Value {
    js(browser, "document.getElementById('theme').dataset.choice")
}

/// Clicks the toolbar's theme button until it shows `value` (each click goes on to the next of
/// system, light and dark), as a user does.
fn choose_theme(browser: &Browser, value: &str) {
    for _ in 0..3 {
        if choice(browser) == value {
            return;
        }
        browser.click(&browser.find("#theme"));
    }
    assert_eq!(choice(browser), value);
}

/// Waits until the page has drawn its flame graph and timeline.
fn wait_drawn(browser: &Browser) {
    browser.wait_for(
        "window.profViewer.layout && window.profViewer.timeline.data && window.profViewer.timeline.rows && document.querySelector('#top-table tbody td.name')",
        LOAD,
        "the flame graph, the timeline and the table",
    );
}

/// Waits until the theme shown is `dark` (or light): the page's ground and the timeline's are
/// (a change of the system's theme reaches the canvases a frame after the page's colours).
fn wait_theme(browser: &Browser, dark: bool) {
    let expr = format!(
        "(getComputedStyle(document.body).backgroundColor.match(/\\d+/g)[0] < 128) === {dark}
         && (document.getElementById('timeline-canvas').getContext('2d')
               .getImageData(200, window.profViewer.timeline.rows.tops[0] + 1, 1, 1).data[0] < 128) === {dark}"
    );
    browser.wait_for(&expr, LOAD, "the theme to change");
}

/// Sizes the window to `width`×`height` and waits until the canvases have followed.
fn resize(browser: &Browser, width: u32, height: u32) {
    browser.resize(width, height);
    browser.wait_for(
        &format!(
            "document.getElementById('timeline-canvas').width >= {} && window.profViewer.flame.canvas.height >= {}",
            width - 40,
            height / 3
        ),
        LOAD,
        "the canvases to follow the window",
    );
}

#[test]
fn the_page_follows_the_system_theme_and_the_theme_menu_which_outlives_a_reload() {
    let dir = TempDir::new("browser-theme");
    let file = dir.join("demo.json");
    sessions::save(&sessions::two_threads(), &file);
    let served = Served::start(&[&file], &["--port", "0"]);
    let browser = Browser::start("theme", 1280, 800, 1.0);
    browser.emulate_color_scheme(Some("dark"));
    open_ok(&browser, &served.url);
    wait_drawn(&browser);

    // The system's theme is dark: so is the page.
    assert_eq!(choice(&browser), "system");
    assert_eq!(
        js(&browser, "document.documentElement.dataset.theme ?? null"),
        Value::Null
    );
    assert_theme(&browser, true);
    // The tooltip's colours, shown over a frame.
    let rect = js(&browser, "window.profViewer.framesNamed('hot_loop')[0]");
    let (x, y) = (rect["x"].as_f64().unwrap(), rect["y"].as_f64().unwrap());
    browser.pointer_at(&browser.find("#flame-canvas"), x + 4.0, y + 4.0, false);
    browser.wait_for(
        "!document.getElementById('tooltip').hidden",
        LOAD,
        "the tooltip",
    );
    assert_theme(&browser, true);
    browser.screenshot("theme-dark-1280x800");

    // Light, chosen over the dark system theme: page and canvases redraw light.
    choose_theme(&browser, "light");
    wait_theme(&browser, false);
    assert_eq!(
        js(&browser, "document.documentElement.dataset.theme"),
        "light"
    );
    assert_theme(&browser, false);
    browser.screenshot("theme-light-1280x800");

    // The choice outlives a reload, the system's theme still dark.
    browser.eval("location.reload();", json!([]));
    browser.wait_for(
        "document.body.dataset.state === 'ready'",
        LOAD,
        "the reloaded page",
    );
    wait_drawn(&browser);
    assert_eq!(choice(&browser), "light");
    assert_eq!(js(&browser, "localStorage.getItem('prof-theme')"), "light");
    assert_theme(&browser, false);
    // It is not part of the view's URL.
    let hash = js(&browser, "location.hash");
    assert!(!hash.as_str().unwrap().contains("theme"), "{hash}");

    // Dark, chosen, and back to the system's (dark): each shown at once.
    choose_theme(&browser, "dark");
    wait_theme(&browser, true);
    assert_theme(&browser, true);
    choose_theme(&browser, "system");
    assert_eq!(
        js(&browser, "localStorage.getItem('prof-theme')"),
        Value::Null
    );
    assert_theme(&browser, true);
    // Following the system: its change shows without a reload, canvases included.
    browser.emulate_color_scheme(Some("light"));
    wait_theme(&browser, false);
    assert_theme(&browser, false);
    browser.emulate_color_scheme(Some("dark"));
    wait_theme(&browser, true);
    assert_theme(&browser, true);

    // Both themes at 1920x1080.
    resize(&browser, 1920, 1080);
    assert_theme(&browser, true);
    browser.screenshot("theme-dark-1920x1080");
    choose_theme(&browser, "light");
    wait_theme(&browser, false);
    assert_theme(&browser, false);
    browser.screenshot("theme-light-1920x1080");
    choose_theme(&browser, "system");
    // The other views in dark, for the eye: the call tree, the stack chart.
    for view in ["calltree", "stack-chart"] {
        browser.eval(
            "window.profViewer.state.update({ view: arguments[0] });",
            json!([view]),
        );
        browser.wait_for(
            &format!("!document.querySelector('section.view[data-view=\"{view}\"]').hidden"),
            LOAD,
            "the view",
        );
        std::thread::sleep(std::time::Duration::from_millis(300));
        browser.screenshot(&format!("theme-dark-1920x1080-{view}"));
    }
    assert_eq!(console_problems(&browser), Vec::<String>::new());
    browser.emulate_color_scheme(None);
}

/// The other views in the dark theme, for the eye (`tests/artifacts/theme-dark-*`): the Diff
/// tab's reds and blues, the Scopes tab, the stack chart's and the timeline's scope bars and
/// task lanes, and the Source view. Each keeps the dark ground.
#[test]
fn the_diff_scopes_and_scope_bars_are_drawn_in_the_dark_theme() {
    let dir = TempDir::new("browser-theme-views");
    let demo = dir.join("demo.json");
    let scoped = dir.join("scoped.json");
    sessions::save(&sessions::two_threads(), &demo);
    sessions::save(&sessions::scoped_tasks(), &scoped);
    let served = Served::start(&[&demo, &scoped], &["--port", "0"]);
    let browser = Browser::start("theme-views", 1280, 800, 1.0);
    browser.emulate_color_scheme(Some("dark"));
    let base = served.url.split('#').next().unwrap().to_owned();
    for (fragment, ready, name) in [
        (
            "#file=1&view=diff&base=0",
            "document.querySelector('.diff-table tbody tr')",
            "diff",
        ),
        (
            "#file=1&view=scopes",
            "document.querySelector('.scopes-rows tr')",
            "scopes",
        ),
        (
            "#file=1&view=stack-chart",
            "window.profViewer.views.get('stack-chart').layout",
            "scope-bars",
        ),
        (
            "#file=0&view=source&selected=hot_loop",
            "document.querySelector('.source-function .name')",
            "source",
        ),
    ] {
        open_ok(&browser, &format!("{base}{fragment}"));
        browser.wait_for(ready, LOAD, name);
        std::thread::sleep(std::time::Duration::from_millis(300));
        let ground = js(
            &browser,
            "getComputedStyle(document.body).backgroundColor.match(/\\d+/g).slice(0, 3).map(Number)",
        );
        assert!(luminance(&ground) < 0.05, "{name}: {ground}");
        browser.screenshot(&format!("theme-dark-1280x800-{name}"));
    }
    // The demo's source files are not on this machine: the Source view says so (a 404).
    let problems: Vec<String> = console_problems(&browser)
        .into_iter()
        .filter(|p| !p.contains("/source?file="))
        .collect();
    assert_eq!(problems, Vec::<String>::new());
    browser.emulate_color_scheme(None);
}
