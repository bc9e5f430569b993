//! What the server answers to each request, as a function of the method and path, so it can be
//! tested without sockets. Only the embedded assets, the sessions handed to the server and the
//! source files their frames name exist here: a request's path never reaches the filesystem,
//! and a source request only picks one of the names the sessions gave (see [`super::source_files`]);
//! a disassembly request picks a session and one of its mappings by index (see [`super::disasm`]).

use super::assets;
use super::body::Payload;
use super::disasm::{Binaries, Wanted};
use super::reply::{Reply, CACHE_IMMUTABLE, CACHE_NONE};
use super::source_files::Sources;
use bytes::Bytes;
use flate2::{write::GzEncoder, Compression};
use serde::Serialize;
use std::borrow::Cow;
use std::io::Write;
use subtle::ConstantTimeEq;

/// What the server's bare root (`/`) answers, with status 404: where the viewer is, without
/// saying it (its path holds the secret, which only the one who started the server has).
const ROOT_PAGE: &str = "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
<title>prof serve</title></head>\n<body><h1>prof serve</h1>\n<p>The viewer is not here: open \
the URL printed by prof serve when it started (http://HOST:PORT/ followed by a secret path, \
which only the one who started it has).</p></body></html>\n";

/// A profile the server hands out: a name for the page and the session JSON, or why the file
/// could not be read (the page then shows that).
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct SessionFile {
    /// What the page calls it, usually the file name.
    pub name: String,
    /// The session file's JSON bytes (not compressed). The page parses them with `prof` itself,
    /// so a malformed one shows its error in the page.
    pub json: Vec<u8>,
    /// Why the file could not be loaded, when it could not: the page shows this one line
    /// instead of a profile, and `json` is not used.
    pub problem: Option<String>,
    /// The source file names the session's frames give: the only files the Source view may
    /// read (under the server's source root).
    pub source_files: Vec<String>,
    /// The binaries the session's mappings name, and whether they are read here (the Assembly
    /// view).
    pub(crate) binaries: Binaries,
    /// The session already gzip-compressed (one gzip member), as a `.json.gz` file held it, and
    /// its JSON's length: then sent as it is, never decoded, written and compressed again.
    /// Crate-private because it goes with a rule the type does not enforce: when it is `Some`,
    /// `json` is empty and `problem` is `None` (only `serve::load` sets it).
    pub(crate) gzip: Option<(Vec<u8>, u64)>,
}

impl SessionFile {
    /// A profile named `name` whose session JSON is `json`.
    pub fn new(name: impl Into<String>, json: Vec<u8>) -> SessionFile {
        SessionFile {
            name: name.into(),
            json,
            problem: None,
            source_files: Vec::new(),
            binaries: Binaries::default(),
            gzip: None,
        }
    }

    /// A file named `name` that could not be loaded, for `problem`: listed, and shown as that
    /// error in the page.
    pub fn unreadable(name: impl Into<String>, problem: impl Into<String>) -> SessionFile {
        SessionFile {
            name: name.into(),
            json: Vec::new(),
            problem: Some(problem.into()),
            source_files: Vec::new(),
            binaries: Binaries::default(),
            gzip: None,
        }
    }
}

/// A session as it is kept by the server: compressed once into one shared buffer, sent many
/// times without a copy.
#[derive(Debug)]
enum Stored {
    Session { gzip: Bytes, len: u64 },
    Unreadable(Bytes),
}

/// Where a request leads: a reply known at once, or one that needs files or heavy work, done
/// off the server's thread by [`Site::answer`].
#[derive(Debug)]
pub(crate) enum Routed {
    /// This reply.
    Now(Reply),
    /// The source file a frame names this.
    Source(String),
    /// The single-file viewer of session `index` (a readable one).
    Download(usize),
    /// The code at a place of a session's binary.
    Disasm(Wanted),
}

/// The site: the secret, the sessions and their source files.
#[derive(Debug)]
pub(crate) struct Site {
    secret: String,
    sessions: Vec<Stored>,
    /// Each session's single-file viewer, built by the first request for it and then shared by
    /// every download, as the gzipped session is.
    downloads: Vec<tokio::sync::OnceCell<Bytes>>,
    sources: Sources,
    /// Each session's binaries, for the Assembly view.
    binaries: Vec<Binaries>,
    /// The sessions' names, for downloads.
    names: Vec<String>,
    list: Bytes,
}

#[derive(Serialize)]
struct ListEntry<'a> {
    name: &'a str,
    url: String,
    /// The session's JSON size in bytes (before compression), for the page's progress.
    size: usize,
}

impl super::http::Handler for Site {
    fn answer(
        &self,
        method: &str,
        path: &str,
        accepts_gzip: bool,
    ) -> impl std::future::Future<Output = Reply> + Send {
        Site::answer(self, method, path, accepts_gzip)
    }
}

impl Site {
    /// A site under `/<secret>/` serving `sessions`, compressing each one now, and the source
    /// files their frames name under `source_root` (the current directory when `None`).
    pub fn new(
        secret: String,
        sessions: Vec<SessionFile>,
        source_root: Option<&std::path::Path>,
    ) -> std::io::Result<Site> {
        let names = sessions
            .iter()
            .flat_map(|s| s.source_files.iter().cloned())
            .collect();
        let sources = Sources::new(source_root, names);
        let entries: Vec<ListEntry<'_>> = sessions
            .iter()
            .enumerate()
            .map(|(i, s)| ListEntry {
                name: &s.name,
                url: format!("session/{i}"),
                size: s
                    .gzip
                    .as_ref()
                    .map_or(s.json.len(), |&(_, len)| len as usize),
            })
            .collect();
        let list = Bytes::from(serde_json::to_vec(&entries).map_err(std::io::Error::other)?);
        let names = sessions.iter().map(|s| s.name.clone()).collect();
        let binaries = sessions.iter().map(|s| s.binaries.clone()).collect();
        let sessions = sessions
            .into_iter()
            .map(|s| {
                if let Some(problem) = s.problem {
                    return Ok(Stored::Unreadable(Bytes::from(problem)));
                }
                if let Some((gzip, len)) = s.gzip {
                    return Ok(Stored::Session {
                        gzip: Bytes::from(gzip),
                        len,
                    });
                }
                let mut enc = GzEncoder::new(Vec::new(), Compression::fast());
                enc.write_all(&s.json)?;
                Ok(Stored::Session {
                    gzip: Bytes::from(enc.finish()?),
                    len: s.json.len() as u64,
                })
            })
            .collect::<std::io::Result<Vec<_>>>()?;
        Ok(Site {
            secret,
            downloads: sessions.iter().map(|_| Default::default()).collect(),
            sessions,
            sources,
            binaries,
            names,
            list,
        })
    }

    /// The path of the page: `/<secret>/`.
    pub fn root(&self) -> String {
        format!("/{}/", self.secret)
    }

    /// The reply to `method path` (the query after the path is read only by the source and disasm routes);
    /// `accepts_gzip` says whether the client takes gzip. What needs a file or heavy work is done
    /// on tokio's blocking pool, so the server's thread never waits for it.
    pub async fn answer(&self, method: &str, path: &str, accepts_gzip: bool) -> Reply {
        match self.route(method, path, accepts_gzip) {
            Routed::Now(reply) => reply,
            Routed::Source(name) => self.sources.reply(name).await,
            Routed::Download(index) => self.download(index).await,
            Routed::Disasm(wanted) => super::disasm::reply(&self.binaries, wanted).await,
        }
    }

    /// Where `method path` leads, as [`Site::answer`] takes it.
    fn route(&self, method: &str, path: &str, accepts_gzip: bool) -> Routed {
        let now = Routed::Now;
        if method != "GET" && method != "HEAD" {
            return now(Reply::text(405, "method not allowed"));
        }
        let path = path.split('#').next().unwrap_or("");
        let (path, query) = path.split_once('?').unwrap_or((path, ""));
        let Some(path) = path.strip_prefix('/') else {
            return now(Reply::not_found());
        };
        if path.is_empty() {
            return now(Reply {
                status: 404,
                mime: "text/html; charset=utf-8",
                body: Payload::Bytes(Bytes::from_static(ROOT_PAGE.as_bytes())),
                gzip: false,
                vary_encoding: false,
                cache: Some(CACHE_NONE),
                location: None,
                attachment: None,
            });
        }
        let (first, rest) = match path.split_once('/') {
            Some((first, rest)) => (first, Some(rest)),
            None => (path, None),
        };
        if !self.is_secret(first) {
            return now(Reply::not_found());
        }
        let Some(rest) = rest else {
            let mut reply = Reply::text(301, "moved");
            reply.location = Some(self.root());
            return now(reply);
        };
        match rest {
            "" => now(self.asset("index.html")),
            "source" => match self.sources.requested(query) {
                Ok(name) => Routed::Source(name),
                Err(why) => now(super::source_files::not_found(why)),
            },
            "disasm" => match super::disasm::requested(query) {
                Ok(wanted) => Routed::Disasm(wanted),
                Err(why) => now(super::source_files::not_found(why)),
            },
            "sessions.json" => now(Reply {
                status: 200,
                mime: "application/json",
                body: Payload::Bytes(self.list.clone()),
                gzip: false,
                vary_encoding: false,
                cache: Some(CACHE_NONE),
                location: None,
                attachment: None,
            }),
            _ => match (
                rest.strip_prefix("session/"),
                rest.strip_prefix("download/"),
            ) {
                (Some(index), _) => now(self.session(index, accepts_gzip)),
                (_, Some(index)) => match self.stored(index) {
                    Some((i, Stored::Session { .. })) => Routed::Download(i),
                    Some((_, Stored::Unreadable(problem))) => {
                        now(Reply::shared_text(422, problem.clone()))
                    }
                    None => now(Reply::not_found()),
                },
                _ => now(self.asset(rest)),
            },
        }
    }

    /// True when `segment` is the secret, compared in constant time so that response times say
    /// nothing about how much of a guess was right. (Its length is no secret: always 32.)
    fn is_secret(&self, segment: &str) -> bool {
        segment.len() == self.secret.len()
            && bool::from(segment.as_bytes().ct_eq(self.secret.as_bytes()))
    }

    fn asset(&self, path: &str) -> Reply {
        match assets::get(path) {
            Some(asset) => Reply {
                status: 200,
                mime: asset.mime,
                body: Payload::Bytes(match asset.data {
                    Cow::Borrowed(data) => Bytes::from_static(data),
                    Cow::Owned(data) => Bytes::from(data),
                }),
                gzip: false,
                vary_encoding: false,
                cache: Some(CACHE_IMMUTABLE),
                location: None,
                attachment: None,
            },
            None => Reply::not_found(),
        }
    }

    /// The session at `index` (a plain decimal number), if there is one.
    fn stored(&self, index: &str) -> Option<(usize, &Stored)> {
        match index.parse::<usize>() {
            Ok(i) if index == i.to_string() => self.sessions.get(i).map(|s| (i, s)),
            _ => None,
        }
    }

    /// Session `index` (a readable one) as the single-file viewer (`prof convert --to html`),
    /// to save: built on the blocking pool by the first request, shared by every later one.
    async fn download(&self, index: usize) -> Reply {
        let Stored::Session { gzip, len } = &self.sessions[index] else {
            return Reply::not_found();
        };
        let name = &self.names[index];
        let built = self.downloads[index]
            .get_or_try_init(|| {
                let (gzip, len, name) = (gzip.clone(), *len, name.clone());
                let build = tokio::task::spawn_blocking(move || {
                    let mut html = Vec::new();
                    super::standalone::write_gzipped(&gzip, len, &name, &mut html)
                        .map(|()| Bytes::from(html))
                        .map_err(|e| e.to_string())
                });
                async { build.await.map_err(|e| e.to_string())? }
            })
            .await;
        let html = match built {
            Ok(html) => html.clone(),
            Err(why) => return Reply::shared_text(500, Bytes::from(why)),
        };
        let stem = name.strip_suffix(".gz").unwrap_or(name);
        let stem = stem.rsplit_once('.').map_or(stem, |(stem, _)| stem);
        Reply {
            status: 200,
            mime: "text/html; charset=utf-8",
            body: Payload::Bytes(html),
            gzip: false,
            vary_encoding: false,
            cache: Some(CACHE_NONE),
            location: None,
            attachment: Some(format!("{stem}.html")),
        }
    }

    fn session(&self, index: &str, accepts_gzip: bool) -> Reply {
        let stored = self.stored(index).map(|(_, s)| s);
        let (gzip, len) = match stored {
            None => return Reply::not_found(),
            Some(Stored::Unreadable(problem)) => {
                let mut reply = Reply::shared_text(422, problem.clone());
                reply.cache = Some(CACHE_NONE);
                return reply;
            }
            Some(Stored::Session { gzip, len }) => (gzip.clone(), *len),
        };
        Reply {
            status: 200,
            mime: "application/json",
            body: if accepts_gzip {
                Payload::Bytes(gzip)
            } else {
                Payload::Gunzip { gzip, len }
            },
            gzip: accepts_gzip,
            vary_encoding: true,
            cache: Some(CACHE_NONE),
            location: None,
            attachment: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use flate2::read::GzDecoder;
    use std::io::Read;

    const SECRET: &str = "0123456789abcdef0123456789abcdef";

    /// The reply to `method path`, as the server answers it.
    fn ask(site: &Site, method: &str, path: &str, accepts_gzip: bool) -> Reply {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap()
            .block_on(site.answer(method, path, accepts_gzip))
    }

    fn site() -> Site {
        Site::new(
            SECRET.into(),
            vec![
                SessionFile::new("a.json", br#"{"hello":1}"#.to_vec()),
                SessionFile::unreadable("b.folded", "b.folded: line 3: not a whole number"),
            ],
            None,
        )
        .unwrap()
    }

    #[test]
    fn the_page_lives_under_the_secret_only() {
        let site = site();
        let page = ask(&site, "GET", &format!("/{SECRET}/"), true);
        assert_eq!(page.status, 200);
        assert_eq!(page.mime, "text/html; charset=utf-8");
        assert_eq!(page.cache, Some(CACHE_IMMUTABLE));
        for path in [
            "/",
            "/index.html",
            "/app.js",
            "/0123456789abcdef0123456789abcdee/",
            &format!("/{SECRET}x/"),
            &format!("/x{SECRET}/"),
        ] {
            assert_eq!(ask(&site, "GET", path, true).status, 404, "{path}");
        }
    }

    #[test]
    fn the_root_says_to_open_the_printed_url_without_giving_away_the_secret() {
        let reply = ask(&site(), "GET", "/", true);
        assert_eq!(reply.status, 404);
        assert_eq!(reply.mime, "text/html; charset=utf-8");
        assert_eq!(reply.cache, Some(CACHE_NONE));
        let Payload::Bytes(body) = reply.body else {
            panic!("a page")
        };
        let text = String::from_utf8(body.to_vec()).unwrap();
        assert!(
            text.contains("open the URL printed by prof serve"),
            "{text}"
        );
        assert!(!text.contains(SECRET), "{text}");
        // Elsewhere outside the secret: the plain 404.
        assert_eq!(
            ask(&site(), "GET", "/index.html", true).mime,
            "text/plain; charset=utf-8"
        );
    }

    #[test]
    fn the_bare_secret_redirects_to_the_page() {
        let reply = ask(&site(), "GET", &format!("/{SECRET}"), true);
        assert_eq!(reply.status, 301);
        assert_eq!(reply.location.as_deref(), Some(&*format!("/{SECRET}/")));
    }

    #[test]
    fn nothing_outside_the_embedded_assets_is_reachable() {
        let site = site();
        for path in [
            "../Cargo.toml",
            "..%2fCargo.toml",
            "pkg/../../Cargo.toml",
            "/etc/passwd",
            "%2e%2e/%2e%2e/etc/passwd",
            "session/2",
            "session/01",
            "session/-1",
            "session/",
        ] {
            let reply = ask(&site, "GET", &format!("/{SECRET}/{path}"), true);
            assert_eq!(reply.status, 404, "{path}");
        }
    }

    #[test]
    fn source_files_are_those_the_sessions_name_under_the_root() {
        let root = std::env::temp_dir().join(format!("prof-routes-source-{}", std::process::id()));
        std::fs::create_dir_all(&root).unwrap();
        std::fs::write(root.join("a.rs"), "fn a() {}\n").unwrap();
        std::fs::write(root.join("b.rs"), "fn b() {}\n").unwrap();
        let mut file = SessionFile::new("a.json", b"{}".to_vec());
        file.source_files = vec!["a.rs".into()];
        let site = Site::new(SECRET.into(), vec![file], Some(&root)).unwrap();
        let get = |query: &str| ask(&site, "GET", &format!("/{SECRET}/source?{query}"), true);
        let named = get("file=a.rs");
        assert_eq!(
            (named.status, named.body.to_vec()),
            (200, b"fn a() {}\n".to_vec())
        );
        assert_eq!(named.mime, "text/plain; charset=utf-8");
        assert_eq!(get("file=b.rs").status, 404, "not named by a frame");
        let wrong_secret = ask(
            &site,
            "GET",
            "/0123456789abcdef0123456789abcdee/source?file=a.rs",
            true,
        );
        assert_eq!(wrong_secret.status, 404);
    }

    #[test]
    fn only_reads_are_allowed() {
        assert_eq!(
            ask(&site(), "POST", &format!("/{SECRET}/"), true).status,
            405
        );
    }

    #[test]
    fn a_session_downloads_as_the_single_file_viewer() {
        let site = site();
        let html = ask(&site, "GET", &format!("/{SECRET}/download/0"), true);
        assert_eq!(html.status, 200);
        assert_eq!(html.mime, "text/html; charset=utf-8");
        assert_eq!(html.attachment.as_deref(), Some("a.html"));
        let Payload::Bytes(body) = &html.body else {
            panic!("a download is sent whole");
        };
        let text = String::from_utf8_lossy(body);
        assert!(text.starts_with("<!doctype html>"));
        assert!(text.contains(r#"id="prof-session-0" data-prof-session data-name="a.json""#));
        let broken = ask(&site, "GET", &format!("/{SECRET}/download/1"), true);
        assert_eq!(broken.status, 422);
        for missing in ["download/2", "download/01", "download/x"] {
            let reply = ask(&site, "GET", &format!("/{SECRET}/{missing}"), true);
            assert_eq!(reply.status, 404, "{missing}");
        }
    }

    /// Every download built its own copy of the single-file viewer (11 MB for a
    /// 14.6 MB session): 50 clients that did not read took the server from 36 to 586 MB.
    #[test]
    fn every_download_of_a_session_shares_one_buffer() {
        let site = site();
        let url = format!("/{SECRET}/download/0");
        let buffer = |reply: Reply| match reply.body {
            Payload::Bytes(b) => (b.as_ptr(), b.len()),
            other => panic!("a download is one shared buffer: {other:?}"),
        };
        let first = buffer(ask(&site, "GET", &url, true));
        assert!(first.1 > 1000);
        assert_eq!(buffer(ask(&site, "GET", &url, false)), first);
        assert_eq!(buffer(ask(&site, "HEAD", &url, true)), first);
    }

    #[test]
    fn sessions_are_listed_and_sent_gzipped_when_accepted() {
        let site = site();
        let list = ask(&site, "GET", &format!("/{SECRET}/sessions.json?x=1"), true);
        assert_eq!(list.status, 200);
        assert_eq!(
            list.body.to_vec(),
            br#"[{"name":"a.json","url":"session/0","size":11},{"name":"b.folded","url":"session/1","size":0}]"#
        );

        let gz = ask(&site, "GET", &format!("/{SECRET}/session/0"), true);
        assert!(gz.gzip && gz.vary_encoding);
        assert_eq!(gz.cache, Some(CACHE_NONE));
        let mut json = Vec::new();
        GzDecoder::new(&gz.body.to_vec()[..])
            .read_to_end(&mut json)
            .unwrap();
        assert_eq!(json, br#"{"hello":1}"#);

        let plain = ask(&site, "GET", &format!("/{SECRET}/session/0"), false);
        assert!(!plain.gzip && plain.vary_encoding);
        assert_eq!(plain.body.len(), json.len() as u64);
        assert_eq!(plain.body.to_vec(), br#"{"hello":1}"#);
    }

    /// Each request for a profile held its own full copy of it (10 slow readers of an
    /// 88 MB profile: 958 MB). Every reply shares the one compressed buffer.
    #[test]
    fn every_request_for_a_session_shares_one_buffer() {
        let site = site();
        let url = format!("/{SECRET}/session/0");
        let buffer = |reply: Reply| match reply.body {
            Payload::Bytes(b) | Payload::Gunzip { gzip: b, .. } => b.as_ptr(),
            Payload::File { .. } => panic!("a session is not sent from a file"),
        };
        let first = buffer(ask(&site, "GET", &url, true));
        assert_eq!(buffer(ask(&site, "GET", &url, true)), first);
        assert_eq!(buffer(ask(&site, "GET", &url, false)), first);
    }

    #[test]
    fn an_unreadable_file_answers_with_its_problem() {
        let reply = ask(&site(), "GET", &format!("/{SECRET}/session/1"), true);
        assert_eq!(reply.status, 422);
        assert_eq!(reply.mime, "text/plain; charset=utf-8");
        assert_eq!(reply.body.to_vec(), b"b.folded: line 3: not a whole number");
    }

    #[test]
    fn secrets_that_differ_anywhere_or_in_length_are_404() {
        let site = site();
        let mut wrong = SECRET.as_bytes().to_vec();
        for i in [0, 15, 31] {
            wrong[i] = b'x';
            let path = format!("/{}/", std::str::from_utf8(&wrong).unwrap());
            assert_eq!(ask(&site, "GET", &path, true).status, 404, "{path}");
        }
        for path in [
            format!("/{}/", &SECRET[..31]),
            format!("/{SECRET}0/"),
            "//".to_owned(),
            "".to_owned(),
            "*".to_owned(),
        ] {
            assert_eq!(ask(&site, "GET", &path, true).status, 404, "{path}");
        }
    }

    #[test]
    fn assets_have_their_mime_types() {
        let site = site();
        let wasm = ask(
            &site,
            "GET",
            &format!("/{SECRET}/pkg/prof_viewer_bg.wasm"),
            true,
        );
        assert_eq!((wasm.status, wasm.mime), (200, "application/wasm"));
        let js = ask(&site, "GET", &format!("/{SECRET}/app.js"), true);
        assert_eq!(
            (js.status, js.mime),
            (200, "text/javascript; charset=utf-8")
        );
    }
}
