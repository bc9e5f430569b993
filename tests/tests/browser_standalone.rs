//! The single-file viewer (`prof convert --to html`) opened from a `file://` URL in a real
//! headless Chromium with networking disabled: the whole viewer works from the one file.

use prof_e2e::page::LOAD;
use prof_e2e::served::Served;
use prof_e2e::sessions;
use prof_e2e::webdriver::Browser;
use prof_e2e::{prof, TempDir};
use serde_json::json;

#[test]
fn the_single_file_viewer_opens_from_disk_offline() {
    let dir = TempDir::new("standalone");
    let session = dir.join("demo.json");
    sessions::save(&sessions::two_threads(), &session);
    let html = dir.join("demo.html");
    let out = prof(&[
        "convert",
        session.to_str().unwrap(),
        "-o",
        html.to_str().unwrap(),
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let size = std::fs::metadata(&html).unwrap().len();
    assert!(size < 1_000_000, "{size} bytes for a 130-sample profile");

    // Every request that leaves the machine fails: the proxy is a closed port.
    let browser = Browser::start_with(
        "standalone",
        1000,
        600,
        1.0,
        &[
            "--proxy-server=127.0.0.1:9",
            "--proxy-bypass-list=<-loopback>",
        ],
    );
    browser.goto(&format!("file://{}", html.display()));
    browser.wait_for(
        "document.body.dataset.state === 'ready'",
        LOAD,
        "the single-file page to load",
    );
    let meta = browser
        .eval(
            "return document.getElementById('meta').textContent;",
            json!([]),
        )
        .as_str()
        .unwrap()
        .to_owned();
    assert!(meta.contains("demo-app") && meta.contains("130"), "{meta}");
    let rows = browser.eval(
        "return [...document.querySelectorAll('#top-table tbody tr')].map(tr => tr.querySelector('.name').textContent);",
        json!([]),
    );
    assert_eq!(rows[0], json!("hot_loop"), "{rows}");
    // The flame graph is drawn and answers a search, all from the embedded wasm.
    browser.type_into(&browser.find("#search"), "hot_");
    browser.wait_for(
        "document.getElementById('search-result').textContent.startsWith('matched')",
        LOAD,
        "the search",
    );
    assert_eq!(
        browser.eval(
            "return window.profViewer.framesNamed('hot_loop').length;",
            json!([])
        ),
        json!(2)
    );
    // Nothing was fetched from anywhere but the file itself and its blobs.
    let fetched = browser.eval(
        "return performance.getEntriesByType('resource').map(e => e.name)
           .filter(n => !n.startsWith('blob:') && !n.startsWith('data:'));",
        json!([]),
    );
    assert_eq!(fetched, json!([]));
    browser.screenshot("30-single-file");
}

#[test]
fn the_served_page_offers_the_single_file_viewer_as_a_download() {
    let dir = TempDir::new("standalone-download");
    let session = dir.join("demo.json");
    sessions::save(&sessions::two_threads(), &session);
    let served = Served::start(&[&session], &["--port", "0"]);
    let browser = Browser::start("standalone-download", 1000, 600, 1.0);
    browser.goto(&served.url);
    browser.wait_for(
        "document.body.dataset.state === 'ready'",
        LOAD,
        "the served page",
    );
    let link = browser.eval(
        "const a = document.getElementById('download'); return [a.hidden, a.href];",
        json!([]),
    );
    assert_eq!(link[0], json!(false), "the link is shown");
    let href = link[1].as_str().unwrap().to_owned();
    assert_eq!(href, format!("{}download/0", served.url));
    let response = minreq::get(&href).with_timeout(60).send().unwrap();
    assert_eq!(response.status_code, 200);
    assert_eq!(
        response
            .headers
            .get("content-disposition")
            .map(String::as_str),
        Some("attachment; filename=\"demo.html\"")
    );
    let html = dir.join("downloaded.html");
    std::fs::write(&html, response.as_bytes()).unwrap();
    drop(served);
    // The download opens from disk with the server gone and the network unreachable.
    let offline = Browser::start_with(
        "standalone-downloaded",
        1000,
        600,
        1.0,
        &[
            "--proxy-server=127.0.0.1:9",
            "--proxy-bypass-list=<-loopback>",
        ],
    );
    offline.goto(&format!("file://{}", html.display()));
    offline.wait_for(
        "document.body.dataset.state === 'ready'",
        LOAD,
        "the downloaded page",
    );
    let meta = offline
        .eval(
            "return document.getElementById('meta').textContent;",
            json!([]),
        )
        .as_str()
        .unwrap()
        .to_owned();
    assert!(meta.contains("demo-app"), "{meta}");
    assert_eq!(
        offline.eval(
            "return document.getElementById('download').hidden;",
            json!([])
        ),
        json!(true),
        "the file is the download: it offers none"
    );
}

/// The single-file page holds one profile: the Diff view, which compares two, is not offered,
/// and a link naming it opens the flame graph.
#[test]
fn the_single_file_page_of_one_profile_offers_no_diff() {
    let dir = TempDir::new("standalone-no-diff");
    let session = dir.join("demo.json");
    sessions::save(&sessions::two_threads(), &session);
    let html = dir.join("demo.html");
    let out = prof(&[
        "convert",
        session.to_str().unwrap(),
        "-o",
        html.to_str().unwrap(),
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let browser = Browser::start("standalone-no-diff", 1000, 600, 1.0);
    browser.goto(&format!("file://{}#view=diff", html.display()));
    browser.wait_for(
        "document.body.dataset.state === 'ready'",
        LOAD,
        "the single-file page to load",
    );
    let tabs = browser.eval(
        "return [...document.querySelectorAll('#tabs button')].filter(b => !b.hidden).map(b => b.dataset.view);",
        json!([]),
    );
    let tabs: Vec<String> = serde_json::from_value(tabs).unwrap();
    assert!(
        !tabs.is_empty() && !tabs.contains(&"diff".to_owned()),
        "{tabs:?}"
    );
    let shown = browser.eval(
        "return [...document.querySelectorAll('section.view')].filter(s => !s.hidden).map(s => s.dataset.view);",
        json!([]),
    );
    assert_eq!(shown, json!(["flame"]));
    assert_eq!(
        browser.eval(
            "return window.profViewer.framesNamed('hot_loop').length;",
            json!([])
        ),
        json!(2)
    );
    browser.screenshot("r20-standalone-no-diff");
}
