//! `prof serve --source-root DIR` against hostile source requests, over raw loopback sockets: a
//! file is served only when a frame of the served profile names it and it lies under the root.
//! The profile here is hostile too: its frames name files outside the root, by `..`, by an
//! absolute path and through symbolic links. Every test ends by checking that the server still
//! serves a named file.

use prof::session::{FrameSpec, Metadata, Mode, Session, SessionBuilder};
use prof_e2e::served::Served;
use prof_e2e::{sessions, TempDir};
use std::io::{ErrorKind, Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::time::{Duration, Instant};

const HOT: &str = "fn hot() {\n    loop {}\n}\n";

/// A profile whose frames name each of `files`, one frame (and one sample) each.
fn naming(files: &[&str]) -> Session {
    let mut b = SessionBuilder::new(Metadata {
        program: "source-app".into(),
        mode: Mode::Cpu,
        duration_ns: 10,
        ..Metadata::default()
    });
    let thread = b.thread(1, "main");
    for (i, file) in files.iter().enumerate() {
        let name = format!("f{i}");
        let frame = b.intern_frame(&FrameSpec {
            file: Some(file),
            line: Some(2),
            ..FrameSpec::named(&name)
        });
        let stack = b.intern_stack_path(&[frame]).unwrap();
        b.push_sample(stack, thread, i as u64, 1);
    }
    b.finish()
}

/// `dir/root/` (the source root: `src/hot.rs`, `Cargo.toml`, a 5 MiB `huge.rs`, links out) and
/// `dir/outside.rs`, served with a profile naming `names` (relative to the root unless absolute).
fn serve(dir: &TempDir, names: &[&str]) -> Served {
    let root = dir.join("root");
    std::fs::create_dir_all(root.join("src")).unwrap();
    std::fs::write(root.join("src/hot.rs"), HOT).unwrap();
    std::fs::write(root.join("Cargo.toml"), "[package]\n").unwrap();
    std::fs::write(dir.join("outside.rs"), "SECRET outside the root\n").unwrap();
    let huge = std::fs::File::create(root.join("huge.rs")).unwrap();
    huge.set_len(5 << 20).unwrap();
    let _ = std::os::unix::fs::symlink(dir.join("outside.rs"), root.join("link.rs"));
    let _ = std::os::unix::fs::symlink(dir.path(), root.join("up"));
    let file = dir.join("hostile.json");
    sessions::save(&naming(names), &file);
    let root = root.display().to_string();
    Served::start(&[&file], &["--port", "0", "--source-root", &root])
}

/// Sends `GET target` as it is (no normalization by a client library) and returns the status
/// and body.
fn get(served: &Served, target: &str) -> (u16, String) {
    let mut stream =
        TcpStream::connect_timeout(&served.addr(), Duration::from_secs(10)).expect("connects");
    stream
        .set_read_timeout(Some(Duration::from_millis(200)))
        .unwrap();
    let request = format!("GET {target} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
    stream.write_all(request.as_bytes()).unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    let mut bytes = Vec::new();
    let mut buf = [0u8; 64 << 10];
    while Instant::now() < deadline {
        match stream.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => bytes.extend_from_slice(&buf[..n]),
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {}
            Err(_) => break,
        }
    }
    let text = String::from_utf8_lossy(&bytes).into_owned();
    let status = text
        .get(9..12)
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("no status line in {text:?}"));
    let body = text
        .split_once("\r\n\r\n")
        .map_or("", |(_, b)| b)
        .to_owned();
    (status, body)
}

/// The path of the page, `/<secret>/`.
fn base(served: &Served) -> String {
    served.url[served.origin().len()..].to_owned()
}

fn still_serves(served: &Served) {
    let (status, body) = get(served, &format!("{}source?file=src%2Fhot.rs", base(served)));
    assert_eq!((status, body.as_str()), (200, HOT));
}

#[test]
fn a_file_a_frame_names_is_served_from_under_the_root() {
    let dir = TempDir::new("source-served");
    let absolute = dir.join("root/src/hot.rs").display().to_string();
    let served = serve(&dir, &["src/hot.rs", &absolute]);
    still_serves(&served);
    let query = absolute.replace('/', "%2F");
    let (status, body) = get(&served, &format!("{}source?file={query}", base(&served)));
    assert_eq!((status, body.as_str()), (200, HOT), "the absolute name");
    let wrong_secret = "/0123456789abcdef0123456789abcdef/source?file=src%2Fhot.rs";
    assert_eq!(get(&served, wrong_secret).0, 404);
}

#[test]
fn traversal_by_name_encoding_or_path_reads_nothing_outside_the_root() {
    let dir = TempDir::new("source-traversal");
    let outside = dir.join("outside.rs").display().to_string();
    let names = [
        "src/hot.rs",
        "../outside.rs",
        "src/../../outside.rs",
        &outside,
        "link.rs",
        "up/outside.rs",
    ];
    let served = serve(&dir, &names);
    let base = base(&served);
    let mut targets: Vec<String> = names[1..]
        .iter()
        .map(|n| format!("{base}source?file={}", n.replace('/', "%2F")))
        .collect();
    targets.extend([
        format!("{base}source?file=%2E%2E%2Foutside.rs"),
        format!("{base}source?file=../outside.rs"),
        format!("{base}source?file=src/%2e%2e/%2e%2e/outside.rs"),
        format!("{base}source/../../outside.rs"),
        format!("{base}../outside.rs"),
        format!("{base}source?file=/etc/passwd"),
    ]);
    for target in &targets {
        let (status, body) = get(&served, target);
        assert_eq!(status, 404, "{target}: {body}");
        assert!(!body.contains("SECRET"), "{target}: {body}");
        assert!(!body.contains("root:"), "{target}: {body}");
    }
    // A name a frame gives says why it is not served.
    let (_, why) = get(&served, &format!("{base}source?file=link.rs"));
    assert_eq!(why.lines().count(), 1, "{why}");
    assert!(why.contains("link.rs: outside the source root"), "{why}");
    let (_, why) = get(&served, &format!("{base}source?file=%2E%2E%2Foutside.rs"));
    assert!(why.contains("outside the source root"), "{why}");
    still_serves(&served);
}

#[test]
fn unnamed_files_directories_huge_and_missing_files_are_404_with_a_reason() {
    let dir = TempDir::new("source-kinds");
    let served = serve(&dir, &["src/hot.rs", "src", "huge.rs", "missing.rs"]);
    let base = base(&served);
    let cases = [
        (
            "Cargo.toml",
            "Cargo.toml: not named by any frame of the loaded profiles",
        ),
        ("src", "src: not a regular file"),
        ("huge.rs", "huge.rs: larger than 4 MiB"),
        ("missing.rs", "missing.rs: not found under the source root"),
    ];
    for (name, why) in cases {
        let (status, body) = get(&served, &format!("{base}source?file={name}"));
        assert_eq!(status, 404, "{name}");
        assert!(body.starts_with(why), "{name}: {body}");
    }
    still_serves(&served);
}

#[test]
fn a_source_root_that_is_not_a_directory_is_refused_in_one_line() {
    let dir = TempDir::new("source-bad-root");
    let file = dir.join("p.json");
    sessions::save(&naming(&["a.rs"]), &file);
    let missing = dir.join("nope");
    let out = prof_e2e::prof(&[
        "serve",
        "--no-open",
        "--source-root",
        missing.to_str().unwrap(),
        file.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(
        stderr.contains("--source-root") && stderr.contains("not a directory"),
        "{stderr}"
    );
    assert!(Path::new(&file).exists());
}

/// A regression test: a FIFO under the source root hung the whole server: `open` waited on the server's
/// one thread for a writer, and every request, the page's included, timed out.
#[test]
fn fifo_under_source_root_does_not_block_the_server() {
    let dir = TempDir::new("source-fifo");
    std::fs::create_dir_all(dir.join("root")).unwrap();
    let made = std::process::Command::new("mkfifo")
        .arg(dir.join("root/fifo.rs"))
        .status()
        .unwrap();
    assert!(made.success(), "mkfifo");
    let served = serve(&dir, &["src/hot.rs", "fifo.rs"]);
    let base = base(&served);
    let (status, body) = get(&served, &format!("{base}source?file=fifo.rs"));
    assert_eq!(
        (status, body.as_str()),
        (404, "fifo.rs: not a regular file")
    );
    let page = minreq::get(&served.url)
        .with_timeout(30)
        .send()
        .expect("the page is served");
    assert_eq!(page.status_code, 200);
    still_serves(&served);
}

/// A source file is sent whole, as it is, however many chunks it takes.
#[test]
fn a_source_file_of_several_chunks_is_sent_whole() {
    let dir = TempDir::new("source-long");
    std::fs::create_dir_all(dir.join("root")).unwrap();
    let text: String = (0..60_000).map(|i| format!("// line {i}: é\n")).collect();
    assert!(text.len() > 512 << 10);
    std::fs::write(dir.join("root/long.rs"), &text).unwrap();
    let served = serve(&dir, &["src/hot.rs", "long.rs"]);
    let response = minreq::get(format!("{}source?file=long.rs", served.url))
        .with_timeout(30)
        .send()
        .unwrap();
    assert_eq!(response.status_code, 200);
    assert!(response.as_str().unwrap() == text, "the text differs");
    still_serves(&served);
}

/// A regression test: a source file was read whole into memory for each request. It is sent a chunk at a
/// time as the client reads, so clients that never read hold a chunk each, not the file.
#[test]
fn clients_that_do_not_read_a_source_file_hold_no_copy_each() {
    let dir = TempDir::new("source-stalled");
    std::fs::create_dir_all(dir.join("root")).unwrap();
    let line = "// a line of source text, to fill the file up to its cap\n";
    let text = line.repeat((4 << 20) / line.len());
    std::fs::write(dir.join("root/big.rs"), &text).unwrap();
    let served = serve(&dir, &["src/hot.rs", "big.rs"]);
    let size_kib = text.len() as u64 >> 10;
    let clients = 50;
    let grown = served.rss_growth_with_stalled_clients(
        &format!("{}source?file=big.rs", base(&served)),
        clients,
        Duration::from_secs(5),
    );
    eprintln!("{clients} stalled reads of a {size_kib} KiB source: the server grew by {grown} KiB");
    assert!(
        grown < 5 * size_kib,
        "{clients} stalled reads of a {size_kib} KiB source grew the server by {grown} KiB"
    );
    still_serves(&served);
}
