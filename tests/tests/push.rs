//! `prof::push::Pyroscope` against stand-ins for Pyroscope: a plain `TcpListener` server that
//! implements the documented request formats (the Connect API's `push.v1.PushRequest`, decoded
//! here by a protobuf reader written from the published `push.proto`/`types.proto`, and the
//! ingest API's query parameters and body), and hostile ones that refuse, hang, reset, fail
//! then recover, or answer slowly. No real Pyroscope is involved.
//!
//! Every test profiles the whole process: they run one at a time ([`serial`]).

use prof::push::{Protocol, Pyroscope, Stats};
use prof::sampler::thread_cpu_time;
use std::collections::HashMap;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

static SERIAL: Mutex<()> = Mutex::new(());

fn serial() -> MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

// ---- the workload: two functions with a known CPU split -------------------------------------

/// Burns `cpu` of this thread's CPU time.
#[inline(never)]
fn spin(cpu: Duration) -> u64 {
    let end = thread_cpu_time() + cpu;
    let mut x = 1u64;
    while thread_cpu_time() < end {
        for _ in 0..20_000 {
            x = std::hint::black_box(x.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1));
        }
    }
    x
}

#[inline(never)]
fn push_work_heavy(cpu: Duration) -> u64 {
    std::hint::black_box(spin(cpu))
}

#[inline(never)]
fn push_work_light(cpu: Duration) -> u64 {
    std::hint::black_box(spin(cpu))
}

/// `total` of CPU time, three quarters in `push_work_heavy` and one in `push_work_light`.
fn workload(total: Duration) {
    let rounds = (total.as_millis() / 40).max(1) as u32;
    for _ in 0..rounds {
        push_work_heavy(Duration::from_millis(30));
        push_work_light(Duration::from_millis(10));
    }
}

// ---- the stand-in server --------------------------------------------------------------------

/// One request as the stand-in read it.
#[derive(Clone, Debug)]
struct Received {
    path: String,
    query: HashMap<String, String>,
    headers: HashMap<String, String>,
    body: Vec<u8>,
}

/// What the stand-in does with each connection.
#[derive(Clone, Copy)]
enum Behaviour {
    /// Reads the request, answers 200.
    Ok,
    /// Reads the request, never answers (keeps the connection open).
    Hang,
    /// Reads a few bytes and closes with the rest unread: the client gets a reset.
    Reset,
    /// Answers 500 to the first `n` requests, 200 after.
    FailFirst(u64),
    /// Reads the request, waits, then answers 200.
    Slow(Duration),
}

struct StandIn {
    addr: SocketAddr,
    received: Arc<Mutex<Vec<Received>>>,
}

impl StandIn {
    fn start(behaviour: Behaviour) -> StandIn {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let received = Arc::new(Mutex::new(Vec::new()));
        let seen = Arc::new(AtomicU64::new(0));
        let store = Arc::clone(&received);
        std::thread::spawn(move || {
            for conn in listener.incoming() {
                let Ok(conn) = conn else { continue };
                let (store, seen) = (Arc::clone(&store), Arc::clone(&seen));
                std::thread::spawn(move || serve(conn, behaviour, &store, &seen));
            }
        });
        StandIn { addr, received }
    }

    fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    fn received(&self) -> Vec<Received> {
        self.received.lock().unwrap().clone()
    }
}

fn serve(
    mut conn: TcpStream,
    behaviour: Behaviour,
    store: &Mutex<Vec<Received>>,
    seen: &AtomicU64,
) {
    if let Behaviour::Reset = behaviour {
        let mut first = [0u8; 16];
        let _ = conn.read(&mut first);
        // Closing with unread data makes the kernel answer with RST.
        return;
    }
    let Some(request) = read_request(&mut conn) else {
        return;
    };
    store.lock().unwrap().push(request);
    let n = seen.fetch_add(1, Ordering::SeqCst);
    let status = match behaviour {
        Behaviour::Hang => {
            std::thread::sleep(Duration::from_secs(600));
            return;
        }
        Behaviour::FailFirst(k) if n < k => "500 Internal Server Error",
        Behaviour::Slow(d) => {
            std::thread::sleep(d);
            "200 OK"
        }
        _ => "200 OK",
    };
    let body = if status.starts_with("200") {
        ""
    } else {
        "ingester unavailable"
    };
    let _ = write!(
        conn,
        "HTTP/1.1 {status}\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
        body.len()
    );
}

fn read_request(conn: &mut TcpStream) -> Option<Received> {
    let mut data = Vec::new();
    let mut buf = [0u8; 8192];
    let head_end = loop {
        if let Some(i) = data.windows(4).position(|w| w == b"\r\n\r\n") {
            break i;
        }
        let n = conn.read(&mut buf).ok()?;
        if n == 0 {
            return None;
        }
        data.extend_from_slice(&buf[..n]);
    };
    let head = String::from_utf8(data[..head_end].to_vec()).ok()?;
    let mut lines = head.split("\r\n");
    let mut request_line = lines.next()?.split(' ');
    assert_eq!(request_line.next(), Some("POST"));
    let target = request_line.next()?.to_owned();
    let headers: HashMap<String, String> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_owned()))
        .collect();
    let length: usize = headers.get("content-length")?.parse().ok()?;
    let mut body = data[head_end + 4..].to_vec();
    while body.len() < length {
        let n = conn.read(&mut buf).ok()?;
        if n == 0 {
            return None;
        }
        body.extend_from_slice(&buf[..n]);
    }
    let (path, query) = target.split_once('?').unwrap_or((&target, ""));
    let query = query
        .split('&')
        .filter_map(|kv| kv.split_once('='))
        .map(|(k, v)| (k.to_owned(), percent_decode(v)))
        .collect();
    Some(Received {
        path: path.to_owned(),
        query,
        headers,
        body,
    })
}

fn percent_decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' && i + 2 < bytes.len() + 1 {
            let hex = std::str::from_utf8(&bytes[i + 1..i + 3]).unwrap();
            out.push(u8::from_str_radix(hex, 16).unwrap());
            i += 3;
        } else {
            out.push(if bytes[i] == b'+' { b' ' } else { bytes[i] });
            i += 1;
        }
    }
    String::from_utf8(out).unwrap()
}

// ---- a protobuf reader for push.v1.PushRequest (from the published .proto files) ------------

/// Reads a varint at `*at`.
fn varint(data: &[u8], at: &mut usize) -> u64 {
    let mut value = 0u64;
    for shift in (0..64).step_by(7) {
        let b = data[*at];
        *at += 1;
        value |= u64::from(b & 0x7f) << shift;
        if b & 0x80 == 0 {
            break;
        }
    }
    value
}

/// The fields of one message: (field number, bytes) of its length-delimited fields; varint
/// fields are checked to be absent (none of these messages has one).
fn fields(data: &[u8]) -> Vec<(u64, &[u8])> {
    let mut at = 0;
    let mut out = Vec::new();
    while at < data.len() {
        let key = varint(data, &mut at);
        assert_eq!(
            key & 7,
            2,
            "push.v1 messages have only length-delimited fields"
        );
        let len = varint(data, &mut at) as usize;
        out.push((key >> 3, &data[at..at + len]));
        at += len;
    }
    out
}

/// One `RawProfileSeries`: its labels (`types.v1.LabelPair`: name = 1, value = 2) and its
/// samples (`RawSample`: raw_profile = 1, ID = 2).
struct Series {
    labels: Vec<(String, String)>,
    samples: Vec<(Vec<u8>, String)>,
}

/// `PushRequest { repeated RawProfileSeries series = 1; }`.
fn decode_push_request(body: &[u8]) -> Vec<Series> {
    let text = |b: &[u8]| String::from_utf8(b.to_vec()).unwrap();
    fields(body)
        .into_iter()
        .map(|(number, series)| {
            assert_eq!(number, 1);
            let mut s = Series {
                labels: Vec::new(),
                samples: Vec::new(),
            };
            for (number, part) in fields(series) {
                let f: HashMap<u64, &[u8]> = fields(part).into_iter().collect();
                match number {
                    1 => s.labels.push((text(f[&1]), text(f[&2]))),
                    2 => s
                        .samples
                        .push((f[&1].to_vec(), text(f.get(&2).copied().unwrap_or(b"")))),
                    other => panic!("unknown RawProfileSeries field {other}"),
                }
            }
            s
        })
        .collect()
}

// ---- checks ---------------------------------------------------------------------------------

/// CPU weight of samples whose stack has a frame named like `needle`, over `profiles`
/// (gzipped pprof, read back with prof's pprof reader).
fn weights(profiles: &[Vec<u8>]) -> (u64, u64) {
    let (mut heavy, mut light) = (0, 0);
    for bytes in profiles {
        assert_eq!(&bytes[..2], [0x1f, 0x8b], "the profile is gzipped");
        let Ok(session) = prof::import::pprof::read_pprof(bytes, "pushed.pb.gz".as_ref()) else {
            // A window without samples (the pprof reader refuses those).
            continue;
        };
        for i in 0..session.samples.len() {
            let names: Vec<&str> = session
                .stack_frames(session.samples.stack[i])
                .map(|f| session.frame_name(f))
                .collect();
            let w = session.samples.weight[i];
            if names.iter().any(|n| n.contains("push_work_heavy")) {
                heavy += w;
            } else if names.iter().any(|n| n.contains("push_work_light")) {
                light += w;
            }
        }
    }
    (heavy, light)
}

/// Checks the heavy function took three quarters of the two's CPU time (within 8 points, which
/// holds with two CPU hogs beside the test: weights are each thread's CPU time).
fn check_split(profiles: &[Vec<u8>]) {
    let (heavy, light) = weights(profiles);
    assert!(heavy + light > 0, "no sample in either function");
    let share = heavy as f64 / (heavy + light) as f64;
    assert!(
        (share - 0.75).abs() < 0.08,
        "push_work_heavy took {:.1}% of the two, not 75% ({heavy} and {light} ns)",
        share * 100.0
    );
}

/// Every window is accounted for once: accepted, given up, or never sent.
fn check_accounting(stats: &Stats) {
    assert!(stats.windows > 0, "{stats:?}");
    assert_eq!(
        stats.windows,
        stats.pushed + stats.failed + stats.dropped,
        "{stats:?}"
    );
}

/// The agent's hostile-server settings: short windows, a one-second timeout.
const TIMEOUT: Duration = Duration::from_secs(1);
/// The timeout against stand-ins that answer at once: a request that takes longer is a bug (or
/// a machine too loaded for anything), not the behaviour under test.
const ANSWERING_TIMEOUT: Duration = Duration::from_secs(10);
/// What stop may take beyond the timeout on a busy machine: the sampler's stop, symbolizing and
/// encoding the last window of a debug test binary.
const STOP_SLACK: Duration = Duration::from_secs(5);

/// Runs the workload under an agent pushing to `url`, with a thread counting beside it, then
/// stops the agent; returns the stats and how long stop took. Checks that the program's own
/// work went on (the counter moved while the agent was struggling).
fn run_agent(
    url: &str,
    protocol: Protocol,
    window: Duration,
    work: Duration,
    timeout: Duration,
) -> (Stats, Duration) {
    let agent = Pyroscope::new(url)
        .service("checkout")
        .label("region", "eu")
        .frequency(1000)
        .window(window)
        .timeout(timeout)
        .protocol(protocol)
        .bearer_token("s3cret")
        .tenant("team-a")
        .start()
        .unwrap();
    let running = Arc::new(AtomicBool::new(true));
    let count = Arc::new(AtomicU64::new(0));
    let counter = {
        let (running, count) = (Arc::clone(&running), Arc::clone(&count));
        std::thread::spawn(move || {
            while running.load(Ordering::Relaxed) {
                count.fetch_add(1, Ordering::Relaxed);
                std::thread::sleep(Duration::from_millis(1));
            }
        })
    };
    workload(work);
    let before = count.load(Ordering::Relaxed);
    std::thread::sleep(Duration::from_millis(300));
    assert!(
        count.load(Ordering::Relaxed) > before,
        "the program's thread stalled"
    );
    let started = Instant::now();
    let stats = agent.stop();
    let took = started.elapsed();
    running.store(false, Ordering::Relaxed);
    counter.join().unwrap();
    (stats, took)
}

// ---- tests ----------------------------------------------------------------------------------

#[test]
fn push_connect_sends_push_requests_with_labels_and_the_workload() {
    let _serial = serial();
    let server = StandIn::start(Behaviour::Ok);
    let (stats, _) = run_agent(
        &server.url(),
        Protocol::Connect,
        Duration::from_millis(700),
        Duration::from_millis(2000),
        ANSWERING_TIMEOUT,
    );
    let received = server.received();
    check_accounting(&stats);
    assert_eq!(
        (stats.pushed, stats.failed, stats.dropped),
        (received.len() as u64, 0, 0),
        "{stats:?}"
    );
    assert_eq!(
        stats.bytes_sent,
        received.iter().map(|r| r.body.len() as u64).sum::<u64>()
    );
    let mut profiles = Vec::new();
    let mut ids = Vec::new();
    for r in &received {
        assert_eq!(r.path, "/push.v1.PusherService/Push");
        assert_eq!(r.headers["content-type"], "application/proto");
        assert_eq!(r.headers["authorization"], "Bearer s3cret");
        assert_eq!(r.headers["x-scope-orgid"], "team-a");
        let series = decode_push_request(&r.body);
        assert_eq!(series.len(), 1);
        let labels: HashMap<&str, &str> = series[0]
            .labels
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect();
        assert_eq!(labels["__name__"], "process_cpu");
        assert_eq!(labels["service_name"], "checkout");
        assert_eq!(labels["region"], "eu");
        assert_eq!(series[0].samples.len(), 1);
        let (profile, id) = &series[0].samples[0];
        ids.push(id.clone());
        profiles.push(profile.clone());
    }
    ids.sort();
    ids.dedup();
    assert_eq!(ids.len(), received.len(), "each window has its own id");
    check_split(&profiles);
}

#[test]
fn push_ingest_sends_name_from_until_format_and_the_pprof_body() {
    let _serial = serial();
    let server = StandIn::start(Behaviour::Ok);
    let (stats, _) = run_agent(
        &server.url(),
        Protocol::Ingest,
        Duration::from_millis(700),
        Duration::from_millis(2000),
        ANSWERING_TIMEOUT,
    );
    let received = server.received();
    check_accounting(&stats);
    assert_eq!(
        (stats.pushed, stats.failed, stats.dropped),
        (received.len() as u64, 0, 0),
        "{stats:?}"
    );
    let mut profiles = Vec::new();
    let mut last_until = 0;
    for r in &received {
        assert_eq!(r.path, "/ingest");
        assert_eq!(r.query["name"], "checkout{region=eu}");
        assert_eq!(r.query["format"], "pprof");
        assert_eq!(r.query["sampleRate"], "1000");
        assert_eq!(r.query["spyName"], "prof");
        assert_eq!(r.headers["authorization"], "Bearer s3cret");
        let from: u64 = r.query["from"].parse().unwrap();
        let until: u64 = r.query["until"].parse().unwrap();
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_secs();
        assert!(
            from < until && until <= now + 1 && from + 60 > now,
            "{from}..{until} at {now}"
        );
        assert!(
            from + 1 >= last_until,
            "windows go forward: {from} after {last_until}"
        );
        last_until = until;
        profiles.push(r.body.clone());
    }
    check_split(&profiles);
}

#[test]
fn push_refused_connections_count_failed_and_dropped_windows_and_stop_is_bounded() {
    let _serial = serial();
    let port = {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap().port()
    };
    let url = format!("http://127.0.0.1:{port}");
    let (stats, took) = run_agent(
        &url,
        Protocol::Connect,
        Duration::from_millis(100),
        Duration::from_millis(1500),
        TIMEOUT,
    );
    check_accounting(&stats);
    assert_eq!(stats.pushed, 0, "{stats:?}");
    assert!(stats.retried > 0 && stats.failed > 0, "{stats:?}");
    assert!(
        stats.dropped > 0,
        "windows came faster than retries let them go: {stats:?}"
    );
    assert!(
        stats
            .last_error
            .as_deref()
            .unwrap()
            .contains("cannot connect"),
        "{stats:?}"
    );
    assert!(took < TIMEOUT + STOP_SLACK, "stop took {took:?}");
}

#[test]
fn push_a_server_that_never_answers_costs_stop_only_its_timeout() {
    let _serial = serial();
    let server = StandIn::start(Behaviour::Hang);
    let (stats, took) = run_agent(
        &server.url(),
        Protocol::Connect,
        Duration::from_millis(100),
        Duration::from_millis(1500),
        TIMEOUT,
    );
    check_accounting(&stats);
    assert_eq!(stats.pushed, 0, "{stats:?}");
    assert!(stats.failed >= 1 && stats.dropped > 0, "{stats:?}");
    assert!(
        stats.last_error.as_deref().unwrap().contains("no answer"),
        "{stats:?}"
    );
    assert!(took < TIMEOUT + STOP_SLACK, "stop took {took:?}");
    assert!(
        !server.received().is_empty(),
        "the requests reached the server"
    );
}

#[test]
fn push_reset_connections_are_retried_then_counted_failed() {
    let _serial = serial();
    let server = StandIn::start(Behaviour::Reset);
    let (stats, took) = run_agent(
        &server.url(),
        Protocol::Ingest,
        Duration::from_millis(250),
        Duration::from_millis(1500),
        TIMEOUT,
    );
    check_accounting(&stats);
    assert_eq!(stats.pushed, 0, "{stats:?}");
    assert!(stats.retried > 0 && stats.failed > 0, "{stats:?}");
    assert!(took < TIMEOUT + STOP_SLACK, "stop took {took:?}");
}

#[test]
fn push_a_500_is_retried_with_the_same_window_and_then_accepted() {
    let _serial = serial();
    let server = StandIn::start(Behaviour::FailFirst(1));
    let (stats, _) = run_agent(
        &server.url(),
        Protocol::Connect,
        Duration::from_millis(400),
        Duration::from_millis(1200),
        ANSWERING_TIMEOUT,
    );
    check_accounting(&stats);
    let received = server.received();
    assert_eq!(
        (stats.failed, stats.dropped, stats.retried),
        (0, 0, 1),
        "{stats:?}"
    );
    assert_eq!(stats.pushed, received.len() as u64 - 1, "{stats:?}");
    assert!(stats
        .last_error
        .as_deref()
        .unwrap()
        .contains("HTTP 500: ingester unavailable"));
    let id = |r: &Received| decode_push_request(&r.body)[0].samples[0].1.clone();
    assert_eq!(
        id(&received[0]),
        id(&received[1]),
        "the retry resends the refused window"
    );
}

#[test]
fn push_a_slow_server_drops_the_oldest_windows_not_the_program() {
    let _serial = serial();
    let server = StandIn::start(Behaviour::Slow(Duration::from_millis(400)));
    let (stats, took) = run_agent(
        &server.url(),
        Protocol::Connect,
        Duration::from_millis(100),
        Duration::from_millis(2000),
        TIMEOUT,
    );
    check_accounting(&stats);
    assert!(stats.pushed > 0, "{stats:?}");
    assert!(
        stats.dropped > 0,
        "windows came 4 times faster than the server took them: {stats:?}"
    );
    assert!(took < TIMEOUT + STOP_SLACK, "stop took {took:?}");
}

#[test]
fn push_dropping_the_agent_pushes_the_window_under_way() {
    let _serial = serial();
    let server = StandIn::start(Behaviour::Ok);
    let agent = Pyroscope::new(server.url())
        .service("checkout")
        .frequency(1000)
        .window(Duration::from_secs(600))
        .start()
        .unwrap();
    workload(Duration::from_millis(400));
    drop(agent);
    let received = server.received();
    assert_eq!(received.len(), 1, "the one window, cut short by the drop");
    let series = decode_push_request(&received[0].body);
    let (heavy, light) = weights(&[series[0].samples[0].0.clone()]);
    assert!(heavy > light && light > 0, "{heavy} {light}");
}

#[test]
fn push_start_refuses_a_second_session_and_bad_settings_in_one_line() {
    let _serial = serial();
    let profiler = prof::Profiler::start(prof::Options::default()).unwrap();
    let err = Pyroscope::new("http://127.0.0.1:9").start().err().unwrap();
    assert_eq!(
        err.to_string(),
        "a profiling session is already running in this process"
    );
    drop(profiler);
    for (builder, says) in [
        (Pyroscope::new("https://x"), "https is not supported"),
        (
            Pyroscope::new("http://x").window(Duration::ZERO),
            "shorter than 100 ms",
        ),
        (
            Pyroscope::new("http://x").frequency(0),
            "not within 1..=10000",
        ),
        (
            Pyroscope::new("http://x").label("a-b", "v"),
            "label name `a-b`",
        ),
    ] {
        let err = builder.start().err().unwrap().to_string();
        assert!(err.contains(says) && !err.contains('\n'), "{err}");
    }
}

#[test]
fn push_wall_mode_files_wall_profiles_and_alloc_mode_needs_the_allocator() {
    let _serial = serial();
    let server = StandIn::start(Behaviour::Ok);
    let agent = Pyroscope::new(server.url())
        .service("checkout")
        .mode(prof::Mode::Wall)
        .frequency(200)
        .window(Duration::from_secs(600))
        .start()
        .unwrap();
    workload(Duration::from_millis(200));
    std::thread::sleep(Duration::from_millis(200));
    let stats = agent.stop();
    assert_eq!((stats.windows, stats.pushed), (1, 1), "{stats:?}");
    let series = decode_push_request(&server.received()[0].body);
    let name = series[0].labels.iter().find(|(k, _)| k == "__name__");
    assert_eq!(name.map(|(_, v)| v.as_str()), Some("wall"));
    let bytes = &series[0].samples[0].0;
    let session = prof::import::pprof::read_pprof(bytes, "wall.pb.gz".as_ref()).unwrap();
    assert_eq!(session.meta.sample_type.name, "wall");
    // This test binary's allocator is the system's: alloc mode is refused, in one line.
    let err = Pyroscope::new(server.url())
        .mode(prof::Mode::Alloc)
        .start()
        .err()
        .unwrap()
        .to_string();
    assert!(err.contains("prof::alloc::Sampling"), "{err}");
}
