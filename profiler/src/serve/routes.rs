//! What the server answers to each request, as a pure function of the path, so it can be tested
//! without sockets. Only the embedded assets and the sessions handed to the server exist here:
//! nothing a request says ever reaches the filesystem.

use super::assets;
use flate2::{read::GzDecoder, write::GzEncoder, Compression};
use serde::Serialize;
use std::borrow::Cow;
use std::io::{Read, Write};

/// `Cache-Control` for the page and its assets: the bytes behind a URL never change while the
/// server runs, and every run has a new secret, hence new URLs.
pub(crate) const CACHE_IMMUTABLE: &str = "private, max-age=31536000, immutable";
/// `Cache-Control` for profiles: they may hold private data, so they are never stored.
pub(crate) const CACHE_NONE: &str = "no-store";

/// A profile the server hands out: a name for the page and the session JSON.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SessionFile {
    /// What the page calls it, usually the file name.
    pub name: String,
    /// The session file's JSON bytes (not compressed). The page parses them with `prof` itself,
    /// so a malformed file shows its error in the page.
    pub json: Vec<u8>,
}

/// A session as it is kept by the server: compressed once, sent many times.
#[derive(Debug)]
struct Stored {
    name: String,
    gzip: Vec<u8>,
    size: usize,
}

/// What to send back.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Reply {
    /// HTTP status.
    pub status: u16,
    /// `Content-Type`.
    pub mime: &'static str,
    /// The body, already encoded as `gzip` says.
    pub body: Cow<'static, [u8]>,
    /// True when the body is gzip-compressed (`Content-Encoding: gzip`).
    pub gzip: bool,
    /// `Cache-Control`, if any.
    pub cache: Option<&'static str>,
    /// `Location`, for redirects.
    pub location: Option<String>,
}

impl Reply {
    fn not_found() -> Reply {
        Reply::text(404, "not found")
    }

    fn text(status: u16, text: &'static str) -> Reply {
        Reply {
            status,
            mime: "text/plain; charset=utf-8",
            body: Cow::Borrowed(text.as_bytes()),
            gzip: false,
            cache: None,
            location: None,
        }
    }
}

/// The site: the secret and the sessions.
#[derive(Debug)]
pub(crate) struct Site {
    secret: String,
    sessions: Vec<Stored>,
    list: Vec<u8>,
}

#[derive(Serialize)]
struct ListEntry<'a> {
    name: &'a str,
    url: String,
    /// The session's JSON size in bytes (before compression), for the page's progress.
    size: usize,
}

impl Site {
    /// A site under `/<secret>/` serving `sessions`, compressing each one now.
    pub fn new(secret: String, sessions: Vec<SessionFile>) -> std::io::Result<Site> {
        let sessions = sessions
            .into_iter()
            .map(|s| {
                let mut enc = GzEncoder::new(Vec::new(), Compression::fast());
                enc.write_all(&s.json)?;
                Ok(Stored {
                    name: s.name,
                    gzip: enc.finish()?,
                    size: s.json.len(),
                })
            })
            .collect::<std::io::Result<Vec<_>>>()?;
        let entries: Vec<ListEntry<'_>> = sessions
            .iter()
            .enumerate()
            .map(|(i, s)| ListEntry {
                name: &s.name,
                url: format!("session/{i}"),
                size: s.size,
            })
            .collect();
        let list = serde_json::to_vec(&entries).map_err(std::io::Error::other)?;
        Ok(Site {
            secret,
            sessions,
            list,
        })
    }

    /// The path of the page: `/<secret>/`.
    pub fn root(&self) -> String {
        format!("/{}/", self.secret)
    }

    /// The reply to `method url`; `accepts_gzip` says whether the client sent
    /// `Accept-Encoding: gzip`.
    pub fn route(&self, method: &str, url: &str, accepts_gzip: bool) -> Reply {
        if method != "GET" && method != "HEAD" {
            return Reply::text(405, "method not allowed");
        }
        let path = url.split(['?', '#']).next().unwrap_or("");
        let Some(rest) = path
            .strip_prefix('/')
            .and_then(|p| p.strip_prefix(self.secret.as_str()))
        else {
            return Reply::not_found();
        };
        let Some(rest) = rest.strip_prefix('/') else {
            if rest.is_empty() {
                let mut reply = Reply::text(301, "moved");
                reply.location = Some(self.root());
                return reply;
            }
            return Reply::not_found();
        };
        match rest {
            "" => self.asset("index.html"),
            "sessions.json" => Reply {
                status: 200,
                mime: "application/json",
                body: Cow::Owned(self.list.clone()),
                gzip: false,
                cache: Some(CACHE_NONE),
                location: None,
            },
            _ => match rest.strip_prefix("session/") {
                Some(index) => self.session(index, accepts_gzip),
                None => self.asset(rest),
            },
        }
    }

    fn asset(&self, path: &str) -> Reply {
        match assets::get(path) {
            Some(asset) => Reply {
                status: 200,
                mime: asset.mime,
                body: asset.data,
                gzip: false,
                cache: Some(CACHE_IMMUTABLE),
                location: None,
            },
            None => Reply::not_found(),
        }
    }

    fn session(&self, index: &str, accepts_gzip: bool) -> Reply {
        let stored = match index.parse::<usize>() {
            Ok(i) if index == i.to_string() => self.sessions.get(i),
            _ => None,
        };
        let Some(stored) = stored else {
            return Reply::not_found();
        };
        let body = if accepts_gzip {
            stored.gzip.clone()
        } else {
            let mut json = Vec::new();
            if GzDecoder::new(&stored.gzip[..])
                .read_to_end(&mut json)
                .is_err()
            {
                return Reply::text(500, "could not decompress the session");
            }
            json
        };
        Reply {
            status: 200,
            mime: "application/json",
            body: Cow::Owned(body),
            gzip: accepts_gzip,
            cache: Some(CACHE_NONE),
            location: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SECRET: &str = "0123456789abcdef0123456789abcdef";

    fn site() -> Site {
        Site::new(
            SECRET.into(),
            vec![SessionFile {
                name: "a.json".into(),
                json: br#"{"hello":1}"#.to_vec(),
            }],
        )
        .unwrap()
    }

    #[test]
    fn the_page_lives_under_the_secret_only() {
        let site = site();
        let page = site.route("GET", &format!("/{SECRET}/"), true);
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
            assert_eq!(site.route("GET", path, true).status, 404, "{path}");
        }
    }

    #[test]
    fn the_bare_secret_redirects_to_the_page() {
        let reply = site().route("GET", &format!("/{SECRET}"), true);
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
            "session/1",
            "session/01",
            "session/-1",
            "session/",
        ] {
            let reply = site.route("GET", &format!("/{SECRET}/{path}"), true);
            assert_eq!(reply.status, 404, "{path}");
        }
    }

    #[test]
    fn only_reads_are_allowed() {
        assert_eq!(
            site().route("POST", &format!("/{SECRET}/"), true).status,
            405
        );
    }

    #[test]
    fn sessions_are_listed_and_sent_gzipped_when_accepted() {
        let site = site();
        let list = site.route("GET", &format!("/{SECRET}/sessions.json?x=1"), true);
        assert_eq!(list.status, 200);
        let json = br#"[{"name":"a.json","url":"session/0","size":"#;
        assert!(list.body.starts_with(json), "{:?}", list.body);

        let gz = site.route("GET", &format!("/{SECRET}/session/0"), true);
        assert!(gz.gzip);
        assert_eq!(gz.cache, Some(CACHE_NONE));
        let mut json = Vec::new();
        GzDecoder::new(&gz.body[..]).read_to_end(&mut json).unwrap();
        assert_eq!(json, br#"{"hello":1}"#);

        let plain = site.route("GET", &format!("/{SECRET}/session/0"), false);
        assert!(!plain.gzip);
        assert_eq!(&*plain.body, br#"{"hello":1}"#);
    }

    #[test]
    fn assets_have_their_mime_types() {
        let site = site();
        let wasm = site.route("GET", &format!("/{SECRET}/pkg/prof_viewer_bg.wasm"), true);
        assert_eq!((wasm.status, wasm.mime), (200, "application/wasm"));
        let js = site.route("GET", &format!("/{SECRET}/app.js"), true);
        assert_eq!(
            (js.status, js.mime),
            (200, "text/javascript; charset=utf-8")
        );
    }
}
