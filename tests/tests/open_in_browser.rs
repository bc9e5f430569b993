//! `Report::open_in_browser` from inside a program: serves in-process, starts `$BROWSER` with the
//! URL, and keeps going when no browser can be started.
//!
//! One test in this file, since it sets `$BROWSER` for the whole process.

use prof::Report;
use prof_e2e::{sessions, TempDir};
use std::os::unix::fs::PermissionsExt;
use std::time::{Duration, Instant};

#[test]
fn open_in_browser_serves_the_report_and_starts_the_browser() {
    let dir = TempDir::new("open-in-browser");
    let opened = dir.join("opened.txt");
    let script = dir.join("browser.sh");
    std::fs::write(
        &script,
        format!("#!/bin/sh\necho \"$1\" > {}\n", opened.display()),
    )
    .unwrap();
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    std::env::set_var("BROWSER", &script);

    let report = Report::new(sessions::two_threads());
    let server = report.open_in_browser().expect("the server starts");
    assert!(
        matches!(server.browser(), prof::serve::Opened::Launched(_)),
        "{:?}",
        server.browser()
    );
    let deadline = Instant::now() + Duration::from_secs(10);
    while !opened.exists() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    let url = std::fs::read_to_string(&opened).expect("$BROWSER was started");
    assert_eq!(url.trim(), server.url());
    let page = minreq::get(server.url()).send().unwrap();
    assert_eq!(page.status_code, 200);
    let list = minreq::get(format!("{}sessions.json", server.url()))
        .send()
        .unwrap();
    let list: serde_json::Value = serde_json::from_str(list.as_str().unwrap()).unwrap();
    assert_eq!(list[0]["name"], "demo-app.json");
    assert_eq!(list[0]["url"], "session/0");
    assert!(list[0]["size"].as_u64().unwrap() > 100, "{list}");
    let session = minreq::get(format!("{}session/0", server.url()))
        .send()
        .unwrap();
    let read = prof::session::read(session.as_bytes()).unwrap();
    assert_eq!(&read, report.session());

    let addr = server.url().to_owned();
    drop(server);
    let stopped = (0..100).any(|_| {
        std::thread::sleep(Duration::from_millis(20));
        minreq::get(&addr).with_timeout(1).send().is_err()
    });
    assert!(stopped, "the server stops when its guard is dropped");

    // No browser can be started: still a working server.
    std::env::set_var("BROWSER", dir.join("no-such-browser"));
    let server = report
        .open_in_browser()
        .expect("no browser is not an error");
    assert!(
        matches!(server.browser(), prof::serve::Opened::Failed(_)),
        "{:?}",
        server.browser()
    );
    assert_eq!(minreq::get(server.url()).send().unwrap().status_code, 200);
}
