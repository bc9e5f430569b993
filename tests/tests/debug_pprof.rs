//! `prof::debug::serve` (feature `debug-http`) end to end: a real program serving Go's
//! `/debug/pprof` paths (`src/bin/debug_pprof_target.rs`), read by the real `go tool pprof`, and
//! hostile or clumsy clients that must leave it running and serving.

use prof_e2e::TempDir;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::time::{Duration, Instant};

/// A running test program, killed when dropped.
struct Target {
    child: Child,
    addr: SocketAddr,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
}

impl Target {
    /// Starts the program `exe` and reads the address it serves on.
    fn start(exe: &str) -> Target {
        let mut child = Command::new(exe)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("{exe}: {e}"));
        let stdin = child.stdin.take().unwrap();
        let mut stdout = BufReader::new(child.stdout.take().unwrap());
        let mut line = String::new();
        stdout.read_line(&mut line).unwrap();
        let addr = line
            .trim()
            .strip_prefix("listening ")
            .unwrap_or_else(|| panic!("{exe} printed {line:?}"))
            .parse()
            .unwrap();
        Target {
            child,
            addr,
            stdin,
            stdout,
        }
    }

    /// The program with `prof::alloc::Sampling` and known work.
    fn with_work() -> Target {
        Target::start(env!("CARGO_BIN_EXE_debug_pprof_target"))
    }

    fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }

    /// Sends `command` to the program and returns the line it answers.
    fn command(&mut self, command: &str) -> String {
        writeln!(self.stdin, "{command}").unwrap();
        self.stdin.flush().unwrap();
        let mut line = String::new();
        self.stdout.read_line(&mut line).unwrap();
        line.trim().to_owned()
    }

    /// Fails the test when the program has exited.
    fn assert_running(&mut self) {
        assert_eq!(self.child.try_wait().unwrap(), None, "the program exited");
    }

    /// Waits until the index page says a profile's session is sampling (`busy`) or that none is
    /// being taken, for up to `limit`.
    fn wait_until_busy(&self, busy: bool, limit: Duration) {
        let since = Instant::now();
        let want = if busy {
            "A profile is being taken now"
        } else {
            "No profile is being taken now"
        };
        loop {
            let (_, _, page) = self.get("/debug/pprof/");
            if String::from_utf8_lossy(&page).contains(want) {
                return;
            }
            assert!(since.elapsed() < limit, "busy never became {busy}");
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// `GET path` on a new connection: the status, the head and the body.
    fn get(&self, path: &str) -> (u16, String, Vec<u8>) {
        get(self.addr, path)
    }
}

impl Drop for Target {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `GET path` from `addr` on a connection of its own (closed after the response).
fn get(addr: SocketAddr, path: &str) -> (u16, String, Vec<u8>) {
    let mut stream = TcpStream::connect(addr).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(120)))
        .unwrap();
    write!(
        stream,
        "GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut bytes = Vec::new();
    stream.read_to_end(&mut bytes).unwrap();
    let split = bytes
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .unwrap_or_else(|| panic!("{path}: no head in {:?}", String::from_utf8_lossy(&bytes)));
    let head = String::from_utf8_lossy(&bytes[..split]).into_owned();
    let status = head
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("{path}: {head}"));
    (status, head, bytes[split + 4..].to_vec())
}

/// Runs `go tool pprof ARGS` (fetching over HTTP, with its downloads kept in `dir`) and returns
/// its standard output.
fn go_pprof(dir: &TempDir, args: &[&str]) -> String {
    let out = Command::new("go")
        // Its own limit is 1.5 times the profile's seconds (3 s for 2): too short for a debug
        // build of prof to symbolize on a busy machine.
        .args(["tool", "pprof", "-timeout", "120"])
        .args(args)
        .env("PPROF_TMPDIR", dir.path())
        .output()
        .unwrap_or_else(|e| {
            panic!("go tool pprof could not run ({e}): run .ci/run's install step")
        });
    assert!(
        out.status.success(),
        "go tool pprof {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// From `go tool pprof -raw` output: each sample's first value (the count) and the function
/// names of its stack.
fn raw_samples(raw: &str) -> Vec<(i64, Vec<String>)> {
    fn section<'a>(raw: &'a str, name: &'a str) -> impl Iterator<Item = &'a str> {
        raw.lines()
            .skip_while(move |l| l.trim() != name)
            .skip(1)
            .take_while(|l| !matches!(l.trim(), "Samples:" | "Locations" | "Mappings"))
    }
    // "     7: 0x1234 M=1 name file:line s=0" and, for inlined callers, "  name file:line s=0".
    let mut functions: std::collections::HashMap<u64, Vec<String>> = Default::default();
    let mut current = 0;
    for line in section(raw, "Locations") {
        let mut words = line.split_whitespace().peekable();
        if let Some(id) = words
            .peek()
            .and_then(|w| w.strip_suffix(':'))
            .and_then(|id| id.parse().ok())
        {
            current = id;
            words.next();
            words.next(); // the address
            if words.peek().is_some_and(|w| w.starts_with("M=")) {
                words.next();
            }
        }
        if let Some(name) = words.next() {
            functions.entry(current).or_default().push(name.to_owned());
        }
    }
    section(raw, "Samples:")
        .filter_map(|line| {
            let (values, stack) = line.split_once(':')?;
            let count = values.split_whitespace().next()?.parse().ok()?;
            let names = stack
                .split_whitespace()
                .filter_map(|id| id.parse::<u64>().ok())
                .flat_map(|id| functions.get(&id).cloned().unwrap_or_default())
                .collect();
            Some((count, names))
        })
        .collect()
}

/// The share of `samples` (by count) whose stack holds a function named `name` or ending in
/// `::name`.
fn share(samples: &[(i64, Vec<String>)], name: &str) -> f64 {
    let total: i64 = samples.iter().map(|s| s.0).sum();
    let with: i64 = samples
        .iter()
        .filter(|(_, stack)| {
            stack
                .iter()
                .any(|f| f == name || f.ends_with(&format!("::{name}")))
        })
        .map(|s| s.0)
        .sum();
    with as f64 / total.max(1) as f64
}

/// The `cum%` of the function named `...::name` in `go tool pprof -top` output (rows: flat
/// flat% sum% cum cum% name), 0 when it is not listed.
fn cum_percent(top: &str, name: &str) -> f64 {
    top.lines()
        .find(|l| l.trim_end().ends_with(&format!("::{name}")))
        .and_then(|l| l.split_whitespace().nth(4))
        .and_then(|p| p.trim_end_matches('%').parse::<f64>().ok())
        .unwrap_or(0.0)
}

#[test]
fn go_tool_pprof_reads_the_cpu_profile_and_its_three_to_one_split() {
    let target = Target::with_work();
    let dir = TempDir::new("debug-pprof-cpu");
    // 2-second profiles at 100 Hz of a thread that may get only part of a core beside other
    // tests and CPU hogs: as many are fetched as make 200 samples (up to 8), so that the split
    // can be checked within +-12 points of 75% (over 4 standard deviations at 200 samples).
    let mut samples = Vec::new();
    let mut raw = String::new();
    for _ in 0..8 {
        raw = go_pprof(
            &dir,
            &["-raw", &target.url("/debug/pprof/profile?seconds=2")],
        );
        assert!(raw.contains("PeriodType: cpu nanoseconds"), "{raw}");
        samples.extend(raw_samples(&raw));
        if samples.iter().map(|s| s.0).sum::<i64>() >= 200 {
            break;
        }
    }
    let (three, one) = (share(&samples, "hot_three"), share(&samples, "hot_one"));
    let split = three / (three + one);
    let count: i64 = samples.iter().map(|s| s.0).sum();
    assert!(
        (0.63..=0.87).contains(&split),
        "hot_three {three:.3}, hot_one {one:.3} of {count} samples: {split:.3} of their sum, not about 0.75\n{raw}"
    );
    assert!(
        three + one > 0.5,
        "the main thread's work is most of the profile: {raw}"
    );
}

#[test]
fn go_tool_pprof_reads_the_heap_profile_with_go_sample_types() {
    let target = Target::with_work();
    let dir = TempDir::new("debug-pprof-heap");
    let top = go_pprof(
        &dir,
        &[
            "-sample_index=inuse_space",
            "-top",
            "-cum",
            &target.url("/debug/pprof/heap?seconds=2"),
        ],
    );
    assert!(top.contains("Type: inuse_space"), "{top}");
    let cum = |name| cum_percent(&top, name);
    // Everything still allocated at the end of the window was allocated by retain_blocks (it
    // keeps 256 blocks of 64 KiB; churn_blocks frees its block at once).
    assert!(cum("retain_blocks") >= 90.0, "{top}");
    assert!(cum("churn_blocks") <= 5.0, "{top}");
    // allocs is the same data with alloc_space first: both functions allocate as much.
    let allocs = go_pprof(
        &dir,
        &["-top", "-cum", &target.url("/debug/pprof/allocs?seconds=2")],
    );
    assert!(allocs.contains("Type: alloc_space"), "{allocs}");
    let cum = |name| cum_percent(&allocs, name);
    let (kept, churned) = (cum("retain_blocks"), cum("churn_blocks"));
    assert!(
        (30.0..=70.0).contains(&kept) && (30.0..=70.0).contains(&churned),
        "retain_blocks {kept}%, churn_blocks {churned}%: about half each\n{allocs}"
    );
}

#[test]
fn the_wall_profile_and_the_index_page_are_served() {
    let target = Target::with_work();
    let dir = TempDir::new("debug-pprof-wall");
    let raw = go_pprof(&dir, &["-raw", &target.url("/debug/pprof/wall?seconds=1")]);
    assert!(raw.contains("PeriodType: wall nanoseconds"), "{raw}");
    assert!(share(&raw_samples(&raw), "hot_three") > 0.0, "{raw}");
    let (status, head, body) = target.get("/debug/pprof/");
    let page = String::from_utf8_lossy(&body);
    assert_eq!(status, 200, "{head}");
    assert!(head.contains("text/html"), "{head}");
    for name in ["profile", "wall", "heap", "allocs"] {
        assert!(
            page.contains(&format!("href=\"{name}?seconds=30\"")),
            "{page}"
        );
    }
    let (status, head, _) = target.get("/debug/pprof");
    assert_eq!(status, 301, "{head}");
    assert!(head.contains("location: /debug/pprof/"), "{head}");
}

#[test]
fn a_profile_is_an_attachment_named_as_go_names_it() {
    let target = Target::with_work();
    let (status, head, body) = target.get("/debug/pprof/profile?seconds=1&debug=0");
    assert_eq!(status, 200, "{head}");
    assert!(
        head.contains("content-type: application/octet-stream"),
        "{head}"
    );
    assert!(
        head.contains("content-disposition: attachment; filename=\"profile\""),
        "{head}"
    );
    assert_eq!(&body[..2], [0x1f, 0x8b], "gzipped pprof");
}

#[test]
fn without_the_sampling_allocator_heap_is_a_404_saying_how_to_enable_it() {
    let target = Target::start(env!("CARGO_BIN_EXE_debug_pprof_plain"));
    for path in ["/debug/pprof/heap", "/debug/pprof/allocs?seconds=1"] {
        let (status, head, body) = target.get(path);
        let text = String::from_utf8_lossy(&body);
        assert_eq!(status, 404, "{head}");
        assert_eq!(text.lines().count(), 1, "{text}");
        assert!(text.contains("prof::alloc::Sampling"), "{text}");
    }
    let (status, _, body) = target.get("/debug/pprof/profile?seconds=1");
    assert_eq!(status, 200, "{}", String::from_utf8_lossy(&body));
}

#[test]
fn bad_seconds_are_a_400_with_the_reason_and_the_program_keeps_serving() {
    let mut target = Target::with_work();
    for bad in ["99999999", "-1", "abc", "0", "3601", "1.5"] {
        let (status, head, body) = target.get(&format!("/debug/pprof/profile?seconds={bad}"));
        let text = String::from_utf8_lossy(&body);
        assert_eq!(status, 400, "seconds={bad}: {head}");
        assert!(text.contains("from 1 to 3600"), "{text}");
    }
    target.assert_running();
    let (status, _, _) = target.get("/debug/pprof/profile?seconds=1");
    assert_eq!(status, 200);
}

#[test]
fn a_second_profile_while_one_runs_is_a_409_and_the_next_one_works() {
    let mut target = Target::with_work();
    let addr = target.addr;
    let first = std::thread::spawn(move || get(addr, "/debug/pprof/profile?seconds=6"));
    target.wait_until_busy(true, Duration::from_secs(5));
    let (status, _, body) = target.get("/debug/pprof/wall?seconds=1");
    let refused = String::from_utf8_lossy(&body);
    assert_eq!(status, 409, "{refused}");
    assert!(refused.contains("one at a time"), "{refused}");
    let (status, head, _) = first.join().unwrap();
    assert_eq!(status, 200, "{head}");
    target.assert_running();
    let (status, _, _) = target.get("/debug/pprof/profile?seconds=1");
    assert_eq!(status, 200);
}

#[test]
fn a_client_that_leaves_mid_profile_ends_its_session() {
    let mut target = Target::with_work();
    let mut stream = TcpStream::connect(target.addr).unwrap();
    write!(
        stream,
        "GET /debug/pprof/profile?seconds=120 HTTP/1.1\r\nHost: x\r\n\r\n"
    )
    .unwrap();
    target.wait_until_busy(true, Duration::from_secs(5));
    drop(stream);
    // Its session ends with it, long before its 120 seconds.
    target.wait_until_busy(false, Duration::from_secs(30));
    let (status, head, _) = target.get("/debug/pprof/profile?seconds=1");
    assert_eq!(status, 200, "{head}");
    target.assert_running();
}

#[test]
fn slow_clients_leave_the_program_serving() {
    let mut target = Target::with_work();
    // One that sends half a head and stops, one that asks for a profile and never reads it, and
    // a few idle connections.
    let mut half = TcpStream::connect(target.addr).unwrap();
    half.write_all(b"GET /debug/pprof/prof").unwrap();
    let mut never_reads = TcpStream::connect(target.addr).unwrap();
    write!(
        never_reads,
        "GET /debug/pprof/profile?seconds=1 HTTP/1.1\r\nHost: x\r\n\r\n\
         GET /debug/pprof/ HTTP/1.1\r\nHost: x\r\n\r\n"
    )
    .unwrap();
    let idle: Vec<TcpStream> = (0..20)
        .map(|_| TcpStream::connect(target.addr).unwrap())
        .collect();
    // The profile the second client asked for is taken and sent (into its socket's buffers).
    std::thread::sleep(Duration::from_secs(1));
    target.wait_until_busy(false, Duration::from_secs(30));
    let (status, _, body) = target.get("/debug/pprof/profile?seconds=1");
    assert_eq!(status, 200, "{}", String::from_utf8_lossy(&body));
    let (status, _, _) = target.get("/debug/pprof/");
    assert_eq!(status, 200);
    target.assert_running();
    drop((half, never_reads, idle));
}

#[test]
fn a_profile_during_the_programs_own_session_is_a_409_that_leaves_it_intact() {
    let mut target = Target::with_work();
    assert_eq!(target.command("start"), "started");
    let (status, _, body) = target.get("/debug/pprof/profile?seconds=1");
    let text = String::from_utf8_lossy(&body);
    assert_eq!(status, 409, "{text}");
    assert!(text.contains("its own profiling session"), "{text}");
    // The program's session runs long enough for its work to be sampled beside other busy
    // processes (stopped at once, its thread may not have run one sampling interval yet).
    std::thread::sleep(Duration::from_millis(300));
    let stopped = target.command("stop");
    let samples: u64 = stopped
        .strip_prefix("stopped ")
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("{stopped}"));
    assert!(samples > 0, "{stopped}");
    let (status, _, _) = target.get("/debug/pprof/profile?seconds=1");
    assert_eq!(status, 200);
    // And a session of the endpoint's refuses the program's own, which fails cleanly.
    let addr = target.addr;
    let taking = std::thread::spawn(move || get(addr, "/debug/pprof/profile?seconds=4"));
    target.wait_until_busy(true, Duration::from_secs(5));
    let answer = target.command("start");
    assert!(answer.starts_with("refused"), "{answer}");
    assert_eq!(taking.join().unwrap().0, 200);
    target.assert_running();
}

#[test]
fn dropping_the_server_mid_profile_ends_its_session_and_closes_the_port() {
    let mut target = Target::with_work();
    let addr = target.addr;
    let taking = std::thread::spawn(move || {
        let mut stream = TcpStream::connect(addr).unwrap();
        stream
            .set_read_timeout(Some(Duration::from_secs(120)))
            .unwrap();
        write!(
            stream,
            "GET /debug/pprof/profile?seconds=120 HTTP/1.1\r\nHost: x\r\n\r\n"
        )
        .unwrap();
        let mut bytes = Vec::new();
        let _ = stream.read_to_end(&mut bytes);
        bytes
    });
    target.wait_until_busy(true, Duration::from_secs(5));
    assert_eq!(target.command("drop"), "dropped");
    // The client's connection is closed without a response, long before its 120 seconds.
    assert_eq!(taking.join().unwrap(), b"");
    assert!(TcpStream::connect(addr).is_err(), "{addr} still accepts");
    // The session is over: the program can start its own.
    assert_eq!(target.command("start"), "started");
    assert!(target.command("stop").starts_with("stopped "));
    target.assert_running();
}
