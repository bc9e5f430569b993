//! `Report::open_in_browser` from inside a program: serves in-process, starts `$BROWSER` with the
//! URL, and keeps going when no browser can be started.
//!
//! `$BROWSER` is the environment's to set, not the program's: each case runs this test binary
//! again as a child with `$BROWSER` in its environment (`Command::env`), and the child checks.

use prof::Report;
use prof_e2e::{sessions, TempDir};
use std::os::unix::fs::PermissionsExt;
use std::time::{Duration, Instant};

/// Set in the child: which case it runs, `script` or `missing`.
const CHILD_ENV: &str = "PROF_OPEN_IN_BROWSER_CHILD";
/// Set in the child: the file the `script` case's browser writes the URL to.
const OPENED_ENV: &str = "PROF_OPEN_IN_BROWSER_OPENED";

/// Runs `case` in a child with `$BROWSER` set to `browser`; fails if the child's checks did.
fn run_child(case: &str, browser: &std::path::Path, opened: &std::path::Path) {
    let out = std::process::Command::new(std::env::current_exe().unwrap())
        .args(["--exact", &child_test_name(), "--nocapture"])
        .env(CHILD_ENV, case)
        .env(OPENED_ENV, opened)
        .env("BROWSER", browser)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{case}: {stdout}{stderr}");
    assert!(
        stdout.contains("1 passed"),
        "{case}: the child ran: {stdout}"
    );
}

/// The test harness's name of [`open_in_browser_child`]: its path in the test binary, which is
/// this file's module path without the crate's name (none when the file is a binary itself).
fn child_test_name() -> String {
    match module_path!().split_once("::") {
        Some((_crate, module)) => format!("{module}::open_in_browser_child"),
        None => "open_in_browser_child".to_owned(),
    }
}

#[test]
fn open_in_browser_serves_the_report_and_starts_the_browser() {
    let dir = TempDir::new("open-in-browser");
    let opened = dir.join("opened.txt");
    let script = dir.join("browser.sh");
    std::fs::write(
        &script,
        // Written under another name and renamed, so the file the child waits for appears
        // with the URL in it (a loaded machine can run the child between `>` and `echo`).
        format!(
            "#!/bin/sh\necho \"$1\" > {0}.part && mv {0}.part {0}\n",
            opened.display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    run_child("script", &script, &opened);
    assert!(opened.exists(), "the child's $BROWSER was started");
    run_child("missing", &dir.join("no-such-browser"), &opened);
    // A browser command that fails at once opened nothing.
    run_child("failing", std::path::Path::new("false"), &opened);
    // The host and port can be chosen.
    run_child("port", std::path::Path::new("true"), &opened);
}

/// Run in a child process by the test above, with `$BROWSER` set for the case.
#[test]
fn open_in_browser_child() {
    let Some(case) = std::env::var_os(CHILD_ENV) else {
        return;
    };
    if case == "missing" {
        no_browser_is_still_a_working_server();
        return;
    }
    if case == "failing" {
        let report = Report::new(sessions::two_threads());
        let server = report.open_in_browser().expect("the server starts");
        let prof::serve::Opened::Failed(why) = server.browser() else {
            panic!("BROWSER=false: {:?}", server.browser());
        };
        assert!(why.contains("false: exited at once"), "{why}");
        return;
    }
    if case == "port" {
        use prof::serve::{Port, ServeOptions};
        // A free port, from the system, then asked for exactly.
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let report = Report::new(sessions::two_threads());
        let options = ServeOptions::new([127, 0, 0, 1].into(), Port::Exact(port));
        let server = report
            .open_in_browser_with(&options)
            .expect("the server starts");
        assert!(
            server
                .url()
                .starts_with(&format!("http://127.0.0.1:{port}/")),
            "{}",
            server.url()
        );
        assert!(matches!(server.browser(), prof::serve::Opened::Launched(_)));
        assert_eq!(minreq::get(server.url()).send().unwrap().status_code, 200);
        return;
    }
    let opened = std::path::PathBuf::from(std::env::var_os(OPENED_ENV).unwrap());
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
}

/// `$BROWSER` names no program: still a working server.
fn no_browser_is_still_a_working_server() {
    let report = Report::new(sessions::two_threads());
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
