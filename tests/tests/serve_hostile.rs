//! `prof serve` against hostile and broken clients, over raw loopback sockets: every
//! test ends by checking that the server still answers a normal request.

use prof_e2e::served::Served;
use prof_e2e::{sessions, TempDir};
use std::io::{ErrorKind, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// Longer than the server's 10 s head timeout, with room for a loaded machine.
const PAST_HEAD_TIMEOUT: Duration = Duration::from_secs(20);

fn demo_file(dir: &TempDir) -> PathBuf {
    let file = dir.join("demo.json");
    sessions::save(&sessions::two_threads(), &file);
    file
}

fn serve(dir: &TempDir) -> Served {
    Served::start(&[&demo_file(dir)], &["--port", "0"])
}

fn connect(addr: SocketAddr) -> TcpStream {
    let stream = TcpStream::connect_timeout(&addr, Duration::from_secs(10)).expect("connects");
    stream
        .set_read_timeout(Some(Duration::from_millis(200)))
        .unwrap();
    stream
}

/// Reads until the server closes the connection or `limit` passes; returns what came and
/// whether the connection was closed (EOF or reset).
fn read_until_closed(stream: &mut TcpStream, limit: Duration) -> (Vec<u8>, bool) {
    let deadline = Instant::now() + limit;
    let mut bytes = Vec::new();
    let mut buf = [0u8; 16 << 10];
    while Instant::now() < deadline {
        match stream.read(&mut buf) {
            Ok(0) => return (bytes, true),
            Ok(n) => bytes.extend_from_slice(&buf[..n]),
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {}
            Err(_) => return (bytes, true),
        }
    }
    (bytes, false)
}

/// Sends `request` on a new connection and reads until the server closes it (at most 10 s).
fn exchange(addr: SocketAddr, request: &[u8]) -> (String, bool) {
    let mut stream = connect(addr);
    // The server may answer and close before it has read everything.
    let _ = stream.write_all(request);
    let (bytes, closed) = read_until_closed(&mut stream, Duration::from_secs(10));
    (String::from_utf8_lossy(&bytes).into_owned(), closed)
}

/// A normal page load works: the check after every attack.
fn still_serves(served: &Served) {
    let page = minreq::get(&served.url)
        .with_timeout(30)
        .send()
        .expect("the server still answers");
    assert_eq!(page.status_code, 200);
    assert!(page.as_str().unwrap().contains("<html"));
}

fn count(dir: String) -> usize {
    std::fs::read_dir(dir).map_or(0, Iterator::count)
}

fn descriptors(pid: u32) -> usize {
    count(format!("/proc/{pid}/fd"))
}

fn threads(pid: u32) -> usize {
    count(format!("/proc/{pid}/task"))
}

/// The server's peak resident memory (`VmHWM`), in KiB.
fn peak_rss_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .expect("VmHWM in /proc/PID/status")
}

/// Waits up to 10 s for `check` to hold.
fn eventually(check: impl Fn() -> bool) -> bool {
    let deadline = Instant::now() + Duration::from_secs(10);
    while Instant::now() < deadline {
        if check() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    check()
}

#[test]
fn a_declared_body_is_refused_before_anything_is_allocated_for_it() {
    let dir = TempDir::new("hostile-body");
    let mut served = serve(&dir);
    let addr = served.addr();
    let secret_path = served.url[served.origin().len()..].to_owned();
    for request in [
        "GET / HTTP/1.1\r\nHost: x\r\nContent-Length: 99999999999\r\n\r\n".to_owned(),
        "GET / HTTP/1.1\r\nHost: x\r\nContent-Length: 30000000000\r\n\r\n".to_owned(),
        format!("GET {secret_path} HTTP/1.1\r\nHost: x\r\nContent-Length: 99999999999\r\n\r\n"),
        format!("POST {secret_path} HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhello"),
        "GET / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nffffffff\r\n".to_owned(),
    ] {
        let (response, closed) = exchange(addr, request.as_bytes());
        assert!(
            response.starts_with("HTTP/1.1 413 "),
            "{request:?}: {response}"
        );
        assert!(
            closed,
            "{request:?}: the connection is closed after the refusal"
        );
        assert!(served.is_running(), "{request:?} ended the server");
    }
    // A GET with an empty body is a GET.
    let (response, _) = exchange(
        addr,
        format!("GET {secret_path} HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
            .as_bytes(),
    );
    assert!(response.starts_with("HTTP/1.1 200 "), "{response}");
    still_serves(&served);
}

#[test]
fn other_http_versions_are_closed_and_leak_no_thread_or_descriptor() {
    let dir = TempDir::new("hostile-versions");
    let served = serve(&dir);
    let (addr, pid) = (served.addr(), served.pid());
    still_serves(&served);
    let (fds_before, threads_before) = (descriptors(pid), threads(pid));
    let requests: [&[u8]; 3] = [
        b"GET / HTTP/2.0\r\nHost: x\r\n\r\n",
        b"GET / HTTP/3.0\r\nHost: x\r\n\r\n",
        b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n",
    ];
    for round in 0..200 {
        for request in requests {
            let (response, closed) = exchange(addr, request);
            assert!(closed, "round {round}: {request:?} left open: {response}");
            assert!(
                response.is_empty() || response.starts_with("HTTP/1.1 400 "),
                "{request:?}: {response}"
            );
        }
    }
    assert!(
        eventually(|| descriptors(pid) <= fds_before),
        "descriptors: {fds_before} before 600 requests, {} after",
        descriptors(pid)
    );
    assert_eq!(threads(pid), threads_before, "threads before and after");
    still_serves(&served);
}

#[test]
fn idle_and_trickling_connections_are_closed_after_the_head_timeout() {
    let dir = TempDir::new("hostile-idle");
    let served = serve(&dir);
    let addr = served.addr();
    let start = Instant::now();
    let mut idle: Vec<TcpStream> = (0..20).map(|_| connect(addr)).collect();
    let mut trickle = connect(addr);
    trickle.write_all(b"GET / HTTP/1.1\r\n").unwrap();
    let mut trickle_closed = false;
    while !trickle_closed && start.elapsed() < PAST_HEAD_TIMEOUT {
        std::thread::sleep(Duration::from_millis(500));
        trickle_closed = trickle.write_all(b"X-Slow: 1\r\n").is_err()
            || read_until_closed(&mut trickle, Duration::from_millis(10)).1;
    }
    assert!(
        trickle_closed,
        "a head sent a line at a time is never cut off"
    );
    for (i, stream) in idle.iter_mut().enumerate() {
        let left = PAST_HEAD_TIMEOUT.saturating_sub(start.elapsed());
        let (_, closed) = read_until_closed(stream, left);
        assert!(
            closed,
            "idle connection {i} still open after {:?}",
            start.elapsed()
        );
    }
    // Not long before the 10 s are up.
    assert!(
        start.elapsed() >= Duration::from_secs(9),
        "{:?}",
        start.elapsed()
    );
    still_serves(&served);
}

#[test]
fn out_of_descriptors_the_server_waits_and_serves_again() {
    let dir = TempDir::new("hostile-fds");
    let file = demo_file(&dir);
    let mut served = Served::run_with_fd_limit(
        64,
        &[
            "serve".as_ref(),
            "--no-open".as_ref(),
            "--port".as_ref(),
            "0".as_ref(),
            file.as_os_str(),
        ],
    );
    let addr = served.addr();
    still_serves(&served);
    // More idle clients than the server has descriptors: the kernel queues the rest.
    let idle: Vec<TcpStream> = (0..100).map(|_| connect(addr)).collect();
    std::thread::sleep(Duration::from_secs(1));
    assert!(served.is_running(), "the server ended: {}", served.stderr());
    drop(idle);
    still_serves(&served);
    // Again, with the idle clients left to the server's timeout.
    let idle: Vec<TcpStream> = (0..100).map(|_| connect(addr)).collect();
    let page = minreq::get(&served.url)
        .with_timeout(60)
        .send()
        .expect("served once the idle clients time out");
    assert_eq!(page.status_code, 200);
    drop(idle);
    assert!(served.is_running());
    let stderr = served.stderr();
    assert!(!stderr.contains("panicked"), "{stderr}");
    still_serves(&served);
}

/// A client that asks and never reads must not keep its connection (and its slot among the
/// server's connections) forever.
#[test]
fn a_client_that_stops_reading_is_cut_off() {
    let dir = TempDir::new("hostile-stall");
    let served = serve(&dir);
    let path = &served.url[served.origin().len()..];
    let wasm = minreq::get(format!("{}pkg/prof_viewer_bg.wasm", served.url))
        .with_timeout(30)
        .send()
        .unwrap()
        .as_bytes()
        .len();
    // Far more than the socket buffers on both sides hold.
    let asked = 200;
    let request = format!("GET {path}pkg/prof_viewer_bg.wasm HTTP/1.1\r\nHost: x\r\n\r\n");
    let mut stream = connect(served.addr());
    stream.write_all(request.repeat(asked).as_bytes()).unwrap();
    std::thread::sleep(Duration::from_secs(25));
    let (received, closed) = read_until_closed(&mut stream, Duration::from_secs(15));
    assert!(closed, "the stalled connection is still open");
    assert!(
        received.len() < asked * wasm,
        "all {asked} responses were sent: the connection was kept while the client read nothing"
    );
    still_serves(&served);
}

#[test]
fn a_request_head_without_end_is_cut_off_at_the_cap() {
    let dir = TempDir::new("hostile-head");
    let served = serve(&dir);
    let (addr, pid) = (served.addr(), served.pid());
    still_serves(&served);
    let peak_before = peak_rss_kib(pid);
    let mut stream = connect(addr);
    stream.write_all(b"GET / HTTP/1.1\r\nX-Long: ").unwrap();
    let chunk = vec![b'a'; 1 << 20];
    let mut sent = 0;
    for _ in 0..32 {
        if stream.write_all(&chunk).is_err() {
            break;
        }
        sent += 1;
    }
    let (response, closed) = read_until_closed(&mut stream, Duration::from_secs(10));
    let response = String::from_utf8_lossy(&response);
    assert!(closed, "still open after {sent} MiB of one header line");
    assert!(
        response.is_empty() || response.starts_with("HTTP/1.1 431 "),
        "{response}"
    );
    let grown = peak_rss_kib(pid).saturating_sub(peak_before);
    assert!(grown < 8 << 10, "peak memory grew by {grown} KiB");
    still_serves(&served);
}

#[test]
fn connection_close_from_either_side_closes_the_connection() {
    let dir = TempDir::new("hostile-close");
    let served = serve(&dir);
    let path = &served.url[served.origin().len()..];
    let first = format!("GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
    let second = format!("GET {path}sessions.json HTTP/1.1\r\nHost: x\r\n\r\n");
    let mut stream = connect(served.addr());
    stream.write_all(first.as_bytes()).unwrap();
    let (mut response, mut closed) = read_until_closed(&mut stream, Duration::from_secs(1));
    // A server that kept the connection answers this one too.
    if stream.write_all(second.as_bytes()).is_ok() {
        let (more, now_closed) = read_until_closed(&mut stream, Duration::from_secs(10));
        response.extend(more);
        closed |= now_closed;
    }
    let response = String::from_utf8_lossy(&response);
    assert!(closed, "the connection is left open");
    assert_eq!(response.matches("HTTP/1.1 ").count(), 1, "{response}");
    assert!(response.starts_with("HTTP/1.1 200 "), "{response}");
    // Without it the connection is kept for the next request, unless the response says
    // `Connection: close`: then it must be closed, and no second request answered.
    let keep = format!("GET {path} HTTP/1.1\r\nHost: x\r\n\r\n");
    let mut stream = connect(served.addr());
    stream.write_all(keep.as_bytes()).unwrap();
    let (response, _) = read_until_closed(&mut stream, Duration::from_secs(1));
    let says_close = String::from_utf8_lossy(&response)
        .to_ascii_lowercase()
        .contains("\r\nconnection: close\r\n");
    let _ = stream.write_all(second.as_bytes());
    let (more, closed) = read_until_closed(&mut stream, Duration::from_secs(2));
    let more = String::from_utf8_lossy(&more);
    if says_close {
        assert!(
            closed && more.is_empty(),
            "said Connection: close, then answered: {more}"
        );
    } else {
        assert!(more.starts_with("HTTP/1.1 200 "), "kept alive: {more}");
    }
    still_serves(&served);
}

#[test]
fn accept_encoding_is_parsed_with_weights_and_any_case() {
    let dir = TempDir::new("hostile-encoding");
    let served = serve(&dir);
    let url = format!("{}session/0", served.url);
    for (accept, gzip) in [
        ("gzip", true),
        ("GZIP", true),
        ("br, gzip;q=0.5", true),
        ("*", true),
        ("gzip;q=0", false),
        ("gzip;Q=0.0, br", false),
        ("gzipped", false),
        ("identity", false),
    ] {
        let response = minreq::get(&url)
            .with_header("Accept-Encoding", accept)
            .with_timeout(30)
            .send()
            .unwrap();
        assert_eq!(response.status_code, 200);
        let encoding = response.headers.get("content-encoding").map(String::as_str);
        assert_eq!(encoding == Some("gzip"), gzip, "Accept-Encoding: {accept}");
        let json = if gzip {
            let mut json = Vec::new();
            flate2::read::GzDecoder::new(response.as_bytes())
                .read_to_end(&mut json)
                .unwrap();
            json
        } else {
            response.as_bytes().to_vec()
        };
        assert_eq!(
            prof::session::read(&json[..]).unwrap(),
            sessions::two_threads()
        );
    }
    still_serves(&served);
}

#[test]
fn files_over_the_cap_are_refused_with_bounded_memory() {
    let dir = TempDir::new("hostile-large");
    // A sparse 2 GiB file that starts like a session, and a gzip bomb.
    let sparse = dir.join("sparse.json");
    std::fs::write(&sparse, b"{\"format\": \"prof-session\", \"pad\": \"").unwrap();
    std::fs::OpenOptions::new()
        .write(true)
        .open(&sparse)
        .unwrap()
        .set_len(2 << 30)
        .unwrap();
    let bomb = Path::new(env!("CARGO_MANIFEST_DIR")).join("data/session/bomb.json.gz");
    let good = demo_file(&dir);
    let mut served = Served::start(&[&sparse, &bomb, &good], &["--port", "0"]);
    assert!(served.stderr_contains("sparse.json: the file is 2048 MiB"));
    assert!(served.stderr_contains("bomb.json.gz: "));
    for (index, name) in [(0, "sparse.json"), (1, "bomb.json.gz")] {
        let response = minreq::get(format!("{}session/{index}", served.url))
            .with_timeout(30)
            .send()
            .unwrap();
        assert_eq!(response.status_code, 422);
        let message = response.as_str().unwrap();
        assert!(message.starts_with(&format!("{name}: ")), "{message}");
        assert!(message.contains("256 MiB"), "{message}");
    }
    let response = minreq::get(format!("{}session/2", served.url))
        .with_timeout(30)
        .send()
        .unwrap();
    assert_eq!(response.status_code, 200);
    // The session reader fills up to its 256 MiB cap before it refuses the bomb; nothing more.
    let peak_mib = peak_rss_kib(served.pid()) >> 10;
    assert!(peak_mib < 400, "peak memory {peak_mib} MiB");
    assert!(served.is_running());
    still_serves(&served);
}

/// A regression test: `prof serve` refused folded, perf and pprof files that `prof report` reads.
#[test]
fn serve_shows_every_format_report_reads_as_a_session() {
    let dir = TempDir::new("hostile-formats");
    let data = Path::new(env!("CARGO_MANIFEST_DIR")).join("data/import");
    let pprof = dir.join("demo.pb.gz");
    let out = prof_e2e::prof(&[
        "convert",
        demo_file(&dir).to_str().unwrap(),
        "--to",
        "pprof",
        "-o",
        pprof.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{out:?}");
    let files = [
        data.join("sample.folded"),
        data.join("sample.perf.txt"),
        pprof,
    ];
    let refs: Vec<&Path> = files.iter().map(PathBuf::as_path).collect();
    let served = Served::start(&refs, &["--port", "0"]);
    for (index, file) in files.iter().enumerate() {
        let response = minreq::get(format!("{}session/{index}", served.url))
            .with_timeout(30)
            .send()
            .unwrap();
        assert_eq!(response.status_code, 200, "{}", file.display());
        let shown = prof::session::read(response.as_bytes()).unwrap();
        assert_eq!(
            shown,
            prof::import::load_any(file).unwrap(),
            "{} is shown as `prof report` reads it",
            file.display()
        );
    }
    still_serves(&served);
}

/// A regression test: a head of 100,000 bytes sent in one piece was answered 200, though a head must fit
/// in 64 KiB (`MAX_HEAD_BYTES`): the cap held only for heads that arrived in several reads.
#[test]
fn a_head_over_64_kib_sent_at_once_is_answered_431() {
    let dir = TempDir::new("hostile-head-whole");
    let served = serve(&dir);
    let path = &served.url[served.origin().len()..];
    let max = prof_serve::MAX_HEAD_BYTES;
    let head = |header_bytes: usize| {
        format!(
            "GET {path} HTTP/1.1\r\nHost: x\r\nX-Big: {}\r\nConnection: close\r\n\r\n",
            "a".repeat(header_bytes)
        )
    };
    for size in [100_000, max + 1, 4 * max] {
        let (response, closed) = exchange(served.addr(), head(size).as_bytes());
        assert!(
            response.starts_with("HTTP/1.1 431 "),
            "a {size}-byte header: {}",
            response.lines().next().unwrap_or("no answer")
        );
        assert!(closed, "a {size}-byte header left the connection open");
    }
    // A head that fits is served.
    let (response, _) = exchange(served.addr(), head(max - 1024).as_bytes());
    assert!(response.starts_with("HTTP/1.1 200 "), "{response:.80}");
    still_serves(&served);
}

/// A regression test: every download built its own copy of the single-file viewer (11 MB for a 14.6 MB
/// session), so 50 clients that asked and never read took the server from 36 to 586 MB. It is
/// built once and shared: what a connection holds does not depend on the file's size.
#[test]
fn clients_that_do_not_read_a_download_hold_no_copy_each() {
    let dir = TempDir::new("hostile-download");
    let file = dir.join("big.json");
    sessions::save(&sessions::noisy(1_000_000), &file);
    let served = Served::start(&[&file], &["--port", "0"]);
    let download = minreq::get(format!("{}download/0", served.url))
        .with_timeout(60)
        .send()
        .unwrap();
    assert_eq!(download.status_code, 200);
    let size_kib = download.as_bytes().len() as u64 >> 10;
    assert!(size_kib > 4 << 10, "the download is {size_kib} KiB");
    let path = &served.url[served.origin().len()..];
    let clients = 50;
    let grown = served.rss_growth_with_stalled_clients(
        &format!("{path}download/0"),
        clients,
        Duration::from_secs(5),
    );
    eprintln!("{clients} stalled downloads of {size_kib} KiB: the server grew by {grown} KiB");
    // A copy per connection would be `clients * size_kib`; a few copies' worth is allowed.
    assert!(
        grown < 5 * size_kib,
        "{clients} stalled downloads of {size_kib} KiB grew the server by {grown} KiB"
    );
    still_serves(&served);
}
