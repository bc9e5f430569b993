//! `prof serve` as a user runs it: secret URLs, 404s, MIME types, gzip, caching, ports, and the
//! embedded viewer matching the sources it was built from.

use flate2::read::GzDecoder;
use prof_e2e::served::Served;
use prof_e2e::{prof, sessions, TempDir};
use std::io::Read;
use std::path::Path;

fn get(url: &str, gzip: bool) -> minreq::Response {
    let mut request = minreq::get(url).with_timeout(30);
    if gzip {
        request = request.with_header("Accept-Encoding", "gzip");
    }
    request.send().expect("the server answers")
}

fn header<'a>(response: &'a minreq::Response, name: &str) -> Option<&'a str> {
    response.headers.get(name).map(String::as_str)
}

fn serve_demo(dir: &TempDir) -> Served {
    let file = dir.join("demo.json");
    sessions::save(&sessions::two_threads(), &file);
    Served::start(&[&file], &["--port", "0"])
}

#[test]
fn everything_lives_under_the_secret_path_and_other_paths_are_404() {
    let dir = TempDir::new("serve-secret");
    let served = serve_demo(&dir);
    let (origin, secret) = (served.origin(), &served.url[served.origin().len()..]);
    assert_eq!(
        secret.len(),
        34,
        "a 128-bit secret between slashes: {secret}"
    );
    assert_eq!(get(&served.url, false).status_code, 200);
    for path in [
        "/".to_owned(),
        "/index.html".to_owned(),
        "/app.js".to_owned(),
        "/session/0".to_owned(),
        format!("{secret}../../Cargo.toml"),
        format!("{secret}%2e%2e/Cargo.toml"),
        format!("{secret}no-such-file.js"),
        format!("/{}/", "0".repeat(32)),
    ] {
        assert_eq!(
            get(&format!("{origin}{path}"), false).status_code,
            404,
            "{path}"
        );
    }
}

#[test]
fn the_root_answers_a_page_saying_where_the_viewer_is_without_its_secret() {
    let dir = TempDir::new("serve-root");
    let served = serve_demo(&dir);
    let secret = served.url[served.origin().len()..]
        .trim_matches('/')
        .to_owned();
    // What `curl http://127.0.0.1:PORT/` gets.
    let root = get(&format!("{}/", served.origin()), false);
    assert_eq!(root.status_code, 404);
    assert_eq!(
        header(&root, "content-type"),
        Some("text/html; charset=utf-8")
    );
    let text = root.as_str().unwrap();
    assert!(
        text.contains("open the URL printed by prof serve"),
        "{text}"
    );
    assert!(!text.contains(&secret), "{text}");
}

#[test]
fn assets_have_their_mime_types_and_are_cached_and_sessions_are_gzipped() {
    let dir = TempDir::new("serve-mime");
    let served = serve_demo(&dir);
    for (path, mime) in [
        ("", "text/html; charset=utf-8"),
        ("app.js", "text/javascript; charset=utf-8"),
        ("style.css", "text/css; charset=utf-8"),
        ("pkg/prof_viewer.js", "text/javascript; charset=utf-8"),
        ("pkg/prof_viewer_bg.wasm", "application/wasm"),
    ] {
        let response = get(&format!("{}{path}", served.url), true);
        assert_eq!(response.status_code, 200, "{path}");
        assert_eq!(header(&response, "content-type"), Some(mime), "{path}");
        let cache = header(&response, "cache-control").unwrap_or("");
        assert!(cache.contains("immutable"), "{path}: {cache}");
        assert_eq!(header(&response, "referrer-policy"), Some("no-referrer"));
    }

    let list = get(&format!("{}sessions.json", served.url), true);
    let list: serde_json::Value = serde_json::from_slice(list.as_bytes()).unwrap();
    assert_eq!(list[0]["name"], "demo.json");

    let gz = get(&format!("{}session/0", served.url), true);
    assert_eq!(header(&gz, "content-encoding"), Some("gzip"));
    assert_eq!(header(&gz, "cache-control"), Some("no-store"));
    let mut json = Vec::new();
    GzDecoder::new(gz.as_bytes())
        .read_to_end(&mut json)
        .unwrap();
    let session = prof::session::read(&json[..]).expect("the served session reads back");
    assert_eq!(session, sessions::two_threads());

    let plain = get(&format!("{}session/0", served.url), false);
    assert_eq!(header(&plain, "content-encoding"), None);
    assert_eq!(plain.as_bytes(), &json[..]);
}

#[test]
fn an_exact_port_that_is_taken_fails_clearly() {
    let dir = TempDir::new("serve-port");
    let file = dir.join("demo.json");
    sessions::save(&sessions::two_threads(), &file);
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = taken.local_addr().unwrap().port().to_string();
    let out = prof(&[
        "serve",
        "--no-open",
        "--port",
        &port,
        file.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains(&format!("--port {port}")), "{err}");
    assert!(err.contains("already in use"), "{err}");
}

#[test]
fn a_missing_file_is_an_error_before_serving() {
    let out = prof(&["serve", "--no-open", "/no/such/profile.json"]);
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("/no/such/profile.json"), "{err}");
}

#[test]
fn a_non_loopback_host_is_served_with_a_warning() {
    let dir = TempDir::new("serve-host");
    let file = dir.join("demo.json");
    sessions::save(&sessions::two_threads(), &file);
    // Bind every interface but only ever talk to loopback: nothing leaves this machine.
    let served = Served::start(&[&file], &["--port", "0", "--host", "0.0.0.0"]);
    assert!(served.url.starts_with("http://0.0.0.0:"), "{}", served.url);
    let local = served.url.replacen("0.0.0.0", "127.0.0.1", 1);
    assert_eq!(get(&local, false).status_code, 200);
    assert!(served.stderr_contains("which other machines may reach"));
}

/// A regression test: a change under web/ or viewer/ reaches `prof serve` with the next `cargo build`.
/// `cargo test` rebuilds `prof` first, so the served files must be exactly the sources.
#[test]
fn the_served_viewer_is_the_current_source() {
    let dir = TempDir::new("serve-fresh");
    let served = serve_demo(&dir);
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let web = root.join("web");
    let mut files = 0;
    // Every file under web/, subfolders (such as views/) included.
    let mut paths = vec![web.clone()];
    while let Some(path) = paths.pop() {
        if path.is_dir() {
            paths.extend(std::fs::read_dir(&path).unwrap().map(|e| e.unwrap().path()));
            continue;
        }
        let name = path
            .strip_prefix(&web)
            .unwrap()
            .to_str()
            .unwrap()
            .to_owned();
        let served_bytes = get(&format!("{}{name}", served.url), false);
        assert_eq!(served_bytes.status_code, 200, "{name}");
        assert!(
            served_bytes.as_bytes() == std::fs::read(&path).unwrap(),
            "web/{name} is served stale"
        );
        files += 1;
    }
    assert!(files >= 4, "web/ holds the page, its scripts and styles");

    // Every export the viewer crate declares is in the served JS glue.
    let glue = get(&format!("{}pkg/prof_viewer.js", served.url), false);
    let glue = String::from_utf8_lossy(glue.as_bytes()).into_owned();
    let mut exports = 0;
    for entry in std::fs::read_dir(root.join("viewer/src")).unwrap() {
        let source = std::fs::read_to_string(entry.unwrap().path()).unwrap();
        for name in source.split("js_name = ").skip(1) {
            let name: String = name
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect();
            assert!(glue.contains(&name), "{name} is not in the served viewer");
            exports += 1;
        }
    }
    assert!(exports >= 5, "the viewer exports its API by js_name");
}

#[test]
fn demo_serves_its_session_like_prof_serve() {
    let dir = TempDir::new("serve-demo");
    let file = dir.join("demo.json");
    let served = Served::run(&[
        "demo".as_ref(),
        "--seconds".as_ref(),
        "0.3".as_ref(),
        "--no-open".as_ref(),
        "--port".as_ref(),
        "0".as_ref(),
        "-o".as_ref(),
        file.as_os_str(),
    ]);
    assert_eq!(get(&served.url, false).status_code, 200);
    let served_session = get(&format!("{}session/0", served.url), false);
    assert_eq!(served_session.status_code, 200);
    let saved = prof::session::read(&std::fs::read(&file).unwrap()[..]).unwrap();
    let shown = prof::session::read(served_session.as_bytes()).unwrap();
    assert_eq!(shown, saved, "the page gets exactly the session demo saved");
}

/// The root frames of the session `served` serves first.
fn served_roots(served: &Served) -> Vec<String> {
    served_roots_where(served, |_| true)
}

/// The names of the root frames of the session `served` serves whose stack node passes `keep`
/// (its index in `stacks`, and the session).
fn served_roots_where(
    served: &Served,
    keep: impl Fn((usize, &prof::session::Session)) -> bool,
) -> Vec<String> {
    let json = get(&format!("{}session/0", served.url), false);
    let session = prof::session::read(json.as_bytes()).expect("the served session reads back");
    let mut roots: Vec<String> = session
        .stacks
        .iter()
        .enumerate()
        .filter(|(i, node)| node.parent.is_none() && keep((*i, &session)))
        .map(|(_, node)| session.frame_name(node.frame).to_owned())
        .collect();
    roots.sort();
    roots.dedup();
    roots
}

/// A regression test: `prof report` and `prof convert` could start a `perf script` file's stacks with
/// their process name (`--process-root`), `prof serve` could not.
#[test]
fn serve_starts_perf_stacks_with_their_process_name_when_asked() {
    let perf = Path::new(env!("CARGO_MANIFEST_DIR")).join("data/import/perf-reference-rules.perf");
    let with = served_roots(&Served::start(&[&perf], &["--port", "0", "--process-root"]));
    assert!(
        with.iter().any(|r| r == "java") && with.iter().any(|r| r == "node"),
        "{with:?}"
    );
    // Without it, a stack starts with its process name only when the sample had no frames (the
    // name alone keeps its period, docs/exports.md): no frame is ever called from it.
    let without = served_roots_where(
        &Served::start(&[&perf], &["--port", "0"]),
        |(root, session)| {
            session
                .stacks
                .iter()
                .any(|node| node.parent.is_some_and(|p| p.index() == root))
        },
    );
    assert!(
        !without.iter().any(|r| r == "java" || r == "node"),
        "{without:?}"
    );
}
