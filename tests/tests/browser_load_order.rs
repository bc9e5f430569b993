//! The order of a page load's requests, seen from a loopback proxy between a real headless
//! Chromium and `prof serve`: the session's download waits neither for the wasm module nor for
//! the page's modules.
//!
//! Regression: the worker answers questions one at a time, and the page's first question
//! (`init`) waits for the module to compile; the `load` behind it asked for the session only
//! then, so on the 1M-sample bench the download started after the compilation instead of
//! beside it. And app.js, which asked for it, runs only once its thirty modules have arrived,
//! which on a loaded machine took a few hundred milliseconds (web/boot.js now asks first). The
//! proxy holds one request back until the session has been asked for (for up to 10 s): with
//! either bug the session is asked for only after that timeout.

use prof_e2e::page::LOAD;
use prof_e2e::served::Served;
use prof_e2e::sessions;
use prof_e2e::webdriver::Browser;
use prof_e2e::TempDir;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

/// How long the proxy holds the wasm module back at most.
const HOLD: Duration = Duration::from_secs(10);

/// What the proxy holds back, and what it saw.
struct Seen {
    /// The end of the held request's first line, e.g. `prof_viewer_bg.wasm HTTP/`.
    held: &'static [u8],
    session: AtomicBool,
    /// Set when the held request was let through after the session's.
    held_after_session: AtomicBool,
    /// Set once the held request has been let through.
    held_sent: AtomicBool,
    stop: AtomicBool,
}

impl Seen {
    fn holding(held: &'static [u8]) -> Seen {
        Seen {
            held,
            session: AtomicBool::new(false),
            held_after_session: AtomicBool::new(false),
            held_sent: AtomicBool::new(false),
            stop: AtomicBool::new(false),
        }
    }
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle)
}

/// Copies one connection's requests to `upstream`, holding the request `seen.held` names back
/// until the session's has been seen (or [`HOLD`] has passed).
fn requests(mut client: TcpStream, mut upstream: TcpStream, seen: &Seen) {
    let mut buf = vec![0u8; 64 * 1024];
    while let Ok(n) = client.read(&mut buf) {
        if n == 0 {
            break;
        }
        let chunk = &buf[..n];
        if contains(chunk, b"GET ") && contains(chunk, b"/session/0 HTTP/") {
            seen.session.store(true, Ordering::SeqCst);
        }
        if contains(chunk, seen.held) {
            let start = Instant::now();
            while !seen.session.load(Ordering::SeqCst) && start.elapsed() < HOLD {
                thread::sleep(Duration::from_millis(10));
            }
            let after = seen.session.load(Ordering::SeqCst);
            seen.held_after_session.store(after, Ordering::SeqCst);
            seen.held_sent.store(true, Ordering::SeqCst);
        }
        if upstream.write_all(chunk).is_err() {
            break;
        }
    }
    let _ = upstream.shutdown(std::net::Shutdown::Write);
}

/// A loopback proxy to `server`; returns its address. It stops accepting once `seen.stop` is set.
fn proxy(server: SocketAddr, seen: Arc<Seen>) -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let addr = listener.local_addr().unwrap();
    thread::spawn(move || {
        let deadline = Instant::now() + Duration::from_secs(120);
        while !seen.stop.load(Ordering::SeqCst) && Instant::now() < deadline {
            let Ok((client, _)) = listener.accept() else {
                thread::sleep(Duration::from_millis(5));
                continue;
            };
            client.set_nonblocking(false).unwrap();
            let upstream = TcpStream::connect(server).unwrap();
            let (mut from_server, mut to_client) =
                (upstream.try_clone().unwrap(), client.try_clone().unwrap());
            thread::spawn(move || {
                let _ = std::io::copy(&mut from_server, &mut to_client);
                let _ = to_client.shutdown(std::net::Shutdown::Write);
            });
            let seen = Arc::clone(&seen);
            thread::spawn(move || requests(client, upstream, &seen));
        }
    });
    addr
}

/// Loads the page through a proxy holding `held` back, and checks that the session was asked
/// for meanwhile; `what` names the held request in the failure, `name` the test's directories.
fn session_asked_for_while_holding(name: &str, held: &'static [u8], what: &str) {
    let dir = TempDir::new(name);
    let session = dir.join("demo.json");
    sessions::save(&sessions::two_threads(), &session);
    let served = Served::start(&[&session], &["--port", "0"]);
    let seen = Arc::new(Seen::holding(held));
    let addr = proxy(served.addr(), Arc::clone(&seen));
    let path = &served.url[served.origin().len()..];

    let browser = Browser::start(name, 1000, 600, 1.0);
    browser.goto(&format!("http://{addr}{path}"));
    let start = Instant::now();
    while !seen.held_sent.load(Ordering::SeqCst) && start.elapsed() < LOAD {
        thread::sleep(Duration::from_millis(20));
    }
    assert!(
        seen.held_after_session.load(Ordering::SeqCst),
        "the session was not asked for while {what} was held back (for {HOLD:?})"
    );
    browser.wait_for(
        "document.body.dataset.state === 'ready'",
        LOAD,
        "the page to load through the proxy",
    );
    seen.stop.store(true, Ordering::SeqCst);
}

#[test]
fn the_session_download_does_not_wait_for_the_wasm_module() {
    session_asked_for_while_holding(
        "load-order-wasm",
        b"prof_viewer_bg.wasm HTTP/",
        "the wasm module",
    );
}

#[test]
fn the_session_download_does_not_wait_for_the_page_s_modules() {
    // A module app.js imports (through views/flame-graph.js): app.js cannot run before it
    // arrives.
    session_asked_for_while_holding(
        "load-order-modules",
        b"/flame.js HTTP/",
        "a module of the page",
    );
}
