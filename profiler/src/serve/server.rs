//! The HTTP server: binds, runs on a named thread and stops when its guard is dropped.

use super::routes::{Reply, SessionFile, Site};
use super::secret::new_secret;
use crate::{Error, Result};
use std::io::ErrorKind;
use std::net::{IpAddr, Ipv4Addr, SocketAddr, TcpListener};
use std::sync::Arc;
use std::thread::JoinHandle;

/// The first port `prof serve` tries when no `--port` is given.
pub const DEFAULT_PORT: u16 = 7420;
/// How many ports from [`DEFAULT_PORT`] on are tried before giving up.
pub const PORT_ATTEMPTS: u16 = 64;

/// Which port to listen on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Port {
    /// The first free port from this one on (up to [`PORT_ATTEMPTS`] of them).
    FirstFreeFrom(u16),
    /// Exactly this port, failing if it is taken; `0` lets the operating system pick one.
    Exact(u16),
}

/// Where and how to serve.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct ServeOptions {
    /// The address to bind; loopback (127.0.0.1) by default. Anything else exposes the profile
    /// to the network (see [`exposure_warning`]).
    pub host: IpAddr,
    /// The port.
    pub port: Port,
}

impl Default for ServeOptions {
    fn default() -> Self {
        ServeOptions {
            host: IpAddr::V4(Ipv4Addr::LOCALHOST),
            port: Port::FirstFreeFrom(DEFAULT_PORT),
        }
    }
}

impl ServeOptions {
    /// Options binding `host` on `port`.
    pub fn new(host: IpAddr, port: Port) -> Self {
        ServeOptions { host, port }
    }
}

/// A warning to show when `host` is reachable from other machines, `None` for loopback.
pub fn exposure_warning(host: IpAddr) -> Option<String> {
    (!host.is_loopback()).then(|| {
        format!(
            "serving on {host}, which other machines may reach: anyone who learns the URL can read the profile"
        )
    })
}

/// A running viewer server. It serves until dropped.
#[must_use = "the server stops when this guard is dropped"]
pub struct Server {
    url: String,
    addr: SocketAddr,
    http: Arc<tiny_http::Server>,
    thread: Option<JoinHandle<()>>,
}

impl std::fmt::Debug for Server {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Server")
            .field("url", &self.url)
            .finish_non_exhaustive()
    }
}

impl Server {
    /// Binds as `options` say and starts serving the viewer with `sessions` on a background
    /// thread named `prof-serve`.
    pub fn start(sessions: Vec<SessionFile>, options: &ServeOptions) -> Result<Server> {
        let site = Site::new(new_secret()?, sessions)?;
        let listener = bind(options)?;
        let addr = listener.local_addr().map_err(|source| Error::Os {
            call: "getsockname",
            source,
        })?;
        let http = tiny_http::Server::from_listener(listener, None)
            .map_err(|e| Error::Os {
                call: "starting the HTTP server",
                source: std::io::Error::other(e.to_string()),
            })
            .map(Arc::new)?;
        let url = format!("http://{addr}{}", site.root());
        let thread = {
            let http = Arc::clone(&http);
            std::thread::Builder::new()
                .name("prof-serve".into())
                .spawn(move || serve(&http, &site))
                .map_err(|source| Error::Os {
                    call: "spawning the server thread",
                    source,
                })?
        };
        Ok(Server {
            url,
            addr,
            http,
            thread: Some(thread),
        })
    }

    /// The viewer's URL, secret included.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// The address the server listens on.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Blocks the calling thread while the server runs (until the process is interrupted).
    pub fn wait(mut self) {
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.http.unblock();
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

fn bind(options: &ServeOptions) -> Result<TcpListener> {
    let host = options.host;
    let bind_error = |port: u16, source: std::io::Error| Error::Os {
        call: if host.is_ipv6() { "bind [::]" } else { "bind" },
        source: std::io::Error::new(
            source.kind(),
            format!("{}: {source}", SocketAddr::new(host, port)),
        ),
    };
    match options.port {
        Port::Exact(port) => {
            TcpListener::bind(SocketAddr::new(host, port)).map_err(|source| {
                if source.kind() == ErrorKind::AddrInUse {
                    Error::InvalidOption(format!(
                        "--port {port}: {} is already in use; choose another port, or --port 0 for any free one",
                        SocketAddr::new(host, port)
                    ))
                } else {
                    bind_error(port, source)
                }
            })
        }
        Port::FirstFreeFrom(first) => {
            let last = first.saturating_add(PORT_ATTEMPTS - 1);
            for port in first..=last {
                match TcpListener::bind(SocketAddr::new(host, port)) {
                    Ok(listener) => return Ok(listener),
                    Err(e) if e.kind() == ErrorKind::AddrInUse => continue,
                    Err(e) => return Err(bind_error(port, e)),
                }
            }
            Err(Error::InvalidOption(format!(
                "ports {first} to {last} on {host} are all in use; choose one with --port (0 for any free one)"
            )))
        }
    }
}

/// Answers requests until the server is unblocked.
fn serve(http: &tiny_http::Server, site: &Site) {
    while let Ok(request) = http.recv() {
        let accepts_gzip = request.headers().iter().any(|h| {
            h.field.equiv("Accept-Encoding")
                && h.value
                    .as_str()
                    .split(',')
                    .any(|e| e.split(';').next().unwrap_or("").trim() == "gzip")
        });
        let reply = site.route(request.method().as_str(), request.url(), accepts_gzip);
        // A client that went away is not the server's problem.
        let _ = request.respond(response(reply));
    }
}

fn response(reply: Reply) -> tiny_http::Response<std::io::Cursor<Vec<u8>>> {
    let mut headers = vec![
        ("Content-Type", reply.mime.to_owned()),
        ("X-Content-Type-Options", "nosniff".to_owned()),
        // The secret is in the URL: never send it to another site.
        ("Referrer-Policy", "no-referrer".to_owned()),
        (
            "Content-Security-Policy",
            "default-src 'self'; script-src 'self' 'wasm-unsafe-eval'; style-src 'self'; img-src 'self' data:"
                .to_owned(),
        ),
    ];
    if reply.gzip {
        headers.push(("Content-Encoding", "gzip".to_owned()));
    }
    if let Some(cache) = reply.cache {
        headers.push(("Cache-Control", cache.to_owned()));
    }
    if let Some(location) = reply.location {
        headers.push(("Location", location));
    }
    let mut response =
        tiny_http::Response::from_data(reply.body.into_owned()).with_status_code(reply.status);
    for (name, value) in headers {
        if let Ok(header) = tiny_http::Header::from_bytes(name.as_bytes(), value.as_bytes()) {
            response.add_header(header);
        }
    }
    response
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Write};
    use std::net::TcpStream;

    fn get(server: &Server, path: &str) -> String {
        let mut stream = TcpStream::connect(server.addr()).unwrap();
        write!(
            stream,
            "GET {path} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n"
        )
        .unwrap();
        let mut text = String::new();
        stream.read_to_string(&mut text).unwrap();
        text
    }

    fn start(port: Port) -> Result<Server> {
        Server::start(
            Vec::new(),
            &ServeOptions::new(IpAddr::V4(Ipv4Addr::LOCALHOST), port),
        )
    }

    #[test]
    fn serves_the_page_under_its_url_and_404_elsewhere() {
        let server = start(Port::Exact(0)).unwrap();
        assert!(server.url().starts_with("http://127.0.0.1:"));
        let path = server
            .url()
            .split_once(&server.addr().to_string())
            .unwrap()
            .1;
        let page = get(&server, path);
        assert!(page.starts_with("HTTP/1.1 200"), "{page}");
        assert!(page.contains("<html"), "{page}");
        assert!(get(&server, "/").starts_with("HTTP/1.1 404"));
    }

    #[test]
    fn an_exact_port_that_is_taken_is_a_clear_error() {
        let first = start(Port::Exact(0)).unwrap();
        let err = start(Port::Exact(first.addr().port())).unwrap_err();
        assert!(matches!(err, Error::InvalidOption(_)), "{err}");
        assert!(err.to_string().contains("already in use"), "{err}");
    }

    #[test]
    fn the_first_free_port_is_taken_when_the_wanted_one_is_busy() {
        let first = start(Port::Exact(0)).unwrap();
        let port = first.addr().port();
        if port < u16::MAX {
            let second = start(Port::FirstFreeFrom(port)).unwrap();
            assert!(second.addr().port() > port);
        }
    }

    #[test]
    fn dropping_the_server_frees_its_port() {
        let server = start(Port::Exact(0)).unwrap();
        let addr = server.addr();
        drop(server);
        // tiny_http closes its listener on its accept thread, just after the drop returns.
        let freed = (0..100).any(|_| {
            std::thread::sleep(std::time::Duration::from_millis(20));
            TcpListener::bind(addr).is_ok()
        });
        assert!(freed, "{addr} is still bound");
    }

    #[test]
    fn only_non_loopback_hosts_get_a_warning() {
        assert_eq!(exposure_warning(IpAddr::V4(Ipv4Addr::LOCALHOST)), None);
        assert!(exposure_warning("::1".parse().unwrap()).is_none());
        assert!(exposure_warning("0.0.0.0".parse().unwrap()).is_some());
    }
}
